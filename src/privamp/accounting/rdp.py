"""Rényi-DP accounting: composition on an adaptive order grid and conversion to (eps, delta).

* Composition (Mironov 2017, Prop. 1): RDP curves of adaptively composed steps add, order by
  order; heterogeneous steps are summed on a common grid.
* RDP -> (eps, delta), used for every bound privamp reports: Balle et al. 2020, "Hypothesis
  testing interpretations and Rényi differential privacy", Thm 21 (= Canonne, Kamath,
  Steinke 2020, Prop. 12; Asoodeh et al. 2021):

      eps(delta) = min_a  rdp(a) + log((a - 1)/a) - (log delta + log a) / (a - 1).

  Inverting it order by order gives the profile bound

      delta(eps) = min_a  exp((a - 1)(rdp(a) - eps) + (a - 1) log(1 - 1/a) - log a).

  Both are also capped by the total-variation bound delta(0) = TV <= sqrt(1 - exp(-KL))
  <= sqrt(1 - exp(-rdp(a))) for any a > 1 (Bretagnolle-Huber; KL <= D_a), which gives eps = 0
  as soon as 1 - exp(-rdp(a)) <= delta^2.  Mironov 2017, Prop. 3
  (eps = rdp + log(1/delta)/(a - 1); delta = exp((a - 1)(rdp - eps))) is available for
  comparison (``conversion="mironov2017"``).
* The grid: ~100 orders with a - 1 log-spaced in [1e-3, ~1e4]; the optimum is then refined
  between its neighbours, and the grid is extended whenever the optimum sits at an edge, up
  to order 1e6 for a user's curve and 1e5 for privamp's one-step curves (several of which
  cost O(alpha) time and memory per order: binomial sums up to alpha).  At most 60 rounds
  of at most 11 new orders each: the search's cost is bounded.  Every order gives a valid
  bound, so refinement only tightens and the caps only cost tightness, never soundness.
* Pure DP: a step whose privacy loss is at most L (Laplace: k Delta / b; randomized
  response: log(theta / (1 - theta)); Poisson subsampling at rate q, add/remove or zero-out:
  max(log(1 - q + q e^L), -log(1 - q + q e^{-L})); a group of K: K times that, by group
  privacy of pure DP) makes T steps E = T L-DP: delta(eps) = 0 exactly for eps >= E and
  eps(delta) <= E for every delta (and D_a <= E at every order).  The accountant uses both.

dp_accounting (``RdpAccountant``) uses the same Thm 21 / Prop. 12 formula and the same
Bretagnolle-Huber shortcut, on a fixed grid of orders (1.1..10.9, 11..63, 128..1024, and
only orders > 1.01 for the Thm 21 branch); with the same curve, privamp's epsilon is therefore
<= dp_accounting's up to rounding (it searches a superset of orders, continuously).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .._validation import check_delta, check_epsilon, check_int, check_orders
from ..amplification.registry import REGISTRY, rdp_curve, rdp_methods
from ..errors import NotApplicable
from ..mechanisms import Laplace, Mechanism, RandomizedResponse
from ..results import Bound
from ..sampling import (
    AddRemove,
    BalancedIteration,
    Deterministic,
    Poisson,
    Relation,
    Scheme,
    Shuffle,
    ZeroOut,
)
from .registry import BoundPair, RunAnalysis, run_accountant

__all__ = [
    "DEFAULT_ORDERS",
    "compose_rdp",
    "eps_from_rdp",
    "delta_from_rdp",
    "optimal_epsilon",
    "optimal_delta",
    "RdpAccountant",
    "compositions",
    "pure_dp_epsilon",
]

#: ~100 default orders: a - 1 log-spaced from 1e-3 to 9999 (a from 1.001 to 1e4)
DEFAULT_ORDERS: np.ndarray = 1.0 + np.logspace(-3.0, np.log10(9999.0), 100)
_MIN_ORDER_GAP = 1e-9  # never go below a = 1 + 1e-9
#: largest order the search tries for a user's curve (a callable alpha -> rdp)
_MAX_ORDER = 1e6
#: largest order the search tries for privamp's one-step curves: several cost O(alpha) time
#: and memory per order (about 0.3 s and 50 MB per order at 1e5, 50 times that at 1e7)
_CURVE_MAX_ORDER = 1e5
_SEARCH_ROUNDS = 60
_ROUND = 1e-12  # relative upward rounding of the final conversions

CurveFn = Callable[[np.ndarray], np.ndarray]
CONVERSIONS = ("balle2020", "mironov2017")

SOURCE_BALLE = "Balle et al. 2020, Thm 21"
SOURCE_MIRONOV = "Mironov 2017, Prop 3"
SOURCE_PURE = (
    "pure DP: every step's privacy loss is bounded, the run is {eps:.6g}-DP (delta = 0 at "
    "epsilon >= it; Poisson steps: log(1 - q + q e^L) both ways, composed by adding)"
)


# ------------------------------------------------------------------------------------------
# plain vectorised conversions (orders along the last axis)
# ------------------------------------------------------------------------------------------
def compose_rdp(curves: Sequence[np.ndarray], counts: Sequence[int] | None = None) -> np.ndarray:
    """Sum of RDP curves evaluated on a common grid, ``counts[i]`` copies of ``curves[i]``
    (Mironov 2017, Prop. 1)."""
    counts = [1] * len(curves) if counts is None else list(counts)
    if len(counts) != len(curves):
        raise ValueError("counts must have one entry per curve")
    total = np.zeros(np.shape(curves[0]), dtype=float)
    for c, n in zip(curves, counts, strict=True):
        total = total + float(n) * np.asarray(c, dtype=float)
    return total


def _eps_table(
    alpha: np.ndarray, rdp: np.ndarray, delta: np.ndarray, conversion: str
) -> np.ndarray:
    """eps[d, k] for delta[d] at order alpha[k] (no minimisation)."""
    a = alpha[None, :]
    r = rdp[None, :]
    ld = np.log(delta)[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        if conversion == "balle2020":
            eps = r + np.log1p(-1.0 / a) - (ld + np.log(a)) / (a - 1.0)
        elif conversion == "mironov2017":
            eps = r - ld / (a - 1.0)
        else:
            raise ValueError(f"conversion must be one of {CONVERSIONS}, got {conversion!r}")
        # Bretagnolle-Huber: TV <= sqrt(1 - exp(-rdp)); eps = 0 when that is <= delta.
        tv_ok = -np.expm1(-r) <= (delta**2)[:, None]
    eps = np.where(np.isnan(eps), np.inf, eps)  # inf - inf at infinite RDP
    return np.where(tv_ok, 0.0, np.maximum(eps, 0.0))


def _log_delta_table(
    alpha: np.ndarray, rdp: np.ndarray, eps: np.ndarray, conversion: str
) -> np.ndarray:
    a = alpha[None, :]
    r = rdp[None, :]
    e = eps[:, None]
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if conversion == "balle2020":
            ld = (a - 1.0) * (r - e + np.log1p(-1.0 / a)) - np.log(a)
        elif conversion == "mironov2017":
            ld = (a - 1.0) * (r - e)
        else:
            raise ValueError(f"conversion must be one of {CONVERSIONS}, got {conversion!r}")
        tv = 0.5 * np.log(-np.expm1(-r))
    ld = np.where(np.isnan(ld), np.inf, ld)
    return np.minimum(np.minimum(ld, tv), 0.0)


def _check_curve(alpha: np.ndarray, rdp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validated flat (orders, RDP values) of one curve."""
    a = check_orders(alpha).ravel()
    r = np.asarray(rdp, dtype=float).ravel()
    if a.shape != r.shape:
        raise ValueError("alpha and rdp must have the same number of entries")
    if np.isnan(r).any() or (r < 0).any():
        raise ValueError("rdp must be >= 0 and not NaN")
    return a, r


