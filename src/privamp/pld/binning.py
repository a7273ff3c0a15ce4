"""Discretisation numerics of one step's grid pair (no PLD objects): the connect-the-dots
bin split (Doroshenko et al. 2022, arXiv:2207.04380, Sec. 3), privamp's optimistic masses
(lowered chords chained at the tents, then the convex minorant), and the bounds on the float
error of the tail evaluations with their relative/additive split.

Split from :mod:`privamp.pld.grid` (issue 26); the soundness arguments are in that module's
docstring.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import isotonic_regression

from ..numerics.fft import UNIT_ROUNDOFF

__all__ = [
    "bin_split",
    "chord_slopes",
    "chord_tents",
    "chord_values",
    "convex_masses",
    "optimistic_masses",
    "relative_split",
    "split_tail_errors",
    "suffix_sums",
    "tail_errors",
    "tail_side",
    "vertex_lowering",
]


_U = UNIT_ROUNDOFF


_U_LD = float(np.finfo(np.longdouble).eps) / 2.0


def tail_errors(pm: np.ndarray, qm: np.ndarray, a: np.ndarray, ulps: float = 4.0,
                 p_above: np.ndarray | None = None) -> np.ndarray:
    """Bounds E_k on the float error of the grid pair's profile at the grid points a_k.

    The tails are evaluated within 4 ulp (relative) and each bin mass is the rounded
    difference of the two smaller tails, so the tails telescoped from the stored masses are
    within 12 u of the true ones relative to R_k = (stored mass above l_k) above the
    distribution's switch point (where the upper tail becomes the smaller one), and within
    12 u (total + R_k) below it.  The profile at a_k is P(L > l_k) - a_k Q(L > l_k), so
    ``E_k = 12 u (e_P + a_k e_Q)`` with those two terms, times a safety factor 2.  Tails
    known to ``ulps`` ulp instead of 4 scale this by ulps / 4.  ``p_above``: the
    :func:`suffix_sums` of ``pm``, if already computed.
    """
    out = tail_side(qm)
    out *= a
    out += tail_side(pm, p_above)
    out *= 6.0 * ulps * _U
    out += 1e-300
    return out


def suffix_sums(m: np.ndarray) -> np.ndarray:
    """``s_k = m_k + (m_{k+1} + (... + m_last))``, summed from the top (a reversed cumsum,
    written reversed into a contiguous array: the same floats)."""
    out = np.empty(len(m))
    if len(m):
        np.cumsum(m[::-1], out=out[::-1])
    return out


#: :func:`tail_side` looks for the switch point in prefix sums of this many masses first
#: (doubling): the switch of a small-rate pair sits near the grid's bottom
_SWITCH_CHUNK = 512


def tail_side(m: np.ndarray, above_all: np.ndarray | None = None) -> np.ndarray:
    """Per grid point l_k, the stored mass above l_k if that is the smaller tail there, else
    the total plus it: what the 12 u error of the telescoped tails of :func:`tail_errors` is
    relative to.  ``above_all``: ``suffix_sums(m)``, if already computed.

    The stored mass at or below l_k is ``m_0 + (m_1 + ... + m_k)`` (the sum inside from the
    bottom); for masses >= 0 the sums above decrease and those below increase with k (sums
    of nonnegative floats, rounded, are monotone), so the switch is the first k where the
    mass above is at most the mass below, found from the prefix sums up to there only --
    each the same float as in the full cumulative sum, its chain of additions continued
    from the last sum of the previous chunk (issue 28: a float cumsum costs ~25 additions'
    time here; for small-rate pairs the switch sits a few hundred points up)."""
    own = above_all is None  # (then the suffix sums are this function's to overwrite)
    above = (suffix_sums(m) if above_all is None else above_all)[1:]  # mass above l_k
    tot = float(m.sum())
    inner = m[1:-1]
    n = len(inner)  # above has n + 1 entries, k = 0..n

    def result(k: int) -> np.ndarray:  # above + tot before the switch k, above from there
        if not own:
            out = above + tot
            out[k:] = above[k:]
            return out
        np.add(above[:k], tot, out=above[:k])  # (issue 28: no second array)
        return above

    m0 = m[0]
    if not len(above):
        return above + tot
    if not math.isfinite(tot) or float(m.min()) < 0.0:
        out = above + tot
        below = np.concatenate(([m0], m0 + np.cumsum(inner)))  # stored mass <= l_k
        np.copyto(out, above, where=above <= below)
        return out
    if above[0] <= m0:  # (below_0 = m_0)
        return result(0) if own else above.copy()
    k = _switch_by_bounds(inner, above, m0, tot)
    if k is not None:
        return result(k)
    j, chunk, carry = 0, _SWITCH_CHUNK, None
    while j < n:
        part = inner[j : j + chunk]
        if carry is None:  # the cumsum's own chain of additions, from the bottom
            sums = np.cumsum(part)
        else:
            sums = np.cumsum(np.concatenate(([carry], part)))[1:]
        hit = np.flatnonzero(above[j + 1 : j + 1 + len(part)] <= m0 + sums)
        if len(hit):
            return result(j + 1 + int(hit[0]))
        carry = float(sums[-1])
        j += len(part)
        chunk *= 2
    return result(n + 1)


#: :func:`_switch_by_bounds` looks for its candidate in chunks of this many points
_SEARCH_CHUNK = 1 << 16


def _switch_by_bounds(inner: np.ndarray, above: np.ndarray, m0: float, tot: float
                      ) -> int | None:
    """The switch k of :func:`tail_side` (first k with ``above_k <= below_k``, the float
    ``below_k = fl(m_0 + c_{k-1})``, c the sequential cumsum of ``inner``), when bounds
    decide it without the cumsum, else None.  A sum of j nonnegative floats in any order is
    within ``gamma_j = j u / (1 - j u)`` (relative) of the exact sum, plus 2^-1075 per
    addition among subnormals, so the sequential c_{k-1} and numpy's (pairwise) sum of the
    same k terms are within ``3 (k + 2) u`` (relative) + ``(k + 2) 1e-323`` of each other;
    the candidate k (where ``above_k <= tot - above_k`` first holds) is the switch if
    ``above_k`` lies below the lower bound of ``below_k`` and ``above_{k-1}`` above the upper
    bound of ``below_{k-1}`` (the comparisons are monotone in k: see :func:`tail_side`)."""
    n = len(inner)
    if n < 1 or n * _U > 1e-6:
        return None
    k = n + 1  # (n + 1: no switch)
    for i in range(0, n + 1, _SEARCH_CHUNK):  # the first k with above_k <= tot - above_k
        part = above[i : i + _SEARCH_CHUNK]
        hit = np.flatnonzero(part <= tot - part)
        if len(hit):
            k = i + int(hit[0])
            break

    def bounds(i: int) -> tuple[float, float]:  # float below_i lies within these
        if i == 0:
            return m0, m0
        a = float(np.sum(inner[:i]))
        g, t = 3.0 * (i + 2) * _U, (i + 2) * 1e-323
        # (8 u: the u of fl(m_0 + c) and the roundings of these bounds' own 4 operations)
        return ((m0 + (a * (1.0 - g) - t)) * (1.0 - 8.0 * _U) - t,
                (m0 + (a * (1.0 + g) + t)) * (1.0 + 8.0 * _U) + t)

    if k >= 1 and not above[k - 1] > bounds(k - 1)[1]:
        return None
    if k <= n and not above[k] <= bounds(k)[0]:
        return None
    return k


def split_tail_errors(pm: np.ndarray, qm: np.ndarray, pb: np.ndarray, l: np.ndarray,
                       w: float, acc: np.ndarray, p_above: np.ndarray | None = None
                       ) -> np.ndarray:
    """Bounds E_k on the float error of the grid pair's profile at a_k = e^{l_k} for the
    mixture (w P + (1 - w) Q, Q) whose cell masses are ``qm`` (base Q on the preimage
    cells), ``pb`` (base P) and ``pm = fl((1 - w) qm + w pb)``
    (:meth:`privamp.pairs.combinators.MixturePair.split_bin_masses`).

    ``acc``: per edge, the relative accuracy of the base tails there.  Telescoped from the
    stored masses (each the rounded difference of the smaller tails), the tails of qm and
    pb above l_k err by eta^Q_k, eta^P_k <= (2 acc_k + u) :func:`tail_side` at l_k plus
    acc_K times the top cell's mass (the other end of the telescope; below the switch the
    lower tails' ends, within the total); with ``acc = 4 u`` this is the 12 u of
    :func:`tail_errors`.  The combination rounds each P-mass by a relative 3.01 u.  So the
    profile errs by at most ``|a_k - 1 + w| |eta^Q_k| + w |eta^P_k| + 3.01 u (stored P-mass
    above l_k)``, taken twice (safety factor 2; c_k >= |a_k - 1 + w| with expm1's error)."""
    # (ordered so that at most three arrays of the grid's length are alive here at once,
    # each value from the same float operations as before: issue 28, session 11)
    side_p = tail_side(pb)
    side_p *= w
    em = np.expm1(l)
    c = np.add(em, w)
    np.abs(c, out=c)
    c *= 1.0 + 4.0 * _U
    np.abs(em, out=em)
    em *= 4.0 * _U
    c += em
    del em
    eta = tail_side(qm)
    top_q, top_p = float(acc[-1]) * qm[-1], float(acc[-1]) * pb[-1]
    # eta = r (c tail_side(qm) + w tail_side(pb)) + c top_q + w top_p, in place
    eta *= c
    eta += side_p
    del side_p
    r = np.maximum(acc, 4.0 * _U)
    r *= 3.0
    r += _U  # >= 2 acc + u, and 12 u at acc = 4 u
    eta *= r
    del r
    c *= top_q
    eta += c
    del c
    eta += w * top_p
    # 2 eta + 8 u above + 1e-300
    eta *= 2.0
    above = (suffix_sums(pm) if p_above is None else p_above)[1:] * (1.0 + 2.0 * len(pm) * _U)
    above *= 8.0 * _U
    eta += above
    eta += 1e-300
    return eta


def relative_split(vertex: np.ndarray, err: np.ndarray, rho_max: float = 1e-10
                    ) -> tuple[float, float]:
    """(rho, s) with ``rho * G(a) + s >= Err(a)`` on every segment, for a grid profile G
    with values ``vertex`` at the grid points and an error Err at most ``max(E_k, E_k+1)``
    on segment k (G decreases, so G >= G_{k+1} there).

    A relative part rho costs a T-fold composition ``T rho`` times the (small) delta it is
    queried at, an additive part ``T s``; rho is the largest ratio E / G over the segments
    where G is not tiny, at most ``rho_max``; s covers the rest.  ``vertex`` is lowered by the
    float error of its own summation and by E first (it stands in for the true profile).
    """
    n = len(vertex)
    if n < 2:
        return 0.0, float(err.max()) if len(err) else 0.0
    e_seg = np.maximum(err[:-1], err[1:])
    g_low = vertex[1:] * (1.0 - 4.0 * n * _U)
    g_low -= err[1:]
    np.maximum(g_low, 0.0, out=g_low)
    ratio = np.full(n - 1, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(e_seg, g_low, out=ratio, where=g_low > 0)
    np.copyto(ratio, 0.0, where=~(ratio <= rho_max))
    rho = float(min(np.max(ratio), rho_max)) * (1.0 + 1e-6)
    g_low *= rho
    np.subtract(e_seg, g_low, out=g_low)
    np.maximum(g_low, 0.0, out=g_low)
    s = float(np.max(g_low))
    return rho, s * (1.0 + 1e-6)


def bin_split(pb: np.ndarray, qb: np.ndarray, a: np.ndarray, h: float | np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """(Delta_i = a_{i+1} - a_i, e_i = the Q-mass of bin i sent to its upper end) for bins
    (l_i, l_{i+1}] of P- and Q-masses pb, qb on the grid a_i = e^{l_i} of step h (or of
    steps h_i = l_{i+1} - l_i): the connect-the-dots split keeping each bin's P- and
    Q-mass."""
    em1 = np.expm1(h)
    e = pb / a[:-1]
    e -= qb
    e /= em1
    return a[:-1] * em1, np.clip(e, 0.0, qb, out=e)


def optimistic_masses(l: np.ndarray, a: np.ndarray, dlt: np.ndarray, qb: np.ndarray,
                       e: np.ndarray, qgt: np.ndarray, q_ge) -> np.ndarray:
    """P-masses on the grid of a pair whose profile lies below D everywhere.

    Chord slopes m_i = -Q(L > l_{i+1}) - e_i; with A = Q_i - e_i, B = e_i, D lies above the
    tangents at both ends of segment i (slopes m_i - A and m_i + B), i.e. above the chord
    minus a tent of height g_i = Delta_i A B / (A + B) peaked at relative position
    t_i = B / (A + B); vertex lowerings mu_i come from :func:`vertex_lowering`; values
    v_i = W_i - mu_i with W_i = D(a_i) - D(a_K) <= D(a_i).  The grid ends at the first K'
    with v_K' <= 0, where the value is set to 0 and v_{K'-1} <= Q(L >= l_K') Delta (the
    tangent through (a_K', 0) with the left derivative, a subgradient);
    a virtual point at a = 0 on the line of slope -Q(L >= l_0) through (a_0, v_0) covers
    [0, a_0].  The greatest convex minorant of these points (isotonic regression of the
    slopes with weights Delta) is the optimistic profile; its slope increments are Q'-masses.

    ``qgt`` holds Q(L > l_i), i = 0..K, and ``q_ge(i)`` returns Q(L >= l_i) (``l``, the
    losses, is not read: ``a`` carries the grid).  The work is done by the stages
    :func:`chord_tents`, :func:`chord_values`, :func:`chord_slopes`, :func:`convex_masses`.
    """
    qge0 = float(q_ge(0))  # Q(L >= l_0)
    m, g, t = chord_tents(dlt, qb, e, qgt)
    v, mu = chord_values(m, dlt, g, t)
    del g, t
    slopes, weights = chord_slopes(m, dlt, mu, v, qge0, q_ge, float(a[0]))
    del m, v, mu
    return convex_masses(slopes, weights, a)


# The stages of :func:`optimistic_masses`, public so that a caller holding grid-length
# arrays can release them between stages (issue 28: ``discretise`` drops its inputs as they
# die); each stage computes its values by the same float operations as the whole did.
def chord_tents(dlt: np.ndarray, qb: np.ndarray, e: np.ndarray, qgt: np.ndarray,
                e_dead: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stage 1 of :func:`optimistic_masses`: per segment i, the chord slope
    ``m_i = -Q(L > l_{i+1}) - e_i``, the tent height ``g_i = Delta_i A B / (A + B)`` and its
    peak's relative position ``t_i = B / (A + B)`` (A = Q_i - e_i, B = e_i).

    Args:
        dlt: the segment lengths Delta_i = a_{i+1} - a_i (K of them).
        qb: the bins' Q-masses.
        e: the Q-mass of each bin sent to its upper end (:func:`bin_split`).
        qgt: Q(L > l_i), i = 0..K.
        e_dead: the caller no longer needs ``e``: t is written over it.

    Returns:
        (m, g, t), arrays of length K (the inputs are not modified, but for ``e`` if
        ``e_dead``).
    """
    m = np.negative(qgt[1:])
    m -= e
    with np.errstate(invalid="ignore", divide="ignore"):
        pos = qb > 0
        everywhere = bool(pos.all())
        safe = qb if everywhere else np.where(pos, qb, 1.0)
        g = np.subtract(qb, e)  # A, then Delta A B / (A + B) in place (A Delta = Delta A)
        g *= dlt
        g *= e
        g /= safe
        t = np.divide(e, safe, out=e) if e_dead else e / safe
        if not everywhere:
            np.copyto(g, 0.0, where=~pos)
            np.copyto(t, 0.5, where=~pos)
        np.clip(t, 0.0, 1.0, out=t)
    return m, g, t


def chord_values(m: np.ndarray, dlt: np.ndarray, g: np.ndarray, t: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Stage 2 of :func:`optimistic_masses`: the lowered chord values
    ``v_i = W_i - mu_i`` (W_i = D(a_i) - D(a_K), the suffix sums of ``-m Delta``) and the
    vertex lowerings mu of :func:`vertex_lowering` (capped by W).

    Args:
        m, dlt, g, t: the chord slopes, segment lengths and tents of :func:`chord_tents`.

    Returns:
        (v, mu), each of length K + 1.
    """
    K = len(m)
    w = np.zeros(K + 1)
    down = np.negative(m)
    down *= dlt
    np.cumsum(down[::-1], out=w[K - 1 :: -1] if K else w[:0])  # suffix_sums(down), in place
    del down
    mu = vertex_lowering(g, t, cap=w)
    np.subtract(w, mu, out=w)  # v
    return w, mu


def chord_slopes(m: np.ndarray, dlt: np.ndarray, mu: np.ndarray, v: np.ndarray,
                 qge0: float, q_ge, a0: float) -> tuple[np.ndarray, np.ndarray]:
    """Stage 3 of :func:`optimistic_masses`: the slopes of the lowered chords up to the
    grid's end K' (the first index >= 1 with v <= 0; the last segment is the tangent at
    a_K' with slope -Q(L >= l_K')), after the virtual segment [0, a_0] of slope
    -Q(L >= l_0), with their weights (the segments' lengths).

    Args:
        m, dlt: chord slopes and segment lengths (:func:`chord_tents`).
        mu, v: vertex lowerings and lowered values (:func:`chord_values`).
        qge0: Q(L >= l_0).
        q_ge: ``q_ge(i)`` returns Q(L >= l_i).
        a0: a_0 = e^{l_0}.

    Returns:
        (slopes, weights), each of length K' + 1.
    """
    K = len(m)
    nonpos = np.nonzero(v[1:] <= 0)[0]
    kend = int(nonpos[0]) + 1 if len(nonpos) else K  # first index >= 1 with v <= 0
    del nonpos
    slopes = np.empty(kend + 1)
    slopes[0] = -qge0
    # slopes on segments 0..kend-1
    s = slopes[1:]
    np.subtract(mu[1 : kend + 1], mu[:kend], out=s)
    s /= dlt[:kend]
    np.subtract(m[:kend], s, out=s)
    # tangent at a_K' with the left derivative -Q(L >= l_K') (a subgradient of D there)
    q_at = float(q_ge(kend))
    v_last = min(float(v[kend - 1]), q_at * float(dlt[kend - 1]))
    v_last = max(v_last, 0.0)
    s[kend - 1] = -v_last / dlt[kend - 1]
    if kend >= 2:
        # keep v_{kend-1} consistent: the segment before ends at the (possibly lowered) value
        s[kend - 2] = (v_last - v[kend - 2]) / dlt[kend - 2]
    weights = np.empty(kend + 1)
    weights[0] = a0
    weights[1:] = dlt[:kend]
    return slopes, weights


def convex_masses(slopes: np.ndarray, weights: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Stage 4 of :func:`optimistic_masses`: the greatest convex minorant of the lowered
    chords (isotonic regression of ``slopes`` with ``weights``, capped at 0) and its slope
    increments, the Q'-masses, as P-masses ``a_j q_j`` on the grid (zero beyond K').

    Args:
        slopes, weights: from :func:`chord_slopes` (length K' + 1).
        a: the grid a_i = e^{l_i}, i = 0..K.

    Returns:
        The K + 1 P-masses, scaled down for the pooled slopes' rounding.
    """
    K = len(a) - 1
    kend = len(slopes) - 1
    fit = isotonic_regression(slopes, weights=weights, increasing=True).x
    np.minimum(fit, 0.0, out=fit)
    # Q'-mass at a_j = slope increment there (slope after the last point is 0)
    n = len(fit)
    inc = np.empty(n)
    np.subtract(fit[1:], fit[:-1], out=inc[:-1])
    if n:
        inc[-1] = 0.0 - fit[-1]
    del fit
    # a pooled slope (weighted mean of m slopes of one sign) carries a relative error
    # <= (m + 2) u, and the profile at a is the integral of |slope| to its right, so scaling
    # the masses down by 4 (m + 2) u covers it (m: the longest run of pooled slopes)
    if n:
        runs = np.flatnonzero(inc[:-1] != 0.0)  # (inc[:-1] is np.diff(fit))
        m = int(np.max(np.diff(np.concatenate(([-1], runs, [n - 1])))))
        del runs
    else:
        m = 1
    q = np.maximum(inc, 0.0, out=inc)
    out = np.zeros(K + 1)
    np.multiply(a[: kend + 1], q, out=out[: kend + 1])
    out *= 1.0 - 4.0 * (m + 2) * _U
    return out


#: segments per block of the chained vertex lowering (blocks are chained in parallel)
_CHAIN_BLOCK = 32


#: a tent peak at relative position t < _CHAIN_LEFT loads the segment's left vertex instead
_CHAIN_LEFT = 1e-3


def vertex_lowering(g: np.ndarray, t: np.ndarray, cap: np.ndarray | None = None
                     ) -> np.ndarray:
    """Lowerings mu_0..mu_K >= 0 of the chord vertices such that every lowered segment lies
    below the tent envelope of its segment (hence below D).

    The lowered segment i runs from (a_i, D_i - mu_i) to (a_{i+1}, D_{i+1} - mu_{i+1}); the
    envelope is the chord minus a tent of height g_i at relative position t_i (zero at both
    ends).  Line minus envelope is concave and piecewise linear with its only kink at the
    tent's peak, so the segment lies below the envelope iff it does at the ends and at the
    peak: mu_i, mu_{i+1} >= 0 and ``(1 - t_i) mu_i + t_i mu_{i+1} >= g_i``.

    Any such mu is sound; small ones give a tight optimistic PLD.  ``mu_i = max(g_{i-1},
    g_i)`` satisfies the constraints but lowers both ends of a segment by its whole gap; the
    chain ``mu_{i+1} = max(0, (g_i - (1 - t_i) mu_i) / t_i)`` makes every constraint tight
    (this is the optimistic analogue of connect-the-dots: each segment touches the envelope
    at its peak, and for a pair with one atom per bin -- where the envelope *is* the profile --
    it is a post-processing of the pair).  For speed the chain runs in blocks of
    ``_CHAIN_BLOCK`` segments in parallel, each block starting from the max-rule value
    (feasible on both sides); a block's last vertex takes the max of both values.  Where
    the chain would lower the right vertex below zero value (beyond ``cap``, the chord's
    value there) or the peak sits at the left end (t < ``_CHAIN_LEFT``), the segment loads
    its left vertex instead (``mu_i >= g_i / (1 - t_i)``, ``mu_{i+1} = 0``), or both ends by
    g_i if that too exceeds the cap.  A final check in float (with g inflated by 1e-9
    relative) raises any vertex of a violated constraint to the max-rule value, which
    satisfies it.
    """
    K = len(g)
    L = _CHAIN_BLOCK
    nb = -(-K // L)
    # the blocks are independent: chunks of _CHAIN_CHUNK blocks run one after another, so
    # the chain's per-segment tables are chunk-sized, not grid-sized (issue 28; every value
    # comes from the same float operations as in one pass, so the result is bit-identical)
    mu = np.zeros(nb * L + 1)
    ends = np.empty(nb)  # the chain's value at each block's last vertex
    for b0 in range(0, nb, _CHAIN_CHUNK):
        b1 = min(nb, b0 + _CHAIN_CHUNK)
        _chain_chunk(g, t, cap, b0, b1, mu, ends)
    # a block's last vertex is the next block's first: both values must hold
    np.maximum(mu[L : nb * L + 1 : L], ends, out=mu[L : nb * L + 1 : L])
    mu = mu[: K + 1]
    # final check in float, chunked; the fixes use the violations found before any fix
    found: list[np.ndarray] = []
    for s0 in range(0, K, _CHAIN_CHUNK * L):
        s1 = min(K, s0 + _CHAIN_CHUNK * L)
        ts = t[s0:s1]
        lhs = (1.0 - ts) * mu[s0:s1]
        lhs += ts * mu[s0 + 1 : s1 + 1]
        found.append(np.nonzero(lhs < g[s0:s1] * (1.0 + 1e-9))[0] + s0)
    bad = np.concatenate(found) if found else np.zeros(0, dtype=np.intp)
    if len(bad):
        mm0, mm1 = _max_rule_at(g, bad), _max_rule_at(g, bad + 1)
        mu[bad] = np.maximum(mu[bad], mm0)
        mu[bad + 1] = np.maximum(mu[bad + 1], mm1)
    return mu


#: blocks per chunk of :func:`vertex_lowering` (2^10 blocks: 2^15 segments, 256 KiB a table)
_CHAIN_CHUNK = 1024


def _max_rule_at(g: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The max-rule lowering ``max(g_{i-1}, g_i)`` (one-sided at the ends) of
    :func:`vertex_lowering` at vertices ``idx``, with g inflated by 1e-9 relative."""
    K = len(g)
    lo = g[np.maximum(idx - 1, 0)] * (1.0 + 1e-9)
    hi = g[np.minimum(idx, K - 1)] * (1.0 + 1e-9)
    return np.maximum(lo, hi)


def _chain_chunk(g: np.ndarray, t: np.ndarray, cap: np.ndarray | None, b0: int, b1: int,
                 mu: np.ndarray, ends: np.ndarray) -> None:
    """Run the chain of :func:`vertex_lowering` on blocks b0..b1-1: writes the vertex values
    of those blocks into ``mu`` (vertices b0 L .. b1 L - 1) and the blocks' last-vertex
    values into ``ends[b0:b1]``."""
    K = len(g)
    L = _CHAIN_BLOCK
    nb = b1 - b0
    s0, s1 = b0 * L, min(K, b1 * L)
    up = 1.0 + 4.0 * _U
    # per-segment data as (L, nb) (row i: segment i of every block, contiguous); everything
    # the chain step needs that does not depend on the chain is computed once, by the same
    # float operations as the step would (the result is bit-identical to the step-by-step
    # form; the step itself works in place on rows, issue 28)
    gp = np.zeros(nb * L)
    np.multiply(g[s0:s1], 1.0 + 1e-9, out=gp[: s1 - s0])
    gp = gp.reshape(nb, L).T.copy()
    tp = np.full(nb * L, 0.5)
    tp[: s1 - s0] = t[s0:s1]
    tp = tp.reshape(nb, L).T.copy()
    cp = np.full(nb * L + 1, np.inf)  # vertices s0..s0 + nb L
    if cap is not None:
        cp[: s1 + 1 - s0] = cap[s0 : s1 + 1]
    cap_left = cp[: nb * L].reshape(nb, L).T
    cap_right = cp[1 : nb * L + 1].reshape(nb, L).T.copy()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        omt = 1.0 - tp
        tdiv = np.where(tp > 0, tp, 1.0)
        need = gp / np.where(tp < 1.0, 1.0 - tp, 1.0) * up
        gup = gp * up
        at_left = tp < _CHAIN_LEFT
        too_big = need > cap_left  # the left vertex cannot take it alone
        new_left = np.where(too_big, gup, need)
        del cp, cap_left, tp
        # vertex values of block b: rows 0..L (0 and L shared with the neighbours); row 0
        # starts from the max-rule value
        chain = np.zeros((L + 1, nb))
        chain[0] = _max_rule_at(g, np.arange(s0, s1, L))
        left = np.empty(nb, dtype=bool)
        both = np.empty(nb, dtype=bool)
        # rows without a left-end peak / an oversized tent skip those steps (no-ops there)
        any_at_left = at_left.any(axis=1).tolist()
        any_too_big = too_big.any(axis=1).tolist()
        for i in range(L):
            c, nxt = chain[i], chain[i + 1]
            # nxt = max((g - (1 - t) c) / t, 0) up, formed in place (session 12: no copy)
            np.multiply(omt[i], c, out=nxt)
            np.subtract(gp[i], nxt, out=nxt)
            np.divide(nxt, tdiv[i], out=nxt)
            np.maximum(nxt, 0.0, out=nxt)
            nxt *= up
            np.greater(nxt, cap_right[i], out=left)
            if any_at_left[i]:
                left |= at_left[i]
            if left.any():
                np.copyto(nxt, 0.0, where=left)
                if any_too_big[i]:
                    np.logical_and(left, too_big[i], out=both)
                    np.copyto(nxt, gup[i], where=both)
                np.maximum(c, new_left[i], out=c, where=left)
    mu[s0 : s0 + nb * L] = chain[:L].T.reshape(-1)
    ends[b0:b1] = chain[L]
