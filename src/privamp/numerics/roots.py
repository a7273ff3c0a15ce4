"""Vectorised root finding for monotone functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

__all__ = ["bisect_monotone", "last_true"]


def bisect_monotone(
    f: Callable[[np.ndarray], np.ndarray],
    target: np.ndarray,
    lo: float | np.ndarray,
    hi: float | np.ndarray,
    *,
    increasing: bool,
    iterations: int = 200,
    xtol: float = 0.0,
    side: str = "hi",
) -> np.ndarray:
    """Solve f(x) = target elementwise for monotone f on [lo, hi] by bisection.

    Returns the end of the final bracket named by ``side``: with ``side="hi"`` the returned
    x satisfies f(x) <= target for decreasing f (f(x) >= target for increasing f), which is the
    sound choice when inverting an upper-bound curve.  The caller must make sure that the
    bracket contains the solution.
    """
    target = np.asarray(target, dtype=float)
    lo = np.broadcast_to(np.asarray(lo, dtype=float), target.shape).copy()
    hi = np.broadcast_to(np.asarray(hi, dtype=float), target.shape).copy()
    for _ in range(iterations):
        mid: Any = 0.5 * (lo + hi)
        if np.all(mid == lo) or np.all(mid == hi):
            break
        val = f(mid)
        below = val < target if increasing else val > target
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
        if xtol > 0 and np.all(hi - lo <= xtol):
            break
    return cast(np.ndarray, hi if side == "hi" else lo)


def last_true(pred: Callable[[float], bool], start: float, *, cap: float, rtol: float,
              iterations: int = 80) -> float:
    """The largest x >= ``start`` found with ``pred(x)`` true, for ``pred`` true up to some
    point and false beyond (e.g. "a lower bound on delta(x) exceeds the target"): doubling
    from ``max(2 start, 1)`` until ``pred`` fails or ``cap`` is passed, then bisection to a
    relative width ``rtol``.  Returns ``start`` if ``pred(start)`` is false; the returned x
    always satisfies ``pred`` (or is ``start``), which is the sound side when ``pred`` tests
    a certified lower bound.
    """
    if not pred(start):
        return start
    lo, hi = start, max(2.0 * start, 1.0)
    while pred(hi):
        lo, hi = hi, 2.0 * hi
        if hi > cap:
            break
    for _ in range(iterations):
        if hi - lo <= rtol * hi:
            break
        mid = 0.5 * (lo + hi)
        if pred(mid):
            lo = mid
        else:
            hi = mid
    return lo
