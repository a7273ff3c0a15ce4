"""Theorem 6 of Balle, Barthe, Gaboardi 2018 (arXiv:1807.01647): privacy profile -> Rényi DP.

With s = alpha - 1 and delta, delta~ the profiles of the two orders of a pair,

    exp((alpha-1) D_alpha) = 1 + s (s+1) int_0^inf (e^{s eps} delta(eps)
                                                    + e^{-(s+1) eps} delta~(eps)) d eps.

For a symmetric relation both profiles are bounded by one non-increasing delta.  The
integral is bounded above by the upper Riemann sum on a grid 0 = g_0 < ... < g_N = E
(delta at each cell's left end, the cell's weight integrated exactly) plus a bound on the
tail beyond E.  Summed by parts, with d_j = delta(g_j) and Delta_j = d_{j-1} - d_j >= 0,

    sum_{i<N} d_i int_{g_i}^{g_{i+1}} e^{s x} dx
        = (sum_{0<j<N} Delta_j expm1(s g_j) + d_{N-1} expm1(s E)) / s,
    sum_{i<N} d_i int_{g_i}^{g_{i+1}} e^{-(s+1) x} dx
        = (sum_{0<j<N} Delta_j F(g_j) + d_{N-1} F(E)) / (s+1),  F(x) = -expm1(-(s+1) x),

sums of non-negative terms (no cancellation), one ``expm1`` per grid point and order and a
matrix-vector product for all orders at once.  The profile is evaluated on the grid once per
setting (:func:`profile_rdp` keeps the last settings' grids), not once per order or query.

Rounding: d is replaced by its non-increasing envelope (only raises it); the sums of
non-negative terms carry a relative float error below (N + 2) 2^-53 < 1e-11, covered by
the 1e-10 added to log I; products flushed to zero (each below 1e-307) are covered by an
absolute 1e-290 added to I.  Where s E > 600 the first sum is taken in log space, its
exponents' float error (<= 2u (|log v| + s E)) added to log I.  So the
value is the upper Riemann sum of the grid, rounded up by at most 1e-10 relative (the same
sum and rounding as before this summation by parts; issue 28).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..._validation import check_orders
from ...mechanisms.base import Mechanism
from ...mechanisms.gaussian import Gaussian
from ...mechanisms.laplace import Laplace
from ...mechanisms.randomized_response import RandomizedResponse
from ...sampling.relations import AddRemove, Relation, Substitution
from ...sampling.schemes import Poisson, Scheme, WithoutReplacement, WithReplacement
from ..registry import rdp_method
from .profiles import (
    PAPER,
    ProfileTerms,
    covers_fixed_batch,
    mixture_profile,
    profile_terms,
    validate_setting,
)

__all__ = [
    "ProfileGrid",
    "profile_grid",
    "log_moment_integral",
    "rdp_from_profile",
    "profile_rdp",
    "clear_profile_cache",
]


#: float error of the sums (relative, on I), rounded up
_LOG_FLOAT = 1e-10


#: absolute slack on I for products flushed to zero (each < 1e-307, at most ~1e5 of them)
_UNDERFLOW = 1e-290


#: rows s with s E above this take the first sum in log space (expm1 overflows near 709)
_LINEAR_MAX = 600.0


#: orders per block of :func:`log_moment_integral`
_ROWS = 4


@dataclass(frozen=True)
class ProfileGrid:
    """A non-increasing profile bound on Thm 6's grid, in summation-by-parts form.

    ``points``: the grid points g_j (0 < j <= N) carrying a positive weight; ``weights``:
    their weights Delta_j = d_{j-1} - d_j (j < N) and d_{N-1} (j = N), d the non-increasing
    envelope of the profile's values; ``end``: E = g_N; ``at_end``: delta(E)."""

    points: np.ndarray
    weights: np.ndarray
    end: float
    at_end: float


