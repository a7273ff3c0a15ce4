"""The threshold-test lower bounds under Poisson sampling (theorems/threshold_test.py), against
independent references: closed forms (the realised pair's largest loss, group privacy of the
pure-DP bound), the exact profile of one and two Laplace steps in mpmath (closed-form tails,
one quadrature), and the statistic's binomial law re-derived in mpmath at 50 digits.

Before (issue 27): at delta = 1e-300 the Laplace mechanism under Poisson had no lower bound
(only the pure-DP upper); groups and substitution had loose or no lower bounds there."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.accountants.registry import applicable
from privamp.theorems.threshold_test import (
    MAX_STEPS,
    ThresholdTestAnalysis,
    step_laws,
)


def _pure_dp(q, s, K=1):
    """Largest loss of one step of the realised group pair: log sum_j Binom(K,q)_j e^{j s}."""
    with mp.workdps(40):
        return float(mp.log(sum(mp.binomial(K, j) * mp.mpf(q) ** j * (1 - mp.mpf(q)) ** (K - j)
                                * mp.e ** (j * mp.mpf(s)) for j in range(K + 1))))


@pytest.mark.parametrize("K", [1, 2, 3])
@pytest.mark.parametrize("delta", [1e-100, 1e-300])
def test_laplace_tiny_delta_pinned_by_closed_forms(K, delta):
    """Before: no lower bound.  After: at 1e-300 the lower bound reaches the realised pair's
    largest loss times T (closed form: the pair's exact epsilon there lies in [that - tiny,
    that], as the all-above-threshold event has probability >> delta), below the
    group-privacy upper bound K T log(1 - q + q e^s)."""
    q, T = 0.01, 100
    run = pa.Training(pa.Laplace(1.0), pa.Poisson(q), steps=T, relation=pa.AddRemove(group=K))
    g = run.epsilon(delta)
    assert g.lower is not None and "threshold" in g.lower.source
    lo = float(g.lower.value)
    top = T * _pure_dp(q, 1.0, K)
    assert lo <= top * (1 + 1e-12)
    if delta == 1e-300:  # P_D(all T outputs >= K) >= 0.02^100 >> delta: pinned to the top
        assert lo >= top * (1 - 1e-8)
    assert lo <= K * T * _pure_dp(q, 1.0, 1) * (1 + 1e-12)
    assert g.upper is not None and lo <= float(g.upper.value)


def _lap_delta1(e, q, s):
    """Exact remove profile of one step: P = (1-q) Lap(0,1) + q Lap(s,1) vs Q = Lap(0,1).
    The loss log(1 - q + q e^{|x| - |x - s|}) increases in x: the optimal region is x > x*."""
    lmax, lmin = mp.log(1 - q + q * mp.e ** s), mp.log(1 - q + q * mp.e ** (-s))
    if e >= lmax:
        return mp.mpf(0)
    if e <= lmin:
        return 1 - mp.e ** e

    def sf(z):  # P(Lap(0,1) > z)
        return mp.e ** (-z) / 2 if z >= 0 else 1 - mp.e ** z / 2

    x = (s + mp.log((mp.e ** e - 1 + q) / q)) / 2
    return (1 - q) * sf(x) + q * sf(x - s) - mp.e ** e * sf(x)


def _lap_delta2(e, q, s):
    """Two steps: E_{y ~ P}[delta_1(e - l(y))]."""
    def f(y):
        p = (1 - q) * mp.e ** (-abs(y)) / 2 + q * mp.e ** (-abs(y - s)) / 2
        loss = mp.log(1 - q + q * mp.e ** (abs(y) - abs(y - s)))
        return p * _lap_delta1(e - loss, q, s)

    pts = [-mp.inf, *[mp.mpf(v) for v in np.linspace(-2.0, float(s) + 2.0, 41)], mp.inf]
    return mp.quad(f, pts)


@pytest.mark.parametrize("steps,q,b,delta", [
    (1, 0.01, 1.0, 1e-300), (1, 0.3, 0.5, 1e-50), (1, 0.05, 2.0, 1e-12),
    (2, 0.01, 1.0, 1e-300), (2, 0.2, 1.0, 1e-40),
])
def test_laplace_below_the_exact_profile(steps, q, b, delta):
    """lower <= the exact epsilon of one / two steps (the exact profile at the lower bound is
    >= delta, mpmath 30 digits)."""
    run = pa.Training(pa.Laplace(b), pa.Poisson(q), steps=steps)
    g = run.epsilon(delta)
    assert g.lower is not None
    lo = float(g.lower.value)
    assert lo > 0
    exact = _lap_delta1 if steps == 1 else _lap_delta2
    with mp.workdps(30):
        assert exact(mp.mpf(lo), mp.mpf(q), 1 / mp.mpf(b)) >= delta


def _mp_tail(kind, z):
    z = mp.mpf(z)
    if kind == "gauss":
        return mp.ncdf(-z)
    return mp.e ** (-z) / 2 if z >= 0 else 1 - mp.e ** z / 2


def _mp_statistic_delta(laws, T, eps):
    """The threshold statistic's profile (max over thresholds and both orders), re-derived in
    mpmath: event probabilities from the laws' atoms, then the binomial sum."""
    best = mp.mpf(0)
    for t in laws.thresholds():
        pr = []
        for lw, loc in ((laws.lw_d, laws.loc_d), (laws.lw_d2, laws.loc_d2)):
            pr.append(sum(mp.e ** mp.mpf(w) * _mp_tail(laws.kind, mp.mpf(t) - mp.mpf(x))
                          for w, x in zip(lw, loc, strict=True)))
        for a, c in ((pr[0], pr[1]), (pr[1], pr[0])):
            d = mp.mpf(0)
            for k in range(T + 1):
                pk = mp.binomial(T, k) * a ** k * (1 - a) ** (T - k)
                qk = mp.binomial(T, k) * c ** k * (1 - c) ** (T - k)
                d += max(pk - mp.e ** mp.mpf(eps) * qk, 0)
            best = max(best, d)
    return best


