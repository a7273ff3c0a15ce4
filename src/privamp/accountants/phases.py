"""Composition of whole runs' PLDs (the phases of :func:`privamp.compose`), whatever scheme
produced them.

For fixed neighbours, the pair of the whole history is the product of the phases' pairs in
the same orientation, so the remove directions compose with each other and the add
directions with each other, and the history's bounds are the max over the two (composition
of dominating pairs: Zhu, Dong, Wang 2022, arXiv:2106.08567, Thm 10).  A phase given by one
direction (a symmetric pair, e.g. a substitution analysis) serves both.  Optimistic sides
belong to one realised pair of neighbouring datasets each, under adaptive queries, so they
compose too (the contract of :meth:`~privamp.accountants.registry.RunAnalysis.pld`).
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np

from ..errors import NotApplicable
from ..numerics.arrays import shaped
from ..pld.grid import OPTIMISTIC_SOURCE, PESSIMISTIC_SOURCE, PLD
from ..pld.moments import two_sided_renyi_floor
from ..pld.two_sided import TwoSidedPLD
from ..results import Bound
from .pld_run import TRUNC_CURVE, check_finite_upper
from .registry import BoundPair, RunAnalysis

__all__ = [
    "compose_plds",
    "ComposedPLDAnalysis",
]


#: relative tolerance for a grid step to be an integer multiple of another
_STEP_REL = 1e-9


def _factor(big: float, small: float) -> int | None:
    """``big / small`` if it is an integer (within float error), else None."""
    k = round(big / small)
    return k if k >= 1 and abs(k * small - big) <= _STEP_REL * big else None


def _common_step(steps: list[float]) -> float:
    """The coarsest step, if every step divides it; else their least common multiple as
    multiples of the finest (raised ValueError if they are not commensurate)."""
    lo = min(steps)
    ks = [_factor(s, lo) for s in steps]
    if any(k is None for k in ks):
        raise ValueError(f"PLD grid steps {steps} are not integer multiples of one step")
    return lo * math.lcm(*ks)  # type: ignore[arg-type]


def _compose_side(parts: list[PLD], truncation: float) -> PLD:
    top = _common_step([p.h for p in parts])
    # (top is a common multiple of the steps: every factor exists)
    parts = [p if p.h == top else p.coarsen(int(cast(int, _factor(top, p.h)))) for p in parts]
    acc = parts[0]
    for x in parts[1:]:
        acc = acc.compose(x, truncation)
    return acc


def compose_plds(plds: list[TwoSidedPLD]) -> TwoSidedPLD:
    """The PLD of phases run one after the other, from each phase's whole-run PLD.

    Every direction's sides are brought to the coarsest grid among the phases (each a
    multiple of the others'; :meth:`PLD.coarsen` keeps the side's kind) and composed by FFT
    (tails of total mass 1e-13 truncated in the sound direction).  Phases with two
    directions are composed direction by direction; a one-direction phase serves both.

    Raises:
        ValueError: no PLDs, more than two directions, or grid steps that are not integer
            multiples of one step.
    """
    if not plds:
        raise ValueError("compose_plds needs at least one TwoSidedPLD")
    n = max(len(p.directions) for p in plds)
    if n > 2 or any(len(p.directions) not in (1, n) for p in plds):
        raise ValueError("each phase must have one direction or the same two [remove, add]")
    trunc = TRUNC_CURVE / len(plds)
    memo: dict[tuple[int, ...], PLD] = {}

    def side(parts: list[PLD]) -> PLD:
        key = tuple(id(p) for p in parts)
        if key not in memo:
            memo[key] = _compose_side(parts, trunc)
        return memo[key]

    dirs = []
    for i in range(n):
        pick = [p.directions[i if len(p.directions) == n else 0] for p in plds]
        dirs.append((side([d[0] for d in pick]), side([d[1] for d in pick])))
    return TwoSidedPLD(dirs)


class ComposedPLDAnalysis(RunAnalysis):
    """Bounds of a history from the composition of its phases' PLDs (:func:`compose_plds`).

    ``sources``: the phases' accountants (their descriptions), named in every bound."""

    def __init__(self, plds: list[TwoSidedPLD], sources: list[str], h: float) -> None:
        self._parts, self.h = plds, float(h)
        self._pld: TwoSidedPLD | None = None
        self._names = "; ".join(dict.fromkeys(sources))

    def pld(self, h: float | None = None) -> TwoSidedPLD:
        """The history's PLD (on multiples of the composition's finest step ``self.h``).

        Raises:
            NotApplicable: an ``h`` other than None or ``self.h`` (the phases were
                discretised once).
        """
        if h is not None and _factor(float(h), self.h) != 1:
            raise NotApplicable(f"this composition lies on h = {self.h}, not {h}")
        if self._pld is None:
            self._pld = compose_plds(self._parts)
        return self._pld

    def grid_step(self) -> float:
        return self.h

    def renyi_floor(self, alpha: np.ndarray) -> np.ndarray:
        """Lower bounds on the history's Rényi DP (each optimistic PLD belongs to a pair the
        true one dominates: :func:`privamp.pld.moments.two_sided_renyi_floor`)."""
        return two_sided_renyi_floor(self.pld(), alpha)

    def _query(self, x: np.ndarray, which: str) -> BoundPair:
        x = np.asarray(x, dtype=float)
        pld = self.pld()
        up, lo = getattr(pld, which)(x)
        check_finite_upper(pld, up, lo, x, which)
        step = max(p.h for p, _ in pld.directions)
        note = f"phases composed as PLDs on one grid (h = {step:.3g}): {self._names}"
        return (Bound(shaped(up, x), "upper", f"{PESSIMISTIC_SOURCE}; {note}"),
                Bound(shaped(lo, x), "lower", f"{OPTIMISTIC_SOURCE}; {note}"))

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._query(delta, "epsilon")

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._query(epsilon, "delta")
