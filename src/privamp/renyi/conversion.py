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

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._validation import check_delta, check_epsilon, check_orders
from .floors import eps_floor, log_delta_floor
from .guide import guided, parabola_vertex

__all__ = [
    "DEFAULT_ORDERS",
    "compose_rdp",
    "eps_from_rdp",
    "delta_from_rdp",
    "optimal_epsilon",
    "optimal_delta",
    "eps_floor",
    "log_delta_floor",
]


#: ~100 default orders: a - 1 log-spaced from 1e-3 to 9999 (a from 1.001 to 1e4)
DEFAULT_ORDERS: np.ndarray = 1.0 + np.logspace(-3.0, np.log10(9999.0), 100)


_MIN_ORDER_GAP = 1e-9  # never go below a = 1 + 1e-9


#: largest order the search tries for a user's curve (a callable alpha -> rdp)
MAX_ORDER = 1e6


#: largest order the search tries for privamp's one-step curves: several cost O(alpha) time
#: and memory per order (about 0.3 s and 50 MB per order at 1e5, 50 times that at 1e7)
CURVE_MAX_ORDER = 1e5



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


_LOG_TINY = math.log(np.finfo(float).tiny)  # exp below this is subnormal
_SUBNORMAL = math.nextafter(0.0, 1.0)


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
    delta = np.exp(ld) * (1.0 + _ROUND)
    # below the normal range exp's result is subnormal (absolute error <= 2^-1075) or 0: one
    # smallest subnormal more keeps a positive true delta's bound above it (review session 11)
    delta = np.where(np.isfinite(ld) & (ld < _LOG_TINY), delta + _SUBNORMAL, delta)
    delta = np.minimum(delta, 1.0)
    return delta.reshape(e.shape), a[k].reshape(e.shape)


# ------------------------------------------------------------------------------------------
# adaptive order search
# ------------------------------------------------------------------------------------------
class _CurveCache:
    """The orders one search has evaluated, and their values.  ``memo`` (order -> value,
    shareable between searches of one curve) saves re-evaluating an order; every search
    starts from no orders, so its result never depends on earlier searches."""

    def __init__(self, fn: CurveFn, memo: dict[float, float] | None = None) -> None:
        self.fn = fn
        self.memo: dict[float, float] = {} if memo is None else memo
        self.alpha = np.empty(0)
        self.rdp = np.empty(0)

    def add(self, alpha: np.ndarray) -> None:
        # a few orders at a time: Python sets beat numpy's set routines at this size
        have = set(self.alpha.tolist())
        keys = sorted({x for x in np.ravel(alpha).tolist()
                       if x not in have and 1.0 < x < math.inf})
        if keys:
            miss = [x for x in keys if x not in self.memo]
            if miss:
                vals = np.asarray(self.fn(np.array(miss)), dtype=float).reshape(len(miss))
                if np.isnan(vals).any():
                    raise RuntimeError("internal error: an RDP curve returned NaN; please report")
                self.memo.update(zip(miss, vals.tolist(), strict=True))
            a = np.concatenate([self.alpha, keys])
            r = np.concatenate([self.rdp, [self.memo[x] for x in keys]])
            order = np.argsort(a)
            self.alpha, self.rdp = a[order], r[order]


def _search(cache: _CurveCache, objective: Callable[[np.ndarray, np.ndarray], np.ndarray],
            max_order: float = MAX_ORDER) -> None:
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


#: integer orders tried first by :func:`_search_integers_first`: 2..64, dp-accounting's
#: 128..1024, then ~1.4x apart up to 2e4 (higher orders only if the search moves there)
_INTEGER_ORDERS: np.ndarray = np.unique(np.concatenate([
    np.arange(2.0, 65.0), [128.0, 256.0, 512.0, 1024.0], np.round(np.geomspace(64.0, 2e4, 16))]))


#: orders below 2, tried only when the best integer order is 2
_LOW_ORDERS: np.ndarray = 1.0 + np.geomspace(1e-4, 0.9, 12)


#: above this order the search tries integer orders only: no peer's grid reaches past 64
#: but dp-accounting's 128..1024, integers all, and between two integers n, n + 1 that high
#: the curve's certified value (a quadrature) gains ~1e-6 relative over the chord of the
#: convex CGF through them, at ~10x the cost of both
_PEER_MAX_ORDER = 64.0