@pytest.mark.parametrize("mech,rel,T,eps", [
    (pa.Laplace(1.0), pa.AddRemove(group=2), 20, 1.0),
    (pa.Laplace(0.7), pa.Substitution(), 30, 0.5),
    (pa.Laplace(1.0), pa.HybridSubstitution(group=2), 10, 2.0),
    (pa.Gaussian(1.0), pa.Substitution(group=2), 25, 1.5),
    (pa.Gaussian(2.0), pa.HybridSubstitution(), 40, 0.3),
])
def test_statistic_against_mpmath(mech, rel, T, eps):
    """The certified value is below the statistic's exact profile (mpmath, 50 digits) and
    within 1e-6 relative of it."""
    laws = step_laws(mech, rel, 0.1)
    an = ThresholdTestAnalysis(laws, T)
    lo = an.delta_lower(eps)
    with mp.workdps(50):
        ref = float(_mp_statistic_delta(laws, T, eps))
    assert 0 < lo <= ref
    assert lo >= ref * (1 - 1e-6)


def test_randomized_response_substitution_tiny_delta():
    """Before: lower 0.69 at delta 1e-300 (the PLD's cut tails); after: the exact binomial
    profile of the realised pair (mpmath: T log of the largest likelihood ratio, the
    all-outcome-1 event having probability ~1e-60 >> 1e-300)."""
    q, th, T = 0.01, 0.75, 100
    g = pa.Training(pa.RandomizedResponse(th), pa.Poisson(q), steps=T,
                    relation=pa.Substitution()).epsilon(1e-300)
    with mp.workdps(40):
        top = T * float(mp.log((q * mp.mpf(th) + (1 - q) * (1 - mp.mpf(th))) / (1 - mp.mpf(th))))
    lo = float(g.lower.value)
    assert top * (1 - 1e-8) <= lo <= top * (1 + 1e-12)
    assert lo <= float(g.upper.value)


@pytest.mark.parametrize("mech,rel", [
    (pa.Gaussian(1.0), pa.Substitution()), (pa.Gaussian(1.0), pa.AddRemove(group=2)),
    (pa.Laplace(1.0), pa.Substitution(group=2)), (pa.Laplace(1.0), pa.HybridSubstitution()),
])
def test_tiny_delta_lower_below_upper(mech, rel):
    """Every relation answers with a lower bound at 1e-300, below the certified upper."""
    g = pa.Training(mech, pa.Poisson(0.01), steps=100, relation=rel).epsilon(1e-300)
    assert g.lower is not None and float(g.lower.value) > 0
    assert float(g.lower.value) <= float(g.upper.value)


