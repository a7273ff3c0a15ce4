"""The log-moment numerics of Dong, Chen, Ozgur 2025, "Leveraging randomness in model and
data partitioning for privacy amplification" (see :mod:`privamp.theorems.dong2025.rdp` for
the theorem and its references): forward moments E_Q[(dP/dQ)^n] of the
Thm 3.1 pair by occupancy counts (exact programme for k > 1, Cor 3.14's bound (3) otherwise)
and privamp's certified reverse term E_Q[W^-b].

Split from :mod:`privamp.theorems.dong2025.rdp` (issue 26): numerics here, the schemes and
the registered RDP methods there.
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import product

import numpy as np
from scipy import special

from ..._validation import check_int
from ...numerics.logspace import log1mexp, log_diff_ndtr, log_ndtr, logsumexp

__all__ = [
    "binomial_mix",
    "block_counts",
    "check_dk",
    "fast_forward_bound",
    "forward_divergence",
    "forward_log_moments",
    "interp_log_moment",
    "log_moments_dp",
    "log_moments_k1",
    "published_reverse_term",
    "reverse_divergence",
    "reverse_log_moments_k1",
    "round_up_moments",
]


_SAFETY = 1e-9  # relative margin added to numerically computed log-moments (rounding up)


_NMAX = 2048  # largest order whose moments are tabulated (larger: bound (3))


_EXACT_DP_BUDGET = 200_000  # max transitions of the exact k > 1 forward programme


# ----------------------------------------------------------------------------------------
# validation helpers
# ----------------------------------------------------------------------------------------
def check_dk(d: object, k: object) -> tuple[int, int]:
    d = check_int("d", d, minimum=1)
    k = check_int("k", k, minimum=1, maximum=d)
    return d, k


def _blocks(d: int, k: int) -> list[int]:
    """Sizes of k blocks (floor/ceil of d/k) partitioning d coordinates."""
    q, r = divmod(d, k)
    return [q + 1] * r + [q] * (k - r)


def round_up_moments(logm: np.ndarray) -> np.ndarray:
    """Add a margin for floating-point error to a computed log-moment: relative 1e-9 plus an
    absolute 1e-11 (the computed moments are sums of at most a few thousand nonnegative
    terms each within a few ulps, i.e. well within 1e-11 of the exact value in log)."""
    return logm + _SAFETY * np.abs(logm) + 1e-11


# ----------------------------------------------------------------------------------------
# forward direction: moments E_Q[(dP/dQ)^n]
# ----------------------------------------------------------------------------------------
def _log_poly_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Product of two power series given by log-coefficients, truncated to len(a)."""
    n = a.size
    idx = np.arange(n)
    diff = idx[:, None] - idx[None, :]  # [n, m] -> n - m
    valid = diff >= 0
    mat = np.where(valid, a[None, :] + b[np.clip(diff, 0, n - 1)], -np.inf)
    return logsumexp(mat, axis=1)


def log_moments_k1(s: float, d: int, nmax: int) -> np.ndarray:
    """log E_Q[L^n], n = 0..nmax, for k = 1 (exact up to rounding).

    L = mean_i exp(s X_i - s^2/2): E[L^n] = d^-n sum over bin sequences of
    exp(s^2 sum_bins C(n_b, 2)) = d^-n n! [x^n] f(x)^d, f(x) = sum_m e^{s^2 C(m,2)} x^m / m!
    (Dong, Chen, Ozgur 2025, Lemma 3.12 with the occupancy counts of the n chosen bins).
    """
    m = np.arange(nmax + 1, dtype=float)
    base = s * s * m * (m - 1) / 2.0 - special.gammaln(m + 1)
    result = np.full(nmax + 1, -np.inf)
    result[0] = 0.0
    power, e = base, d
    while e:
        if e & 1:
            result = _log_poly_mul(result, power)
        e >>= 1
        if e:
            power = _log_poly_mul(power, power)
    return result - m * math.log(d) + special.gammaln(m + 1)


