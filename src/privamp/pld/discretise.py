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
    chord_slopes,
    chord_tents,
    chord_values,
    convex_masses,
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
    # (issue 28, session 11: every grid-length array is dropped as soon as it is dead, the
    # pessimistic masses are built in chunks, the optimistic construction runs in stages
    # with its inputs released between them; every value comes from the same float
    # operations as in one pass, so both PLDs are bit-identical)
    split = pair.split_bin_masses(l) if isinstance(pair, MixturePair) else None
    q_gt: np.ndarray | None
    if split is not None:  # float error scaling with the mixture weight
        pm_all, qm_all, base_p, acc, q_gt = split
        del split
        errs = split_tail_errors(pm_all, qm_all, base_p, l, cast(MixturePair, pair).w, acc)
        del base_p, acc
        p_above: np.ndarray | None = None  # (below, only if some bin's Q-mass is subnormal)
        a = np.exp(l)
    else:
        a = np.exp(l)
        pm_all, qm_all = pair.bin_masses(l)
        p_above = suffix_sums(pm_all)
        errs = tail_errors(pm_all, qm_all, a, p_above=p_above)
        q_gt = pair.tail(l, "Q", True, True) if optimistic else None

    def q_ge(i: int) -> float:  # Q(L >= l_i), at the grid's loss l_i (the same float)
        j = i_lo + (i if at is None else int(at[i]))
        return float(pair.tail(np.arange(j, j + 1) * h, "Q", True, False)[0])

    del l
    pb, qb = pm_all[1:-1], qm_all[1:-1]  # bins (l_i, l_{i+1}]
    dlt, e = bin_split(pb, qb, a, h if at is None else np.diff(at) * h)

    def on_grid(m: np.ndarray) -> np.ndarray:  # masses at the points -> the grid j h
        if at is None:
            return m
        out = np.zeros(full)
        out[at] = m
        return out

    pess = None
    if pessimistic:  # connect-the-dots (Doroshenko et al. 2022)
        pess = _connect_the_dots(a, pb, qb, e, pm_all, p_above)
    pm_last = float(pm_all[-1])
    del pm_all, pb, p_above
    o = None
    if optimistic:
        assert q_gt is not None
        qge0, a0 = q_ge(0), float(a[0])
        del a  # (recomputed below: the same floats)
        m, g, t = chord_tents(dlt, qb, e, q_gt, e_dead=True)
        del qm_all, qb, e, q_gt
        v, mu = chord_values(m, dlt, g, t)
        del g, t
        slopes, weights = chord_slopes(m, dlt, mu, v, qge0, q_ge, a0)
        del m, v, mu, dlt
        l = np.arange(i_lo, i_lo + full) * h  # (the grid of _grid)
        a = np.exp(l if at is None else l[at])
        del l
        o = convex_masses(slopes, weights, a)
        del slopes, weights
    del a
    p = None
    if pess is not None:
        p = strip(with_float_allowance(h, i_lo, on_grid(pess), pm_last, "pessimistic", errs,
                                       rho_max, at=at))
        del pess
    if o is None:
        return p, None
    errs *= 2.0
    opt = with_float_allowance(h, i_lo, on_grid(o), pair.p_inf, "optimistic", errs,
                               rho_max, at=at)
    return p, strip(opt)


#: bins per chunk of :func:`_connect_the_dots` (its temporaries are chunk-sized)
_CTD_CHUNK = 1 << 16


def _connect_the_dots(a: np.ndarray, pb: np.ndarray, qb: np.ndarray, e: np.ndarray,
                      pm_all: np.ndarray, p_above: np.ndarray | None) -> np.ndarray:
    """The pessimistic masses at the grid points a (Doroshenko et al. 2022): each bin's
    Q-mass ``qb - e`` at its lower end and ``e`` at its upper end, as P-masses ``a q``; the
    P-mass below the grid at its first point.  Built in chunks (the lower ends of all bins
    first, then the upper ends: the additions of the one-pass form, in its order).
    ``p_above``: :func:`suffix_sums` of ``pm_all``, if already computed."""
    K = len(qb)
    pess = np.zeros(len(a))
    low_any = bool(np.any(qb < _Q_NORMAL)) if K else False
    if low_any and p_above is None:
        p_above = suffix_sums(pm_all)
    for upper in (False, True):
        for s0 in range(0, K, _CTD_CHUNK):
            s1 = min(K, s0 + _CTD_CHUNK)
            part = a[s0 + 1 : s1 + 1] * e[s0:s1] if upper else \
                a[s0:s1] * (qb[s0:s1] - e[s0:s1])
            # bins whose Q-mass is out of the normal float range (near the 700 clip it
            # underflows to 0 and e^l q_b lost the bin's P-mass: group of 4, K s = 70,
            # q = 0.01, upper delta 1.3e-7 below the truth, review27): the bin's P-mass at
            # its upper end (rounding the losses up is pessimistic), raised by its float
            # error (8 u of the P-tail above)
            if low_any:
                low = qb[s0:s1] < _Q_NORMAL
                if np.any(low):
                    if upper:
                        assert p_above is not None
                        tail_p = p_above[1 + s0 : 1 + s1]  # P(L > l_i), the bins' left ends
                        part[low] = pb[s0:s1][low] * (1.0 + 1e-12) + 2.0 ** -50 * tail_p[low]
                    else:
                        part[low] = 0.0
            if upper:
                pess[s0 + 1 : s1 + 1] += part
            else:
                pess[s0:s1] += part
    pess[0] += pm_all[0]
    return pess


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