#: evenly spaced orders tried between the best order's neighbours below order 2
_REFINE_POINTS = 15


#: a batch of more real orders than this is screened in two rounds (every third first)
_COARSE_FIRST = 12


#: integer orders tried between the best order's neighbours when they are above 11
_HIGH_BRACKET_POINTS = 24


#: points of the chord search between the best order's neighbours
_CHORD_POINTS = 257


def _chord_bound(cache: _CurveCache, x: np.ndarray) -> np.ndarray:
    """Upper bounds on the curve at orders ``x`` inside the cached range: the CGF
    (a - 1) rdp(a) of a Rényi divergence is convex in a (van Erven & Harremoës 2014, Cor. 2),
    so its chord between two cached orders (upper bounds there) bounds it between them."""
    # K(1) = 0 (the CGF of a Rényi divergence vanishes at order 1): the chord from there
    a, k = _anchored(cache)
    with np.errstate(invalid="ignore"):
        return np.interp(x, a, k) / (x - 1.0)


def _anchored(cache: _CurveCache) -> tuple[np.ndarray, np.ndarray]:
    """(orders, CGF (a - 1) rdp(a)) of the cache with the exact point K(1) = 0 in front
    (log E[L^0] = 0 for any pair with finite KL: the curve's limit at order 1)."""
    a, k = cache.alpha, (cache.alpha - 1.0) * cache.rdp
    if a.size and a[0] > 1.0:
        a, k = np.concatenate([[1.0], a]), np.concatenate([[0.0], k])
    return a, k


def _bracket(cache: _CurveCache, objective: Callable) -> tuple[float, float, float]:
    """(lo, best, hi): the best cached order and its neighbours (lo: halfway to 1 at the
    first), and the best order of the chord bound between them."""
    vals = objective(cache.alpha, cache.rdp)
    i = int(np.argmin(vals))
    a = cache.alpha
    lo = a[i - 1] if i > 0 else 1.0 + 0.01 * (a[0] - 1.0)
    hi = a[min(i + 1, a.size - 1)]
    x = np.linspace(lo, hi, _CHORD_POINTS)
    chord = objective(x, _chord_bound(cache, x))
    best = float(x[int(np.nanargmin(chord))]) if np.isfinite(chord).any() else float(a[i])
    return float(lo), best, float(hi)


def _search_integers_first(cache: _CurveCache, objective: Callable, max_order: float,
                           guide: CurveFn | None = None) -> None:
    """Order search for curves whose integer orders are cheap (privamp's one-step curves:
    exact binomial sums) and real orders dear (certified quadrature): one batch of real orders.

    Integer orders first (:data:`_INTEGER_ORDERS`, which hold dp-accounting's integers).
    Between the best order's neighbours (from 1 when it is 2): every order of
    dp-accounting's grid (1.1..10.9 by 0.1), the optimum of the chord bound
    (:func:`_chord_bound`, free), the vertex of the parabola through the best integer and
    its neighbours and, below 2, :data:`_LOW_ORDERS`, in one evaluation; above 11 the
    integers there.  Then at most one more small batch (:func:`_refine_best`).  So the
    orders searched hold every order of dp-accounting's grid in the best bracket: for an
    objective unimodal over the orders, the result is at most dp-accounting's on the same
    curve, and below it whenever one of the off-grid orders wins.  Every batch of real
    orders is one call of the curve (the certified quadrature's cost is mostly per call);
    about 100 integer and <= 50 real orders per delta, in <= 2 calls, against ~100-500 real
    ones for :func:`_search`.

    With a ``guide`` (an estimate of the curve, cheap at real orders; see
    :func:`~privamp.renyi.guide.guided`) the real orders of the best bracket are one
    evaluation of the curve at the guide's optimum.
    """
    ints = _INTEGER_ORDERS[_INTEGER_ORDERS <= max_order]
    # 2..64 and the next order up, then the higher ones only where they can win: the best
    # order and its neighbours are those of evaluating them all (a skipped order cannot be
    # the best, and the best's upper neighbour above 64 is evaluated or itself skipped only
    # when a lower one wins), while a large order costs ~O(order) time
    cut = min(int(np.searchsorted(ints, 64.0, side="right")) + 1, ints.size)
    cache.add(ints[:cut])
    if not np.isfinite(objective(cache.alpha, cache.rdp)).any():
        cache.add(ints[cut:])
        if not np.isfinite(objective(cache.alpha, cache.rdp)).any():
            return
    else:
        _add_higher_if_can_win(cache, objective, ints[cut:])
    lo, best, hi = _bracket(cache, objective)
    if lo < 2.0:  # the best integer is 2: dp-accounting's orders from 1.1 up
        lo = 1.0
    if guide is not None and hi <= _PEER_MAX_ORDER and guided(cache, objective, guide, lo, hi):
        return
    if lo >= _PEER_MAX_ORDER:  # above every peer's grid: integers only (see below)
        _refine_integers(cache, objective, max_order)
        return
    grid = np.arange(np.ceil(lo * 10.0), np.floor(hi * 10.0) + 1.0) / 10.0
    grid = grid[(grid >= 1.1) & (grid <= 10.9)]
    if hi > 11.0:
        grid = np.append(grid, np.unique(np.round(np.linspace(lo, hi, _HIGH_BRACKET_POINTS))))
    vertex = _vertex(cache, objective)
    new = np.append(grid, [best, vertex])
    if lo < 2.0:  # below the first integer: one batch with the low orders
        new = np.append(new, _LOW_ORDERS)
    new = np.unique(np.round(new[(new > 1.0) & (new <= max_order)], 12))
    if new.size > _COARSE_FIRST and not (new == np.round(new)).all():
        # every third order first: their values tighten the floors of the rest (real
        # orders cost a certified quadrature each)
        _add_if_can_win(cache, objective, new[1::3])
    _add_if_can_win(cache, objective, new)
    _refine_best(cache, objective, max_order, always=lo < 2.0)