def profile_grid(delta: Callable[[np.ndarray], np.ndarray], eps_max: float,
                 grid_size: int = 20000) -> ProfileGrid:
    """The profile on Thm 6's grid over [0, eps_max]: ``grid_size`` evenly spaced points and
    ``grid_size // 4`` geometric ones in [1e-8, 1] (the grid used before issue 28).

    Args:
        delta: non-increasing upper bounds on the profile, vectorised over eps >= 0.
        eps_max: the grid's end E, in (0, inf).
        grid_size: the number of evenly spaced points.

    Returns:
        The :class:`ProfileGrid`.

    Raises:
        ValueError: ``eps_max`` not in (0, inf).
        RuntimeError: the profile returned NaN.
    """
    if not (eps_max > 0 and math.isfinite(eps_max)):
        raise ValueError(f"eps_max must be in (0, inf), got {eps_max}")
    n0 = max(grid_size // 4, 10)
    grid = np.unique(np.concatenate([
        [0.0], np.geomspace(1e-8, min(1.0, eps_max), n0), np.linspace(0.0, eps_max, grid_size)
    ]))
    d = np.clip(np.asarray(delta(grid), dtype=float), 0.0, 1.0)
    if np.isnan(d).any():
        raise RuntimeError("internal error: profile returned NaN; please report")
    left = np.maximum.accumulate(d[:-1][::-1])[::-1]  # the non-increasing envelope
    weights = np.append(left[:-1] - left[1:], left[-1])  # at g_1 .. g_N
    keep = weights > 0
    return ProfileGrid(grid[1:][keep], weights[keep], float(grid[-1]), float(d[-1]))


def log_moment_integral(pg: ProfileGrid, s: np.ndarray) -> np.ndarray:
    """log of the upper Riemann sum of int_0^E (e^{s x} + e^{-(s+1) x}) delta(x) dx on the grid
    of ``pg``, rounded up (module docstring), for each s > 0 in ``s``.

    Args:
        pg: the profile on its grid (:func:`profile_grid`).
        s: the orders minus one, a 1-d array of positive numbers.

    Returns:
        The logarithms, an array like ``s`` (-inf where the profile vanishes on the grid).
    """
    s = np.asarray(s, dtype=float).ravel()
    out = np.full(s.shape, -np.inf)
    x, v = pg.points, pg.weights
    if not x.size:
        return out
    logv = np.log(v)
    # a few orders at a time: the blocks stay in cache (one matrix for all orders costs
    # 4x more in page faults and memory traffic)
    buf, work = np.empty((_ROWS, x.size)), np.empty((_ROWS, x.size))
    for lo in range(0, s.size, _ROWS):
        ss = s[lo:lo + _ROWS]
        n = ss.size
        sx, w = buf[:n], work[:n]
        np.multiply(ss[:, None], x, out=sx)
        np.add(sx, x, out=w)
        np.negative(w, out=w)
        np.expm1(w, out=w)  # -F(x) = expm1(-(s + 1) x)
        second = -np.einsum("ij,j->i", w, v) / (ss + 1.0) + _UNDERFLOW
        log_first = np.empty(n)
        for r in range(n):
            if ss[r] * pg.end <= _LINEAR_MAX:
                first = _dot(np.expm1(sx[r], out=w[r]), v) / ss[r] + _UNDERFLOW
                log_first[r] = math.log(first)
            else:  # e^{s x} overflows: sum e^{log v + s x - M} (1 - e^{-s x}), M the top
                np.negative(sx[r], out=w[r])
                np.expm1(w[r], out=w[r])
                np.add(sx[r], logv, out=sx[r])
                top = float(sx[r].max())
                np.subtract(sx[r], top, out=sx[r])
                np.exp(sx[r], out=sx[r])
                log_first[r] = top + math.log(-_dot(sx[r], w[r])) - math.log(ss[r])
                # the exponents log v + s x carry an absolute float error <= 2u (|log v| + s x)
                log_first[r] += 2.0 ** -51 * (ss[r] * pg.end - float(logv.min()))
        out[lo:lo + n] = np.logaddexp(log_first, np.log(second)) + _LOG_FLOAT
    return out


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """sum a b without BLAS (its threaded dot product costs milliseconds on a busy machine)."""
    return float(np.einsum("i,i->", a, b))


def _rdp_from_log_integral(s: np.ndarray, log_i: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, np.log(s * (s + 1.0)) + log_i) / s


def rdp_from_profile(
    delta: Callable[[np.ndarray], np.ndarray],
    alpha: float | np.ndarray,
    eps_max: float,
    tail: Callable[[float, float], float] | None = None,
    grid_size: int = 20000,
    log_tail: Callable[[float, float], float] | None = None,
) -> np.ndarray:
    """Rényi DP from a privacy profile (Balle, Barthe, Gaboardi 2018, Thm 6).

    Args:
        delta: non-increasing upper bounds on the profile of *both* orders of the
            neighbours (a symmetric relation), for eps >= 0, vectorised.
        alpha: orders > 1, scalar or array.
        eps_max: end E of the integration grid, in (0, inf).
        tail: ``tail(s, E)``, an upper bound on the integral beyond E (or None).
        grid_size: evenly spaced grid points (:func:`profile_grid`).
        log_tail: ``log_tail(s, E)``, the logarithm of such a bound (or None).

    Returns:
        Upper bounds on D_alpha = log(1 + s(s+1) I)/s, s = alpha - 1,
        I = int_0^inf (e^{s eps} + e^{-(s+1) eps}) delta(eps) d eps (the upper Riemann sum
        on [0, E] plus the tail), shaped like ``alpha``.

    Raises:
        ValueError: an order not in (1, inf), ``eps_max`` not in (0, inf), or neither tail
            given while delta(eps_max) > 0.
    """
    a = np.atleast_1d(check_orders(alpha)).astype(float)
    pg = profile_grid(delta, eps_max, grid_size)
    if tail is None and log_tail is None and pg.at_end > 0:
        raise ValueError("delta(eps_max) > 0: give a tail bound or a larger eps_max")
    s = a.ravel() - 1.0
    log_i = log_moment_integral(pg, s)
    for i, si in enumerate(s):
        extra = -np.inf
        if tail is not None:
            t = float(tail(float(si), pg.end))
            if t > 0:
                extra = math.log(t)
        if log_tail is not None:
            extra = np.logaddexp(extra, float(log_tail(float(si), pg.end)))
        if extra > -np.inf:
            log_i[i] = np.logaddexp(log_i[i], extra + _LOG_FLOAT)
    out = _rdp_from_log_integral(s, log_i)
    return out.reshape(np.shape(alpha)) if np.ndim(alpha) else out.reshape(())


def _zero_point(mech: Mechanism, kmax: int) -> float:
    """eps beyond which delta_{M,k} = 0 for all k <= kmax (inf for the Gaussian)."""
    if isinstance(mech, Laplace):
        return mech.epsilon0(kmax)
    if isinstance(mech, RandomizedResponse):
        e0 = mech.epsilon0()
        return e0 * kmax  # black-box needs k e0; white-box e0 <= this
    return math.inf


#: the Markov tail's orders: lam = s + _LAM_STEPS max(1, s)
_LAM_STEPS = np.geomspace(1e-3, 1e4, 400)


def _markov_log_tail(mech: Mechanism, terms: ProfileTerms, group: str, s: np.ndarray,
                     E: float) -> np.ndarray:
    """Log of upper bounds on int_E^inf (e^{s x} + e^{-(s+1)x}) delta'(x) dx for the mixture
    profile, for each s in ``s``, from delta_k(eps) <= exp(lam D_{lam+1} - lam eps) (Markov's
    inequality on the privacy loss; D the Rényi divergence of the pair at distance k) and
    eps >= eps' + c_E for eps' >= E; the least over the orders lam = s + (1e-3..1e4)
    max(1, s)."""
    eta = terms.eta
    c_E = math.log(eta - (1 - eta) * math.expm1(-E)) - math.log(eta) if eta < 1 else 0.0
    s = np.asarray(s, dtype=float)[:, None]
    lams = s + _LAM_STEPS[None, :] * np.maximum(1.0, s)
    total = np.full(s.shape[0], -np.inf)
    for k, w in zip(terms.distances, terms.weights, strict=True):
        if w <= 0:
            continue
        k = int(k)
        if group == "white-box" or k == 1:
            kern = np.asarray(mech.rdp_kernel((lams + 1.0).ravel(), k), dtype=float)
            logA = lams * kern.reshape(lams.shape)
            r = lams
        else:
            kern = np.asarray(mech.rdp_kernel((lams + 1.0).ravel(), 1), dtype=float)
            logA = math.log(k) + lams * kern.reshape(lams.shape)
            r = (lams - k + 1.0) / k
        ok = r > s
        with np.errstate(invalid="ignore", divide="ignore"):
            val = math.log(2.0) + logA - r * c_E + (s - r) * E - np.log(r - s)
        best = np.min(np.where(ok, val, np.inf), axis=1)  # inf if no lam has r > s
        total = np.logaddexp(total, math.log(w) + best)
    return total


@dataclass(frozen=True)
class _Setting:
    grid: ProfileGrid | None  # None: no privacy (randomized response with theta = 1)
    terms: ProfileTerms
    markov: bool  # the Gaussian: the Markov tail beyond the grid


def _build_setting(mechanism: Mechanism, scheme: Scheme, relation: Relation,
                   group: str) -> _Setting:
    terms = profile_terms(mechanism, scheme, relation)
    if terms.eta == 0.0:
        return _Setting(None, terms, False)
    z = _zero_point(mechanism, int(terms.distances.max()))

    def delta(e):
        return mixture_profile(mechanism, terms, np.asarray(e, dtype=float), group)

    if isinstance(mechanism, RandomizedResponse) and not math.isfinite(z):
        return _Setting(None, terms, False)  # theta = 1: no privacy at all
    if math.isfinite(z):
        eta = terms.eta
        zp = z if eta >= 1 else float(np.logaddexp(math.log1p(-eta), math.log(eta) + z))
        pg = profile_grid(delta, zp * (1 + 1e-9) + 1e-12)
        if pg.at_end > 0:  # pragma: no cover - the profile vanishes beyond its zero point
            raise RuntimeError("internal error: profile positive beyond its zero point")
        return _Setting(pg, terms, False)
    # Gaussian: integrate while delta' is representable, then the Markov tail
    probe = np.linspace(0.0, 2000.0, 20001)
    idx = np.nonzero(delta(probe) > 1e-250)[0]
    E = max(float(probe[idx[-1]]) if idx.size else 1e-3, 1e-3)
    return _Setting(profile_grid(delta, E), terms, True)


@functools.lru_cache(maxsize=64)
def _cached_setting(mechanism, scheme, relation, group) -> _Setting:
    return _build_setting(mechanism, scheme, relation, group)


def clear_profile_cache() -> None:
    """Forget the profiles kept by :func:`profile_rdp` (for cold-start benchmarks)."""
    _cached_setting.cache_clear()


def _setting(mechanism, scheme, relation, group) -> _Setting:
    try:
        return _cached_setting(mechanism, scheme, relation, group)
    except TypeError:  # pragma: no cover - an unhashable mechanism: built every time
        return _build_setting(mechanism, scheme, relation, group)


def profile_rdp(
    mechanism: Mechanism,
    scheme: Scheme,
    alpha: float | np.ndarray,
    relation: Relation | None = None,
    group: str = "white-box",
) -> np.ndarray:
    """Rényi DP of one subsampled step from its privacy profile (Thm 6 applied to Thms 8-11).

    (Thm 14's profile does not vanish at large eps, so its Thm 6 integral diverges; Poisson
    under Substitution uses the size-free mixture bound of
    :func:`~privamp.theorems.balle2018.profiles.profile_terms`.)  The profile's grid is
    built once per setting and kept (the last 64 settings).

    Args:
        mechanism: Gaussian, Laplace or RandomizedResponse.
        scheme: the sampling scheme.
        alpha: real orders > 1, scalar or array.
        relation: the neighbouring relation (default Substitution()).
        group: "white-box" or "black-box" group profiles.

    Returns:
        Upper bounds on the step's Rényi DP, shaped like ``alpha``.

    Raises:
        ValueError: a setting the theorems do not cover, or bad orders.
    """
    relation = Substitution() if relation is None else relation
    validate_setting(mechanism, scheme, relation, group)
    a = check_orders(alpha)
    st = _setting(mechanism, scheme, relation, group)
    if st.terms.eta == 0.0:
        return np.zeros_like(a)
    if st.grid is None:
        return np.full_like(a, np.inf)
    s = np.atleast_1d(a).astype(float).ravel() - 1.0
    log_i = log_moment_integral(st.grid, s)
    if st.markov:
        tail = _markov_log_tail(mechanism, st.terms, group, s, st.grid.end)
        log_i = np.logaddexp(log_i, tail + _LOG_FLOAT)
    out = _rdp_from_log_integral(s, log_i)
    return out.reshape(np.shape(a))


def _rdp_applies(mech, scheme, relation) -> bool:
    # Poisson under add/remove is left out of the registry: the exact Poisson-subsampled RDP
    # of the same dominating pair (privamp.theorems.mironov2019) is never larger than Thm 6
    # of Thm 8, which bounds both orders of the neighbours by the same profile.  profile_rdp
    # still computes it.  Poisson under substitution had no RDP result: registered.
    if isinstance(scheme, Poisson):
        return type(relation) is Substitution
    return covers_fixed_batch(scheme, relation)


@rdp_method(
    "balle-profile",
    f"{PAPER}, Thm 6 (profile -> RDP) of Thms 9-11 and of Poisson under substitution "
    "(white-box group profiles)",
    mechanisms=(Gaussian, Laplace, RandomizedResponse),
    schemes=(WithoutReplacement, WithReplacement, Poisson),
    relations=(AddRemove, Substitution),
    when=_rdp_applies,
    tight=False,
    in_best=True,
)
def _balle_profile_rdp(mech, scheme, relation, alpha):
    return profile_rdp(mech, scheme, alpha, relation, "white-box")
