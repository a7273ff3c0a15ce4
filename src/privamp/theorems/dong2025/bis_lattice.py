"""Numerics of the Balanced Iteration PLD (:mod:`privamp.theorems.dong2025.bis_pld`, whose
docstring gives the construction and its soundness): the certified law of the lattice sum K
on the circle (:class:`SumLaw`: cell masses, long-double FFT spectra, binary powers,
Chernoff bounds on the wrapped mass, l1 roundoff bounds, the window of the circle it keeps)
and the chord upper bounds on the profile; the dominated grid pair from lower bounds is in
:mod:`privamp.theorems.dong2025.bis_bounds`.

Split from :mod:`privamp.theorems.dong2025.bis_pld` (issue 26).
"""

from __future__ import annotations

import functools
import math
from typing import cast

import numpy as np
from scipy import special

from ...errors import NotApplicable
from ...numerics.logspace import log_diff_ndtr

__all__ = [
    "SumLaw",
    "chord_upper",
    "factor",
    "choose_lattice",
    "prefix_sums",
    "suffix_sums",
    "trim_common",
]


_U = float(np.finfo(float).eps) / 2.0


def _pick_fft():
    """numpy's FFT where it transforms long double in long double (numpy >= 2: pocketfft,
    as scipy's), else scipy.fft: scipy keeps its plans, ~48 MB for the lattice's two sizes
    at 2^22 points, for the process's lifetime (memory only; the error bounds assume
    a long double transform, which the check guarantees)."""
    if np.fft.rfft(np.zeros(8, dtype=np.longdouble)).dtype == np.clongdouble:
        return np.fft
    from scipy import fft as sfft

    return sfft


_fft = _pick_fft()


#: memory budget of one lattice (bytes): the circle's arrays at their peak -- two complex128
#: spectra, the long-double sub-transforms of :func:`_rfft_ld` with scipy's work space, the
#: law, its prefix and suffix sums -- take about _BYTES_PER_POINT bytes per point (measured:
#: ~300 MB resident at 2^22 points, ~3 s CPU for a k = 1 epoch, fuzz 2026-11)
_MEMORY_BUDGET = 400 * 2**20
_BYTES_PER_POINT = 96


#: largest circular lattice, the largest power of two within the memory budget (2^22); where
#: even that would not hold the sums, the step is coarsened (doubled: sound at any step, only
#: looser, :func:`choose_lattice`) before the accountant abstains
_MAX_FFT = 1 << int(math.log2(_MEMORY_BUDGET / _BYTES_PER_POINT))


_ALIAS_BUDGET = 2e-11  # certified bound allowed for wrapped + dropped mass, per pair


def _index(x: np.ndarray | float, bound: int) -> np.ndarray:
    """Integer lattice indices of the float array ``x`` (already floored or ceiled), clipped
    to [-bound, bound] before the int64 cast (values beyond the lattice, up to inf, keep their
    meaning for callers that clip to [0, n] after shifting by at most ``bound - n``).  A NaN
    is a bug upstream and raises."""
    x = np.asarray(x, dtype=float)
    if np.isnan(x).any():
        raise FloatingPointError("NaN lattice index in the BIS PLD")
    return np.clip(x, -bound, bound).astype(np.int64)


def _log_w(v: np.ndarray | float, z: float = 0.0) -> np.ndarray:
    """log of the coordinate W at which the lattice coordinate V = g_z(W) equals ``v``:
    z = 0: V = W (log v); z > 0: the saddle-point statistic V = log(1 + z W) / z, so
    W = expm1(z v) / z, taken as z v + log(-expm1(-z v)) - log z (no overflow)."""
    v = np.asarray(v, dtype=float)
    with np.errstate(divide="ignore"):
        if z <= 0.0:
            return np.log(v)
        return z * v + np.log(-np.expm1(-z * v)) - math.log(z)


