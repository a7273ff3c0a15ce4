"""Rényi moments of univariate Gaussian mixtures against their first component, in log space.

For weights ``w_0..w_K`` (summing to 1) and a mean spacing ``s`` (in units of the common
standard deviation), let ``M(z) = sum_k w_k exp(k s z - k^2 s^2 / 2)`` be the likelihood ratio of
the mixture ``sum_k w_k N(k s, 1)`` to ``N(0, 1)``.  This module evaluates

* the forward moment  ``Psi_fwd(alpha) = int phi(z) M(z)^alpha dz``
  (= ``int mix^alpha N(0,1)^(1-alpha)``), and
* the reverse moment  ``Psi_rev(alpha) = int phi(z) M(z)^(1-alpha) dz``
  (= ``int N(0,1)^alpha mix^(1-alpha)``),

returning log values *rounded up*.  Two evaluators:

* :func:`log_moment_quadrature` — any real ``alpha > 1``.  A coarse screening grid bounds the
  integrand on every cell from above (``M`` is increasing, so ``M^a`` and ``M^(1-a)`` are
  monotone on a cell, and ``phi`` is bounded by its value nearest 0); cells whose bound is
  below ``exp(-70)`` times the largest node value are dropped and their whole bound is added
  to the result.  On the kept cells the composite trapezoid rule with step ``h`` is applied
  (exponentially convergent for these analytic, Gaussian-tailed integrands) and its error is
  estimated by the rule with step ``2h``; the returned value is
  ``T_h + |T_h - T_2h| + dropped mass + tails`` (one-sided: the error estimate is added, never
  subtracted).  The estimate is a standard a-posteriori one, not interval arithmetic; it is
  checked against 50-digit mpmath tanh-sinh quadrature in the tests.
* :func:`log_forward_moment_multinomial` — integer ``alpha``, forward direction, exact: the
  multinomial expansion of Schuchardt et al. 2024, App. G.5, regrouped by ``A = sum_j k_j``:
  ``Psi_fwd = sum_A c_A exp(s^2 A^2 / 2)``, ``c_A`` the coefficients of
  ``(sum_k w_k e^{-k^2 s^2/2} x^k)^alpha`` — a sum of positive terms computed by log-space
  convolutions (no cancellation), cost ``O((alpha K)^2 log alpha)``.

No privacy words here; :mod:`privamp.amplification.rdp` uses these for Thm 4.2.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, ndtr

__all__ = [
    "log_mixture_ratio",
    "log_moment_quadrature",
    "log_forward_moment_multinomial",
]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_DROP = 70.0  # cells whose upper bound is below max * e^-70 are not refined
_REL_PAD = 4e-15  # relative padding for float rounding in sums of positive terms


def logsumexp(x, axis=None):
    """Plain-numpy log-sum-exp (positive terms; -inf allowed), lighter than scipy's."""
    x = np.asarray(x, dtype=float)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out.squeeze(axis=axis) if axis is not None else float(out.reshape(()))


def log_mixture_ratio(z: np.ndarray, log_w: np.ndarray, s: float) -> np.ndarray:
    """log M(z) = log sum_k w_k exp(k s z - k^2 s^2 / 2), vectorised over z."""
    k = np.arange(log_w.size, dtype=float)
    a = log_w - 0.5 * (k * s) ** 2  # (K+1,)
    z = np.asarray(z, dtype=float)
    return logsumexp(a[:, None] + (k * s)[:, None] * z.reshape(1, -1), axis=0).reshape(z.shape)


def _log_phi(z: np.ndarray) -> np.ndarray:
    return -0.5 * z * z - _LOG_SQRT_2PI


def _log_trapezoid(logf: np.ndarray, h: float) -> float:
    """log of h * (sum f - (f_0 + f_n) / 2) for positive f given in log space."""
    ends = np.logaddexp(logf[0], logf[-1]) - math.log(2.0)
    total = logsumexp(logf)
    # sum - ends/2 >= sum/2 > 0, so this subtraction is benign
    return math.log(h) + total + math.log1p(-math.exp(min(ends - total, 0.0)))


def _posterior_mean(z: np.ndarray, log_w: np.ndarray, s: float) -> np.ndarray:
    """E[k | z] under weights proportional to w_k exp(k s z - k^2 s^2 / 2)."""
    k = np.arange(log_w.size, dtype=float)
    a = (log_w - 0.5 * (k * s) ** 2)[:, None] + (k * s)[:, None] * z.reshape(1, -1)
    a = a - np.max(a, axis=0, keepdims=True)
    p = np.exp(a)
    return (k[:, None] * p).sum(axis=0) / p.sum(axis=0)


