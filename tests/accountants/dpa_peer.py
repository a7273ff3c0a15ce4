"""dp-accounting's PLD estimate of a Poisson-subsampled Gaussian run: the peer reference the
grid-policy tests compare privamp's upper bound with (imported by basename, tests/README.md)."""

import pytest

import privamp as pa


def dp_accounting_epsilon(q: float, sigma: float, T: int, delta: float = 1e-5) -> float:
    """dp-accounting's PLD estimate (its defaults: value_discretization_interval 1e-4)."""
    dpa = pytest.importorskip("dp_accounting")
    acc = dpa.pld.PLDAccountant()
    acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), T)
    return float(acc.get_epsilon(delta))


def assert_within_dp_accounting(q: float, sigma: float, T: int, width: float,
                                delta: float = 1e-5) -> None:
    """privamp's default call on Poisson(q), Gaussian(sigma), T steps: a positive lower bound,
    an upper at or below dp-accounting's estimate, and a relative width at most ``width``."""
    r = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T).epsilon(delta)
    assert r.lower is not None
    up, lo = float(r.upper.value), float(r.lower.value)
    assert up <= dp_accounting_epsilon(q, sigma, T, delta)
    assert 0.0 < lo <= up
    assert (up - lo) / up <= width
