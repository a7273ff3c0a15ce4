"""The two registries of privamp and the run-accountant protocol.

* One-step Rényi-DP results (:func:`rdp_method`): a theorem module registers
  ``func(mechanism, scheme, relation, alpha)`` with the settings it covers; :func:`rdp_curve`
  takes, per order, the smallest applicable one.
* Whole-run accountants (:func:`run_accountant`): ``build(run) -> RunAnalysis`` with an
  applicability predicate and the capabilities its analyses offer.  ``Training``,
  ``compose``, ``calibrate``, the screening rule and ``epsilon_curve`` ask for capabilities
  (:data:`CAPABILITIES`), never for accountant names; names only let a user pick one.

The protocol (:class:`RunAnalysis`): ``epsilon(delta)`` and ``delta(epsilon)`` are required
and return an (upper, lower) pair of :class:`Bound` (either may be ``None``).  Optional
capabilities raise :class:`~privamp.NotApplicable` by default:

* ``pld(h=None) -> TwoSidedPLD``: the whole run's PLD on grid step ``h`` (a direction may lie
  on an integer multiple of ``h``), as directions ``[remove, add]`` (one direction: it serves
  both), each (pessimistic, optimistic); the optimistic side is realised by one pair of
  neighbouring datasets under adaptive queries (so lower sides of phases compose), or the
  zero PLD.  :func:`privamp.compose` composes phases through it.
* ``grid_step() -> float``: the step the analysis would pick for its run alone.
* ``rdp_accountant() -> RdpAccountant``: the run's Rényi-DP curve, composable; the analysis's
  answers are its conversion (so the screening rule of :mod:`privamp.accounting.screening`
  may skip it).
* ``renyi_floor(alpha)``: certified lower bounds on the run's Rényi DP (screening).
* ``curve(steps, which, x, hook)``: bounds after each number of steps, in one pass.
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
    from ..pld.two_sided import TwoSidedPLD
    from .rdp import RdpAccountant

__all__ = [
    "CAPABILITIES",
    "RunAnalysis",
    "RunAccountant",
    "run_accountant",
    "applicable",
    "offers",
    "ACCOUNTANTS",
    "BoundPair",
    "RdpMethod",
    "RdpCurve",
    "rdp_method",
    "rdp_values",
    "rdp_methods",
    "rdp_curve",
    "REGISTRY",
    "applicable_methods",
    "one_tight",
]


BoundPair = tuple[Bound | None, Bound | None]


#: what an analysis may offer besides epsilon / delta (see the module docstring)
CAPABILITIES = ("pld", "grid_step", "rdp_accountant", "renyi_floor", "curve")


class RunAnalysis(ABC):
    """What an accountant knows about one run (built once, queried many times).

    Subclasses implement :meth:`epsilon` and :meth:`delta` and override the capabilities
    they offer; the others raise :class:`~privamp.NotApplicable`."""

    @abstractmethod
    def epsilon(self, delta: np.ndarray) -> BoundPair:
        """(upper, lower) bounds on the smallest epsilon with delta(epsilon) <= delta."""

    @abstractmethod
    def delta(self, epsilon: np.ndarray) -> BoundPair:
        """(upper, lower) bounds on the run's privacy profile at epsilon."""

    def pld(self, h: float | None = None) -> TwoSidedPLD:
        """The whole run's two-sided PLD on grid step ``h`` (None: the analysis's choice).

        Raises:
            NotApplicable: the analysis has no PLD of the run.
        """
        raise NotApplicable(f"{type(self).__name__} offers no PLD of its run")

    def grid_step(self) -> float:
        """The grid step this analysis would pick for its run alone.

        Raises:
            NotApplicable: the analysis has no PLD of the run.
        """
        raise NotApplicable(f"{type(self).__name__} offers no PLD of its run")

    def rdp_accountant(self) -> RdpAccountant:
        """The run's Rényi-DP curve as an :class:`~privamp.accountants.rdp.RdpAccountant`
        (composable with other runs'); the analysis's answers are its conversion.

        Raises:
            NotApplicable: the analysis has no Rényi-DP curve.
        """
        raise NotApplicable(f"{type(self).__name__} offers no Rényi-DP curve")

    def renyi_floor(self, alpha: np.ndarray) -> np.ndarray:
        """Certified lower bounds on the run's Rényi DP at the orders ``alpha``.

        Raises:
            NotApplicable: the analysis has no such floor.
        """
        raise NotApplicable(f"{type(self).__name__} offers no Rényi floor")


