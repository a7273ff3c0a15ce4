"""The PLD accountant for Poisson subsampling (add/remove, zero-out): the remove and add
dominating pairs of a Poisson-subsampled mechanism (Zhu, Dong, Wang 2022, arXiv:2106.08567)
and the run accountant "pld" for Poisson runs (grid: :mod:`.grid`; checkpoints of an
epsilon curve: :mod:`.pld_run`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

import numpy as np

from .._validation import check_positive
from ..errors import NotApplicable
from ..mechanisms.base import Mechanism
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.laplace import Laplace
from ..mechanisms.randomized_response import RandomizedResponse
from ..numerics.arrays import shaped
from ..numerics.fft import shared_spectra
from ..pairs.combinators import MixturePair, SwappedPair
from ..pairs.loss_pair import LossPair
from ..pld.budget import TWO_LEVEL_FACTOR, TWO_LEVEL_MIN_T
from ..pld.compose import compose_two_level, heavy_tailed, optimistic_factor
from ..pld.discretise import discretise
from ..pld.grid import OPTIMISTIC_SOURCE, PESSIMISTIC_SOURCE, PLD, PowerMethodUnavailable, zero_pld
from ..pld.moments import renyi_floor
from ..pld.two_sided import TwoSidedPLD
from ..results import Bound
from ..sampling.relations import AddRemove, ZeroOut
from ..sampling.schemes import Poisson
from .grid import (
    MAX_COMPOSED_POINTS,
    ONE_LEVEL_LOST,
    SPARSE_TAIL,
    aligned_step,
    grid_plan,
    laplace_direction,
    lead_direction,
    one_level_optimistic_step,
    secondary_direction,
    tail_sparsity,
)
from .laplace_poisson import laplace_compose, laplace_single_step
from .pld_run import (
    CURVE_OPTIMISTIC,
    check_finite_upper,
    check_slack,
    checkpoint_plds,
    curve_points,
    gap_blocks,
    settle_partial,
    sparse_checkpoints,
)
from .poisson_bounds import (
    hellinger_tv_bound,
    product_renyi_floor,
    run_tv_bound,
    swapped_pessimistic,
)
from .poisson_phase import fixed_step_pld
from .poisson_policy import (
    COARSE_SLACK_SHARE,
    FINE_SECONDARY_RATE,
    FINE_SECONDARY_SHIFT,
    SHORT_RUN,
    SINGLE_FLOOR_POINTS,
    SMALL_WINDOW,
    check_steps,
    near_tie,
)
from .poisson_precise import LaplacePrecise
from .registry import BoundPair, RunAnalysis, run_accountant

__all__ = [
    "poisson_pairs",
    "hellinger_tv_bound",
    "PLDAnalysis",
    "pld_analysis",
]


def poisson_pairs(mechanism: Mechanism, rate: float, distance: int = 1) -> list[LossPair]:
    """Dominating pairs of one Poisson-subsampled step under add/remove:
    [remove: (q P + (1-q) Q, Q), add: its swap] (Zhu, Dong, Wang 2022, "Optimal accounting
    of differential privacy via characteristic function", AISTATS, dominating pairs of
    Poisson subsampling; rate 1: the base pair and its swap).  ``distance`` is the group
    distance of the base mechanism's pair."""
    rate = float(rate)
    if not 0.0 < rate <= 1.0:
        raise ValueError(f"rate must be in (0, 1], got {rate}")
    base = mechanism.pair(distance)
    if rate == 1.0:
        return [base, SwappedPair(base)]
    mix = MixturePair(base, rate)
    return [mix, SwappedPair(mix)]


