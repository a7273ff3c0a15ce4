"""The T-th power of a spectrum for :func:`privamp.numerics.fft.self_convolve_power`: the
per-coefficient power and its error terms (:func:`power_terms`), and the spectrum of an
array concentrated on a few atoms without a long-double transform (:func:`atom_power`).

Memory (issue 28).  At T = 1e7 and tiny sampling rates the optimistic PLD of one step is a
single atom of mass ~1 plus ~1e-16 spread over millions of grid points; its long-double real
FFT (input, output, pocketfft's working copy and plan: ~64 bytes a point) was the query's
peak.  :func:`atom_power` transforms the part off the atoms in float64 (its error is that
part's tiny l1 norm times the float64 bound) and adds the atoms' terms in long double, chunk
by chunk, writing the powered spectrum over the float64 one: a few float64 arrays of the
transform's length in all.
"""

from __future__ import annotations

import math

import numpy as np

from . import fft_plans as sfft
from .chernoff import UNIT_ROUNDOFF
from .fft_split import (
    forward_units,
    irfft_split_inplace,
    rfft_split,
    split_inverse_constant,
    splits,
)

__all__ = ["ATOM_MAX", "ATOM_MIN_LEN", "ATOM_REST", "L2_RATE", "RELEASE_LEN", "atom_power",
           "circular_window", "hermitian_weights", "inverse_error", "inverse_then_release",
           "power_terms", "splits_inverse"]

_U = UNIT_ROUNDOFF
_U_LD = float(np.finfo(np.longdouble).eps) / 2.0

#: :func:`atom_power` is tried for transforms of at least this length ...
ATOM_MIN_LEN = 1 << 18
#: ... on arrays with at most ATOM_MAX entries of at least 2^-24 of the total, the rest
#: holding at most ATOM_REST of it
ATOM_MAX = 8
ATOM_REST = 2.0**-16
#: coefficients per chunk of :func:`atom_power`
_CHUNK = 1 << 16
#: :func:`inverse_then_release` empties scipy's plan caches after transforms this long
RELEASE_LEN = 1 << 19
#: per-log2(N) rate of the 2-norm roundoff bound of pocketfft's float64 inverse (the l2 route
#: of :func:`inverse_error`): proven <= 23.41 for every 5-smooth N, the 1/N scaling included
#: (docs/fft_roundoff.md, sections 6, 10 and 12); checked by test_fft_power_charge.py
L2_RATE = 24.0


