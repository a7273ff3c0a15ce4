"""The group PLD accountant (theorems/schuchardt2024/group_pld.py): Poisson + Gaussian, a group
of K records, dominating pair sum_k Binom(k | K, q) N(k s, 1) vs N(0, 1) and its swap."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

import privamp as pa
from privamp.errors import NotApplicable
from privamp.theorems.poisson_groups import SRC_GAUSS, GroupWitnessAnalysis, binomial_shift_pair
from privamp.theorems.schuchardt2024.group_pld import (
    GroupPLDAnalysis,
    group_mixture_pairs,
    group_pld_applies,
)


def _run(k, q=1e-3, sigma=1.0, steps=100):
    return pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=steps,
                       relation=pa.AddRemove(group=k))


def test_group_of_one_is_the_single_record_answer():
    q, sigma, steps = 1e-3, 1.0, 100
    up, lo = GroupPLDAnalysis(pa.Gaussian(sigma), q, steps, 1).epsilon(1e-5)
    g = _run(1, q, sigma, steps).epsilon(1e-5)
    # both intervals bracket the same true epsilon: they overlap, and are narrow
    assert float(lo.value) <= float(g.upper.value) and float(g.lower.value) <= float(up.value)
    assert float(up.value) == pytest.approx(float(g.upper.value), rel=2e-3)


def _exact_deltas(eps: float, k: int, q: float, s: float, steps: int) -> float:
    """max over directions of the exact profile of the T-fold mixture pair (T = 1, 2), by
    mpmath: the loss L(x) = log sum_j b_j e^{j s x - j^2 s^2 / 2} is increasing in x."""
    b = [mp.mpf(float(v)) for v in stats.binom.pmf(np.arange(k + 1), k, q)]
    js = [j * mp.mpf(s) for j in range(k + 1)]

    def loss(x):
        return mp.log(sum(bj * mp.e ** (m * x - m * m / 2) for bj, m in zip(b, js, strict=True)))

    floor = mp.log(b[0])

    def xstar(c):  # L(x) = c (c > floor)
        lo, hi = mp.mpf(-60), mp.mpf(60)
        for _ in range(64):
            mid = (lo + hi) / 2
            if loss(mid) > c:
                hi = mid
            else:
                lo = mid
        return (lo + hi) / 2

    def a_up(x):  # A(X > x) for the mixture A
        return sum(bj * mp.ncdf(m - x) for bj, m in zip(b, js, strict=True))

    def a_den(x):
        return sum(bj * mp.npdf(x, m, 1) for bj, m in zip(b, js, strict=True))

    g = mp.e ** mp.mpf(eps)
    if steps == 1:
        x = xstar(mp.mpf(eps))
        rem = a_up(x) - g * mp.ncdf(-x)
        c = -mp.mpf(eps)  # add: N(L < -eps) - g A(L < -eps)
        add = 0 if c <= floor else mp.ncdf(xstar(c)) - g * (1 - a_up(xstar(c)))
        return float(max(rem, add))

    def rem_in(x1):
        c = mp.mpf(eps) - loss(x1)
        if c <= floor:
            return a_den(x1) - g * mp.npdf(x1)
        x = xstar(c)
        return a_den(x1) * a_up(x) - g * mp.npdf(x1) * mp.ncdf(-x)

    def add_in(x1):
        c = -mp.mpf(eps) - loss(x1)
        if c <= floor:
            return mp.mpf(0)
        x = xstar(c)
        return mp.npdf(x1) * mp.ncdf(x) - g * a_den(x1) * (1 - a_up(x))

    pts = [-mp.inf, -4, 0, 2, 4, 8, mp.inf]
    return float(max(mp.quad(rem_in, pts), mp.quad(add_in, pts)))


@pytest.mark.parametrize("steps", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_small_runs_against_mpmath(steps):
    k, q, sigma, eps = 3, 0.2, 1.0, 0.5
    with mp.workdps(15):
        exact = _exact_deltas(eps, k, q, 1.0 / sigma, steps)
    up, lo = GroupPLDAnalysis(pa.Gaussian(sigma), q, steps, k).delta(np.array([eps]))
    assert float(lo.value[0]) <= exact * (1 + 1e-9) <= float(up.value[0]) * (1 + 1e-9)
    assert float(up.value[0]) == pytest.approx(exact, rel=2e-3)


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 8])
@pytest.mark.parametrize("q,sigma,steps", [(1e-2, 1.0, 50), (1e-3, 2.0, 1000),
                                           (0.05, 4.0, 100)])
def test_below_the_rdp_group_bound(k, q, sigma, steps):
    run = _run(k, q, sigma, steps)
    d = np.array([1e-3, 1e-5, 1e-8])
    pld = run.epsilon(d, accountant="pld")
    rdp = run.epsilon(d, accountant="rdp")
    assert np.all(np.asarray(pld.upper.value) <= np.asarray(rdp.upper.value))


def test_witness_below_and_interval_narrow():
    run = _run(8)
    up, lo = GroupPLDAnalysis(pa.Gaussian(1.0), 1e-3, 100, 8).epsilon(np.array([1e-5, 1e-9]))
    pair, tv = binomial_shift_pair(8, 1e-3, 1.0, 1e-17)  # the truncated witness, composed
    wit = GroupWitnessAnalysis(SRC_GAUSS.format(K=8), 100, pair=pair, tv=tv)
    _, wlo = wit.epsilon(np.array([1e-5, 1e-9]))
    assert np.all(np.asarray(wlo.value) <= np.asarray(up.value))
    assert np.all(np.asarray(up.value) - np.asarray(lo.value) <= 2e-3 * np.asarray(up.value))
    g = run.epsilon(1e-5)  # the default call: the group PLD answers, far below RDP's 6.01
    assert float(g.upper.value) < 0.62 and float(g.lower.value) > 0.61


def _profile_2d(means, w, gamma, remove: bool) -> float:
    """H_gamma of sum_k w_k N(mu_k, I_2) vs N(0, I_2) (remove) or swapped (add), by a fine
    grid sum (independent of privamp)."""
    x = np.linspace(-9, 13, 1101)
    X, Y = np.meshgrid(x, x, indexing="ij")
    n = np.exp(-(X ** 2 + Y ** 2) / 2) / (2 * np.pi)
    m = sum(wk * np.exp(-((X - mu[0]) ** 2 + (Y - mu[1]) ** 2) / 2) / (2 * np.pi)
            for wk, mu in zip(w, means, strict=True))
    f = np.maximum(m - gamma * n, 0) if remove else np.maximum(n - gamma * m, 0)
    return float(f.sum() * (x[1] - x[0]) ** 2)


@pytest.mark.slow
def test_aligned_means_are_worst_for_every_profile():
    """The step of the proof that goes beyond the paper's Rényi statement: for the
    hockey-stick divergence too, means with ||mu_i - mu_j|| <= |i - j| (mu_0 = 0) in any
    directions give at most the aligned value (random configurations in the plane)."""
    rng = np.random.default_rng(3)
    k, q = 3, 0.3
    w = stats.binom.pmf(np.arange(k + 1), k, q)
    aligned = [np.array([j * 1.0, 0.0]) for j in range(k + 1)]
    for _ in range(4):
        steps = [rng.uniform(0.3, 1.0) * np.array([math.cos(a), math.sin(a)])
                 for a in rng.uniform(-2.5, 2.5, k)]
        means = [np.zeros(2)] + list(np.cumsum(steps, axis=0))
        for gamma in (0.5, 1.0, 2.0):
            for remove in (True, False):
                assert _profile_2d(means, w, gamma, remove) <= _profile_2d(
                    aligned, w, gamma, remove) + 1e-9


def test_applicability_and_validation():
    assert group_pld_applies(_run(8))
    assert not group_pld_applies(_run(1))
    assert not group_pld_applies(pa.Training(pa.Gaussian(1.0), pa.Poisson(1.0), steps=10,
                                             relation=pa.AddRemove(group=4)))
    assert not group_pld_applies(_run(300))  # more components than MAX_GROUP
    with pytest.raises(ValueError, match="rate q"):
        group_mixture_pairs(4, 0.0, 1.0)
    with pytest.raises(ValueError, match="group size"):
        group_mixture_pairs(0, 0.1, 1.0)
    with pytest.raises(NotApplicable):
        group_mixture_pairs(200, 1e-5, 0.1)
