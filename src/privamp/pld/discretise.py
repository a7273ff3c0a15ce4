"""Discretisation of a LossPair onto a grid of privacy losses, on both sides: the pessimistic
connect-the-dots PLD (Doroshenko et al. 2022, arXiv:2207.04380) and privamp's optimistic PLD
(chords lowered by their largest gap, then made convex), each with its float-error allowance.
"""

from __future__ import annotations

import math
from typing import Literal, cast, overload

import numpy as np

from .._validation import check_positive
from ..errors import NotApplicable
from ..pairs.combinators import MixturePair
from ..pairs.loss_pair import LossPair
from .binning import (
    bin_split,
    optimistic_masses,
    split_tail_errors,
    suffix_sums,
    tail_errors,
)
from .budget import MAX_LOSS, MEMORY_BUDGET, REL_SAFETY, discretise_bytes
from .grid import PLD, strip, with_float_allowance

__all__ = [
    "discretise",
]




#: Q-masses below this are out of the normal float range (with margin): see discretise
_Q_NORMAL = 1e-290

#: at most this many points in one step's grid (memory: about 100 bytes per point)
_MAX_GRID_POINTS = 4_000_000


# ------------------------------------------------------------------------------------------
# discretisation of one pair
# ------------------------------------------------------------------------------------------
def _grid(pair: LossPair, h: float, tail: float) -> tuple[int, np.ndarray]:
    """First index and losses of the grid ``j h`` covering ``pair.loss_range(tail)`` clipped
    to [-700, 700] (e^l must stay finite).  Clipping is sound: :func:`discretise` moves the
    P-mass below the grid up to its first point and sends the P-mass above it to +inf
    (pessimistic), and the optimistic side only uses tails at the grid points; a wide clip
    only widens the interval.  At most ``_MAX_GRID_POINTS`` points (else NotApplicable)."""
    lo, hi = pair.loss_range(tail)
    if math.isnan(lo) or math.isnan(hi):
        raise NotApplicable("the privacy loss range of this pair could not be computed (NaN); "
                            "the PLD accountant cannot discretise it")
    lo = min(max(lo, -MAX_LOSS), MAX_LOSS)
    hi = min(max(hi, lo), MAX_LOSS)
    i_lo = math.floor(lo / h) - 1  # one empty bin below: keeps the optimistic total P-mass
    i_hi = max(math.ceil(hi / h), i_lo + 1)
    if i_hi - i_lo + 1 > _MAX_GRID_POINTS:
        raise NotApplicable(
            f"a PLD grid of step h={h:.3g} over the losses [{lo:.4g}, {hi:.4g}] would need "
            f"{i_hi - i_lo + 1} points, more than the cap {_MAX_GRID_POINTS:.0f}; use h >= "
            f"{(hi - lo) / (_MAX_GRID_POINTS - 3):.3g}")
    return i_lo, np.arange(i_lo, i_hi + 1) * h


@overload
def discretise(pair: LossPair, h: float, tail: float = ...,
               optimistic: Literal[True] = ..., rho_max: float = ...,
               pessimistic: Literal[True] = ..., sparse_tail: int = ...) -> tuple[PLD, PLD]: ...
@overload
def discretise(pair: LossPair, h: float, tail: float = ..., *,
               optimistic: Literal[False], rho_max: float = ...,
               pessimistic: Literal[True] = ..., sparse_tail: int = ...) -> tuple[PLD, None]: ...
@overload
def discretise(pair: LossPair, h: float, tail: float = ...,
               optimistic: Literal[True] = ..., rho_max: float = ..., *,
               pessimistic: Literal[False], sparse_tail: int = ...) -> tuple[PLD | None, PLD]: ...
@overload
def discretise(pair: LossPair, h: float, tail: float = ...,
               optimistic: bool = ..., rho_max: float = ..., pessimistic: bool = ...,
               sparse_tail: int = ...) -> tuple[PLD | None, PLD | None]: ...