def _lse(values: list[float]) -> float:
    m = max(values)
    if m == -math.inf:
        return m
    return m + math.log(math.fsum(math.exp(v - m) for v in values))


@lru_cache(maxsize=128)
def log_moments_dp(s: float, d: int, k: int, nmax: int) -> np.ndarray:
    """Exact log E_Q[L^n] for k > 1, n = 0..nmax, by a programme over coordinates; NaN for
    the orders whose programme is too large (work budget ``_EXACT_DP_BUDGET``).

    E[L^n] = C(d,k)^-n sum over n-tuples of k-subsets of exp(s^2 sum_t C(m_t, 2)), m_t the
    number of subsets containing coordinate t (Dong, Chen, Ozgur 2025, Lemma 3.12).
    Coordinates are added one by one; the state is (number of subsets having received r
    elements so far, r = 0..k).  The work for order n is d * C(n + 2k, 2k) transitions.
    """
    out = np.full(nmax + 1, np.nan)
    out[:2] = 0.0
    log_binom_dk = special.gammaln(d + 1) - special.gammaln(k + 1) - special.gammaln(d - k + 1)
    spent = 0
    for n in range(2, nmax + 1):
        work = d * math.comb(n + 2 * k, 2 * k)
        spent += work
        if spent > _EXACT_DP_BUDGET:
            break
        lc = [[math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)
               for b in range(a + 1)] for a in range(n + 1)]
        states: dict[tuple[int, ...], float] = {(n,) + (0,) * k: 0.0}
        for col in range(d):
            remaining = d - col - 1
            new: dict[tuple[int, ...], list[float]] = {}
            for st, lw in states.items():
                ranges = [range(st[r] + 1) for r in range(k)]
                for js in product(*ranges):
                    tot = sum(js)
                    w = lw + s * s * tot * (tot - 1) / 2.0
                    nxt = list(st)
                    for r, j in enumerate(js):
                        if j:
                            w += lc[st[r]][j]
                            nxt[r] -= j
                            nxt[r + 1] += j
                    # prune: a subset with r elements needs k - r more coordinates
                    if any(nxt[r] and k - r > remaining for r in range(k)):
                        continue
                    new.setdefault(tuple(nxt), []).append(w)
            states = {key: _lse(v) for key, v in new.items()}
        final = states.get((0,) * k + (n,), -np.inf)
        out[n] = final - n * log_binom_dk
    out.setflags(write=False)  # cached
    return out


def forward_log_moments(s: float, d: int, k: int, nmax: int, rate: float = 1.0
                        ) -> tuple[np.ndarray, bool]:
    """Upper bounds on log E_Q[W^n], n = 0..nmax, W = 1 - rate + rate dP/dQ (Thm 3.1 pair).

    Returns (log moments, exact): exact is True when the values are the exact moments (up to
    a 1e-9 relative rounding-up margin), False when bound (3)/block bounds were used.
    """
    if k == d:
        n = np.arange(nmax + 1, dtype=float)
        logm, exact = s * s * k * n * (n - 1) / 2.0, True
    elif 2 * k > d:
        # complements: |S_i & S_j| = |S_i^c & S_j^c| + 2k - d, so
        # E[L_k^n] = e^{s^2 C(n,2) (2k - d)} E[L_{d-k}^n]  (exact identity)
        n = np.arange(nmax + 1, dtype=float)
        comp, exact = forward_log_moments(s, d, d - k, nmax)
        logm = comp + s * s * n * (n - 1) / 2.0 * (2 * k - d)
    elif k == 1:
        logm, exact = log_moments_k1(s, d, nmax), True
    else:
        logm = log_moments_dp(s, d, k, nmax)
        missing = np.isnan(logm)
        exact = not missing.any()
        if not exact:
            logm = np.where(missing, _inexact_forward_log_moments(s, d, k, nmax), logm)
    if rate < 1.0:
        n = np.arange(nmax + 1)
        terms = np.full((nmax + 1, nmax + 1), -np.inf)
        for nn in range(nmax + 1):
            ll = np.arange(nn + 1)
            lb = special.gammaln(nn + 1) - special.gammaln(ll + 1) - special.gammaln(nn - ll + 1)
            with np.errstate(divide="ignore"):
                terms[nn, : nn + 1] = (lb + (nn - ll) * np.log1p(-rate) + ll * np.log(rate)
                                       + logm[: nn + 1])
        logm = logsumexp(terms, axis=1)
        logm[n == 0] = 0.0
    return round_up_moments(logm), exact


