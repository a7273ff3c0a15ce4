"""dp-accounting's PLD estimate of a Poisson-subsampled Gaussian run: the peer reference the
grid-policy tests compare privamp's upper bound with (imported by basename, tests/README.md)."""

import pytest


def dp_accounting_epsilon(q: float, sigma: float, T: int, delta: float = 1e-5) -> float:
    """dp-accounting's PLD estimate (its defaults: value_discretization_interval 1e-4)."""
    dpa = pytest.importorskip("dp_accounting")
    acc = dpa.pld.PLDAccountant()
    acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), T)
    return float(acc.get_epsilon(delta))
