"""scipy.fft's transforms for the convolution engine, with scipy's plan caches kept bounded.

pocketfft keeps the plans of the last :data:`FFT_PLAN_CACHE` lengths of each kind, and a plan
holds twiddle factors of about 16 bytes a point (32 in long double); it has no call to empty
its caches.  A query whose compositions use many distinct large lengths (truncated Poisson at
sigma 0.3 over 292 steps: ten lengths of 2.4M-4.7M points) piled up about 650 MB of plans
beyond the arrays themselves (1064 MB peak RSS, fuzz seed 2, session 10).  :func:`rfft` and
:func:`irfft` note each large length they plan; before a new one would take the noted plans
past :data:`PLAN_BYTES_CAP`, the caches are emptied (:func:`release_fft_plans`, a few hundred
microseconds, against tens of milliseconds for a transform of that size).  Values are those
of scipy.fft, unchanged.
"""

from __future__ import annotations

import numpy as np
import scipy.fft as _sfft

__all__ = ["FFT_PLAN_CACHE", "PLAN_BYTES_CAP", "irfft", "next_fast_len", "release_fft_plans",
           "rfft"]

#: plans pocketfft keeps per kind of transform (its LRU cache)
FFT_PLAN_CACHE = 16
#: estimated plan bytes (noted large lengths) past which the caches are emptied
PLAN_BYTES_CAP = 160 << 20
#: lengths from which plans are noted (smaller plans are at most a few MB each)
_LARGE = 1 << 18

next_fast_len = _sfft.next_fast_len
_noted: dict[tuple[str, int, int], int] = {}


def release_fft_plans() -> None:
    """Evict the large transforms' plans from scipy's FFT plan caches by transforming
    :data:`FFT_PLAN_CACHE` + 1 tiny lengths of every kind the engines use (a few hundred
    microseconds).  Between queries that each fit the memory budget, the plans of earlier
    ones would otherwise pile up: calibrating a rate at delta 1e-12 reached 1.1 GB peak RSS
    over 8 probes of at most 500 MB each (session 9)."""
    for dtype in (np.float64, np.longdouble):
        for n in range(64, 65 + FFT_PLAN_CACHE):
            x = np.ones(n, dtype=dtype)
            _sfft.irfft(_sfft.rfft(x), n)
            _sfft.ifft(_sfft.fft(x.astype(np.complex128 if dtype is np.float64
                                          else np.clongdouble)))
    _noted.clear()


def _note(kind: str, n: int, itemsize: int) -> None:
    if n < _LARGE:
        return
    key = (kind, n, itemsize)
    if key in _noted:
        return
    size = n * (32 if itemsize > 8 else 16)
    if _noted and sum(_noted.values()) + size > PLAN_BYTES_CAP:
        release_fft_plans()
    _noted[key] = size


def rfft(x, n=None, *args, **kwargs):
    """scipy.fft.rfft, its plan noted (module docstring)."""
    a = np.asarray(x)
    _note("r", int(a.shape[-1] if n is None else n), a.dtype.itemsize)
    return _sfft.rfft(a, n, *args, **kwargs)


def irfft(x, n=None, *args, **kwargs):
    """scipy.fft.irfft, its plan noted (module docstring)."""
    a = np.asarray(x)
    _note("ir", int(2 * (a.shape[-1] - 1) if n is None else n), a.dtype.itemsize // 2)
    return _sfft.irfft(a, n, *args, **kwargs)
