"""The guided step of the RDP order search (:mod:`privamp.renyi.conversion`): an estimate of
the curve (cheap, no guarantee) picks the one real order worth a certified evaluation in the
best bracket of integer orders.  Only the choice of orders depends on the estimate; every
value reported is the curve's own, so soundness never rests on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = ["guided", "parabola_vertex"]


#: orders of the guide's scan of the best bracket (evenly spaced; near 1 also log-spaced)
_GUIDE_POINTS = 32


#: orders of the second, finer scan between the best scanned order's neighbours
_FINE_POINTS = 17


#: the curve's value at the guide's optimum must agree with the guide to this (relative) for
#: the guided search to stop there; otherwise the search goes on unguided
_GUIDE_AGREE = 1e-6


def guided(cache, objective: Callable, guide: Callable[[np.ndarray], np.ndarray], lo: float,
           hi: float) -> bool:
    """Real orders of the bracket (lo, hi) of a search's ``cache`` (orders ``alpha``, values
    ``rdp``, ``add(orders)`` evaluates the curve) from a guide (an estimate of the curve, no
    guarantee): the guide's objective on a scan of the bracket, the vertex of the parabola
    through its best point and neighbours, and one evaluation of the curve there.  True (the
    search is done) when the curve agrees with the guide at that order (so the guide located
    the continuous optimum, which beats every order of any fixed grid in the bracket, up to
    the curve's ~1e-11 rounding) or the guide puts the optimum at the best integer; False
    (nothing decided: the unguided search goes on) otherwise.  Only the choice of orders
    depends on the guide: every value reported is the curve's own.

    Args:
        cache: the search's evaluated orders (alpha, rdp sorted; add(orders)).
        objective: objective(orders, rdp) -> values to minimise.
        guide: orders -> estimated curve values.
        lo, hi: the bracket (the best integer order's neighbours; lo = 1 below 2).

    Returns:
        whether the search is done.
    """
    x = np.linspace(lo, hi, _GUIDE_POINTS)[1:-1]
    if lo < 2.0:
        x = np.union1d(x, 1.0 + np.geomspace(1e-4, 0.5, _GUIDE_POINTS // 3) * (hi - 1.0))
    g = np.asarray(guide(x), dtype=float)
    if not np.isfinite(g).all():
        return False
    vals = objective(x, g)
    i = int(np.argmin(vals))
    if 0 < i < x.size - 1:  # a finer scan between the best point's neighbours
        x = np.linspace(x[i - 1], x[i + 1], _FINE_POINTS)
        g = np.asarray(guide(x), dtype=float)
        if not np.isfinite(g).all():
            return False
        vals = objective(x, g)
        i = int(np.argmin(vals))
    star = float(x[i])
    if 0 < i < x.size - 1:
        v = parabola_vertex(x[i - 1 : i + 2], vals[i - 1 : i + 2])
        star = v if math.isfinite(v) else star
    best_cached = float(np.min(objective(cache.alpha, cache.rdp)))
    at = np.array([star])
    est = float(objective(at, np.asarray(guide(at), dtype=float))[0])
    if star == round(star) or est >= best_cached:
        return True  # the guide's optimum is the best integer (cached, exact)
    cache.add(at)
    k = int(np.searchsorted(cache.alpha, star))
    got = float(objective(cache.alpha[k : k + 1], cache.rdp[k : k + 1])[0])
    return abs(got - est) <= _GUIDE_AGREE * max(abs(got), 1e-12)


def parabola_vertex(x: np.ndarray, f: np.ndarray) -> float:
    """The vertex of the parabola through (x_k, f_k), k = 0..2, if inside (x_0, x_2), or nan."""
    if not np.isfinite(f).all():
        return math.nan
    x0, x1, x2 = x
    f0, f1, f2 = f
    num = (x1 - x0) ** 2 * (f1 - f2) - (x1 - x2) ** 2 * (f1 - f0)
    den = (x1 - x0) * (f1 - f2) - (x1 - x2) * (f1 - f0)
    if not den or not np.isfinite(num / den):
        return math.nan
    v = x1 - 0.5 * num / den
    return float(v) if x0 < v < x2 else math.nan
