"""Several directions (remove / add) of a run, each a (pessimistic, optimistic) PLD pair."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_delta, check_epsilon
from ..pairs.loss_pair import LossPair
from .discretise import discretise
from .grid import PLD

__all__ = [
    "TwoSidedPLD",
]


# ------------------------------------------------------------------------------------------
# several directions (add / remove)
# ------------------------------------------------------------------------------------------
@dataclass
class TwoSidedPLD:
    """PLDs of several directions (e.g. [remove pair, add pair]), each as (pess, opt).

    The run's profile is the max over directions, so upper bounds are the max of the
    pessimistic ones and lower bounds the max of the optimistic ones.
    """

    directions: list[tuple[PLD, PLD]]

    @classmethod
    def from_pairs(cls, pairs: list[LossPair], h: float, tail: float = 1e-16) -> TwoSidedPLD:
        if not pairs:
            raise ValueError("pairs must hold at least one LossPair")
        return cls([discretise(p, h, tail) for p in pairs])

    def compose(self, other: TwoSidedPLD, truncation: float = 1e-16) -> TwoSidedPLD:
        if len(other.directions) != len(self.directions):
            raise ValueError("both TwoSidedPLDs must have the same number of directions")
        return TwoSidedPLD([
            (p1.compose(p2, truncation), o1.compose(o2, truncation))
            for (p1, o1), (p2, o2) in zip(self.directions, other.directions, strict=True)
        ])

    def self_compose(self, T: int, truncation: float | None = None) -> TwoSidedPLD:
        return TwoSidedPLD([
            (p.self_compose(T, truncation), o.self_compose(T, truncation))
            for p, o in self.directions
        ])

    def delta(self, epsilon: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """(upper, lower) bounds on the profile at eps (max over directions of each).

        Raises:
            ValueError: epsilon not a real >= 0 (or an array of them).
        """
        epsilon = check_epsilon(epsilon)
        ups = [p.delta(epsilon) for p, _ in self.directions]
        los = [o.delta(epsilon) for _, o in self.directions]
        return np.max(ups, axis=0), np.max(los, axis=0)

    def epsilon(self, delta: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """(upper, lower) bounds on the smallest eps with profile <= delta."""
        ups, los = zip(*self.epsilon_sides(delta), strict=True)
        return np.max(ups, axis=0), np.max(los, axis=0)

    def epsilon_sides(self, delta: np.ndarray | float, hints: list | None = None
                      ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per direction, (pessimistic, optimistic) epsilon at delta; ``hints``: the same
        structure from an earlier query whose answers probably lie below these
        (:meth:`PLD.epsilon`'s hint: a speed-up, never a change of the result).

        Raises:
            ValueError: delta not in (0, 1) (or an array of such values).
        """
        delta = check_delta(delta)
        out = []
        for i, (p, o) in enumerate(self.directions):
            hp, ho = (None, None) if hints is None else (_low(hints[i][0]), _low(hints[i][1]))
            out.append((p.epsilon(delta, hp), np.zeros(np.shape(np.asarray(delta, dtype=float)))
                        if _is_zero(o) else o.epsilon(delta, ho)))
        return out


def _is_zero(p: PLD) -> bool:
    """An optimistic PLD of profile 0 (no mass, no slack), e.g. the trivial lower bound of a
    direction composed on its pessimistic side only: its epsilon is 0 at every delta in (0, 1)
    (what :meth:`PLD.epsilon` returns for it, without building its tables)."""
    return p.kind == "optimistic" and p.inf_mass == 0.0 and p.slack == 0.0 and \
        not np.any(p.masses)


def _low(values: np.ndarray) -> float | None:
    """The smallest finite value of an earlier answer (None if there is none)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return float(v.min()) if v.size else None

