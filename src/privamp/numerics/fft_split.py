"""Real FFTs of even length N as one radix-2 step around two real transforms of length N / 2:
the same transforms as :func:`privamp.numerics.fft_plans.rfft_inplace` /
:func:`~privamp.numerics.fft_plans.irfft_inplace` with about half their peak memory.

Memory (issue 28, session 12).  pocketfft's real transform of length N holds, besides its
input and output, a scratch copy of the input line, a second scratch array inside the
transform and its cached plan (twiddles): about 3 N values while it runs (81 MiB at N =
3.5e6 in float64, the peak of the T = 1e7 queries at sigma 0.3 and q 1e-7 / 1e-6).  Here the
two half-length transforms hold 3 N / 2 values each, one after the other.

Method (N = 2M; u the unit roundoff of the arithmetic; C the per-log2 constant of the
model of :func:`privamp.numerics.fft.self_convolve_power`, each transform of length L
erring per coefficient by at most ``C log2(L) u ||x||_1`` and per entry of an inverse by
``(1/L) C log2(L) u sum |Y|``).

* Forward: ``X_k = E_k + t_k O_k`` with E, O the real FFTs of length M of the even and odd
  entries and ``t_k = exp(-2 pi i k / N)``; for ``M/2 < k <= M``, ``E_k = conj(E_{M-k})``
  (likewise O).  Twiddles in long double with the angle reduced to [0, pi/2] (``k`` or
  ``N/2 - k`` times ``2 pi / N``, 2 pi as 8 atan(1): the angle within 5 u_ld relative, so
  8 u_ld absolute; cosl / sinl within 4 u_ld), so ``|t^ - t| <= 17 u_ld``, then cast to the
  working type (float64: ``<= 1.5 u`` in all).  Product (``2 sqrt(2) u``, Higham 2002,
  Lemma 3.5) and sum (``sqrt(2) u``): ``|X^_k - X_k| <= d_E + d_O + (tau + 4.3 u)
  ||x||_1`` with ``tau`` the twiddle error; with ``d_E + d_O <= C log2(M) u ||x||_1``, the
  whole is within ``C log2(N) u ||x||_1`` when ``1.1 (tau / u + 4.3) <= C``: 6.4 (float64
  arithmetic) or 24 (long double) against C (4 x 8 = 32 in the forward bound of
  self_convolve_power, 8 in the inverse's).  :func:`split_constant` gives the needed
  constant; callers check it.
* Inverse: ``x_{2m} = irfft_M(E')_m``, ``x_{2m+1} = irfft_M(O')_m`` with ``E'_k = (Y_k +
  conj(Y_{M-k})) / 2`` and ``O'_k = (Y_k - conj(Y_{M-k})) t'_k / 2``, ``t'_k = exp(2 pi i k
  / N)``, k = 0 .. M/2 (an exact factorisation of the inverse DFT, so coefficient errors
  propagate as through the full inverse; the halving is exact barring underflow).  The
  sum, product and twiddle add at most ``(1.5 + 2.9 + 1.5) u <= 5.9 u`` times ``(|Y_k| +
  |Y_{M-k}|) / 2`` per coefficient, which the inverse DFT of length M maps to ``<= (5.9 u /
  N) sum |Y|`` per entry: with the half-length transforms' ``C log2(M)``, within the full
  transform's ``C log2(N)`` for ``C >= 5.9 * 1.1 = 6.5`` (C = 8).  In l2 over the N entries
  (Parseval) the step adds ``<= 5.9 sqrt(2) u ||Y||_2 / sqrt(N) = 8.3 u ||Y||_2 /
  sqrt(N)``: 0.3 u over C, inside the factor 2 of :func:`privamp.numerics.fft`'s inverse
  bound (its second-order and mixed-radix allowance); the measured constants (0.43 per
  log2, issue 14) leave the whole ~10x inside the model.
"""

from __future__ import annotations

import mmap

import numpy as np

from . import fft_plans

__all__ = ["SPLIT_MIN_LEN", "irfft_split_inplace", "rfft_split", "split_constant"]

#: transforms of at least this (even) length are split
SPLIT_MIN_LEN = 1 << 20
#: coefficients per chunk of the radix-2 step
_CHUNK = 1 << 16
#: arrays of at least this many bytes are anonymous memory maps (returned to the system
#: when they die, not kept in the C heap)
_MMAP_BYTES = 1 << 62


def split_constant(dtype) -> float:
    """The per-log2 constant C the split step needs (module docstring): ``1.1 (tau / u +
    4.3)`` (forward; 6.5 also covers the float64 inverse's per-entry bound), tau the
    twiddle error in units of the arithmetic's roundoff u.

    Args:
        dtype: np.float64 or np.longdouble.

    Returns:
        6.5 for float64 arithmetic (long-double twiddles, cast), 24.0 for long double.
    """
    return 6.5 if np.dtype(dtype) == np.float64 else 24.0


