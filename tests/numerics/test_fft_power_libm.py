"""The pointwise power ``exp(T log X)`` of ``fft_power.power_terms`` (long double, numpy's
complex log / exp = glibc's clogl / cexpl): the libm accuracy its error model needs, measured
against mpmath, and the model's charge against the bound (docs/fft_roundoff.md, section 11).

glibc documents (manual, "Errors in Math Functions"; sysdeps/x86_64/fpu/libm-test-ulps,
ldouble, round to nearest) clog: real part 3 ulps, imaginary part 1; cexp: 1 and 1. As the
FFT proof does for cos / sin, the bound assumes one ulp more than documented.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

from privamp.numerics.fft_power import power_terms

ULD = 2.0**-64
#: assumed per-component accuracy of clogl (ulps): documented + 1
CLOG_RE, CLOG_IM = 4.0, 2.0
#: cexpl's relative error in modulus (u_ld): glibc computes expl(x) * (cosl(y), sinl(y)),
#: each within 2 ulps (<= 4 u relative), one product (u): 4 + 4 + 1
CEXP = 9.0


def _mp(v: np.longdouble) -> mpmath.mpf:
    hi = np.float64(v)
    return mpmath.mpf(float(hi)) + mpmath.mpf(float(np.float64(v - np.longdouble(hi))))


def _ulps(got: np.longdouble, ref: mpmath.mpf) -> float:
    if ref == 0:
        return 0.0 if got == 0 else math.inf
    ulp = mpmath.mpf(2) ** (mpmath.floor(mpmath.log(abs(ref), 2)) - 63)
    return float(abs(_mp(got) - ref) / ulp)


def _spectra(rng: np.random.Generator, k: int) -> np.ndarray:
    """Adversarial arguments: moduli near 1, tiny and mid; phases near 0, +-pi/2, +-pi."""
    mod = np.concatenate([1.0 - rng.random(k) * 1e-12, rng.random(k) * 1e-15,
                          rng.random(k), np.exp(-40.0 * rng.random(k))])
    ph = np.concatenate([rng.random(k) * 1e-9, np.pi / 2 + rng.standard_normal(k) * 1e-9,
                         np.pi - rng.random(k) * 1e-12, (2 * rng.random(k) - 1) * np.pi])
    rng.shuffle(ph)
    m = mod.astype(np.longdouble)
    p = ph.astype(np.longdouble)
    return (m * np.cos(p) + 1j * (m * np.sin(p))).astype(np.clongdouble)


def test_clogl_and_cexpl_within_the_assumed_ulps() -> None:
    """numpy's complex long double log and exp (glibc clogl / cexpl) per component against
    mpmath, at power_terms-like arguments (exp: real parts in [-80, 0], imaginary up to
    T pi, T <= 1e7)."""
    mpmath.mp.dps = 40
    rng = np.random.default_rng(5)
    X = _spectra(rng, 60)
    L = np.log(X)
    worst_re = worst_im = 0.0
    for x, lg in zip(X, L, strict=True):
        ref = mpmath.log(mpmath.mpc(_mp(x.real), _mp(x.imag)))
        worst_re = max(worst_re, _ulps(lg.real, ref.real))
        worst_im = max(worst_im, _ulps(lg.imag, ref.imag))
    assert worst_re <= CLOG_RE and worst_im <= CLOG_IM, (worst_re, worst_im)
    Z = (-80.0 * rng.random(200)).astype(np.longdouble) + 1j * (
        (2 * rng.random(200) - 1) * np.pi * 10.0 ** rng.integers(0, 8, 200)).astype(
        np.longdouble)
    E = np.exp(Z)
    worst = 0.0
    for z, e in zip(Z, E, strict=True):
        ref = mpmath.exp(mpmath.mpc(_mp(z.real), _mp(z.imag)))
        worst = max(worst, float(abs(mpmath.mpc(_mp(e.real), _mp(e.imag)) - ref) / abs(ref)))
    assert worst <= CEXP * ULD, worst / ULD


def _needed(T: int, lx: float, ulps: tuple[float, float, float] = (CLOG_RE, CLOG_IM, CEXP)
            ) -> float:
    """Relative error of fl(exp(fl(T fl(log X)))) vs X^T, units of u_ld (first order; the
    second-order terms are < 1e-9 of it for T <= 1e7): clog's real part within ulps[0]
    (<= 2 ulps[0] u |log|X||), its imaginary within ulps[1] (<= 2 ulps[1] u pi), both
    multiplied by T; the product by T (u per component); cexp (ulps[2] u in modulus)."""
    re, im, ex = ulps
    return ex + T * ((2.0 * re + 1.0) * lx + (2.0 * im + 1.0) * math.pi)


def _charged(T: int, x: complex) -> float:
    """power_terms' relative charge minus its cast to complex128 (u; needs u), in u_ld."""
    Xk = np.array([x], dtype=np.clongdouble)
    b = np.array([abs(x)])
    Y, absY, coef = power_terms(Xk, b, np.log(b), b ** (T - 1), T, 0.0)
    return (float(coef[0] / absY[0]) / (1.0 + 1e-6) - 2.0**-53) / ULD


