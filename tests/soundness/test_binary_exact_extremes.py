"""Extremes of the exact Poisson-subsampled randomized response (theorems/binary_exact.py),
found by the review of issue 28.

Reference: the binomial tails of the sufficient statistic summed in mpmath at 60 digits
(the loss is linear in the count k, so delta(eps) = P(K >= k0) - e^eps Q(K >= k0) at the
threshold k0); no privamp function is used for the reference."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.theorems.binary_exact import BinaryExactAnalysis


def _tail(T: int, k0: int, p: mp.mpf) -> mp.mpf:
    """P(Binom(T, p) >= k0), all terms summed."""
    return mp.fsum(mp.binomial(T, k) * p**k * (1 - p) ** (T - k) for k in range(k0, T + 1))


def _direction(eps: float, x: mp.mpf, y: mp.mpf, T: int) -> mp.mpf:
    if x < y:  # relabel the two outcomes
        x, y = 1 - x, 1 - y
    a, b = mp.log(x / y), mp.log((1 - x) / (1 - y))
    k0 = next((k for k in range(T + 1) if k * a + (T - k) * b > eps), None)
    if k0 is None:
        return mp.mpf(0)
    return _tail(T, k0, x) - mp.exp(eps) * _tail(T, k0, y)


def rr_delta(eps: float, theta: float, q: float, T: int) -> mp.mpf:
    """Exact delta(eps) of T steps, the larger of the remove and add directions."""
    with mp.workdps(60):
        t, r = mp.mpf(theta), mp.mpf(q)
        x, y = r * t + (1 - r) * (1 - t), 1 - t
        return max(_direction(eps, x, y, T), _direction(eps, y, x, T))


@pytest.mark.parametrize("eps", [1689.3, 1689.4, 1689.6, 1689.8, 1689.9])
def test_subnormal_deltas_bracketed(eps):
    """delta ~ 1e-317 (subnormal floats): before the fix the upper value was rounded to the
    nearest subnormal, below the true value (and the lower one above it)."""
    up, lo = BinaryExactAnalysis(pa.RandomizedResponse(0.9), 0.5, 1050).delta(eps)
    ref = rr_delta(eps, 0.9, 0.5, 1050)
    assert 0 < ref < 1e-310
    assert mp.mpf(float(lo.value)) <= ref <= mp.mpf(float(up.value))


def test_underflowing_delta_is_not_an_exact_zero():
    """The true delta is ~1.3e-3580 > 0 (below every float): the upper bound must be
    positive, not an 'exact' 0."""
    theta, q, T = 0.999999, 1e-12, 2000
    ref = rr_delta(0.001, theta, q, T)
    assert ref > 0
    up, lo = BinaryExactAnalysis(pa.RandomizedResponse(theta), q, T).delta(0.001)
    assert float(up.value) > 0 and up.kind == "upper" and float(lo.value) == 0.0
    # above every loss of the run (T log(P/Q) of the top atom) delta is exactly 0
    top = T * (math.log(q * theta + (1 - q) * (1 - theta)) - math.log1p(-theta))
    up, lo = BinaryExactAnalysis(pa.RandomizedResponse(theta), q, T).delta(top * 1.001)
    assert up.kind == "exact" and float(up.value) == 0.0


def test_theta_one_rate_one_disjoint_outputs():
    """theta = 1, q = 1: the outputs are disjoint, delta(eps) = 1, epsilon inf (was a
    'math domain error' ValueError)."""
    run = pa.Training(pa.RandomizedResponse(1.0), pa.Poisson(1.0), steps=3)
    g = run.epsilon(1e-5)
    assert math.isinf(float(g.upper.value)) and math.isinf(float(g.lower.value))
    d = run.delta(np.array([0.0, 5.0]))
    assert np.all(np.asarray(d.upper.value) == 1.0)
    assert np.all(np.asarray(d.lower.value) >= 1.0 - 1e-12)


@pytest.mark.parametrize("theta,q", [(0.9, 1e-12), (0.999999, 1e-12), (0.9, 1e-6),
                                     (0.6, 0.3)])
def test_renyi_floor_below_mpmath_rdp(theta, q):
    """The floor is a lower bound on T x the one-step Rényi divergence (both directions, in
    mpmath).  At tiny rates the divergence (~q^2) is below the float error of the log-sum:
    before the fix the floor was up to 1e7 times the true value (theta 0.9, q 1e-12)."""
    T = 10
    a = np.array([1.0001, 1.01, 1.5, 2.0, 8.0, 64.0, 1000.0])
    fl = BinaryExactAnalysis(pa.RandomizedResponse(theta), q, T).renyi_floor(a)
    with mp.workdps(60):
        t, r = mp.mpf(theta), mp.mpf(q)
        p = [r * t + (1 - r) * (1 - t), r * (1 - t) + (1 - r) * t]
        u = [1 - t, t]
        for al, f in zip(a, fl, strict=True):
            b = mp.mpf(al)
            div = max(mp.log(sum(x**b * y ** (1 - b) for x, y in zip(v, w, strict=True)))
                      / (b - 1) for v, w in ((p, u), (u, p)))
            assert mp.mpf(f) <= T * div
            if q >= 0.3:
                assert mp.mpf(f) >= 0.99 * T * div