def _cell_masses(s: float, log_scale: float, d: float, n: int, z: float = 0.0
                 ) -> tuple[np.ndarray, float, float]:
    """P(V in [j d, (j+1) d)), j < n, V = g_z(W) (:func:`_log_w`; V = W when z = 0),
    W = e^{log_scale} Z, Z = exp(s X - s^2/2), X ~ N(0, 1);
    the mass P(V >= n d); and eta, a bound on the Kolmogorov distance between the computed
    cells (as a sub-probability law) and the exact ones.

    Below the median the cells are differences of computed CDF values, above it differences
    of computed survival values (scipy ndtr, a few ulp relative), so the computed law is
    exactly the law with CDF G, |G - F| <= 4u (CDF values) + 4u (survival values) + u (the
    subtractions, each rounding <= u cell, summing to <= u): eta = 16u with margin.
    Kolmogorov distance is subadditive under convolution, |mu^{*T} - nu^{*T}| <= T eta.
    """
    def xs(i0: int, i1: int) -> np.ndarray:  # x at the edges j d, i0 <= j < i1
        with np.errstate(divide="ignore"):
            return (_log_w(np.arange(i0, i1) * d, z) - log_scale + s * s / 2) / s

    # in chunks (memory: the cells are the only full-length array); the same values as
    # differences of ndtr(x) below the median and of ndtr(-x) above it, each computed only
    # where it is used (x is nondecreasing)
    chunk = 1 << 18
    m = n + 1  # first edge with x > 0
    for i0 in range(0, n + 1, chunk):
        pos = int(np.searchsorted(xs(i0, min(i0 + chunk, n + 1)), 0.0, side="right"))
        if pos < min(chunk, n + 1 - i0):
            m = i0 + pos
            break
    cells = np.empty(n)
    for j0 in range(0, n, chunk):
        j1 = min(j0 + chunk, n)
        x = xs(j0, j1 + 1)
        c_end = min(max(m - 1, 0), j1)  # cells j < m - 1 from CDF values
        if c_end > j0:
            cdf = special.ndtr(x[: c_end - j0 + 1])
            cells[j0:c_end] = cdf[1:] - cdf[:-1]
        s0 = max(c_end, j0)
        if j1 > s0:
            sf = special.ndtr(-x[s0 - j0:])
            cells[s0:j1] = sf[:-1] - sf[1:]
    np.maximum(cells, 0.0, out=cells)
    top = float(special.ndtr(-xs(n, n + 1))[0])
    return cells, top * (1 + 1e-12) + 8.0 * _U, 16.0 * _U


def _log_mgf_upper(s: float, log_scale: float, top: float, thetas: np.ndarray, z: float = 0.0
                   ) -> np.ndarray:
    """Upper bound on log E[e^{theta V}; V < top], V = g_z(W) (:func:`_log_w`),
    W = e^{log_scale} Z, from coarse cells (each cell's mass times e^{theta x (cell's right
    end)})."""
    edges = np.concatenate([np.linspace(0.0, min(top, 50.0), 2001),
                            np.geomspace(max(min(top, 50.0), 1e-300), top, 4001)[1:]])
    edges = np.unique(np.minimum(edges, top))
    with np.errstate(divide="ignore"):
        x = (_log_w(edges, z) - log_scale + s * s / 2) / s
    logm = log_diff_ndtr(x[:-1], x[1:])
    right = edges[1:]
    vals = logm[None, :] + thetas[:, None] * right[None, :]
    mx = vals.max(axis=1)
    return mx + np.log(np.exp(vals - mx[:, None]).sum(axis=1)) + 1e-9


def _wrap_bound(s: float, T: int, first_log_scale: float, top: float, shifted: int = 1,
                z: float = 0.0) -> float:
    """Chernoff bound on P(sum of the T lattice-floored, truncated coordinates >= top):
    min_theta e^{-theta top} prod_{i <= m} E[e^{theta W_i}; W_i < top]
    prod_{i > m} E[e^{theta Z}; Z < top], with m = ``shifted`` coordinates W_i = e^{first} Z_i
    (of V_i = g_z(W_i) when z > 0)."""
    lm = _log_mgf_on_grid(s, 0.0, top, z)
    lm1 = _log_mgf_on_grid(s, first_log_scale, top, z)
    logb = (T - shifted) * lm + shifted * lm1 - _THETAS * top
    return float(np.exp(min(float(np.min(logb)), 0.0)))


_THETAS = np.geomspace(1e-6, 50.0, 300)  # the Chernoff parameters tried by _wrap_bound


@functools.lru_cache(maxsize=64)
def _log_mgf_on_grid(s: float, log_scale: float, top: float, z: float) -> np.ndarray:
    """:func:`_log_mgf_upper` at ``_THETAS`` (cached, read-only: the circle-size check and
    the laws on that circle ask for the same values)."""
    out = _log_mgf_upper(s, log_scale, top, _THETAS, z)
    out.flags.writeable = False
    return out


