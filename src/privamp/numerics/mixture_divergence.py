"""Rényi moments of univariate Gaussian mixtures against their first component, in log space.

For weights ``w_0..w_K`` (summing to 1) and a mean spacing ``s`` (in units of the common
standard deviation), let ``M(z) = sum_k w_k exp(k s z - k^2 s^2 / 2)`` be the likelihood ratio of
the mixture ``sum_k w_k N(k s, 1)`` to ``N(0, 1)``.  This module evaluates

* the forward moment  ``Psi_fwd(alpha) = int phi(z) M(z)^alpha dz``
  (= ``int mix^alpha N(0,1)^(1-alpha)``), and
* the reverse moment  ``Psi_rev(alpha) = int phi(z) M(z)^(1-alpha) dz``
  (= ``int N(0,1)^alpha mix^(1-alpha)``),

returning log values *rounded up*.  Two evaluators:

* :func:`log_moment_quadrature` — any real ``alpha > 1``, a *certified* upper bound:
  ``Psi = 1 + E[h_beta(M - 1)]`` with ``h_beta(u) = (1+u)^beta - 1 - beta u`` (``beta = alpha``
  forward, ``1 - alpha`` reverse; ``E[M] = 1``), the excess enclosed by
  :func:`gaussian_mixture_log_excess`: Gauss-Legendre panels with the Bernstein-ellipse error
  bound (Trefethen 2013, ATAP Thm 19.3), rigorous screening of negligible cells and analytic
  tail bounds (see the comment block above :func:`log_excess_enclosure`).  Working with the
  excess keeps relative precision when ``log Psi`` is tiny (rates down to 1e-10, orders near 1).
* :func:`log_forward_moment_multinomial` — integer ``alpha``, forward direction, exact: the
  multinomial expansion of Schuchardt et al. 2024, App. G.5, regrouped by ``A = sum_j k_j``:
  ``Psi_fwd = sum_A c_A exp(s^2 A^2 / 2)``, ``c_A`` the coefficients of
  ``(sum_k w_k e^{-k^2 s^2/2} x^k)^alpha`` — a sum of positive terms computed by log-space
  convolutions (no cancellation), cost ``O((alpha K)^2 log alpha)``.

No privacy words here; :mod:`privamp.theorems.schuchardt2024` uses these for Thm 4.2.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

from .logspace import log1mexp, logsubexp, logsumexp
from .quadrature import gauss_legendre

__all__ = [
    "log_mixture_ratio",
    "log_moment_quadrature",
    "gaussian_mixture_log_excess",
    "log_excess_enclosure",
    "log_forward_moment_multinomial",
    "convexity_log_excess",
]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_REL_PAD = 4e-15  # relative padding for float rounding in sums of positive terms


def log_mixture_ratio(z: np.ndarray, log_w: np.ndarray, s: float) -> np.ndarray:
    """log M(z) = log sum_k w_k exp(k s z - k^2 s^2 / 2), vectorised over z."""
    k = np.arange(log_w.size, dtype=float)
    a = log_w - 0.5 * (k * s) ** 2  # (K+1,)
    z = np.asarray(z, dtype=float)
    return logsumexp(a[:, None] + (k * s)[:, None] * z.reshape(1, -1), axis=0).reshape(z.shape)


# ----------------------------------------------------------------------------------------
# Certified enclosures of E[h_beta(U)] (any real beta > 1 or beta < 0)
# ----------------------------------------------------------------------------------------
#
# Integrals I = int_lo^hi base(x) h_beta(U(x)) dx with
#   base(x) = exp(c0 + c1 x - c2 x^2)  (c2 >= 0: the Gaussian density, or e^{-x}/2),
#   U(x)    = sum_{k>=1} w_k (exp(a_k x + b_k) - 1),  a_k > 0, w_k >= 0, w_0 = 1 - sum w_k >= 0,
#   h_beta(u) = (1 + u)^beta - 1 - beta u  >= 0   (beta > 1 or beta < 0).
# 1 + U = M is the likelihood ratio of a mixture; E[M^beta] = 1 + E[h_beta(U)] when E[U] = 0,
# and working with the excess keeps full relative precision when it is tiny (rates ~ 1e-10).
#
# Rigour.  (1) Screening: U is increasing and h_beta is decreasing on u < 0 and increasing on
# u > 0, so on a cell [x_L, x_R] the integrand is at most max(h(U(x_L)), h(U(x_R))) times the
# largest base value; cells whose bound is negligible are dropped and the bound is added.
# (2) Kept panels [m - r, m + r]: n-point Gauss-Legendre with the error bound of Trefethen,
# "Approximation Theory and Approximation Practice" (2013), Thm 19.3:
#     |I - I_n| <= r * (64/15) * Mb * rho^(-2n) / (rho^2 - 1),
# where |f| <= Mb on the Bernstein ellipse E_rho of the panel.  f is analytic there as long as
# a_k |Im z| <= theta < pi/2 for all k: then Re(1 + tau U(z)) >= cos(theta) min(1, M(Re z)) > 0
# for tau in [0, 1], so the principal power (1 + U)^beta is analytic.  Bounds used on the
# rectangle [m - rA, m + rA] x [-rB, rB] (A, B the ellipse's semi-axes over r):
#   |base(z)| <= base(x) e^{c2 y^2};  |e^z - 1| <= sqrt((e^x - 1)^2 + e^x y^2);
#   |h_beta(U)| <= |C(beta,2)| |U|^2 sup_tau |1 + tau U|^(beta-2)   (Taylor, integral form)
#                 or |1 + U|^beta + 1 + |beta| |U|,
#   |1 + tau U| <= max(1, M(x_R)),  |1 + tau U| >= cos(theta) min(1, M(x_L)).
# Panels whose error bound is large are halved (a few rounds).
# (3) Floating point: every node value is rounded up (down for the lower enclosure) by a
# per-branch relative error bound (each branch of h_beta loses at most a few digits, see
# _log_h_nodes) plus |h'(U)| times a bound on the error of U; sums of positive terms are
# padded by a relative n * 2^-52.  scipy's log_ndtr/ndtr are assumed accurate to a few ulp.

_EPS = 2.0**-52
_THETA = 1.0  # strip half-angle for the analyticity argument: a_k |Im z| <= 1 < pi/2
_GL_N = 24
_RHOS = np.array([2.0, 3.0, 5.0, 9.0, 17.0])
_SCREEN_DROP = 60.0  # cells with bound below scale * e^-60 are dropped (bound kept)
_REL_TOL = 1e-11  # target relative size of the quadrature error bound


def _series_h(beta: np.ndarray, u: np.ndarray) -> np.ndarray:
    """sum_{k>=2} C(beta, k) u^k for |u| <= 0.1, |beta - 1| |u| <= 0.5 (term ratio <= 0.6,
    alternating at worst with the first term dominating: no cancellation)."""
    term = 0.5 * beta * (beta - 1.0) * u * u
    total = term.copy()
    for k in range(2, 200):
        term = term * ((beta - k) / (k + 1.0)) * u
        total = total + term
        if not (np.abs(term) > 1e-18 * np.abs(total)).any():
            break
    return total


def _log_h_nodes(beta, u, ell, log_au):
    """(log h_beta(U), relative error bound) elementwise.

    ``u``: U itself (used where |U| <= 0.5); ``ell``: log(1 + U); ``log_au``: log |U|.
    Branches: series (|U| <= 0.1, |beta-1||U| <= 0.5); huge power (beta ell >= 30:
    h = M^beta (1 - (1 + beta U) M^-beta), Bernoulli gives the bracket in [0, 1]);
    beta < 0 < U with |beta| U >= 2 (h = |beta| U (1 - (1 - M^beta)/(|beta| U)), the ratio is
    <= 1/2); otherwise direct, h = expm1(beta ell) - beta U, or for 1 < beta < 1.5
    h = M expm1((beta-1) ell) - (beta-1) U (the two terms are within a factor ~ 10^4 of h).
    """
    out = np.empty(beta.shape)
    rel = np.full(beta.shape, 8.0 * _EPS)
    v = beta * ell
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        series = (np.abs(u) <= 0.1) & (np.abs(beta - 1.0) * np.abs(u) <= 0.5)
        big = ~series & (v >= 30.0)
        negbig = ~series & ~big & (beta < 0) & (ell > 0) & (np.log(-beta) + log_au >= math.log(2))
        direct = ~series & ~big & ~negbig
        if series.any():
            out[series] = np.log(_series_h(beta[series], u[series]))
            rel[series] = 16.0 * _EPS
        if big.any():
            b, vb, la = beta[big], v[big], log_au[big]
            l1bu = np.logaddexp(0.0, np.log(np.abs(b)) + la)
            out[big] = vb + log1mexp(np.minimum(l1bu - vb, 0.0))
            rel[big] = 8.0 * _EPS * (4.0 + np.abs(vb) + np.abs(la))
        if negbig.any():
            b, vb, la = beta[negbig], v[negbig], log_au[negbig]
            lbu = np.log(-b) + la
            out[negbig] = lbu + np.log1p(np.expm1(vb) * np.exp(-lbu))
            rel[negbig] = 8.0 * _EPS * (4.0 + np.abs(lbu))
        if direct.any():
            b, ud, ld = beta[direct], u[direct], ell[direct]
            near1 = (b > 1.0) & (b < 1.5)
            t1 = np.where(near1, np.exp(ld) * np.expm1((b - 1.0) * ld), np.expm1(b * ld))
            t2 = np.where(near1, (b - 1.0) * ud, b * ud)
            h = t1 - t2
            err = 8.0 * _EPS * (np.abs(t1) + np.abs(t2)) * (2.0 + np.abs(b * ld))
            out[direct] = np.log(np.maximum(h, 1e-300))
            rel[direct] = err / np.maximum(h, 1e-300)
    return out, rel


class Mixture:
    """U(x) = sum_k w_k (e^{a_k x + b_k} - 1) and base(x) = e^{c0 + c1 x - c2 x^2}."""

    def __init__(self, log_w, a, b, base):
        self.log_w = np.asarray(log_w, dtype=float)  # (K+1,), index 0 is w_0
        self.a = np.asarray(a, dtype=float)  # (K,)
        self.b = np.asarray(b, dtype=float)
        self.c0, self.c1, self.c2 = (float(c) for c in base)
        self.w = np.exp(self.log_w[1:])
        # U(-inf) = -(1 - w_0) = -sum_{k>=1} w_k, computed without cancellation
        self.log_u_min = float(logsumexp(self.log_w[1:]))

    def log_base(self, x):
        return self.c0 + self.c1 * x - self.c2 * x * x

    def log_base_max(self, xl, xr):
        if self.c2 > 0:
            xs = np.clip(self.c1 / (2.0 * self.c2), xl, xr)
        else:
            xs = xl if self.c1 <= 0 else xr
        return self.log_base(xs)

    def parts(self, x):
        """(u, log M, log|U|, log of an absolute error bound on u) at x (any shape)."""
        z = self.a * x[..., None] + self.b  # (..., K)
        lw = self.log_w
        log_m = np.logaddexp(lw[0], logsumexp(lw[1:] + z, axis=-1))
        with np.errstate(over="ignore", invalid="ignore"):
            u = np.sum(self.w * np.expm1(z), axis=-1)
            log_du = logsumexp(
                lw[1:] + z + np.log(2.0 * _EPS * (np.abs(self.a * x[..., None]) + np.abs(self.b)
                                                   + 4.0)), axis=-1)
            small = np.abs(u) <= 0.5
            with np.errstate(divide="ignore"):
                log_au = np.where(
                    small, np.log(np.abs(u)),
                    np.where(log_m > 0, logsubexp(log_m, 0.0), log1mexp(np.minimum(log_m, 0.0))))
        ell = np.where(small, np.log1p(np.where(small, u, 0.0)), log_m)
        with np.errstate(over="ignore"):
            # |U| > 1/2: expm1(log M) is accurate relative to U (inf when huge: such nodes
            # take the log-space branches of _log_h_nodes)
            u = np.where(small, u, np.expm1(log_m))
        return u, ell, log_au, log_du

    def log_h(self, beta, x):
        """(log lower, log upper) of h_beta(U(x)), float errors included."""
        u, ell, log_au, log_du = self.parts(x)
        beta = np.broadcast_to(beta, u.shape)
        lh, rel = _log_h_nodes(beta, u, ell, log_au)
        # |h'(U)| = |beta| |expm1((beta - 1) ell)|, times the error of U (twice, for slack)
        y = (beta - 1.0) * ell
        with np.errstate(divide="ignore", over="ignore"):
            l_abs_expm1 = np.where(y > 0, y + log1mexp(-np.abs(y)), log1mexp(np.minimum(y, 0.0)))
            l_err = math.log(2.0) + np.log(np.abs(beta)) + l_abs_expm1 + log_du
            rel = np.minimum(rel, 0.5)
            hi = np.logaddexp(lh + np.log1p(rel), l_err)
            lo = logsubexp(lh + np.log1p(-rel), np.minimum(l_err, lh + np.log1p(-rel)))
        return lo, hi

    def log_h_at_u(self, beta, log_neg_u):
        """log h_beta(U) at U = -exp(log_neg_u) (in (-1, 0)), upper bound."""
        u = -np.exp(np.full(beta.shape, log_neg_u))
        small = np.abs(u) <= 0.5
        ell = np.where(small, np.log1p(u), np.log1p(u))
        lh, rel = _log_h_nodes(beta, u, ell, np.full(beta.shape, log_neg_u))
        return lh + np.log1p(np.minimum(rel, 0.5))

    def _log_m(self, x):
        return np.logaddexp(self.log_w[0],
                            logsumexp(self.log_w[1:] + self.a * x[..., None] + self.b, axis=-1))

    def _max_affine_base(self, d0, d1, xl, xr):
        """max over [xl, xr] of d0 + d1 x + log base(x) (a concave quadratic: closed form)."""
        c1 = self.c1 + d1
        if self.c2 > 0:
            xs = np.clip(c1 / (2.0 * self.c2), xl, xr)
        else:
            xs = np.where(c1 <= 0, xl, xr)
        return d0 + self.c0 + c1 * xs - self.c2 * xs * xs

    def log_joint(self, beta, xl, xr, log_cos=0.0):
        """log of an upper bound on base(x) |h_beta(U(z))| for Re z = x in [xl, xr], when
        |1 + U(z)| <= M(x) (beta > 0) and |1 + U(z)| >= e^{log_cos} M(x) (beta < 0):
        |h| <= |1+U|^beta + 1 + |beta| + |beta| sum_k w_k e^{a_k x + b_k}, each term times
        base maximised jointly in x: beta log M is convex (beta > 0, below its chord) or
        concave (beta < 0, below its tangent at the midpoint), so every term is
        exp(affine + log base), a concave quadratic in x."""
        ell_l, ell_r = self._log_m(xl), self._log_m(xr)
        width = xr - xl
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            slope = np.where(width > 0, beta * (ell_r - ell_l) / np.where(width > 0, width, 1.0),
                             0.0)
            chord = self._max_affine_base(beta * ell_l - slope * xl, slope, xl, xr)
            m = 0.5 * (xl + xr)
            zm = self.a * m[..., None] + self.b
            ell_m = self._log_m(m)
            dlog = np.exp(logsumexp(self.log_w[1:] + np.log(self.a) + zm, axis=-1) - ell_m)
            tang = self._max_affine_base(beta * (ell_m + log_cos) - beta * dlog * m,
                                         beta * dlog, xl, xr)
            pow_ = np.where(beta > 0, chord, tang)
            const = np.log1p(np.abs(beta)) + self.log_base_max(xl, xr)
            lin = np.log(np.abs(beta)) + logsumexp(
                self._max_affine_base(self.log_w[1:] + self.b, self.a, xl[..., None],
                                      xr[..., None]), axis=-1)
            out = logsumexp(np.stack([pow_, const, lin]), axis=0)
        return out + 1e-12 * (1.0 + np.abs(out))

    def log_bernstein(self, beta, m, r, rho):
        """log of an upper bound on |f| on the Bernstein ellipse of [m - r, m + r] for rho."""
        A = 0.5 * (rho + 1.0 / rho)
        B = 0.5 * (rho - 1.0 / rho)
        xl, xr, yy = m - r * A, m + r * A, r * B
        lb = self.log_base_max(xl, xr)
        lw = self.log_w
        zl = self.a * xl[..., None] + self.b
        zr = self.a * xr[..., None] + self.b
        ell_l = np.logaddexp(lw[0], logsumexp(lw[1:] + zl, axis=-1))
        ell_r = np.logaddexp(lw[0], logsumexp(lw[1:] + zr, axis=-1))
        # Re(1 + tau U(z)) >= cos(a_max |y|) (1 - tau + tau M(x)): the angle actually reached on
        # this ellipse, not the strip's limit (|beta| log cos matters for large |beta|)
        log_cos = np.log(np.cos(np.minimum(float(np.max(self.a)) * yy, _THETA))) - 1e-15
        with np.errstate(divide="ignore", over="ignore"):
            def l_abs_expm1(z):
                return np.where(z > 0, z + log1mexp(-np.abs(z)), log1mexp(np.minimum(z, 0.0)))
            lmax = 2.0 * np.maximum(l_abs_expm1(zl), l_abs_expm1(zr))
            lim = zr + 2.0 * np.log(self.a * yy[..., None])
            l_eu = logsumexp(lw[1:] + 0.5 * np.logaddexp(lmax, lim), axis=-1) + 1e-12
            expo = np.where(beta >= 2, (beta - 2.0) * np.maximum(ell_r, 0.0),
                            (beta - 2.0) * (log_cos + np.minimum(ell_l, 0.0)))
            taylor = lb + np.log(np.abs(0.5 * beta * (beta - 1.0))) + 2.0 * l_eu + expo
            direct = self.log_joint(beta, xl, xr, log_cos)
        return self.c2 * yy * yy + np.minimum(direct, taylor) + 1e-12


def _segment_sum(vals: np.ndarray, rows: np.ndarray, n_rows: int, up: bool = True
                 ) -> np.ndarray:
    """log sum of exp(vals) per row (rows: row index of each value), rounded up (``up``) or
    down by a relative 4 (n + 2) 2^-52 for the floating-point sum of n positive terms."""
    out = np.full(n_rows, -np.inf)
    if vals.size == 0:
        return out
    m = np.full(n_rows, -np.inf)
    np.maximum.at(m, rows, vals)
    mm = np.where(np.isfinite(m), m, 0.0)
    acc = np.zeros(n_rows)
    np.add.at(acc, rows, np.exp(vals - mm[rows]))
    with np.errstate(divide="ignore"):
        out = np.log(acc) + mm
    counts = np.bincount(rows, minlength=n_rows)
    pad = 4.0 * _EPS * (counts + 2.0)
    return out + (np.log1p(pad) if up else np.log1p(-pad))


def log_excess_enclosure(beta, mix: Mixture, lo, hi) -> tuple[np.ndarray, np.ndarray]:
    """Certified (log lower, log upper) of int_lo^hi base(x) h_beta(U(x)) dx for each row
    (beta[i], lo[i], hi[i]); see the comment block above for the argument."""
    beta = np.asarray(beta, dtype=float)
    R = beta.size
    lo = np.broadcast_to(np.asarray(lo, dtype=float), (R,))
    hi = np.broadcast_to(np.asarray(hi, dtype=float), (R,))
    a_max = float(np.max(mix.a))
    r_max = _THETA / (a_max * 0.5 * (_RHOS[0] - 1.0 / _RHOS[0]))  # strip limit at smallest rho
    r_max = min(r_max, 1.0)
    # ---- screening: cells [xl, xr] with rigorous sup bounds ------------------------------
    # cells no wider than the panels: usually a single screening round
    n0 = min(max(32, int(np.ceil(float(np.max(hi - lo)) / (2.0 * r_max)))), 512)
    t = np.linspace(0.0, 1.0, n0 + 1)
    xl = (lo[:, None] + (hi - lo)[:, None] * t[:-1]).ravel()
    xr = (lo[:, None] + (hi - lo)[:, None] * t[1:]).ravel()
    row = np.repeat(np.arange(R), n0)
    dropped_v: list[np.ndarray] = []
    dropped_r: list[np.ndarray] = []
    scale = np.full(R, -np.inf)
    for _ in range(80):
        b = beta[row]
        mid = 0.5 * (xl + xr)
        _, h3 = mix.log_h(np.tile(b, 3), np.concatenate([xl, xr, mid]))  # one batch
        hl, hr, hm = np.split(h3, 3)
        with np.errstate(divide="ignore"):
            lwid = np.log(xr - xl)
        ub = np.minimum(mix.log_base_max(xl, xr) + np.maximum(hl, hr),
                        mix.log_joint(b, xl, xr)) + lwid
        est = mix.log_base(mid) + hm + lwid
        np.maximum.at(scale, row, est)
        keep = ub >= scale[row] - _SCREEN_DROP
        if (~keep).any():
            dropped_v.append(ub[~keep])
            dropped_r.append(row[~keep])
        xl, xr, row = xl[keep], xr[keep], row[keep]
        wide = (xr - xl) > 2.0 * r_max
        if not wide.any():
            break
        m = 0.5 * (xl + xr)
        xl = np.concatenate([xl[~wide], xl[wide], m[wide]])
        xr = np.concatenate([xr[~wide], m[wide], xr[wide]])
        row = np.concatenate([row[~wide], row[wide], row[wide]])
    # ---- Gauss-Legendre with Bernstein-ellipse error bounds, adaptive halving -------------
    tn, wn = gauss_legendre(_GL_N)
    log_wn = np.log(wn)
    done_lo: list[np.ndarray] = []
    done_hi: list[np.ndarray] = []
    done_err: list[np.ndarray] = []
    done_row: list[np.ndarray] = []
    for rnd in range(12):
        m = 0.5 * (xl + xr)
        r = 0.5 * (xr - xl)
        b = beta[row]
        x = xl[:, None] + (xr - xl)[:, None] * tn[None, :]
        flo, fhi = mix.log_h(b[:, None], x)
        lb = mix.log_base(x)
        lwid = np.log(xr - xl)[:, None] + log_wn[None, :]
        v_lo = logsumexp(flo + lb + lwid, axis=1)
        v_hi = logsumexp(fhi + lb + lwid, axis=1)
        # all radii rho at once: rows of (rho, panel) arrays
        rho = _RHOS[:, None]
        ok = a_max * r[None, :] * (0.5 * (rho - 1.0 / rho)) <= _THETA
        with np.errstate(invalid="ignore"):
            e = (np.log(r)[None, :] + math.log(64.0 / 15.0) - 2.0 * _GL_N * np.log(rho)
                 - np.log(rho * rho - 1.0) + mix.log_bernstein(b[None, :], m[None, :],
                                                               r[None, :], rho))
        err = np.min(np.where(ok, e, np.inf), axis=0)
        # per-row budget
        tot = _segment_sum(v_hi, row, R)
        if done_hi:
            tot = np.logaddexp(tot, _segment_sum(np.concatenate(done_hi),
                                                 np.concatenate(done_row), R))
        cnt = np.bincount(row, minlength=R) + 1.0
        budget = tot[row] + math.log(_REL_TOL) - np.log(cnt[row])
        bad = (err > budget) & (r > 1e-9 * (1.0 + np.abs(m))) & (rnd < 11)
        good = ~bad
        done_lo.append(v_lo[good])
        done_hi.append(v_hi[good])
        done_err.append(err[good])
        done_row.append(row[good])
        if not bad.any():
            break
        mm = m[bad]
        xl = np.concatenate([xl[bad], mm])
        xr = np.concatenate([mm, xr[bad]])
        row = np.concatenate([row[bad], row[bad]])
    rows_all = np.concatenate(done_row)
    val_lo = _segment_sum(np.concatenate(done_lo), rows_all, R, up=False)
    val_hi = _segment_sum(np.concatenate(done_hi), rows_all, R)
    err_all = [np.concatenate(done_err)]
    err_rows = [rows_all]
    if dropped_v:
        err_all.append(np.concatenate(dropped_v))
        err_rows.append(np.concatenate(dropped_r))
    err = _segment_sum(np.concatenate(err_all), np.concatenate(err_rows), R)
    upper = np.logaddexp(val_hi, err)
    with np.errstate(invalid="ignore"):
        lower = np.where(err < val_lo, logsubexp(val_lo, np.minimum(err, val_lo)), -np.inf)
    return lower, upper


def gaussian_mixture_log_excess(beta, log_weights, s: float) -> tuple[np.ndarray, np.ndarray]:
    """Certified (log lower, log upper) of E_{x ~ N(0,1)}[h_beta(M(x) - 1)] with
    M(x) = sum_k w_k exp(k s x - k^2 s^2 / 2) (so that E[M^beta] = 1 + this), for real
    beta > 1 or beta < 0.  Window [X_lo, X_hi] with X_lo <= 0 <= K s / 2 <= X_hi (U <= 0
    left of 0 and U >= 0 right of K s / 2) by :func:`log_excess_enclosure`, plus tails:

    * left (x <= X_lo, -(1 - w_0) <= U <= 0, h decreasing in U there):
      h_beta(-(1 - w_0)) * Phi(X_lo);
    * right, beta > 1: h <= M^beta and log M(x) <= log M(X) + K s (x - X) (the slope of log M
      is s times a posterior mean of k, at most K s), so the tail is at most
      M(X)^beta exp(-beta K s X + beta^2 K^2 s^2 / 2) Phi(beta K s - X);
    * right, beta < 0: h <= |beta| U <= |beta| sum_k w_k e^{k s x - k^2 s^2/2}, whose tail
      integrals are |beta| sum_k w_k Phi(k s - X).

    Windows start at [-40, max(beta, 1) K s + 40] and are widened (rows whose tail bound is
    not below 1e-15 of the value) a few times.
    """
    beta = np.atleast_1d(np.asarray(beta, dtype=float))
    if not np.all(np.isfinite(beta) & ((beta > 1.0) | (beta < 0.0))):
        raise ValueError(f"beta must be in (-inf, 0) or (1, inf), got {beta.tolist()}")
    log_w = np.asarray(log_weights, dtype=float)
    K = log_w.size - 1
    k = np.arange(1, K + 1, dtype=float)
    mix = Mixture(log_w, k * s, -0.5 * (k * s) ** 2, (-_LOG_SQRT_2PI, 0.0, 0.5))
    R = beta.size
    x_lo = np.full(R, -40.0)
    x_hi = np.maximum(beta, 1.0) * K * s + 40.0
    lower = np.full(R, -np.inf)
    upper = np.full(R, np.inf)
    # the panels are ~1 / (K s) wide over a window ~beta K s long: rows needing more than
    # _MAX_CELLS of them take the convexity bound instead (no lower bound)
    cells = (x_hi - x_lo) * K * s * 0.5 * (_RHOS[0] - 1.0 / _RHOS[0]) / (2.0 * _THETA)
    big = ~(cells <= _MAX_CELLS)
    if big.any():
        upper[big] = convexity_log_excess(beta[big], log_w, s)
    todo = np.flatnonzero(~big)
    if not todo.size:
        return lower, upper
    h_left = mix.log_h_at_u(beta, mix.log_u_min)
    for attempt in range(6):
        b = beta[todo]
        lo_q, hi_q = log_excess_enclosure(b, mix, x_lo[todo], x_hi[todo])
        left = h_left[todo] + log_ndtr(x_lo[todo])
        X = x_hi[todo]
        ell_x = np.logaddexp(log_w[0], logsumexp(log_w[1:] + mix.a * X[:, None] + mix.b, axis=1))
        ks = K * s
        with np.errstate(divide="ignore"):
            right_pos = b * ell_x - b * ks * X + 0.5 * (b * ks) ** 2 + log_ndtr(b * ks - X)
            right_neg = np.log(np.abs(b)) + logsumexp(
                log_w[1:] + log_ndtr(k * s - X[:, None]), axis=1)
        right = np.where(b > 0, right_pos, right_neg)
        tails = np.logaddexp(left, right) + 1e-12
        upper[todo] = np.logaddexp(hi_q, tails)
        lower[todo] = lo_q
        bad_l = left > hi_q - 35.0
        bad_r = right > hi_q - 35.0
        if attempt == 5 or not (bad_l | bad_r).any():
            break
        x_lo[todo[bad_l]] = 2.0 * x_lo[todo[bad_l]]
        x_hi[todo[bad_r]] = x_hi[todo[bad_r]] + 2.0 * (x_hi[todo[bad_r]] - K * s / 2.0)
        todo = todo[bad_l | bad_r]
    return lower, upper


#: quadrature cells above which :func:`gaussian_mixture_log_excess` uses the convexity bound
_MAX_CELLS = 1e8


def convexity_log_excess(beta, log_weights, s: float) -> np.ndarray:
    """Upper bound on log E_{x ~ N(0,1)}[M(x)^beta - 1], M = sum_k w_k L_k, L_k =
    exp(k s x - k^2 s^2 / 2), beta > 1 or beta < 0: t^beta is convex on t > 0, so
    M^beta <= sum_k w_k L_k^beta and E[L_k^beta] = exp(beta (beta - 1) k^2 s^2 / 2), whence
    E[M^beta] - 1 <= sum_{k >= 1} w_k (exp(g_k) - 1) with g_k = beta (beta - 1) k^2 s^2 / 2
    (sum_k w_k = 1).  Tight when one component dominates (huge shifts).

    Args:
        beta: orders (array), each > 1 or < 0.
        log_weights: log w_0, ..., log w_K (summing to one in linear scale).
        s: the shift (> 0).

    Returns:
        the upper bounds, rounded up by a relative 1e-14 (inf where they overflow).
    """
    beta = np.atleast_1d(np.asarray(beta, dtype=float))
    log_w = np.asarray(log_weights, dtype=float)
    k = np.arange(1, log_w.size, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        g = (beta * (beta - 1.0) * 0.5)[:, None] * (k * s)[None, :] ** 2
        terms = log_w[1:][None, :] + g + log1mexp(-g)
        out = logsumexp(terms, axis=1)
    out = np.where(np.isnan(out), np.inf, out)
    return out + 1e-14 * np.abs(out)


def log_moment_quadrature(
    alpha: float | np.ndarray, log_weights: np.ndarray, s: float, direction: str
) -> np.ndarray:
    """Certified upper bound on log Psi_fwd(alpha) (``direction="forward"``) or
    log Psi_rev(alpha) (``"reverse"``) for the mixture ``sum_k w_k N(k s, 1)`` against
    ``N(0, 1)``; vectorised over real ``alpha > 1``.  ``log_weights``: logs of weights summing
    to one (log weights, so that tiny weights such as ``r^K`` never underflow).

    ``Psi = E[M^beta] = 1 + E[h_beta(M - 1)]`` (``E[M] = 1``), ``beta = alpha`` or
    ``1 - alpha``; the excess is enclosed by :func:`gaussian_mixture_log_excess` and
    ``log Psi = log1p(excess)`` is rounded up by a relative 2^-50.
    """
    alphas = np.atleast_1d(np.asarray(alpha, dtype=float))
    if direction not in ("forward", "reverse"):
        raise ValueError(f"direction must be 'forward' or 'reverse', got {direction!r}")
    beta = alphas if direction == "forward" else 1.0 - alphas
    _, hi = gaussian_mixture_log_excess(beta, log_weights, s)
    out = np.logaddexp(0.0, hi) * (1.0 + 4.0 * _EPS) + 1e-300
    return out if np.ndim(alpha) else out[0]


def _log_convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Log-space convolution of two log-coefficient arrays (positive terms)."""
    m, n = a.size, b.size
    out = np.full((m, m + n - 1), -np.inf)
    rows = np.arange(m)[:, None]
    cols = rows + np.arange(n)[None, :]
    out[rows, cols] = a[:, None] + b[None, :]
    return logsumexp(out, axis=0)


