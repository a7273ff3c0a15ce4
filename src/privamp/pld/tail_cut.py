"""Where a PLD's tails of mass <= tau end (issue 28): the same index and prefix mass as
``np.searchsorted(np.cumsum(z), tau, side="right")``, summing only as far as needed."""

from __future__ import annotations

import numpy as np

__all__ = ["tail_cut"]

#: the first block of prefix sums; each further block is twice as long
_FIRST = 1024


def tail_cut(z: np.ndarray, tau: float, nonneg: bool | None = None) -> tuple[int, float]:
    """With ``cs = np.cumsum(z)``: ``i = np.searchsorted(cs, tau, side="right")`` (for
    nonnegative z: the number of leading entries whose prefix mass is <= tau) and
    ``cs[i - 1]`` (0.0 if i = 0), bit for bit.

    For z >= 0 the prefix sums are formed block by block (blocks doubling from ``_FIRST``),
    each block continuing the running sum from the last one's final value: numpy's cumsum
    adds sequentially, so every prefix sum is the same float; they do not decrease, so the
    first one above tau ends the search.  A PLD's truncated tails are short next to its
    bulk, so this sums a fraction of z instead of all of it.  Otherwise (a negative or NaN
    entry) the full cumsum is searched.

    Args:
        z: 1-d float array (a view is fine, e.g. ``z[::-1]`` for the upper tail).
        tau: the tail mass allowed.
        nonneg: ``z.min() >= 0.0`` if already known (None: checked here).

    Returns:
        ``(i, cs[i - 1])``.
    """
    n = len(z)
    if n == 0:
        return 0, 0.0
    if not (z.min() >= 0.0 if nonneg is None else nonneg):
        cs = np.cumsum(z)
        i = int(np.searchsorted(cs, tau, side="right"))
        return i, float(cs[i - 1]) if i > 0 else 0.0
    pos, size, last = 0, _FIRST, 0.0
    while pos < n:
        block = z[pos : pos + size]
        if pos == 0:
            cs = np.cumsum(block)
        else:
            cs = np.cumsum(np.concatenate(([last], block)))[1:]
        j = int(np.searchsorted(cs, tau, side="right"))
        if j < len(cs):
            return pos + j, float(cs[j - 1]) if j > 0 else last
        last = float(cs[-1])
        pos += len(block)
        size *= 2
    return n, last
