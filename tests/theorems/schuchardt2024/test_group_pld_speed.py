"""Issue 28's shortcuts in the group PLD accountant (theorems/schuchardt2024/group_pld.py) and
the mixture pair (pairs/mixtures.py): the add direction pessimistic-only on a coarser grid,
refined where it decides; the threshold test screened by a tight group PLD; the mixture's
preimage solver stopping each point at its first settled Newton iterate."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

import privamp as pa
from privamp.accountants.registry import applicable
from privamp.pairs.mixtures import GaussianShiftMixturePair
from privamp.theorems.schuchardt2024.group_pld import (
    ADD_COARSE,
    GroupPLDAnalysis,
    clear_shared,
)


def _mp_tv(k: int, q: float, s: float) -> float:
    """TV(B_k, N(0, 1)) = B_k(L > 0) - N(L > 0), B_k = sum_j Binom(j | k, q) N(j s, 1), by
    mpmath (L is increasing in the output: bisection for L(x) = 0)."""
    with mp.workdps(30):
        b = [mp.binomial(k, j) * mp.mpf(q) ** j * (1 - mp.mpf(q)) ** (k - j)
             for j in range(k + 1)]
        m = [j * mp.mpf(s) for j in range(k + 1)]

        def loss(x):
            return mp.log(sum(bj * mp.e ** (mj * x - mj * mj / 2)
                              for bj, mj in zip(b, m, strict=True)))

        lo, hi = mp.mpf(-50), mp.mpf(50)
        for _ in range(120):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if loss(mid) > 0 else (mid, hi)
        x = (lo + hi) / 2
        return float(sum(bj * mp.ncdf(mj - x) for bj, mj in zip(b, m, strict=True))
                     - mp.ncdf(-x))


def test_add_direction_refined_where_it_decides():
    """At epsilon 0 both directions give the total variation distance, so the coarse add
    direction's looser upper decides and is composed again on the fine grid: one step's
    interval brackets the exact TV (mpmath), and both directions end on one step."""
    k, q, sigma = 3, 0.05, 2.0
    an = GroupPLDAnalysis(pa.Gaussian(sigma), q, 1, k)
    up, lo = an.delta(np.array([0.0]))
    exact = _mp_tv(k, q, 1.0 / sigma)
    assert float(lo.value[0]) <= exact * (1 + 1e-9)
    assert exact <= float(up.value[0]) * (1 + 1e-9)
    assert float(up.value[0]) == pytest.approx(exact, rel=1e-3)
    assert an.grid[0] == an.grid[1]  # refined onto the remove direction's step


def test_coarse_add_direction_while_remove_decides():
    """At delta 1e-5 the remove direction decides: the add direction stays on its coarse
    grid, pessimistic only, and the upper bound is the full two-sided composition's on the
    same step (the old path, an explicit h) to float precision."""
    auto = GroupPLDAnalysis(pa.Gaussian(2.0), 1e-3, 100, 8)
    up, lo = auto.epsilon(np.array([1e-5]))
    assert auto.grid[1] == pytest.approx(ADD_COARSE * auto.grid[0])
    full = GroupPLDAnalysis(pa.Gaussian(2.0), 1e-3, 100, 8, h=auto.grid[0])
    fup, flo = full.epsilon(np.array([1e-5]))
    assert float(up.value[0]) == pytest.approx(float(fup.value[0]), rel=1e-12)
    assert float(lo.value[0]) == pytest.approx(float(flo.value[0]), rel=1e-12)


def test_mixture_preimage_against_mpmath():
    """The preimages x(l) of the mixture's loss, near its floor (where the loss is flat and
    rounding noise used to stall Newton) and above: mpmath's loss at x is l to within the
    float evaluation's noise (relative 1e-13 of the loss's size, absolute 1e-15)."""
    k, q, s = 8, 1e-3, 0.5
    w = stats.binom.pmf(np.arange(k + 1), k, q)
    pair = GaussianShiftMixturePair(w / w.sum(), s)
    ls = np.concatenate([pair.floor + np.logspace(-12, -3, 40), np.linspace(0.0, 30.0, 5000)])
    x = pair._preimage(ls)  # (the solver under test)
    with mp.workdps(40):
        b = [mp.mpf(float(v)) for v in pair.b]
        for li, xi in [*zip(ls, x, strict=True)][::97] + [*zip(ls[:40], x[:40], strict=True)]:
            got = mp.log(sum(bj * mp.e ** (j * s * mp.mpf(xi) - (j * s) ** 2 / 2)
                             for j, bj in enumerate(b)))
            assert abs(float(got) - li) <= 1e-13 * max(1.0, abs(li), abs(xi)) + 1e-15


def test_threshold_test_screened_by_a_tight_group_pld():
    """The threshold test computes its own lower where the group PLD is not composed, and
    answers with the PLD's (certified) lower where the composed interval is tight."""
    clear_shared()
    run = pa.Training(pa.Gaussian(2.0), pa.Poisson(1e-3), steps=100,
                      relation=pa.AddRemove(group=8))
    (acc,) = [a for a in applicable(run) if a.name == "threshold-test"]
    own = acc.build(run).epsilon(np.array([1e-5]))[1]
    assert "threshold" in own.source
    g = run.epsilon(1e-5)  # "best" composes the shared group PLD
    screened = acc.build(run).epsilon(np.array([1e-5]))[1]
    assert "threshold" not in screened.source
    assert float(screened.value[0]) == pytest.approx(float(g.lower.value), rel=1e-12)
    assert float(own.value[0]) < float(g.lower.value) <= float(g.upper.value)
    clear_shared()
