"""Small special functions in log space shared by several results."""

from __future__ import annotations

import math

import mpmath
import numpy as np
from scipy.special import erfcx, gammaln, log_ndtr

from .logspace import log1mexp


def log_expm1(x: float) -> float:
    """log(e^x - 1) for x > 0 (inf for x = inf)."""
    if math.isinf(x):
        return math.inf
    return x + math.log(-math.expm1(-x))


def log_binom(n, k):
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)



def log_hypergeom_pmf(n: int, K: int, q: int) -> np.ndarray:
    """log P(k of the K marked records in a uniform q-subset of n), k = 0 .. min(K, q), to
    ~K u absolute: C(K, k) q^(k) (n - q)^(K - k) / n^(K) with falling factorials x^(m) (K
    logarithms of integers each, exact binomials), instead of differences of log-gammas of
    ~n, which lose ~1e-8 at n ~ 1e6 (scipy's hypergeom.logpmf there: 9.4e-9)."""
    ks = np.arange(0, min(K, q) + 1)
    up_q = np.concatenate([[0.0], np.cumsum(np.log(q - ks[:-1].astype(float)))])
    free = min(K, n - q)  # at most n - q places outside the subset
    up_rest = np.concatenate([[0.0], np.cumsum(np.log(n - q - np.arange(free, dtype=float)))])
    down = float(np.sum(np.log(n - np.arange(K, dtype=float))))
    binom = np.array([math.log(math.comb(K, int(k))) for k in ks])
    m = K - ks  # marked records outside the subset, among its n - q places
    rest = np.where(m <= free, up_rest[np.minimum(m, free)], -np.inf)
    return binom + up_q + rest - down


class HypergeomLaw:
    """The number of the K marked records in a uniform q-subset of n, with ``pmf`` and
    ``sf`` (P(J > j)) like scipy's frozen distribution but from :func:`log_hypergeom_pmf`
    (scipy's are ~1e-8 relative off at n ~ 1e6); sf as sums of nonnegative terms."""

    def __init__(self, n: int, K: int, q: int) -> None:
        self._pmf = np.exp(log_hypergeom_pmf(n, K, q))
        tail = np.cumsum(self._pmf[::-1])[::-1]  # P(J >= j)
        self._sf = np.append(tail[1:], 0.0)  # P(J > j)

    def _at(self, table: np.ndarray, j) -> np.ndarray:
        j = np.asarray(j)
        inside = (j >= 0) & (j < len(table))
        out = np.where(inside, table[np.clip(j, 0, len(table) - 1).astype(int)], 0.0)
        return np.where(j < 0, 1.0, out) if table is self._sf else out

    def pmf(self, j) -> np.ndarray:
        return self._at(self._pmf, j)

    def sf(self, j) -> np.ndarray:
        return self._at(self._sf, j)


#: relative accuracy of :func:`gaussian_profile` (above 1e-300): the float path is taken only
#: where its error stays below ~3e-13 (mpmath sweep, s from 1e-10 to 1e4, delta down to 1e-300),
#: everywhere else the value comes from mpmath with enough digits for the cancellation
GAUSSIAN_PROFILE_RTOL = 1e-12

# the float path: s >= _FLOAT_MIN_SHIFT and (|a| + 2)(s + (|eps| + 1) / s) <= _FLOAT_MAX_COND.
# Its errors: the rounding of a = s/2 - eps/s (<= 2u (s + |eps|/s) absolute, moving a tail
# by (|a| + 1) times that relatively), the erfcx difference f(x) - f(x + s/sqrt 2) (cancels
# ~x / s digits: <= 2u (|a| + 2) / s), and log1mexp near 0 (a >= 0: delta >= 0.38 s Phi(a))
_FLOAT_MIN_SHIFT = 0.03
#: below this shift every point of :func:`gaussian_profile` is evaluated in mpmath (~0.1 ms
#: each): callers that need the profile at ~1e5 points may refuse such shifts
FLOAT_PROFILE_MIN_SHIFT = _FLOAT_MIN_SHIFT
_FLOAT_MAX_COND = 2e3
# below a = -38.6, Phi(a) < 1e-325: delta <= Phi(a) rounds to 0 in double precision
_ZERO_A = -38.6


