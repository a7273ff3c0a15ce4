"""Linear convolution of nonnegative arrays with certified roundoff control.

Two error models are combined.

* Direct sums (``np.convolve``): every output entry is a sum of at most m = min(len) products
  of nonnegative numbers, so its computed value has relative error at most
  ``gamma_{m+1} = (m+1) u / (1 - (m+1) u)`` (Higham, *Accuracy and Stability of Numerical
  Algorithms*, 2nd ed. 2002, Sec. 3.1, eq. (3.5) and Lemma 3.1).  A relative error is removed
  exactly by scaling the result by ``1 + 2 gamma`` (``round="up"``) or ``1 - 2 gamma``
  (``round="down"``), so no additive allowance is needed.
* FFT (``scipy.fft``, pocketfft): Higham 2002, Thm 24.2: a computed FFT of length N satisfies
  ``||fl(F x) - F x||_2 <= k eta ||F x||_2 / (1 - k eta)``, ``k = log2 N``, with
  ``eta = mu + gamma_4 (sqrt 2 + mu)``; pocketfft computes accurate twiddles, so we take
  ``eta = 6 u`` per stage.  For z = x * y computed as ``irfft(rfft(x) rfft(y))``, using
  ``||F x||_2 = sqrt(N) ||x||_2`` and ``||F x||_inf <= ||x||_1``, the two forward transforms,
  the pointwise product and the inverse give (first order in u)
  ``||z_hat - z||_2 <= k eta (||x||_2 ||y||_1 + 2 ||x||_1 ||y||_2) + 3 u ||x||_1 ||y||_2``.
  The l1 error over the n output entries is at most ``sqrt(n)`` times that; we symmetrise
  and apply a safety factor 2 (second-order terms, mixed-radix stages).

Since the FFT bound scales with ||x||_2 ||y||_1 + ||x||_1 ||y||_2, a concentrated array (a
PLD early in a composition) is split into its *bulk* b (the contiguous window of entries
above ``r max``, for the smallest r in 1e-10..1e-2 whose direct cost fits a budget) and the
rest t: ``x * y = b_x * b_y + t_x * y + b_x * t_y``, the first by direct sums (relative
error only) and the others by FFT, whose bounds carry the small norms of t.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import fft as sfft

__all__ = ["convolve_nonneg", "UNIT_ROUNDOFF"]

UNIT_ROUNDOFF = float(np.finfo(float).eps) / 2.0
_DIRECT_BUDGET = 3e7  # multiply-adds allowed for the direct part of one convolution
_BULK_RATIOS = (1e-10, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2)


def _gamma(m: int) -> float:
    c = (m + 1) * UNIT_ROUNDOFF
    return c / (1.0 - c)


def _fft_conv(x: np.ndarray, y: np.ndarray, same: bool) -> tuple[np.ndarray, float]:
    """FFT convolution and its l1 roundoff bound (module docstring)."""
    n = len(x) + len(y) - 1
    u = UNIT_ROUNDOFF
    size = sfft.next_fast_len(n, real=True)
    fx = sfft.rfft(x, size)
    fz = fx * fx if same else fx * sfft.rfft(y, size)
    z = sfft.irfft(fz, size)[:n]
    k = max(math.log2(size), 1.0)
    eta = 6.0 * u
    l1x, l1y = float(np.sum(np.abs(x))), float(np.sum(np.abs(y)))
    # (not np.linalg.norm: BLAS threads contend on a busy machine)
    l2x, l2y = math.sqrt(float(np.sum(x * x))), math.sqrt(float(np.sum(y * y)))
    cross = max(l2x * l1y, l1x * l2y)
    l2err = 3.0 * k * eta * cross + 3.0 * u * cross
    return z, 2.0 * math.sqrt(n) * l2err


def _bulk(x: np.ndarray, ratio: float) -> tuple[int, int]:
    idx = np.nonzero(x > ratio * x.max())[0]
    return int(idx[0]), int(idx[-1]) + 1


def convolve_nonneg(
    x: np.ndarray, y: np.ndarray | None = None, round: str = "up"
) -> tuple[np.ndarray, float]:
    """Full linear convolution of nonnegative ``x`` and ``y`` (``y=None``: x with itself).

    Returns ``(z, err)``: with ``round="up"``, ``z >= z_exact - e`` entrywise for some ``e``
    with ``sum |e| <= err``; with ``round="down"``, ``z <= z_exact + e``.  Negative roundoff
    values are clipped to 0 (moving entries towards the exact nonnegative values).
    """
    if round not in ("up", "down"):
        raise ValueError(f"round must be 'up' or 'down', got {round!r}")
    same = y is None
    if same:
        y = x
    n = len(x) + len(y) - 1
    sign = 1.0 if round == "up" else -1.0
    if len(x) * len(y) <= _DIRECT_BUDGET or x.max() <= 0 or y.max() <= 0:
        z = np.convolve(x, y)
        z *= 1.0 + sign * 2.0 * _gamma(min(len(x), len(y)) + 1)
        return z, 0.0
    for ratio in _BULK_RATIOS:
        bx0, bx1 = _bulk(x, ratio)
        by0, by1 = (bx0, bx1) if same else _bulk(y, ratio)
        mx, my = bx1 - bx0, by1 - by0
        if mx * my <= _DIRECT_BUDGET:
            break
    else:
        z, err = _fft_conv(x, y, same)
        np.maximum(z, 0.0, out=z)
        return z, err
    # x * y = b_x * b_y + t_x * y + b_x * t_y (b: bulk window, t = x - b)
    z = np.zeros(n)
    bb = np.convolve(x[bx0:bx1], y[by0:by1])
    bb *= 1.0 + sign * 2.0 * _gamma(min(mx, my) + 1)
    z[bx0 + by0 : bx0 + by0 + len(bb)] += bb
    tx = x.copy()
    tx[bx0:bx1] = 0.0
    if same:
        w = x.copy()
        w[bx0:bx1] *= 2.0  # x + b
        f, err = _fft_conv(tx, w, False)
        np.maximum(f, 0.0, out=f)
        z += f
    else:
        ty = y.copy()
        ty[by0:by1] = 0.0
        f1, e1 = _fft_conv(tx, y, False)
        f2, e2 = _fft_conv(x[bx0:bx1], ty, False)
        np.maximum(f1, 0.0, out=f1)
        np.maximum(f2, 0.0, out=f2)
        z += f1
        z[bx0 : bx0 + len(f2)] += f2
        err = e1 + e2
    # the final additions of nonnegative parts: relative error <= 2u per entry
    z *= 1.0 + sign * 4.0 * UNIT_ROUNDOFF
    return z, err
