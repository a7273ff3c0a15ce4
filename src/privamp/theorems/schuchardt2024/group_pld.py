"""PLD accountant for a group of K records under Poisson sampling with the Gaussian mechanism
(add/remove or zero-out of K records): Schuchardt et al. 2024 (arXiv:2403.04867), Thms 4.1/4.2,
carried from Rényi divergences to the hockey-stick divergence (every privacy profile).

One step, output f(batch) + N(0, sigma^2 I), f of l2 sensitivity Delta per record, s =
Delta / sigma; B_K = sum_{k=0}^K Binom(k | K, q) N(k s, 1), N = N(0, 1).  The claim: for
every gamma >= 0, every f and every pair x, x' differing in a group of K records,
H_gamma(M(x) || M(x')) <= H_gamma(B_K || N) when x' = x minus the group (remove), and
<= H_gamma(N || B_K) when x = x' minus the group (add).  So (B_K, N) and (N, B_K) are
dominating pairs (Zhu, Dong, Wang 2022, arXiv:2106.08567, Def. 7), they hold for every query
f, hence (their Thm 10) the T-fold products dominate the adaptively composed run.  Proof
(the full argument, with what it takes from the paper: docs/findings.md, "Group PLD"):

1. Coupling (their Thm 3.4 / G.1, which use only joint convexity; H_gamma is jointly convex,
   pointwise Jensen on (a - gamma b)_+): condition on the number i of group members in the
   batch and couple the K + 1 conditional batch laws by adding the members one at a time in
   a uniformly random order to a batch y_0 of the others.  Then H_gamma(M(x) || M(x')) <=
   E_Gamma H_gamma(sum_i w_i N(mu_i, I) || N(mu_0, I)), mu_i = f(y_i) / sigma,
   ||mu_i - mu_j|| <= |i - j| s (the same with the arguments swapped for add).
2. Both directions are integral_x n(x) phi(L(x)) dx with n the density of N(mu_0, I), L the
   likelihood ratio of the mixture, and phi convex: (t - gamma)_+ (remove) or
   (1 - gamma t)_+ (add).  Reflecting the means in one half-space through a hyperplane
   through mu_0 into the other does not decrease it (at a point and its mirror image the two
   values of L are spread apart with the same sum: convexity; the paper's Lemma H.3 with
   y^(1-alpha) replaced by any convex phi), keeps the radii ||mu_i - mu_0|| and does not
   increase any distance ||mu_i - mu_j||.  Reflecting through the bisector of mu_i and
   ||mu_i|| e puts mu_i on the ray e and leaves the means already on it in place: after at
   most K such steps all means lie on one ray, at radii r_i <= i s.
3. On a ray, L is nondecreasing in the coordinate t along it, so the best test sets are
   half-spaces {t > c} (remove) or {t < c} (add); raising any radius raises B(t > c) and
   lowers B(t < c), so the value at radii (0, s, ..., K s) is the largest.  That point is
   realised (all K members contribute the same vector of norm Delta), so the pair is tight
   and its optimistic PLD is a certified lower side.

The run's PLD is composed by the Poisson PLD accountant's machinery
(:class:`privamp.accountants.poisson.PLDAnalysis`, with these pairs as its step pairs).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

import numpy as np
from scipy import stats

from ...accountants.grid import cap_composed
from ...accountants.pld_run import check_slack
from ...accountants.poisson import PLDAnalysis, check_steps
from ...accountants.registry import BoundPair, run_accountant
from ...errors import NotApplicable
from ...mechanisms.gaussian import Gaussian
from ...numerics.arrays import shaped
from ...pairs.combinators import SwappedPair
from ...pairs.loss_pair import LossPair
from ...pairs.mixtures import GaussianShiftMixturePair
from ...pld.budget import TWO_LEVEL_MIN_T
from ...pld.compose import compose_two_level
from ...pld.discretise import discretise
from ...pld.grid import PLD
from ...results import Bound
from ...sampling.relations import AddRemove, ZeroOut
from ...sampling.schemes import Poisson
from ..poisson_groups import SRC_SUM, sum_statistic_delta, sum_statistic_epsilon

__all__ = [
    "GroupPLDAnalysis",
    "group_mixture_pairs",
    "group_pld_applies",
    "SRC_GROUP_PLD",
    "MAX_GROUP_SHIFT",
    "WITNESS_GROUP_SHIFT",
    "GRID_POINTS",
    "MAX_GROUP",
    "shared_group_pld",
    "clear_shared",
    "tight_lower_screen",
    "TIGHT_LOWER",
    "ADD_COARSE",
    "TWO_LEVEL_STEP",
    "GROUP_IQR_BINS",
    "GRID_POINTS_LONG",
    "LONG_RUN",
    "group_step",
    "FLOOR_STEP",
    "FLOOR_POINTS",
    "FLOOR_MAX_SHIFT",
]

SRC_GROUP_PLD = ("; group of {K}: dominating pair sum_k Binom(k | {K}, q) N(k Delta, sigma^2) vs "
                 "N(0, sigma^2) and its swap, for every privacy profile (Schuchardt et al. "
                 "2024, arXiv:2403.04867, Thms 4.1/4.2 carried to the hockey-stick divergence, "
                 "docs/findings.md); realised by K records with the same contribution")

#: the largest group handled (one mixture component per group size)
MAX_GROUP = 256

#: the automatic grid has at most this many points over one step's loss range
GRID_POINTS = 10_000

#: runs of at least LONG_RUN steps: at most GRID_POINTS_LONG points over one step's loss range
#: (issue 28: at sigma 1, q 1e-3, T 1e4 the GRID_POINTS floor set the step and the interval
#: was 0.9e-3..2.8e-3 relative, up to 5x the single record's; twice the points bring it to
#: 2e-4..7e-4 for 1.4-1.6x the time, still at most 1.5x the single record's)
GRID_POINTS_LONG = 20_000
LONG_RUN = 1000

#: the largest K Delta / sigma handled (the losses must fit the PLD grid's range; past 60
#: the grid is coarse and often cannot certify small deltas, then it declines at query time,
#: but where it answers it is far tighter than the Rényi conversions: sigma 0.125, K = 8,
#: q = 0.01, 1000 steps, delta 1e-5: 4155 instead of 4.3e6, in 0.2 s; issue 27)
MAX_GROUP_SHIFT = 100.0

#: the add direction's coarser grid (its pessimistic side only, unless it decides)
ADD_COARSE = 4

#: runs of at least TWO_LEVEL_MIN_T steps on a grid at most this fine compose in two levels
#: (a heuristic: every stage keeps its side's kind.  q 1e-3, T 1e4: the second level's
#: coarse grid, 8 h, moved the upper bound by 6.4e-7..7.4e-7 relative at sigma 2 and 4, K 2..16,
#: h 4.4e-5..9.3e-5, and cut the composition 2-3x; at the coarser steps of sigma <= 1,
#: h >= 2.7e-4, it moved it by 2e-5..8e-5 and gained nothing.  Issue 28, part 2: on the
#: coarser group grid (h 2.2e-5..3.2e-4 at sigma 2 and 4) a 1e-4 limit left K >= 8 one-level,
#: 3-4x slower at T 1e5..1e6 (sigma 4, K 16, T 1e6: 0.21 s against 0.05 s two-level); two
#: levels at every automatic step below 1e-2 moved the upper by +5e-6..+1.3e-5 relative,
#: sigma 1..4, T 1e4..1e6, K 16, and cost nothing at T 1e4)
TWO_LEVEL_STEP = 1e-2

#: up to this K Delta / sigma the group witness uses this accountant's lower side (above, its
#: own witness pair, which answers where the coarse grid declines)
WITNESS_GROUP_SHIFT = 60.0


def group_mixture_pairs(k: int, q: float, s: float) -> list[LossPair]:
    """One step's dominating pairs of a group of ``k`` under Poisson sampling at rate ``q``
    with the Gaussian at shift ``s`` = Delta / sigma: [remove: (B_k, N(0, 1)), add: swap],
    B_k = sum_j Binom(j | k, q) N(j s, 1) (module docstring).

    Args:
        k: group size >= 1.
        q: rate in (0, 1).
        s: shift > 0.

    Returns:
        [remove pair, add pair].

    Raises:
        NotApplicable: a binomial weight underflows (then the pair would not be the exact,
            realised one).
        ValueError: k, q or s out of range.
    """
    if not (isinstance(k, int | np.integer) and k >= 1):
        raise ValueError(f"group size k must be an integer >= 1, got {k}")
    if not 0.0 < q < 1.0:
        raise ValueError(f"rate q must be in (0, 1), got {q}")
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"shift s must be finite and > 0, got {s}")
    w = stats.binom.pmf(np.arange(k + 1), k, q)
    if not np.all(w > 1e-300):
        raise NotApplicable(f"group of {k} at rate {q}: binomial weights below 1e-300 "
                            "(the exact mixture is not representable)")
    mix = GaussianShiftMixturePair(w / w.sum(), s)
    return [mix, SwappedPair(mix)]


#: the group's automatic grid step: the interquartile range of one step's loss under P over
#: this many bins (the generic rule's 120 made the group's interval 40-70x narrower,
#: relatively, than the single record's at sigma 2 and 4: 2e-5..4e-5 against 1.3e-3..2e-3.
#: The interval's width is second order in h, so 4x coarser makes it 16x wider:
#: 3e-4..5.7e-4 relative at q 1e-3, sigma 2 and 4, T 1e2..1e4, K 2..16, still 2.5-4x
#: narrower than the single record's and below 1e-3 (issue 28).  A heuristic: the upper bound
#: is a dominating pair's PLD on any grid, the lower a realised pair's)
GROUP_IQR_BINS = 30.0

#: the automatic step is at most FLOOR_STEP times the loss's floor |log b_0| = K |log(1 - q)|
#: (where that costs at most FLOOR_POINTS points over one step's loss range).  Session 11
#: review: sigma 0.5, q 1e-4, K 4 (floor -4.0e-4, over half of P within 1e-4 of it) had
#: h = 1.7e-3 / 8.5e-4 (the GRID_POINTS floor): the whole bulk in one or two bins, and the
#: optimistic side's chained lowered chords dropped a vertex next to it to ~0 (one step:
#: delta(0.01) 3.5e-6 against mpmath's 6.1e-5), which the convex minorant carried over the
#: profile; epsilon(1e-5) intervals 3% (T 10), 22% (T 1000), 100% (T 1e4) relative.  At
#: h = FLOOR_STEP |floor|: 5.7e-6, 4.1e-5, 2.3e-4 for 1.7-2.5x the CPU (0.10-0.21 s); at
#: q 1e-5 (191k points at the floor's step) 74-100% -> 3e-5..9e-5 in 0.8-1.5 s.  h at or
#: just below |floor| still collapsed (h = |floor|: 100% at T 10; 0.98 |floor|: 20x wider
#: than 0.85); 0.5 and 0.7 were tight too but slower.  A heuristic: soundness never
#: depends on the step.  Only up to K Delta / sigma = FLOOR_MAX_SHIFT: at 16 (sigma 1/8,
#: K 2, q 1e-3, T 100) it took the interval from 1.3% to 0.4% for 5x the CPU (0.1 -> 0.5 s),
#: at 64 (sigma 1/8, K 8, q 0.01, T 1000) the lower bound fell from 3969 to 3885 (upper
#: 4156, 4152; not understood), so large shifts keep the range-floor step
FLOOR_STEP = 0.85
FLOOR_POINTS = 250_000
FLOOR_MAX_SHIFT = 12.0


def group_step(pair: GaussianShiftMixturePair, steps: int, points: float = 1.5e6) -> float:
    """The automatic grid step of the group PLD (a heuristic: soundness never depends on it).

    The generic rule of :func:`privamp.accountants.grid.grid_plan` for a pair without a
    dedicated rule, with the loss's exact quartiles and its quadrature standard deviation
    (:meth:`GaussianShiftMixturePair.loss_quantiles`, ``loss_sd``: the generic rule's
    4001-point tabulation of the mixture's tail took a third of a group query at sigma 4),
    and :data:`GROUP_IQR_BINS` bins per interquartile range instead of 120: h = iqr /
    GROUP_IQR_BINS (or sd / 120 where the standard deviation is more than ten times the
    interquartile range), at least the composed window (20 sqrt(T) sd + one step's range) over
    ``points``, at most 0.05 (unless the window asks for more), and at least one step's loss
    range over :data:`GRID_POINTS` (:data:`GRID_POINTS_LONG` from :data:`LONG_RUN` steps;
    short runs at small rates: the step then follows the
    tiny interquartile range of a rare loss, 150k points per direction at K = 8,
    q = 1e-3, T = 100, for an interval 1e-6 wide; this keeps it ~1e-4 wide in a tenth of
    the time); finally at most :data:`FLOOR_STEP` times the loss's floor |log b_0| where
    that takes at most :data:`FLOOR_POINTS` points over one step's range and K s <=
    :data:`FLOOR_MAX_SHIFT` (a coarser grid
    puts P's bulk, just above the floor, in one or two bins and the optimistic side
    collapses).

    Args:
        pair: the remove direction's pair (B_K, N(0, 1)).
        steps: the run's length T >= 1.
        points: the composed window's point budget.

    Returns:
        The grid step h > 0.
    """
    lo_d, hi_d = pair.loss_range(min(1e-16, 1e-13 / steps))  # the range discretise() uses
    span = hi_d - lo_d
    sd = pair.loss_sd()
    q1, q3 = (float(v) for v in pair.loss_quantiles(np.array([0.25, 0.75])))
    iqr = q3 - q1
    # (where the quartiles nearly coincide, most of P's mass sits at the loss's floor, large
    # shifts: there the standard deviation over the generic 120 bins, as before)
    fine = iqr / GROUP_IQR_BINS if iqr > 0.1 * sd else max(sd, 1e-9) / 120.0
    width = 20.0 * math.sqrt(steps) * sd + span
    h = cap_composed(min(max(fine, width / points), 0.05), width)
    h = max(h, span / (GRID_POINTS_LONG if steps >= LONG_RUN else GRID_POINTS))
    floor_h = FLOOR_STEP * abs(pair.floor)  # (:data:`FLOOR_STEP`)
    if (h > floor_h > 0 and span <= FLOOR_POINTS * floor_h
            and pair.j[-1] * pair.s <= FLOOR_MAX_SHIFT):
        h = floor_h
    return float(h)


def group_pld_applies(run) -> bool:
    """Poisson (0 < q < 1) + Gaussian + add/remove or zero-out of a group of K >= 2, with
    K <= :data:`MAX_GROUP`, K Delta / sigma <= :data:`MAX_GROUP_SHIFT` and every weight
    Binom(j | K, q) above 1e-300.

    Args:
        run: a Training.

    Returns:
        Whether the accountant applies.
    """
    mech, rel = run.mechanism, run.relation
    if not (isinstance(run.scheme, Poisson) and 0.0 < run.scheme.rate < 1.0
            and isinstance(mech, Gaussian) and isinstance(rel, (AddRemove, ZeroOut))
            and rel.group > 1):
        return False
    s, k, q = mech.shift(1), rel.group, run.scheme.rate
    if not (math.isfinite(s) and 0 < s and k * s <= MAX_GROUP_SHIFT and k <= MAX_GROUP):
        return False
    # every binomial weight representable (the smallest is at j = 0 or j = K)
    return bool(k * min(math.log(q), math.log1p(-q)) > math.log(1e-300) + 1.0)


class GroupPLDAnalysis(PLDAnalysis):
    """The Poisson PLD analysis with the group mixture pairs of :func:`group_mixture_pairs`
    as its step pairs: two-sided (pessimistic: dominating; optimistic: realised), with the
    ``pld``, ``grid_step``, ``renyi_floor`` and ``curve`` capabilities of its base."""

    def __init__(self, mechanism: Gaussian, rate: float, steps: int, group: int,
                 h: float | None = None) -> None:
        pairs = group_mixture_pairs(int(group), float(rate), mechanism.shift(1))
        #: the automatic grid: the add direction starts pessimistic-only on a coarser grid
        self.auto_grid = h is None
        if h is None:
            h = group_step(cast(GaussianShiftMixturePair, pairs[0]), int(steps))
        super().__init__(mechanism, rate, steps, h)
        self.group = int(group)
        self._group_pairs = pairs
        self._sum_test = (self.group, self.rate, mechanism.shift(1))

    def _step_plds(self) -> list[tuple[PLD, PLD | None, tuple[bool, bool]]]:
        """One step's PLDs per direction (the base's, with an explicit step h).  On the
        automatic grid the add direction (N, B_K) gets its pessimistic side only, on a grid
        ``ADD_COARSE`` times coarser, and is composed again on h, both sides, if its upper
        bound ever decides the run's (:meth:`_refine_if_deciding`), as the single record's
        secondary direction (issue 28: at the deltas measured its profile lies below the
        remove direction's, so its optimistic side and its fine grid cost time and did not
        change the answer; at epsilon 0 both give the total variation distance and the
        coarse side decides, so it is refined there.  The coarse pessimistic side is still a
        dominating pair's, and the zero optimistic side claims no lower bound.  Epsilon
        curves keep it coarse at every checkpoint: sound, looser only where it decides).
        Long runs on a fine grid (T >= ``TWO_LEVEL_MIN_T``, h <= :data:`TWO_LEVEL_STEP`)
        compose in two levels
        (:func:`privamp.pld.compose.compose_two_level`: every stage keeps its side's kind)."""
        if self._singles is not None or not self.auto_grid:
            return super()._step_plds()
        # (the base's hook since session 11: its run PLD, curve and queries read the steps
        # through _step_plds; overriding _single_steps alone left this grid unused)
        self._pairs = self.step_pairs()
        self._tail = min(1e-16, 1e-13 / self.steps)
        self._rho = min(1e-6, max(1e-10, 1e-4 / self.steps))
        h = cast(float, self.h)
        two = self.steps >= TWO_LEVEL_MIN_T and h <= TWO_LEVEL_STEP
        p, o = discretise(self._pairs[0], h, self._tail, rho_max=self._rho)
        check_slack(p, self.steps)
        pa, _ = discretise(self._pairs[1], ADD_COARSE * h, self._tail, optimistic=False,
                           rho_max=self._rho)
        check_slack(pa, self.steps)
        self.grid = [h, ADD_COARSE * h]
        self._plans = [(h, 0.0, None), (ADD_COARSE * h, 0.0, None)]
        self._fine = set()
        self._partial = [1]
        self._singles = [(p, o, (two, two)), (pa, None, (two, True))]
        self._psteps = [h, ADD_COARSE * h]
        return self._singles

    def _refine_if_deciding(self, x: np.ndarray, which: str) -> None:
        """The coarse add direction composed again on h, both sides, if its upper bound
        exceeds the remove direction's at some query point (then the run is as before
        issue 28's shortcut)."""
        if not self.auto_grid:
            super()._refine_if_deciding(x, which)
            return
        pld = self._run_pld
        if 1 not in self._partial:
            return
        best = getattr(pld.directions[0][0], which)(x)
        if not np.any(getattr(pld.directions[1][0], which)(x) > best):
            return
        h = cast(float, self.h)
        p, o = discretise(self._pairs[1], h, self._tail, rho_max=self._rho)
        check_slack(p, self.steps)
        two = self._singles is not None and self._singles[0][2][0]
        pld.directions[1] = (compose_two_level(p, self.steps), compose_two_level(o, self.steps)
                             ) if two else (p.self_compose(self.steps),
                                            o.self_compose(self.steps))
        self.grid[1] = self._psteps[1] = h
        self._partial.remove(1)

    def composed(self) -> bool:
        """Whether the run's PLD has been composed (by a query or :meth:`pld`)."""
        return self._pld is not None

    def step_pairs(self) -> list[LossPair]:
        """[remove: (B_K, N(0, 1)), add: its swap] (module docstring)."""
        return list(self._group_pairs)

    def _labelled(self, pair: BoundPair) -> BoundPair:
        src = SRC_GROUP_PLD.format(K=self.group)
        up, lo = pair
        return (None if up is None else Bound(up.value, up.kind, up.source + src),
                None if lo is None else Bound(lo.value, lo.kind, lo.source + src))

    def _tails(self, which: str, x: np.ndarray, pair: BoundPair) -> BoundPair:
        """The lower side raised, where the PLD's is in its cut tails (delta < 1e-10, or a
        lower delta < 1e-12), by the threshold test on the sum of the outputs of the same
        realised pair (:func:`privamp.theorems.poisson_groups.sum_statistic_delta`)."""
        up, lo = pair
        if lo is None:
            return pair
        k, q, s = self._sum_test
        flat = np.ravel(np.asarray(x, dtype=float))
        out = np.array(lo.value, dtype=float).ravel()
        cap = None if up is None else np.broadcast_to(np.asarray(up.value, float), np.shape(
            x)).ravel()
        used = False
        for i, v in enumerate(flat):
            if which == "epsilon" and v < 1e-10:
                alt = sum_statistic_epsilon(float(v), k, self.steps, q, s)
            elif which == "delta" and out[i] < 1e-12:
                alt = sum_statistic_delta(float(v), k, self.steps, q, s)
            else:
                continue
            if cap is not None:
                alt = min(alt, float(cap[i]))
            if alt > out[i]:
                out[i], used = alt, True
        if not used:
            return pair
        return up, Bound(shaped(out, np.asarray(x)), "lower", lo.source + SRC_SUM)

    def _answer(self, which: str, x: np.ndarray) -> BoundPair:
        """The PLD's two sides with :meth:`_tails`; where the PLD declines (e.g. delta below
        its numerical allowance), the sum statistic's lower side alone, if it answers."""
        try:
            return self._labelled(self._tails(which, x, getattr(super(), which)(x)))
        except NotApplicable:
            zero = Bound(shaped(np.zeros(np.size(x)), np.asarray(x)), "lower",
                         "realised group pair")
            up, lo = self._tails(which, x, (None, zero))
            if lo is zero:
                raise
            return self._labelled((up, lo))

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._answer("epsilon", delta)

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._answer("delta", epsilon)


@run_accountant(
    "pld",
    applies=group_pld_applies,
    description="Poisson groups (Gaussian, add/remove or zero-out of K records): PLD of the "
    "tight mixture pair of Schuchardt et al. 2024 (Thm 4.2) for every privacy profile, "
    "two-sided",
    capabilities=("pld", "grid_step", "renyi_floor", "curve"),
)
def _build(run) -> GroupPLDAnalysis:
    return shared_group_pld(run)


def shared_group_pld(run) -> GroupPLDAnalysis:
    """The group PLD analysis of ``run``, shared (memoised on the run's parameters: the
    "group-witness" accountant answers with its lower side, so "best" composes once).

    Args:
        run: a Training :func:`group_pld_applies` accepts.

    Returns:
        The analysis.

    Raises:
        NotApplicable: the run is not one :func:`group_pld_applies` accepts, or too many
            steps.
    """
    if not group_pld_applies(run):
        raise NotApplicable("the group PLD accountant handles Poisson + Gaussian groups of "
                            f"2..{MAX_GROUP} records under add/remove or zero-out")
    check_steps(run.steps)
    key = _key(run)
    if key not in _SHARED:
        if len(_SHARED) >= 8:  # (the oldest goes: at most 8 memoised, as lru_cache(8))
            del _SHARED[next(iter(_SHARED))]
        _SHARED[key] = GroupPLDAnalysis(Gaussian(key[0], key[1]), key[2], key[3], key[4])
    return _SHARED[key]


_SHARED: dict[tuple, GroupPLDAnalysis] = {}


def _key(run) -> tuple[float, float, float, int, int]:
    m = run.mechanism
    return (float(m.sigma), float(m.sensitivity), float(run.scheme.rate), int(run.steps),
            int(run.relation.group))


def clear_shared() -> None:
    """Forget the memoised analyses of :func:`shared_group_pld` (benchmarks, memory)."""
    _SHARED.clear()


#: :func:`tight_lower_screen`: the shared PLD's interval counts as tight where its lower
#: bound is at least (1 - TIGHT_LOWER) times its upper bound
TIGHT_LOWER = 1e-2


def tight_lower_screen(run) -> Callable[[str, np.ndarray], Bound | None] | None:
    """For the lower-only accountants of a group run (the threshold test): a screen
    ``screen(which, x)`` returning the shared group PLD's lower bound at ``x`` where that
    analysis is already composed (by "best": no work is added) and its interval is tight at
    every point (lower >= (1 - :data:`TIGHT_LOWER`) upper), else None (then the accountant
    computes its own).  The bound returned is certified (the PLD's optimistic side: a
    realised pair, module docstring), so the screen never weakens soundness; a threshold
    test could raise it by at most TIGHT_LOWER relative (it is below the upper bound), and
    on the groups measured it stayed >= 20% below wherever the interval was this tight
    (issue 28: the threshold test cost 27-63 ms of a 0.1-0.2 s group query at q 1e-3).

    Args:
        run: a Training.

    Returns:
        The screen, or None where the group PLD accountant does not apply.
    """
    if not group_pld_applies(run) or run.steps > 10**9:
        return None
    key = _key(run)

    def screen(which: str, x: np.ndarray) -> Bound | None:
        an = _SHARED.get(key)
        if an is None or not an.composed():  # (the screen adds no composition)
            return None
        try:
            up, lo = getattr(an, which)(x)
        except NotApplicable:
            return None
        if up is None or lo is None:
            return None
        u, v = np.asarray(up.value, float), np.asarray(lo.value, float)
        if not np.all(np.isfinite(u)) or not np.all(v >= (1.0 - TIGHT_LOWER) * u):
            return None
        return lo

    return screen