def _profile_float(eps: np.ndarray, s: float) -> np.ndarray:
    a, b = s / 2 - eps / s, -s / 2 - eps / s
    with np.errstate(invalid="ignore", divide="ignore", over="ignore", under="ignore"):
        la = log_ndtr(a)
        lb = eps + log_ndtr(b)
        direct = la + log1mexp(np.minimum(lb - la, 0.0))
        r = math.sqrt(0.5)
        diff = erfcx(-a * r) - erfcx(-b * r)  # e^eps phi(b) = phi(a): no e^eps formed
        tail = -0.5 * a * a + np.log(0.5 * np.maximum(diff, 0.0))
        out = np.exp(np.where(a < 0, tail, direct))
    return np.where(np.isnan(out), 0.0, out)


def _ncdf_mp(x):
    # beyond |x| = 1e100, Phi(x) is 0 or 1 to any precision used here (mpmath overflows there)
    if abs(x) > 1e100:
        return mpmath.mpf(1 if x > 0 else 0)
    return mpmath.ncdf(x)


def _profile_mp(eps: float, s: float) -> float:
    a_f = s / 2 - eps / s
    # Phi(a) / delta <= (|a| + 2) / min(s, 1): that many digits cancel, 25 more are kept
    lost = math.log10(min(abs(a_f), 1e300) + 2.0) - math.log10(min(s, 1.0))
    dps = 25 + int(math.ceil(lost))
    with mpmath.workdps(max(dps, 30)):
        ms, me = mpmath.mpf(s), mpmath.mpf(eps)
        a = ms / 2 - me / ms
        d = _ncdf_mp(a) - mpmath.exp(me) * _ncdf_mp(a - ms)
        return max(float(d), 0.0)


def gaussian_profile(eps, s: float) -> np.ndarray:
    """The Gaussian privacy profile delta(eps) = Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s)
    of the pair (N(s, 1), N(0, 1)) (Balle & Wang 2018, Thm 8), within a relative
    :data:`GAUSSIAN_PROFILE_RTOL` of the truth wherever the truth is above 1e-300 (and within
    1e-300 absolute below).  The float formula (log space; the erfcx form in the tail) is used
    where its rounding error is small; small shifts (s < 0.03, where the two terms cancel
    ~log10(|a| / s) digits) and badly conditioned arguments are evaluated in mpmath.

    Args:
        eps: epsilon(s), any real (array or float).
        s: the shift, > 0.

    Returns:
        delta(eps), a float array of the shape of ``eps``.

    Raises:
        ValueError: s not a positive finite number.
    """
    if not (s > 0 and math.isfinite(s)):
        raise ValueError(f"the Gaussian profile needs a finite shift s > 0, got {s}")
    e = np.asarray(eps, dtype=float)
    out = np.asarray(_profile_float(e, s), dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        a = s / 2 - e / s
        cond = (np.abs(a) + 2.0) * (s + (np.abs(e) + 1.0) / s)
    zero = (a < _ZERO_A) | (np.isinf(e) & (e > 0))
    slow = ~zero & (np.isnan(cond) | (s < _FLOAT_MIN_SHIFT) | (cond > _FLOAT_MAX_COND))
    out = np.where(zero, 0.0, out)
    if np.any(slow):
        flat_e, flat_o, flat_s = e.reshape(-1), out.reshape(-1).copy(), slow.reshape(-1)
        for i in np.flatnonzero(flat_s):
            x = float(flat_e[i])
            flat_o[i] = 1.0 if x == -math.inf else _profile_mp(x, s)
        out = flat_o.reshape(e.shape)
    return np.minimum(np.maximum(out, 0.0), 1.0)