def eps_from_rdp(
    alpha: np.ndarray, rdp: np.ndarray, delta: float | np.ndarray, conversion: str = "balle2020"
) -> tuple[np.ndarray, np.ndarray]:
    """Smallest epsilon over the given orders such that the RDP curve implies (eps, delta)-DP.

    Returns ``(eps, order)`` shaped like ``delta`` (order = the minimising order, nan where the
    Bretagnolle-Huber bound gave eps = 0).  Balle et al. 2020, Thm 21 (or Mironov 2017,
    Prop. 3), plus the total-variation shortcut; rounded up by 1e-12 relative.
    """
    a, r = _check_curve(alpha, rdp)
    d = check_delta(delta)
    table = _eps_table(a, r, d.ravel(), conversion)
    k = np.argmin(table, axis=1)
    eps = table[np.arange(table.shape[0]), k] * (1.0 + _ROUND)
    order = np.where(eps == 0.0, np.nan, a[k])
    return eps.reshape(d.shape), order.reshape(d.shape)


def delta_from_rdp(
    alpha: np.ndarray, rdp: np.ndarray, epsilon: float | np.ndarray, conversion: str = "balle2020"
) -> tuple[np.ndarray, np.ndarray]:
    """Smallest delta over the given orders implied at ``epsilon`` (the inversion of
    Balle et al. 2020, Thm 21, order by order, capped by sqrt(1 - exp(-rdp)) and 1).
    Returns ``(delta, order)`` shaped like ``epsilon``."""
    a, r = _check_curve(alpha, rdp)
    e = check_epsilon(epsilon)
    table = _log_delta_table(a, r, e.ravel(), conversion)
    k = np.argmin(table, axis=1)
    ld = table[np.arange(table.shape[0]), k]
    delta = np.minimum(np.exp(ld) * (1.0 + _ROUND), 1.0)
    return delta.reshape(e.shape), a[k].reshape(e.shape)


