"""Sums of grid masses over the coarse bins of :meth:`privamp.pld.grid.PLD.coarsen` (issue 28):
the same floats as ``np.bincount`` over the bin labels, without the labels."""

from __future__ import annotations

import numpy as np

__all__ = ["bin_sums"]

#: above this factor the column loop of :func:`bin_sums` gives way to ``np.bincount``
_COLUMN_MAX = 64


def bin_sums(offset: int, k: int, weights: list[np.ndarray]) -> tuple[int, list[np.ndarray]]:
    """Per coarse bin ``(J k, (J + 1) k]`` of the grid indices ``offset + i``, the sums of each
    array of ``weights`` (entry i at index offset + i), with one empty bin below the first.

    Bit-identical to ``np.bincount(J - j0, weights=w, minlength=nbins)`` with
    ``J = (offset + i - 1) // k``, ``j0 = J[0] - 1``: bincount adds each bin's entries in index
    order to 0.0; here the entries sit in rows of a zero-padded (nbins, k) array, added
    column by column in the same order (a padding 0.0 added to a sum that is never -0.0
    leaves it unchanged), about 3x faster than labelling every entry.

    Args:
        offset: grid index of the first entry.
        k: coarsening factor (>= 1).
        weights: arrays of one length n >= 1.

    Returns:
        ``(j0, sums)``: the first bin's label and, per array, its ``nbins`` bin sums.
    """
    n = len(weights[0])
    first = (offset - 1) // k
    j0 = first - 1
    nbins = (offset + n - 2) // k - j0 + 1
    if k > _COLUMN_MAX:
        lab = (offset + np.arange(n) - 1) // k - j0
        return j0, [np.bincount(lab, weights=w, minlength=nbins) for w in weights]
    at = k + (offset - 1) - first * k  # flat position of entry 0
    out = []
    for w in weights:
        buf = np.zeros(nbins * k)
        buf[at : at + n] = w
        cols = buf.reshape(nbins, k)
        s = np.zeros(nbins)
        for c in range(k):
            s += cols[:, c]
        out.append(s)
    return j0, out