def power_terms(Xk: np.ndarray, b: np.ndarray, lb: np.ndarray, pw: np.ndarray, T: int,
                d: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Y, |Y| rounded up, the error bound of Y) for kept coefficients ``Xk`` (long double,
    each within ``d`` of the exact one; ``b >= |X| + d`` with ``lb = log b``, ``pw =
    b^(T-1)``): ``Y = exp(T log Xk)`` in long double (relative error <= 4 u_ld (1 + T
    (3 |log|Xk|| + 2 pi)): clogl/cexpl at glibc's documented ulps plus one, docs/fft_roundoff.md
    section 11), ``|log|Xk|| <= |log b| + d / (b - d)``), cast to complex128
    (relative u), and the propagated input error ``T b^(T-1) d``; the model of
    :func:`privamp.numerics.fft.self_convolve_power`.

    Args:
        Xk, b, lb, pw: per kept coefficient, as above.
        T: the power.
        d: the per-coefficient error of ``Xk``.

    Returns:
        ``(Yk, absYk, coefk)``.
    """
    with np.errstate(divide="ignore", invalid="ignore"):  # X_k = 0: cexpl(-inf + i nan) = 0,
        Yk = np.exp(T * np.log(Xk)).astype(complex)  # exact (review, session 12)
    absYk = np.abs(Yk) * (1.0 + 4.0 * _U)
    lx = np.abs(lb) + d / np.maximum(b - d, 1e-300)
    rel = 4.0 * _U_LD * (1.0 + T * (3.0 * lx + 2.0 * math.pi)) + 2.0 * _U
    return Yk, absYk, pw * (T * d) + rel * absYk * (1.0 + 1e-6)


def atom_power(p: np.ndarray, T: int, l1: float, N: int, c_fft: float, d_max: float,
               max_kept: float) -> tuple[np.ndarray, tuple[float, float, float, float]] | None:
    """The powered half spectrum of nonnegative ``p`` (``||p||_1 <= l1``) zero-padded to
    length N, for a p concentrated on a few atoms, and its error sums.

    p splits into its atoms A (the at most ``ATOM_MAX`` entries >= 2^-24 l1) and the rest r
    (``||r||_1 <= ATOM_REST l1``, summed rounded up).  ``X_k = R_k + sum_{j in A} p_j
    e^{-2 pi i k j / N}``: R by a float64 real FFT, within ``4 C log2(N) u ||r||_1`` (the
    model of :func:`privamp.numerics.fft.self_convolve_power`, C = ``c_fft``); the atoms'
    terms in long double with the phase reduced exactly (``k j mod N`` in integers), the
    angle within 5 u_ld relative (2 pi from 8 atan(1) to 2 u_ld, a quotient, a product),
    so within 10 pi u_ld absolute, cos and sin within 4 u_ld (glibc's ldbl-96 cosl/sinl
    are within 1-2 ulp), a product with p_j: each component within 37 u_ld p_j, the term
    within 53 u_ld p_j; adding the |A| + 1 terms in long double: <= 2 (|A| + 1) u_ld l1.
    So ``d = 1.1 ((53 + 2 (|A| + 1)) u_ld l1 + F u ||r||_1)``, rounded up to ``64 + ...``,
    with ``F = fft_split.forward_units(N, float64, C)`` (``C log2 N``: the proven bound,
    no safety factor; docs/fft_roundoff.md, section 12; was ``4 C log2 N``).  Then, per
    chunk: ``b = |X| (1 + 4u) + d`` (|X| from its complex128
    rounding), the kept coefficients (``T log(b / l1) > -80``) powered by
    :func:`power_terms`, the others set to 0 with error ``b^T + T b^(T-1) d``.

    Args:
        p: the array (float64, nonnegative).
        T: the power.
        l1: an upper bound on ``sum(p)``.
        N: the transform length (>= len(p)).
        c_fft: the per-log2(N) FFT roundoff constant C.
        d_max: the largest acceptable d (the caller's choice of path; self_convolve_power
            passes 4 C log2(N) u_ld l1, the full long-double transform's former charge).
        max_kept: the most coefficients to power.

    Returns:
        ``(Y, (sum w coef, sum w coef^2, sum w |Y|, sum w |Y|^2))`` with Y the powered half
        spectrum (complex128, length N // 2 + 1) and w the Hermitian weights (1 at the zero
        and Nyquist frequencies, else 2), or None (p is not concentrated on a few atoms, d
        would exceed ``d_max``, too many coefficients kept, or a non-finite value).
    """
    n = len(p)
    atoms = np.flatnonzero(p >= 2.0**-24 * l1)
    if not 0 < len(atoms) <= ATOM_MAX or N < n:
        return None
    split = splits(N)  # (its radix-2 step is in forward_units' charge)
    if split:  # (fft_split: half the transform's working memory, within the same model)
        rest = 0.0  # chunk sums, then their sum: still n terms, <= (n - 1) u relative
        for i in range(0, n, 1 << 20):
            c = p[i : i + (1 << 20)].copy()
            c[atoms[(atoms >= i) & (atoms < i + len(c))] - i] = 0.0
            rest += float(np.sum(c))
        rest *= 1.0 + (N + 2) * _U
    else:
        Y = sfft.spectrum_buffer(p, N)  # (the rest's transform is written over it)
        buf = Y.view(float)[:N]
        buf[atoms] = 0.0
        # sum of N nonnegative terms: relative error <= (N - 1) u (Higham 2002, eq. (4.4))
        rest = float(np.sum(buf)) * (1.0 + (N + 2) * _U)
        del buf
    if rest > ATOM_REST * l1:
        return None
    d = 1.1 * ((64.0 + 2.0 * (len(atoms) + 1)) * _U_LD * l1
               + forward_units(N, np.float64, c_fft) * _U * rest)
    if d > d_max:
        return None
    if N >= RELEASE_LEN:  # (plans of other lengths, e.g. the low-frequency attempt's)
        sfft.release_fft_plans()
    Y = rfft_split(p, N, np.float64, atoms) if split else sfft.rfft_inplace(Y, N)
    M = len(Y)
    two_pi = 8.0 * np.arctan(np.longdouble(1.0))
    step = two_pi / np.longdouble(N)
    pa = [(int(j), np.longdouble(p[j])) for j in atoms]
    log_l1 = math.log(l1)
    sums = [0.0, 0.0, 0.0, 0.0]
    kept = 0
    for k0 in range(0, M, _CHUNK):
        k1 = min(M, k0 + _CHUNK)
        k = np.arange(k0, k1, dtype=np.int64)
        X = Y[k0:k1].astype(np.clongdouble)
        for j, pj in pa:
            phi = ((k * j) % N).astype(np.longdouble) * step
            X += pj * (np.cos(phi) - 1j * np.sin(phi))
        b = np.abs(X.astype(complex)) * (1.0 + 4.0 * _U) + (d + 1e-300)
        lb = np.log(b)
        with np.errstate(over="ignore", under="ignore"):
            pw = np.exp(np.multiply(lb, T - 1))  # b^(T-1)
        coef = b + T * d
        coef *= pw
        keep = np.nonzero(T * (lb - log_l1) > -80.0)[0]
        kept += len(keep)
        if kept > max_kept:
            return None
        absy = np.zeros(k1 - k0)
        Yc = np.zeros(k1 - k0, dtype=complex)
        if len(keep):
            Yc[keep], absy[keep], coef[keep] = power_terms(X[keep], b[keep], lb[keep],
                                                           pw[keep], T, d)
        if not np.all(np.isfinite(Yc)):
            return None
        Y[k0:k1] = Yc
        w = np.full(k1 - k0, 2.0)
        w[0] = 1.0 if k0 == 0 else 2.0
        w[-1] = 1.0 if k1 == M and N % 2 == 0 else w[-1]
        wc, wy = w * coef, w * absy  # (sums of nonnegative terms: relative error <= n u)
        sums[0] += float(np.sum(wc))
        sums[1] += float(np.dot(wc, coef))
        sums[2] += float(np.sum(wy))
        sums[3] += float(np.dot(wy, absy))
    return Y, (sums[0], sums[1], sums[2], sums[3])


def hermitian_weights(N: int) -> np.ndarray:
    """How often each coefficient of a length-N real FFT's half spectrum occurs in the full
    spectrum (1 for the zero and Nyquist frequencies, else 2).

    Args:
        N: the transform length.

    Returns:
        The N // 2 + 1 weights.
    """
    wts = np.full(N // 2 + 1, 2.0)
    wts[0] = 1.0
    wts[-1] = 1.0 if N % 2 == 0 else wts[-1]
    return wts


def circular_window(out: np.ndarray, x_lo: int, W: int) -> np.ndarray:
    """Entries x_lo .. x_lo + W - 1 of a circular array of length N >= W (indices mod N).

    Args:
        out: the circular array.
        x_lo: the window's first index (any integer; taken mod N).
        W: the window's length.

    Returns:
        The window (a view when it does not wrap).
    """
    N = len(out)
    s0 = x_lo % N
    return out[s0 : s0 + W] if s0 + W <= N else np.concatenate((out[s0:], out[: s0 + W - N]))


def inverse_then_release(Y: np.ndarray, N: int) -> np.ndarray:
    """The float64 inverse real FFT of length N of the half spectrum ``Y`` (C-contiguous,
    overwritten: the values are written over its memory, :func:`fft_plans.irfft_inplace`,
    or for :func:`splits_inverse` lengths by :func:`fft_split.irfft_split_inplace`: the
    bound of :func:`inverse_error` covers both);
    for N >= :data:`RELEASE_LEN`, scipy's FFT plan caches are then emptied
    (:func:`privamp.numerics.fft_plans.release_fft_plans`): the plans of one power of that
    length (float64, and long double if used) hold 16-32 bytes a point for the rest of the
    query otherwise (T 1e7: sigma 0.3 q 1e-7 ~30 MiB of the peak, sigma 0.5 q 1e-7 ~30
    MiB), and rebuilding one costs ~15 ms at N = 3.5e6, against ~100 ms for the transform
    (no CPU change measured on five queries, T 1e3..1e7).

    Args:
        Y: the half spectrum (complex128, length N // 2 + 1).
        N: the transform length.

    Returns:
        The N real values.
    """
    out = irfft_split_inplace(Y, N) if splits_inverse(N) else sfft.irfft_inplace(Y, N)
    if N >= RELEASE_LEN:
        sfft.release_fft_plans()
    return out


def splits_inverse(N: int) -> bool:
    """Whether :func:`inverse_then_release` computes a length-N inverse by
    :func:`privamp.numerics.fft_split.irfft_split_inplace` (half the working memory).

    Args:
        N: the transform length.

    Returns:
        :func:`privamp.numerics.fft_split.splits` in float64.
    """
    return splits(N)


def inverse_error(wts: np.ndarray, coef: np.ndarray, absy: np.ndarray, N: int, W: int,
                  c_fft: float, extra: tuple[float, float] = (0.0, 0.0),
                  extra_y: tuple[float, float] = (0.0, 0.0)) -> float:
    """l1 bound over a window of W entries of the error of a float64 inverse real FFT of
    length N whose half spectrum Y (moduli <= ``absy``) errs by at most ``coef`` per
    coefficient: per entry ``(1/N) [sum of the full spectrum's errors + C log2(N) u
    sum |Y|]`` (the exact inverse maps the errors with weights 1/N; its own roundoff, the 1/N
    scaling included, is the proven per-coefficient bound: docs/fft_roundoff.md, sections 4,
    5 and 12; up to session 12 times a safety factor 2 that the proof makes unnecessary),
    times W; or (if smaller) the l2 route: the inverse DFT maps coefficient errors E to entry
    errors of l2 norm ||E||_2 / sqrt(N) (Parseval), its own roundoff is <= C2 log2(N) u
    ||Y||_2 / sqrt(N) (C2 = :data:`L2_RATE`; sections 6 and 10), and over W entries the l1
    norm is <= sqrt(W) times the l2 norm (much smaller when the window is long against the
    spread).  ``extra``: (sum, sum of squares) of the weighted errors of coefficients not in
    ``coef`` (whose values are 0); ``extra_y``: the same of |Y|.  C = ``c_fft``; for lengths
    :func:`inverse_then_release` splits (:func:`splits_inverse`), the larger of that and
    ``C (log2(N) - 1) + 11.4`` (``C2 (log2(N) - 1) + 16.1``): the half-length transforms
    and the radix-2 step (:func:`privamp.numerics.fft_split.split_inverse_constant`).

    Args:
        wts: the Hermitian weights (:func:`hermitian_weights`) of the coefficients given.
        coef, absy: per coefficient, its error bound and its modulus bound.
        N, W: the transform length and the window's length.
        c_fft: the per-log2(N) FFT roundoff constant C.
        extra, extra_y: as above.

    Returns:
        The l1 bound (rounded up by 1e-6 relative).
    """
    k = max(math.log2(N), 1.0)
    cu, cu2 = c_fft * k, L2_RATE * k
    if splits_inverse(N):  # (the larger: also sound for unsplit transforms of that length)
        cu = max(cu, c_fft * (k - 1.0) + split_inverse_constant())
        cu2 = max(cu2, L2_RATE * (k - 1.0) + split_inverse_constant(l2=True))
    cu, cu2 = cu * UNIT_ROUNDOFF, cu2 * UNIT_ROUNDOFF
    # (sums of nonnegative terms: relative error <= n u; the roundings of this evaluation,
    # and of the terms' own (coef: b^(T-1) as exp((T-1) log b)), are within the final 1e-6)
    wc, wy = wts * coef, wts * absy
    coef_sum = float(np.sum(wc)) + extra[0]
    entry = (coef_sum + cu * (float(np.sum(wy)) + extra_y[0])) / N
    coef_l2 = math.sqrt(float(np.dot(wc, coef)) + extra[1])
    y_l2 = math.sqrt(float(np.dot(wy, absy)) + extra_y[1])
    l2_route = math.sqrt(W / N) * (coef_l2 + cu2 * y_l2)
    return min(W * entry, l2_route) * (1.0 + 1e-6)
