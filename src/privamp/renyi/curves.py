"""Operations on RDP curves that any result may use: the chord bound of a convex CGF between
integer orders, and the monotone envelope over orders (van Erven & Harremoes 2014, Thm 3).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "monotone_envelope",
]


def interpolate_cgf(alpha: np.ndarray, cgf_at) -> np.ndarray:
    """Bound the CGF ``(alpha-1) eps(alpha)`` at real orders from bounds at integers.

    ``cgf_at(ints)`` returns upper bounds on the CGF at the integer orders ``ints`` (>= 2).  The
    true CGF is convex with value 0 at alpha = 1, so the chord between neighbouring integers
    bounds it.  Returns eps bounds (CGF / (alpha - 1)).
    """
    a = np.asarray(alpha, dtype=float)
    lo = np.floor(a)
    hi = np.ceil(a)
    ints = np.unique(np.concatenate([lo[lo >= 2], hi]).astype(np.int64))
    vals = np.asarray(cgf_at(ints), dtype=float)
    lookup = dict(zip(ints.tolist(), vals.tolist(), strict=True))
    f_lo = np.array([0.0 if v < 2 else lookup[int(v)] for v in lo])
    f_hi = np.array([lookup[int(v)] for v in hi])
    t = a - lo
    with np.errstate(invalid="ignore"):  # 0 * inf on the unused branch
        cgf = np.where(hi == lo, f_hi, (1 - t) * f_lo + t * f_hi)
        eps = cgf / (a - 1)
    # between 1 and 2 the chord from (1, 0) gives exactly the CGF bound at 2
    return np.where((lo < 2) & (hi == 2), f_hi, eps)


_ANCHORS = np.array([1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0])


def monotone_envelope(alpha: np.ndarray, eps_fn) -> np.ndarray:
    """min over beta >= alpha of eps_fn(beta), over the requested orders plus a few anchor
    orders: sound because Rényi divergences are nondecreasing in the order (van Erven &
    Harremoës 2014, Thm 3), and it removes the blow-up of bounds like Mironov's Cor 4 (or a
    factor 2) as alpha -> 1."""
    a = np.asarray(alpha, dtype=float)
    grid = np.unique(np.concatenate([a.ravel(), _ANCHORS[_ANCHORS > a.min()]]))
    vals = np.asarray(eps_fn(grid), dtype=float)
    env = np.minimum.accumulate(vals[::-1])[::-1]
    return env[np.searchsorted(grid, a)]

