"""Log-space arithmetic that stays finite in the tails."""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["log1mexp", "logsubexp", "logsumexp", "log_ndtr", "log_diff_ndtr"]

logsumexp = special.logsumexp
log_ndtr = special.log_ndtr


def log1mexp(x: np.ndarray | float) -> np.ndarray:
    """log(1 - exp(x)) for x <= 0, accurate for x near 0 and very negative x."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(x > -0.6931471805599453, np.log(-np.expm1(x)), np.log1p(-np.exp(x)))
    return out


def logsubexp(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """log(exp(a) - exp(b)) for a >= b (returns -inf where a == b)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        d = np.where(np.isneginf(b), -np.inf, b - a)
    return a + log1mexp(np.minimum(d, 0.0))


def log_diff_ndtr(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """log(Phi(b) - Phi(a)) for a <= b, accurate in both tails."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    # In the upper tail use Phi(b) - Phi(a) = Phi(-a) - Phi(-b).
    upper = a > 0
    lo = np.where(upper, -b, a)
    hi = np.where(upper, -a, b)
    return logsubexp(log_ndtr(hi), log_ndtr(lo))
