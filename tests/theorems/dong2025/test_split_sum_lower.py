"""The blocks'-sum lower bounds (theorems/dong2025/sum_lower.py) against independent
references: the Gaussian profile in mpmath (closed form), the exact one-step profile of the
realised dropout pair (one quadrature: its loss depends on (y1 + y2) and cosh((y1 - y2) s/2)),
and closed-form upper bounds (the unsampled composition).

Before (issue 27): Balanced Iteration at sigma 0.4 (its lattice too large), dropout and model
splitting at delta 1e-300, subsampled and partial model splitting at any delta: no lower
bound."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.accountants.registry import applicable
from privamp.theorems.dong2025.sum_lower import split_sum_pair


def _analysis(run):
    """The split-sum-test analysis of ``run`` (built through the registry)."""
    (acc,) = [a for a in applicable(run) if a.name == "split-sum-test"]
    return acc.build(run)


def _gauss_profile(e, mu):
    e, mu = mp.mpf(e), mp.mpf(mu)
    return mp.ncdf(-e / mu + mu / 2) - mp.e ** e * mp.ncdf(-e / mu - mu / 2)


def _gauss_eps(delta, mu):
    """The epsilon of the Gaussian of shift mu at delta: bisection in mpmath (the profile
    decreases in eps)."""
    lo, hi = mp.mpf(0), 10 * mu * mu + 100 * mu + 10
    for _ in range(300):
        mid = (lo + hi) / 2
        if _gauss_profile(mid, mu) > delta:
            lo = mid
        else:
            hi = mid
    return lo


def test_balanced_iteration_row_of_the_issue():
    """BalancedIteration(2, 1), sigma 0.4: delta(0.1) had no lower bound; now the Gaussian
    profile of shift 2.5 / sqrt(2) (mpmath), below the unsampled bound (shift 2.5)."""
    run = pa.Training(pa.Gaussian(0.4), pa.BalancedIteration(2, 1), epochs=1)
    g = run.delta(0.1)
    assert g.lower is not None
    lo = float(g.lower.value)
    with mp.workdps(40):
        ref = float(_gauss_profile(0.1, 2.5 / mp.sqrt(2)))
        up = float(_gauss_profile(0.1, 2.5))
    assert ref * (1 - 1e-9) <= lo <= ref
    assert lo <= up <= float(g.upper.value) * (1 + 1e-9)


@pytest.mark.parametrize("scheme,steps,mu", [
    (pa.Dropout(), 100, 10 / 2 ** 0.5),
    (pa.ModelSplit(4, 2), 50, 2 * 50 ** 0.5 / 2),
    (pa.BallsInBins(10), 30, 3 ** 0.5 / 10 ** 0.5),
    (pa.PartialModelSplit(4, 1.0, 0.5), 100, 10 * (0.25 + 1 / 4) ** 0.5),
])
@pytest.mark.parametrize("delta", [1e-5, 1e-300])
def test_rate_one_schemes_match_the_gaussian_closed_form(scheme, steps, mu, delta):
    """lower = the epsilon of the Gaussian of the run's total shift (mpmath), rounded down;
    the run's answer keeps it (or the PLD's larger lower side) below its upper bound."""
    run = pa.Training(pa.Gaussian(1.0), scheme, steps=steps)
    lo = float(_analysis(run).epsilon(delta)[1].value)
    with mp.workdps(60):
        ref = float(_gauss_eps(mp.mpf(delta), mp.mpf(mu)))
    assert ref * (1 - 1e-7) <= lo <= ref * (1 + 1e-12)
    g = run.epsilon(delta)
    assert lo <= float(g.lower.value) <= float(g.upper.value)


def _dropout_exact_delta(e, s):
    """Exact profile of one dropout step, P = (N((s,0), I) + N((0,s), I)) / 2 vs N(0, I):
    the likelihood ratio is e^{-s^2/2} e^{s u / sqrt 2} cosh(s v / sqrt 2), u, v the rotated
    coordinates (independent N(0,1) under Q); E_Q[(LR - e^e)_+] by a quadrature in v of a
    closed form in u."""
    e, s = mp.mpf(e), mp.mpf(s)
    a = s / mp.sqrt(2)

    def inner(v):
        c = -s * s / 2 + mp.log(mp.cosh(a * v))  # LR = e^{c + a u}
        u0 = (e - c) / a  # LR > e^e iff u > u0
        return mp.e ** (c + a * a / 2) * mp.ncdf(a - u0) - mp.e ** e * mp.ncdf(-u0)

    return mp.quad(lambda v: mp.npdf(v) * inner(v), [-mp.inf, -5, 0, 5, mp.inf])


@pytest.mark.parametrize("sigma,eps", [(1.0, 0.0), (1.0, 0.5), (0.5, 2.0)])
def test_dropout_statistic_below_the_exact_pair(sigma, eps):
    """The statistic is a post-processing of the realised pair: its profile (the lower
    bound) is below the pair's exact one-step profile (mpmath)."""
    lo = float(_analysis(pa.Training(pa.Gaussian(sigma), pa.Dropout(), steps=1)).delta(eps)[1]
               .value)
    with mp.workdps(20):
        ref = _dropout_exact_delta(eps, 1 / mp.mpf(sigma))
    assert 0 < lo <= ref


def _mixture_delta1(e, q, mu):
    """Exact remove profile of (1-q) N(0,1) + q N(mu,1) vs N(0,1)."""
    if mp.e ** e <= 1 - q:
        return 1 - mp.e ** e
    y = (mp.log((mp.e ** e - (1 - q)) / q) + mu * mu / 2) / mu
    return (1 - q) * mp.ncdf(-y) + q * mp.ncdf(mu - y) - mp.e ** e * mp.ncdf(-y)


@pytest.mark.parametrize("scheme,mu", [
    (pa.SubsampledModelSplit(4, 0.1), 0.5),
    (pa.PartialModelSplit(4, 1.0, 0.5, 0.2), (0.25 + 1 / 4) ** 0.5),
])
def test_subsampled_one_step_below_the_exact_mixture(scheme, mu):
    """One step, rate < 1: the lower bound is below the statistic's own exact profile (the
    sampled Gaussian mixture, closed form in mpmath), and positive."""
    run = pa.Training(pa.Gaussian(1.0), scheme, steps=1)
    q, m, n = split_sum_pair(run)
    assert (n, abs(m - mu) < 1e-15) == (1, True)
    for eps in (0.0, 0.05, 0.2):
        lo = float(_analysis(run).delta(eps)[1].value)
        with mp.workdps(30):
            assert 0 < lo <= _mixture_delta1(mp.mpf(eps), mp.mpf(q), mp.mpf(mu))


def test_groups_and_refusals():
    """A group of 2 doubles the shift (closed form); no full epoch: declines."""
    g = pa.Training(pa.Gaussian(1.0), pa.ModelSplit(2, 1), steps=10,
                    relation=pa.AddRemove(group=2)).epsilon(1e-300)
    with mp.workdps(60):
        ref = float(_gauss_eps(mp.mpf(1e-300), 2 * mp.sqrt(10) / mp.sqrt(2)))
    assert ref * (1 - 1e-7) <= float(g.lower.value) <= ref * (1 + 1e-12)
    assert float(g.lower.value) <= float(g.upper.value)
    run = pa.Training(pa.Gaussian(1.0), pa.BalancedIteration(10, 1), steps=5)
    with pytest.raises(pa.NotApplicable):
        split_sum_pair(run)
    assert np.isfinite(float(pa.Training(pa.Gaussian(1.0), pa.Dropout(), steps=3)
                             .epsilon(1e-5).upper.value))