# ------------------------------------------------------------------------------------------
# adaptive order search
# ------------------------------------------------------------------------------------------
class _CurveCache:
    """Evaluates a curve at orders on demand, remembering every value."""

    def __init__(self, fn: CurveFn) -> None:
        self.fn = fn
        self.alpha = np.empty(0)
        self.rdp = np.empty(0)

    def add(self, alpha: np.ndarray) -> None:
        new = np.setdiff1d(np.unique(alpha), self.alpha)
        new = new[(new > 1.0) & np.isfinite(new)]
        if new.size:
            vals = np.asarray(self.fn(new), dtype=float).reshape(new.shape)
            if np.isnan(vals).any():
                raise RuntimeError("internal error: an RDP curve returned NaN; please report")
            a = np.concatenate([self.alpha, new])
            r = np.concatenate([self.rdp, vals])
            order = np.argsort(a)
            self.alpha, self.rdp = a[order], r[order]


def _search(cache: _CurveCache, objective: Callable[[np.ndarray, np.ndarray], np.ndarray],
            max_order: float = _MAX_ORDER) -> None:
    """Refine ``cache`` so that, for the scalar objective(alpha, rdp) (one value per order,
    to be minimised), the best order is interior and its neighbours are close.  Orders stay
    below ``max_order``; at most ``_SEARCH_ROUNDS`` rounds of at most 11 new orders each."""
    cache.add(DEFAULT_ORDERS[DEFAULT_ORDERS <= max_order])
    for _ in range(_SEARCH_ROUNDS):
        vals = objective(cache.alpha, cache.rdp)
        if not np.isfinite(vals).any():
            return
        i = int(np.argmin(vals))
        a = cache.alpha
        if i == 0 and a[0] - 1.0 > 2 * _MIN_ORDER_GAP:
            lo = max(_MIN_ORDER_GAP, (a[0] - 1.0) * 1e-3)
            cache.add(1.0 + np.geomspace(lo, a[0] - 1.0, 12)[:-1])
            continue
        if i == a.size - 1 and a[-1] < max_order:
            cache.add(np.geomspace(a[-1], min(a[-1] * 100.0, max_order), 12)[1:])
            continue
        if 0 < i < a.size - 1:
            lo, hi = a[i - 1] - 1.0, a[i + 1] - 1.0
            if hi / lo < 1.0 + 1e-5:
                return
            cache.add(1.0 + np.geomspace(lo, hi, 10)[1:-1])
            new_vals = objective(cache.alpha, cache.rdp)
            if np.nanmin(new_vals) >= vals[i] * (1.0 - 1e-10):
                return
            continue
        return


def optimal_epsilon(
    curve: CurveFn, delta: float | np.ndarray, conversion: str = "balle2020", *, _cache=None,
    max_order: float = _MAX_ORDER,
) -> tuple[np.ndarray, np.ndarray]:
    """(eps, order) for an RDP curve given as a function of the orders, with the order grid
    refined per delta (see module docstring); orders at most ``max_order``."""
    d = check_delta(delta)
    cache = _CurveCache(curve) if _cache is None else _cache
    for dv in np.unique(d.ravel()):
        _search(cache, lambda a, r, dv=dv: _eps_table(a, r, np.array([dv]), conversion)[0],
                max_order)
    return eps_from_rdp(cache.alpha, cache.rdp, d, conversion)


