"""Adversarial review, session 11: the Poisson group PLD (Schuchardt et al. 2024,
arXiv:2403.04867, Thm 4.2 carried to every privacy profile) through the public entry
``pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T, relation=pa.AddRemove(K))``, against
references built here: mpmath at T = 1 (the realised pair B_K = sum_j Binom(j | K, q) N(j, s^2)
vs N(0, s^2) and its swap: the pair is tight, so its profile is the truth), dp-accounting's
mixture-of-Gaussians PLD (a peer) with both roundings, and an FFT composition of this file's
own privacy-bucket discretisation (rounding the loss up / down brackets the truth)."""

from __future__ import annotations

import math
import warnings

import mpmath as mp
import numpy as np
import pytest
from scipy import special, stats

import privamp as pa
from privamp.errors import NotApplicable


def _run(sigma: float, q: float, T: int, K: int) -> pa.Training:
    return pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T, relation=pa.AddRemove(K))


# ---------------------------------------------------------------- T = 1, mpmath (exact)

def _mp_profile(K: int, q: float, sigma: float):
    """delta(eps) of one step (the larger direction), mpmath at 30 digits: the pair
    B = sum_j b_j N(j s, 1) vs N = N(0, 1), s = 1 / sigma; L(x) = log sum_j b_j e^{j s x -
    (j s)^2 / 2} is increasing, so each direction's optimal test is a half-line at the
    preimage of the loss level (bisection)."""
    qq, s = mp.mpf(q), mp.mpf(1) / sigma
    b = [mp.binomial(K, j) * qq ** j * (1 - qq) ** (K - j) for j in range(K + 1)]

    def loss(x):
        return mp.log(mp.fsum(b[j] * mp.exp(j * s * x - (j * s) ** 2 / 2) for j in range(K + 1)))

    def pre(level, strict):  # sup{x : L(x) <= level} by bisection
        lo, hi = mp.mpf(-60), K * s + 60
        for _ in range(140):
            mid = (lo + hi) / 2
            if loss(mid) > level or (strict and loss(mid) == level):
                hi = mid
            else:
                lo = mid
        return (lo + hi) / 2

    def delta(eps):
        e = mp.e ** mp.mpf(eps)
        x = pre(mp.mpf(eps), False)  # remove: B(L > eps) - e^eps N(L > eps)
        rem = mp.fsum(b[j] * mp.ncdf(j * s - x) for j in range(K + 1)) - e * mp.ncdf(-x)
        x = pre(-mp.mpf(eps), False)  # add: N(L < -eps) - e^eps B(L < -eps)
        add = mp.ncdf(x) - e * mp.fsum(b[j] * mp.ncdf(x - j * s) for j in range(K + 1))
        return max(rem, add, mp.mpf(0))

    return delta


def _mp_epsilon(delta_fn, target: float) -> float:
    """The smallest eps >= 0 with delta(eps) <= target (bisection on the decreasing
    profile), returned as the interval's ends (lo, hi): delta(lo) > target >= delta(hi)."""
    if delta_fn(0) <= target:
        return 0.0, 0.0
    lo, hi = mp.mpf(0), mp.mpf(1)
    while delta_fn(hi) > target:
        lo, hi = hi, 2 * hi
    for _ in range(45):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if delta_fn(mid) > target else (lo, mid)
    return float(lo), float(hi)


T1_SETTINGS = [  # (K, q, sigma)
    (2, 0.01, 1.0), (8, 1e-3, 2.0), (3, 0.5, 0.5), (16, 1e-4, 5.0), (4, 0.9, 1.0),
    (2, 1e-8, 0.3), (5, 0.3, 0.3),
]  # (K 32 / 64 at sigma 50 / 10 were checked by the review too; 25-350 s each, left out)


@pytest.mark.slow
@pytest.mark.parametrize(("K", "q", "sigma"), T1_SETTINGS)
def test_one_step_brackets_mpmath(K: int, q: float, sigma: float) -> None:
    """T = 1: the public interval contains the exact profile (delta at eps in {0, 0.1, 1, 5}
    and epsilon at delta in {1e-3, 1e-6, 1e-10}), every accountant of "best" included."""
    run = _run(sigma, q, 1, K)
    with mp.workdps(30):
        prof = _mp_profile(K, q, sigma)
        for eps in (0.0, 0.1, 1.0, 5.0):
            exact = float(prof(eps))
            r = run.delta(eps)
            assert r.upper is not None
            assert float(r.upper.value) >= exact * (1 - 1e-9) - 1e-300, (eps, r, exact)
            if r.lower is not None:
                assert float(r.lower.value) <= exact * (1 + 1e-9) + 1e-300, (eps, r, exact)
        for d in (1e-3, 1e-6, 1e-10):
            lo_ref, hi_ref = _mp_epsilon(prof, d)
            r = run.epsilon(d)
            assert r.upper is not None
            assert float(r.upper.value) >= lo_ref * (1 - 1e-9), (d, r, lo_ref)
            if r.lower is not None:
                assert float(r.lower.value) <= hi_ref * (1 + 1e-9), (d, r, hi_ref)