class PLDAnalysis(LaplacePrecise, RunAnalysis):
    """PLD analysis of a Poisson-subsampled run (add/remove or zero-out, group 1).

    ``h`` overrides the automatic grid step (:func:`auto_grid`; for randomized response the
    step of each direction is adjusted so that its largest loss lies on the grid, which
    removes the first-order rounding of the top atom in the optimistic bound).  The
    composition is computed on the first query and cached."""

    def __init__(self, mechanism: Mechanism, rate: float, steps: int, h: float | None = None):
        self.mechanism, self.rate, self.steps = mechanism, float(rate), int(steps)
        self.h = None if h is None else check_positive("h", h)
        self.grid: list[float] = []
        self._pld: TwoSidedPLD | None = None
        self._singles: list[tuple[PLD, PLD | None, tuple[bool, bool]]] | None = None
        self._swapped: set[int] = set()  # directions whose run PLD is the lead's swapped
        self._lazy: set[int] = set()  # ... whose one-step PLD is not discretised yet
        self._below: set[int] = set()  # ... shown below the others at the query's points

    def _single_steps(self) -> list[tuple[PLD, PLD | None, tuple[bool, bool]]]:
        """:meth:`_step_plds` with every direction's own one-step PLDs (a swapped direction's,
        :meth:`_swap_applies`, discretised here on first need)."""
        return [self._own_step(i) for i in range(len(self._step_plds()))]

    def _own_step(self, i: int) -> tuple[PLD, PLD | None, tuple[bool, bool]]:
        singles = self._step_plds()
        if i in self._lazy:
            pair, two = self._pairs[i], (False, False)
            if laplace_direction(pair):  # (on its own grid, self.grid[i])
                p = laplace_single_step(pair, self.grid[i], self._tail, self._rho)[0]
                check_slack(p, self.steps)
            else:
                p, _, two = self._lead_recipe(pair, *self._plans[0], optimistic=False)
            singles[i] = (p, None, two)
            self._psteps[i] = p.h
            self._lazy.discard(i)
        return singles[i]

    def _step_plds(self) -> list[tuple[PLD, PLD | None, tuple[bool, bool]]]:
        """Per direction: (pessimistic, optimistic or None, two-level per side) PLDs of one
        step, on the grids :func:`grid_plan` picks for this run's length; None: the
        direction's pessimistic side only (a coarse secondary direction); two-level: composed
        by :func:`compose_two_level` (else plain self-composition).  Where one step's range
        sets the window (tiny rates), the pessimistic side is composed in one level on its
        own grid (:func:`one_level_step`).  At rates up to :data:`FINE_SECONDARY_RATE`, and
        in every run whose lead direction is composed in one level where the secondary
        direction is its swap (:meth:`_swap_applies`), the secondary direction is on the lead
        direction's plan from the start; a swapped one (and Laplace's add direction) gets its
        own step only when it decides (:meth:`_own_step`)."""
        if self._singles is None:
            self._pairs = self.step_pairs()
            self._tail = min(1e-16, 1e-13 / self.steps)
            self._rho = min(1e-6, max(1e-10, 1e-4 / self.steps))
            self._partial = []
            self._plans: list[tuple[float, float, float | None]] = []
            singles: list[tuple[PLD, PLD | None, tuple[bool, bool]]] = []
            p: PLD | None
            o: PLD | None
            self._fine: set[int] = set()  # pessimistic-only directions on the lead's plan
            for i, pair in enumerate(self._pairs):
                if (self.h is None and secondary_direction(pair) and self._plans
                        and lead_direction(self._pairs[0])
                        and isinstance(self.mechanism, Gaussian)
                        and ((self.rate <= FINE_SECONDARY_RATE
                              and self.mechanism.shift(1) <= FINE_SECONDARY_SHIFT)
                             or (self._swap_applies(i) and not singles[0][2][0]))):
                    # (or in any one-level run, swapped: no composition of its own unless it
                    # decides, :meth:`_swap_applies`)
                    # tiny rates: on the lead direction's plan at once (FINE_SECONDARY_RATE)
                    plan = self._plans[0]
                    if self._swap_applies(i) and (not singles[0][2][0]
                                                  or self.steps < TWO_LEVEL_MIN_T):
                        # its own step only on need (_single_steps):
                        # here the lead's stands in (same plan), read by _run_pld for its h
                        self._swapped.add(i)
                        self._lazy.add(i)
                        p, two = singles[0][0], singles[0][2]
                    else:
                        p, _, two = self._lead_recipe(pair, *plan, optimistic=False)
                    self.grid.append(plan[0])
                    self._plans.append(plan)
                    self._partial.append(i)
                    self._fine.add(i)
                    singles.append((p, None, two))
                    continue
                h, width, one = ((self.h, 0.0, None) if self.h is not None
                                 else grid_plan(pair, self.steps, short_run=True))
                if isinstance(self.mechanism, (RandomizedResponse, Laplace)):
                    # (Laplace: at most halved, see laplace_step)
                    h = aligned_step(pair, h, max(width / MAX_COMPOSED_POINTS,
                                                  h / 2 if laplace_direction(pair) else 0.0))
                self.grid.append(h)
                self._plans.append((h, width, one))
                if self.h is None and secondary_direction(pair):
                    # pessimistic side only: a lower bound from the other direction is
                    # valid, and this one is refined if it ever decides the upper bound
                    p, _ = discretise(pair, h if one is None else one, self._tail,
                                      optimistic=False, rho_max=self._rho,
                                      sparse_tail=1 if one is None else SPARSE_TAIL)
                    self._partial.append(i)
                    singles.append((p, None, (self._two_level(h, width, one), True)))
                elif self.h is None and lead_direction(pair):
                    singles.append(self._lead_recipe(pair, h, width, one))
                elif self.h is None and laplace_direction(pair) and self._swap_applies(i):
                    self._swapped.add(i)  # (the lead's run swapped; its own step if it decides)
                    self._lazy.add(i)
                    singles.append((singles[0][0], None, (False, False)))
                elif self.h is None and laplace_direction(pair):
                    p, o = laplace_single_step(pair, h, self._tail, self._rho)
                    check_slack(p, self.steps)
                    singles.append((p, o, (False, False)))
                else:
                    p, o = discretise(pair, h, self._tail, rho_max=self._rho)
                    check_slack(p, self.steps)
                    singles.append((p, o, (False, False)))
            self._singles = singles
            self._psteps = [p.h for p, _, _ in singles]
        return self._singles

    @property
    def _run_pld(self) -> TwoSidedPLD:
        """The run's PLD on the analysis's own grids (composed on first use, cached)."""
        if self._pld is None:
            self._pld = TwoSidedPLD([self._direction(i) for i in range(len(self._step_plds()))])
        return self._pld

    def _direction(self, i: int) -> tuple[PLD, PLD]:
        """Direction ``i``'s run PLD (pessimistic, optimistic), composed on first use, cached
        (per direction: the Rényi screening needs only the full ones, session 12)."""
        done = self.__dict__.setdefault("_dirs", {})
        if i not in done:
            swap = swapped_pessimistic(self._direction(0)[0]) if i in self._swapped else None
            if swap is not None:  # the lead's composed run, swapped (one composition less)
                done[i] = (swap, zero_pld(swap.h))
                return done[i]
            self._swapped.discard(i)
            if self._coarse_would_decide(i):  # on the lead's plan before composing
                plan = self._plans[0]
                p, _, two = self._lead_recipe(self._pairs[i], *plan, optimistic=False)
                self._step_plds()[i] = (p, None, two)
                self._plans[i], self.grid[i], self._psteps[i] = plan, plan[0], p.h
                self._fine.add(i)
            p, o, two_level = self._own_step(i)
            sides = [compose_two_level(x, self.steps) if two else self._one_level(
                i, x, None if x is p or two_level[0] else ONE_LEVEL_LOST / self.steps)
                     for x, two in zip((p, o), two_level, strict=True) if x is not None]
            done[i] = (sides[0], zero_pld(p.h) if o is None else sides[1])
        return done[i]

    def step_pairs(self) -> list[LossPair]:
        """One step's dominating pairs [remove, add] (a subclass may supply others)."""
        return poisson_pairs(self.mechanism, self.rate)

    # -- capabilities (privamp.accountants.registry) -----------------------------------------
    def pld(self, h: float | None = None) -> TwoSidedPLD:
        """The run's two-sided PLD ([remove, add]); ``h=None``: the one its queries use (on
        its own grids; the add direction of small-rate Gaussian may have only its
        pessimistic side, the optimistic one zero), else on step ``h``, the add direction of
        small-rate Gaussian on ``SECONDARY_COST h`` (its profile lies far below; an integer
        multiple, so a composition can bring other phases to it by :meth:`PLD.coarsen`).
        Both sides of every direction are composed (Zhu, Dong, Wang 2022, arXiv:2106.08567:
        the remove and add pairs of Poisson subsampling; the optimistic side is the pair of
        one realised pair of neighbours, so it composes with other phases' lower sides).

        Raises:
            NotApplicable: rate 0 (no privacy loss: nothing to compose), or more steps than
                the grid's numerical allowances permit.
            ValueError: ``h`` not positive.
        """
        if self.rate == 0.0:
            raise NotApplicable("rate 0: the run has no privacy loss (compose skips it)")
        if h is None:
            return self._run_pld
        h = check_positive("h", h)
        memo = self.__dict__.setdefault("_pld_at", {})
        if h not in memo:
            memo[h] = fixed_step_pld(self.step_pairs(), self.steps, h)
        return memo[h]

    def grid_step(self) -> float:
        """The automatic step of the leading (remove) direction for this run
        (:func:`~privamp.accountants.grid.auto_grid`).

        Raises:
            NotApplicable: rate 0.
        """
        if self.rate == 0.0:
            raise NotApplicable("rate 0: the run has no privacy loss")
        if self.h is not None:
            return self.h
        return grid_plan(self.step_pairs()[0], self.steps)[0]

    def curve(self, steps: np.ndarray, which: str, x: np.ndarray,
              hook: Callable[[int, TwoSidedPLD, object], object] | None = None
              ) -> tuple[list[BoundPair | NotApplicable], list[object]]:
        """Bounds after each number of steps in ``steps`` (increasing, each <= the run's),
        reusing the compositions: the PLD after steps[i] is the one after steps[i - 1]
        composed with the gap's block (each distinct gap composed once, on the fine grid,
        then coarsened like :func:`compose_two_level` when the run is long; the optimistic
        side ``CURVE_OPTIMISTIC`` times more; all further by :func:`curve_coarsening`); each
        keeps its side's kind, so each checkpoint's interval is certified as for a run of that
        length.  A deciding pessimistic-only direction is refined on the lead's plan (side 2).
        A checkpoint the grid cannot answer is returned as its NotApplicable; ``hook(t, pld,
        bounds)`` is called at each checkpoint (its results are returned alongside)."""
        x = np.asarray(x, dtype=float)
        if self.rate == 0.0:
            return [self._query(x, which) for _ in steps], [False for _ in steps]
        singles = self._single_steps()
        coarse = self.steps >= TWO_LEVEL_MIN_T
        blocks: dict[tuple[int, int], dict[int, PLD]] = {}
        ts = np.asarray(steps, dtype=int)
        gaps = np.diff(np.concatenate(([0], ts))).tolist()
        full = [j for j, s in enumerate(singles) if s[1] is not None]  # side 2 (on demand):
        fine: dict[int, tuple | None] = {  # a pessimistic-only direction on the lead's plan
            j: None for j, s in enumerate(singles) if s[1] is None and full and j not in self._fine}

        def block(i: int, side: int, gap: int) -> PLD:
            if side == 2 and fine[i] is None:  # (the lead: as _refine_if_deciding)
                lead = self._plans[min(full, key=lambda j: self._psteps[j])]
                fine[i] = self._lead_recipe(self._pairs[i], *lead, optimistic=False)
            s = cast(tuple, fine[i]) if side == 2 else singles[i]
            one, two_level = cast(PLD, s[side % 2]), s[2][side % 2]
            b = compose_two_level(one, gap) if two_level else one.self_compose(gap)
            if two_level and coarse:  # (compose_two_level coarsens long gaps itself)
                b = b.coarsen(round(one.h * TWO_LEVEL_FACTOR * (
                    CURVE_OPTIMISTIC if side == 1 else 1) / b.h))
            elif side == 1 and not two_level:  # one level: on the pessimistic side's grid
                # at most (else sigma 0.1, q 1e-6, T 7253: 8M-point windows, 73 s)
                b = b.coarsen(max(1, int(singles[i][0].h / b.h)))
            elif coarse and s[1] is None:  # pessimistic-only, one level: others' coarse grid
                b = b.coarsen(max(1, int(min(p.h for p, _, _ in singles) * TWO_LEVEL_FACTOR
                                         / b.h)))
            return b

        def stream(i: int, side: int, want: list[bool] | None = None):
            if (i, side) not in blocks:  # the gaps' blocks, on one grid
                blocks[i, side] = gap_blocks(lambda g: block(i, side, g), gaps, ts)
            return checkpoint_plds(blocks[i, side], gaps, want)

        # a pessimistic-only direction (optimistic side 0) matters where its upper bound
        # exceeds the others': evaluated at a few checkpoints, then settled (settle_partial)
        sparse = sparse_checkpoints(ts) if which == "epsilon" else None
        with shared_spectra():  # the gaps' blocks of one direction share its transform
            streams = [(stream(i, 0, sparse if o is None else None),
                        None if o is None else stream(i, 1))
                       for i, (_, o, _) in enumerate(singles)]
        out, extra, partial = curve_points(ts, streams, which, x, hook, sparse, fine)
        if sparse is not None:
            settle_partial(out, partial, sparse, lambda i, want, f: stream(i, 2 * f, want), x,
                           fine)
        return out, extra

    def _refine_if_deciding(self, x: np.ndarray, which: str) -> None:
        """Compose a coarse, pessimistic-only direction again if its upper bound exceeds
        every full direction's at some query point: its pessimistic side first, on the
        finest full direction's pessimistic grid and in that direction's regime (one level
        over a sparse tail at tiny rates, else two levels: :meth:`_lead_recipe`); its
        optimistic side too only if it still decides, by more than a near tie
        (:func:`~.poisson_policy.near_tie`; else the other directions' lower bounds stand,
        and they are valid for the run).  Before: the finest grid in use
        (the optimistic one) in plain self-composition, 4.4 s at q = 1e-6, sigma 0.5,
        T = 1e7 (now about a tenth of that)."""
        pld = self._run_pld
        full = [i for i in range(len(pld.directions)) if i not in self._partial]
        if not self._partial or not full:
            return
        best, low = (np.max([getattr(pld.directions[i][k], which)(x) for i in full], axis=0)
                     for k in (0, 1))
        lead = min(full, key=lambda i: self._psteps[i])
        for i in list(self._partial):
            if i in self._below or not np.any(getattr(pld.directions[i][0], which)(x) > best):
                continue
            plan = self._plans[lead]
            if i in self._fine:  # already on the lead's plan (FINE_SECONDARY_RATE)
                p = pld.directions[i][0]
            else:
                p, _, two = self._lead_recipe(self._pairs[i], *plan, optimistic=False)
                p = compose_two_level(p, self.steps) if two[0] else self._one_level(lead, p)
            o = zero_pld(p.h)
            up = getattr(p, which)(x)
            if np.any(up > best) and not near_tie(up, best, low):  # its lower side too
                _, o1, two = self._lead_recipe(self._pairs[i], *plan)
                assert o1 is not None
                self.__dict__.setdefault("_refined_optimistic", []).append(o1)
                o = (compose_two_level(o1, self.steps) if two[1] else self._one_level(
                    lead, o1, ONE_LEVEL_LOST / self.steps))
            pld.directions[i] = (p, o)
            self.grid[i] = self.grid[lead]
            self._psteps[i] = p.h
            self._partial.remove(i)

    def _coarse_would_decide(self, i: int) -> bool:
        """Whether coarse pessimistic-only direction ``i`` would decide the upper bound of the
        epsilon query under way (``_delta_hint``): its run's float allowance, T times one
        step's slack, is >= :data:`COARSE_SLACK_SHARE` of delta (a heuristic; checked by
        :meth:`_refine_if_deciding`); not with a heavy-tailed lead (sigma 0.3, q 1e-5, T 1e7:
        1.0 -> 1.7 s, 95 -> 122 MiB).  Issue 28, session 12."""
        hint = self.__dict__.get("_delta_hint")
        return (hint is not None and i in self._partial and i not in self._fine
                and lead_direction(self._pairs[0]) and secondary_direction(self._pairs[i])
                and self.steps * self._step_plds()[i][0].slack >= COARSE_SLACK_SHARE * hint
                and not heavy_tailed(self._step_plds()[0][0].masses))

    def _lead_recipe(self, pair: LossPair, h: float, width: float, one: float | None,
                     optimistic: bool = True) -> tuple[PLD, PLD | None, tuple[bool, bool]]:
        """One step's (pessimistic, optimistic or None, two-level per side) PLDs of a
        small-rate Gaussian direction on the lead direction's plan ``(h, width, one)``
        (:func:`grid_plan`): two levels on h, or (``one`` set: the one-level regime of tiny
        rates) the pessimistic side on step ``one`` over a sparse tail and the optimistic
        side on :func:`one_level_optimistic_step`."""
        sparse = 1 if one is None else SPARSE_TAIL
        w = cast(MixturePair, pair.base if isinstance(pair, SwappedPair) else pair).w
        p: PLD | None = None
        o = None
        if optimistic:
            tail = self._tail if one is None else max(self._tail, ONE_LEVEL_LOST / self.steps)
            # (short runs: the halved step of one_level_optimistic_step buys little -- its
            # first-order error is paid T times -- and quadruples the squarings' transforms)
            step = (h if one is None or self.steps < SHORT_RUN
                    else one_level_optimistic_step(pair, h))
            k = optimistic_factor(w)
            if k > 1 and one is None:
                # the optimistic side discretised on its coarse grid directly (issue 28: was
                # discretised on h, then coarsened; q 256/60000, sigma 1.1, T 14063: lower
                # 2.381397 -> 2.381401, q 0.01, sigma 0.8, T 1e6: 5-17% less CPU)
                p, _ = discretise(pair, step, tail, optimistic=False, rho_max=self._rho)
                _, o = discretise(pair, k * step, tail, rho_max=self._rho, pessimistic=False)
            else:
                p, o = discretise(pair, step, tail, rho_max=self._rho,
                                  pessimistic=one is None, sparse_tail=sparse)
                assert o is not None  # discretise returns the optimistic side when asked
                o = o.coarsen(k)
        if one is not None or not optimistic:
            p, _ = discretise(pair, one or h, self._tail, optimistic=False, rho_max=self._rho,
                              sparse_tail=tail_sparsity(pair, one, h, self.steps, self._tail))
        assert p is not None
        two = self._two_level(h, width, one)
        return p, o, (two, two)

    def _swap_applies(self, i: int) -> bool:
        """Whether direction ``i`` (on the lead's plan, :data:`FINE_SECONDARY_RATE`) is the
        lead's pair swapped (the add direction of :func:`poisson_pairs`): then its run PLD is
        first the lead's composed one swapped (:func:`~.poisson_bounds.swapped_pessimistic`),
        composed on its own only if it decides the upper bound (:meth:`_unswap_if_deciding`).
        Issue 28: its composition was a third of a tiny-rate run's CPU time (q 1e-5, sigma 4,
        T 1e4), and the swapped one, a few 1e-8 looser, lies below the lead in most runs.
        Session 12: also two-level leads in runs shorter than ``TWO_LEVEL_MIN_T`` (longer: it
        decided on every scan setting), q 1e-4, sigma 2, T 100: 10.5 -> 8.1 ms; and Laplace
        (own step on ``self.grid[i]``), q 1e-4, b 1, T 1e4: 13.2 -> 11.5 ms; same intervals."""
        pair = self._pairs[i]
        return self.h is None and isinstance(pair, SwappedPair) and pair.base is self._pairs[0]

    def _unswap_if_deciding(self, x: np.ndarray, which: str) -> None:
        """Compose a swapped direction (:meth:`_swap_applies`) on its own, from its own
        one-step PLD, where its upper bound exceeds every other direction's at some query
        point (its swap's slack could then widen the interval).  Those below are kept in
        ``_below``: the query leaves them out of its maximum (for epsilon, session 12: its
        delta at the others' largest epsilon e is at most the delta asked for, so its true
        epsilon is at most e -- a profile value instead of an inversion, 0.3 against 0.7 ms
        on 18k points)."""
        pld = self._run_pld  # (composing it first: that sets the swapped directions)
        self._below = set()
        for i in sorted(self._swapped):
            others = [getattr(p, which)(x) for j, (p, _) in enumerate(pld.directions)
                      if j != i]
            top, p = np.max(others or [np.inf], axis=0), pld.directions[i][0]
            if others and (np.all(p.delta(top) <= x) if which == "epsilon" and np.all(
                    np.isfinite(top)) else not np.any(getattr(p, which)(x) > top)):
                self._below.add(i)
                continue
            p, _, two_level = self._own_step(i)
            run = compose_two_level(p, self.steps) if two_level[0] else self._one_level(i, p)
            pld.directions[i] = (run, pld.directions[i][1])
            self._swapped.discard(i)

    def _two_level(self, h: float, width: float, one: float | None) -> bool:
        """Whether a small-rate Gaussian direction on the plan ``(h, width, one)`` is composed
        in two levels (:func:`compose_two_level`): outside the one-level regime of tiny
        rates (``one`` None), unless the run is long enough for two levels but its T-fold
        window is at most :data:`SMALL_WINDOW` grid steps (then one power on the fine grid is
        faster and tighter)."""
        return one is None and not self._small_window(h, width)

    def _small_window(self, h: float, width: float) -> bool:
        return self.steps >= TWO_LEVEL_MIN_T and width <= SMALL_WINDOW * h

    def _one_level(self, i: int, x: PLD, truncation: float | None = None) -> PLD:
        """``x`` composed over the run in one level (:func:`laplace_compose`); a small-rate
        Gaussian direction on a small window (:data:`SMALL_WINDOW`, plan of direction ``i``)
        or in the one-level regime (T >= SHORT_RUN) by the power method first (q 1e-4,
        sigma 8, T 1e4: 6.5 -> 1.8 ms; q 1e-7, sigma 0.5, T 1e4: add direction 151 -> 18 ms)."""
        h, width, one = self._plans[i] if self.h is None else (0.0, math.inf, None)
        pair = self._pairs[i]
        if (self.steps >= SHORT_RUN if one is not None else self._small_window(h, width)) and (
                lead_direction(pair) or secondary_direction(pair)):
            try:
                return x.self_compose(self.steps, truncation, method="power")
            except PowerMethodUnavailable:
                pass
        return laplace_compose(x, self.steps, self._pairs, truncation)

    def _query(self, x: np.ndarray, which: str) -> BoundPair:
        x = np.asarray(x, dtype=float)
        if self.rate == 0.0:
            z = Bound(np.zeros_like(x) if x.ndim else 0.0, "exact", "rate 0: no privacy loss")
            return z, z
        if which == "epsilon" and np.all(x >= self.tv_bound()):
            z = Bound(np.zeros_like(x) if x.ndim else 0.0, "exact",
                      "steps x one step's total variation distance <= delta: epsilon 0")
            return z, z
        if which == "epsilon" and self._pld is None:
            self._delta_hint = float(np.min(x))  # (read by _coarse_would_decide)
        self._unswap_if_deciding(x, which)
        self._refine_if_deciding(x, which)
        up, lo = getattr(TwoSidedPLD([d for i, d in enumerate(self._run_pld.directions)
                                      if i not in self._below]), which)(x)
        if self.h is None and isinstance(self.mechanism, Laplace):
            small = float(np.min(x) if which == "epsilon" else np.min(up))
            if small > 0.0 and self._laplace_precise(x, which, small):
                up, lo = getattr(self._run_pld, which)(x)
        check_finite_upper(self._run_pld, up, lo, x, which)
        return Bound(shaped(up, x), "upper", PESSIMISTIC_SOURCE), Bound(
            shaped(lo, x), "lower", OPTIMISTIC_SOURCE)

    def tv_bound(self) -> float:
        """An upper bound on the run's delta at epsilon 0 (:func:`~.poisson_bounds.
        run_tv_bound`, computed once): where the delta asked for is at least this, epsilon is
        0 (exact: delta(eps) is nonincreasing) and no composition is needed."""
        if "_tv" not in self.__dict__:
            self._tv = run_tv_bound(self.step_pairs(), self.steps)
        return self._tv

    def renyi_floor(self, alpha: np.ndarray) -> np.ndarray:
        """Lower bounds on the run's Rényi DP at orders ``alpha``: T times one step's
        optimistic floor (:func:`~.poisson_bounds.product_renyi_floor`: each optimistic PLD
        belongs to a pair the true one dominates, and Rényi divergences add over the steps),
        and at least 2 TV^2 (Pinsker, TV >= the run's certified lower delta(0), computed
        once).  Issue 28: was the composed run's floor, recomputed with its delta(0) at every
        screening round (q 1e-5, sigma 4, T 1e4: ~1.7 of 12 ms)."""
        if self.rate == 0.0:
            return np.zeros(np.shape(alpha))
        ones = [o for _, o, _ in self._step_plds() if o is not None]
        floor = product_renyi_floor(ones + self.__dict__.get("_refined_optimistic", []),
                                    self.steps, alpha)
        full = (self._pld.directions if self._pld is not None else  # (composed: as is)
                [self._direction(i) for i, (_, o, _) in enumerate(self._step_plds())
                 if o is not None])  # (else the others' optimistic sides are 0)
        if max((len(o.masses) for o in ones), default=0) > SINGLE_FLOOR_POINTS:
            # (renyi_floor's Jensen blocks, paid T times, can make it lower than the composed
            # run's: q 1e-5, sigma 1, T 1e6, 11k points)
            for _, o in full:
                floor = np.maximum(floor, renyi_floor(o, alpha))
        if "_tv_floor" not in self.__dict__:
            self._tv_floor = max(float(np.max(TwoSidedPLD(full).delta(np.zeros(1))[1])), 0.0)
        return np.maximum(floor, 2.0 * self._tv_floor ** 2)

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._query(delta, "epsilon")

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._query(epsilon, "delta")


