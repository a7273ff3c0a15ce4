"""Grid PLDs from bounds on a privacy profile at grid losses.

A privacy profile H(a) = sup_A P(A) - a Q(A) is convex and nonincreasing in a >= 0, with
H(0) = 1.  Upper bounds at finitely many points a_i = e^{l_i} determine a dominating pair:
the greatest convex minorant of those points is itself the profile of a discrete pair, whose
Q-masses are the slope increments at the hull's vertices (Zhu, Dong, Wang 2022,
arXiv:2106.08567, Sec. 4).  Generic: names no mechanism.
"""
from __future__ import annotations

import numpy as np

from .grid import PLD

__all__ = ["lower_hull", "upper_profile_pld"]


def upper_profile_pld(l_idx: np.ndarray, h: float, upper: np.ndarray) -> PLD:
    """Pessimistic grid PLD whose profile is the greatest convex minorant of (0, 1),
    (e^{l_i}, U_i) (U made nonincreasing), flat after the last point: with U_i >= H_{e^{l_i}}
    of some pairs (both orders), that minorant lies above each pair's convex profile, so the
    grid pair dominates them all (Blackwell) and may be composed (Zhu, Dong, Wang 2022,
    arXiv:2106.08567).  ``l_idx``: grid indices (losses l_idx h), increasing."""
    u = np.minimum.accumulate(np.clip(upper, 0.0, 1.0))
    a = np.exp(l_idx * h)
    xs = np.concatenate([[0.0], a])
    ys = np.concatenate([[1.0], u])
    hull = lower_hull(xs, ys)
    hx, hy = xs[hull], ys[hull]
    slopes = np.diff(hy) / np.diff(hx)  # nonpositive, increasing
    after = np.concatenate([slopes[1:], [0.0]])
    q = np.maximum(after - slopes, 0.0)  # Q-mass at each hull vertex (excluding a = 0)
    p = q * hx[1:]
    masses = np.zeros(len(l_idx))
    masses[np.array(hull[1:]) - 1] = p
    inf_mass = float(hy[-1])
    # total P-mass must be 1 (the hull passes through (0, 1)): a float residue goes to the
    # first vertex v after 0, which raises the profile by r (1 - a / v)_+ only, exactly the
    # deficit r (1 - a / v) of the segment from (0, 1 - r) to v (at +inf it would raise
    # every tail value by r)
    total = inf_mass + float(masses.sum())
    if total < 1.0:
        masses[hull[1] - 1] += 1.0 - total
    # float error, relative: the profile of these masses is piecewise linear with kinks at
    # the hull's vertices, like the hull, so it is >= the hull if it is at every vertex a_i.
    # There it is inf_mass + sum_{k >= i} |s'_k| (a_{k+1} - a_i) with the effective slopes
    # s'_k = -sum_{j > k} q_j; each slope (a quotient of two differences) and each
    # increment carries a relative error of a few u, and the increments of the nonpositive,
    # increasing slopes sum to |s_{k+1}|, so s'_k is within ~4u |s_{k+1}| of the hull's
    # slope; with p = q a (one more rounding) the profile is within ~8u relative of the
    # hull's value, which the factor 1 + 1e-12 covers (no absolute slack: small deltas keep
    # their answers)
    up = 1.0 + 1e-12
    return PLD(h, int(l_idx[0]), masses * up, inf_mass * up, "pessimistic", 0.0)


def lower_hull(xs: np.ndarray, ys: np.ndarray) -> list[int]:
    """Indices of the lower convex hull of the points (xs increasing): a point is removed when
    it lies on or above the segment joining its neighbours on the hull."""
    hull: list[int] = []
    for i in range(len(xs)):
        while len(hull) >= 2:
            i0, i1 = hull[-2], hull[-1]
            cross = (xs[i1] - xs[i0]) * (ys[i] - ys[i0]) - (ys[i1] - ys[i0]) * (xs[i] - xs[i0])
            if cross <= 0:
                hull.pop()
            else:
                break
        hull.append(i)
    return hull