# ------------------------------------ T = 2..10: this file's own bucket composition (FFT)

def _own_bracket(K: int, q: float, sigma: float, T: int, h: float = 2e-4,
                 tail: float = 1e-18):
    """Per direction, (pessimistic, optimistic) T-fold compositions of one step's loss
    rounded up / down to the grid h (privacy buckets): delta(eps) = E[(1 - e^{eps - S})_+]
    is increasing in the summed loss S, so rounding every step's loss up (down) bounds it
    from above (below); the mass beyond the grid goes to +inf (pessimistic) or is dropped
    (optimistic).  Loss preimages by a vectorised bisection on L(x) - log b_0 (accurate
    next to the loss floor), composition by scipy's FFT (noise ~1e-14 absolute)."""
    from scipy import signal

    s = 1.0 / sigma
    b = stats.binom.pmf(np.arange(K + 1), K, q)
    jj = np.arange(K + 1) * s
    c = np.log(b) - jj ** 2 / 2
    floor = float(np.log(b[0]))
    cj = c[1:] - c[0]

    def above_floor(x):
        u = special.logsumexp(cj[:, None] + jj[1:, None] * x[None, :], axis=0)
        return np.logaddexp(0.0, u)

    xhi = jj[-1] - float(special.ndtri(tail)) + 1.0
    xlo = float(special.ndtri(tail)) - 1.0
    lmin = floor + float(above_floor(np.array([xlo]))[0])
    lmax = floor + float(above_floor(np.array([xhi]))[0])
    grid = np.arange(int(np.floor(lmin / h)) - 1, int(np.ceil(lmax / h)) + 2) * h
    tgt = grid - floor
    xs = np.full(grid.shape, -np.inf)
    ok = tgt > 0
    a, z, t = np.full(ok.sum(), -2e4), np.full(ok.sum(), xhi + 10.0), tgt[ok]
    for _ in range(120):
        mid = (a + z) / 2
        big = above_floor(mid) > t
        z, a = np.where(big, mid, z), np.where(big, a, mid)
    xs[ok] = (a + z) / 2
    cdf_p = (b[:, None] * special.ndtr(xs[None, :] - jj[:, None])).sum(0)  # B(L <= l)
    cdf_q = special.ndtr(xs)  # N(L <= l)
    off = int(round(grid[0] / h))

    def compose(m, first, inf):
        out = m.copy()
        for _ in range(T - 1):
            out = np.maximum(signal.fftconvolve(out, m), 0.0)
        return out, first * T, 1.0 - (1.0 - inf) ** T

    m_p, m_q = np.maximum(np.diff(cdf_p), 0.0), np.maximum(np.diff(cdf_q), 0.0)
    n = len(grid) - 1  # m[k]: mass of L in (grid[k], grid[k + 1]]
    pp, qq = m_p.copy(), m_q[::-1].copy()
    pp[0] += cdf_p[0]  # (pessimistic: L below the grid rounded up to grid[1])
    qq[0] += 1.0 - cdf_q[-1]  # (-L below -grid[n] rounded up to -grid[n - 1])
    return {  # remove: L under B; add: -L under N (bins reversed)
        "remove": (compose(pp, off + 1, 1.0 - cdf_p[-1]), compose(m_p, off, 0.0)),
        "add": (compose(qq, -(off + n - 1), cdf_q[0]), compose(m_q[::-1], -(off + n), 0.0)),
    }, h


def _own_delta(comp, eps: float, h: float, pessimistic: bool) -> float:
    out, first, inf = comp
    loss = (first + np.arange(len(out))) * h
    return float(np.sum(out * -np.expm1(np.minimum(eps - loss, 0.0)))) + (
        inf if pessimistic else 0.0)


OWN_SETTINGS = [  # (sigma, q, K, T)
    (2.0, 0.01, 2, 2), (1.0, 0.1, 4, 5), (5.0, 1e-3, 16, 10), (0.5, 0.3, 3, 3),
    (10.0, 0.01, 64, 10), (2.0, 1e-8, 8, 10),
]


