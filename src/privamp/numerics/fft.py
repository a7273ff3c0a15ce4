"""Linear convolution of nonnegative arrays with certified roundoff control.

Two error models are combined.

* Direct sums (``np.convolve``): every output entry is a sum of at most m = min(len) products
  of nonnegative numbers, so its computed value has relative error at most
  ``gamma_{m+1} = (m+1) u / (1 - (m+1) u)`` (Higham, *Accuracy and Stability of Numerical
  Algorithms*, 2nd ed. 2002, Sec. 3.1, eq. (3.5) and Lemma 3.1).  A relative error is removed
  exactly by scaling the result by ``1 + 2 gamma`` (``round="up"``) or ``1 - 2 gamma``
  (``round="down"``), so no additive allowance is needed.
* FFT (``scipy.fft``, pocketfft, float64): ``||fl(F x) - F x||_2 <= E2 ||F x||_2`` with
  ``E2 <= 23.41 u log2 N`` for every 5-smooth N (proven: docs/fft_roundoff.md, sections 6 and
  10; Higham 2002, Thm 24.2's ``k eta`` form, ``k = log2 N``, ``2 eta = 24 u`` covering it).
  For z = x * y computed as ``irfft(rfft(x) rfft(y))``, using ``||F x||_2 = sqrt(N) ||x||_2``
  and ``||F x||_inf <= ||x||_1``, the two forward transforms, the pointwise product (sqrt(2)
  gamma_2) and the inverse (with its 1/N scaling) give ``||z_hat - z||_2 <= E2 (||x||_2 ||y||_1
  + 2 ||x||_1 ||y||_2) + 5 u ||x||_1 ||y||_2`` (+ O(u^2)).  The l1 error over the n output
  entries is at most ``sqrt(n)`` times that; with each bracket <= 3 max(..), the charge
  ``2 sqrt(n) (3 k eta + 3 u) max(..)``, ``eta = 12 u``, covers it with margin.

Since the FFT bound scales with ||x||_2 ||y||_1 + ||x||_1 ||y||_2, a concentrated array (a
PLD early in a composition) is split into its *bulk* b (the contiguous window of entries
above ``r max``, for the smallest r in 1e-10..1e-2 whose direct cost fits a budget) and the
rest t: ``x * y = b_x * b_y + t_x * y + b_x * t_y``, the first by direct sums (relative
error only) and the others by FFT, whose bounds carry the small norms of t.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from functools import partial
from typing import Any

import numpy as np

from . import fft_plans as sfft
from .chernoff import (
    PRODUCT_CHERNOFF_POINTS,
    UNIT_ROUNDOFF,
    blocked_log_masses_both,
    chernoff_k,
    chernoff_tops,
    chernoff_x,
    log_mgf_bounds,
)
from .fft_power import (
    ATOM_MIN_LEN,
    atom_power,
    circular_window,
    hermitian_weights,
    inverse_error,
    inverse_then_release,
    power_terms,
)
from .fft_split import forward_units, rfft_split, split_len, splits

__all__ = ["convolve_nonneg", "product_windows", "self_convolve_power", "shared_spectra",
           "UNIT_ROUNDOFF"]

_DIRECT_BUDGET = 3e7  # multiply-adds of one convolution's direct part (at most; see below)
_BULK_RATIOS = (1e-10, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2)


def _gamma(m: int) -> float:
    c = (m + 1) * UNIT_ROUNDOFF
    return c / (1.0 - c)


def _fft_conv(x: np.ndarray, y: np.ndarray, same: bool) -> tuple[np.ndarray, float]:
    """FFT convolution and its l1 roundoff bound (module docstring)."""
    n = len(x) + len(y) - 1
    u = UNIT_ROUNDOFF
    size = sfft.next_fast_len(n, real=True)
    # in place (fft_plans.rfft_inplace: scipy's values, one array of the size fewer each);
    # the product as ``fx * rfft(y)`` ran: numpy's temporary elision (arrays >= 256 KiB) made
    # it (fy, fx) into fy; complex products are not symmetric to the bit
    fx = sfft.rfft_inplace(sfft.spectrum_buffer(x, size), size)
    fz = fx if same else sfft.rfft_inplace(sfft.spectrum_buffer(y, size), size)
    np.multiply(*((fz, fx) if fz.nbytes >= 1 << 18 else (fx, fz)), out=fz)
    z = sfft.irfft_inplace(fz, size)[:n]
    k = max(math.log2(size), 1.0)
    eta = 12.0 * u  # 2 eta >= 23.41 u, pocketfft's proven 2-norm rate (docs/fft_roundoff.md)
    l1x, l1y = float(np.sum(np.abs(x))), float(np.sum(np.abs(y)))
    # (not np.linalg.norm: BLAS threads contend on a busy machine)
    l2x, l2y = math.sqrt(float(np.sum(x * x))), math.sqrt(float(np.sum(y * y)))
    cross = max(l2x * l1y, l1x * l2y)
    l2err = 3.0 * k * eta * cross + 3.0 * u * cross
    return z, 2.0 * math.sqrt(n) * l2err


def _bulk(x: np.ndarray, ratio: float) -> tuple[int, int]:
    top = x.max()
    if not math.isfinite(top):  # (an empty window would raise IndexError below)
        raise ValueError(f"the masses to convolve must be finite, got a maximum of {top}")
    idx = np.nonzero(x > ratio * top)[0]
    return int(idx[0]), int(idx[-1]) + 1


def convolve_nonneg(
    x: np.ndarray, y: np.ndarray | None = None, round: str = "up",
    direct_budget: float | None = None,
) -> tuple[np.ndarray, float]:
    """Full linear convolution of nonnegative ``x`` and ``y`` (``y=None``: x with itself).

    Returns ``(z, err)``: with ``round="up"``, ``z >= z_exact - e`` entrywise for some ``e``
    with ``sum |e| <= err``; with ``round="down"``, ``z <= z_exact + e``.  Negative roundoff
    values are clipped to 0 (moving entries towards the exact nonnegative values).
    ``direct_budget``: multiply-adds allowed for the exact direct part (smaller: faster,
    with a larger certified FFT allowance); None: ``_DIRECT_BUDGET``, or for short arrays
    ``max(3e6, 4 n log2 n)`` (n = len(x) + len(y)), about the cost of the transforms
    (issue 28: q 1e-5, sigma 1, T 10 twice as fast, its slack 3e-19 -> 4e-16).
    """
    if round not in ("up", "down"):
        raise ValueError(f"round must be 'up' or 'down', got {round!r}")
    same = y is None
    if same:
        y = x
    assert y is not None  # (y = x above)
    n = len(x) + len(y) - 1
    if direct_budget is None:
        direct_budget = min(_DIRECT_BUDGET, max(3e6, 4.0 * (n + 1) * math.log2(n + 1)))
    sign = 1.0 if round == "up" else -1.0
    if len(x) * len(y) <= direct_budget or x.max() <= 0 or y.max() <= 0:
        z = np.convolve(x, y)
        z *= 1.0 + sign * 2.0 * _gamma(min(len(x), len(y)) + 1)
        return z, 0.0
    # the coarsest ratio gives the shortest windows: if even those exceed the budget, no
    # ratio fits (skips the search, which costs two passes per ratio)
    cx = _bulk(x, _BULK_RATIOS[-1])
    cy = cx if same else _bulk(y, _BULK_RATIOS[-1])
    if (cx[1] - cx[0]) * (cy[1] - cy[0]) > direct_budget:
        z, err = _fft_conv(x, y, same)
        np.maximum(z, 0.0, out=z)
        return z, err
    for ratio in _BULK_RATIOS:
        bx0, bx1 = _bulk(x, ratio)
        by0, by1 = (bx0, bx1) if same else _bulk(y, ratio)
        mx, my = bx1 - bx0, by1 - by0
        if mx * my <= direct_budget:
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


# ------------------------------------------------------------------------------------------
# T-fold self-convolution by exponentiation in the Fourier domain
# ------------------------------------------------------------------------------------------
_U_LD = float(np.finfo(np.longdouble).eps) / 2.0
#: per-log2(N) constant of the per-coefficient FFT roundoff bound C log2(N) u ||x||_1 (inverse:
#: C log2(N) u ||Y||_1 / N), proven in docs/fft_roundoff.md for scipy's pocketfft rfftp (radix
#: 2-5 real passes; twiddles from libm cos/sin within 2 ulps), float64 and long double, every
#: 5-smooth N: path-wise over the passes, per-pass constants from each butterfly's roundings
#: and twiddle errors; max 13.99 for N <= 2^25, sup 14.51 (the inverse's 1/N scaling in).
#: Was 8, unproven (issue 28), charged times 4 (forward) and 2 (inverse); now charged as is
#: (fft_split.forward_units, fft_power.inverse_error; docs/fft_roundoff.md, section 12)
_FFT_C = 15.0
_MAX_POWER_LEN = 2**23  # ~96 B/point (long doubles, moduli, output): <= ~800 MB (2^25: 3 GB)

#: inside :func:`shared_spectra`: the long-double spectra of :func:`self_convolve_power`, their
#: moduli, and its certified log-MGF bounds (at the lambdas picked for the first T asked)
_SPECTRA: dict[tuple, object] | None = None


@contextmanager
def shared_spectra():
    """Within this block :func:`self_convolve_power` memoises its long-double transforms by
    (length, input bytes): an epsilon curve powers each step's PLD to two nearby lengths, often
    with the same FFT length (the same transform, so the same results); likewise its Chernoff
    windows' log-MGF bounds (valid for every T; the lambdas are those picked for the first T,
    any lambda giving a valid window).  Released on exit: separate queries never share work."""
    global _SPECTRA
    outer = _SPECTRA
    _SPECTRA = {} if outer is None else outer
    try:
        yield
    finally:
        _SPECTRA = outer


def _memo(key: tuple, make):
    """``make()``, memoised under ``key`` inside :func:`shared_spectra` (a key holding None
    -- no block open -- is never stored)."""
    cache = _SPECTRA
    if cache is None or None in key:
        return make()
    return cache[key] if key in cache else cache.setdefault(key, make())


def _moduli(X: np.ndarray, d: float) -> tuple[np.ndarray, np.ndarray]:
    """b = |X| (from its complex128 rounding, rounded up) + d, and log b."""
    b = np.abs(X.astype(complex)) * (1.0 + 4.0 * UNIT_ROUNDOFF) + (d + 1e-300)
    return b, np.log(b)


def _long_double_spectrum(p: np.ndarray, N: int, key: bytes | None = None) -> np.ndarray:
    """Real FFT of p zero-padded to length N, in long double (memoised inside
    :func:`shared_spectra` under ``key``, p's bytes; read-only to callers)."""
    def make() -> np.ndarray:  # (in place, or split: fft_split)
        if splits(N, np.longdouble):  # (its charge: forward_units(N, np.longdouble, C))
            return rfft_split(p, N, np.longdouble)
        return sfft.rfft_inplace(sfft.spectrum_buffer(p, N, np.longdouble), N)

    return _memo(("X", N, key), make)


def self_convolve_power(p: np.ndarray, T: int, tau: float,
                        max_len: int = _MAX_POWER_LEN, max_kept_fraction: float = 1.0
                        ) -> tuple[int, np.ndarray, float, float, float] | None:
    """Window of the T-fold self-convolution of nonnegative ``p`` by one FFT pair.

    Returns ``(start, z, err, tau_lo, tau_hi)`` or ``None`` (window longer than
    ``max_len``, more than ``max_kept_fraction`` of the coefficients to power -- slow, as
    for sparse p --, or a check failed).  With ``x = p^{*T}`` (positions 0..T(n-1)),
    ``z`` approximates ``x[start : start + len(z)]`` plus aliased mass from outside the window:
    ``z = x_window + a + e`` with ``a >= 0``, ``sum a <= tau_lo + tau_hi`` and
    ``sum |e| <= err``; the mass of x below the window is ``<= tau_lo`` and above it
    ``<= tau_hi``.

    Method.  The window [x_lo, x_hi] comes from Chernoff bounds (:func:`chernoff_k`,
    both sides).  p is transformed by a real FFT of length N >= max(window, n) in long
    double (unit roundoff u_ld = 2^-64): every stage combines disjoint input subsets with
    unit-modulus twiddles, so each computed coefficient is within
    ``d = C log2(N) u_ld ||p||_1`` of the exact one (C = ``_FFT_C``, proven for pocketfft:
    docs/fft_roundoff.md; split lengths: :func:`fft_split.forward_units`; up to session 12
    ``4 C``, C = 8 unproven with a safety 4; section 12).  The coefficients are raised to
    the T-th power as exp(T log X) in long double (relative error <= 4 u_ld (1 + T (3
    |log|X|| + 2 pi)), :func:`fft_power.power_terms`), where ``T log(|X| / ||p||_1)
    > -80``, else set to 0.  Per coefficient, ``|Xhat^T - X^T| <= T (|Xhat| + d)^(T-1) d``
    plus the power error (or ``(|Xhat| + d)^T`` for zeroed ones), plus the cast to
    complex128 (relative u).  The inverse real FFT in float64 (exact for the circular
    convolution = aliased x) then errs per entry by at most
    ``(1/N) [sum over the full Hermitian spectrum of those errors + C log2(N) u sum |Y|]``
    (no safety factor since section 12 of docs/fft_roundoff.md; it was 2); the l1 bound is
    the window length times that, or (if smaller) ``sqrt(W / N)`` times the l2 norms of the
    same error terms (Parseval, the 2-norm rate ``fft_power.L2_RATE`` in place of C).
    Transforms of length >= ``_LOW_MIN_LEN`` whose kept frequencies are few and low (tiny
    sampling rates) take X from :func:`_low_spectrum` instead: a float64 transform bounds
    every |X|, and only the kept coefficients are computed in long double (error d of about
    the same size, from a few short transforms).
    """
    p = np.asarray(p, dtype=float)
    n = len(p)
    T = int(T)
    if T < 2 or n == 0 or not np.all(np.isfinite(p)) or p.min() < 0 or p.max() <= 0:
        return None
    if not 0.0 < tau < 1.0:
        return None
    span = T * (n - 1)
    log_tau = math.log(tau)
    key = None if _SPECTRA is None else p.tobytes()
    blocked: list = []  # both ends' blocked masses, from one blocking, on first need
    def bounds(i: int) -> tuple[np.ndarray, np.ndarray]:
        blocked[:] = blocked or blocked_log_masses_both(p)
        logp, idx = blocked[i]
        return chernoff_k(logp, idx, T, -log_tau)
    # (mypy counts a starred Any as filling every parameter: chernoff_k gives (lams, kb))
    x_hi, x_rev = (chernoff_x(*_memo(("K", end, key), lambda i=i: bounds(i)),  # type: ignore[call-arg]
                              T, -log_tau) for i, end in enumerate(("max", "min")))
    if x_hi is None or x_rev is None:
        return None
    x_lo = span - x_rev
    tau_hi = tau if x_hi < span else 0.0
    tau_lo = tau if x_lo > 0 else 0.0
    x_hi = min(x_hi, span)
    x_lo = max(x_lo, 0)
    if x_hi < x_lo:
        return None
    W = x_hi - x_lo + 1
    if max(W, n) > max_len:
        return None
    # sum of n nonnegative terms: relative error <= (n - 1) u (Higham 2002, eq. (4.4))
    l1 = float(np.sum(p)) * (1.0 + (n + 2) * UNIT_ROUNDOFF)
    low = _low_spectrum(p, T, l1, max(W, n)) if max(W, n) >= _LOW_MIN_LEN else None
    if low is None and max(W, n) >= ATOM_MIN_LEN:  # a few atoms: no long-double transform
        N = split_len(max(W, n))
        # (a path choice, as in _low_spectrum: the former charge 4 C log2 N u_ld l1)
        d_full = 4.0 * _FFT_C * max(math.log2(N), 1.0) * _U_LD * l1
        atom = atom_power(p, T, l1, N, _FFT_C, d_full,
                          max(1024.0, max_kept_fraction * (N // 2 + 1)))
        if atom is not None:
            z0 = np.zeros(0)
            err = _inverse_error(z0, z0, z0, N, W, extra=atom[1][:2], extra_y=atom[1][2:])
            out = inverse_then_release(atom[0], N) if math.isfinite(err) else None
            del atom  # (the spectrum, before the window's copy)
            return None if out is None else (int(x_lo), circular_window(out, x_lo, W),
                                             float(err), float(tau_lo), float(tau_hi))
    if via_low := low is not None:  # long double only where the power is kept
        N, Xk, b, d_all, d = low
        del low  # (its b would outlive the name)
        lb = np.log(b)
    else:
        N = split_len(max(W, n), np.longdouble)
        Xk = _long_double_spectrum(p, N, key)
        d = d_all = forward_units(N, np.longdouble, _FFT_C) * _U_LD * l1
        # b >= |Xhat| + d >= |X_exact| (|Xhat| from its complex128 rounding, rounded up)
        b, lb = _memo(("b", N, key), partial(_moduli, Xk, d))
    keep = np.nonzero(T * (lb - math.log(l1)) > -80.0)[0]
    if len(keep) > max(1024.0, max_kept_fraction * len(b)) or (
            via_low and len(keep) and keep[-1] >= len(Xk)):
        return None
    # Memory (issue 28): elementwise steps in chunks or in place, b^(T-1) in coef's array (same
    # operations, same values); coef: forward error T b^(T-1) d, or b^T where set to 0
    with np.errstate(over="ignore", under="ignore"):
        coef = np.multiply(lb, T - 1)
        np.exp(coef, out=coef)  # b^(T-1)
        for i in range(0, len(coef), 1 << 16):
            coef[i : i + (1 << 16)] *= b[i : i + (1 << 16)] + T * d_all
        absy, Yd = np.zeros(len(b)), np.zeros(len(b), dtype=complex)
        for i in range(0, len(keep), 1 << 16):
            ks = keep[i : i + (1 << 16)]
            pw = np.exp(np.multiply(lb[ks], T - 1))  # (the same values as in coef above)
            Yd[ks], absy[ks], coef[ks] = power_terms(Xk[ks], b[ks], lb[ks], pw, T, d)
    del Xk, b, lb  # (the memoised ones stay in the cache)
    err = _inverse_error(hermitian_weights(N), coef, absy, N, W)
    del coef, absy
    if not (math.isfinite(err) and np.all(np.isfinite(Yd))):
        return None
    out = inverse_then_release(Yd, N)
    del Yd  # (before the window's copy, if it wraps)
    return int(x_lo), circular_window(out, x_lo, W), float(err), float(tau_lo), float(tau_hi)


#: :func:`self_convolve_power` tries the low-frequency spectrum (:func:`_low_spectrum`) for
#: transforms of at least this length
_LOW_MIN_LEN = 1 << 19

#: ... with blocks of B <= _LOW_BLOCK entries (aligned at p's largest entry) whose phases
#: vary by <= _LOW_THETA radians at the kept frequencies, and the phase's Taylor series to
#: its smallest term below _LOW_TAIL (relative)
_LOW_BLOCK = 64
_LOW_THETA = 2.0
_LOW_TAIL = 1e-24


def _low_spectrum(p: np.ndarray, T: int, l1: float, m: int
                  ) -> tuple[int, np.ndarray, np.ndarray, float, float] | None:
    """For :func:`self_convolve_power`: the spectrum of nonnegative ``p`` (``||p||_1 <= l1``)
    on a length N >= m (a multiple of ``_LOW_BLOCK``) where its T-th power is kept, in long
    double, without a long-double transform of length N.  Returns ``(N, Xk, b, d64, d)``
    or None (the kept frequencies are not few and low, or d would exceed the full
    long-double transform's bound).

    * ``b >= |X_k|`` for every k: from a float64 real FFT, ``|Xt_k| (1 + 4u) + d64`` with
      ``d64 = C log2(N) u l1`` (the error model of :func:`self_convolve_power`; split
      lengths: :func:`fft_split.forward_units`);
      K = 1 + the last k whose power that bound keeps.
    * ``Xk`` (k < K) within ``d`` of X_k, and ``b[:K] = |Xk| (1 + 4u) + d``.  p is
      shifted by r in [0, B) so that a block of B entries starts where the mass around its
      largest entry does (B a power of 2, ``theta = 2 pi K B / N <= _LOW_THETA``):
      ``X_k = e^{i phi_k} X'_k`` with ``phi_k = 2 pi r k / N``, and by the Taylor series
      of the phase inside a block ``X'_k = sum_s (-i theta_k)^s / s! F_s(k)``
      (``theta_k = 2 pi k B / N``), F_s the length-N/B DFT of the block moments
      ``mu_s[J] = sum_t p'_{JB+t} (t / B)^s``.  The concentrated mass sits at t = 0, so
      ``||mu_s||_1`` falls fast with s.  Errors, in units of u_ld: per term s, weight
      ``c_s = theta^s / s!`` times ``M_s = ||mu_s||_1`` (computed, rounded up) times
      ``C log2(N / B)`` (its long-double transform) + ``s + B`` (s products, sums of <= B
      nonnegative terms) + ``6 s`` (c_s: theta_k to 4 u_ld, s products and quotients);
      combining the S terms ``(S + 3) sum c_s M_s``; the phase factor
      ``(4 theta + 5) l1``; and the series' tail ``theta^S / S! / (1 - theta / (S + 1))
      l1`` (absolute); all first order, times 1.1.  None also when d > 4 C log2(N) u_ld l1
      (a choice of path, the former charge: not a soundness condition).
    """
    u = UNIT_ROUNDOFF
    B = _LOW_BLOCK
    n = len(p)
    N = B * sfft.next_fast_len(-(-(max(m, n + B)) // B), real=True)
    d64 = forward_units(N, np.float64, _FFT_C) * u * l1
    split = splits(N)  # (fft_split; its step is in d64)
    b = np.abs(rfft_split(p, N) if split else sfft.rfft_inplace(sfft.spectrum_buffer(p, N), N))
    b *= 1.0 + 4.0 * u
    b += d64 + 1e-300
    kept = np.nonzero(T * (np.log(b) - math.log(l1)) > -80.0)[0]
    if not len(kept):
        return N, np.zeros(0, dtype=np.clongdouble), b, d64, d64
    K = int(kept[-1]) + 1
    while B > 1 and 2.0 * math.pi * K * B > _LOW_THETA * N:
        B //= 2
    Nc = N // B
    if B < 8 or K > Nc // 2:
        return None
    theta = 2.0 * math.pi * K * B / N
    S = 1
    while theta**S / math.factorial(S) > _LOW_TAIL:
        S += 1
    # blocks start where the mass around p's largest entry does (at most B / 2 below it)
    top = int(np.argmax(p))
    lo = max(top - B // 2, 0)
    a0 = lo + int(np.argmax(p[lo : top + 1] > 1e-4 * p[top]))
    r = -a0 % B  # p[a0] moves to a multiple of B
    nz = np.nonzero(p)[0]
    J = (nz + r) // B
    tau = ((nz + r) % B).astype(np.longdouble) / B  # exact
    term = p[nz].astype(np.longdouble)
    starts = np.concatenate(([0], np.nonzero(np.diff(J))[0] + 1))
    jb = J[starts]
    two_pi = 8.0 * np.arctan(np.longdouble(1.0))
    th = np.arange(K, dtype=np.longdouble) * (two_pi * B / N)
    c = np.ones(K, dtype=np.longdouble)
    acc = np.zeros(K, dtype=np.clongdouble)
    mu = np.zeros(Nc, dtype=np.longdouble)
    units = comb = 0.0
    phase = 1.0 + 0.0j
    for s in range(S):
        mu[:] = 0.0
        mu[jb] = np.add.reduceat(term, starts)
        # (long-double sum, then its float64 rounding)
        m_s = float(np.sum(mu)) * (1.0 + 2.0 * Nc * _U_LD + 2.0 * UNIT_ROUNDOFF)
        acc += (c * phase) * sfft.rfft(mu)[:K]
        w_s = theta**s / math.factorial(s) * m_s
        units += w_s * (_FFT_C * max(math.log2(Nc), 1.0) + s + B + 6 * s)
        comb += w_s
        term *= tau
        c = c * th / (s + 1)
        phase *= -1j
    phi = np.arange(K, dtype=np.longdouble) * (two_pi * r / N)
    acc *= np.cos(phi) + 1j * np.sin(phi)
    units += (S + 3) * comb + (4.0 * theta + 5.0) * l1
    tail = theta**S / math.factorial(S) / (1.0 - theta / (S + 1)) * l1
    d = 1.1 * (units * _U_LD + tail)
    if d > 4.0 * _FFT_C * math.log2(N) * _U_LD * l1:  # (a path choice: docstring)
        return None
    b[:K] = np.abs(acc.astype(complex)) * (1.0 + 4.0 * u) + (d + 1e-300)
    return N, acc, b, d64, d


def _inverse_error(wts: np.ndarray, coef: np.ndarray, absy: np.ndarray, N: int, W: int,
                   extra: tuple[float, float] = (0.0, 0.0),
                   extra_y: tuple[float, float] = (0.0, 0.0)) -> float:
    """:func:`privamp.numerics.fft_power.inverse_error` with this module's constant C."""
    return inverse_error(wts, coef, absy, N, W, _FFT_C, extra, extra_y)


# ------------------------------------------------------------------------------------------
# running products of a few arrays in the Fourier domain (checkpoints of a composition)
# ------------------------------------------------------------------------------------------


def product_windows(arrays: dict, plan: list, tau: float, max_len: int = _MAX_POWER_LEN,
                    want: list[bool] | None = None):
    """Windows of the running linear convolutions x_k = a_{plan[0]} * ... * a_{plan[k-1]}
    of nonnegative arrays (``arrays[key]``), k = 1 .. len(plan), from one forward FFT per
    array and one inverse FFT per k; None if the common FFT length would exceed ``max_len``
    or a check fails.  Returns a generator of ``(start, z, err, tau_lo, tau_hi)`` per k, with
    the meaning of :func:`self_convolve_power` (positions of x_k from 0); with ``want``, None
    at each k where ``want[k]`` is false (no inverse FFT there).

    Windows.  Chernoff bounds on both sides (:func:`chernoff_tops`, blocked masses as in
    :func:`self_convolve_power`); one length N >= every window and array.

    Error.  Each array is transformed once in float64: every computed coefficient is within
    ``d = C log2(N) u ||a||_1`` of the exact one (as in :func:`self_convolve_power`), so
    ``beta = |Ahat| (1 + 4u) + d`` bounds both.  With Chat_k = fl(Chat_{k-1} Ahat),
    Gamma_k = prod beta >= |C_k| and E_k >= |Chat_k - C_k|:
    ``E_k <= E_{k-1} beta + Gamma_{k-1} d + 4u (Gamma_{k-1} + E_{k-1}) beta`` (the last
    term: complex multiplication, sqrt(5) u; Higham 2002, Lemma 3.5), each evaluated in
    float and rounded up by (1 + 8u); E_1 = d.  The inverse transform adds
    :func:`_inverse_error`.
    """
    if not plan or not 0.0 < tau < 1.0:
        return None
    for a in arrays.values():
        if len(a) == 0 or not np.all(np.isfinite(a)) or a.min() < 0 or a.max() <= 0:
            return None
    log_tau = math.log(tau)
    up, down = {}, {}
    for key, a in arrays.items():
        hi, rev = blocked_log_masses_both(a, PRODUCT_CHERNOFF_POINTS)
        up[key], down[key] = log_mgf_bounds(*hi), log_mgf_bounds(*rev)
    x_hi = chernoff_tops([up[g] for g in plan], log_tau)
    x_rev = chernoff_tops([down[g] for g in plan], log_tau)
    if x_hi is None or x_rev is None:
        return None
    span = np.cumsum([len(arrays[g]) - 1 for g in plan])
    x_lo = span - x_rev
    tau_hi = np.where(x_hi < span, tau, 0.0)
    tau_lo = np.where(x_lo > 0, tau, 0.0)
    x_hi, x_lo = np.minimum(x_hi, span), np.maximum(x_lo, 0)
    if np.any(x_hi < x_lo):
        return None
    W = x_hi - x_lo + 1
    longest = max(int(W.max()), max(len(a) for a in arrays.values()))
    if longest > max_len:
        return None
    N = sfft.next_fast_len(longest, real=True)
    return _running_products(arrays, plan, N, x_lo, W, tau_lo, tau_hi, want)

#: :func:`_running_products` inverts windows by transforms up to this many times shorter
_MAX_DECIMATION = 16

#: a coefficient of a running product whose modulus bound falls below this is set to 0
#: (its bound, grown by the largest factor moduli, joins the error from then on)
_DROP = 1e-28

#: ... once at least 1 / _DROP_BATCH of the kept coefficients fall below it (until then
#: they are carried on like the others)
_DROP_BATCH = 16


def _running_products(arrays: dict, plan: list, N: int, x_lo: np.ndarray, W: np.ndarray,
                      tau_lo: np.ndarray, tau_hi: np.ndarray, want: list[bool] | None = None):
    """The generator of :func:`product_windows`.  Coefficients whose bound Gamma_k falls
    below ``_DROP`` are set to 0 from then on: the error there is <= Gamma, which later
    factors multiply by at most max beta (rounded up); their weighted sums (plain and of
    squares) are carried as scalars into :func:`_inverse_error`.

    A window of W_k <= N / m entries (m | N, m <= ``_MAX_DECIMATION``) is read from the
    inverse transform of length N / m of every m-th coefficient: that is the DFT of x_k
    aliased modulo N / m (its z-transform at the (N / m)-th roots of unity), so a window of
    W_k distinct positions still holds x_k plus aliased mass from outside it, and the error
    bound of :func:`_inverse_error` applies with length N / m to those coefficients (the
    dropped ones' sums s1, s2 over all N only overcount)."""
    u = UNIT_ROUNDOFF
    k2 = max(math.log2(N), 1.0)
    spec, beta, dist, bmax = {}, {}, {}, {}
    for key, a in arrays.items():
        spec[key] = sfft.rfft(a, N)
        l1 = float(np.sum(a)) * (1.0 + (len(a) + 2) * u)
        dist[key] = _FFT_C * k2 * u * l1  # (pocketfft's unsplit transform: section 12)
        beta[key] = np.abs(spec[key]) * (1.0 + 4.0 * u) + dist[key]
        bmax[key] = float(beta[key].max()) * (1.0 + 4.0 * u)
    wts_all = hermitian_weights(N)
    idx = np.arange(N // 2 + 1)
    divisors = [f for f in range(1, _MAX_DECIMATION + 1) if N % f == 0]
    rows = {g: (spec[g], beta[g]) for g in arrays}  # the factors at the kept coefficients
    C: Any = None
    E: Any = None
    G: Any = None
    s1 = s2 = 0.0
    for k, g in enumerate(plan):
        A, b = rows[g]
        d = dist[g]
        if C is None:
            C, E, G = A.copy(), np.full(len(A), d), b.copy()
        else:
            # E b + G d + 4u (G + E) b = (E (1 + 4u) + 4u G) b + G d: five roundings of
            # nonnegative terms, within the factor (1 + 8u)
            C *= A
            E *= 1.0 + 4.0 * u
            E += (4.0 * u) * G
            E *= b
            E += d * G
            E *= 1.0 + 8.0 * u
            G *= b
            G *= 1.0 + 4.0 * u
            s1 *= bmax[g] * (1.0 + 4.0 * u)
            s2 *= (bmax[g] * (1.0 + 4.0 * u)) ** 2 * (1.0 + 4.0 * u)
        drop = G < _DROP
        if np.count_nonzero(drop) * _DROP_BATCH >= len(G):  # (kept ones stay exact)
            wd, gd = wts_all[idx[drop]], G[drop]
            s1 += float(np.sum(wd * gd)) * (1.0 + 4.0 * u * len(gd))
            s2 += float(np.sum(wd * gd * gd)) * (1.0 + 4.0 * u * len(gd))
            keep = ~drop
            idx, C, E, G = idx[keep], C[keep], E[keep], G[keep]
            rows = {g: (spec[g][idx], beta[g][idx]) for g in arrays}
        if want is not None and not want[k]:
            yield None
            continue
        m = max(f for f in divisors if N // f >= W[k])
        sel = slice(None) if m == 1 else (idx % m == 0)
        Csub = C[sel]
        err = _inverse_error(wts_all[idx[sel]], E[sel], np.abs(Csub) * (1.0 + 4.0 * u),
                             N // m, int(W[k]), (s1, s2))
        if not math.isfinite(err):
            raise ArithmeticError("running Fourier products: error bound not finite")
        if m == 1 and len(idx) == N // 2 + 1:
            full = Csub
        else:
            full = np.zeros(N // m // 2 + 1, dtype=complex)
            full[idx[sel] // m] = Csub
        z = circular_window(sfft.irfft(full, N // m), int(x_lo[k]), int(W[k]))
        yield int(x_lo[k]), z, err, float(tau_lo[k]), float(tau_hi[k])
