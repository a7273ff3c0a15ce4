"""The Rényi-DP accountant (generic, not a paper): RdpAccountant (heterogeneous steps)
and the run accountant "rdp": one-step Rényi-DP curves of the registry, composed over the run
(Mironov 2017, arXiv:1702.07476, Prop 1) and converted by Balle et al. 2020
(arXiv:1905.09982, Thm 21).
"""

from __future__ import annotations

from typing import cast

import numpy as np

from .._validation import check_delta, check_epsilon, check_int, check_orders
from ..errors import NotApplicable
from ..mechanisms.base import Mechanism
from ..mechanisms.laplace import Laplace
from ..mechanisms.randomized_response import RandomizedResponse
from ..renyi.conversion import (
    CONVERSIONS,
    CURVE_MAX_ORDER,
    MAX_ORDER,
    SOURCE_BALLE,
    SOURCE_PURE,
    CurveFn,
    optimal_delta,
    optimal_epsilon,
)
from ..results import Bound, Kind
from ..sampling.relations import AddRemove, Relation, ZeroOut
from ..sampling.schemes import Poisson, Scheme
from .registry import (
    REGISTRY,
    BoundPair,
    RunAnalysis,
    applicable_methods,
    one_tight,
    rdp_curve,
    rdp_methods,
    run_accountant,
)

__all__ = [
    "RdpAccountant",
    "RdpRunAnalysis",
    "compositions",
    "pure_dp_epsilon",
]


# ------------------------------------------------------------------------------------------
# pure DP: a finite worst-case privacy loss
# ------------------------------------------------------------------------------------------
_PURE_ROUND = 1e-12  # relative upward rounding of a pure-DP epsilon


def pure_dp_epsilon(mechanism: Mechanism, scheme: Scheme, relation: Relation) -> float | None:
    """An upper bound on the largest privacy loss of one step (the step is then eps-DP, pure),
    or None when privamp knows none (Gaussian noise, other schemes).

    Base mechanism at distance 1: Laplace k Delta / b, randomized response
    log(theta / (1 - theta)) (None for theta = 1).  Poisson subsampling at rate q under
    add/remove or zero-out: the dominating pairs (q P + (1 - q) Q, Q) and its swap have losses
    log(1 - q + q e^l) and -log(1 - q + q e^l) for base losses l in [-L, L], hence
    max(log(1 - q + q e^L), -log(1 - q + q e^{-L})).  A group of K: K times the one-record
    value (group privacy of pure DP).  Rounded up.
    """
    if not isinstance(scheme, Poisson) or not isinstance(relation, (AddRemove, ZeroOut)):
        return None
    if isinstance(mechanism, Laplace):
        L = mechanism.epsilon0(1)
    elif isinstance(mechanism, RandomizedResponse):
        L = mechanism.epsilon0()
    else:
        return None
    if not np.isfinite(L):
        return None
    q = scheme.rate
    if q <= 0.0:
        return 0.0
    if q >= 1.0:
        step = L
    else:
        # log(1 - q + q e^L) = L + log q + log1p((1 - q) e^-L / q): no overflow at large L
        up = L + np.log(q) + np.log1p((1.0 - q) / q * np.exp(-L)) if L > 1.0 else \
            np.log1p(q * np.expm1(L))
        step = max(up, -np.log1p(q * np.expm1(-L)))
    return float(relation.group * step * (1.0 + _PURE_ROUND))


def _step_curve(mech: Mechanism, scheme: Scheme, relation: Relation
                ) -> tuple[CurveFn, CurveFn | None]:
    """(curve, estimate) of one step: the curve is :func:`rdp_curve` with ``method="best"``
    (called directly when one method computes every order: no registry look-up per call),
    the estimate that method's (None: none, or several methods).  Raises NotApplicable as
    :func:`rdp_curve` would when nothing applies."""
    chosen = one_tight(applicable_methods(mech, scheme, relation))
    if len(chosen) != 1:
        def curve(a: np.ndarray) -> np.ndarray:
            return rdp_curve(mech, scheme, a, relation).epsilon

        return curve, None
    method = chosen[0]

    def single(a: np.ndarray) -> np.ndarray:
        v = np.asarray(method.func(mech, scheme, relation, np.atleast_1d(a)), dtype=float)
        if np.isnan(v).any() or (v < 0).any():
            raise RuntimeError(f"internal error: RDP method {method.name!r} returned NaN or a "
                               "negative bound; please report")
        return v

    est = method.estimate
    if est is None:
        return single, None

    def guide(a: np.ndarray) -> np.ndarray:
        return np.asarray(est(mech, scheme, relation, np.atleast_1d(a)), dtype=float)

    return single, guide


