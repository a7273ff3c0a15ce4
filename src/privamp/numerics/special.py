"""Small special functions in log space shared by several results."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln


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
