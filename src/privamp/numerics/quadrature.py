"""Log-space quadrature of positive 1-D integrands, vectorised over a batch of parameters.

Everything here integrates ``exp(f(x))`` for a log-integrand ``f`` that may take huge or tiny
values (``-inf`` allowed), one integral per *row* (e.g. one Rényi order per row).  ``f``
receives an array ``x`` of shape ``(rows, k)`` and returns log-values of the same shape; the
parameters of row ``i`` live in the caller's closure as arrays of shape ``(rows, 1)``.

Building blocks:

* :func:`log_quad` — composite Gauss–Legendre on given panels, with an error estimate obtained
  by repeating the rule on the halved panels (the returned value is the finer rule; the error
  estimate is ``|fine - coarse|``, which over-estimates the error of the finer rule for the
  smooth, analytic integrands met in Rényi-divergence computations).
* :func:`uniform_edges`, :func:`graded_edges` — panel edges: uniform panels on windows, or
  panels graded geometrically toward chosen points (endpoints where the integrand is steep).
* :func:`level_crossing` — where a log-integrand that decreases away from a located mode first
  drops below a level (bracket expansion, then bisection), to choose integration windows.

No privacy words here; :mod:`privamp.theorems.mironov2019` uses these for mixture divergences.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .logspace import logsubexp, logsumexp

__all__ = [
    "QuadResult",
    "gauss_legendre",
    "log_quad",
    "uniform_edges",
    "graded_edges",
    "level_crossing",
]

LogIntegrand = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class QuadResult:
    """``log_value``: log of the (finer) quadrature value; ``log_error``: log of the error
    estimate.  :attr:`log_upper` = log(value + error), the value rounded up."""

    log_value: np.ndarray
    log_error: np.ndarray

    @property
    def log_upper(self) -> np.ndarray:
        return np.logaddexp(self.log_value, self.log_error)


@lru_cache(maxsize=16)
def gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes in (0, 1) and weights (summing to 1) of the n-point Gauss–Legendre rule on [0, 1]."""
    x, w = np.polynomial.legendre.leggauss(n)
    return (x + 1.0) / 2.0, w / 2.0


def _log_panel_sum(logf: LogIntegrand, edges: np.ndarray, active: np.ndarray, n: int) -> np.ndarray:
    t, w = gauss_legendre(n)
    a = edges[:, :-1]
    width = edges[:, 1:] - a  # (rows, P)
    x = a[:, :, None] + width[:, :, None] * t[None, None, :]  # (rows, P, n)
    rows, panels = a.shape
    vals = np.asarray(logf(x.reshape(rows, panels * n)), dtype=float).reshape(rows, panels, n)
    with np.errstate(divide="ignore"):
        logw = np.log(width)[:, :, None] + np.log(w)[None, None, :]
    terms = np.where(active[:, :, None] & (width[:, :, None] > 0), vals + logw, -np.inf)
    return logsumexp(terms.reshape(rows, panels * n), axis=1)


def log_quad(
    logf: LogIntegrand,
    edges: np.ndarray,
    active: np.ndarray | None = None,
    nodes: int = 12,
) -> QuadResult:
    """log of the integral of exp(logf) over the panels ``edges`` (shape ``(rows, P+1)``,
    non-decreasing along each row).  ``active`` (shape ``(rows, P)``) switches panels off
    (e.g. gaps between windows).  Rows whose integrand vanishes give ``-inf``.

    The value is the ``nodes``-point Gauss–Legendre rule on every half panel; the error
    estimate compares it with the same rule on the whole panels.
    """
    edges = np.asarray(edges, dtype=float)
    if edges.ndim != 2 or edges.shape[1] < 2:
        raise ValueError("edges must have shape (rows, panels + 1) with at least one panel")
    if active is None:
        active = np.ones((edges.shape[0], edges.shape[1] - 1), dtype=bool)
    coarse = _log_panel_sum(logf, edges, active, nodes)
    mid = 0.5 * (edges[:, :-1] + edges[:, 1:])
    fine_edges = np.empty((edges.shape[0], 2 * edges.shape[1] - 1))
    fine_edges[:, 0::2] = edges
    fine_edges[:, 1::2] = mid
    fine_active = np.repeat(active, 2, axis=1)
    fine = _log_panel_sum(logf, fine_edges, fine_active, nodes)
    hi = np.maximum(fine, coarse)
    lo = np.minimum(fine, coarse)
    with np.errstate(invalid="ignore"):
        err = np.where(np.isneginf(hi), -np.inf, logsubexp(hi, lo))
    return QuadResult(fine, err)


