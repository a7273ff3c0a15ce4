"""The block sums behind :func:`privamp.pld.moments.renyi_floor`, in memory independent of the
grid's length (issue 28).

The Rényi floor sums a grid's masses in at most ~1024 blocks of consecutive points, after a
mass ``amount`` (the grid's l1 slack) has been removed from its top (the windowed removal of
:func:`privamp.pld.moments.renyi_floor`: windows of 1024, 4096, ... points from the top until
the mass above the window's lowest point reaches ``amount``; every point of that window
loses ``max(amount - above, 0)``, clipped at 0).  Done on a copy of the masses, that costs two
arrays of the grid's length (a 3.3e6-point grid: 50 MiB).  Here the blocks below the window
are summed on a view of the masses (no copy) and the window's blocks a chunk at a time, with
the same floating-point operations: the results are bit for bit those of the copy.
"""

from __future__ import annotations

import numpy as np

__all__ = ["block_sums", "drop_window"]


#: entries per chunk of the streamed passes (2^17 floats: 1 MiB)
_CHUNK = 1 << 17


#: block rows of a chunk are a multiple of this (see :func:`block_sums`)
_ROW_ALIGN = 64


#: the first window of the top-mass removal; each next one is 4x wider (up to the grid)
_FIRST_WINDOW = 1024


def _top_down(masses: np.ndarray, lo_end: int):
    """Chunks [lo, hi) of ``masses[lo_end:]`` from the top down, with the float cumsum of the
    masses from the top (sequential, as ``np.cumsum(masses[::-1])``) carried across chunks:
    yields (lo, hi, reversed masses, mass strictly above each of them)."""
    n = len(masses)
    carry = 0.0
    hi = n
    while hi > lo_end:
        lo = max(lo_end, hi - _CHUNK)
        rev = masses[lo:hi][::-1]
        cum = np.cumsum(np.concatenate(([carry], rev)))[1:]
        carry = float(cum[-1])
        cum -= rev  # mass strictly above each index (as the whole-array cumsum minus masses)
        yield lo, hi, rev, cum
        hi = lo


def drop_window(masses: np.ndarray, amount: float) -> int:
    """Width of the top window the removal of ``amount`` of mass changes (0 when
    ``amount <= 0``): the first of 1024, 4096, ... (capped at the grid) whose lowest point
    has at least ``amount`` of mass above it, or the whole grid.

    Args:
        masses: the grid's masses (nonnegative).
        amount: the mass to remove from the top.

    Returns:
        the window's width (number of top points).
    """
    n = len(masses)
    if amount <= 0 or n == 0:
        return 0
    width = min(n, _FIRST_WINDOW)
    for lo, hi, _, above in _top_down(masses, 0):
        while lo <= n - width < hi:
            if width == n or above[hi - 1 - (n - width)] >= amount:
                return width
            width = min(n, 4 * width)
    return n


def block_sums(masses: np.ndarray, amount: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per block of ``k`` consecutive points (the last one padded with zeros), the sum of the
    masses and the sum of (index within the block) x mass, after ``amount`` of mass is removed
    from the top (:func:`drop_window`): the same floats as ``mb.reshape(-1, k).sum(axis=1)``
    and ``mb.reshape(-1, k) @ arange(k)`` on the padded copy ``mb`` with the removal done,
    with extra memory of a chunk instead of the grid.

    Args:
        masses: the grid's masses (nonnegative, 1-d).
        amount: the mass to remove from the top (<= 0: none).
        k: the block length (>= 1).

    Returns:
        (sums, weighted sums), one per block.
    """
    n = len(masses)
    nb = -(-n // k)
    ar = np.arange(k, dtype=float)
    width = drop_window(masses, amount)
    # blocks from j_top on hold a changed or padded point; j_top and the chunks' bounds are
    # multiples of _ROW_ALIGN blocks, so that BLAS's matrix-vector kernel (which takes rows
    # in groups, the leftover ones by another loop with another rounding) sees every row at
    # the same place in its groups as in the whole array's product
    j_top = (n - width) // k // _ROW_ALIGN * _ROW_ALIGN
    sums = np.empty(nb)
    wsum = np.empty(nb)
    if j_top:
        view = masses[: j_top * k].reshape(j_top, k)
        sums[:j_top] = view.sum(axis=1)
        wsum[:j_top] = view @ ar
    if j_top == nb:
        return sums, wsum
    # the top blocks: copies a chunk of blocks at a time, the removal applied to the window
    changed = _top_down(masses, n - width)
    pending: list = []  # (lo, hi, new values in index order) of the window not yet used
    per = max(1, _CHUNK // k // _ROW_ALIGN) * _ROW_ALIGN
    j1 = nb
    while j1 > j_top:
        j0 = max(j_top, (j1 - 1) // per * per)
        lo, hi = j0 * k, min(j1 * k, n)
        buf = np.zeros((j1 - j0) * k)
        buf[: hi - lo] = masses[lo:hi]
        while width and (not pending or pending[-1][0] > lo):
            got = next(changed, None)
            if got is None:
                break
            c_lo, c_hi, rev, above = got
            # max(top - max(amount - above, 0), 0), as the windowed removal computes it
            np.subtract(amount, above, out=above)
            np.maximum(above, 0.0, out=above)
            np.subtract(rev, above, out=above)
            np.maximum(above, 0.0, out=above)
            pending.append((c_lo, c_hi, above[::-1]))
        for c_lo, c_hi, vals in pending:
            a, b = max(c_lo, lo), min(c_hi, hi)
            if a < b:
                buf[a - lo : b - lo] = vals[a - c_lo : b - c_lo]
        pending = [p for p in pending if p[0] < lo]
        b2 = buf.reshape(j1 - j0, k)
        sums[j0:j1] = b2.sum(axis=1)
        wsum[j0:j1] = b2 @ ar
        j1 = j0
    return sums, wsum