def optimal_delta(
    curve: CurveFn, epsilon: float | np.ndarray, conversion: str = "balle2020", *, _cache=None,
    max_order: float = _MAX_ORDER,
) -> tuple[np.ndarray, np.ndarray]:
    """(delta, order) for an RDP curve at ``epsilon``, order grid refined per epsilon;
    orders at most ``max_order``."""
    e = check_epsilon(epsilon)
    cache = _CurveCache(curve) if _cache is None else _cache
    for ev in np.unique(e.ravel()):
        _search(cache,
                lambda a, r, ev=ev: _log_delta_table(a, r, np.array([ev]), conversion)[0],
                max_order)
    return delta_from_rdp(cache.alpha, cache.rdp, e, conversion)


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
        step = max(np.log1p(q * np.expm1(L)), -np.log1p(q * np.expm1(-L)))
    return float(relation.group * step * (1.0 + _PURE_ROUND))


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
        self._cache = _CurveCache(self._curve)  # total curve values, reset by compose
        #: pure-DP epsilon of everything composed (None: unknown), see pure_dp_epsilon
        self.pure_epsilon: float | None = 0.0
        self._max_order = _MAX_ORDER

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
            rdp_curve(mech, scheme, 2.0, relation)  # raises ValueError if nothing applies

            def fn(a: np.ndarray, mech=mech, scheme=scheme, relation=relation) -> np.ndarray:
                return rdp_curve(mech, scheme, a, relation).epsilon

            self._terms.append((fn, n, (mech, scheme, relation)))
            pure = pure_dp_epsilon(mech, scheme, relation)
            self._max_order = min(self._max_order, _CURVE_MAX_ORDER)
        elif callable(step):
            self._terms.append((step, n, None))
            pure = None
        else:
            raise ValueError("step must be a callable alpha -> rdp or a (mechanism, scheme) tuple")
        if self.pure_epsilon is not None and pure is not None:
            self.pure_epsilon = (self.pure_epsilon + n * pure) * (1.0 + _PURE_ROUND)
        else:
            self.pure_epsilon = None
        self._cache = _CurveCache(self._curve)
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
        return self.rdp(a)

    def get_epsilon_and_order(self, delta: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(eps, order): order is the RDP order used, nan where eps = 0 came from the
        total-variation bound and inf where the pure-DP epsilon was smaller."""
        if not self._terms:
            d = check_delta(delta)
            return np.zeros(d.shape), np.full(d.shape, np.nan)
        eps, order = optimal_epsilon(self._curve, delta, self.conversion, _cache=self._cache,
                                     max_order=self._max_order)
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
            d, o = optimal_delta(self._curve, e[~pure], self.conversion, _cache=self._cache,
                                 max_order=self._max_order)
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
            else:
                names.update(str(m) for m in rdp_curve(spec[0], spec[1], a, spec[2]).methods)
        return sorted(names)


# ------------------------------------------------------------------------------------------
# the run accountant "rdp"
# ------------------------------------------------------------------------------------------
_PER_EPOCH = (BalancedIteration, Deterministic, Shuffle)


def compositions(run) -> int:
    """How many one-step RDP results compose into the run: ``run.steps`` for per-step schemes
    (Poisson, without/with replacement, model splitting), the number of epochs for per-epoch
    schemes (balanced iteration, deterministic, shuffle), which must then be whole."""
    if isinstance(run.scheme, _PER_EPOCH):
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


class _RdpRun(RunAnalysis):
    def __init__(self, run) -> None:
        self.acc = RdpAccountant().compose(
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

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        eps, orders = self.acc.get_epsilon_and_order(delta)
        value = float(eps) if np.ndim(eps) == 0 else eps
        return Bound(value, "upper", self._source(orders)), None

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        out, orders = self.acc.get_delta_and_order(epsilon)
        value = float(out) if np.ndim(out) == 0 else out
        kind = "exact" if np.isposinf(orders).all() else "upper"  # delta = 0 above the max loss
        return Bound(value, kind, self._source(orders)), None


@run_accountant(
    "rdp",
    _applies,
    "Rényi-DP composition of the best one-step RDP result, converted by Balle et al. 2020, Thm 21",
)
def _build_rdp(run) -> RunAnalysis:
    return _RdpRun(run)
