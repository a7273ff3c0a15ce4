"""Issue 28, second part: the group PLD's own grid step (theorems/schuchardt2024/group_pld.py,
``group_step``: a coarser grid, the interval at most 1e-3 relative) and the mixture pair's
quartiles, standard deviation, range brackets and preimage starts (pairs/mixtures.py), against
mpmath."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

import privamp as pa
from privamp.pairs.combinators import SwappedPair
from privamp.pairs.mixtures import GaussianShiftMixturePair
from privamp.theorems.schuchardt2024.group_pld import (
    GROUP_IQR_BINS,
    GroupPLDAnalysis,
    clear_shared,
    group_step,
)


def _pair(k: int, q: float, s: float) -> GaussianShiftMixturePair:
    w = stats.binom.pmf(np.arange(k + 1), k, q)
    return GaussianShiftMixturePair(w / w.sum(), s)


def _mp_parts(pair: GaussianShiftMixturePair):
    b = [mp.mpf(float(v)) for v in pair.b]
    s = mp.mpf(pair.s)

    def loss(x):
        return mp.log(sum(bj * mp.e ** (j * s * x - (j * s) ** 2 / 2) for j, bj in enumerate(b)))

    def cdf_p(x):
        return sum(bj * mp.ncdf(x - j * s) for j, bj in enumerate(b))

    return b, s, loss, cdf_p


@pytest.mark.parametrize("k,q,s", [(2, 1e-3, 0.5), (5, 1e-3, 0.25), (6, 0.01, 1.0)])
def test_loss_quartiles_and_sd_against_mpmath(k, q, s):
    """P-quartiles of the loss (L increasing: L at the output's quartile, mpmath root) and its
    standard deviation under P (mpmath quadrature over each component)."""
    pair = _pair(k, q, s)
    got_q = pair.loss_quantiles(np.array([0.25, 0.75]))
    with mp.workdps(20):
        b, sm, loss, cdf_p = _mp_parts(pair)
        for p, g in zip((0.25, 0.75), got_q, strict=True):
            x = mp.findroot(lambda t, p=p: cdf_p(t) - p, 0.0)
            assert float(loss(x)) == pytest.approx(float(g), rel=1e-9, abs=1e-15)
        m1 = m2 = mp.mpf(0)
        for j, bj in enumerate(b):
            m1 += bj * mp.quad(lambda z, j=j: mp.npdf(z) * loss(z + j * sm), [-mp.inf, 0, mp.inf])
            m2 += bj * mp.quad(lambda z, j=j: mp.npdf(z) * loss(z + j * sm) ** 2,
                               [-mp.inf, 0, mp.inf])
        sd = float(mp.sqrt(m2 - m1 ** 2))
    assert pair.loss_sd() == pytest.approx(sd, rel=1e-6)


@pytest.mark.parametrize("k,q,s", [(2, 1e-3, 0.25), (8, 1e-3, 0.5), (16, 1e-3, 2.0)])
def test_swapped_range_from_narrow_starts_against_mpmath(k, q, s):
    """The add direction's loss range (found from the mixture's narrow ``range_starts``) is
    the wide search's: the lattice cell (2e4 / 32^6 wide) holding the exact crossings (mpmath:
    the swap's loss is -L, its P is N(0, 1) and its Q the mixture B, so P*(L* > hi) = tail at
    hi = -L(Phi^-1(tail)) and Q*(L* < lo) = tail at lo = -L(x), B(X > x) = tail)."""
    tail = 1e-16
    cell = 2e4 / 32.0**6
    lo, hi = SwappedPair(_pair(k, q, s)).loss_range(tail)
    with mp.workdps(40):
        b, sm, loss, cdf_p = _mp_parts(_pair(k, q, s))

        def sf_p(x):  # (the upper tail summed directly: the float weights' sum is not 1)
            return sum(bj * mp.ncdf(j * sm - x) for j, bj in enumerate(b))

        hi_true = -loss(-mp.sqrt(2) * mp.erfinv(1 - 2 * mp.mpf(tail)))
        a, c = mp.mpf(-80), mp.mpf(80)
        for _ in range(200):
            mid = (a + c) / 2
            a, c = (mid, c) if sf_p(mid) > tail else (a, mid)
        lo_true = -loss((a + c) / 2)
    assert 0.0 <= hi - float(hi_true) <= cell * (1 + 1e-6)
    assert 0.0 <= float(lo_true) - lo <= cell * (1 + 1e-6)


def test_tails_near_the_floor_against_mpmath():
    """P- and Q-tails of the loss at levels barely above its floor (Newton's value test) and
    in the bulk, against mpmath (relative 1e-9 or absolute 1e-15)."""
    pair = _pair(16, 1e-3, 0.25)
    ls = np.concatenate([pair.floor + np.logspace(-14, -2, 13), np.linspace(0.0, 2.0, 5)])
    tp = pair.tail(ls, "P", True, True)
    tq = pair.tail(ls, "Q", True, True)
    with mp.workdps(30):
        b, sm, loss, cdf_p = _mp_parts(pair)
        for li, gp, gq in zip(ls, tp, tq, strict=True):
            a, c = mp.mpf(-200), mp.mpf(80)
            for _ in range(160):
                mid = (a + c) / 2
                a, c = (a, mid) if loss(mid) > mp.mpf(float(li)) else (mid, c)
            x = (a + c) / 2
            sf = sum(bj * mp.ncdf(j * sm - x) for j, bj in enumerate(b))
            assert float(gp) == pytest.approx(float(sf), rel=1e-9, abs=1e-15)
            assert float(gq) == pytest.approx(float(mp.ncdf(-x)), rel=1e-9, abs=1e-15)


def test_group_step_is_the_quartile_rule():
    """At sigma 2 the step is the exact interquartile range (mpmath) over GROUP_IQR_BINS."""
    k, q, s, steps = 4, 1e-3, 0.5, 100
    pair = _pair(k, q, s)
    with mp.workdps(30):
        _, _, loss, cdf_p = _mp_parts(pair)
        iqr = float(loss(mp.findroot(lambda t: cdf_p(t) - 0.75, 0.0))
                    - loss(mp.findroot(lambda t: cdf_p(t) - 0.25, 0.0)))
    assert group_step(pair, steps) == pytest.approx(iqr / GROUP_IQR_BINS, rel=1e-8)


def test_group_step_keeps_the_range_floor_at_large_shifts():
    """Where the quartiles coincide (sigma 1/8, K 2: most mass at the loss's floor) the step
    is at least one step's loss range over GRID_POINTS, never the iqr rule's."""
    pair = _pair(2, 1e-3, 8.0)
    lo, hi = pair.loss_range(1e-16)
    h = group_step(pair, 100)
    assert h >= (hi - lo) / 10_000 * (1 - 1e-12)
    assert h <= 0.05 or h == pytest.approx((hi - lo) / 10_000)


@pytest.mark.parametrize("sigma,k,steps", [(2.0, 2, 100), (4.0, 16, 100), (1.0, 2, 10_000)])
def test_coarse_group_interval_at_most_1e3_and_contains_fine(sigma, k, steps):
    """The automatic grid (coarser at sigma 2 and 4, finer for long runs at sigma 1): the
    certified interval is at most 1e-3 relative, and it contains the interval of a 4x finer
    grid (both certified: they bracket the same true
    epsilon, so the coarse one must overlap the fine one; here it contains it)."""
    clear_shared()
    auto = GroupPLDAnalysis(pa.Gaussian(sigma), 1e-3, steps, k)
    up, lo = auto.epsilon(np.array([1e-5]))
    u, v = float(up.value[0]), float(lo.value[0])
    assert 0 < v <= u and (u - v) / u <= 1e-3
    fine = GroupPLDAnalysis(pa.Gaussian(sigma), 1e-3, steps, k, h=auto.grid_step() / 4)
    fu, fl = (float(b.value[0]) for b in fine.epsilon(np.array([1e-5])))
    assert v <= fl <= fu <= u
    assert (fu - fl) / fu < (u - v) / u
