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
  for integer orders, Sec. 3.4 for real orders; arXiv:1908.10530; the removal direction
  dominates, their Thm 5 / Sec. 3.2).  Integer orders: the binomial expansion.  Real orders:
  a certified enclosure of the excess E[h_b] (Gauss–Legendre panels with the rigorous
  Bernstein-ellipse error bound, rigorously bounded screening and analytic tails; see
  :mod:`privamp.numerics.mixture_divergence`).
* ``"poisson-exact"`` — the exact Poisson RDP, max over both directions, of Laplace
  (atoms in closed form + the same certified quadrature) and randomized response (finite
  sums).
* ``"zhu-wang"`` — Zhu & Wang 2019 general upper bound in the form of Schuchardt et al. 2024,
  Prop. E.4 (with the factor 2); any mechanism with an RDP curve.
* ``"zhu-wang-tight"`` — the same without the factor 2 (Dong et al. 2025, Thm 3.11; Zhu &
  Wang 2019, Thm 8); proven for removal only in general, so kept out of "best".
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..mechanisms.base import Mechanism
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.laplace import Laplace
from ..mechanisms.randomized_response import RandomizedResponse
from ..numerics.logspace import log1mexp, logsubexp, logsumexp
from ..numerics.mixture_divergence import (
    Mixture,
    gaussian_mixture_log_excess,
    log_excess_enclosure,
)
from ..sampling.relations import AddRemove, Relation, ZeroOut
from ..sampling.schemes import Poisson, Scheme
from .registry import rdp_method

__all__ = [
    "sampled_gaussian_rdp",
    "poisson_exact_rdp",
    "poisson_direction_log_moments",
    "log_h",
    "gaussian_rdp_up",
    "log_convex_bound",
    "sampled_gaussian_rdp_estimate",
]


_LOG_2PI_HALF = 0.5 * math.log(2.0 * math.pi)


#: relative safety added to every returned RDP value (covers floating-point rounding)
_REL_SAFETY = 1e-11


#: orders up to this are treated exactly by binomial sums when they are integers
_INT_MAX = 20000


_SERIES_TERMS = 60


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