@pytest.mark.slow
@pytest.mark.parametrize(("sigma", "q", "K", "T"), OWN_SETTINGS)
def test_small_runs_bracket_own_fft_composition(sigma: float, q: float, K: int, T: int) -> None:
    """T = 2..10: privamp's interval meets this file's own bracket (upper >= own lower,
    lower <= own upper) at eps in {0, 0.3, 1, 3}, up to the FFT's noise (1e-11)."""
    comps, h = _own_bracket(K, q, sigma, T)
    run = _run(sigma, q, T, K)
    for eps in (0.0, 0.3, 1.0, 3.0):
        own_up = max(_own_delta(comps[d][0], eps, h, True) for d in comps)
        own_lo = max(_own_delta(comps[d][1], eps, h, False) for d in comps)
        assert own_lo <= own_up + 1e-12
        r = run.delta(eps)
        assert r.upper is not None
        assert float(r.upper.value) >= own_lo - 1e-11, (eps, r, own_lo)
        if r.lower is not None:
            assert float(r.lower.value) <= own_up + 1e-11, (eps, r, own_up)


# ------------------- long runs (two-level composition, coarse add direction): dp-accounting

def _dpa_mixture(sigma: float, q: float, K: int, T: int, pessimistic: bool, h: float = 1e-4):
    """dp-accounting's PLD of the same mixture (sensitivities 0..K with binomial weights,
    both adjacencies), composed T times: connect-the-dots (pessimistic) or privacy buckets
    rounded down (optimistic, loose by ~T h / 2 in the loss)."""
    pld_mod = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    w = stats.binom.pmf(np.arange(K + 1), K, q)
    pld = pld_mod.from_mixture_gaussian_mechanism(
        sigma, [float(k) for k in range(K + 1)], [float(x) for x in w],
        pessimistic_estimate=pessimistic, value_discretization_interval=h,
        use_connect_dots=pessimistic)
    return pld.self_compose(T)


LONG_SETTINGS = [  # (sigma, q, K, T): automatic steps 1.6e-4, 1.8e-4, 3.5e-5: two levels
    (2.0, 1e-3, 8, 5000), (4.0, 1e-3, 16, 10000), (4.0, 1e-4, 32, 20000),
]


@pytest.mark.slow
@pytest.mark.parametrize(("sigma", "q", "K", "T"), LONG_SETTINGS)
def test_two_level_runs_against_dp_accounting(sigma: float, q: float, K: int, T: int) -> None:
    """T >= 5000 on the automatic grid (two levels, the add direction coarse unless it
    decides): privamp's lower bound stays at or below dp-accounting's pessimistic estimate,
    its upper at or above dp-accounting's optimistic one (epsilon at four deltas, delta at
    four epsilons)."""
    pess = _dpa_mixture(sigma, q, K, T, True)
    opt = _dpa_mixture(sigma, q, K, T, False)
    run = _run(sigma, q, T, K)
    for d in (1e-3, 1e-5, 1e-8):
        r = run.epsilon(d)
        assert r.upper is not None and r.lower is not None
        assert float(r.upper.value) >= opt.get_epsilon_for_delta(d)
        assert float(r.lower.value) <= pess.get_epsilon_for_delta(d) * (1 + 1e-9)
    for eps in (0.0, 0.5, 1.0):
        r = run.delta(eps)
        assert r.upper is not None and r.lower is not None
        assert float(r.upper.value) >= opt.get_delta_for_epsilon(eps)
        assert float(r.lower.value) <= pess.get_delta_for_epsilon(eps) * (1 + 1e-9)


@pytest.mark.parametrize(("sigma", "q", "K", "T"), [
    (2.0, 1e-3, 8, 5000), (4.0, 1e-4, 32, 20000), (10.0, 0.01, 4, 5000), (1.0, 1e-3, 2, 7919)])