def discretise(pair: LossPair, h: float, tail: float = 1e-16,
               optimistic: bool = True, rho_max: float = 1e-10, pessimistic: bool = True,
               sparse_tail: int = 1) -> tuple[PLD | None, PLD | None]:
    """(pessimistic, optimistic) grid PLDs of one ordered pair on the grid ``j h``.

    The grid covers ``pair.loss_range(tail)``.  Pessimistic: connect-the-dots (Doroshenko
    et al. 2022); the P-mass below the grid is moved up to its first point, the P-mass above
    it (and at +inf) goes to ``inf_mass``.  Optimistic: lowered chords + greatest convex
    minorant (see module docstring), anchored at value 0 at the grid's end.

    ``optimistic=False`` skips the optimistic side (returned as None), ``pessimistic=False``
    the pessimistic one.  ``rho_max`` caps the relative part of the float-error allowance
    (:func:`privamp.pld.binning.relative_split`); a T-fold
    composition multiplies its deltas by up to ``(1 + rho)^T``, so callers composing many
    steps may raise it to about ``1e-4 / T`` to turn more of the allowance relative.

    ``sparse_tail = k > 1``: above the loss where the P-tail falls below
    ``_SPARSE_FRACTION`` times the profile at eps = 0 (:func:`_sparse_points`), only every
    k-th grid point carries mass (both constructions hold on any increasing set of
    points: chords of a convex profile lie above it, lowered chords below); the PLD stays
    on the grid ``j h``.  For long grids whose mass sits in a narrow bulk (tiny sampling
    rates) this cuts the work about k-fold.
    """
    h = check_positive("h", h)
    if not 0 < rho_max <= 1e-6:
        raise ValueError(f"rho_max must be in (0, 1e-6], got {rho_max}")
    if not 0 < tail < 1e-3:
        raise ValueError(f"tail must be in (0, 1e-3), got {tail}")
    finite = float(np.asarray(pair.tail(np.array([np.inf]), "P", False, True))[0])
    if finite <= 0.0:  # all of P sits at loss +inf (e.g. randomized response with theta = 1)
        p_inf = float(pair.p_inf)
        return (PLD(h, 0, np.zeros(1), min(p_inf * (1 + REL_SAFETY), 1.0), "pessimistic"),
                PLD(h, 0, np.zeros(1), p_inf * (1 - REL_SAFETY), "optimistic")
                if optimistic else None)
    i_lo, l = _grid(pair, h, tail)
    at = _sparse_points(pair, l, sparse_tail) if sparse_tail > 1 else None
    full = len(l)
    dense = full if at is None else len(at)
    if discretise_bytes(dense, full) > MEMORY_BUDGET:
        # (the refusal comes before the masses' arrays: the grid's losses are 8 bytes each)
        fit = h * discretise_bytes(dense, full) / MEMORY_BUDGET
        raise NotApplicable(
            f"a PLD grid of step h={h:.3g} with {dense} points carrying mass would take about "
            f"{discretise_bytes(dense, full) / 2**20:.0f} MiB, above the memory budget of "
            f"{MEMORY_BUDGET / 2**20:.0f} MiB; use h >= {fit:.3g}")
    if at is not None:
        l = l[at]
    a = np.exp(l)
    split = pair.split_bin_masses(l) if isinstance(pair, MixturePair) else None
    q_gt = None  # Q(L > l) at the grid points, if the masses came with it
    if split is not None:  # float error scaling with the mixture weight
        pm_all, qm_all, base_p, acc, q_gt = split
        p_above = suffix_sums(pm_all)  # (shared with the pessimistic side below)
        errs = split_tail_errors(pm_all, qm_all, base_p, l, cast(MixturePair, pair).w, acc,
                                 p_above)
    else:
        pm_all, qm_all = pair.bin_masses(l)
        p_above = suffix_sums(pm_all)
        errs = tail_errors(pm_all, qm_all, a, p_above=p_above)
    pb, qb = pm_all[1:-1], qm_all[1:-1]  # bins (l_i, l_{i+1}]
    dlt, e = bin_split(pb, qb, a, h if at is None else np.diff(at) * h)

    def on_grid(m: np.ndarray) -> np.ndarray:  # masses at the points -> the grid j h
        if at is None:
            return m
        out = np.zeros(full)
        out[at] = m
        return out

    p = None
    if pessimistic:  # connect-the-dots (Doroshenko et al. 2022)
        pess = np.zeros(len(a))
        low_part, high_part = a[:-1] * (qb - e), a[1:] * e
        # bins whose Q-mass is out of the normal float range (near the 700 clip it underflows
        # to 0 and e^l q_b lost the bin's P-mass: group of 4, K s = 70, q = 0.01, upper delta
        # 1.3e-7 below the truth, review27): the bin's P-mass at its upper end (rounding the
        # losses up is pessimistic), raised by its float error (8 u of the P-tail above)
        low = qb < _Q_NORMAL
        if np.any(low):
            tail_p = p_above[1:-1]  # P(L > l_i) for the bins' left ends
            low_part[low] = 0.0
            high_part[low] = pb[low] * (1.0 + 1e-12) + 2.0 ** -50 * tail_p[low]
        pess[:-1] += low_part
        pess[1:] += high_part
        pess[0] += pm_all[0]
        p = strip(with_float_allowance(h, i_lo, on_grid(pess), float(pm_all[-1]),
                                         "pessimistic", errs, rho_max, at=at))
    if not optimistic:
        return p, None
    o = optimistic_masses(l, a, dlt, qb, e,
                          pair.tail(l, "Q", True, True) if q_gt is None else q_gt,
                          lambda i: pair.tail(l[i : i + 1], "Q", True, False)[0])
    opt = with_float_allowance(h, i_lo, on_grid(o), pair.p_inf, "optimistic", 2.0 * errs,
                                rho_max, at=at)
    return p, strip(opt)


#: sparse tails (:func:`discretise`): every grid point where the P-tail above exceeds this
#: fraction of the profile at eps = 0, every k-th point above
_SPARSE_FRACTION = 0.1


def _sparse_points(pair: LossPair, l: np.ndarray, k: int) -> np.ndarray:
    """Indices into the grid ``l``: all points up to the first where ``P(L > l)`` falls below
    ``_SPARSE_FRACTION`` times ``pair.delta(0)`` (searched on every k-th point), then every
    k-th point, and the last.  A heuristic: soundness never depends on the points."""
    coarse = np.arange(0, len(l), k)
    tv = float(np.asarray(pair.delta(0.0)))
    tails = pair.tail(l[coarse], "P", True, True)
    below = np.nonzero(tails <= _SPARSE_FRACTION * tv)[0]
    if not len(below) or tv <= 0:
        return np.arange(len(l))
    j = int(coarse[below[0]])
    idx = np.concatenate((np.arange(j), np.arange(j, len(l), k)))  # increasing, distinct
    return idx if idx[-1] == len(l) - 1 else np.append(idx, len(l) - 1)


