"""The one-record Poisson lower bound at tiny deltas (theorems/poisson_sum_test.py), against
independent references: the exact remove profile of T = 1 and T = 2 steps of the
Poisson-subsampled Gaussian in mpmath (closed form for one step, one quadrature for two), the
statistic's own pair in mpmath, and certified upper bounds of other accountants (the PLD where
it answers, the RDP conversion at tiny deltas)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.theorems.poisson_sum_test import TINY_DELTA, SumTestAnalysis, sum_test_ladder


def _delta1(e, q, s):
    """Exact remove profile of one step: P = (1-q) N(0,1) + q N(s,1) vs Q = N(0,1)."""
    if mp.e ** e <= 1 - q:
        return 1 - mp.e ** e
    y = (mp.log((mp.e ** e - (1 - q)) / q) + s * s / 2) / s
    p_tail = (1 - q) * mp.ncdf(-y) + q * mp.ncdf(s - y)
    return p_tail - mp.e ** e * mp.ncdf(-y)


def _delta2(e, q, s):
    """Exact remove profile of two steps: E_{y ~ P}[delta_1(e - L(y))] (the product's loss
    is the sum of the steps' losses)."""
    def f(y):
        p = (1 - q) * mp.npdf(y) + q * mp.npdf(y, s)
        loss = mp.log(1 - q + q * mp.e ** (s * y - s * s / 2))
        return p * _delta1(e - loss, q, s)

    # 180 intervals over [-30, 60] (converged to ~20 digits against 720 at 40 digits)
    return mp.quad(f, [-mp.inf, *[mp.mpf(v) for v in np.linspace(-30, 60, 181)], mp.inf])


@pytest.mark.parametrize("steps,q,sigma,delta", [
    (1, 0.01, 1.0, 1e-300), (1, 0.3, 2.0, 1e-100), (1, 0.05, 0.5, 1e-12),
    (2, 0.01, 1.0, 1e-300), (2, 0.2, 1.0, 1e-50), (2, 0.5, 3.0, 1e-16),
])
def test_below_the_exact_profile(steps, q, sigma, delta):
    """lower <= the exact epsilon: the exact remove profile at the lower bound is >= delta
    (mpmath, 40 digits); at T = 1 the test is the likelihood-ratio test, so it is also tight
    (the exact profile 1e-4 above the lower bound is below delta)."""
    run = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=steps)
    g = run.epsilon(delta)
    assert g.lower is not None and "sum of the first m outputs" in g.lower.source
    lo = float(g.lower.value)
    assert lo > 0
    exact = _delta1 if steps == 1 else _delta2
    with mp.workdps(30):
        assert exact(mp.mpf(lo), q, 1 / sigma) >= delta
        if steps == 1:
            assert exact(mp.mpf(lo) * (1 + 1e-4), q, 1 / sigma) < delta
    assert g.upper is not None and lo <= float(g.upper.value)


def _sum_test_mp(eps, m, q, s):
    """The sum statistic's pair (sum_n Binom(m, q)_n N(n s / sqrt(m), 1) vs N(0, 1)) at its
    likelihood-ratio threshold, in mpmath: its remove profile at eps."""
    w = [mp.binomial(m, n) * mp.mpf(q) ** n * (1 - mp.mpf(q)) ** (m - n) for n in range(m + 1)]
    mu = [n * s / mp.sqrt(m) for n in range(m + 1)]

    def loss(x):
        return mp.log(sum(wn * mp.e ** (u * x - u * u / 2) for wn, u in zip(w, mu, strict=True)))

    lo, hi = mp.mpf(-60), mp.mpf(400)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if loss(mid) > eps else (mid, hi)
    p_tail = sum(wn * mp.ncdf(u - hi) for wn, u in zip(w, mu, strict=True))
    return p_tail - mp.e ** eps * mp.ncdf(-hi)


@pytest.mark.parametrize("steps,q,sigma,delta", [
    (50, 0.01, 1.0, 1e-300), (200, 0.05, 0.8, 1e-100), (1000, 0.01, 1.0, 1e-30),
])
def test_statistic_in_mpmath_and_below_other_uppers(steps, q, sigma, delta):
    """Longer runs: the lower bound is certified by the statistic's own pair in mpmath (some
    m of the ladder has delta(lower) >= delta) and lies below the RDP accountant's upper
    bound (an independent certified upper bound)."""
    run = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=steps)
    lo = float(run.epsilon(delta, accountant="sum-test").lower.value)
    rdp = float(run.epsilon(delta, accountant="rdp").upper.value)
    assert 0 < lo < rdp
    assert lo <= float(run.epsilon(delta).lower.value)  # "best" keeps the largest lower
    with mp.workdps(30):
        assert max(_sum_test_mp(mp.mpf(lo), m, q, 1 / sigma)
                   for m in sum_test_ladder(steps, q) if m <= 256) >= delta


@pytest.mark.parametrize("eps", [1.0, 5.0, 20.0])
def test_delta_below_the_pld_upper_and_exact(eps):
    """delta(eps): at T = 2 below the exact profile (mpmath); at T = 100 below the PLD's upper
    bound where it answers."""
    an = SumTestAnalysis(2, 0.1, 1.0)
    _, lo = an.delta(np.array(eps))
    with mp.workdps(30):
        assert float(lo.value) <= _delta2(mp.mpf(eps), 0.1, 1.0)
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.1), steps=100)
    up = float(run.delta(eps, accountant="pld").upper.value)
    _, lo = SumTestAnalysis(100, 0.1, 1.0).delta(np.array(eps))
    assert float(lo.value) <= up


def test_tiny_shift_is_not_over_reported():
    """Shift 1e-300 (sensitivity 1e-300): the float difference of the two tails is rounding
    noise; the lower bound must stay below the truth (~1e-298), not ~1e-16."""
    an = SumTestAnalysis(10, 0.5, 1e-300)
    _, lo = an.epsilon(np.array(1e-300))
    assert float(lo.value) <= 1e-290
    _, lo = an.delta(np.array(0.0))
    assert float(lo.value) <= 1e-290


def test_only_tiny_deltas_and_fast_curve_kept(monkeypatch):
    """Above TINY_DELTA the accountant adds nothing (the PLD answers); the canonical curve
    still takes the PLD's one-pass path and matches the single query at the end."""
    an = SumTestAnalysis(100, 0.01, 1.0)
    assert an.epsilon(np.array([1e-5, 1e-3])) == (None, None)
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=300)
    (pld,) = [an for acc, an in run.offering("curve")]
    calls = []
    original = pld.curve
    monkeypatch.setattr(pld, "curve", lambda *a, **k: calls.append(1) or original(*a, **k))
    c = run.epsilon_curve(1e-5, steps=[100, 300])
    assert calls == [1]
    one = run.epsilon(1e-5)
    assert math.isclose(c.upper.value[-1], one.upper.value, rel_tol=1e-7)
    assert TINY_DELTA < 1e-5


def test_curve_at_tiny_delta_has_lower_bounds():
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=20)
    c = run.epsilon_curve(1e-300, steps=[1, 20])
    assert np.all(c.lower.value > 0)
    assert np.all(c.lower.value <= c.upper.value)