def offers(analysis: RunAnalysis, capability: str) -> bool:
    """Whether ``analysis`` overrides the optional method ``capability`` (one of
    :data:`CAPABILITIES`).  It may still raise NotApplicable for a particular run."""
    if capability not in CAPABILITIES:
        raise ValueError(f"capability must be one of {', '.join(CAPABILITIES)}, "
                         f"got {capability!r}")
    own = getattr(type(analysis), capability, None)
    if own is None or not callable(own):  # e.g. an older ``pld`` property: not the protocol
        return False
    return own is not getattr(RunAnalysis, capability, None)


@dataclass(frozen=True)
class RunAccountant:
    """A registered whole-run accountant: ``build(run)`` for the runs ``applies(run)`` accepts.

    ``capabilities``: what its analyses offer (a subset of :data:`CAPABILITIES`), declared so
    that callers can decide before building (e.g. "rdp_accountant": answers are the
    conversion of a Rényi-DP curve, which the screening rule may rule out unbuilt).
    ``in_best``: asked by ``accountant="best"`` (False: only when asked for by name, e.g. a
    bound that never beats another registered one and exists for comparison)."""

    name: str
    applies: Callable[[Training], bool]
    build: Callable[[Training], RunAnalysis]
    description: str = ""
    capabilities: frozenset[str] = frozenset()
    in_best: bool = True


ACCOUNTANTS: dict[str, list[RunAccountant]] = {}


def run_accountant(
    name: str, applies: Callable[[Training], bool], description: str = "",
    capabilities: tuple[str, ...] = (), in_best: bool = True,
) -> Callable[[Callable[[Training], RunAnalysis]], Callable[[Training], RunAnalysis]]:
    """Register ``build(run) -> RunAnalysis`` under the accountant name ``name``.

    Several builders may share a name (e.g. ``"pld"`` for Poisson and for sampling without
    replacement); each declares with ``applies(run)`` which runs it handles, with
    ``capabilities`` what its analyses offer (:data:`CAPABILITIES`), and with ``in_best``
    whether ``accountant="best"`` asks it (:class:`RunAccountant`).

    Raises:
        ValueError: an unknown capability.
    """
    bad = set(capabilities) - set(CAPABILITIES)
    if bad:
        raise ValueError(f"unknown capabilities {sorted(bad)}; known: {', '.join(CAPABILITIES)}")

    def register(build):
        ACCOUNTANTS.setdefault(name, []).append(
            RunAccountant(name, applies, build, description, frozenset(capabilities), in_best))
        return build

    return register


def applicable(run: Training, name: str = "best") -> list[RunAccountant]:
    """The registered accountants that apply to ``run`` ("best": all those with ``in_best``;
    else those of ``name``).

    Raises:
        NotApplicable: accountants named ``name`` exist but none applies to ``run``.
        ValueError: no accountant is named ``name``.
    """
    found = [a for accs in ACCOUNTANTS.values() for a in accs if a.applies(run)]
    if name == "best":
        return [a for a in found if a.in_best]
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


# called as func(mechanism, scheme, relation, alpha); each result declares the concrete
# Mechanism/Scheme subclasses it handles, so the parameters are left open to the checker
RdpFunc = Callable[..., np.ndarray]


# called as when(mechanism, scheme, relation); open like RdpFunc
Predicate = Callable[..., bool]


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
    #: optional ``estimate(mechanism, scheme, relation, alpha)``: approximate values of ``func``
    #: (no guarantee), used only to choose which orders to evaluate with ``func``
    estimate: RdpFunc | None = None

    def applies(self, mechanism: object, scheme: Scheme, relation: Relation) -> bool:
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
    estimate: RdpFunc | None = None,
) -> Callable[[RdpFunc], RdpFunc]:
    """Decorator registering ``func`` as the RDP method ``name``."""

    def register(func: RdpFunc) -> RdpFunc:
        if name in REGISTRY:
            raise RuntimeError(f"RDP method {name!r} is registered twice")
        REGISTRY[name] = RdpMethod(
            name, source, func, mechanisms, schemes, relations, when, tight, in_best, estimate
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


def applicable_methods(mechanism: Mechanism, scheme: Scheme, relation: Relation,
                       method: str = "best") -> list[RdpMethod]:
    """The registered one-step methods :func:`rdp_curve` would use ("best": all in best)."""
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


def one_tight(chosen: list[RdpMethod]) -> list[RdpMethod]:
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
    """Like :func:`rdp_values`, also telling which method gave each order (the public
    :func:`privamp.rdp` is this curve as a :class:`Bound`)."""
    relation = AddRemove() if relation is None else relation
    a = np.atleast_1d(check_orders(alpha))
    chosen = one_tight(applicable_methods(mechanism, scheme, relation, method))
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


def rdp_values(
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