def _power(x: np.ndarray, n: int) -> tuple[np.ndarray, int]:
    """x**n (complex, elementwise) by binary powering; returns the number of products."""
    result = None
    base = x  # never written to: the first squaring makes the copy (memory: two arrays)
    count = 0
    while True:
        if n & 1:
            if result is None:
                result = base.copy()
            else:
                result *= base
                count += 1
        n >>= 1
        if not n:
            break
        if base is x:
            base = base * base
        else:
            np.multiply(base, base, out=base)
        count += 1
    assert result is not None
    return result, count


_SPLIT = 4  # radix of the split in _rfft_ld
_SPLIT_UNITS = 240.0  # the split's combination, u_ld sqrt(n) ||x||_2: >= 2 * 111 (_rfft_ld)
_SUB_ROUNDING = 2.5  # the sub-transforms' rounding to complex128: <= 2 u sqrt(n) ||x||_2
#: pocketfft's proven 2-norm rates, ||fl(F x) - F x||_2 <= rate u log2(N) ||F x||_2 for every
#: 5-smooth N and numpy's FFT (the same code): docs/fft_roundoff.md, sections 6 and 10
_L2_RATE_LD = 25.2
_L2_RATE_64 = 23.5


def _rfft_ld(x: np.ndarray | list[np.ndarray]) -> np.ndarray:
    """rfft(x) (length n = len(x), n // 2 + 1 bins) computed in extended precision and rounded
    to complex128, in R = ``_SPLIT`` decimated sub-transforms (memory: scipy's long double
    rfft needs about three times its output in work space, so one full-length call was the
    largest buffer of the BIS PLD).  X[k] = sum_r w^{r k} F_r[k mod m], m = n / R, F_r = rfft
    of x[r::R] (conjugate-symmetric), w = e^{-2 pi i / n}, combined in long double chunks.

    Error (l2, as in :func:`factor`): the sub-transforms obey pocketfft's proven 2-norm bound
    at length m, ``_L2_RATE_LD`` u_ld log2(m) sqrt(m) ||x_r||_2 each, and the combination is
    sqrt(R) times a unitary map on (F_r), so together <= ``_L2_RATE_LD`` u_ld log2(n) sqrt(n)
    ||x||_2.  The combination's own rounding (libm within 2 ulps, as docs/fft_roundoff.md
    assumes; glibc documents 1): the angle 2 pi / n (8 atanl(1) / n, n a power of two,
    2.55 u_ld) times j <= n / 2 (u_ld) is within 3.55 pi u_ld = 11.2 u_ld of the true angle,
    cosl / sinl add <= 4 u_ld (complex), so the chunk start and the table entries are within
    tau = 15.2 u_ld of the true twiddles; complex products (Higham 2002, Lemma 3.5:
    sqrt(2) gamma_2 <= 2.83 u_ld) give w^k within 2 tau + 2.83 = 33.2 u_ld, w^{2k} within 69.2,
    w^{3k} within 105.2 u_ld; then the products by F_r (2.83) and R - 1 = 3 sums (3 u_ld):
    each X[k] is off by <= 111 u_ld sum_r |F_r[k mod m]|, whose l2 norm over k is
    <= sqrt(R n) ||x||_2 (Cauchy-Schwarz and Parseval), i.e. <= 222 u_ld sqrt(n) ||x||_2
    <= ``_SPLIT_UNITS`` u_ld sqrt(n) ||x||_2, which :func:`factor` adds.  The sub-transforms
    are rounded to complex128 (each entry within u |F_r[j]|): X[k] moves by <= u sum_r
    |F_r[k mod m]|, of l2 norm <= 2u sqrt(n) ||x||_2 by the same argument
    (:data:`_SUB_ROUNDING` u, with margin, which :func:`factor` adds too).

    ``x`` may be given as a one-element list, which is emptied once the sub-transforms are
    taken (memory: the input then goes before the output is allocated)."""
    if isinstance(x, list):
        x_arr = x.pop()
    else:
        x_arr = x
    n = len(x_arr)
    R = _SPLIT
    if n % (2 * R) or n < 64 * R:
        return _fft.rfft(x_arr.astype(np.longdouble)).astype(np.complex128)
    m = n // R  # length of each sub-transform
    # m // 2 + 1 bins each, rounded to complex128 as taken (memory: half the long double
    # size; the rounding's error is in _SUB_ROUNDING)
    subs = [_fft.rfft(x_arr[r::R].astype(np.longdouble)).astype(np.complex128)
            for r in range(R)]
    del x_arr
    two_pi_n = 8.0 * np.arctan(np.longdouble(1.0)) / n
    chunk = min(1 << 15, n // 2)
    ang = np.arange(chunk, dtype=np.longdouble) * two_pi_n
    table = np.cos(ang) - 1j * np.sin(ang)  # w^j, j < chunk
    del ang
    out = np.empty(n // 2 + 1, dtype=np.complex128)
    for k0 in range(0, n // 2 + 1, chunk):
        k = np.arange(k0, min(k0 + chunk, n // 2 + 1), dtype=np.int64)
        a0 = np.longdouble(k0) * two_pi_n
        w1 = table[: len(k)] * (np.cos(a0) - 1j * np.sin(a0))  # w^k
        j = k % m
        hi = j > m // 2  # F_r[j] = conj(F_r[m - j]) (real input)
        jj = np.where(hi, m - j, j)
        acc = subs[0][jj].astype(np.clongdouble)
        w = w1
        for r in range(1, R):
            f = subs[r][jj].astype(np.clongdouble) * w
            acc += f
            if r + 1 < R:
                w = w * w1
        # the conjugated bins: conj(sum_r conj(w^{rk}) ... ) -- recompute them directly
        if hi.any():
            acc_hi = np.conj(subs[0][jj[hi]].astype(np.clongdouble))
            w = w1[hi]
            for r in range(1, R):
                acc_hi += np.conj(subs[r][jj[hi]].astype(np.clongdouble)) * w
                if r + 1 < R:
                    w = w * w1[hi]
            acc[hi] = acc_hi
        out[k0:k0 + len(k)] = acc
    return out


def factor(s: float, log_scale: float, d: float, n: int, cache: dict, z: float = 0.0
            ) -> tuple[np.ndarray, float, float, float]:
    """(spectrum, dropped mass, l1 cell error, l2 spectral error bound) of one coordinate.

    The real FFT is taken in extended precision (np.longdouble, unit roundoff u_ld) and
    rounded to complex128: ||X_hat - X||_2 <= (``_L2_RATE_LD`` u_ld log2 N + 2u) sqrt(N)
    ||x||_2 (pocketfft's proven 2-norm bound, docs/fft_roundoff.md, section 6, then one
    rounding of each component), plus the split's terms (:func:`_rfft_ld`)."""
    key = (s, log_scale, d, n, z)
    if key not in cache:
        cells, top, err = _cell_masses(s, log_scale, d, n, z)
        l2 = math.sqrt(float(np.dot(cells, cells))) * (1 + 1e-12)
        holder = [cells]
        del cells
        spec = _rfft_ld(holder)  # drops the cells after its sub-transforms (memory)
        u_ld = float(np.finfo(np.longdouble).eps) / 2.0
        k = max(math.log2(n), 1.0)
        a = 1.01 * ((_L2_RATE_LD * k + _SPLIT_UNITS) * u_ld + (2.0 + _SUB_ROUNDING) * _U
                    ) * math.sqrt(n) * l2
        cache[key] = (spec, top, err, a)
    return cache[key]


class SumLaw:
    """Certified description of S = sum_{i<=T} W_i, W_i = e^{first} Z_i for the first
    ``shifted`` coordinates (1 by default), W_i = Z_i for the others,
    through the floored lattice sum K = sum_i floor(W_i / d) on the circle Z_N.

    ``c`` (length N, the computed circular law of K over the event E that no W_i >= N d)
    satisfies ``c >= rho - e`` and ``c <= rho + wrap + e`` with rho the exact law of K on E
    restricted to [0, N), ``wrap >= 0`` summing to <= ``self.wrap`` and ``e`` a signed error
    whose sum over any range is <= ``self.err`` (weighted by a monotone weight in [0, w]:
    <= ``self.err`` w);
    ``self.drop >= P(E^c)``.  On E: d K <= S < d K + T d.
    """

    def __init__(self, s: float, T: int, first: float, d: float, n: int,
                 cache: dict | None = None, shifted: int = 1, release: bool = False,
                 sums: bool = True, z: float = 0.0) -> None:
        """``release``: empty ``cache`` once the spectra are raised to their powers (the
        caller's last law on this lattice; memory).  ``sums=False``: the caller sets
        ``suffix`` / ``prefix`` (:func:`suffix_sums`, :func:`prefix_sums` of ``c``) when needed.
        ``z > 0``: the coordinates are V_i = log(1 + z W_i) / z instead of W_i
        (:func:`_log_w`; then S is their sum, not the likelihood ratio's)."""
        self.T, self.d, self.n = T, d, n
        m = int(shifted)
        if not 1 <= m <= T:
            raise ValueError(f"shifted must be in [1, {T}], got {shifted}")
        cache = {} if cache is None else cache
        f0, top, e0, a0 = factor(s, 0.0, d, n, cache, z)
        f1, top1, e1, a1 = factor(s, first, d, n, cache, z)
        self.drop = min(((T - m) * top + m * top1) * (1 + 1e-9), 1.0)
        self.wrap = _wrap_bound(s, T, first, n * d, m, z) * 1.01
        # circular convolution power: binary powering of the spectra, one inverse FFT
        y, count = _power(f0, T - m) if T > m else (np.ones_like(f0), 0)
        y1, count1 = (f1, 0) if m == 1 else _power(f1, m)
        y *= y1
        del y1, f0, f1
        if release:
            cache.clear()
        count += count1 + 1
        y_norm = math.sqrt(float(np.vdot(y, y).real) * 2.0)  # both halves
        c = _fft.irfft(y, n)
        # l1 roundoff bound.  Spectra: ||X_hat - X||_2 <= a (see factor); powers:
        # |a^m - b^m| <= m R^{m-1} |a - b| with R = 1 + a >= |X|, |X_hat|; complex products
        # of relative error <= sqrt(2) gamma_2 < 3u each (Higham 2002, Lemma 3.5); inverse FFT
        # (float64: _L2_RATE_64 u log2 N relative in 2-norm, docs/fft_roundoff.md, sec. 6); with
        # ||F v||_2 = sqrt(N) ||v||_2 and l1 <= sqrt(N) l2 on the output the l1 error is
        # <= ||dY||_2 + _L2_RATE_64 u log2(N) ||Y_hat||_2 (+ its own error).
        k = max(math.log2(n), 1.0)
        eta = _L2_RATE_64 * _U * k
        r_pow = (1.0 + max(a0, a1)) ** T
        del y
        rel = (1.0 + 3.0 * _U) ** (count + 1) - 1.0
        d_y = r_pow * ((T - m) * a0 + m * a1) + rel * y_norm * 1.01
        # input cells: Kolmogorov distance <= T eta_in after convolution; range sums then move
        # by <= 2 T eta_in, monotone-weighted sums by <= 3 T eta_in max(weight) (Abel
        # summation), the mass wrapped from >= N by <= T eta_in more
        e_in = T * max(e0, e1)
        self.err = 1.01 * (d_y + eta * (y_norm + d_y)) + 3.0 * e_in
        self.wrap += e_in
        np.maximum(c, 0.0, out=c)  # clipping moves entries towards the nonnegative exact ones
        self.c: np.ndarray | None = c  # dropped by callers once only the sums are needed
        # suffix / prefix sums of nonnegative entries: relative error <= gamma_N each
        self.suffix: np.ndarray | None = suffix_sums(c) if sums else None
        self.prefix: np.ndarray | None = prefix_sums(c) if sums else None
        self.rel_err = 2.0 * (n + 2) * _U
        self.index_bound = n + 2 * T + 4  # index clip: beyond the circle on both sides
        #: the window [lo, lo + len(c)) of the circle that ``c`` (and its sums) keep
        #: (:meth:`trim`; the whole circle until then)
        self.lo = 0

    def trim(self, lo: int, hi: int) -> None:
        """Keep only the cells [lo, hi) of the circle in ``c`` (memory), the others set to
        0: the dropped cells c_out >= 0 join the signed error e (c' = c - c_out still
        satisfies c' >= rho - e - c_out and c' <= rho + wrap + e), whose range sums then
        grow by at most their total mass, added to ``err`` (rounded up: a sum of
        nonnegative terms).  Cells of [lo, hi) dropped by an earlier trim stay 0.  The
        prefix and suffix sums of c' are constant outside the window, so they are kept on
        it only (:meth:`prefix_at`, :meth:`suffix_at` clip).  Recomputes the sums that
        were set."""
        c = cast(np.ndarray, self.c)
        if not 0 <= lo <= hi <= self.n:
            raise ValueError(f"window [{lo}, {hi}) is not inside the circle [0, {self.n})")
        i0, i1 = lo - self.lo, hi - self.lo  # the new window in the kept cells' indices
        k0, k1 = min(max(i0, 0), len(c)), min(max(i1, 0), len(c))  # kept and still kept
        out = float(np.sum(c[:k0])) + float(np.sum(c[k1:]))
        self.err += out * (1.0 + self.rel_err) + 1e-300
        new = np.zeros(hi - lo)
        if k1 > k0:
            new[k0 - i0:k1 - i0] = c[k0:k1]
        del c
        self.c, self.lo = new, lo
        if self.suffix is not None:
            self.suffix = suffix_sums(self.c)
        if self.prefix is not None:
            self.prefix = prefix_sums(self.c)

    def window(self, fraction: float) -> tuple[int, int]:
        """The smallest window [lo, hi) of the circle outside which the kept cells hold at
        most ``fraction`` times ``err`` of computed mass on each side."""
        c = cast(np.ndarray, self.c)
        tau = fraction * self.err
        cum = np.cumsum(c)  # cum[j] = sum c[:j + 1]
        l_i = int(np.searchsorted(cum, tau, side="right"))  # sum c[:l_i] <= tau
        del cum
        # from the top end too (sums of the small masses there, not differences of the
        # total's: their rounding is relative); either way trim counts the dropped mass
        # afresh, only the window's size depends on these sums
        cum = np.cumsum(c[::-1])
        h_i = len(c) - int(np.searchsorted(cum, tau, side="right"))  # sum c[h_i:] <= tau
        del cum
        return self.lo + l_i, self.lo + max(min(h_i, len(c)), l_i)

    def window_sums(self, j: np.ndarray, suffix: bool) -> np.ndarray:
        """The suffix (``suffix``) or prefix sums of the kept cells at circle indices ``j``
        (any integers), without rounding allowance."""
        sums = cast(np.ndarray, self.suffix if suffix else self.prefix)
        return sums[np.clip(np.asarray(j) - self.lo, 0, len(sums) - 1)]

    def suffix_at(self, j: np.ndarray, up: bool) -> np.ndarray:
        v = self.window_sums(j, True)
        return v * (1 + self.rel_err) if up else v * (1 - self.rel_err)

    def prefix_at(self, j: np.ndarray, up: bool) -> np.ndarray:
        v = self.window_sums(j, False)
        return v * (1 + self.rel_err) if up else v * (1 - self.rel_err)

    def above(self, y: np.ndarray, upper: bool) -> np.ndarray:
        """Bound on P(S > y) (upper or lower)."""
        if upper:  # S > y on E => K > y/d - T;  K >= N on E costs <= wrap
            j = _index(np.floor(y / self.d), self.index_bound) - self.T + 1
            v = self.suffix_at(j, True) + self.err + self.wrap + self.drop
            return np.minimum(v, 1.0)
        j = _index(np.floor(y / self.d), self.index_bound) + 1  # K > y/d => S > y
        v = self.suffix_at(j, False) - self.err - self.wrap
        return np.maximum(v, 0.0)

    def below(self, y: np.ndarray, upper: bool) -> np.ndarray:
        """Bound on P(S < y) (upper or lower)."""
        if upper:  # S < y on E => K < y/d
            j = _index(np.ceil(y / self.d), self.index_bound)
            v = self.prefix_at(j, True) + self.err + self.drop
            v = v + np.where(j > self.n, self.wrap, 0.0)
            return np.minimum(v, 1.0)
        j = _index(np.floor(y / self.d), self.index_bound) - self.T + 1  # K <= y/d - T => S < y
        v = self.prefix_at(j, False) - self.err - self.wrap
        return np.maximum(v, 0.0)


def _fits(s: float, T: int, d: float, n: int, shifted: int = 1, signal: float | None = None,
          z: float = 0.0) -> bool:
    """Whether the circle of n cells of width d keeps the certified wrapped + dropped mass
    within the budget.  Coordinates W = exp(s X - s^2/2), X ~ N(0, 1), ``shifted`` of them
    with X ~ N(``signal``, 1) (default ``signal`` = s: the likelihood ratio itself); with
    z > 0 the lattice holds V = g_z(W) (:func:`_log_w`)."""
    mu = s if signal is None else float(signal)
    x = (float(_log_w(n * d, z)) + s * s / 2) / s
    # P(W >= n d) for the T - shifted plain and the shifted coordinates (as SumLaw's drop)
    tails = np.exp(log_diff_ndtr(np.array([x, x - mu]), np.array([np.inf, np.inf])))
    drop = (T - shifted) * float(tails[0]) + shifted * float(tails[1])
    return drop <= _ALIAS_BUDGET / 2 and (
        _wrap_bound(s, T, s * mu, n * d, shifted, z) <= _ALIAS_BUDGET / 2)


def _fft_size(s: float, T: int, d: float, shifted: int = 1, signal: float | None = None,
              z: float = 0.0) -> int | None:
    """Smallest power of two N <= _MAX_FFT with certified wrapped + dropped mass <= the
    budget, or None."""
    n = 1 << 10
    while n <= _MAX_FFT:
        if _fits(s, T, d, n, shifted, signal, z):
            return n
        n <<= 1
    return None


def choose_lattice(sigma: float, T: int, d: float, doublings: int, shifted: int = 1,
             signal: float | None = None, z: float = 0.0) -> tuple[float, int]:
    """(lattice step, circle size) for the sums of T log-normals: the step ``d`` doubled up to
    ``doublings`` times (first-order cost in d) until the circle fits in _MAX_FFT points.

    Raises NotApplicable, naming the smallest noise multiplier the lattice covers at these
    steps, when it never fits: small sigma gives log-normal coordinates with heavy right
    tails (log W ~ N(+-1/(2 sigma^2), 1/sigma^2)), which a uniform lattice in S cannot hold."""
    s = 1.0 / sigma
    for i in range(doublings + 1):
        n = _fft_size(s, T, d * 2.0**i, shifted, signal, z)
        if n is not None:
            return d * 2.0**i, n
    d_max = d * 2.0**doublings
    lo, hi = sigma, 2.0 * sigma
    while hi < 1e3 and not _fits(1.0 / hi, T, d_max, _MAX_FFT, shifted, None, z):
        lo, hi = hi, 2.0 * hi
    for _ in range(14):  # geometric bisection: hi fits, lo does not
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if _fits(1.0 / mid, T, d_max, _MAX_FFT, shifted, None, z) else (mid, hi)
    raise NotApplicable(
        f"noise multiplier sigma={sigma:g} is too small for the Balanced Iteration PLD with "
        f"steps={T} per one-participation block: its lattice would need more than "
        f"{_MAX_FFT} points; it covers sigma >= {hi:.3g} at these steps (the RDP "
        f"accountant, e.g. 'dong-tight', still gives an upper bound)")


#: :func:`trim_common` drops at most this fraction of a law's ``err`` of mass (each side)
_TRIM_FRACTION = 1e-3


def trim_common(laws: list[SumLaw], fraction: float = _TRIM_FRACTION) -> None:
    """Trim every law (:meth:`SumLaw.trim`) to one common window of the circle: the union of
    their windows (:meth:`SumLaw.window`), each leaving out at most ``fraction`` times the
    law's ``err`` of computed mass on each side (memory: the sum concentrates in a part of
    the circle, which must also hold the certified tails; each call loosens the bounds by
    at most 2 ``fraction`` of their error term).  One law: trimmed to its own window (so
    that it is small while the next one is built)."""
    wins = [law.window(fraction) for law in laws]
    lo = min(w[0] for w in wins)
    hi = max(w[1] for w in wins)
    for law in laws:
        law.trim(lo, hi)


def prefix_sums(x: np.ndarray) -> np.ndarray:
    """[sum(x[:j]) for j in 0..len(x)] (sequential sums), one allocation."""
    out = np.empty(len(x) + 1)
    out[0] = 0.0
    np.cumsum(x, out=out[1:])
    return out


def suffix_sums(x: np.ndarray) -> np.ndarray:
    """[sum(x[j:]) for j in 0..len(x)] (sequential sums from the end), one allocation."""
    out = np.empty(len(x) + 1)
    out[-1] = 0.0
    np.cumsum(x[::-1], out=out[-2::-1])
    return out


_CHORD_GROUPS = 128  # groups of lattice cells across the straddling window of a chord bound


def _block_sum(law: SumLaw, bounds: np.ndarray, w: np.ndarray, suffix: bool
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """sum_t w_t (mass of the cells [bounds_t, bounds_{t+1})) per row, from the suffix
    (``suffix``) or prefix sums of the cells of ``law`` (:meth:`SumLaw.window_sums`), in the
    Abel form
    +- sum_t (w_t - w_{t-1}) sums[bounds_t] (w_{-1} = w_G = 0, G blocks, bounds clipped to
    the circle).  Returns (value, sum_t |w_t - w_{t-1}| sums[bounds_t], sum_t |w_t - w_{t-1}|):
    the second bounds the effect of relative errors of the sums, the third (the total
    variation of w) that of range-sum errors of the cells (Abel summation)."""
    zero = np.zeros(w.shape[:-1] + (1,))
    dw = np.diff(np.concatenate([zero, w, zero], axis=-1), axis=-1)
    f = law.window_sums(bounds, suffix)
    val = (dw * f).sum(axis=-1)
    return (val if suffix else -val), (np.abs(dw) * f).sum(axis=-1), np.abs(dw).sum(axis=-1)


def chord_upper(law_p: SumLaw, law_q: SumLaw, a: np.ndarray, remove: bool) -> np.ndarray:
    """Certified upper bounds on the k = 1 profiles D(a) through the cells of the lattice
    sum K, without the lattice shift: with r = S / T = dP/dQ, remove D(a) = E_Q[(r - a)_+],
    add D(a) = E_Q[(1 - a r)_+], f convex; on the cells {K = j}, r lies in
    [alpha_j, beta_j] = [d j / T, d j / T + d] and E_Q[r; K = j] = P(K = j), so
    E_Q[f(r); K = j] <= (f(alpha)(beta Q_j - P_j) + f(beta)(P_j - alpha Q_j)) / (beta - alpha)
    (f below its chord), exact where f is linear on the cell.  Cells are merged into blocks
    (one interval per block): one below the window where f changes slope, ``_CHORD_GROUPS``
    across it, one above; the error is second order in d (only cells straddling the kink
    lose, each at most (beta - alpha) / 4 times its Q-mass).  The events K >= N and E^c add
    at most their P-mass (remove: f(r) <= r) or Q-mass (add: f <= 1)."""
    T, d, n = law_q.T, law_q.d, law_q.n
    a = np.asarray(a, dtype=float)
    kink = a if remove else 1.0 / a  # f is linear on each side of r = kink
    J = _index(np.floor(kink * T / d), law_q.index_bound)  # the cell holding the kink
    gs = -(-(T + 3) // _CHORD_GROUPS)  # cells per group
    G = -(-(T + 3) // gs)
    inner = J[:, None] - T - 1 + gs * np.arange(G + 1)[None, :]
    inner = np.minimum(inner, J[:, None] + 2)
    bounds = np.concatenate([np.zeros((len(a), 1), dtype=np.int64), inner,
                             np.full((len(a), 1), n, dtype=np.int64)], axis=1)
    bounds = np.clip(bounds, 0, n)
    lo_cell = bounds[:, :-1].astype(float)
    hi_cell = np.maximum(bounds[:, 1:] - 1, bounds[:, :-1]).astype(float)
    al = (d * lo_cell / T) * (1.0 - 1e-12)  # the interval widened (rounding)
    be = (d * hi_cell / T + d) * (1.0 + 1e-12)
    if remove:
        fa, fb = np.maximum(al - a[:, None], 0.0), np.maximum(be - a[:, None], 0.0)
    else:
        fa, fb = np.maximum(1.0 - a[:, None] * al, 0.0), np.maximum(1.0 - a[:, None] * be, 0.0)
    wid = be - al
    wp = (fb - fa) / wid  # coefficient of P_j
    wq = (fa * be - fb * al) / wid  # coefficient of Q_j
    out = np.zeros(len(a))
    for law, w in ((law_p, wp), (law_q, wq)):
        val, mag, tv = _block_sum(law, bounds, w, remove)
        gam = law.rel_err + 2.0 * (G + 4) * _U
        wneg = np.max(np.maximum(-w, 0.0), axis=1)  # c <= rho + wrap + e: only -w sees wrap
        out += val + 1.01 * gam * mag + law.err * tv + law.wrap * wneg
    beyond = law_p.wrap + law_p.drop if remove else law_q.wrap + law_q.drop
    out += beyond + 1e-13 * (1.0 + a)  # + the weights' own rounding
    return np.minimum(np.maximum(out, 0.0), 1.0)
