"""Queries of a grid PLD without its whole query tables (issue 28).

``PLD.delta`` and ``PLD.epsilon`` read two suffix tables of the masses: R_j = sum_{i >= j}
p_i e^{-(l_i - l_j)} (:func:`privamp.pld.tables.discounted_suffix`) and the raw profile at
the grid points, G_j = sum_{i > j} p_i (1 - e^{-(l_i - l_j)}) = G_{j+1} + (1 - e^{-h})
R_{j+1}.  Both are suffix sums, so they can be produced from the top of the grid down, a
chunk at a time (:func:`suffix_scan`), with the very float operations of the whole tables
(the same blocks, the same chains of additions: bit-identical values), and a query needs
only a few of their entries: the ones at its losses (``delta``), or the first grid point
where G falls to the query's level and the point at loss 0 (``epsilon``).  A query then
holds one chunk instead of two floats per grid point, and nothing of the grid's length
stays cached on the PLD between queries (the tables used to stay alive through the
Rényi-floor screening and the RDP accountant: 2 x 8 bytes x the grid, per PLD).

The inversion's float steps (:func:`invert_one`, :func:`invert_many`) are those of the
session-10 ``PLD._invert_one`` / ``PLD._invert``, moved here from :mod:`privamp.pld.grid`;
their soundness argument is in that module's docstring.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

from ..numerics.fft import UNIT_ROUNDOFF
from .tables import suffix_weights

__all__ = [
    "SCAN_CHUNK",
    "gather",
    "invert_many",
    "invert_one",
    "scan_values",
    "suffix_scan",
]


_U = UNIT_ROUNDOFF


#: grid points per chunk of :func:`suffix_scan` (rounded to whole blocks)
SCAN_CHUNK = 1 << 14


def suffix_scan(m: np.ndarray, h: float, up: bool, chunk: int = SCAN_CHUNK
                ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """The query tables of the grid masses ``m`` (step ``h``; ``up``: pessimistic) from the
    top of the grid down: yields ``(lo, r, g)`` with ``r = R[lo:top]`` and ``g = G[lo:top]``
    for consecutive ranges, the first ending at ``len(m)``, the last starting at 0.

    The values are those of ``discounted_suffix(m, h, up)`` and of the reversed cumsum of
    ``(1 - e^{-h}) R`` bit for bit: the same blocks of B points (aligned at index 0, the top
    one padded with zeros), the same per-block reversed cumsums, the same chain of block
    carries (sequential, from the top), the same underflow allowance (it depends on
    ``len(m)`` only) and the same sequential chain G_j = G_{j+1} + inc_{j+1} (continued
    across chunks by starting each chunk's cumsum from the value above it).

    Args:
        m: nonnegative masses (1-d float array).
        h: grid step > 0.
        up: round the underflow allowance up (pessimistic) or down (optimistic).
        chunk: grid points per chunk (at least one block).

    Yields:
        ``(lo, r, g)``: the first index of the range and the tables there (fresh arrays).
    """
    n = len(m)
    B = int(max(1, min(1024, math.floor(30.0 / h))))
    nb = -(-n // B)
    wrev, tailrev, decay = suffix_weights(B, h)
    rows = max(1, chunk // B)
    a = n * math.exp(30.0) * 5e-324  # discounted_suffix's (and underflow's) allowance
    c_inc = -math.expm1(-h)
    acc = 0.0
    carry = np.empty(rows)
    g_above: float | None = None  # G and inc at the first index of the range above
    inc_above = 0.0
    for c in range(0, nb, rows):
        R = min(rows, nb - c)
        lo, hi = (nb - c - R) * B, (nb - c) * B
        top = min(hi, n)
        seg = np.zeros(hi - lo)
        seg[: top - lo] = m[lo:top]
        blk = np.cumsum(seg[::-1].reshape(R, B) * wrev, axis=1)
        blk /= wrev
        for b in range(R):
            carry[b] = acc
            acc = float(blk[b, -1]) + decay * acc
        blk += carry[:R, None] * tailrev
        r = blk.reshape(-1)[::-1][: top - lo]
        if up:
            r = r + a
        else:
            r = r - a
            np.maximum(r, 0.0, out=r)
        inc = c_inc * r
        x = np.empty(top - lo + 1)
        if g_above is None:  # the top: G_{n-1} = 0, then G_{n-2} = inc_{n-1}, ...
            x[0] = 0.0
            x[1] = 0.0
            x[2:] = inc[:0:-1]
        else:
            x[0] = g_above
            x[1] = inc_above
            x[2:] = inc[:0:-1]
        g = np.cumsum(x)[1:][::-1] if g_above is not None else np.cumsum(x[1:])[::-1]
        g_above, inc_above = float(g[0]), float(inc[0])
        yield lo, np.ascontiguousarray(r), np.ascontiguousarray(g)


def scan_values(m: np.ndarray, h: float, up: bool, want: np.ndarray,
                target: float | None = None) -> tuple[dict[int, tuple[float, float]], int]:
    """Entries of the query tables (:func:`suffix_scan`) at the indices ``want`` and, if
    ``target`` is given, the first index ``j`` with ``G_j <= target`` (G is nonincreasing:
    ``j = #{i: G_i > target}``, what ``n - searchsorted(G reversed, target, "right")``
    gives) and the entries at ``min(j, n - 1)``; the scan stops as soon as it has them.

    Args:
        m, h, up: as for :func:`suffix_scan`.
        want: indices in [0, len(m)).
        target: a level >= 0, or None.

    Returns:
        ``({index: (G, R)}, j)`` (j = -1 when no target was given).
    """
    n = len(m)
    want = np.unique(np.asarray(want, dtype=np.intp))
    got: dict[int, tuple[float, float]] = {}
    j = -1
    low = (n, 0.0, 0.0)  # the first index of the range above and its entries
    for lo, r, g in suffix_scan(m, h, up):
        for i in want[(want >= lo) & (want < lo + len(r))].tolist():
            got[i] = (float(g[i - lo]), float(r[i - lo]))
        if target is not None and j < 0 and float(g[0]) > target:
            j = lo + int(np.count_nonzero(g > target))
            jj = min(j, n - 1)
            got[jj] = (float(g[jj - lo]), float(r[jj - lo])) if jj < lo + len(r) else \
                (low[1], low[2])
        low = (lo, float(g[0]), float(r[0]))
        if (target is None or j >= 0) and (not want.size or lo <= int(want[0])):
            break
    if target is not None and j < 0:  # every G_i <= target
        j = 0
        got[0] = (low[1], low[2])
    return got, j


def gather(memo: dict, jj: np.ndarray, inside: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(G, R) at the indices ``jj`` from ``memo`` (index -> (G, R)), 0 where not ``inside``.

    Returns:
        Two float arrays of the shape of ``jj``.
    """
    flat = [memo[i] if ok else (0.0, 0.0)
            for i, ok in zip(np.ravel(jj).tolist(), np.ravel(inside).tolist(), strict=True)]
    g = np.array([v[0] for v in flat], dtype=float).reshape(np.shape(jj))
    r = np.array([v[1] for v in flat], dtype=float).reshape(np.shape(jj))
    return g, r


def invert_one(target: float, inf_mass: float, pess: bool, losses, j: int,
               at: Callable[[int], tuple[float, float]]) -> tuple[float, bool] | None:
    """``PLD.epsilon`` at one delta, on floats: the smallest eps >= 0 where the raw profile
    (finite masses) is <= ``target`` (the level of the delta asked for), moved by
    1e-12 relative + 4 ulps the safe way (up if ``pess``).

    Args:
        target: the raw level (``PLD._target``), finite and >= 0.
        inf_mass: the PLD's mass at +inf.
        pess: pessimistic side.
        losses: the grid losses (:class:`privamp.pld.tables.GridLosses` or an array).
        j: the first index with ``G_j <= target``.
        at: index -> (G, R) there.

    Returns:
        ``(eps, j >= 1)`` (whether the answer's segment lies past the first grid point),
        or None in a degenerate case (R = 0 at the crossing: left to :func:`invert_many`).
    """
    n = len(losses)
    i0 = int(np.searchsorted(losses, 0.0, side="right"))  # the raw profile at eps = 0
    if i0 >= n:
        raw0 = 0.0
    else:
        g0, r0 = at(i0)
        raw0 = g0 + (-math.expm1(-float(losses[i0]))) * r0
    if (raw0 + inf_mass) - inf_mass <= target:
        return 0.0, j >= 1
    jj = min(j, n - 1)
    gj, rj = at(jj)
    if not rj > 0:
        return None
    frac = min(max((target - gj) / rj, 0.0), 1.0)
    eps = float(losses[jj]) - (math.inf if frac == 1.0 else -math.log1p(-frac))
    if jj > 0:
        eps = max(eps, float(losses[jj - 1]))
    if math.isfinite(eps):
        step = 1e-12 * max(1.0, abs(eps)) + 4 * _U
        eps = eps + step if pess else eps - step
    return max(eps, 0.0), j >= 1


def invert_many(target: np.ndarray, raw0: np.ndarray, pess: bool, tables: tuple
                ) -> tuple[np.ndarray, bool]:
    """``PLD.epsilon`` at an array of deltas from whole tables ``(losses, R, G, G
    reversed)``: as :func:`invert_one` for each raw level in ``target`` (any values;
    ``raw0``: the raw profile at eps 0, finite masses only).

    Returns:
        ``(eps, inside)``: the answers (shape of ``target``) and whether every answer's
        segment lies past the tables' first point.
    """
    losses, r, g, g_up = tables
    out = np.empty_like(target)
    # g is nonincreasing: the first index j with g_j <= target (n - #{g_j <= target})
    n = len(g)
    j = n - np.searchsorted(g_up, target, side="right")
    jj = np.minimum(j, n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = (target - g[jj]) / r[jj]
        t = -np.log1p(-np.clip(frac, 0.0, 1.0))
    eps = losses[jj] - t
    lower_end = np.where(jj > 0, losses[np.maximum(jj - 1, 0)], -np.inf)
    eps = np.maximum(eps, lower_end)
    finite = np.isfinite(eps)  # -inf: the whole profile is below target (answer 0)
    step = np.where(finite, 1e-12 * np.maximum(1.0, np.abs(np.where(finite, eps, 0.0)))
                    + 4 * _U, 0.0)
    eps = eps + step if pess else eps - step
    eps = np.maximum(eps, 0.0)
    out[:] = eps
    out[raw0 <= target] = 0.0
    out[target < 0] = np.inf
    return out, bool(np.all((j >= 1) | (target < 0)))