def _empty(n: int, dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    if n * dt.itemsize >= _MMAP_BYTES:
        return np.frombuffer(mmap.mmap(-1, n * dt.itemsize), dtype=dt)
    return np.zeros(n, dtype=dt)


def _twiddles(k0: int, k1: int, N: int, sign: float, cdtype) -> np.ndarray:
    """``exp(sign 2 pi i k / N)`` for k0 <= k < k1 <= N/2 + 1 (N even), angle reduced to
    [0, pi/2], in long double, cast to ``cdtype``."""
    k = np.arange(k0, k1, dtype=np.int64)
    far = 4 * k > N
    kr = np.where(far, N // 2 - k, k)  # theta = pi - phi for k > N/4
    step = 8.0 * np.arctan(np.longdouble(1.0)) / np.longdouble(N)
    phi = kr.astype(np.longdouble) * step
    c, s = np.cos(phi), np.sin(phi)
    c[far] = -c[far]
    return (c + (1j * sign) * s).astype(cdtype)


def rfft_split(x: np.ndarray, N: int, dtype=np.float64,
               zero_at: np.ndarray | None = None) -> np.ndarray:
    """The real FFT of ``x`` zero-padded to even length N, in ``dtype`` arithmetic, by one
    radix-2 step (module docstring; within the full transform's error model for ``C >=
    split_constant(dtype)``).

    Args:
        x: real values (at most N).
        N: the transform length (even).
        dtype: np.float64 or np.longdouble.
        zero_at: indices of x taken as 0 (x itself is not changed).

    Returns:
        The half spectrum (N // 2 + 1 complex values of ``dtype``'s complex type).

    Raises:
        ValueError: if N is odd or x longer than N.
    """
    if N % 2 or len(x) > N:
        raise ValueError(f"rfft_split needs an even N >= len(x), got N = {N}, len {len(x)}")
    M = N // 2
    halves = []
    for r in (0, 1):
        buf = fft_plans.spectrum_buffer(x[r::2], M, dtype)
        if zero_at is not None and len(zero_at):
            z = np.asarray(zero_at)
            buf.view(dtype)[(z[z % 2 == r] - r) // 2] = 0.0
        halves.append(fft_plans.rfft_inplace(buf, M))
        del buf
    E, O = halves
    del halves
    X = _empty(M + 1, E.dtype)
    h = M // 2  # E_k, O_k stored for k <= h
    for k0 in range(0, M + 1, _CHUNK):
        k1 = min(M + 1, k0 + _CHUNK)
        t = _twiddles(k0, k1, N, -1.0, E.dtype)
        a0, a1 = k0, min(k1, h + 1)  # direct part
        if a1 > a0:
            X[a0:a1] = E[a0:a1] + t[: a1 - a0] * O[a0:a1]
        b0 = max(k0, h + 1)  # mirrored part: E_k = conj(E_{M-k})
        if k1 > b0:
            j = M - np.arange(b0, k1)
            X[b0:k1] = np.conj(E[j]) + t[b0 - k0 :] * np.conj(O[j])
    return X


def irfft_split_inplace(Y: np.ndarray, N: int) -> np.ndarray:
    """The inverse real FFT of length N (a multiple of 4) of the half spectrum ``Y`` (N // 2
    + 1 complex values, C-contiguous) by one radix-2 step (module docstring), its two
    half-length halves computed in ``Y``'s memory (destroyed).

    Layout: pair (k, M - k), k <= M/2, gives E'_k (into slot k) and O'_k (into slot M - k);
    the length-M inverse of E' = slots 0..M/2 writes x's even entries over slots
    0..M/2 - 1; O' is then moved into slots M/2..M (in order) and its inverse writes the odd
    entries over slots M/2..M - 1 (pocketfft reads the whole input before writing: see
    :mod:`privamp.numerics.fft_plans`).

    Args:
        Y: the half spectrum (complex128 or complex long double).
        N: the transform length.

    Returns:
        The N real values (a new array).

    Raises:
        ValueError: if N is not a multiple of 4 or Y's length is not N // 2 + 1.
    """
    if N % 4 or len(Y) != N // 2 + 1:
        raise ValueError(f"irfft_split_inplace needs N divisible by 4 and N // 2 + 1 "
                         f"coefficients, got N = {N} and {len(Y)}")
    M = N // 2
    h = M // 2
    o_h = 0j
    for k0 in range(0, h + 1, _CHUNK):
        k1 = min(h + 1, k0 + _CHUNK)
        a = Y[k0:k1].copy()
        b = np.conj(Y[M - k0 : M - k1 : -1])  # Y_{M-k} (M - k1 >= M/2 - 1 >= 0)
        e = (a + b) * 0.5
        o = ((a - b) * 0.5) * _twiddles(k0, k1, N, 1.0, Y.dtype)
        Y[k0:k1] = e
        if k1 == h + 1:  # slot M/2 is its own partner: E' there, O' kept aside
            o_h, o = o[-1], o[:-1]
        Y[M - k0 : M - k0 - len(o) : -1] = o
    even = fft_plans.irfft_inplace(Y[: h + 1], M)
    Y[h:M] = Y[M:h:-1].copy()  # O'_0 .. O'_{M/2 - 1} in order
    Y[M] = o_h
    odd = fft_plans.irfft_inplace(Y[h:], M)
    out = _empty(N, Y.real.dtype)  # (after the transforms: not alive beside their scratch)
    out[0::2] = even
    out[1::2] = odd
    return out