def test_refusals():
    """Above MAX_STEPS it declines; one record of randomized response under add/remove
    (exact in binary_exact) it does not apply."""
    big = pa.Training(pa.Laplace(1.0), pa.Poisson(0.01), steps=MAX_STEPS + 1)
    (acc,) = [a for a in applicable(big) if a.name == "threshold-test"]
    with pytest.raises(pa.NotApplicable):
        acc.build(big)
    one = pa.Training(pa.RandomizedResponse(0.8), pa.Poisson(0.01), steps=10)
    assert "threshold-test" not in [a.name for a in applicable(one)]
    with pytest.raises(pa.NotApplicable):
        step_laws(pa.RandomizedResponse(0.9), pa.AddRemove(), 0.1)
    with pytest.raises(pa.NotApplicable):
        step_laws(pa.Laplace(1e-6), pa.AddRemove(group=3), 0.1)


def test_delta_direction_and_shapes():
    """delta(eps) answers lower bounds of the input's shape; epsilon for one record under
    add/remove answers only below 1e-10."""
    an = ThresholdTestAnalysis(step_laws(pa.Laplace(1.0), pa.AddRemove(), 0.05), 50,
                               tiny_only=True)
    up, lo = an.delta(np.array([[0.1, 0.5], [1.0, 2.0]]))
    assert up is None and lo.value.shape == (2, 2)
    assert np.all(np.diff(lo.value.ravel()) <= 0)
    assert an.epsilon(1e-5) == (None, None)
    assert math.isfinite(float(an.epsilon(1e-200)[1].value))


def _gauss_delta1(e, q, s):
    """Exact remove profile of one step: P = (1-q) N(0,1) + q N(s,1) vs Q = N(0,1)."""
    if mp.e ** e <= 1 - q:
        return 1 - mp.e ** e
    y = (mp.log((mp.e ** e - (1 - q)) / q) + s * s / 2) / s
    return (1 - q) * mp.ncdf(-y) + q * mp.ncdf(s - y) - mp.e ** e * mp.ncdf(-y)


def _gauss_delta2(e, q, s):
    """Two steps: E_{y ~ P}[delta_1(e - L(y))]."""
    def f(y):
        p = (1 - q) * mp.npdf(y) + q * mp.npdf(y, s)
        return p * _gauss_delta1(e - mp.log(1 - q + q * mp.e ** (s * y - s * s / 2)), q, s)

    pts = [-mp.inf, *[mp.mpf(v) for v in np.linspace(-12, 12 + float(s), 49)], mp.inf]
    return mp.quad(f, pts)


@pytest.mark.slow
@pytest.mark.parametrize("q,sigma,delta", [(0.01, 0.2, 1e-5), (1e-3, 0.1, 1e-12),
                                           (0.3, 0.25, 1e-300)])
def test_gaussian_large_shift_below_the_exact_profile(q, sigma, delta):
    """One record at a large shift (the test answers at every delta there): lower <= the
    exact epsilon of two steps (mpmath quadrature at 30 digits)."""
    an = ThresholdTestAnalysis(step_laws(pa.Gaussian(sigma), pa.AddRemove(), q), 2)
    lo = an.epsilon_lower(delta)
    assert lo > 0
    with mp.workdps(30):
        assert _gauss_delta2(mp.mpf(lo), mp.mpf(q), 1 / mp.mpf(sigma)) >= delta


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # pld/grid.py's coarsening (reported)
def test_issue_row_tiny_rate_huge_shift():
    """Issue 27's first row (sigma 0.05, rate 1e-6, 1e6 steps, delta 1e-10): before, no lower
    bound ([None, 2573.3]); after, a certified lower bound below the upper."""
    g = pa.Training(pa.Gaussian(0.05), pa.Poisson(1e-6), steps=10**6).epsilon(1e-10)
    assert g.lower is not None and "threshold" in g.lower.source
    assert 0 < float(g.lower.value) <= float(g.upper.value)


def test_event_probability_rounding_to_one():
    """K = 10, q = 0.05, sigma 0.1: an event's log-probability rounded above 0 crashed the
    binomial window ("math domain error"); now clamped, and the lower bound stays below the
    unsampled group bound (one Gaussian of shift K s sqrt(T), closed form)."""
    run = pa.Training(pa.Gaussian(0.1), pa.Poisson(0.05), steps=1000,
                      relation=pa.AddRemove(group=10))
    lo = float(run.epsilon(1e-5, accountant="threshold-test").lower.value)
    mu = 100 * math.sqrt(1000)
    assert 0 < lo < mu * mu / 2 + mu * math.sqrt(2 * math.log(1e5))