# ------------------------------------------------------------------------------------------
# the accountant
# ------------------------------------------------------------------------------------------
class RdpAccountant:
    """An Opacus-like Rényi-DP accountant.

    >>> acc = RdpAccountant()
    >>> acc.compose((Gaussian(1.1), Poisson(256 / 60000)), steps=14063)   # doctest: +SKIP
    >>> acc.get_epsilon(1e-5)                                              # doctest: +SKIP

    ``compose`` takes a curve function ``alpha -> rdp`` (vectorised) or a tuple
    ``(mechanism, scheme)`` / ``(mechanism, scheme, relation)``, whose curve is
    :func:`privamp.rdp` with ``method="best"``; ``steps`` copies are composed.
    """

    def __init__(self, conversion: str = "balle2020") -> None:
        if conversion not in CONVERSIONS:
            raise ValueError(f"conversion must be one of {CONVERSIONS}, got {conversion!r}")
        self.conversion = conversion
        self._terms: list[tuple[CurveFn, int, tuple | None]] = []
        #: per term, an estimate of its one-step curve (only to choose orders) or None
        self._guides: list[CurveFn | None] = []
        #: total curve values by order (reset by compose); each query searches its orders
        #: afresh (:func:`~privamp.renyi.conversion.optimal_epsilon`), so answers never
        #: depend on earlier queries, which only save evaluations
        self._values: dict[float, float] = {}
        #: pure-DP epsilon of everything composed (None: unknown), see pure_dp_epsilon
        self.pure_epsilon: float | None = 0.0
        self._max_order = MAX_ORDER
        #: every term is a privamp one-step curve (cheap integer orders): search integers first
        self._integers_first = False

    def compose(self, step: CurveFn | tuple, steps: int = 1) -> RdpAccountant:
        n = check_int("steps", steps, minimum=1)
        if isinstance(step, tuple):
            if len(step) not in (2, 3):
                raise ValueError(
                    "step must be (mechanism, scheme) or (mechanism, scheme, relation)"
                )
            mech, scheme = step[0], step[1]
            relation = step[2] if len(step) == 3 else AddRemove()
            if not isinstance(mech, Mechanism) or not isinstance(scheme, Scheme):
                raise ValueError("step must be (mechanism, scheme[, relation]) of privamp objects")
            if not isinstance(relation, Relation):
                raise ValueError(f"relation must be a privamp relation, got {relation!r}")
            fn, guide = _step_curve(mech, scheme, relation)  # raises if nothing applies
            self._terms.append((fn, n, (mech, scheme, relation)))
            self._guides.append(guide)
            pure = pure_dp_epsilon(mech, scheme, relation)
            self._max_order = min(self._max_order, CURVE_MAX_ORDER)
            self._integers_first = all(spec is not None for _, _, spec in self._terms)
        elif callable(step):
            self._terms.append((step, n, None))
            self._guides.append(None)
            self._integers_first = False
            pure = None
        else:
            raise ValueError("step must be a callable alpha -> rdp or a (mechanism, scheme) tuple")
        if self.pure_epsilon is not None and pure is not None:
            self.pure_epsilon = (self.pure_epsilon + n * pure) * (1.0 + _PURE_ROUND)
        else:
            self.pure_epsilon = None
        self._values = {}
        return self

    def with_steps(self, steps: int) -> RdpAccountant:
        """This one-term accountant with ``steps`` copies of its term instead, sharing the
        term's evaluations (a memo of the one-step curve by order): one RDP curve for the
        epsilon after many numbers of steps."""
        if len(self._terms) != 1:
            raise ValueError("with_steps needs an accountant with exactly one composed term")
        n = check_int("steps", steps, minimum=1)
        fn, _, spec = self._terms[0]
        memo = self.__dict__.setdefault("_memo", {})

        def shared(a: np.ndarray) -> np.ndarray:
            flat = np.asarray(a, dtype=float).ravel()
            miss = np.array([x for x in np.unique(flat) if x not in memo])
            if miss.size:
                memo.update(zip(miss.tolist(), np.asarray(fn(miss), dtype=float).tolist(),
                                strict=True))
            return np.array([memo[x] for x in flat.tolist()]).reshape(np.shape(a))

        out = RdpAccountant(self.conversion)
        out._terms = [(shared, n, spec)]
        out._guides = list(self._guides)
        pure = None if spec is None else pure_dp_epsilon(*spec)
        out.pure_epsilon = None if pure is None else n * pure * (1.0 + _PURE_ROUND)
        out._max_order, out._integers_first = self._max_order, self._integers_first
        out.__dict__["_memo"] = memo
        return out

    def extend(self, other: RdpAccountant) -> RdpAccountant:
        """Compose everything ``other`` composed into this accountant (Mironov 2017, Prop 1:
        Rényi DP adds up over adaptive composition); returns ``self``.

        Raises:
            ValueError: ``other`` is not an RdpAccountant or converts differently.
        """
        if not isinstance(other, RdpAccountant):
            raise ValueError(f"other must be an RdpAccountant, got {other!r}")
        if other.conversion != self.conversion:
            raise ValueError(f"cannot merge a {other.conversion!r} accountant into a "
                             f"{self.conversion!r} one")
        if not other._terms:
            return self
        self._terms.extend(other._terms)
        self._guides.extend(other._guides)
        if self.pure_epsilon is not None and other.pure_epsilon is not None:
            self.pure_epsilon = (self.pure_epsilon + other.pure_epsilon) * (1.0 + _PURE_ROUND)
        else:
            self.pure_epsilon = None
        self._max_order = min(self._max_order, other._max_order)
        self._integers_first = all(spec is not None for _, _, spec in self._terms)
        self._values = {}
        return self

    def rdp(self, alpha: float | np.ndarray) -> np.ndarray:
        """Total RDP of everything composed so far at orders ``alpha``."""
        a = check_orders(alpha)
        flat = np.atleast_1d(a).ravel()
        total = np.zeros_like(flat)
        for fn, n, _ in self._terms:
            total = total + n * np.asarray(fn(flat), dtype=float).reshape(flat.shape)
        return total.reshape(np.shape(a))

    def _curve(self, a: np.ndarray) -> np.ndarray:
        # the search's own orders (flat, > 1, finite): no validation
        if len(self._terms) == 1:
            fn, n, _ = self._terms[0]
            return n * np.asarray(fn(a), dtype=float)
        return self.rdp(a)

    def _guide(self) -> CurveFn | None:
        """The composed estimate (sum of the terms' estimates), None unless every term has
        one: only to choose which orders the search evaluates."""
        if not self._guides or any(g is None for g in self._guides):
            return None
        pairs = [(cast(CurveFn, g), n)
                 for g, (_, n, _) in zip(self._guides, self._terms, strict=True)]

        def total(a: np.ndarray) -> np.ndarray:
            out = np.zeros(np.shape(a))
            for g, n in pairs:
                out = out + n * np.asarray(g(a), dtype=float)
            return out

        return total

    def get_epsilon_and_order(self, delta: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(eps, order): order is the RDP order used, nan where eps = 0 came from the
        total-variation bound and inf where the pure-DP epsilon was smaller."""
        if not self._terms:
            d = check_delta(delta)
            return np.zeros(d.shape), np.full(d.shape, np.nan)
        eps, order = optimal_epsilon(self._curve, delta, self.conversion, _memo=self._values,
                                     max_order=self._max_order,
                                     integers_first=self._integers_first, guide=self._guide())
        if self.pure_epsilon is not None:
            pure = eps > self.pure_epsilon
            eps = np.where(pure, self.pure_epsilon, eps)
            order = np.where(pure, np.inf, order)
        return eps, order

    def get_epsilon(self, delta: float | np.ndarray) -> float | np.ndarray:
        """Upper bound on epsilon at ``delta`` (float for a scalar delta)."""
        eps, _ = self.get_epsilon_and_order(delta)
        return float(eps) if np.ndim(delta) == 0 else eps

    def get_delta(self, epsilon: float | np.ndarray) -> float | np.ndarray:
        """Upper bound on delta at ``epsilon`` (float for a scalar epsilon)."""
        if not self._terms:
            e = check_epsilon(epsilon)
            out = np.zeros(e.shape)
        else:
            out, _ = self.get_delta_and_order(epsilon)
        return float(out) if np.ndim(epsilon) == 0 else out

    def get_delta_and_order(self, epsilon: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(delta, order): delta = 0 with order inf at eps >= the pure-DP epsilon (exact)."""
        e = check_epsilon(epsilon)
        if not self._terms:
            return np.zeros(e.shape), np.full(e.shape, np.nan)
        pure = (np.zeros(e.shape, dtype=bool) if self.pure_epsilon is None
                else e >= self.pure_epsilon)
        delta = np.zeros(e.shape)
        order = np.full(e.shape, np.inf)
        if not pure.all():
            d, o = optimal_delta(self._curve, e[~pure], self.conversion, _memo=self._values,
                                 max_order=self._max_order,
                                 integers_first=self._integers_first, guide=self._guide())
            delta[~pure], order[~pure] = d, o
        return delta, order

    def methods_at(self, alpha: float | np.ndarray) -> list[str]:
        """Names of the RDP methods giving the composed curve at the orders ``alpha``."""
        names: set[str] = set()
        a = np.atleast_1d(np.asarray(alpha, dtype=float))
        a = a[np.isfinite(a)]
        if not a.size:
            return []
        for _, _, spec in self._terms:
            if spec is None:
                names.add("user curve")
            elif len(chosen := one_tight(applicable_methods(*spec))) == 1:
                names.add(chosen[0].name)  # one method computes every order: no evaluation
            else:
                names.update(str(m) for m in rdp_curve(spec[0], spec[1], a, spec[2]).methods)
        return sorted(names)


# ------------------------------------------------------------------------------------------
# the run accountant "rdp"
# ------------------------------------------------------------------------------------------


def compositions(run) -> int:
    """How many one-step RDP results compose into the run: ``run.steps`` for per-step schemes
    (Poisson, without/with replacement, model splitting), the number of epochs for per-epoch
    schemes (balanced iteration, deterministic, shuffle), which must then be whole."""
    if run.scheme.per_epoch:
        per = run.scheme.steps_per_epoch
        if run.steps % per:
            raise NotApplicable(
                f"steps={run.steps} is not a whole number of epochs of {run.scheme} "
                f"({per} steps per epoch); the RDP accountant composes whole epochs"
            )
        return run.steps // per
    return run.steps


def _applies(run) -> bool:
    found = rdp_methods(run.mechanism, run.scheme, run.relation)
    return any(REGISTRY[name].in_best for name, _ in found)


class RdpRunAnalysis(RunAnalysis):
    """The "rdp" accountant's analysis of a run, or of any RdpAccountant (``acc``: e.g. the
    phases of a composition).  Capability: :meth:`rdp_accountant`."""

    def __init__(self, run=None, acc: RdpAccountant | None = None) -> None:
        self.acc = acc if acc is not None else RdpAccountant().compose(
            (run.mechanism, run.scheme, run.relation), compositions(run)
        )

    def _source(self, orders: np.ndarray) -> str:
        o = np.asarray(orders, dtype=float)
        parts = []
        if not np.isposinf(o).all():
            methods = self.acc.methods_at(o[~np.isposinf(o)])
            used = ", ".join(methods) if methods else "any (TV bound)"
            parts.append(f"RDP (methods: {used}) converted by {SOURCE_BALLE}")
        if np.isposinf(o).any():
            parts.append(SOURCE_PURE.format(eps=self.acc.pure_epsilon))
        return "; ".join(parts)

    def rdp_accountant(self) -> RdpAccountant:
        """A copy of the run's accountant (composing into it leaves this analysis as is)."""
        out = RdpAccountant(self.acc.conversion)
        return out.extend(self.acc)

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        eps, orders = self.acc.get_epsilon_and_order(delta)
        value = float(eps) if np.ndim(eps) == 0 else eps
        return Bound(value, "upper", self._source(orders)), None

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        out, orders = self.acc.get_delta_and_order(epsilon)
        value = float(out) if np.ndim(out) == 0 else out
        # delta = 0 above the max loss
        kind: Kind = "exact" if np.isposinf(orders).all() else "upper"
        return Bound(value, kind, self._source(orders)), None


@run_accountant(
    "rdp",
    _applies,
    "Rényi-DP composition of the best one-step RDP result, converted by Balle et al. 2020, Thm 21",
    capabilities=("rdp_accountant",),
)
def _build_rdp(run) -> RunAnalysis:
    return RdpRunAnalysis(run)