def round_up(la: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """RDP epsilon from log Psi = la (already an upper bound), plus a relative safety margin."""
    eps = np.maximum(la, 0.0) / (alpha - 1.0)
    return eps * (1.0 + _REL_SAFETY) + 1e-300


def check_rows(alpha: np.ndarray) -> np.ndarray:
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


#: integer orders are summed in (orders x k) arrays of at most this many entries
_INT_BATCH_ENTRIES = 1 << 20
#: a block this small takes any orders (padding costs less than another block)
_INT_SMALL_BLOCK = 1 << 12


def _fast_logsumexp_rows(x: np.ndarray) -> np.ndarray:
    """log(sum(exp(x))) along the last axis of a 2-D array (rows of all -inf give -inf):
    the usual max-shifted sum, without scipy's per-call overhead."""
    m = np.max(x, axis=1)
    finite = np.isfinite(m)
    shift = np.where(finite, m, 0.0)
    with np.errstate(divide="ignore"):
        return np.where(finite, shift + np.log(np.sum(np.exp(x - shift[:, None]), axis=1)), m)


def _sgm_log_excess_small(ns: np.ndarray, s: float, q: float) -> np.ndarray:
    """:func:`_sgm_log_excess_integer` at several integer orders at once (the same terms and
    padding, on an (orders x k) array; absent terms are -inf), in row blocks of at most
    :data:`_INT_BATCH_ENTRIES` entries (rows padded to the block's largest order: orders up
    to 128 or within 25%, or any while the block has at most :data:`_INT_SMALL_BLOCK`)."""
    ns = np.asarray(ns, dtype=float)
    out = np.empty(ns.size)
    order = np.argsort(ns)
    srt = ns[order]
    start = 0
    while start < ns.size:
        # a block pads every row to its largest order: orders up to 128, or within 25%
        top = max(128.0, 1.25 * srt[start])
        stop = start + 1
        while (stop < ns.size
               and (srt[stop] <= top or (stop - start + 1) * srt[stop] <= _INT_SMALL_BLOCK)
               and (stop - start + 1) * srt[stop] <= _INT_BATCH_ENTRIES):
            stop += 1
        idx = order[start:stop]
        out[idx] = _sgm_log_excess_block(ns[idx], s, q)
        start = stop
    return out


_LOG_FACTORIALS: list[np.ndarray] = []


def _log_factorials(n: int) -> np.ndarray:
    """log(k!) for k = 0..n (scipy's gammaln, kept between calls)."""
    if not _LOG_FACTORIALS or _LOG_FACTORIALS[0].size <= n:
        _LOG_FACTORIALS[:] = [special.gammaln(np.arange(1.0, max(n, _INT_MAX) + 2.0))]
    return _LOG_FACTORIALS[0]


#: per (s, q): the per-k parts of the binomial terms, k = 2..K (a search asks one curve ~10
#: times; these are the same every time)
_PER_K: dict[tuple[float, float], tuple[np.ndarray, np.ndarray]] = {}


def _per_k_terms(top: int, s: float, q: float) -> tuple[np.ndarray, np.ndarray]:
    """(k log q + log(e^{k(k-1)s^2/2} - 1), its rounding pad 4e-16 (y + 1)) for k = 2..top."""
    got = _PER_K.get((s, q))
    if got is None or got[0].size < top - 1:
        k = np.arange(2.0, max(top, 128) + 1.0)
        y = k * (k - 1.0) * s * s / 2.0
        with np.errstate(divide="ignore", invalid="ignore"):
            lexpm1 = np.where(
                y < 30.0, np.log(np.expm1(np.minimum(y, 30.0))), y + np.log1p(-np.exp(-y))
            )
        got = (k * math.log(q) + lexpm1, 4e-16 * (np.abs(y) + 1.0))
        if len(_PER_K) >= 8:
            _PER_K.clear()
        _PER_K[(s, q)] = got
    return got[0][: top - 1], got[1][: top - 1]


def _sgm_log_excess_block(ns: np.ndarray, s: float, q: float) -> np.ndarray:
    n_int = np.asarray(ns, dtype=np.int64)
    top = int(n_int.max())
    lf = _log_factorials(top)
    k_int = np.arange(2, top + 1)
    n = n_int.astype(float)[:, None]
    valid = k_int[None, :] <= n_int[:, None]
    nk_int = np.where(valid, n_int[:, None] - k_int[None, :], 0)
    lbin = lf[n_int][:, None] - lf[k_int][None, :] - lf[nk_int]
    per_k, pad_k = _per_k_terms(top, s, q)
    l1q = math.log1p(-q) if q < 1 else -np.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        rest = np.where(nk_int == 0, 0.0, nk_int * l1q)
        terms = (lbin + rest + per_k[None, :]
                 + (pad_k[None, :] + 4e-16 * (np.abs(lbin) + np.abs(n * math.log(q)))))
    # + the rounding of the sum of up to n exponentials (relative n * 2^-53 at most)
    return _fast_logsumexp_rows(np.where(valid, terms, -np.inf)) + 1.2e-16 * n[:, 0]


def _gaussian_log_excess_quad(b: np.ndarray, s: float, q: float) -> np.ndarray:
    """Certified upper bound on log(E_{x~N(0,1)}[h_b(q (e^{s x - s^2/2} - 1))]) for real
    orders b > 1 (removal direction, MTZ 2019 Sec. 3.4 integral, arXiv:1908.10530): the
    K = 1 case (weights 1 - q, q) of
    :func:`privamp.numerics.mixture_divergence.gaussian_mixture_log_excess` — Gauss-Legendre
    panels with a rigorous Bernstein-ellipse error bound, rigorously bounded dropped cells and
    analytic Gaussian tails (an enclosure, not an error estimate)."""
    log_w = np.array([math.log1p(-q), math.log(q)])
    _, hi = gaussian_mixture_log_excess(np.asarray(b, dtype=float), log_w, s)
    return hi


def sampled_gaussian_rdp(alpha: np.ndarray | float, s: float, q: float) -> np.ndarray:
    """Upper bound (tight to ~1e-10 relative) on the RDP of the Poisson-sampled Gaussian with
    mean shift ``s`` = sensitivity / sigma and rate ``q``, at real orders ``alpha`` > 1.

    Removal direction D_a((1-q) N(0,1) + q N(s,1) || N(0,1)), which dominates insertion for
    the Gaussian (Mironov, Talwar, Zhang 2019, Thm 5 and Sec. 3.2).  Integer orders use the
    exact binomial expansion (MTZ 2019, Sec. 3.3); other orders a certified enclosure of the
    defining integral (Sec. 3.4's integral): rigorous quadrature error and tail bounds.
    q = 1 gives the Gaussian's a s^2 / 2, q = 0 gives 0.
    """
    a = check_rows(np.atleast_1d(alpha))
    shape = np.shape(alpha)
    flat = a.ravel()
    if q <= 0.0:
        return np.zeros(shape)
    cap = gaussian_rdp_up(flat, s)
    if q >= 1.0:
        return cap.reshape(shape)
    with np.errstate(all="ignore"):
        eps = _sgm_rdp(flat, s, q)
        # joint convexity of exp((a-1) D_a): Psi_a <= (1 - q) + q exp(a (a-1) s^2 / 2), so the
        # sampled Gaussian's RDP never exceeds the mixture bound nor the unsampled a s^2 / 2;
        # it replaces orders where the computation overflows (a huge order, a huge shift)
        # written log1p(q expm1(x)) for x = (a-1) cap below 700: the logaddexp form loses
        # its value to the rounding of log(1-q) when x is tiny (s = 1e-9: 0 for 1e-22)
        x = (flat - 1.0) * cap
        mix = round_up(np.where(x < 700.0, np.log1p(q * np.expm1(np.minimum(x, 700.0))),
                                np.logaddexp(math.log1p(-q), math.log(q) + x)), flat)
        bound = np.fmin(cap, np.where(np.isfinite(mix), mix, np.inf))
        eps = np.where(np.isfinite(eps) & (eps <= bound), eps, bound)
    return eps.reshape(shape)


def gaussian_rdp_up(alpha: np.ndarray, s: float) -> np.ndarray:
    """alpha s^2 / 2 (the unsampled Gaussian's RDP) rounded up, positive even where s^2
    underflows (0 would claim identical outputs): computed on a scaled shift, rounded up by a
    relative 4e-16 (three roundings) and one ulp.

    Args:
        alpha: Rényi orders > 1.
        s: the shift sensitivity / sigma (> 0).

    Returns:
        an upper bound on alpha s^2 / 2, elementwise (inf where it overflows).
    """
    a = np.asarray(alpha, dtype=float)
    with np.errstate(over="ignore", under="ignore"):
        if s < 1e-100:
            val = np.ldexp(0.5 * a * (s * 2.0**400) ** 2 * (1.0 + 4e-16), -800)
        else:
            val = 0.5 * a * s * s * (1.0 + 4e-16)
    return np.nextafter(val, np.inf)


#: shifts above this use, at fractional orders, the bounds of :func:`log_convex_bound` and the
#: mixture bound instead of the quadrature (whose panels grow with the shift: 3 s at s = 1e3)
_QUAD_MAX_SHIFT = 100.0


def _sgm_rdp(flat: np.ndarray, s: float, q: float) -> np.ndarray:
    out = np.empty_like(flat)
    is_int = (flat == np.round(flat)) & (flat <= _INT_MAX)
    ints = np.unique(flat[is_int])
    if ints.size:
        out[is_int] = _sgm_log_excess_small(ints, s, q)[np.searchsorted(ints, flat[is_int])]
    frac = ~is_int & (flat <= _INT_MAX)
    if frac.any():
        uniq, inv = np.unique(flat[frac], return_inverse=True)
        if s > _QUAD_MAX_SHIFT:
            out[frac] = log_convex_bound(uniq, s, q)[inv]
        else:
            out[frac] = _gaussian_log_excess_quad(uniq, s, q)[inv]
    out[flat > _INT_MAX] = np.inf  # the mixture bound of the caller
    la = np.logaddexp(0.0, out)
    return round_up(la, flat)


def log_convex_bound(b: np.ndarray, s: float, q: float) -> np.ndarray:
    """Upper bound on log(Psi_b - 1) at fractional orders 1 < b <= _INT_MAX from the
    integer orders around b: log Psi_a = log E[(1 - q + q L)^a] is convex in a (Hölder), so
    log Psi_b <= (1 - t) log Psi_n + t log Psi_{n+1} with n = floor(b), t = b - n
    (Psi_1 = 1).  Exact binomial sums at n and n + 1 (MTZ 2019, Sec. 3.3).

    Args:
        b: fractional orders in (1, _INT_MAX).
        s: the shift (> 0).
        q: the rate in (0, 1).

    Returns:
        upper bounds on log(Psi_b - 1), elementwise.
    """
    b = np.asarray(b, dtype=float)
    n = np.floor(b)
    t = b - n
    ints = np.unique(np.concatenate([n, n + 1.0]))
    logpsi = {1.0: 0.0}
    ks = ints[ints >= 2]
    if ks.size:
        logpsi.update(zip(ks.tolist(), np.logaddexp(0.0, _sgm_log_excess_small(ks, s, q)).tolist(),
                          strict=True))
    lo = np.array([logpsi[float(k)] for k in n])
    hi = np.array([logpsi[float(k)] for k in n + 1.0])
    la = ((1.0 - t) * lo + t * hi) * (1.0 + 1e-14)
    return la + np.log(-np.expm1(-la))  # log(Psi - 1) from log Psi


#: shifts above this get no estimate (NaN): the trapezoid rule would need too many nodes
_ESTIMATE_MAX_SHIFT = 10.0


def sampled_gaussian_rdp_estimate(alpha: np.ndarray | float, s: float, q: float) -> np.ndarray:
    """An estimate (no guarantee: only to choose orders, never reported) of the sampled
    Gaussian's RDP at real orders ``alpha`` > 1: the trapezoid rule for
    E_{x ~ N(0,1)}[h_a(q (e^{s x - s^2/2} - 1))] (the integral of MTZ 2019, Sec. 3.4) on a
    fixed grid, in log space (:func:`log_h`).  The integrand is analytic in the strip
    |Im x| < pi / s, so a step of 0.5 / s makes the rule accurate to ~1e-15 relative.

    Args:
        alpha: Rényi orders > 1 (up to ~100: the grid reaches order x shift).
        s: the shift sensitivity / sigma (> 0).
        q: the rate in [0, 1].

    Returns:
        estimates shaped like ``alpha``; NaN everywhere for shifts above 10.
    """
    a = check_rows(np.atleast_1d(alpha)).ravel()
    shape = np.shape(alpha)
    if q <= 0.0:
        return np.zeros(shape)
    if q >= 1.0:
        return (0.5 * a * s * s).reshape(shape)
    if not s <= _ESTIMATE_MAX_SHIFT:
        return np.full(shape, np.nan)
    step = min(0.5, 0.5 / s)
    x = np.arange(-9.0, max(float(a.max()), 2.0) * s + 9.0 + step, step)
    log_w = -0.5 * x * x - _LOG_2PI_HALF + math.log(step)
    with np.errstate(all="ignore"):
        lh = log_h(a[:, None], s * x[None, :] - 0.5 * s * s, q) + log_w[None, :]
        m = np.max(lh, axis=1)
        ok = np.isfinite(m)
        shift = np.where(ok, m, 0.0)
        lex = np.where(ok, shift + np.log(np.sum(np.exp(lh - shift[:, None]), axis=1)), -np.inf)
        out = np.logaddexp(0.0, lex) / (a - 1.0)
    return out.reshape(shape)


def _mironov_sgm_estimate(
    mechanism: Gaussian, scheme: Poisson, relation: Relation, alpha: np.ndarray
) -> np.ndarray:
    return sampled_gaussian_rdp_estimate(alpha, mechanism.shift(1), scheme.rate)


def is_poisson_group1(mechanism: Mechanism, scheme: Scheme, relation: Relation) -> bool:
    return relation.group == 1


@rdp_method(
    "mironov-sgm",
    "Mironov, Talwar, Zhang 2019, Sec. 3.3-3.4 (sampled Gaussian mechanism, exact RDP)",
    mechanisms=(Gaussian,),
    schemes=(Poisson,),
    relations=(AddRemove, ZeroOut),
    when=is_poisson_group1,
    tight=True,
    estimate=_mironov_sgm_estimate,
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
    with Q-density e^{-x}/2 in between: two atoms in closed form (padded by a relative 1e-13)
    plus a certified enclosure of the integral over (0, e0)
    (:func:`privamp.numerics.mixture_divergence.log_excess_enclosure` with U = q (e^{2x-e0} - 1)
    and base e^{-x}/2: Gauss-Legendre with the Bernstein-ellipse error bound).
    """
    b = np.atleast_1d(np.asarray(b, dtype=float))
    half = math.log(0.5)
    atom_lo = log_h(b, -e0, q) + half
    atom_hi = log_h(b, e0, q) - e0 + half
    mix = Mixture(np.array([math.log1p(-q), math.log(q)]), [2.0], [-e0], (half, -1.0, 0.0))
    _, inner = log_excess_enclosure(b, mix, 0.0, e0)
    parts = np.stack([atom_lo, atom_hi])
    atoms = logsumexp(parts, axis=0) + 1e-13 * (1.0 + np.abs(logsumexp(parts, axis=0)))
    return np.logaddexp(atoms, inner)


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
    or randomized response, at real orders alpha > 1; rounded up by rigorous quadrature
    error bounds.

    D = max(log Psi^rm_a, log Psi^ins_a) / (a - 1) (Zhu & Wang 2019, Sec. 3; the pairs are
    symmetric so no other direction exists; (wP + (1-w)Q, Q) and its swap dominate Poisson
    subsampling of a mechanism dominated by (P, Q): Zhu, Dong & Wang 2022, "Optimal accounting
    of differential privacy via characteristic function", Sec. on subsampling).
    q = 1: the base mechanism; q = 0: 0.
    """
    a = check_rows(np.atleast_1d(alpha))
    shape = np.shape(alpha)
    flat = a.ravel()
    if q <= 0.0:
        return np.zeros(shape)
    if q >= 1.0:
        return mechanism.rdp_kernel(flat, 1).reshape(shape)
    rm, ins = poisson_direction_log_moments(mechanism, q, flat)
    return round_up(np.maximum(rm, ins), flat).reshape(shape)


@rdp_method(
    "poisson-exact",
    "exact Poisson-subsampled RDP of the dominating pair, both directions "
    "(Zhu & Wang 2019, Sec. 3)",
    mechanisms=(Laplace, RandomizedResponse),
    schemes=(Poisson,),
    relations=(AddRemove, ZeroOut),
    when=is_poisson_group1,
    tight=True,
)
def _poisson_exact(
    mechanism: Mechanism, scheme: Poisson, relation: Relation, alpha: np.ndarray
) -> np.ndarray:
    """Exact Poisson RDP for Laplace and randomized response, see :func:`poisson_exact_rdp`."""
    return poisson_exact_rdp(mechanism, scheme.rate, alpha)

