"""Small special functions in log space shared by several results."""

from __future__ import annotations

import math

from scipy.special import gammaln


def _log_expm1(x: float) -> float:
    """log(e^x - 1) for x > 0 (inf for x = inf)."""
    if math.isinf(x):
        return math.inf
    return x + math.log(-math.expm1(-x))


def _log_binom(n, k):
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)