def _refine_best(cache: _CurveCache, objective: Callable, max_order: float, always: bool
                 ) -> None:
    """One batch around the best cached order when it is a multiple of 0.1 (an order of
    dp-accounting's grid, where equal values would leave privamp's upward rounding looser
    by ~1e-12) or ``always``: the parabola vertex (:func:`_vertex`), and 5% and 50% of the
    way to each neighbour (the objective can be very asymmetric around an integer where the
    curve steepens); ``always``, 15 evenly spaced orders between the neighbours and the
    optimum of the chord bound there too."""
    vals = objective(cache.alpha, cache.rdp)
    i = int(np.argmin(vals))
    a = cache.alpha
    if np.isfinite(vals[i]) and a[i] > _PEER_MAX_ORDER:
        _refine_integers(cache, objective, max_order)
        return
    if not np.isfinite(vals[i]) or (
            not always and abs(a[i] * 10.0 - round(a[i] * 10.0)) > 1e-9):
        return
    near = [a[j] for j in (i - 1, i + 1) if 0 <= j < a.size]
    new: Any = [_vertex(cache, objective)] + [a[i] + t * (n - a[i]) for n in near
                                              for t in (0.05, 0.5)]
    if always and 0 < i < a.size - 1:  # coarse neighbours: a few evenly spaced orders and
        # the chord bound's optimum too
        new += np.linspace(a[i - 1], a[i + 1], _REFINE_POINTS + 2)[1:-1].tolist()
        new.append(_bracket(cache, objective)[1])
    new = np.array(new)
    _add_if_can_win(cache, objective, np.round(new[(new > 1.0) & (new <= max_order)], 12))


def _refine_integers(cache: _CurveCache, objective: Callable, max_order: float) -> None:
    """Above :data:`_PEER_MAX_ORDER`: integer orders between the best cached order and its
    neighbours, 9 evenly spaced (rounded) and 7 next to the vertex of the parabola through
    the three in log(a - 1) (:func:`_vertex`) per round, or all of them when at most 63 or when
    none of the 9 can win (at most 256), until the neighbours are adjacent integers (at most 12
    rounds; integer orders are cheap exact sums)."""
    every = False
    for _ in range(12):
        vals = objective(cache.alpha, cache.rdp)
        i = int(np.argmin(vals))
        a = cache.alpha
        lo, hi = a[max(i - 1, 0)], a[min(i + 1, a.size - 1)]
        every = every or hi - lo <= 64
        if every and hi - lo > 256:
            return
        grid = np.arange(lo + 1.0, hi) if every else np.round(np.linspace(lo, hi, 9))
        v = _vertex(cache, objective, log_scale=True)  # and the integers next to the vertex
        if not every and math.isfinite(v):
            grid = np.append(grid, np.round(v) + np.arange(-3.0, 4.0))
        new = np.setdiff1d(grid, a)
        new = new[(new > 1.0) & (new <= max_order)]
        if not new.size:
            return
        size = cache.alpha.size
        _add_if_can_win(cache, objective, new)
        if cache.alpha.size == size:
            if every:
                return
            every = True  # none of the 9 can win: every integer between, next round