def _inexact_forward_log_moments(s: float, d: int, k: int, nmax: int) -> np.ndarray:
    """Upper bounds on log E_Q[L^n] for k > 1 when exact is out of reach: the smaller of
    bound (3) (Cor 3.14) and the block bound (sum of k = 1 moments over k blocks)."""
    n = np.arange(nmax + 1, dtype=float)
    fast = (n - 1) * fast_forward_bound(s, d, k, np.maximum(n, 2.0))
    block = np.zeros(nmax + 1)
    for size, count in block_counts(d, k):
        block += count * log_moments_k1(s, size, nmax)
    out = np.minimum(fast, block)
    out[:2] = 0.0
    return out


def block_counts(d: int, k: int) -> list[tuple[int, int]]:
    sizes = _blocks(d, k)
    return [(sz, sizes.count(sz)) for sz in sorted(set(sizes))]


def fast_forward_bound(s: float, d: int, k: int, alpha: np.ndarray) -> np.ndarray:
    """First term of Thm 3.1 bound (3) (Cor 3.14): log(C(d,k)^-1 sum_l C(k,l) C(d-k,k-l)
    e^{alpha s^2 l / 2}), valid for integer alpha >= 2 (Lemma 3.13); for real alpha we use
    it at ceil(alpha) (the divergence is non-decreasing in alpha)."""
    a = np.ceil(np.asarray(alpha, dtype=float))[..., None]
    ls = np.arange(0, k + 1)
    valid = (k - ls) <= (d - k)
    ls = ls[valid]
    lw = (special.gammaln(k + 1) - special.gammaln(ls + 1) - special.gammaln(k - ls + 1)
          + special.gammaln(d - k + 1) - special.gammaln(k - ls + 1)
          - special.gammaln(d - 2 * k + ls + 1)
          - (special.gammaln(d + 1) - special.gammaln(k + 1) - special.gammaln(d - k + 1)))
    return logsumexp(lw + a * s * s * ls / 2.0, axis=-1)


def binomial_mix(logm: np.ndarray, rate: float) -> np.ndarray:
    """log E_Q[(1 - g + g L)^n], n = 0..len-1, from log E_Q[L^l] (binomial expansion)."""
    rows = []
    for nn in range(len(logm)):
        ll = np.arange(nn + 1)
        lb = special.gammaln(nn + 1) - special.gammaln(ll + 1) - special.gammaln(nn - ll + 1)
        with np.errstate(divide="ignore"):
            rows.append(logsumexp(lb + (nn - ll) * np.log1p(-rate) + ll * np.log(rate)
                                  + logm[ll]))
    out = np.array(rows)
    out[0] = 0.0
    return out


