"""Sampling with replacement under substitution: the one-step profile bound (Balle et al. 2018
Thm 2 given the other draws, the add/remove collinear worst case, the one-step
removal-then-addition triangle) as a dominating grid pair, composed.

Independent references: exact enumeration of every ordered batch of tiny one-dimensional
datasets, and the output quantised into fine cells (a post-processing, so every hockey-stick
divergence of the quantised pair is <= the true one: a value that must stay below an upper
bound).  One step in both orders and at negative eps; two steps, including an *adaptive*
adversary that picks the second step's datasets (the order of the neighbours) from the first
output -- the case a dominating pair must cover for composition to be legitimate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

import privamp as pa
from privamp.theorems.balle2018.pld import FixedBatchPLDAnalysis

_EDGES = np.linspace(-9.0, 12.0, 4201)  # cells of width 0.005, plus the two tails


def _batch_means(records: np.ndarray, m: int) -> np.ndarray:
    """The sum of every ordered batch of m draws with replacement (each of prob n^-m)."""
    n = len(records)
    idx = np.array(np.meshgrid(*[np.arange(n)] * m, indexing="ij")).reshape(m, -1).T
    return records[idx].sum(axis=1)


def _cells(means: np.ndarray, sigma: float) -> np.ndarray:
    """Masses of the equal-weight mixture of N(mean, sigma^2) on the cells of ``_EDGES``."""
    cdf = special.ndtr((_EDGES[None, :] - means[:, None]) / sigma).mean(axis=0)
    return np.diff(np.concatenate([[0.0], cdf, [1.0]]))


def _pair(others: np.ndarray, v: float, vp: float, m: int, sigma: float):
    """Quantised (M(x), M(x')) of one step, x = others + {v}, x' = others + {v'}."""
    a = _batch_means(np.append(others, v), m)
    b = _batch_means(np.append(others, vp), m)
    c = b.mean()
    return _cells(a - c, sigma), _cells(b - c, sigma)


def _hs(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    return float(np.maximum(p - math.exp(eps) * q, 0.0).sum())


def _hs_many(p: np.ndarray, q: np.ndarray, t: np.ndarray) -> np.ndarray:
    """sum_k (p_k - t q_k)_+ for every t >= 0 (cells sorted by likelihood ratio)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(q > 0, p / q, np.inf)
    order = np.argsort(ratio)
    r, ps, qs = ratio[order], p[order], q[order]
    ptail = np.concatenate([np.cumsum(ps[::-1])[::-1], [0.0]])  # sum over k >= i
    qtail = np.concatenate([np.cumsum(qs[::-1])[::-1], [0.0]])
    i = np.searchsorted(r, t, side="right")  # cells with ratio > t
    return np.maximum(ptail[i] - t * qtail[i], 0.0)


def _two_steps(first, seconds, eps: float) -> float:
    """H_{e^eps} of two steps: ``first`` (p, q), then, after seeing the first output's cell,
    the worst of the pairs ``seconds`` for that cell (an adaptive adversary; one pair in
    ``seconds`` = plain composition): sum_i max_pair p1_i H_{e^eps q1_i / p1_i}(pair)."""
    p1, q1 = first
    keep = p1 > 0
    t = math.exp(eps) * q1[keep] / p1[keep]
    best = np.max([_hs_many(p2, q2, t) for p2, q2 in seconds], axis=0)
    return float((p1[keep] * best).sum())


def _datasets(n: int, C: float, rng) -> list[tuple[np.ndarray, float, float]]:
    """(others, v, v') in [-C, C]: the collinear family (v = C, v' = -C, others at c), mixed
    others, and random ones."""
    out = [(np.full(n - 1, c), C, -C) for c in np.linspace(-C, C, 5)]
    out.append((np.array([-C] * (n // 2) + [C] * (n - 1 - n // 2)), C, -C))
    for _ in range(4):
        out.append((rng.uniform(-C, C, n - 1), *rng.uniform(-C, C, 2)))
    return out


@pytest.mark.parametrize("m,n,sigma", [(2, 3, 0.7), (3, 5, 1.0)])
def test_one_step_every_dataset_below_the_upper_bound(m, n, sigma):
    """Both orders at eps >= 0 (the public answer), and the dominating pair's own profile
    at eps < 0 against the reverse order there; the collinear one-sided pair (others at v') comes
    within 3 % of the bound at some eps >= 0.3 (so the bound is not vacuous: the check can
    fail both ways)."""
    rng = np.random.default_rng(13)
    eps = np.array([0.0, 0.1, 0.3, 0.6, 1.0])
    run = pa.Training(pa.Gaussian(sigma), pa.WithReplacement(m, n), steps=1,
                      relation=pa.Substitution())
    g = run.delta(eps, accountant="pld")
    assert "one-step profile bound" in g.upper.source
    up = g.upper.value
    analysis = FixedBatchPLDAnalysis(pa.Gaussian(sigma), pa.WithReplacement(m, n),
                                     pa.Substitution(), 1)
    assert analysis.plds  # builds the dominating grid pair (analysis._profile)
    neg = np.array([-1.0, -0.3, -0.05])
    up_neg = analysis._profile.delta(neg)
    worst = np.zeros(len(eps))
    for others, v, vp in _datasets(n, 0.5, rng):
        p, q = _pair(others, v, vp, m, sigma)
        for a, b in ((p, q), (q, p)):
            d = np.array([_hs(a, b, e) for e in eps])
            assert np.all(d <= up + 1e-9), (others, v, vp, d, up)
            worst = np.maximum(worst, d)
            d_neg = np.array([_hs(a, b, e) for e in neg])
            assert np.all(d_neg <= up_neg + 1e-9), (others, v, vp, d_neg, up_neg)
    assert np.any((eps >= 0.3) & (worst >= 0.97 * up))


@pytest.mark.parametrize("m,n,sigma", [(2, 3, 0.7), (3, 5, 1.0)])
def test_two_steps_adaptive_orders_below_the_composed_upper_bound(m, n, sigma):
    """Two steps: the one-sided pair composed with itself, with its swap (the second step's
    gradients send the other records to v instead of v'), the centred pair, and an adaptive
    adversary choosing, from the first output, among the one-sided pair, its swap and the
    centred pair for the second step."""
    C = 0.5
    eps = np.array([0.0, 0.2, 0.5, 1.0])
    run = pa.Training(pa.Gaussian(sigma), pa.WithReplacement(m, n), steps=2,
                      relation=pa.Substitution())
    g = run.delta(eps, accountant="pld")
    up = g.upper.value
    one = _pair(np.full(n - 1, -C), C, -C, m, sigma)
    swap = _pair(np.full(n - 1, C), C, -C, m, sigma)
    centred = _pair(np.zeros(n - 1), C, -C, m, sigma)
    for e, u in zip(eps, up, strict=True):
        vals = [_two_steps(one, [one], e), _two_steps(one, [swap], e),
                _two_steps(centred, [centred], e),
                _two_steps(one, [one, swap, centred], e),
                _two_steps(centred, [one, swap, centred], e)]
        assert max(vals) <= u + 1e-9, (e, vals, u)
        # the lower bound (the one-sided pair composed) is below the realised value
        assert g.lower.value[list(eps).index(e)] <= vals[0] * (1 + 1e-3) + 1e-6
    assert _two_steps(one, [one], 0.5) >= 0.9 * up[2]  # not vacuous


def test_headline_interval_brackets_the_realised_run():
    """n = 1000, m = 10, T = 100, sigma = 1, Delta = 1: the composed one-sided pair (a
    realised run) has eps 0.78476 at delta 1e-5 by an independent y-grid quantisation and
    numpy FFT composition (docs/findings.md); it must lie inside the interval, and the upper
    bound must beat the previous one (1.18955, the triangle over the run and Thm 10)."""
    run = pa.Training(pa.Gaussian(1.0), pa.WithReplacement(10, 1000), steps=100,
                      relation=pa.Substitution())
    g = run.epsilon(1e-5, accountant="pld")
    assert 0.78476 - 1e-4 <= g.lower.value <= 0.78476 + 1e-5 < g.upper.value
    assert g.upper.value < 1.18955 * 0.75


def test_one_draw_from_a_large_dataset_answers():
    """m = 1, n = 1e5 (a tiny loss range, so a fine grid): the one-step triangle once made
    ~(top + below) / h passes over the grid and did not finish (adversarial review); now it
    answers (the suite's per-test timeout fails a hang), with the one-sided realised pair
    (Balle et al. Thm 9, privamp's lower side) below the upper bound."""
    run = pa.Training(pa.Gaussian(1.0), pa.WithReplacement(1, 100_000), steps=1000,
                      relation=pa.Substitution())
    g = run.epsilon(1e-5, accountant="pld")
    assert 0.0 < g.lower.value <= g.upper.value < 2.0 * g.lower.value


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_profile_pair_lies_above_the_convex_minorant_to_the_last_digit(seed):
    """The grid pair of ``upper_profile_pld`` carries no absolute slack (small deltas keep their
    answers): its profile, evaluated exactly in mpmath from its float masses, must be >= the
    greatest convex minorant of the bounds at every grid point (minorant by brute force over
    all chords, in mpmath), and within 1e-11 relative of it.  Bounds: a Gaussian pair's
    profile (values from 1 down to 1e-30, so relative float error matters at the tail) times
    random factors in [1, 1.3]."""
    import mpmath as mp

    from privamp.pld.profiles import upper_profile_pld

    rng = np.random.default_rng(seed)
    h = 0.15
    idx = np.arange(-7, 87)
    a = np.exp(idx * h)
    s = 1.3
    eps = idx * h
    prof = special.ndtr(-eps / s + s / 2) - a * special.ndtr(-eps / s - s / 2)
    upper = np.minimum.accumulate(np.clip(prof * rng.uniform(1.0, 1.3, len(idx)), 0.0, 1.0))
    pld = upper_profile_pld(idx, h, upper)
    xs = [mp.mpf(0)] + [mp.e ** (mp.mpf(int(i)) * mp.mpf(h)) for i in idx]
    ys = [mp.mpf(1)] + [mp.mpf(float(u)) for u in upper]
    pm = [(mp.e ** (mp.mpf(int(pld.offset + j)) * mp.mpf(h)), mp.mpf(float(m)))
          for j, m in enumerate(pld.masses) if m > 0]
    inf_mass = mp.mpf(pld.inf_mass)
    for i in range(1, len(xs)):
        minorant = ys[i]
        for j in range(i):
            for k in range(i + 1, len(xs)):
                t = (xs[i] - xs[j]) / (xs[k] - xs[j])
                minorant = min(minorant, ys[j] + t * (ys[k] - ys[j]))
        if i == len(xs) - 1:  # flat after the last point
            minorant = min(minorant, ys[i])
        value = inf_mass + mp.fsum(m * (1 - xs[i] / at) for at, m in pm if at > xs[i])
        assert value >= minorant
        assert value <= minorant * (1 + mp.mpf("1e-11")) + mp.mpf("1e-300")