def test_power_error_measured_within_the_needed_bound() -> None:
    """exp(T log X) in long double against mpmath X^T: within _needed (informative ratio)."""
    mpmath.mp.dps = 40
    rng = np.random.default_rng(9)
    X = _spectra(rng, 15)
    worst = 0.0
    for T in (2, 37, 1000, 10**6):
        Y = np.exp(T * np.log(X))
        for x, y in zip(X, Y, strict=True):
            lx = abs(math.log(abs(complex(x))))
            if T * lx > 80:  # (not kept by power_terms' callers)
                continue
            ref = mpmath.mpc(_mp(x.real), _mp(x.imag)) ** T
            rel = float(abs(mpmath.mpc(_mp(y.real), _mp(y.imag)) - ref) / abs(ref)) / ULD
            assert rel <= _needed(T, lx)
            worst = max(worst, rel / _needed(T, lx))
    assert worst < 0.5


def test_charge_covers_the_documented_ulps_where_it_matters() -> None:
    """With glibc's documented ulps (3, 1, 1), power_terms' charge plus the spare u of its
    cast (it charges 2u, the cast needs u: 2048 u_ld) covers the bound wherever
    T |log|X|| <= 600 (every kept coefficient with |X| ~ b and l1 ~ 1: T log|X| > -80)."""
    for T in (2, 77, 1000, 10**6, 10**7):
        for lx in (0.0, 1e-3, 0.5, 5.0, 40.0):
            if T * lx <= 600.0:
                x = complex(math.exp(-lx) * math.cos(3.0), math.exp(-lx) * math.sin(3.0))
                assert _charged(T, x) + 2048.0 >= _needed(T, lx, (3.0, 1.0, 5.0))


def test_charge_covers_the_assumed_ulps_everywhere() -> None:
    """power_terms' charge (4 u_ld (1 + T (3 |log|X|| + 2 pi)), docs/fft_roundoff.md section 11)
    covers glibc's documented ulps plus one, at every modulus."""
    for T in (2, 10, 1000, 10**6):
        for lx in (0.0, 0.5, 5.0, 40.0):
            if T * lx > 700.0:  # X^T underflows in float64 (callers keep T log|X| > -80)
                continue
            x = complex(math.exp(-lx), 0.0)
            assert _charged(T, x) + 2048.0 >= _needed(T, lx)


def test_proposed_charge_covers_the_assumed_ulps() -> None:
    """The fix proposed for power_terms: rel = 4 u_ld (1 + T (3 |log|X|| + 2 pi)) + 2 u."""
    for T in (1, 2, 10, 1000, 10**6, 10**7):
        for lx in (0.0, 0.5, 5.0, 40.0, 1e3):
            assert 4.0 * (1.0 + T * (3.0 * lx + 2.0 * math.pi)) >= 1.001 * _needed(T, lx)
