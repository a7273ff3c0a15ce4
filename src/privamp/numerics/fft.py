"""Linear convolution of nonnegative arrays with a certified bound on its roundoff error.

The FFT bound follows Higham, *Accuracy and Stability of Numerical Algorithms* (2nd ed., 2002),
Thm 24.2: a computed radix-2 style FFT of length N satisfies
``||fl(F x) - F x||_2 <= k eta ||F x||_2 / (1 - k eta)``, ``k = log2 N``, with
``eta = mu + gamma_4 (sqrt 2 + mu)`` (mu = twiddle-factor error).  pocketfft (``scipy.fft``)
computes accurate twiddles, so we take ``eta = 6 u`` per stage.  For z = x * y computed as
``irfft(rfft(x) rfft(y))`` (two forward transforms, one pointwise complex product, one inverse),
with ``||F x||_2 = sqrt(N) ||x||_2`` and ``||F x||_inf <= ||x||_1``, the three transforms and the
product give

    ||z_hat - z||_2 <= k eta (||x||_2 ||y||_1 + 2 ||x||_1 ||y||_2) + 3 u ||x||_1 ||y||_2

(to first order in u).  The l1 error over the n kept output entries is at most ``sqrt(n)``
times that; we symmetrise and multiply by a safety factor 2 for the neglected second-order
terms and for mixed-radix stages.  For small inputs the direct sum (all terms nonnegative, so
each entry has relative error <= gamma_m) is used instead, with l1 error <= gamma_m ||x||_1 ||y||_1.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import fft as sfft

__all__ = ["convolve_nonneg", "UNIT_ROUNDOFF"]

UNIT_ROUNDOFF = float(np.finfo(float).eps) / 2.0
_DIRECT_MAX = 64


def convolve_nonneg(x: np.ndarray, y: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Full linear convolution of nonnegative ``x`` and ``y`` (``y=None``: x with itself).

    Returns ``(z, err)`` with ``sum_k |z_k - z_exact_k| <= err`` (see module docstring);
    negative roundoff values are clipped to 0 (this only moves entries towards the exact,
    nonnegative values, so ``err`` still holds).
    """
    same = y is None
    if same:
        y = x
    n = len(x) + len(y) - 1
    u = UNIT_ROUNDOFF
    l1x, l1y = float(x.sum()), float(y.sum())
    if min(len(x), len(y)) <= _DIRECT_MAX:
        z = np.convolve(x, y)
        m = min(len(x), len(y))
        gamma = (m + 1) * u / (1 - (m + 1) * u)
        err = 2.0 * gamma * l1x * l1y
    else:
        size = sfft.next_fast_len(n, real=True)
        fx = sfft.rfft(x, size)
        fz = fx * fx if same else fx * sfft.rfft(y, size)
        z = sfft.irfft(fz, size)[:n]
        k = math.log2(size)
        eta = 6.0 * u
        l2x, l2y = float(np.linalg.norm(x)), float(np.linalg.norm(y))
        cross = max(l2x * l1y, l1x * l2y)
        l2err = 3.0 * k * eta * cross + 3.0 * u * cross
        err = 2.0 * math.sqrt(n) * l2err
    np.maximum(z, 0.0, out=z)
    return z, err
