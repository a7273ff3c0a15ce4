"""Rényi divergences of a grid PLD from below: a cheap floor on the RDP of a dominated pair."""

from __future__ import annotations

import math

import numpy as np

from .grid import PLD
from .jensen_blocks import block_sums

__all__ = [
    "renyi_floor",
    "two_sided_renyi_floor",
]


#: the grid is summed in at most this many blocks (each at its lowest loss)
_FLOOR_BLOCKS = 1024


#: orders per chunk of the floor's (orders x blocks) tables
_ORDER_CHUNK = 64


def renyi_floor(pld: PLD, alpha: np.ndarray) -> np.ndarray:
    """Lower bounds on D_alpha(P || Q) of the grid pair at orders ``alpha`` > 1, in O(1024)
    per order.

    exp((alpha - 1) D_alpha) = E_P[exp((alpha - 1) L)] (Mironov 2017, arXiv:1702.07476,
    Def. 3, written over the privacy loss L).  The masses are summed in at most 1024 blocks of
    consecutive grid points, each placed at its P-weighted mean loss, which by Jensen's
    inequality (convexity of exp) can only lower the sum;
    mass at +inf gives +inf.  The grid masses are those of a dominated pair only up to the
    numerical allowance ``pld.slack`` (an l1 bound on their error), and that error may sit at
    the largest losses, where exp((alpha - 1) L) magnifies it: ``slack`` of mass is removed
    from the top of the grid first (:func:`privamp.pld.jensen_blocks.drop_window`).  The
    result is clipped at 0 (a divergence is >= 0) and is nondecreasing in alpha up to
    rounding.  Used to tell, before computing an RDP curve, that it cannot beat a PLD
    (:mod:`privamp.accounting.screening`).
    """
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    if pld.inf_mass > 0:
        return np.full(a.shape, np.inf)
    blocked = _blocked(pld)
    if blocked is None:
        return np.zeros(a.shape)
    lm, lw = blocked
    out = np.empty(a.shape)
    for i in range(0, a.size, _ORDER_CHUNK):  # (orders x blocks) tables a chunk at a time
        t = (a[i : i + _ORDER_CHUNK] - 1.0)[:, None]
        e = t * lm[None, :] + lw[None, :]
        top = e.max(axis=1, keepdims=True)
        with np.errstate(invalid="ignore"):
            lse = top[:, 0] + np.log(np.exp(e - top).sum(axis=1))
        out[i : i + _ORDER_CHUNK] = lse / t[:, 0]
    return np.maximum(out, 0.0)


def _blocked(pld: PLD) -> tuple[np.ndarray, np.ndarray] | None:
    """(block mean losses, log block masses) of :func:`renyi_floor` (None: no mass left),
    kept on the PLD (the screening asks for its floor at new orders every round: the block
    sums were most of each call's cost, 1-2 ms on 80k points; session 12)."""
    key = (pld.slack, pld.offset, pld.h)
    memo = pld.__dict__.get("_floor_blocks")
    if memo is not None and memo[0] is pld.masses and memo[1] == key:
        return memo[2]
    n = len(pld.masses)
    k = max(1, math.ceil(n / _FLOOR_BLOCKS))
    # the block sums of the masses with the top drop done, without a copy (issue 28)
    blocks, weighted = block_sums(pld.masses, pld.slack, k)
    keep = blocks > 0
    out = None
    if keep.any():
        # P-weighted mean loss of each block (Jensen: sum p e^{tl} >= P_block e^{t mean})
        index = weighted[keep] / blocks[keep]
        out = ((pld.offset + k * np.flatnonzero(keep) + index) * pld.h, np.log(blocks[keep]))
    pld.__dict__["_floor_blocks"] = (pld.masses, key, out)
    return out


def two_sided_renyi_floor(pld, alpha: np.ndarray) -> np.ndarray:
    """Lower bounds on the Rényi DP of a run whose true pair dominates every optimistic side
    of ``pld`` (a :class:`~privamp.pld.two_sided.TwoSidedPLD`): the max over directions of
    :func:`renyi_floor`, and at least 2 TV^2 <= KL <= D_alpha (Pinsker's inequality) with TV
    at least the certified lower bound on delta(0)."""
    tv = float(np.max(pld.delta(np.zeros(1))[1]))
    floors = [renyi_floor(o, alpha) for _, o in pld.directions]
    return np.maximum(np.max(floors, axis=0), 2.0 * max(tv, 0.0) ** 2)
