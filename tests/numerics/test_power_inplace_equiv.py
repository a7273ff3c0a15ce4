"""Session 12 (issue 28, memory): :func:`privamp.numerics.fft.self_convolve_power` with
in-place transforms and b^(T-1) formed in its error array must give the same bytes as the
session-11 code, copied verbatim below as the reference (full long-double path and the
low-frequency path; the atom path's transforms are checked in test_fft_inplace.py)."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
import scipy.fft as sf

from privamp.numerics.fft import self_convolve_power
from privamp.numerics.fft_power import circular_window, hermitian_weights, power_terms

fft_mod = importlib.import_module("privamp.numerics.fft")
U = 2.0**-53
U_LD = float(np.finfo(np.longdouble).eps) / 2.0
C = fft_mod._FFT_C  # (8 in session 11; the references below read the current constant)
# session 12 (docs/fft_roundoff.md section 12): the charge's safety factors 4 (forward) and 2
# (inverse) dropped, the l2 route at the proven 2-norm rate; the reference reads them here
FWD, INV, C2 = 1.0, 1.0, importlib.import_module("privamp.numerics.fft_power").L2_RATE


def _inverse_error(wts, coef, absy, N, W, extra=(0.0, 0.0), extra_y=(0.0, 0.0)):
    # session 11, verbatim (but for the constants above)
    k = max(math.log2(N), 1.0)
    cu, cu2 = C * k * U, C2 * k * U
    wc, wy = wts * coef, wts * absy
    coef_sum = float(np.sum(wc)) + extra[0]
    entry = INV * (coef_sum + cu * (float(np.sum(wy)) + extra_y[0])) / N
    coef_l2 = math.sqrt(float(np.dot(wc, coef)) + extra[1])
    y_l2 = math.sqrt(float(np.dot(wy, absy)) + extra_y[1])
    l2_route = INV * math.sqrt(W / N) * (coef_l2 + cu2 * y_l2)
    return min(W * entry, l2_route) * (1.0 + 1e-6)


def _reference(p, T, x_lo, W, low=None):
    """Session 11's self_convolve_power from the spectrum on (verbatim but for names)."""
    n = len(p)
    l1 = float(np.sum(p)) * (1.0 + (n + 2) * U)
    if low is not None:
        N, Xk, b, d_all, d = low
        lb = np.log(b)
    else:
        N = sf.next_fast_len(max(W, n), real=True)
        buf = np.zeros(N, dtype=np.longdouble)
        buf[: len(p)] = p
        Xk = sf.rfft(buf)
        d = d_all = FWD * C * max(math.log2(N), 1.0) * U_LD * l1
        b = np.abs(Xk.astype(complex)) * (1.0 + 4.0 * U) + (d + 1e-300)
        lb = np.log(b)
    keep = np.nonzero(T * (lb - math.log(l1)) > -80.0)[0]
    with np.errstate(over="ignore", under="ignore"):
        pw = np.exp(np.multiply(lb, T - 1))  # b^(T-1)
    coef = b + T * d_all
    coef *= pw
    absy, Yd = np.zeros(len(b)), np.zeros(len(b), dtype=complex)
    for i in range(0, len(keep), 1 << 16):
        ks = keep[i : i + (1 << 16)]
        Yd[ks], absy[ks], coef[ks] = power_terms(Xk[ks], b[ks], lb[ks], pw[ks], T, d)
    err = _inverse_error(hermitian_weights(N), coef, absy, N, W)
    out = sf.irfft(Yd, N, overwrite_x=True)
    return circular_window(out, x_lo, W), err


@pytest.mark.parametrize("seed,n,T", [(0, 300, 7), (1, 2000, 100), (2, 5001, 3000),
                                      (3, 40_000, 20)])
def test_full_path_same_bytes(seed: int, n: int, T: int) -> None:
    rng = np.random.default_rng(seed)
    x = np.linspace(-6, 6, n)
    p = np.exp(-0.5 * (x - rng.uniform(-1, 1)) ** 2) * (1 + 0.1 * rng.random(n))
    p /= p.sum() * (1 + 1e-12)
    res = self_convolve_power(p, T, 1e-20)
    assert res is not None
    start, z, err = res[:3]
    z_ref, err_ref = _reference(p, T, start, len(z))
    assert z.tobytes() == z_ref.tobytes() and err == err_ref


def test_low_frequency_path_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    # an atom plus a small narrow bump on a long grid, powered many times: few low kept
    # frequencies (the shape of a tiny sampling rate's PLD)
    n = 1 << 19
    x = np.arange(n, dtype=float)
    p = 1e-4 * np.exp(-0.5 * ((x - 300.0) / 20.0) ** 2)
    p[300] += 1.0
    p /= p.sum() * (1 + 1e-12)
    seen = []
    orig = fft_mod._low_spectrum

    def spy(*a, **k):
        r = orig(*a, **k)
        seen.append(None if r is None else tuple(v.copy() if isinstance(v, np.ndarray)
                                                 else v for v in r))
        return r

    monkeypatch.setattr(fft_mod, "_low_spectrum", spy)
    res = self_convolve_power(p, 10**5, 1e-20)
    assert res is not None and len(seen) == 1 and seen[0] is not None
    start, z, err = res[:3]
    z_ref, err_ref = _reference(p, 10**5, start, len(z), low=seen[0])
    assert z.tobytes() == z_ref.tobytes() and err == err_ref


def _fft_conv_session11(x, y, same):
    # session 11's transforms of fft._fft_conv, verbatim (the bound is unchanged code)
    n = len(x) + len(y) - 1
    size = sf.next_fast_len(n, real=True)
    fx = sf.rfft(x, size)
    fz = fx * fx if same else fx * sf.rfft(y, size)
    return sf.irfft(fz, size)[:n]


@pytest.mark.parametrize("same", [True, False])
@pytest.mark.parametrize("nx,ny", [(30_001, 12_345), (3_001, 1_234), (16_000, 300)])
def test_fft_conv_same_bytes(same: bool, nx: int, ny: int) -> None:
    rng = np.random.default_rng(11)
    x = rng.random(nx) ** 8
    y = x if same else rng.random(ny) ** 3
    z, _ = fft_mod._fft_conv(x, y, same)
    assert z.tobytes() == _fft_conv_session11(x, y, same).tobytes()