def test_two_level_interval_meets_one_level_interval(sigma: float, q: float, K: int,
                                                     T: int) -> None:
    """A differential check of the session-10 shortcuts (both sides are privamp's, so this
    only says the two code paths do not contradict each other): the automatic analysis (two
    levels, coarse add direction, iqr/30 step) against the analysis on the same step given
    explicitly (one level, both directions fine).  Each interval certifies the truth, so
    they must overlap."""
    from privamp.mechanisms.gaussian import Gaussian
    from privamp.pairs.mixtures import GaussianShiftMixturePair
    from privamp.theorems.schuchardt2024.group_pld import (
        GroupPLDAnalysis,
        group_mixture_pairs,
        group_step,
    )

    pair = group_mixture_pairs(K, q, 1.0 / sigma)[0]
    assert isinstance(pair, GaussianShiftMixturePair)
    h = group_step(pair, T)
    assert h <= 2e-4  # (the grid the open item asked about)
    auto = GroupPLDAnalysis(Gaussian(sigma), q, T, K)
    one = GroupPLDAnalysis(Gaussian(sigma), q, T, K, h=h)
    for which, xs in (("epsilon", (1e-2, 1e-3, 1e-5, 1e-8)), ("delta", (0.0, 0.2, 1.0))):
        for x in xs:
            ua, la = getattr(auto, which)(np.array(x))
            uo, lo = getattr(one, which)(np.array(x))
            assert ua is not None and uo is not None and la is not None and lo is not None
            assert float(ua.value) >= float(lo.value) * (1 - 1e-12), (which, x)
            assert float(la.value) <= float(uo.value) * (1 + 1e-12), (which, x)


# ------------------------------------------- T = 10: Monte Carlo of the privacy loss

@pytest.mark.slow
def test_ten_steps_against_monte_carlo() -> None:
    """T = 10, sigma 1, q 0.1, K 4: 1e7 samples of the summed loss under B^T (remove) and
    N^T (add); delta(eps) = E[(1 - e^{eps - S})_+] estimated with its standard error; the
    interval must reach within 4 standard errors of the larger direction's estimate."""
    sigma, q, K, T, n = 1.0, 0.1, 4, 10, 10_000_000
    s = 1.0 / sigma
    b = stats.binom.pmf(np.arange(K + 1), K, q)
    jj = np.arange(K + 1) * s
    c = np.log(b) - jj ** 2 / 2
    rng = np.random.default_rng(11)
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    sums = {d: np.zeros((2, eps.size)) for d in ("remove", "add")}
    chunk = 500_000
    for _ in range(n // chunk):
        s_rem, s_add = np.zeros(chunk), np.zeros(chunk)
        for _ in range(T):
            x = rng.binomial(K, q, size=chunk) * s + rng.standard_normal(chunk)
            s_rem += special.logsumexp(c[:, None] + jj[:, None] * x[None, :], axis=0)
            z = rng.standard_normal(chunk)
            s_add -= special.logsumexp(c[:, None] + jj[:, None] * z[None, :], axis=0)
        for d, tot in (("remove", s_rem), ("add", s_add)):
            v = -np.expm1(np.minimum(eps[:, None] - tot[None, :], 0.0))
            sums[d][0] += v.sum(axis=1)
            sums[d][1] += (v * v).sum(axis=1)
    run = _run(sigma, q, T, K)
    for i, e in enumerate(eps):
        est = [(sums[d][0][i] / n, math.sqrt(max(sums[d][1][i] / n - (sums[d][0][i] / n) ** 2,
                                                 0.0) / n)) for d in sums]
        mean, se = max(est)
        r = run.delta(float(e))
        assert r.upper is not None and r.lower is not None
        assert float(r.upper.value) >= mean - 4 * se, (e, r, mean, se)
        assert float(r.lower.value) <= mean + 4 * se, (e, r, mean, se)


# ----------------------------------------------------------- extremes: answer or refuse

@pytest.mark.parametrize(("sigma", "q", "K", "T"), [
    (0.3, 1e-8, 2, 1), pytest.param(50.0, 0.9, 2, 1000, marks=pytest.mark.slow),
    pytest.param(1.0, 1e-6, 64, 10, marks=pytest.mark.slow), (2.0, 0.5, 16, 5000),
    (0.5, 1e-4, 4, 10000), (10.0, 1e-3, 64, 20000),
])
def test_extremes_answer_without_warnings(sigma: float, q: float, K: int, T: int) -> None:
    """Corners of (sigma, q, K, T) at delta 1e-3 .. 1e-12 and epsilon 0 .. 100: a finite
    upper bound >= a lower bound >= 0 (or NotApplicable), no NaN, no warning."""
    run = _run(sigma, q, T, K)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for which, xs in (("epsilon", (1e-3, 1e-12)), ("delta", (0.0, 1.0, 100.0))):
            for x in xs:
                try:
                    r = getattr(run, which)(x)
                except NotApplicable:
                    continue
                assert r.upper is not None
                up = float(r.upper.value)
                assert not math.isnan(up) and up >= 0.0
                if r.lower is not None:
                    lo = float(r.lower.value)
                    assert math.isfinite(lo) and 0.0 <= lo <= up * (1 + 1e-12) + 1e-300