def uniform_edges(
    windows: list[list[tuple[float, float]]], width: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Panel edges covering, row by row, a list of disjoint sorted windows ``(lo, hi)`` with
    panels no wider than ``width[row]``; gaps between windows are inactive panels.

    Returns ``(edges, active)`` padded to a common number of panels (zero-width panels).
    """
    rows = []
    acts = []
    for wins, h in zip(windows, np.broadcast_to(width, (len(windows),)), strict=True):
        e: list[np.ndarray] = []
        act: list[np.ndarray] = []
        for j, (lo, hi) in enumerate(wins):
            n = max(1, int(np.ceil((hi - lo) / h)))
            if j > 0:
                act.append(np.array([False]))  # the gap from the previous window
            e.append(np.linspace(lo, hi, n + 1))
            act.append(np.ones(n, dtype=bool))
        rows.append(np.concatenate(e))
        acts.append(np.concatenate(act))
    size = max(len(r) for r in rows)
    edges = np.empty((len(rows), size))
    active = np.zeros((len(rows), size - 1), dtype=bool)
    for i, (r, a) in enumerate(zip(rows, acts, strict=True)):
        edges[i, : len(r)] = r
        edges[i, len(r) :] = r[-1]
        active[i, : len(a)] = a
    return edges, active


def graded_edges(
    lo: float, hi: float, toward: list[float], levels: int, ratio: float = 0.5
) -> np.ndarray:
    """Panel edges on [lo, hi] graded geometrically (by ``ratio``) toward each point of
    ``toward`` (points inside [lo, hi], e.g. the endpoints), down to ``ratio**levels`` of the
    distance to the neighbouring break point.  Suited to integrands that are steep (up to
    exponentially) next to those points."""
    breaks = sorted({float(lo), float(hi), *(float(p) for p in toward if lo <= p <= hi)})
    pts = set(breaks)
    for a, b in zip(breaks[:-1], breaks[1:], strict=True):
        half = 0.5 * (b - a)
        for j in range(levels + 1):
            d = half * ratio**j
            pts.add(a + d)
            pts.add(b - d)
    return np.array(sorted(pts))


def level_crossing(
    logf: LogIntegrand,
    start: np.ndarray,
    level: np.ndarray,
    direction: float,
    step: np.ndarray | float,
    stop: np.ndarray | None = None,
    iterations: int = 60,
) -> np.ndarray:
    """For each row, a point x beyond ``start`` (in ``direction`` = +1 or -1) with
    logf(x) <= level, close to the first such point, assuming logf is monotone (non-increasing
    away from ``start``) on the way.  Brackets by doubling ``step`` (stopping at ``stop`` if
    given), then bisects.  ``logf`` here takes and returns arrays of shape ``(rows,)``.
    """
    start = np.asarray(start, dtype=float)
    level = np.broadcast_to(np.asarray(level, dtype=float), start.shape)
    step = np.broadcast_to(np.asarray(step, dtype=float), start.shape).copy()
    lo = start.copy()
    hi = start + direction * step
    if stop is not None:
        stop = np.broadcast_to(np.asarray(stop, dtype=float), start.shape)
        hi = np.where(direction * (hi - stop) > 0, stop, hi)
    for _ in range(200):
        above = logf(hi) > level
        if stop is not None:
            above &= hi != stop
        if not above.any():
            break
        lo = np.where(above, hi, lo)
        step = np.where(above, 2.0 * step, step)
        hi = np.where(above, hi + direction * step, hi)
        if stop is not None:
            hi = np.where(direction * (hi - stop) > 0, stop, hi)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        above = logf(mid) > level
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    return hi