def log_moment_quadrature(
    alpha: float | np.ndarray, log_weights: np.ndarray, s: float, direction: str
) -> np.ndarray:
    """log of an upper estimate of Psi_fwd(alpha) (``direction="forward"``) or Psi_rev(alpha)
    (``"reverse"``) for the mixture ``sum_k w_k N(k s, 1)`` against ``N(0, 1)``; vectorised
    over ``alpha`` (real, > 1).  ``log_weights``: logs of weights summing to one, ``w_0 > 0``
    (log weights, so that tiny weights such as ``r^K`` never underflow).

    Cell bounds: forward, ``log phi`` is concave (it exceeds its chord by at most ``H^2/8`` on
    a cell of width ``H``) and ``alpha log M`` is convex (below its chord), so the integrand is
    at most ``max(end values) * e^{H^2/8}`` on a cell; reverse, the log-integrand is concave,
    so it is below its tangent at the cell's left end.
    """
    alphas = np.atleast_1d(np.asarray(alpha, dtype=float))
    log_w = np.asarray(log_weights, dtype=float)
    K = log_w.size - 1
    forward = direction == "forward"
    spans = (alphas if forward else alphas - 1.0) * K * s
    big = float(spans.max())
    g_lo, g_hi = (-40.0, big + 40.0) if forward else (-big - 40.0, 40.0)
    step = 0.5
    n_nodes = int(math.ceil((g_hi - g_lo) / step))
    grid = g_lo + step * np.arange(n_nodes + 1)
    lm_all = log_mixture_ratio(grid, log_w, s)
    pm_all = None if forward else _posterior_mean(grid, log_w, s)
    out = np.empty(alphas.size)
    for i, (a, span) in enumerate(zip(alphas, spans, strict=True)):
        out[i] = _one(a, span, forward, grid, lm_all, pm_all, log_w, s, K, step)
    return out if np.ndim(alpha) else out[0]


def _one(a, span, forward, grid, lm_all, pm_all, log_w, s, K, step) -> float:
    power = a if forward else 1.0 - a
    lo, hi = (-40.0, span + 40.0) if forward else (-span - 40.0, 40.0)
    i0 = int(np.searchsorted(grid, lo, side="right")) - 1
    i1 = int(np.searchsorted(grid, hi, side="left"))
    i0, i1 = max(i0, 0), min(i1, grid.size - 1)
    stride = max(1, int(math.ceil((i1 - i0) / 40000)))
    sel = np.arange(i0, i1 + 1, stride)
    if sel[-1] != i1:
        sel = np.append(sel, i1)
    edges = grid[sel]
    lm = lm_all[sel]
    node = _log_phi(edges) + power * lm
    widths = np.diff(edges)
    if forward:
        cell_ub = np.maximum(node[:-1], node[1:]) + widths**2 / 8.0
    else:
        slope = -edges + power * s * pm_all[sel]  # derivative of the (concave) log-integrand
        left = slope[:-1]
        cell_ub = np.where(left <= 0, node[:-1], node[:-1] + left * widths)
        cell_ub = np.minimum(cell_ub, np.where(slope[1:] >= 0, node[1:], np.inf))
    top = float(np.max(node))
    keep = cell_ub >= top - _DROP
    extra = []
    if (~keep).any():
        extra.append(float(logsumexp(cell_ub[~keep] + np.log(widths[~keep]))))
    lo_e, hi_e = edges[0], edges[-1]
    if forward:
        # beyond hi the slope is <= -40 (log M grows at rate <= K s); below lo, M(z) <= M(lo)
        extra += [node[-1] - math.log(40.0), power * lm[0] + float(log_ndtr(lo_e))]
    else:
        extra += [node[0] - math.log(40.0), power * lm[-1] + float(log_ndtr(-hi_e))]

    h_target = min(0.25, 0.5 / max(K * s, 1e-300))
    idx = np.flatnonzero(keep)
    runs = np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1) if idx.size else []
    fine_vals: list[float] = []
    coarse_vals: list[float] = []
    for run in runs:
        z0, z1 = edges[run[0]], edges[run[-1] + 1]
        n = int(math.ceil((z1 - z0) / h_target))
        n += n % 2
        h = (z1 - z0) / n
        z = np.linspace(z0, z1, n + 1)
        lf = _log_phi(z) + power * log_mixture_ratio(z, log_w, s)
        fine_vals.append(_log_trapezoid(lf, h))
        coarse_vals.append(_log_trapezoid(lf[::2], 2 * h))
    fine = float(logsumexp(fine_vals))
    coarse = float(logsumexp(coarse_vals))
    if fine == coarse:
        err = -np.inf
    else:
        hi_v, lo_v = max(fine, coarse), min(fine, coarse)
        err = hi_v + math.log1p(-math.exp(lo_v - hi_v))
    total = float(logsumexp([fine, err, *extra]))
    total += math.log1p(_REL_PAD)
    if total < 1e-2 and runs:
        # small-divergence regime: integrate phi * (M^power - 1) directly, so that
        # log Psi = log1p(Psi - 1) keeps its relative accuracy.  Outside the kept cells the
        # positive part is bounded by the dropped mass; the negative part (-phi) is dropped,
        # which only rounds up.
        total = min(total, _small_regime(runs, edges, h_target, power, log_w, s, extra))
    return total