def _vertex(cache: _CurveCache, objective: Callable, log_scale: bool = False) -> float:
    """The vertex of the parabola through the objective at the best cached order and its
    neighbours: where the continuous optimum likely is (only a choice of order to evaluate;
    nan when the best order is at an end or the parabola has no interior minimum).
    ``log_scale``: the parabola in log(a - 1) (the objective ~ c a + d / a at high orders is
    symmetric there, very asymmetric in a)."""
    vals = objective(cache.alpha, cache.rdp)
    i = int(np.argmin(vals))
    if i == 0 or i == vals.size - 1:
        return math.nan
    if not log_scale:
        return parabola_vertex(cache.alpha[i - 1 : i + 2], vals[i - 1 : i + 2])
    v = parabola_vertex(np.log(cache.alpha[i - 1 : i + 2] - 1.0), vals[i - 1 : i + 2])
    return 1.0 + math.exp(v) if math.isfinite(v) else v


#: higher orders are screened and evaluated at most this many at a time, and more than one
#: only while their sum is at most _HIGHER_BUDGET (a sum's cost grows with its order)
_HIGHER_CHUNK = 8
_HIGHER_BUDGET = 9000.0


def _add_higher_if_can_win(cache: _CurveCache, objective: Callable, orders: np.ndarray
                           ) -> None:
    """Add those of the increasing ``orders`` (all above the cached ones) that can win
    (:func:`_add_if_can_win`), then the best order's neighbours among cached and ``orders``
    until both are cached: the best order and its neighbours are then those of evaluating
    every order (a skipped order cannot beat the best), so the search goes on exactly as it
    would have."""
    orders = np.asarray(orders, dtype=float)
    full = np.union1d(cache.alpha, orders)
    # one screening of them all first: an order ruled out by a floor now stays ruled out
    # (the floor is a valid lower bound and the best cached value only decreases)
    if orders.size:
        orders = orders[_can_win(cache, objective, orders)]
    # in ascending chunks: each chunk's values extend the convex CGF's chords, whose floors
    # then rule out more of the (dearest) highest orders; an order costs ~its size, a call
    # ~that of 4000 orders' worth of terms, so cheap orders go together
    start = 0
    while start < orders.size:
        stop = start + 1
        while (stop < orders.size and stop - start < _HIGHER_CHUNK
               and orders[start : stop + 1].sum() <= _HIGHER_BUDGET):
            stop += 1
        _add_if_can_win(cache, objective, orders[start:stop])
        start = stop
    while True:
        b = cache.alpha[int(np.argmin(objective(cache.alpha, cache.rdp)))]
        j = int(np.searchsorted(full, b))
        near = full[max(j - 1, 0) : j + 2]
        missing = np.setdiff1d(near, cache.alpha)
        if not missing.size:
            return
        cache.add(missing)


def _add_if_can_win(cache: _CurveCache, objective: Callable, orders: np.ndarray) -> None:
    """Evaluate the curve only at those ``orders`` whose objective can beat the best one
    cached: the objective grows with the RDP value, so its value at a floor of the curve
    (:func:`_tangent_floor`) bounds it from below."""
    orders = np.asarray(orders, dtype=float)
    if orders.size:
        cache.add(orders[_can_win(cache, objective, orders)])


def _can_win(cache: _CurveCache, objective: Callable, orders: np.ndarray) -> np.ndarray:
    """Which ``orders`` may beat the best cached one (their objective at the floor of the
    curve, :func:`_tangent_floor`, is below the best cached objective)."""
    return objective(orders, _tangent_floor(cache, orders)) < np.min(
        objective(cache.alpha, cache.rdp))