def log_forward_moment_multinomial(alpha: int, log_weights: np.ndarray, s: float) -> float:
    """Exact log Psi_fwd(alpha) for integer alpha >= 1 (Schuchardt et al. 2024, App. G.5).

    ``Psi_fwd = sum over (k_1..k_alpha) of prod_j w_{k_j} e^{-k_j^2 s^2/2} e^{s^2 (sum k_j)^2/2}``,
    grouped by ``A = sum_j k_j``.  All terms are positive; the result is padded by a relative
    ``4e-15 * log2(alpha)`` for floating-point rounding.
    """
    n = int(alpha)
    log_w = np.asarray(log_weights, dtype=float)
    k = np.arange(log_w.size, dtype=float)
    base = log_w - 0.5 * (k * s) ** 2
    # trim trailing zero-weight components (keeps degrees small)
    finite = np.flatnonzero(np.isfinite(base))
    base = base[: finite[-1] + 1]
    result = np.zeros(1)  # log of polynomial 1
    power = base.copy()
    e = n
    while e:
        if e & 1:
            result = _log_convolve(result, power)
        e >>= 1
        if e:
            power = _log_convolve(power, power)
    A = np.arange(result.size, dtype=float)
    total = float(logsumexp(result + 0.5 * (s * A) ** 2))
    return total + math.log1p(_REL_PAD * (2 + math.log2(max(n, 2))))