def pld_analysis(run, h: float | None = None) -> PLDAnalysis:
    """The PLD analysis of a :class:`~privamp.Training` run with an explicit grid step
    ``h`` (``None``: automatic).  ``Training.epsilon(accountant="pld")`` uses h=None."""
    if not _applies(run):
        raise NotApplicable(
            "the PLD accountant handles Poisson-subsampled Gaussian, Laplace and randomized "
            "response runs under add/remove or zero-out with group 1"
        )
    check_steps(run.steps)
    return PLDAnalysis(run.mechanism, run.scheme.rate, run.steps, h)


def _applies(run) -> bool:
    mech = run.mechanism
    if not (
        isinstance(run.scheme, Poisson)
        and isinstance(mech, (Gaussian, Laplace))  # (randomized response: composed exactly,
        and isinstance(run.relation, (AddRemove, ZeroOut))  # theorems/binary_exact.py, whose
        and run.relation.group == 1  # analysis offers this PLD for composition)
    ):
        return False
    # the single-step losses must fit the grid's range [-700, 700]
    if isinstance(mech, Gaussian):
        return mech.shift(1) <= 25.0
    if isinstance(mech, Laplace):
        return mech.sensitivity / mech.scale <= 600.0
    return True


@run_accountant(
    "pld",
    applies=_applies,
    description="Poisson subsampling: privacy loss distributions, two-sided (pessimistic "
    "connect-the-dots and optimistic lowered chords), FFT composition",
    capabilities=("pld", "grid_step", "renyi_floor", "curve"),
)
def _build(run) -> PLDAnalysis:
    check_steps(run.steps)
    return PLDAnalysis(run.mechanism, run.scheme.rate, run.steps)
