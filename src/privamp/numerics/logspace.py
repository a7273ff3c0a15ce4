"""Log-space arithmetic that stays finite in the tails."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

__all__ = ["log1mexp", "logsubexp", "logsumexp", "log_ndtr", "log_diff_ndtr"]

log_ndtr = special.log_ndtr


def logsumexp(x, axis: int | None = None):
    """log(sum(exp(x))) along ``axis`` (over every entry when None: a float).

    The usual max-shifted sum, with the largest term taken out and added back through log1p
    (as scipy's): a sum dominated by one term keeps its small excess (log(1 + 1e-18) is not
    rounded to 0).  Without scipy's per-call overhead (about 60 us a call).  -inf entries are
    allowed (all -inf gives -inf); +inf gives +inf and NaN propagates.
    """
    a = np.asarray(x, dtype=float)
    ax = -1 if axis is None else axis
    if axis is None:
        a = a.reshape(-1)
    if a.shape[ax] == 0:
        out = np.full(np.delete(a.shape, ax % a.ndim), -np.inf) if a.ndim > 1 else -np.inf
        return out if axis is not None else float(-np.inf)
    if a.ndim == 1:
        j = int(np.argmax(a))
        top = float(a[j])
        if not np.isfinite(top):
            return top if axis is None else np.float64(top)
        with np.errstate(over="ignore"):
            e = np.exp(a - top)
        e[j] = 0.0
        out1 = top + math.log1p(float(np.sum(e)))
        return out1 if axis is None else np.float64(out1)
    i = np.expand_dims(np.argmax(a, axis=ax), ax)
    m = np.take_along_axis(a, i, axis=ax)
    finite = np.isfinite(m)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(a - np.where(finite, m, 0.0))
        np.put_along_axis(e, i, 0.0, axis=ax)
        out = np.where(finite, m + np.log1p(np.sum(e, axis=ax, keepdims=True)), m)
    out = np.squeeze(out, axis=ax)
    return float(out) if axis is None else out


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
