"""The never-sampled bound: delta(eps) <= 1 - (1 - q)^(K T) under Poisson sampling."""

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.accountants.never_sampled import never_sampled_probability


def _eta(q: float, draws: int) -> mp.mpf:
    mp.mp.dps = 50
    return 1 - (1 - mp.mpf(q)) ** draws


@pytest.mark.parametrize("q, draws", [(1e-12, 1), (1e-7, 10**6), (0.0015, 9), (0.3, 7),
                                      (0.5, 2000), (1.0, 3)])
def test_probability_is_rounded_up(q, draws):
    got = never_sampled_probability(q, draws)
    want = _eta(q, draws)
    assert got >= want
    assert got <= want * (1 + 1e-14) + 1e-300


def test_tiny_noise_rarely_drawn_record_gets_epsilon_zero():
    """Fuzz (issue 27): sigma 0.01, q 0.0015, 9 steps, delta 0.027 > eta = 0.0134: epsilon
    is 0; before, only the converted Rényi bound answered (5272)."""
    run = pa.Training(pa.Gaussian(0.01), pa.Poisson(0.0015), steps=9)
    assert run.epsilon(0.027).upper.value == 0.0
    eta = float(_eta(0.0015, 9))
    d = run.delta(np.array([0.0, 1.0, 50.0]))
    # the truth tends to eta as sigma -> 0 (a drawn record is recognised): tight both sides
    assert np.all(d.upper.value >= eta) and np.all(d.upper.value <= eta * (1 + 1e-12))
    assert np.all(d.lower.value <= d.upper.value)
    assert np.all(d.lower.value >= 0.99 * eta)


def test_groups_and_cyclic_rounds():
    run = pa.Training(pa.Gaussian(0.01), pa.Poisson(0.001), steps=10,
                      relation=pa.AddRemove(group=3))
    assert float(run.delta(5.0).upper.value) <= float(_eta(0.001, 30)) * (1 + 1e-12)
    cyc = pa.Training(pa.Gaussian(0.01), pa.CyclicPoisson(0.001, 4), steps=10,
                      relation=pa.ZeroOut())
    # the record's group is eligible in ceil(10 / 4) = 3 steps
    assert float(cyc.delta(5.0).upper.value) <= float(_eta(0.001, 3)) * (1 + 1e-12)


def test_below_eta_it_gives_nothing():
    from privamp.accountants.never_sampled import NeverSampledAnalysis

    up, lo = NeverSampledAnalysis(0.1).epsilon(np.array([0.01, 0.05]))
    assert up is None and lo is None
