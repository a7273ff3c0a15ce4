"""The Poisson PLD accountant's precise pass for Poisson-subsampled Laplace at small delta
(``PLDAnalysis._laplace_precise``, moved here from :mod:`.poisson` in session 12, unchanged,
to keep that module under 600 lines)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..pairs.loss_pair import LossPair
from ..pld.grid import PLD
from ..pld.two_sided import TwoSidedPLD
from .laplace_poisson import laplace_precise, needs_precise

__all__ = ["LaplacePrecise"]


class LaplacePrecise:
    """Mixin of :class:`~.poisson.PLDAnalysis`: the precise pass of Laplace's directions
    (its run PLD ``_run_pld``, pairs, grids, steps and one-step PLDs are the analysis's)."""

    steps: int
    grid: list[float]
    _pairs: list[LossPair]
    _rho: float
    if TYPE_CHECKING:
        @property
        def _run_pld(self) -> TwoSidedPLD: ...

        def _single_steps(self) -> list[tuple[PLD, PLD | None, tuple[bool, bool]]]: ...

    def _laplace_precise(self, x: np.ndarray, which: str, delta: float) -> bool:
        """Poisson-subsampled Laplace at small delta (``delta``: the smallest one asked for
        or answered): compose again (:func:`laplace_precise`) the direction deciding the
        upper bound at the query points ``x`` if its pessimistic side's numerical allowances
        are above a fraction of ``delta``, then any other such direction whose answer still
        reaches the new one's (the optimistic sides stay).  Returns whether any changed."""
        pld = self._run_pld
        done = self.__dict__.setdefault("_precise_for", {})

        def worst(i: int) -> float:
            return float(np.max(getattr(pld.directions[i][0], which)(x)))

        todo = [i for i, (p, _) in enumerate(pld.directions)
                if needs_precise(p, delta) and done.get(i, 1.0) > delta]
        if not todo or any(p1.slack * self.steps >= delta for p1, _, _ in self._single_steps()):
            return False  # (some direction's float floor alone exceeds delta: no finite upper)
        rest = [worst(i) for i in range(len(pld.directions)) if i not in todo]
        best = max(rest, default=-np.inf)
        changed = False
        for i in sorted(todo, key=worst, reverse=True):
            p, o = pld.directions[i]
            if worst(i) < best:  # below a refined (or exact-enough) direction: cannot decide
                continue
            new = laplace_precise(self._pairs[i], self.grid[i], self.steps, delta, self._rho,
                                  floor=p.slack + p.inf_mass)
            done[i] = delta
            if new is not None and new.slack + new.inf_mass < p.slack + p.inf_mass:
                pld.directions[i] = (new, o)
                changed = True
            best = max(best, worst(i))
        return changed
