"""Rényi DP of one Poisson-subsampled step (add/remove and zero-out neighbours, group 1).

Notation: the base mechanism has a dominating pair (P, Q) with likelihood ratio L = dP/dQ
(P: the output with the differing record, Q: without).  With rate q, one step releases
M = (1 - q) Q + q P on one side of the neighbouring pair and Q on the other, so

* removal:   exp((a - 1) D_a(M || Q)) = Psi_a^rm  = E_Q[(1 - q + q L)^a],
* insertion: exp((a - 1) D_a(Q || M)) = Psi_a^ins = E_Q[(1 - q + q L)^(1 - a)],

(Mironov, Talwar, Zhang 2019, Sec. 3; Zhu & Wang 2019, Sec. 3).  Zero-out neighbours (a
record against a null record with zero contribution) give the same pair.  All three base
mechanisms here have symmetric pairs ((Q, P) is (P, Q) up to a relabelling of outputs), so
these two directions are all there is.

Both moments are computed as ``1 + E_Q[h_b(q (L - 1))]`` with
``h_b(u) = (1 + u)^b - 1 - b u >= 0`` (convexity of (1+u)^b for b > 1 and b < 0, and
E_Q[L] = 1), so that tiny rates keep full relative precision, and everything is in log space
so that orders up to 1e4 and more neither overflow nor underflow.

Registered results:

* ``"mironov-sgm"`` — the exact sampled-Gaussian RDP (Mironov, Talwar, Zhang 2019, Sec. 3.3
  for integer orders, Sec. 3.4 for real orders; the removal direction dominates, their Thm 5
  / Sec. 3.2).  Integer orders: the binomial expansion.  Real orders: log-space Gauss–Legendre
  quadrature of the defining integral on windows found from the integrand's modes, with
  analytic tail bounds; the value is rounded up by the quadrature error estimate.
* ``"poisson-exact"`` — the exact Poisson RDP, max over both directions, of Laplace
  (atoms in closed form + graded quadrature) and randomized response (finite sums).
* ``"zhu-wang"`` — Zhu & Wang 2019 general upper bound in the form of Schuchardt et al. 2024,
  Prop. E.4 (with the factor 2); any mechanism with an RDP curve.
* ``"zhu-wang-tight"`` — the same without the factor 2 (Dong et al. 2025, Thm 3.11; Zhu &
  Wang 2019, Thm 8); proven for removal only in general, so kept out of "best".
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..mechanisms import Gaussian, Laplace, Mechanism, RandomizedResponse
from ..numerics import bisect_monotone, log1mexp, logsubexp, logsumexp
from ..numerics.quadrature import graded_edges, level_crossing, log_quad, uniform_edges
from ..sampling import AddRemove, Poisson, Relation, Scheme, ZeroOut
from .registry import rdp_method

__all__ = [
    "sampled_gaussian_rdp",
    "poisson_exact_rdp",
    "poisson_direction_log_moments",
    "zhu_wang_rdp",
    "log_h",
]

_LOG_2PI_HALF = 0.5 * math.log(2.0 * math.pi)
#: relative safety added to every returned RDP value (covers floating-point rounding)
_REL_SAFETY = 1e-11
#: orders up to this are treated exactly by binomial sums when they are integers
_INT_MAX = 20000
_SERIES_TERMS = 60
#: Gauss–Legendre nodes per panel in the sampled-Gaussian quadrature
_GL_NODES = 12


# ----------------------------------------------------------------------------------------
# the elementary function h_b(u) = (1 + u)^b - 1 - b u, in log space
# ----------------------------------------------------------------------------------------
def log_h(b: np.ndarray | float, loss: np.ndarray | float, q: float) -> np.ndarray:
    """log((1 + u)^b - 1 - b u) with u = q (e^loss - 1), for b > 1 or b < 0, 0 < q <= 1.

    Elementwise with broadcasting; ``loss`` may be large (the result stays finite).  Small u:
    the binomial series sum_{k>=2} C(b, k) u^k (no cancellation); large (1 + u)^b: factored
    out; otherwise direct.  Returns -inf where u = 0.
    """
    b, loss = np.broadcast_arrays(np.asarray(b, dtype=float), np.asarray(loss, dtype=float))
    shape = b.shape
    b = b.ravel()
    loss = loss.ravel()
    lq = math.log(q)
    l1q = math.log1p(-q) if q < 1 else -np.inf
    out = np.empty(b.shape)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        small_loss = loss < 30.0
        u = np.where(small_loss, q * np.expm1(np.minimum(loss, 30.0)), np.inf)
        series = small_loss & (np.abs(u) <= 0.1) & (np.abs(b - 1.0) * np.abs(u) <= 0.5)
        idx = np.flatnonzero(series)
        if idx.size:
            us, bs = u[idx], b[idx]
            term = 0.5 * bs * (bs - 1.0) * us * us
            total = term.copy()
            for k in range(2, _SERIES_TERMS):
                term = term * ((bs - k) / (k + 1.0)) * us
                total = total + term
                if not (np.abs(term) > 1e-18 * np.abs(total)).any():
                    break
            out[idx] = np.log(total)
        rest = np.flatnonzero(~series)
        if rest.size:
            br, lr, ur = b[rest], loss[rest], u[rest]
            sl = small_loss[rest]
            lu = np.log1p(ur)
            if not sl.all():
                lu[~sl] = np.logaddexp(l1q, lq + lr[~sl])
            v = br * lu
            res = np.empty(rest.size)
            big = v >= 30.0
            negpos = ~big & (br < 0) & (lr > 0)
            direct = ~big & ~negpos
            i = np.flatnonzero(direct)
            if i.size:
                res[i] = np.log(np.maximum(np.expm1(v[i]) - br[i] * ur[i], 0.0))
            for sel, kind in ((np.flatnonzero(big), 0), (np.flatnonzero(negpos), 1)):
                if not sel.size:
                    continue
                bb, ll, vv = br[sel], lr[sel], v[sel]
                pos = ll > 0
                logu = np.full(sel.size, -np.inf)
                logu[pos] = lq + ll[pos] + log1mexp(-ll[pos])
                if kind == 0:
                    # log(1 + b u) <= v (Bernoulli); b > 0 here means u > 0, b < 0 means u < 0.
                    lbu = np.where(
                        bb > 0,
                        np.logaddexp(0.0, np.log(np.abs(bb)) + logu),
                        np.log1p(bb * np.where(pos | ~sl[sel], 0.0, ur[sel])),
                    )
                    res[sel] = vv + log1mexp(np.minimum(lbu - vv, 0.0))
                else:
                    res[sel] = logsubexp(np.log(-bb) + logu, log1mexp(np.minimum(vv, -1e-300)))
            out[rest] = res
    return out.reshape(shape)


def _round_up(la: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """RDP epsilon from log Psi = la (already an upper bound), plus a relative safety margin."""
    eps = np.maximum(la, 0.0) / (alpha - 1.0)
    return eps * (1.0 + _REL_SAFETY) + 1e-300


def _check_rows(alpha: np.ndarray) -> np.ndarray:
    a = np.asarray(alpha, dtype=float)
    if np.isnan(a).any() or (a <= 1).any() or np.isinf(a).any():
        raise ValueError(f"alpha (Rényi order) must be in (1, inf), got {alpha!r}")
    return a


# ----------------------------------------------------------------------------------------
# Sampled Gaussian (Mironov, Talwar, Zhang 2019)
# ----------------------------------------------------------------------------------------
def _sgm_log_excess_integer(n: int, s: float, q: float) -> float:
    """log(A_n - 1) for integer n >= 2: MTZ 2019, Sec. 3.3,
    A_n - 1 = sum_{k=2}^n C(n,k) q^k (1-q)^(n-k) (exp(k(k-1) s^2 / 2) - 1)."""
    k = np.arange(2, n + 1, dtype=float)
    lbin = special.gammaln(n + 1.0) - special.gammaln(k + 1.0) - special.gammaln(n - k + 1.0)
    y = k * (k - 1.0) * s * s / 2.0
    with np.errstate(divide="ignore"):
        lexpm1 = np.where(
            y < 30.0, np.log(np.expm1(np.minimum(y, 30.0))), y + np.log1p(-np.exp(-y))
        )
        l1q = math.log1p(-q) if q < 1 else -np.inf
        rest = np.where(n - k == 0, 0.0, (n - k) * l1q)
    terms = lbin + k * math.log(q) + rest + lexpm1
    # floating error of the log terms: ~1e-16 * |term| absolute; pad accordingly.
    pad = 4e-16 * (np.abs(lbin) + np.abs(y) + abs(n * math.log(q)) + 1.0)
    return float(logsumexp(terms + pad))


def _gaussian_log_excess_quad(b: np.ndarray, s: float, q: float) -> np.ndarray:
    """Upper bound on log(E_{x~N(0,1)}[h_b(q (e^{s x - s^2/2} - 1))]) for orders b > 1
    (removal direction, MTZ 2019 Sec. 3.4 integral), by windowed Gauss–Legendre quadrature.

    Windows: the integrand's main part exp(g), g(x) = b log(1 - q + q e^{s x - s^2/2}) - x^2/2,
    has g'(x) = G(x) = b s p(x) - x with p a logistic function of x, so G is convex left of
    the logistic's centre x_c and concave right of it: g has one or two local maxima, found
    by bisection.  Each relevant bump is integrated where g > max g - 70, plus the window
    [-14, s/2 + 14] where the correction -1 - b u lives.  Outside the windows the integrand
    is bounded analytically (left tail: h_b <= b q; gaps: length * (e^level + b q phi(14));
    right tail: sup bound e^level up to a far point x2, then (1 - q + q e^l)^b <= c0^b e^{b l})
    and these bounds are added, as is the quadrature error estimate.
    """
    b = np.asarray(b, dtype=float)
    n = b.size
    lq, l1q = math.log(q), math.log1p(-q)
    logit = lq - l1q
    c = b * s
    xc = s / 2.0 - logit / s

    def p_of(x):
        return special.expit(s * x - s * s / 2.0 + logit)

    def G(x):
        return c * p_of(x) - x

    def dG(x):
        p = p_of(x)
        return c * s * p * (1.0 - p) - 1.0

    def g(x):
        return b * np.logaddexp(l1q, lq + s * x - s * s / 2.0) - 0.5 * x * x

    # G is convex on (-inf, xc] and concave on [xc, inf); its roots lie in [0, c] (G > 0
    # below 0, G < 0 from c on): one root on the side where G(xc) has the other sign, and on
    # the other side none or two, found around G's extremum there.
    zeros = np.zeros(n)
    xcv = np.full(n, xc)
    gxc = G(xcv)
    up = gxc >= 0  # xc lies between z2 and z3 (or all roots are right of xc)
    xc0 = max(xc, 0.0)
    top = np.maximum(c, xc0)
    # single-root side
    z_single = np.where(
        up,
        bisect_monotone(G, zeros, xc0, top, increasing=False, iterations=120),
        bisect_monotone(G, zeros, 0.0, xc0, increasing=False, iterations=120),
    )
    # other side: minimum of convex G on [0, xc] (up) or maximum of concave G on [xc, c]
    zmin = np.zeros(n)
    if xc > 0:
        d0, d1 = dG(zeros), dG(xcv)
        inner = bisect_monotone(dG, zeros, 0.0, xc, increasing=True, iterations=120)
        zmin = np.where(d0 >= 0, 0.0, np.where(d1 <= 0, xc, inner))
    dtop = dG(top)
    inner_max = bisect_monotone(dG, zeros, xc0, top, increasing=False, iterations=120)
    zmax = np.where(dG(np.full(n, xc0)) <= 0, xc0, np.where(dtop >= 0, top, inner_max))
    three_up = up & (xc > 0) & (G(zmin) < 0)
    three_down = ~up & (G(zmax) > 0)
    three = three_up | three_down
    a_up = bisect_monotone(G, zeros, 0.0, zmin, increasing=False, iterations=120)
    b_up = bisect_monotone(G, zeros, zmin, xc0, increasing=True, iterations=120)
    a_dn = bisect_monotone(G, zeros, xc0, zmax, increasing=True, iterations=120)
    b_dn = bisect_monotone(G, zeros, zmax, top, increasing=False, iterations=120)
    z1 = np.where(three_up, a_up, z_single)
    z2 = np.where(three_up, b_up, np.where(three_down, a_dn, z_single))
    z3 = np.where(three_down, b_dn, z_single)
    g1, g2, g3 = g(z1), g(z2), g(z3)
    gmax = np.maximum(g1, g3)
    level = gmax - 70.0
    merged = three & (g2 >= level)
    relevant1 = three & (g1 >= level) & ~merged
    R3 = level_crossing(g, z3, level, +1.0, 1.0)
    L3_free = level_crossing(g, z3, level, -1.0, 1.0)
    L3_valley = level_crossing(g, z3, level, -1.0, 1.0, stop=z2)
    L1 = level_crossing(g, z1, level, -1.0, 1.0)
    R1 = level_crossing(g, z1, level, +1.0, 1.0, stop=z2)
    L3 = np.where(merged, L1, np.where(three, L3_valley, L3_free))

    near = (-14.0, s / 2.0 + 14.0)
    windows = []
    for i in range(n):
        wins = [near, (float(L3[i]), float(R3[i]))]
        if relevant1[i]:
            wins.append((float(L1[i]), float(R1[i])))
        wins.sort()
        merged_w: list[list[float]] = []
        for lo, hi in wins:
            if merged_w and lo <= merged_w[-1][1]:
                merged_w[-1][1] = max(merged_w[-1][1], hi)
            else:
                merged_w.append([lo, hi])
        windows.append([(lo, hi) for lo, hi in merged_w])

    width = 0.5 * min(1.0, math.pi / s)
    counts = np.array([sum(int(np.ceil((hi - lo) / width)) for lo, hi in w) for w in windows])
    buckets = np.ceil(np.log2(counts + 1.0)).astype(int)
    log_value = np.empty(n)
    log_error = np.empty(n)
    for key in np.unique(buckets):
        rows = np.flatnonzero(buckets == key)
        edges, active = uniform_edges([windows[i] for i in rows], np.full(rows.size, width))
        bcol = b[rows, None]

        def logf(x, bcol=bcol):
            return log_h(bcol, s * x - s * s / 2.0, q) - 0.5 * x * x - _LOG_2PI_HALF

        res = log_quad(logf, edges, active, nodes=_GL_NODES)
        log_value[rows] = res.log_value
        log_error[rows] = res.log_error

    xlo = np.array([w[0][0] for w in windows])
    xhi = np.array([w[-1][1] for w in windows])
    gap_len = np.array([sum(w[j + 1][0] - w[j][1] for j in range(len(w) - 1)) for w in windows])
    with np.errstate(divide="ignore"):
        log_left = np.log(b * q) + special.log_ndtr(xlo)
        # right tail: g <= level beyond xhi (g decreases after its last critical point);
        # the sup bound covers [xhi, x2], the exponential bound (1-q+q e^l)^b <= c0^b e^{bl}
        # for l >= l(x2) covers [x2, inf), with x2 far enough for c0 ~ q and the tilted
        # Gaussian's mass (centred at b s) to be negligible.
        x2 = np.maximum(xhi, np.maximum(c + 14.0, (-logit + np.log(b) + 5.0 + s * s / 2.0) / s))
        loss2 = s * x2 - s * s / 2.0
        log_c0 = np.logaddexp(lq, l1q - loss2)
        log_right = np.logaddexp(
            np.log(np.maximum(x2 - xhi, 1e-300)) + level - _LOG_2PI_HALF,
            b * log_c0 + b * (b - 1.0) * s * s / 2.0 + special.log_ndtr(b * s - x2),
        )
        log_gap = np.log(gap_len) + np.logaddexp(level, np.log(b * q) - 98.0) - _LOG_2PI_HALF
    parts = np.stack([log_value, log_error, log_left, log_right, log_gap])
    return logsumexp(parts, axis=0) + 1e-13 * (1.0 + np.abs(log_value))


def sampled_gaussian_rdp(alpha: np.ndarray | float, s: float, q: float) -> np.ndarray:
    """Upper bound (tight to ~1e-10 relative) on the RDP of the Poisson-sampled Gaussian with
    mean shift ``s`` = sensitivity / sigma and rate ``q``, at real orders ``alpha`` > 1.

    Removal direction D_a((1-q) N(0,1) + q N(s,1) || N(0,1)), which dominates insertion for
    the Gaussian (Mironov, Talwar, Zhang 2019, Thm 5 and Sec. 3.2).  Integer orders use the
    exact binomial expansion (MTZ 2019, Sec. 3.3); other orders a log-space quadrature of the
    defining integral (Sec. 3.4's integral), rounded up by its error estimate and tail
    bounds.  q = 1 gives the Gaussian's a s^2 / 2, q = 0 gives 0.
    """
    a = _check_rows(np.atleast_1d(alpha))
    shape = np.shape(alpha)
    flat = a.ravel()
    if q <= 0.0:
        return np.zeros(shape)
    if q >= 1.0:
        return (flat * s * s / 2.0).reshape(shape)
    out = np.empty_like(flat)
    is_int = (flat == np.round(flat)) & (flat <= _INT_MAX)
    for n in np.unique(flat[is_int]):
        out[flat == n] = _sgm_log_excess_integer(int(n), s, q)
    frac = ~is_int
    if frac.any():
        uniq, inv = np.unique(flat[frac], return_inverse=True)
        out[frac] = _gaussian_log_excess_quad(uniq, s, q)[inv]
    la = np.logaddexp(0.0, out)
    return _round_up(la, flat).reshape(shape)


def _is_poisson_group1(mechanism: Mechanism, scheme: Scheme, relation: Relation) -> bool:
    return relation.group == 1


@rdp_method(
    "mironov-sgm",
    "Mironov, Talwar, Zhang 2019, Sec. 3.3-3.4 (sampled Gaussian mechanism, exact RDP)",
    mechanisms=(Gaussian,),
    schemes=(Poisson,),
    relations=(AddRemove, ZeroOut),
    when=_is_poisson_group1,
    tight=True,
)
def _mironov_sgm(
    mechanism: Gaussian, scheme: Poisson, relation: Relation, alpha: np.ndarray
) -> np.ndarray:
    """Exact RDP of the Poisson-subsampled Gaussian (MTZ 2019), see :func:`sampled_gaussian_rdp`."""
    return sampled_gaussian_rdp(alpha, mechanism.shift(1), scheme.rate)


# ----------------------------------------------------------------------------------------
# Exact Poisson RDP from a known dominating pair (Laplace, randomized response)
# ----------------------------------------------------------------------------------------
def _laplace_log_excess(b: np.ndarray, e0: float, q: float) -> np.ndarray:
    """Upper bound on log E_Q[h_b(q (L - 1))] for P = Lap(e0, 1), Q = Lap(0, 1).

    L = e^{-e0} on x <= 0 (Q-mass 1/2), e^{e0} on x >= e0 (Q-mass e^{-e0}/2), e^{2x - e0}
    with Q-density e^{-x}/2 in between: two atoms in closed form plus a graded Gauss–Legendre
    quadrature on (0, e0), rounded up by its error estimate.
    """
    b = np.asarray(b, dtype=float)
    half = math.log(0.5)
    atom_lo = log_h(b, -e0, q) + half
    atom_hi = log_h(b, e0, q) - e0 + half
    steep = float(np.max(np.abs(b))) * 2.0 * e0 + 1.0
    levels = int(math.ceil(math.log2(steep))) + 6
    edges = graded_edges(0.0, e0, [0.0, e0 / 2.0, e0], levels)
    edges = np.broadcast_to(edges, (b.size, edges.size))
    bcol = b[:, None]

    def logf(x):
        return log_h(bcol, 2.0 * x - e0, q) - x + half

    res = log_quad(logf, edges, nodes=12)
    parts = np.stack([atom_lo, atom_hi, res.log_upper])
    return logsumexp(parts, axis=0) + 1e-13 * (1.0 + np.abs(res.log_value))


def _rr_log_excess(b: np.ndarray, theta: float, q: float) -> np.ndarray:
    """log E_Q[h_b(q (L - 1))] for P = Bern(theta), Q = Bern(1 - theta): a two-term sum."""
    e = math.log(theta) - math.log1p(-theta)
    t1 = log_h(b, e, q) + math.log1p(-theta)  # outcome 1: Q-mass 1 - theta, L = theta/(1-theta)
    t2 = log_h(b, -e, q) + math.log(theta)  # outcome 0: Q-mass theta, L = (1-theta)/theta
    return np.logaddexp(t1, t2) + 1e-14


def poisson_direction_log_moments(
    mechanism: Mechanism, q: float, alpha: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(log Psi^rm_a, log Psi^ins_a): upper bounds on the logs of the removal moment
    E_Q[(1-q+qL)^a] and the insertion moment E_Q[(1-q+qL)^(1-a)] of one Poisson step at rate
    0 < q < 1 (Zhu & Wang 2019, Sec. 3), for Laplace and randomized response (the Gaussian's
    removal moment, which dominates, is :func:`sampled_gaussian_rdp`)."""
    a = np.asarray(alpha, dtype=float)
    out = []
    for b in (a, 1.0 - a):
        if isinstance(mechanism, Laplace):
            ex = _laplace_log_excess(b, mechanism.epsilon0(1), q)
        elif isinstance(mechanism, RandomizedResponse):
            if mechanism.theta == 1.0:
                ex = np.full_like(a, np.inf)
            else:
                ex = _rr_log_excess(b, mechanism.theta, q)
        else:
            raise ValueError(f"no dominating pair moments for {type(mechanism).__name__}")
        out.append(np.logaddexp(0.0, ex))
    return out[0], out[1]


def poisson_exact_rdp(mechanism: Mechanism, q: float, alpha: np.ndarray | float) -> np.ndarray:
    """Exact RDP (max over removal and insertion) of one Poisson step at rate q for Laplace
    or randomized response, at real orders alpha > 1; rounded up by quadrature error bounds.

    D = max(log Psi^rm_a, log Psi^ins_a) / (a - 1) (Zhu & Wang 2019, Sec. 3; the pairs are
    symmetric so no other direction exists; (wP + (1-w)Q, Q) and its swap dominate Poisson
    subsampling of a mechanism dominated by (P, Q): Zhu, Dong & Wang 2022, "Optimal accounting
    of differential privacy via characteristic function", Sec. on subsampling).
    q = 1: the base mechanism; q = 0: 0.
    """
    a = _check_rows(np.atleast_1d(alpha))
    shape = np.shape(alpha)
    flat = a.ravel()
    if q <= 0.0:
        return np.zeros(shape)
    if q >= 1.0:
        return mechanism._rdp(flat, 1).reshape(shape)
    rm, ins = poisson_direction_log_moments(mechanism, q, flat)
    return _round_up(np.maximum(rm, ins), flat).reshape(shape)


@rdp_method(
    "poisson-exact",
    "exact Poisson-subsampled RDP of the dominating pair, both directions "
    "(Zhu & Wang 2019, Sec. 3)",
    mechanisms=(Laplace, RandomizedResponse),
    schemes=(Poisson,),
    relations=(AddRemove, ZeroOut),
    when=_is_poisson_group1,
    tight=True,
)
def _poisson_exact(
    mechanism: Mechanism, scheme: Poisson, relation: Relation, alpha: np.ndarray
) -> np.ndarray:
    """Exact Poisson RDP for Laplace and randomized response, see :func:`poisson_exact_rdp`."""
    return poisson_exact_rdp(mechanism, scheme.rate, alpha)


# ----------------------------------------------------------------------------------------
# Zhu & Wang 2019 general bound
# ----------------------------------------------------------------------------------------
def _zw_log_bound_integer(eps: np.ndarray, n: int, q: float) -> float:
    """log sum_{l=0}^n C(n,l) q^l (1-q)^(n-l) exp((l-1) eps_l), with eps_l = eps[l-2] the base
    RDP at order l (the l = 0, 1 terms have exp(...) = 1), computed as
    log(1 + sum_{l>=2} C(n,l) q^l (1-q)^(n-l) (exp((l-1) eps_l) - 1))."""
    if n == 1:
        return 0.0
    ll = np.arange(2, n + 1, dtype=float)
    y = (ll - 1.0) * eps[: n - 1]
    lbin = special.gammaln(n + 1.0) - special.gammaln(ll + 1.0) - special.gammaln(n - ll + 1.0)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        lexpm1 = np.where(
            y < 30.0, np.log(np.expm1(np.minimum(y, 30.0))), y + np.log1p(-np.exp(-y))
        )
        l1q = math.log1p(-q) if q < 1 else -np.inf
        rest = np.where(n - ll == 0, 0.0, (n - ll) * l1q)
    terms = lbin + ll * math.log(q) + rest + lexpm1
    pad = 4e-16 * (
        np.abs(lbin) + np.abs(np.where(np.isfinite(y), y, 0.0)) + abs(n * math.log(q)) + 1.0
    )
    return float(np.logaddexp(0.0, logsumexp(terms + pad)))


def zhu_wang_rdp(
    mechanism: Mechanism, q: float, alpha: np.ndarray | float, factor: float = 2.0
) -> np.ndarray:
    """Zhu & Wang 2019 Poisson bound as stated by Schuchardt et al. 2024, Prop. E.4:

        exp((a - 1) eps(a)) <= factor * sum_{l=0}^a C(a,l) q^l (1-q)^(a-l) exp((l-1) eps_B(l))

    for integer a >= 2, with eps_B the base mechanism's RDP (group distance 1, both
    directions) and ``factor`` = 2 (valid for any mechanism; ``factor=1`` is the form of
    Dong et al. 2025, Thm 3.11, see :func:`_zhu_wang_tight`).

    Real orders: f(a) = (a - 1) D_a(M(x) || M(x')) = log E[(dM(x)/dM(x'))^a] is convex in a
    for every pair (Hölder's inequality; van Erven & Harremoës 2014, Thm 11), and f(1) = 0.
    Writing a = (1 - t) n + t (n + 1) with n = floor(a), f(a) <= (1 - t) f(n) + t f(n + 1)
    <= (1 - t) B(n) + t B(n + 1), where B is the integer-order bound above (B(1) = f(1) = 0).
    The right side bounds every pair of neighbours, hence the worst one: eps(a) <= that / (a-1).
    """
    a = _check_rows(np.atleast_1d(alpha))
    shape = np.shape(alpha)
    flat = a.ravel()
    if q <= 0.0:
        return np.zeros(shape)
    n0 = np.floor(flat).astype(np.int64)
    is_int = flat == n0
    n1 = np.where(is_int, n0, n0 + 1)
    top = int(n1.max())
    eps = np.asarray(mechanism._rdp(np.arange(2, top + 1, dtype=float), 1), dtype=float)
    lf = math.log(factor)
    cache: dict[int, float] = {1: 0.0}

    def B(n: int) -> float:
        if n not in cache:
            cache[n] = lf + _zw_log_bound_integer(eps, n, q)
        return cache[n]

    out = np.empty_like(flat)
    for i, (x, lo, hi) in enumerate(zip(flat, n0, n1, strict=True)):
        if lo == hi:
            f = B(int(lo))
        else:
            t = x - lo
            f = (1.0 - t) * B(int(lo)) + t * B(int(hi))
        out[i] = f
    return _round_up(out, flat).reshape(shape)


@rdp_method(
    "zhu-wang",
    "Zhu & Wang 2019 Poisson bound as in Schuchardt et al. 2024, Prop. E.4 (factor 2)",
    schemes=(Poisson,),
    relations=(AddRemove, ZeroOut),
    when=_is_poisson_group1,
)
def _zhu_wang(
    mechanism: Mechanism, scheme: Poisson, relation: Relation, alpha: np.ndarray
) -> np.ndarray:
    """Zhu & Wang 2019 general Poisson bound with the factor 2 (Schuchardt et al. 2024,
    Prop. E.4), any base mechanism with an RDP curve; real orders by log-convex
    interpolation (see :func:`zhu_wang_rdp`)."""
    return zhu_wang_rdp(mechanism, scheme.rate, alpha, factor=2.0)


@rdp_method(
    "zhu-wang-tight",
    "Zhu & Wang 2019, Thm 8 / Dong et al. 2025, Thm 3.11 (no factor 2; proven for removal, "
    "and for insertion only under symmetry conditions; kept out of 'best')",
    schemes=(Poisson,),
    relations=(AddRemove, ZeroOut),
    when=_is_poisson_group1,
    in_best=False,
)
def _zhu_wang_tight(
    mechanism: Mechanism, scheme: Poisson, relation: Relation, alpha: np.ndarray
) -> np.ndarray:
    """sum_{l=0}^a C(a,l) q^l (1-q)^(a-l) exp((l-1) eps_B(l)) without the factor 2.

    At integer orders this is exactly the *removal* moment E_Q[(1-q+qL)^a] of the base pair
    (binomial expansion; Schuchardt et al. 2024, proof of Prop. E.4, Case 1), so it is always
    valid for removal.  For insertion it needs extra conditions: Mironov, Talwar, Zhang 2019,
    Thm 5 (the Gaussian, where it coincides with "mironov-sgm" at integer orders and is
    looser elsewhere) or Zhu & Wang 2019, Thm 8 (a bound on the Pearson-Vajda
    pseudo-divergence).  For a general mechanism it is not a proven upper bound, hence
    ``in_best=False``: it is computed only when asked for by name, for comparison.

    Numerical check (tests/test_poisson_rdp.py): against the exact two-direction Poisson RDP
    of Laplace (scales 0.1..10) and randomized response (theta 0.51..0.999) at rates 1e-4..0.99
    and orders 1.001..3000, the insertion moment never exceeded the removal one, so this form
    was never below "poisson-exact" (no counter-example found; still no proof).
    """
    return zhu_wang_rdp(mechanism, scheme.rate, alpha, factor=1.0)