def interp_log_moment(logm: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Upper bound on log E[L^alpha] from integer log-moments by log-convexity (Hölder)."""
    lo = np.floor(alpha).astype(int)
    hi = np.minimum(lo + 1, logm.size - 1)
    frac = alpha - lo
    return np.where(frac == 0, logm[lo], (1 - frac) * logm[lo] + frac * logm[hi])


def forward_divergence(s: float, d: int, k: int, alpha: np.ndarray, rate: float = 1.0,
                       method: str = "tight") -> tuple[np.ndarray, bool]:
    """Upper bound on D_alpha(P_rate || Q) (Thm 3.1 first term), any real alpha > 1.

    ``method="tight"``: exact moments where reachable (see :func:`forward_log_moments`),
    ``"fast"``: bound (3).  Returns (values, exact_at_integer_orders).
    """
    alpha = np.asarray(alpha, dtype=float)
    if k == d and rate == 1.0:  # P = N(s 1, I): a Gaussian pair, D_alpha = alpha k s^2 / 2
        return alpha * k * s * s / 2.0, True
    if method == "fast" and rate == 1.0 and k < d:
        val = fast_forward_bound(s, d, k, alpha)
        return round_up_moments(val), False
    if k == d:  # with rate < 1 below; bound (3) is undefined for k == d
        big = alpha * k * s * s / 2.0
    else:
        big = round_up_moments(fast_forward_bound(s, d, k, alpha))
    # very large orders: bound (3) of the unsubsampled pair (subsampling cannot increase the
    # divergence, by quasi-convexity), keeping the moment tables at a safe size
    small = alpha <= _NMAX
    if not small.any():
        return big, False
    nmax = int(np.ceil(alpha[small].max()))
    logm, exact = forward_log_moments(s, d, k, max(nmax, 2), rate)
    a_small = np.where(small, alpha, 2.0)
    vals = interp_log_moment(logm, a_small) / (a_small - 1.0)
    return np.where(small, vals, big), exact and bool(small.all())


# ----------------------------------------------------------------------------------------
# reverse direction: E_Q[W^-b], W = 1 - gamma + gamma mean(Z_i)
# ----------------------------------------------------------------------------------------
_X_LO, _X_HI, _X_STEP = -40.0, 12.0, 0.02


_PER_DECADE = 40


@lru_cache(maxsize=8)
def _cells(s: float) -> tuple[np.ndarray, ...]:
    x = np.arange(_X_LO, _X_HI + _X_STEP / 2, _X_STEP)
    a, b = x[:-1], x[1:]
    logp = log_diff_ndtr(a, b)
    logm = log_diff_ndtr(a - s, b - s)
    za = np.exp(s * a - s * s / 2)
    zb = np.exp(s * b - s * s / 2)
    # theta = position of E[Z | cell] inside [za, zb]; lowering it (by 1e-10, more than its
    # rounding error) and clipping it into [0, 1 - 1e-12] can only raise the chord bound of
    # the convex e^{-uz} and lower the chord bound of the concave 1 - e^{-uz}
    # (cells where both ends underflow to 0, at large s: theta = 0, the chord's lowest
    # position, which is sound by the same argument)
    with np.errstate(invalid="ignore", divide="ignore"):
        pos = (np.exp(logm - logp) - za) / (zb - za)
    theta = np.where(np.isfinite(pos), np.clip(pos - 1e-10, 0.0, 1.0 - 1e-12), 0.0)
    return logp, za, zb, theta


def _log_laplace_upper(s: float, u: np.ndarray) -> np.ndarray:
    """Upper bounds on log phi(u) = log E[exp(-u Z)], Z = exp(s X - s^2/2), X ~ N(0, 1).

    On each cell [a, b] of X, z -> e^{-uz} is convex, so it lies below its chord; integrating
    the chord needs only the cell's mass and E[Z; cell], both closed forms.  Near phi = 1 the
    concave 1 - e^{-uz} is bounded below by its chord instead (lower bound on 1 - phi).  The
    tails of X use e^{-uz} <= 1 (left) and e^{-uz} <= e^{-u z(b)} (right).
    """
    logp, za, zb, theta = _cells(s)
    u = np.asarray(u, dtype=float)
    z_hi = math.exp(s * _X_HI - s * s / 2)
    out = np.empty(u.size)
    lt_lo, lt_hi = float(log_ndtr(_X_LO)), float(log_ndtr(-_X_HI))
    for start in range(0, u.size, 256):
        uu = u[start:start + 256, None]
        # log[(1 - theta) e^{-u za} + theta e^{-u zb}] = -u za + log1p(theta expm1(-u dz))
        direct = logp - uu * za + np.log1p(theta * np.expm1(-uu * (zb - za)))
        extra = np.stack([np.full(uu.shape[0], lt_lo), lt_hi - uu[:, 0] * z_hi], axis=1)
        log_direct = logsumexp(np.concatenate([direct, extra], axis=1), axis=1)
        small = uu[:, 0] <= 4.0
        log_comp = np.full(uu.shape[0], np.inf)
        if small.any():
            us = uu[small]
            ga = -np.expm1(-us * za)
            gb = -np.expm1(-us * zb)
            psi = (np.exp(logp) * ((1 - theta) * ga + theta * gb)).sum(axis=1)
            psi = psi + math.exp(lt_hi) * -np.expm1(-us[:, 0] * z_hi)
            with np.errstate(divide="ignore"):
                log_comp[small] = np.where(psi < 0.5, np.log1p(-np.minimum(psi, 0.5)), np.inf)
        out[start:start + 256] = np.minimum(log_direct, log_comp)
    return out


_DEC_LO, _DEC_HI = -12, 30  # lattice u = 10^(j / _PER_DECADE) over these decades


@lru_cache(maxsize=4096)
def _log_phi_decade(s: float, decade: int) -> np.ndarray:
    """log phi upper bounds at u = 10^(decade + i / _PER_DECADE), i = 0.._PER_DECADE - 1."""
    i = np.arange(_PER_DECADE)
    return _log_laplace_upper(s, 10.0 ** (decade + i / _PER_DECADE))


def _log_phi_lattice(s: float, dec_lo: int, dec_hi: int) -> tuple[np.ndarray, np.ndarray]:
    """(u, log phi upper) on the lattice from 10^dec_lo to 10^dec_hi inclusive."""
    vals = [_log_phi_decade(s, dec) for dec in range(dec_lo, dec_hi)]
    vals.append(_log_phi_decade(s, dec_hi)[:1])
    j = np.arange(dec_lo * _PER_DECADE, dec_hi * _PER_DECADE + 1)
    return 10.0 ** (j / _PER_DECADE), np.concatenate(vals)


def _log_Q_upper(b: float, x: np.ndarray) -> np.ndarray:
    """Upper bound on log Q(b, x) (regularised upper incomplete gamma), no underflow."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):
        direct = np.log(special.gammaincc(b, x))
    # Gamma(b, x) <= x^(b-1) e^-x / (1 - (b-1)/x) for b >= 1, x > b - 1, and
    # Gamma(b, x) <= x^(b-1) e^-x for b <= 1
    safe_x = np.maximum(x, b)
    factor = np.log(safe_x / np.maximum(safe_x - b + 1, 1e-300)) if b >= 1 else 0.0
    asym = (b - 1) * np.log(safe_x) - safe_x - special.gammaln(b) + factor
    use_asym = (direct < -600) & (x > b + 1)
    return np.where(use_asym, asym, direct)


def _tail_beyond(s: float, d: int, b: float, gamma: float, t_max: float) -> float:
    """Upper bound on log (1/Gamma(b)) int_{t_max}^inf t^(b-1) E[e^{-tW}] dt.

    W >= V := 1 - gamma + gamma G with G the geometric mean of the Z_i (AM-GM), so the
    integral is at most E[V^-b Q(b, t_max V)], with log G = s Xbar - s^2/2, Xbar ~ N(0, 1/d).
    The integrand decreases in Xbar: upper Riemann sums; the far-left tail uses
    V^-b <= gamma^-b G^-b (closed form).
    """
    v = np.arange(-40.0, 12.0 + 0.005, 0.01)
    logp = log_diff_ndtr(v[:-1], v[1:])
    lg = s * v[:-1] / math.sqrt(d) - s * s / 2
    if gamma < 1.0:
        lv = np.logaddexp(math.log1p(-gamma), math.log(gamma) + lg)
    else:
        lv = lg
    terms = logp - b * lv + _log_Q_upper(b, t_max * np.exp(lv))
    left = (-b * math.log(gamma) + b * s * s / 2 + b * b * s * s / (2 * d)
            + float(log_ndtr(-40.0 + b * s / math.sqrt(d))))
    lg_end = s * 12.0 / math.sqrt(d) - s * s / 2
    lv_end = np.logaddexp(math.log1p(-gamma), math.log(gamma) + lg_end) if gamma < 1 else lg_end
    q_end = float(_log_Q_upper(b, np.array(t_max * math.exp(lv_end))))
    right = float(log_ndtr(-12.0)) - b * lv_end + q_end
    return float(logsumexp(np.concatenate([terms, [left, right]])))


def _chord_integrals(t: np.ndarray, lF: np.ndarray, b: float) -> np.ndarray:
    """log of upper bounds on (1/Gamma(b)) int_{t_j}^{t_j+1} t^(b-1) F(t) dt, F log-convex with
    log F <= lF at the grid points (so F <= exp(chord) inside each cell)."""
    t0, t1 = t[:-1], t[1:]
    slope = (lF[1:] - lF[:-1]) / (t1 - t0)
    lam = -slope
    ok = lam > 1e-12
    lam_s = np.where(ok, lam, 1.0)
    a = lF[:-1] + lam_s * t0
    x0, x1 = lam_s * t0, lam_s * t1
    lower_side = x1 <= b
    with np.errstate(divide="ignore", invalid="ignore"):
        dP = np.where(lower_side, special.gammainc(b, x1) - special.gammainc(b, x0),
                      special.gammaincc(b, x0) - special.gammaincc(b, x1))
        # relative rounding of the difference: add a few ulps of the larger operand
        big = np.where(lower_side, special.gammainc(b, x1), special.gammaincc(b, x0))
        dP = np.maximum(dP, 0.0) + 8 * np.finfo(float).eps * big
        # where the difference underflows, bound it by P(b, x1) <= x1^b / Gamma(b + 1)
        # (lower side) or by Q(b, x0) (upper side), in log space
        fallback = np.where(lower_side,
                            b * np.log(np.maximum(x1, 1e-300)) - special.gammaln(b + 1),
                            _log_Q_upper(b, x0))
        log_dp = np.where(dP > 1e-280, np.log(np.maximum(dP, 1e-300)), fallback)
        main = a - b * np.log(lam_s) + log_dp
        # flat or increasing chord: F <= max of the end values
        lt0 = np.log(t0)
        lt1 = np.log(t1)
        crude = (np.maximum(lF[:-1], lF[1:]) + b * lt1
                 + log1mexp(np.minimum(b * (lt0 - lt1), 0.0)) - special.gammaln(b + 1))
    return np.where(ok, main, crude)


@lru_cache(maxsize=256)
def reverse_log_moments_k1(s: float, d: int, gamma: float, betas: tuple[float, ...]
                            ) -> tuple[float, ...]:
    """Upper bounds on log E_Q[W^-b] for each b in ``betas`` (see module docstring)."""
    # pass 1 (one point per decade): which decades carry the integrals
    dec = np.arange(_DEC_LO, _DEC_HI + 1)
    uc = 10.0 ** dec.astype(float)
    tc = uc * d / gamma
    lFc = d * _log_laplace_upper(s, uc) - (1 - gamma) * tc
    lo_i, hi_i = dec.size - 1, 0
    for b in betas:
        g = (b - 1) * np.log(tc) + lFc
        imp = np.nonzero(g > g.max() - 60.0)[0]
        lo_i = min(lo_i, int(imp[0]))
        hi_i = max(hi_i, int(imp[-1]))
    dec_lo = int(min(dec[max(lo_i - 1, 0)], math.floor(math.log10(1e-6 * gamma / d))))
    dec_lo = max(dec_lo, _DEC_LO)
    dec_hi = int(dec[min(hi_i + 1, dec.size - 1)])
    u, lphi = _log_phi_lattice(s, dec_lo, dec_hi)
    t_all = u * d / gamma
    # log E[e^{-tW}] upper bounds (log-convex in t), with a margin for rounding in lphi
    lF_all = d * (lphi + 1e-13 * (1.0 + np.abs(lphi))) - (1 - gamma) * t_all
    lo_i, hi_i = 0, t_all.size - 1
    t = np.concatenate([[0.0], t_all[lo_i:hi_i + 1]])
    lF = np.concatenate([[0.0], lF_all[lo_i:hi_i + 1]])
    out = []
    for b in betas:
        parts = _chord_integrals(t, lF, float(b))
        tail = _tail_beyond(s, d, float(b), gamma, float(t[-1]))
        out.append(float(logsumexp(np.concatenate([parts, [tail]]))))
    return tuple(out)


def reverse_divergence(s: float, d: int, k: int, alpha: np.ndarray, rate: float = 1.0
                       ) -> np.ndarray:
    """Certified upper bound on D_alpha(Q || P_rate) for the Thm 3.1 pair, real alpha > 1.

    k = 1: Laplace-transform representation of the negative moments of the mean of d i.i.d.
    log-normals (see module docstring); k > 1 (rate 1 only): sum over k blocks of the k = 1
    bound (block decomposition + quasi-convexity).  Also capped by the AM-GM closed form
    k s^2/2 + (alpha - 1) k^2 s^2 / (2d) (rate 1; Maclaurin's inequality e_k/C(d,k) >= G^k).
    """
    alpha = np.asarray(alpha, dtype=float)
    if k == d:
        return alpha * k * s * s / 2.0
    if k > 1:
        if rate < 1.0:
            raise ValueError("rate < 1 (Poisson subsampling on top) is supported for k = 1 only")
        total = np.zeros_like(alpha)
        for size, count in block_counts(d, k):
            total = total + count * reverse_divergence(s, size, 1, alpha)
        amgm = k * s * s / 2 + (alpha - 1) * k * k * s * s / (2 * d)
        return np.minimum(total, amgm)
    flat = alpha.ravel()
    uniq = tuple(sorted({float(a) - 1.0 for a in flat}))
    logs = dict(zip(uniq, reverse_log_moments_k1(float(s), int(d), float(rate), uniq),
                    strict=True))
    vals = np.array([logs[float(a) - 1.0] for a in flat])
    vals = round_up_moments(vals) / (flat - 1.0)
    if rate == 1.0:
        vals = np.minimum(vals, s * s / 2 + (flat - 1) * s * s / (2 * d))
    return vals.reshape(alpha.shape)


def published_reverse_term(s: float, d: int, k: int, alpha: np.ndarray, statement: str = "cor3.19"
                           ) -> np.ndarray:
    """The second term of Thm 3.1 as published (Cor 3.17 + Cor 3.19).  NOT an upper bound on
    D_alpha(Q||P) (see docs/dong2025.md); provided for comparison only.

    ``statement="cor3.19"`` uses exp(alpha s^2 k (d-k) / d) in the numerator (Cor 3.19, A.8);
    ``"thm3.1"`` the d^2 of the theorem's statement.
    """
    alpha = np.asarray(alpha, dtype=float)
    v = s * s * k * (d - k) / d ** 2
    num = alpha * s * s * k * (d - k) / (d if statement == "cor3.19" else d ** 2)
    return alpha * s * s * k * k / (2 * d) + (num - d * np.log(alpha * np.exp(v) + 1 - alpha)) / (
        2 * (alpha - 1))