def _tangent_floor(cache: _CurveCache, x: np.ndarray) -> np.ndarray:
    """Lower bounds on a Rényi curve at orders ``x`` inside the cached range (ignoring the
    ~1e-11 relative rounding of the cached values: used only to choose orders to evaluate).
    The CGF K(a) = (a - 1) rdp(a) is convex (van Erven & Harremoës 2014), so it lies above
    the extensions of the chords next to x's cell [a_i, a_i+1]; rdp is nondecreasing."""
    a, k = _anchored(cache)
    rdp = np.concatenate([[0.0], cache.rdp]) if a.size > cache.alpha.size else cache.rdp
    raw = np.searchsorted(a, x, side="right") - 1
    i = np.clip(raw, 0, a.size - 1)
    j = np.where(raw < 0, 0, np.minimum(i + 1, a.size - 1))  # below the range: chord a0, a1
    floor = np.zeros(np.shape(x))
    with np.errstate(divide="ignore", invalid="ignore"):
        left = (i >= 1) & (raw >= 0)
        sl = (k[i] - k[np.maximum(i - 1, 0)]) / (a[i] - a[np.maximum(i - 1, 0)])
        floor = np.where(left, np.maximum(floor, k[i] + (x - a[i]) * sl), floor)
        right = j + 1 <= a.size - 1
        jj = np.minimum(j + 1, a.size - 1)
        sr = (k[jj] - k[j]) / (a[jj] - a[j])
        floor = np.where(right & ((j > i) | (raw < 0)),
                         np.maximum(floor, k[j] - (a[j] - x) * sr), floor)
        out = np.maximum(np.nan_to_num(floor / (x - 1.0), nan=0.0), np.where(
            x >= a[i], rdp[i], 0.0))
    return np.maximum(out, 0.0)


def optimal_epsilon(
    curve: CurveFn, delta: float | np.ndarray, conversion: str = "balle2020", *,
    _memo: dict[float, float] | None = None, max_order: float = MAX_ORDER,
    integers_first: bool = False, guide: CurveFn | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(eps, order) for an RDP curve given as a function of the orders, with the order grid
    refined per delta (see module docstring); orders at most ``max_order``.
    ``integers_first``: the search of :func:`_search_integers_first` (with ``guide``, an
    estimate of ``curve`` used only to choose orders, see
    :func:`~privamp.renyi.guide.guided`).  Each delta is searched on its own (its answer
    is that of a scalar query, whatever else is asked);
    ``_memo`` (order -> value of ``curve``) saves re-evaluations across searches."""
    d = check_delta(delta)
    memo: dict[float, float] = {} if _memo is None else _memo
    search: Callable[..., Any] = _search_integers_first if integers_first else _search
    extra = {"guide": guide} if integers_first and guide is not None else {}
    eps, order = np.empty(d.shape), np.empty(d.shape)
    for dv in np.unique(d.ravel()):
        cache = _CurveCache(curve, memo)
        search(cache, lambda a, r, dv=dv: _eps_table(a, r, np.array([dv]), conversion)[0],
               max_order, **extra)
        e, o = eps_from_rdp(cache.alpha, cache.rdp, dv, conversion)
        eps[d == dv], order[d == dv] = e, o
    return eps, order


def optimal_delta(
    curve: CurveFn, epsilon: float | np.ndarray, conversion: str = "balle2020", *,
    _memo: dict[float, float] | None = None, max_order: float = MAX_ORDER,
    integers_first: bool = False, guide: CurveFn | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(delta, order) for an RDP curve at ``epsilon``, order grid refined per epsilon (each
    on its own, as :func:`optimal_epsilon`); orders at most ``max_order``."""
    e = check_epsilon(epsilon)
    memo: dict[float, float] = {} if _memo is None else _memo
    search: Callable[..., Any] = _search_integers_first if integers_first else _search
    extra = {"guide": guide} if integers_first and guide is not None else {}
    delta, order = np.empty(e.shape), np.empty(e.shape)
    for ev in np.unique(e.ravel()):
        cache = _CurveCache(curve, memo)
        search(cache,
               lambda a, r, ev=ev: _log_delta_table(a, r, np.array([ev]), conversion)[0],
               max_order, **extra)
        dl, o = delta_from_rdp(cache.alpha, cache.rdp, ev, conversion)
        delta[e == ev], order[e == ev] = dl, o
    return delta, order
