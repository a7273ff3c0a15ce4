"""privamp.numerics.fft_split (issue 28, session 12): the radix-2 step around two
half-length real transforms, against an independent reference (the DFT in mpmath at 40
digits) within the error model its docstring states, and self_convolve_power with the split
forced (threshold lowered) against exact rational convolution."""

from __future__ import annotations

import importlib
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from exact_powers import sparse_power  # (same folder: pytest puts it on sys.path)

from privamp.numerics import fft_split
from privamp.numerics.fft import self_convolve_power

fft_mod = importlib.import_module("privamp.numerics.fft")
U = 2.0**-53
U_LD = float(np.finfo(np.longdouble).eps) / 2.0


def _mp_rfft(x, N):
    mpmath.mp.dps = 40
    return [mpmath.fsum(mpmath.mpf(float(x[j])) * mpmath.expjpi(-2 * mpmath.mpf(k * j) / N)
                        for j in range(len(x))) for k in range(N // 2 + 1)]


@pytest.mark.parametrize("N", [4, 8, 12, 40, 96])
@pytest.mark.parametrize("dtype", [np.float64, np.longdouble])
def test_forward_within_model(N: int, dtype) -> None:
    rng = np.random.default_rng(N)
    x = rng.random(N - 1) ** 3
    X = fft_split.rfft_split(x, N, dtype)
    ref = _mp_rfft(x, N)
    u = U if dtype is np.float64 else U_LD
    # the model: C log2(N) u ||x||_1 with the split's constant, over C log2(M) + its step
    c_split = fft_split.split_constant(dtype)
    bound = (fft_mod._FFT_C * math.log2(N // 2) + c_split) * u * float(x.sum())
    for k in range(N // 2 + 1):
        got = mpmath.mpc(float(X[k].real), float(X[k].imag)) if dtype is np.float64 else \
            mpmath.mpc(mpmath.mpf(str(X[k].real)), mpmath.mpf(str(X[k].imag)))
        assert float(abs(got - ref[k])) <= bound, (k, float(abs(got - ref[k])), bound)


def test_forward_zero_at_and_errors() -> None:
    rng = np.random.default_rng(2)
    x = rng.random(30)
    zero = np.array([0, 7, 29])
    xz = x.copy()
    xz[zero] = 0.0
    np.testing.assert_allclose(fft_split.rfft_split(x, 32, zero_at=zero),
                               fft_split.rfft_split(xz, 32), rtol=0, atol=1e-14)
    with pytest.raises(ValueError, match="even N"):
        fft_split.rfft_split(x, 31)
    with pytest.raises(ValueError, match="divisible by 4"):
        fft_split.irfft_split_inplace(np.zeros(16, dtype=complex), 30)


@pytest.mark.parametrize("N", [8, 12, 40, 100])
def test_inverse_within_model(N: int) -> None:
    rng = np.random.default_rng(N + 1)
    Y = rng.normal(size=N // 2 + 1) + 1j * rng.normal(size=N // 2 + 1)
    z = fft_split.irfft_split_inplace(Y.copy(), N)
    mpmath.mp.dps = 40
    full = [mpmath.mpc(complex(Y[k])) for k in range(N // 2 + 1)]
    full += [mpmath.conj(full[N - k]) for k in range(N // 2 + 1, N)]
    full[0], full[N // 2] = mpmath.mpf(full[0].real), mpmath.mpf(full[N // 2].real)
    wsum = float(sum(abs(v) for v in full))
    # per entry: (1/N) (C (log2 N - 1) + 16) u sum |Y| (fft_power.inverse_error's constant)
    bound = (fft_mod._FFT_C * (math.log2(N) - 1.0) + 16.0) * U * wsum / N
    for m in range(N):
        ref = mpmath.fsum(full[k] * mpmath.expjpi(2 * mpmath.mpf(k * m) / N)
                          for k in range(N)) / N
        assert abs(float(z[m]) - float(ref.real)) <= bound


def test_split_len_and_splits(monkeypatch: pytest.MonkeyPatch) -> None:
    big = fft_split.SPLIT_MIN_LEN
    assert fft_split.splits(big) and not fft_split.splits(big - 4)
    assert fft_split.splits(big // 2, np.longdouble) and not fft_split.splits(big // 2)
    L = 1_476_000  # next_fast_len gives the odd 1476225
    N = fft_split.split_len(L, np.longdouble)
    assert N >= L and N % 4 == 0 and N < 1.02 * L  # (the least 5-smooth multiple of 4)
    assert fft_split.split_len(1000) == fft_mod.sfft.next_fast_len(1000, real=True)


@pytest.mark.parametrize("atoms", [True, False])
def test_power_with_split_against_exact(atoms: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """self_convolve_power with every transform split (threshold lowered): the atom path and
    the long-double path (the atom path declined), against the exact T-fold convolution."""
    monkeypatch.setattr(fft_split, "SPLIT_MIN_LEN", 1 << 10)
    fft_power = importlib.import_module("privamp.numerics.fft_power")
    used = []
    orig = fft_power.irfft_split_inplace

    def spy(*a):
        used.append(a[1])
        return orig(*a)

    monkeypatch.setattr(fft_power, "irfft_split_inplace", spy)
    if not atoms:
        monkeypatch.setattr(fft_mod, "ATOM_MIN_LEN", 1 << 40)
    n = 300_000
    p = np.zeros(n)
    for j, v in {3: 1.0 - 2e-16, 1000: 1e-16, 150_000: 5e-17, 299_999: 5e-17}.items():
        p[j] = v
    T = 3
    res = self_convolve_power(p, T, 1e-30)
    assert res is not None
    start, z, err, tau_lo, tau_hi = res
    exact = sparse_power({j: Fraction(float(p[j])) for j in np.flatnonzero(p)}, T)
    ref = np.zeros(len(z))
    for i, v in exact.items():
        if start <= i < start + len(z):
            ref[i - start] = float(v)
    dev = float(np.abs(z - ref).sum())
    assert dev <= err + tau_lo + tau_hi + 4e-16 * float(ref.sum()), (dev, err)
    assert used  # (the inverse was split)
