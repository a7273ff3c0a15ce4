"""Registry of whole-run accountants.

An accountant turns a :class:`~privamp.Training` run into an analysis object answering
``epsilon(delta)`` and ``delta(epsilon)`` with an (upper, lower) pair of :class:`Bound` (either
may be ``None``).  Accountants register themselves next to their implementation with
:func:`run_accountant`; ``Training.epsilon(accountant="best")`` asks every applicable one and
keeps the smallest upper and the largest lower bound.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import NotApplicable
from ..results import Bound

if TYPE_CHECKING:  # pragma: no cover
    from .training import Training

__all__ = ["RunAnalysis", "RunAccountant", "run_accountant", "ACCOUNTANTS", "BoundPair"]

BoundPair = tuple[Bound | None, Bound | None]


class RunAnalysis(ABC):
    """What an accountant knows about one run (built once, queried many times)."""

    @abstractmethod
    def epsilon(self, delta: np.ndarray) -> BoundPair:
        """(upper, lower) bounds on the smallest epsilon with delta(epsilon) <= delta."""

    @abstractmethod
    def delta(self, epsilon: np.ndarray) -> BoundPair:
        """(upper, lower) bounds on the run's privacy profile at epsilon."""


@dataclass(frozen=True)
class RunAccountant:
    name: str
    applies: Callable[[Training], bool]
    build: Callable[[Training], RunAnalysis]
    description: str = ""


ACCOUNTANTS: dict[str, list[RunAccountant]] = {}


def run_accountant(
    name: str, applies: Callable[[Training], bool], description: str = ""
) -> Callable[[Callable[[Training], RunAnalysis]], Callable[[Training], RunAnalysis]]:
    """Register ``build(run) -> RunAnalysis`` under the accountant name ``name``.

    Several builders may share a name (e.g. ``"pld"`` for Poisson and for sampling without
    replacement); each declares with ``applies(run)`` which runs it handles.
    """

    def register(build):
        ACCOUNTANTS.setdefault(name, []).append(RunAccountant(name, applies, build, description))
        return build

    return register


def applicable(run: Training, name: str = "best") -> list[RunAccountant]:
    found = [a for accs in ACCOUNTANTS.values() for a in accs if a.applies(run)]
    if name == "best":
        return found
    chosen = [a for a in found if a.name == name]
    if not chosen:
        names = sorted({a.name for a in found}) or ["none"]
        if name in ACCOUNTANTS:
            raise NotApplicable(
                f"accountant {name!r} does not apply to this run; applicable here: "
                f"{', '.join(names)}"
            )
        raise ValueError(
            f"accountant must be 'best' or one of {', '.join(sorted(ACCOUNTANTS))}, got {name!r}"
        )
    return chosen
