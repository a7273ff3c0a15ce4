"""Whole training runs: ``Training(mechanism, scheme, steps | epochs, relation)``.

``run.epsilon(delta)`` and ``run.delta(epsilon)`` ask the registered accountants
(:mod:`privamp.accounting.registry`) and return a :class:`~privamp.Guarantee`: the smallest
sound upper bound and the largest certified lower bound any of them gives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_delta, check_epsilon, check_int, check_positive
from ..mechanisms import Mechanism
from ..results import Bound, Guarantee
from ..sampling import AddRemove, Relation, Scheme
from .registry import BoundPair, RunAnalysis, applicable

__all__ = ["Training"]


@dataclass(frozen=True)
class Training:
    """A training run: ``steps`` releases of ``mechanism``, each on data chosen by ``scheme``,
    protecting neighbours under ``relation``.  Give ``steps`` or ``epochs`` (not both)."""

    mechanism: Mechanism
    scheme: Scheme
    steps: int | None = None
    epochs: float | None = None
    relation: Relation = field(default_factory=AddRemove)
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.mechanism, Mechanism):
            raise ValueError(f"mechanism must be a privamp mechanism, got {self.mechanism!r}")
        if not isinstance(self.scheme, Scheme):
            raise ValueError(f"scheme must be a privamp sampling scheme, got {self.scheme!r}")
        if not isinstance(self.relation, Relation):
            raise ValueError(f"relation must be a privamp relation, got {self.relation!r}")
        if (self.steps is None) == (self.epochs is None):
            raise ValueError("give exactly one of steps (integer >= 1) or epochs (> 0)")
        if self.steps is not None:
            object.__setattr__(self, "steps", check_int("steps", self.steps, minimum=1))
        else:
            epochs = check_positive("epochs", self.epochs)
            object.__setattr__(self, "epochs", epochs)
            steps = epochs * self.scheme.steps_per_epoch
            if not math.isfinite(steps) or round(steps) < 1:
                raise ValueError(f"epochs={epochs} gives no whole step for {self.scheme}")
            object.__setattr__(self, "steps", int(round(steps)))

    # ------------------------------------------------------------------------------------
    def analysis(self, name: str) -> list[tuple[str, RunAnalysis]]:
        """The analyses of the accountants ``name`` ("best" = all applicable), built once.

        With ``"best"``, an accountant that declines this particular run (raises ValueError,
        e.g. the RDP accountant for a partial epoch) is skipped as long as another one answers.
        """
        accountants = applicable(self, name)
        if not accountants:
            raise ValueError(
                f"no accountant handles {type(self.mechanism).__name__} with "
                f"{type(self.scheme).__name__} under {self.relation} yet"
            )
        out = []
        errors: list[ValueError] = []
        for acc in accountants:
            key = f"{acc.name}:{id(acc)}"
            if key not in self._cache:
                try:
                    self._cache[key] = acc.build(self)
                except ValueError as exc:
                    if name != "best":
                        raise
                    errors.append(exc)
                    continue
            out.append((acc.name, self._cache[key]))
        if not out:
            raise errors[0]
        return out

    def _query(self, accountant: str, ask) -> list:
        pairs, errors = [], []
        for _, an in self.analysis(accountant):
            try:
                pairs.append(ask(an))
            except ValueError as exc:
                if accountant != "best":
                    raise
                errors.append(exc)
        if not pairs:
            raise errors[0]
        return pairs

    def epsilon(self, delta: float | np.ndarray, accountant: str = "best") -> Guarantee:
        """Bounds on the run's epsilon at ``delta`` (in (0, 1), scalar or array)."""
        d = check_delta(delta)
        return _combine(self._query(accountant, lambda an: an.epsilon(d)), np.shape(delta))

    def delta(self, epsilon: float | np.ndarray, accountant: str = "best") -> Guarantee:
        """Bounds on the run's delta at ``epsilon`` (>= 0, scalar or array)."""
        e = check_epsilon(epsilon)
        return _combine(self._query(accountant, lambda an: an.delta(e)), np.shape(epsilon))

    def __str__(self) -> str:
        return (
            f"Training({self.mechanism}, {self.scheme}, steps={self.steps}, "
            f"relation={self.relation})"
        )


def _pick(bounds: list[Bound], upper: bool, shape: tuple) -> Bound | None:
    if not bounds:
        return None
    vals = np.stack([np.broadcast_to(np.asarray(b.value, dtype=float), shape) for b in bounds])
    idx = np.argmin(vals, axis=0) if upper else np.argmax(vals, axis=0)
    flat = np.atleast_1d(idx).ravel()
    best = np.take_along_axis(vals, idx[None, ...] if vals.ndim > 1 else np.array([idx]), 0)[0]
    winners = sorted({int(i) for i in flat})
    kinds = {bounds[i].kind for i in winners}
    kind = "exact" if kinds == {"exact"} else ("upper" if upper else "lower")
    source = "; ".join(dict.fromkeys(bounds[i].source for i in winners))
    value = float(best) if shape == () else best.reshape(shape)
    return Bound(value, kind, source)


def _combine(pairs: list[BoundPair], shape: tuple) -> Guarantee:
    uppers = [u for u, _ in pairs if u is not None]
    lowers = [lo for _, lo in pairs if lo is not None]
    upper = _pick(uppers, True, shape)
    lower = _pick(lowers, False, shape)
    if upper is not None and upper.kind == "exact":
        lower = upper
    return Guarantee(upper, lower)
