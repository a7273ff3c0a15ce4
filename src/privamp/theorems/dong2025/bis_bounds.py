"""Bounds of the Balanced Iteration PLD built from certified values
(:mod:`privamp.theorems.dong2025.bis_pld`): the dominated grid pair from lower bounds at
the grid points (:func:`lower_profile_pld`) and the add-direction tail bound
(:func:`add_tail_upper`).  Split from :mod:`privamp.theorems.dong2025.bis_lattice`
(issue 28: file size).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ...errors import NotApplicable
from ...pld.grid import PLD
from ...pld.profiles import lower_hull

__all__ = ["DegenerateProfile", "add_tail_upper", "lower_profile_pld"]


class DegenerateProfile(NotApplicable):
    """The certified lower-bound points admit no dominated grid pair (only the lower bound
    is lost; raised by :func:`lower_profile_pld`)."""


def lower_profile_pld(l_idx: np.ndarray, h: float, d_low: np.ndarray, q_up: np.ndarray,
                       q_low: np.ndarray, lines: bool = False) -> PLD:
    """Optimistic grid PLD of one direction from certified bounds at the grid losses l_i:
    ``d_low[i] <= D(a_i)``, ``q_low[i] <= Q(L > l_i) <= q_up[i]`` (a_i = e^{l_i}); or, with
    ``lines``, D(a) >= d_low[i] - q_up[i] (a - a_i) for all a (the value of a test A at a_i,
    P(A) - a Q(A) with the Q(A) bound q_up[i] = q_low[i]: a line below D), which gives the
    same two tangents below.

    D is convex with right derivative -Q(L > l) and left derivative -Q(L >= l) at a = e^l,
    so on [a_i, a_{i+1}] it lies above both tangents d_low_i - q_up_i (a - a_i) and
    d_low_{i+1} + q_low_{i+1} (a_{i+1} - a).  The chord through the two lower values exceeds
    their maximum by at most g_i = Delta_i A B / (A + B) (A, B = the chord's slope excess
    over the two tangents, clipped at 0), so the chord lowered by max(g_{i-1}, g_i) at each
    vertex lies below D.  Left of a_0 the tangent with slope -q_low_0 gives the value at
    a = 0 (<= 1: a sub-probability P', i.e. P-mass dropped; also lowered to
    min_i v_i + a_i so that the total Q'-mass is <= 1); at the first vertex j with a
    value <= 0, the value at j - 1 is set to 0 (the segment before then lies below the old
    one) and the profile is 0 afterwards.  The greatest convex minorant of these points is
    the profile of a grid pair below D, i.e. dominated by the true pair (Blackwell), and this
    survives composition.  Raises :class:`DegenerateProfile` (a NotApplicable) if that pair
    would need Q-mass > 1.
    """
    # (clipping at 1 keeps the tangents below D, whose slopes are >= -1; the running minimum
    # only for bounds on the nonincreasing Q(L > l), not for the slopes of given lines)
    q_up = np.clip(q_up, 0.0, 1.0)
    if not lines:
        q_up = np.minimum.accumulate(q_up)
    q_low = np.clip(q_low, 0.0, 1.0)
    a = np.exp(l_idx * h)
    dl = np.minimum(d_low, 1.0)
    delta_a = np.diff(a)
    m_c = np.diff(dl) / delta_a
    A = np.maximum(m_c + q_up[:-1], 0.0)
    B = np.maximum(-(m_c + q_low[1:]), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        g = np.where(A + B > 0, delta_a * A * B / np.where(A + B > 0, A + B, 1.0), 0.0)
    mu = np.concatenate([[g[0]], np.maximum(g[:-1], g[1:]), [g[-1]]])
    v = dl - mu * (1 + 1e-9) - 1e-15
    nonpos = np.nonzero(v[1:] <= 0.0)[0]
    if len(nonpos):
        j = int(nonpos[0]) + 1
        v = v[:j].copy()
        v[j - 1] = 0.0
    else:
        v = v.copy()
        v[-1] = 0.0
    # value at a = 0, lowered so that every slope from (0, y0) is >= -1 (total Q-mass <= 1)
    y0 = min(float(v[0] + q_low[0] * a[0]), 1.0, float(np.min(v + a[: len(v)]))) - 1e-12
    xs = np.concatenate([[0.0], a[: len(v)]])
    ys = np.concatenate([[y0], v])
    hull = lower_hull(xs, ys)
    hx, hy = xs[hull], ys[hull]
    slopes = np.diff(hy) / np.diff(hx)
    if -slopes[0] > 1.0 + 1e-9:
        raise DegenerateProfile("the optimistic BIS profile would need Q-mass > 1")
    after = np.concatenate([slopes[1:], [0.0]])
    qm = np.maximum(after - slopes, 0.0)
    masses = np.zeros(len(l_idx))
    masses[np.array(hull[1:]) - 1] = qm * hx[1:]
    masses *= 1.0 - 1e-12
    # slack: float error of the chord / hull arithmetic (values are sums of terms <= 1)
    return PLD(h, int(l_idx[0]), masses, 0.0, "optimistic", 1e-12)


def add_tail_upper(s: float, T: int, l: np.ndarray) -> np.ndarray:
    """Upper bounds on the add-order profile E_Q[(1 - e^l r)_+] <= Q(r < e^{-l}) of one
    epoch (k = 1, r = S / T, S = sum_i exp(s y_i - s^2 / 2), y ~ N(0, I_T) under Q): r <
    e^{-l} needs every term below T e^{-l}, i.e. every y_i < z = (log T - l + s^2 / 2) / s,
    so the bound is Phi(z)^T -- the tail the lattice chords cannot resolve (their floor is
    about the Q-mass of the first lattice cell: 0.05 at T = 2, sigma = 0.56).  log Phi by
    scipy's log_ndtr (a few ulp), the power and exp rounded up by a relative 1e-9."""
    z = (math.log(T) - np.asarray(l, dtype=float) + 0.5 * s * s) / s
    return np.minimum(np.exp(T * special.log_ndtr(z)) * (1.0 + 1e-9), 1.0)
