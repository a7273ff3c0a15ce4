"""Soundness review, session 12: the Poisson group PLD (a group of K records, add/remove, the
pair B_K = sum_j Binom(j | K, q) N(j, sigma^2) vs N(0, sigma^2) and its swap; Schuchardt et
al. 2024, arXiv:2403.04867, Sec. 4 / Thm 4.2, docs/findings.md "Group PLD") through the public
entry ``pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T, relation=pa.AddRemove(K))`` at
T = 100 to 1000, against references built without privamp (tests/soundness/mixture_refs.py):

* Monte Carlo of the T-fold product's privacy loss, both directions, with a 4-standard-error
  interval (fixed seed: deterministic), narrow enough (< 3% half-width) that an interval
  off by 5% would fail;
* the Lewis (2001) Fourier formula on the one-step moment generating function (no loss
  discretisation; numerical error ~1e-13), which also has to fall inside the Monte Carlo
  interval (the two references check each other).

The pair is realised (tight), so the truth is max(remove, add) of the pair's profiles.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import privamp as pa

sys.path.insert(0, str(Path(__file__).parent))
import mixture_refs as R  # noqa: E402

SE_WIDTH = 4.0  # Monte Carlo interval: mean +- 4 standard errors


def _run(sigma: float, q: float, T: int, K: int) -> pa.Training:
    return pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T, relation=pa.AddRemove(K))


def _mc_interval(K, q, sigma, T, eps, n, seed):
    """Per epsilon, the interval of max(remove, add) from both directions' Monte Carlo."""
    lo, hi = [], []
    for k, direction in enumerate(("remove", "add")):
        m, se = R.mc_delta(K, q, 1.0 / sigma, T, eps, n, seed + k, direction)
        lo.append(m - SE_WIDTH * se)
        hi.append(m + SE_WIDTH * se)
        if direction == "remove":
            # not vacuous: an interval 5% off the truth would leave this one
            assert np.all(SE_WIDTH * se < 0.03 * m), (m, se)
    return np.max(lo, axis=0), np.max(hi, axis=0)


def _fourier(K, q, sigma, T, eps):
    w = R.binomial_weights(K, q)
    vr, er = R.cf_delta(w, 1.0 / sigma, T, eps, "remove")
    va, ea = R.cf_delta(w, 1.0 / sigma, T, eps, "add")
    return np.maximum(vr, va), np.maximum(er, ea)


def _check_mc(sigma, q, K, T, eps, n, seed):
    eps = np.asarray(eps, dtype=float)
    g = _run(sigma, q, T, K).delta(eps)
    up, low = np.asarray(g.upper.value), np.asarray(g.lower.value)
    mc_lo, mc_hi = _mc_interval(K, q, sigma, T, eps, n, seed)
    assert np.all(up >= mc_lo), (up, mc_lo)
    assert np.all(low <= mc_hi), (low, mc_hi)
    ref, err = _fourier(K, q, sigma, T, eps)
    assert np.all(err < 1e-6 * ref), (ref, err)
    assert np.all((mc_lo <= ref + err) & (ref - err <= mc_hi)), (mc_lo, ref, mc_hi)
    assert np.all(up >= ref - err) and np.all(low <= ref + err), (low, ref, up)


@pytest.mark.parametrize("sigma, q, K, T, eps, n", [
    (4.0, 0.05, 8, 100, [0.25, 0.5, 1.0], 200_000),
    (2.0, 0.02, 4, 300, [0.25, 0.5], 70_000),
])
def test_group_delta_brackets_monte_carlo(sigma, q, K, T, eps, n):
    """privamp's delta interval meets the Monte Carlo interval of the run's loss, both
    directions (and the Fourier reference lies in the Monte Carlo interval)."""
    _check_mc(sigma, q, K, T, eps, n, seed=12)


@pytest.mark.slow
@pytest.mark.parametrize("sigma, q, K, T, eps, n", [
    (1.0, 0.005, 3, 1000, [0.25, 0.5], 200_000),
    (1.0, 0.01, 2, 100, [0.0, 0.1], 1_000_000),
])
def test_group_delta_brackets_monte_carlo_long(sigma, q, K, T, eps, n):
    """As above at T = 1000 (2e8 sampled steps) and at a small rate (1e8)."""
    _check_mc(sigma, q, K, T, eps, n, seed=1212)


GRID = [  # (sigma, q, K, T): the Fourier reference's u range is short here (< 1.5 s each)
    (4.0, 0.05, 8, 100), (2.0, 0.02, 4, 300), (1.0, 0.005, 3, 1000),
]
GRID_SLOW = [(1.0, 0.01, 2, 100)]  # long u range: 8 s CPU (0.8, 0.002, 2, 1000 too: see results)


def _check_fourier(sigma, q, K, T):
    run = _run(sigma, q, T, K)
    eps = np.array([0.25, 0.5, 1.0, 2.0, 3.0])
    g = run.delta(eps)
    # epsilon at delta: the reference profile at privamp's ends must straddle the target
    deltas = np.array([1e-2, 1e-3, 1e-4])
    ge = run.epsilon(deltas)
    e_up, e_low = np.asarray(ge.upper.value), np.asarray(ge.lower.value)
    ref_all, err_all = _fourier(K, q, sigma, T, np.concatenate([eps, e_up, e_low]))
    ref, err = ref_all[:5], err_all[:5]
    keep = ref > 1e-9  # the Lewis formula's absolute error is ~1e-13 here
    assert np.all(err[keep] < 1e-4 * ref[keep]), (ref, err)
    up, low = np.asarray(g.upper.value), np.asarray(g.lower.value)
    assert np.all(up[keep] >= ref[keep] - err[keep]), (up, ref, err)
    assert np.all(low[keep] <= ref[keep] + err[keep]), (low, ref, err)
    r_up, err_up = ref_all[5:8], err_all[5:8]
    r_low, err_low = ref_all[8:], err_all[8:]
    assert np.all(r_up - err_up <= deltas), (e_up, r_up, deltas)
    assert np.all((e_low == 0) | (r_low + err_low >= deltas)), (e_low, r_low, deltas)


@pytest.mark.parametrize("sigma, q, K, T", GRID)
def test_group_interval_brackets_fourier(sigma, q, K, T):
    """delta at five epsilons and epsilon at three deltas against the Fourier reference."""
    _check_fourier(sigma, q, K, T)


@pytest.mark.slow
@pytest.mark.parametrize("sigma, q, K, T", GRID_SLOW)
def test_group_interval_brackets_fourier_slow(sigma, q, K, T):
    """As above where the one-step characteristic function decays slowly (small K q T)."""
    _check_fourier(sigma, q, K, T)