def _phi_pow1p_second_order(log_phi: np.ndarray, S: np.ndarray, p: float) -> np.ndarray:
    """phi * ((1 + S)^p - 1 - p S): Taylor series for |S| < 1e-3 (no cancellation), otherwise
    ``exp(log phi + p log1p S) - phi (1 + p S)`` (no overflow of the power alone)."""
    phi = np.exp(log_phi)
    with np.errstate(over="ignore"):
        out = np.exp(log_phi + p * np.log1p(S)) - phi * (1.0 + p * S)
    small = np.abs(S) < 1e-3
    if small.any():
        x = S[small]
        acc = np.zeros_like(x)
        c = p
        for n in range(2, 12):
            c = c * (p - n + 1) / n
            acc += c * x**n
        out[small] = phi[small] * acc
    return out


def _small_regime(runs, edges, h_target, power, log_w, s, extra) -> float:
    w = np.exp(log_w[1:])
    k = np.arange(1, log_w.size, dtype=float)
    pieces = []
    errs = []
    for run in runs:
        z0, z1 = edges[run[0]], edges[run[-1] + 1]
        n = int(math.ceil((z1 - z0) / h_target))
        n += n % 2
        h = (z1 - z0) / n
        z = np.linspace(z0, z1, n + 1)
        u = (k * s)[:, None] * z[None, :] - 0.5 * ((k * s) ** 2)[:, None]
        # (1+S)^p - 1 - p S: the linear term integrates to zero (E_phi[M - 1] = 0) and is
        # removed so that no first-order cancellation is left in the sum.  Overflow (huge
        # M far out) makes the sum non-finite and the caller keeps the log-space value.
        with np.errstate(over="ignore", invalid="ignore"):
            S = (w[:, None] * np.expm1(u)).sum(axis=0)
            f = _phi_pow1p_second_order(_log_phi(z), S, power)
        t_h = h * (f.sum() - 0.5 * (f[0] + f[-1]))
        g = f[::2]
        t_2h = 2 * h * (g.sum() - 0.5 * (g[0] + g[-1]))
        pieces.append(t_h)
        errs.append(abs(t_h - t_2h))
    # outside the kept cells, 0 <= (1+S)^p - 1 - pS <= M^p + |p| (1 + M): the M^p part is in
    # ``extra``; bound the masses of phi and of the mixture (phi M) outside by normal tails
    kept = [(edges[run[0]], edges[run[-1] + 1]) for run in runs]
    gaps = [(-np.inf, kept[0][0])] + [(kept[i][1], kept[i + 1][0]) for i in range(len(kept) - 1)]
    gaps.append((kept[-1][1], np.inf))
    shifts = np.concatenate([[0.0], k * s])
    weights = np.exp(log_w)
    outside = 0.0
    for u, v in gaps:
        phi_mass = min(ndtr(v), ndtr(-u))
        mix_mass = float(np.sum(weights * np.minimum(ndtr(v - shifts), ndtr(shifts - u))))
        outside += abs(power) * (phi_mass + mix_mass)
    d = math.fsum(pieces) + math.fsum(errs) + math.exp(float(logsumexp(extra))) + outside
    d += 1e-15 * math.fsum(abs(x) for x in pieces) + 1e-300
    if not math.isfinite(d):
        return math.inf
    if d <= -1.0:
        return math.inf
    return math.log1p(d) * (1 + 1e-13)


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
