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

* Twiddles ``t_k = exp(-+ 2 pi i k / N)``, 0 <= k <= N/2, as products ``hi[k // B]
  lo[k % B]`` of two tables computed in long double with the angle reduced to [0, pi/2]
  (:class:`_Twiddles`): ``|t^ - t| <= tau`` with tau = 17.9 u_ld (long double) or 5.9 u
  (float64: tables rounded to complex128, product in complex128).  Complex products err by
  ``<= 2 sqrt(2) u`` relative (Higham 2002, Lemma 3.5), sums by ``<= u (|a| + |b|)`` (we
  take 1.5 u).
* Forward: ``X_k = E_k + t_k O_k`` with E, O the real FFTs of length M of the even and odd
  entries and ``t_k = exp(-2 pi i k / N)``; for ``M/2 < k <= M``, ``E_k = conj(E_{M-k})``
  (likewise O).  ``|X^_k - X_k| <= d_E + d_O + (tau + 4.4 u) ||x||_1``; with ``d_E + d_O
  <= C log2(M) u ||x||_1``, the whole is within ``C log2(N) u ||x||_1`` when ``1.1 (tau / u
  + 4.4) <= C``: 11.4 (float64) or 24.6 (long double) (:func:`split_constant`).  In
  general the split transform is within ``(C log2(M) + split_constant) u ||x||_1``, which
  :func:`forward_units` charges (docs/fft_roundoff.md, section 12: the callers' forward
  charge is ``C log2 N`` since session 12's proof, no longer ``4 C log2 N``).  The twiddle
  bounds hold under the proof's libm convention (cosl / sinl / atanl within 2 ulps: the
  angle within 4.6 u_ld relative, so a ``hi`` entry within ``(pi/2) 4.6 + 4 <= 12`` u_ld,
  a ``lo`` entry within ``2 + 0.1 <= 3``).
* Inverse (float64): ``x_{2m} = irfft_M(E')_m``, ``x_{2m+1} = irfft_M(O')_m`` with ``E'_k
  = (Y_k + conj(Y_{M-k})) / 2`` and ``O'_k = (Y_k - conj(Y_{M-k})) t'_k / 2``, ``t'_k =
  exp(2 pi i k / N)``, k = 0 .. M/2: an exact factorisation of the inverse DFT, so
  coefficient errors propagate as through the full inverse (the halving is exact barring
  underflow).  The step errs by ``<= (1.5 + 5.9 + 2.9) u = 10.3 u`` times ``(|Y_k| +
  |Y_{M-k}|) / 2`` per coefficient, which the inverse DFT of length M maps to ``<= (10.3 u
  / N) sum |Y|`` per entry and, by Parseval, ``<= 10.3 sqrt(2) u ||Y||_2 / sqrt(N)`` in l2
  over the N entries: with the half-length transforms' ``C log2(M)`` and a margin 1.1, the
  inverse's constant ``C log2(N)`` becomes ``C (log2(N) - 1) + 11.4`` per entry and
  ``C2 (log2(N) - 1) + 16.1`` in l2 (C2 the 2-norm rate; :func:`split_inverse_constant`),
  both within ``C log2(N)`` (``C2 log2 N``) once C >= 11.4 (C2 >= 16.1)
  (:func:`privamp.numerics.fft_power.inverse_error` charges the larger).
"""

from __future__ import annotations

import math

import numpy as np

from . import fft_plans

__all__ = ["SPLIT_MIN_LEN", "forward_units", "irfft_split_inplace", "rfft_split",
           "split_constant", "split_inverse_constant", "split_len", "splits"]

#: float64 transforms of at least this length are split (long double: half of it)
SPLIT_MIN_LEN = 1 << 21
#: coefficients per chunk of the radix-2 step
_CHUNK = 1 << 16


def split_constant(dtype) -> float:
    """The per-log2 constant C the forward split step needs (module docstring): ``1.1
    (tau / u + 4.4)``, tau the twiddle error in units of the arithmetic's roundoff u.

    Args:
        dtype: np.float64 or np.longdouble.

    Returns:
        11.4 for float64, 24.6 for long double.
    """
    return 11.4 if np.dtype(dtype) == np.float64 else 24.6


def split_inverse_constant(l2: bool = False) -> float:
    """The additive constant of a split float64 inverse (module docstring): its error is
    ``(C (log2 N - 1) + s) u sum|Y| / N`` per entry (s = 1.1 * 10.3 <= 11.4), or ``(C2
    (log2 N - 1) + s) u ||Y||_2 / sqrt(N)`` in l2 (s = 1.1 * 10.3 sqrt(2) <= 16.1), C and C2
    the per-coefficient and 2-norm rates of the half-length transforms.

    Args:
        l2: the 2-norm form.

    Returns:
        11.4, or 16.1 for the 2-norm form.
    """
    return 16.1 if l2 else 11.4


def forward_units(N: int, dtype, c: float) -> float:
    """The forward charge of a length-N real FFT in ``dtype``, in units of ``u ||x||_1`` (u the
    arithmetic's unit roundoff): ``c log2 N`` for pocketfft's transform (docs/fft_roundoff.md:
    ``c`` >= the proven per-log2 constant), and for lengths :func:`splits` splits at least
    ``c log2(N / 2) + split_constant(dtype)`` (the half-length transforms and the radix-2
    step; module docstring).

    Args:
        N: the transform length.
        dtype: np.float64 or np.longdouble.
        c: the per-log2(N) constant.

    Returns:
        ``max(c log2 N, c (log2 N - 1) + split_constant(dtype))`` if ``splits(N, dtype)``,
        else ``c max(log2 N, 1)``.
    """
    k = max(math.log2(N), 1.0)
    if splits(N, dtype):
        return max(c * k, c * (k - 1.0) + split_constant(dtype))
    return c * k


def splits(N: int, dtype=np.float64) -> bool:
    """Whether transforms of length N in ``dtype`` are split (long enough for the memory to
    matter: N >= 2^21 in float64, 2^20 in long double; N divisible by 4).

    Args:
        N: the transform length.
        dtype: np.float64 or np.longdouble.

    Returns:
        True to split.
    """
    low = SPLIT_MIN_LEN if np.dtype(dtype) == np.float64 else SPLIT_MIN_LEN // 2
    return N >= low and N % 4 == 0


def split_len(L: int, dtype=np.float64) -> int:
    """A fast transform length >= L: scipy's next_fast_len, or for lengths that
    :func:`splits` in ``dtype``, 4 times the next fast length >= L / 4 (so divisible by 4).

    Args:
        L: the least length.
        dtype: np.float64 or np.longdouble.

    Returns:
        The length.
    """
    N = fft_plans.next_fast_len(L, real=True)
    if N % 4 and splits(4 * (-(-L // 4)), dtype):
        N = 4 * fft_plans.next_fast_len(-(-L // 4), real=True)
    return N


def _direct(k: np.ndarray, N: int, sign: float) -> np.ndarray:
    """``exp(sign 2 pi i k / N)`` (0 <= k <= N/2, N even) in long double, the angle reduced
    to [0, pi/2]: each component within ``(4 (pi/2) k / N' + 2) u_ld`` (the angle within 4 u_ld
    relative; cosl / sinl within 2 u_ld), so ``|t^ - t| <= 12 u_ld`` in all, ``<= 3 u_ld``
    for angles below 0.01."""
    far = 4 * k > N
    kr = np.where(far, N // 2 - k, k)  # theta = pi - phi for k > N/4
    phi = kr.astype(np.longdouble) * (8.0 * np.arctan(np.longdouble(1.0)) / np.longdouble(N))
    c, s = np.cos(phi), np.sin(phi)
    c[far] = -c[far]
    return c + (1j * sign) * s


class _Twiddles:
    """``exp(sign 2 pi i k / N)`` for 0 <= k <= N/2 as ``hi[k // B] lo[k % B]`` (B = 2^11):
    both tables by :func:`_direct` (``lo``'s angles < 0.01), the product in the working
    type.  Long double: ``|t^ - t| <= (12 + 3 + 2.9) u_ld = 17.9 u_ld``.  complex128 (tables
    rounded to it first, ``sqrt(2) u`` each): ``<= (1.5 + 1.5 + 2.9) u = 5.9 u``."""

    B = 1 << 11

    def __init__(self, N: int, sign: float, cdtype) -> None:
        self.N, self.sign, self.cdtype = N, sign, np.dtype(cdtype)
        self.lo = _direct(np.arange(self.B), N, sign).astype(self.cdtype)

    def __call__(self, k0: int, k1: int) -> np.ndarray:
        a0 = k0 // self.B
        hi = _direct(np.arange(a0, (k1 - 1) // self.B + 1) * self.B, self.N, self.sign)
        k = np.arange(k0, k1)
        return hi.astype(self.cdtype)[k // self.B - a0] * self.lo[k % self.B]


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
    X = np.empty(M + 1, dtype=E.dtype)
    h = M // 2  # E_k, O_k stored for k <= h
    tw = _Twiddles(N, -1.0, E.dtype)
    for k0 in range(0, M + 1, _CHUNK):
        k1 = min(M + 1, k0 + _CHUNK)
        t = tw(k0, k1)
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
    tw = _Twiddles(N, 1.0, Y.dtype)
    for k0 in range(0, h + 1, _CHUNK):
        k1 = min(h + 1, k0 + _CHUNK)
        a = Y[k0:k1].copy()
        b = np.conj(Y[M - k0 : M - k1 : -1])  # Y_{M-k} (M - k1 >= M/2 - 1 >= 0)
        e = (a + b) * 0.5
        o = ((a - b) * 0.5) * tw(k0, k1)
        Y[k0:k1] = e
        if k1 == h + 1:  # slot M/2 is its own partner: E' there, O' kept aside
            o_h, o = o[-1], o[:-1]
        Y[M - k0 : M - k0 - len(o) : -1] = o
    even = fft_plans.irfft_inplace(Y[: h + 1], M)
    Y[h:M] = Y[M:h:-1].copy()  # O'_0 .. O'_{M/2 - 1} in order
    Y[M] = o_h
    odd = fft_plans.irfft_inplace(Y[h:], M)
    out = np.empty(N, dtype=Y.real.dtype)  # (after the transforms: not alive beside their scratch)
    out[0::2] = even
    out[1::2] = odd
    return out
