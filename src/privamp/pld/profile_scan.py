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
    "TableScan",
    "gather",
    "invert_many",
    "invert_one",
]


_U = UNIT_ROUNDOFF


#: grid points per chunk of :func:`suffix_scan` (rounded to whole blocks)
SCAN_CHUNK = 1 << 14


class TableScan:
    """The query tables of the grid masses ``m`` (step ``h``; ``up``: pessimistic), produced
    from the top of the grid down a chunk at a time and read where a query needs them.

    Chunk k covers whole blocks of B points (the blocks of
    :func:`privamp.pld.tables.discounted_suffix`, aligned at index 0, the top one padded
    with zeros); its values follow from the state left by chunk k - 1: the carry of the
    block chain and G with its increment at the chunk's top.  Those states (three floats
    per chunk) and G and R at each chunk's first index are kept, so a later query computes
    only the chunks holding the entries it reads.  The values are those of the whole
    tables bit for bit: the same per-block reversed cumsums, the same sequential chain of
    block carries, the same underflow allowance (it depends on ``len(m)`` only) and the
    same sequential chain G_j = G_{j+1} + inc_{j+1} (each chunk's cumsum started from the
    value above it).

    Args:
        m: nonnegative masses (1-d float array; read, not copied).
        h: grid step > 0.
        up: pessimistic (underflow allowance added) or optimistic (taken off).
        chunk: grid points per chunk (rounded to whole blocks, at least one).
    """

    def __init__(self, m: np.ndarray, h: float, up: bool, chunk: int = SCAN_CHUNK) -> None:
        self.m, self.h, self.up = m, h, up
        self.n = n = len(m)
        self.B = B = int(max(1, min(1024, math.floor(30.0 / h))))
        self.nb = -(-n // B)
        self.rows = max(1, chunk // B)
        self.chunks = -(-self.nb // self.rows)
        self.weights = suffix_weights(B, h)
        self.allowance = n * math.exp(30.0) * 5e-324  # discounted_suffix's
        self.c_inc = -math.expm1(-h)
        self.states: list[tuple[float, float | None, float]] = [(0.0, None, 0.0)]
        self.first: list[tuple[float, float]] = []  # (G, R) at each chunk's first index
        self.entries: dict[int, tuple[float, float]] = {}
        self.answers: dict = {}
        # the last chunk run, during :meth:`values` only (session 12: a query reads the
        # chunk where its search stopped, and often the chunk at loss 0, right after
        # running them; read-only; dropped on return, so nothing of a chunk's length stays)
        self.last: tuple[int, tuple[int, np.ndarray, np.ndarray]] | None = None

    def span(self, k: int) -> tuple[int, int]:
        """The index range [lo, top) of chunk k."""
        R = min(self.rows, self.nb - k * self.rows)
        hi = (self.nb - k * self.rows) * self.B
        return hi - R * self.B, min(hi, self.n)

    def chunk_of(self, i: int) -> int:
        """The chunk holding index i."""
        return (self.nb - 1 - i // self.B) // self.rows

    def run(self, k: int) -> tuple[int, np.ndarray, np.ndarray]:
        """``(lo, R[lo:top], G[lo:top])`` of chunk k (k <= the chunks computed so far;
        read-only arrays)."""
        if self.last is not None and self.last[0] == k:
            return self.last[1]
        acc, g_above, inc_above = self.states[k]
        wrev, tailrev, decay = self.weights
        B, rows = self.B, min(self.rows, self.nb - k * self.rows)
        lo, top = self.span(k)
        seg = np.zeros(rows * B)
        seg[: top - lo] = self.m[lo:top]
        blk = np.cumsum(seg[::-1].reshape(rows, B) * wrev, axis=1)
        blk /= wrev
        carry = np.empty(rows)
        for b in range(rows):
            carry[b] = acc
            acc = float(blk[b, -1]) + decay * acc
        blk += carry[:, None] * tailrev
        r = blk.reshape(-1)[::-1][: top - lo]
        if self.up:
            r = r + self.allowance
        else:
            r = r - self.allowance
            np.maximum(r, 0.0, out=r)
        inc = self.c_inc * r
        x = np.empty(top - lo + 1)
        x[0] = 0.0 if g_above is None else g_above  # the top: G_{n-1} = 0, G_{n-2} = inc_{n-1}
        x[1] = 0.0 if g_above is None else inc_above
        x[2:] = inc[:0:-1]
        g = (np.cumsum(x[1:]) if g_above is None else np.cumsum(x)[1:])[::-1]
        if k == len(self.first):
            self.first.append((float(g[0]), float(r[0])))
            self.states.append((acc, float(g[0]), float(inc[0])))
        r, g = np.ascontiguousarray(r), np.ascontiguousarray(g)
        r.flags.writeable = g.flags.writeable = False
        self.last = (k, (lo, r, g))
        return lo, r, g

    def scan(self, chunk: int | None = None) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """Every chunk from the top down (``chunk``: another chunk size, for tests)."""
        t = self if chunk is None else TableScan(self.m, self.h, self.up, chunk)
        for k in range(t.chunks):
            yield t.run(k)
        t.last = None

    def values(self, want: np.ndarray, target: float | None = None
               ) -> tuple[dict[int, tuple[float, float]], int]:
        """The entries (G, R) at the indices ``want`` (in [0, n)) and, if ``target`` (a
        level) is given, the first index ``j`` with ``G_j <= target`` (G is nonincreasing:
        ``j = #{i: G_i > target}``, what ``n - searchsorted(G reversed, target, "right")``
        gives) with the entries at ``min(j, n - 1)``.

        Returns:
            ``(entries, j)``: a dict holding (at least) those indices; j = -1 without a
            target.
        """
        if len(self.entries) > _MEMO:
            self.entries = {}
        j = -1
        if target is not None:
            k = next((k for k, f in enumerate(self.first) if f[0] > target), None)
            while k is None and len(self.first) < self.chunks:
                self.run(len(self.first))
                k = len(self.first) - 1 if self.first[-1][0] > target else None
            if k is None:  # every G_i <= target
                j = 0
                self.entries[0] = self.first[-1]
            else:
                lo, r, g = self.run(k)
                j = lo + int(np.count_nonzero(g > target))
                jj = min(j, self.n - 1)
                self.entries[jj] = (float(g[jj - lo]), float(r[jj - lo])) \
                    if jj < lo + len(r) else self.first[k - 1]
        missing = sorted({int(i) for i in np.ravel(want).tolist()} - self.entries.keys())
        by_chunk: dict[int, list[int]] = {}
        for i in missing:
            by_chunk.setdefault(self.chunk_of(i), []).append(i)
        for k in sorted(by_chunk):
            while len(self.first) < k:
                self.run(len(self.first))
            lo, r, g = self.run(k)
            for i in by_chunk[k]:
                self.entries[i] = (float(g[i - lo]), float(r[i - lo]))
        self.last = None
        return self.entries, j


#: at most this many remembered table entries per :class:`TableScan`
_MEMO = 4096


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
