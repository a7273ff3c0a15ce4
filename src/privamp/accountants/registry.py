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

from .._validation import check_orders
from ..errors import NotApplicable
from ..mechanisms.base import Mechanism
from ..results import Bound
from ..sampling.relations import AddRemove, Relation
from ..sampling.schemes import Scheme

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting.training import Training

__all__ = [
    "RunAnalysis",
    "RunAccountant",
    "run_accountant",
    "ACCOUNTANTS",
    "BoundPair",
    "RdpMethod",
    "RdpCurve",
    "rdp_method",
    "rdp",
    "rdp_methods",
    "rdp_curve",
    "REGISTRY",
]


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


RdpFunc = Callable[[Mechanism, Scheme, Relation, np.ndarray], np.ndarray]


Predicate = Callable[[Mechanism, Scheme, Relation], bool]


@dataclass(frozen=True)
class RdpMethod:
    """One published Rényi-DP result for one amplified step.

    ``func(mechanism, scheme, relation, alpha)`` returns upper bounds on the RDP epsilon at the
    orders ``alpha`` (a float array of orders > 1).  ``tight`` marks results that are exact
    (equal to the true divergence of the worst pair of neighbours).  ``in_best=False`` keeps a
    result out of ``method="best"`` (e.g. a looser variant kept for comparison).
    """

    name: str
    source: str
    func: RdpFunc
    mechanisms: tuple[type, ...]
    schemes: tuple[type, ...]
    relations: tuple[type, ...]
    when: Predicate | None = None
    tight: bool = False
    in_best: bool = True

    def applies(self, mechanism: Mechanism, scheme: Scheme, relation: Relation) -> bool:
        if not (
            isinstance(mechanism, self.mechanisms)
            and isinstance(scheme, self.schemes)
            and isinstance(relation, self.relations)
        ):
            return False
        return True if self.when is None else bool(self.when(mechanism, scheme, relation))


REGISTRY: dict[str, RdpMethod] = {}


def rdp_method(
    name: str,
    source: str,
    *,
    mechanisms: tuple[type, ...] = (Mechanism,),
    schemes: tuple[type, ...] = (Scheme,),
    relations: tuple[type, ...] = (Relation,),
    when: Predicate | None = None,
    tight: bool = False,
    in_best: bool = True,
) -> Callable[[RdpFunc], RdpFunc]:
    """Decorator registering ``func`` as the RDP method ``name``."""

    def register(func: RdpFunc) -> RdpFunc:
        if name in REGISTRY:
            raise RuntimeError(f"RDP method {name!r} is registered twice")
        REGISTRY[name] = RdpMethod(
            name, source, func, mechanisms, schemes, relations, when, tight, in_best
        )
        return func

    return register


def rdp_methods(
    mechanism: Mechanism, scheme: Scheme, relation: Relation | None = None
) -> list[tuple[str, str]]:
    """The (name, source) of every registered result that applies to this setting."""
    relation = AddRemove() if relation is None else relation
    return [(m.name, m.source) for m in REGISTRY.values() if m.applies(mechanism, scheme, relation)]


@dataclass(frozen=True)
class RdpCurve:
    """An RDP curve with, per order, the name of the method that gave it."""

    alpha: np.ndarray
    epsilon: np.ndarray
    methods: np.ndarray  # object array of method names

    @property
    def sources(self) -> list[str]:
        return sorted({REGISTRY[m].source for m in np.unique(self.methods)})


def _applicable(mechanism, scheme, relation, method):
    found = [m for m in REGISTRY.values() if m.applies(mechanism, scheme, relation)]
    if method == "best":
        chosen = [m for m in found if m.in_best]
    else:
        chosen = [m for m in found if m.name == method]
        if not chosen:
            names = ", ".join(m.name for m in found) or "none"
            if method in REGISTRY:
                raise NotApplicable(
                    f"method {method!r} does not apply to {type(mechanism).__name__} with "
                    f"{type(scheme).__name__} under {relation}; applicable: {names}"
                )
            raise ValueError(f"unknown method {method!r}; applicable here: {names}")
    if not chosen:
        raise NotApplicable(
            f"no Rényi-DP result is available for {type(mechanism).__name__} with "
            f"{type(scheme).__name__} under {relation}"
        )
    return chosen


def _one_tight(chosen: list[RdpMethod]) -> list[RdpMethod]:
    """The methods worth computing: a tight (exact) result is the true divergence of the worst
    pair up to its certified rounding, so no other upper bound can be smaller by more than
    that rounding (~1e-11 relative); keep the first tight one registered and skip the rest
    (issue 14: the sampled-Gaussian curve was computed by two exact methods and a looser one)."""
    tight = [m for m in chosen if m.tight]
    return tight[:1] if tight else chosen


def rdp_curve(
    mechanism: Mechanism,
    scheme: Scheme,
    alpha: float | np.ndarray,
    relation: Relation | None = None,
    method: str = "best",
) -> RdpCurve:
    """Like :func:`rdp`, also telling which method gave each order."""
    relation = AddRemove() if relation is None else relation
    a = np.atleast_1d(check_orders(alpha))
    chosen = _one_tight(_applicable(mechanism, scheme, relation, method))
    values = np.stack(
        [np.asarray(m.func(mechanism, scheme, relation, a), dtype=float) for m in chosen]
    )
    if np.isnan(values).any():
        bad = [m.name for m, v in zip(chosen, values, strict=True) if np.isnan(v).any()]
        raise RuntimeError(f"internal error: RDP method(s) {bad} returned NaN; please report")
    if (values < 0).any():
        bad = [m.name for m, v in zip(chosen, values, strict=True) if (v < 0).any()]
        raise RuntimeError(f"internal error: RDP method(s) {bad} returned a negative bound")
    idx = np.argmin(values, axis=0)
    names = np.array([m.name for m in chosen], dtype=object)[idx]
    return RdpCurve(a, values[idx, np.arange(a.size)], names)


def rdp(
    mechanism: Mechanism,
    scheme: Scheme,
    alpha: float | np.ndarray,
    relation: Relation | None = None,
    method: str = "best",
) -> np.ndarray:
    """Upper bounds on the Rényi-DP epsilon of one step of ``mechanism`` under ``scheme``.

    ``alpha``: order(s) > 1, real.  ``method="best"`` takes, per order, the smallest of all
    applicable results; another name selects one result (see :func:`rdp_methods`).
    Returns a float array shaped like ``alpha`` (a 0-d array for a scalar).
    """
    shape = np.shape(alpha)
    curve = rdp_curve(mechanism, scheme, alpha, relation, method)
    return curve.epsilon.reshape(shape)

