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

In-place real transforms (issue 28, session 12): :func:`spectrum_buffer`,
:func:`rfft_inplace` and :func:`irfft_inplace` keep a length-N real transform's input and
output in one array of N // 2 + 1 complex numbers (its real view's first N entries hold the
real side).  They call pocketfft's own r2c / c2r (scipy's private ``pypocketfft`` module,
the routines behind scipy.fft.rfft / irfft) with that array as the output: pocketfft copies
the whole input line into its scratch buffer before it writes the output, so the results
are bit-identical to scipy.fft's (tests/numerics/test_fft_inplace.py) and one array of the
transform's length is saved at each large transform.  Without that module (another scipy),
the public scipy.fft functions are used on a copy (same values, no saving).
"""

from __future__ import annotations

import numpy as np
import scipy.fft as _sfft

try:  # pocketfft's r2c / c2r with an ``out`` argument (module docstring)
    from scipy.fft._pocketfft import pypocketfft as _pfft
except ImportError:  # pragma: no cover - another scipy layout
    _pfft = None

__all__ = ["FFT_PLAN_CACHE", "PLAN_BYTES_CAP", "irfft", "irfft_inplace", "next_fast_len",
           "release_fft_plans", "rfft", "rfft_inplace", "spectrum_buffer"]

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


def spectrum_buffer(p: np.ndarray, N: int, dtype=np.float64) -> np.ndarray:
    """An array of N // 2 + 1 complex numbers (complex128, or complex long double for a
    long-double ``dtype``) whose real view starts with ``p`` (cast to ``dtype``) zero-padded to
    length N: the input of :func:`rfft_inplace`.

    Args:
        p: the real values (at most N of them).
        N: the transform length.
        dtype: np.float64 or np.longdouble.

    Returns:
        The complex array.

    Raises:
        ValueError: if p is longer than N.
    """
    if len(p) > N:
        raise ValueError(f"p has {len(p)} entries, more than the transform length N = {N}")
    Y = np.zeros(N // 2 + 1, dtype=np.result_type(dtype, np.complex64))
    Y.view(dtype)[: len(p)] = p
    return Y


def rfft_inplace(Y: np.ndarray, N: int) -> np.ndarray:
    """The real FFT of length N of the first N entries of ``Y``'s real view, written over
    ``Y`` (values of scipy.fft.rfft; module docstring).

    Args:
        Y: a C-contiguous array of N // 2 + 1 complex numbers (see :func:`spectrum_buffer`).
        N: the transform length.

    Returns:
        ``Y``, now the half spectrum.
    """
    x = Y.view(Y.real.dtype)[:N]
    _note("r", N, x.dtype.itemsize)
    if _pfft is None:  # pragma: no cover
        Y[:] = _sfft.rfft(x.copy())
        return Y
    _pfft.r2c(x, (0,), True, 0, Y, _sfft.get_workers())
    return Y


def irfft_inplace(Y: np.ndarray, N: int) -> np.ndarray:
    """The inverse real FFT of length N of the half spectrum ``Y`` (N // 2 + 1 complex
    numbers, C-contiguous), written over ``Y``'s memory (values of scipy.fft.irfft; module
    docstring).

    Args:
        Y: the half spectrum (destroyed).
        N: the transform length.

    Returns:
        The N real values: a view of ``Y``'s first N real entries.
    """
    out = Y.view(Y.real.dtype)[:N]
    _note("ir", N, out.dtype.itemsize)
    if _pfft is None:  # pragma: no cover
        out[:] = _sfft.irfft(Y, N)
        return out
    _pfft.c2r(Y, (0,), N, False, 2, out, _sfft.get_workers())
    return out
