"""In-place real transforms (privamp.numerics.fft_plans.rfft_inplace / irfft_inplace):
bit-identical to scipy.fft.rfft / irfft (the reference is scipy's public function on the
same input), for float64 and long double, even and odd lengths, and the replaced code of
fft_power / fft (session 11) copied verbatim as the reference for the callers."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.fft as sf

from privamp.numerics import fft_plans


@pytest.mark.parametrize("dtype", [np.float64, np.longdouble])
@pytest.mark.parametrize("N", [1, 2, 3, 8, 64, 1000, 1001, 4095, 98304, 300001])
def test_inplace_matches_scipy(dtype, N):
    rng = np.random.default_rng(N)
    p = rng.random(max(N - 3, 1)) * rng.choice([1.0, 1e-12], size=max(N - 3, 1))
    buf = np.zeros(N, dtype=dtype)
    buf[: len(p)] = p
    ref = sf.rfft(buf)
    Y = fft_plans.spectrum_buffer(p, N, dtype)
    assert Y.shape == (N // 2 + 1,) and Y.real.dtype == np.dtype(dtype)
    out = fft_plans.rfft_inplace(Y, N)
    assert out is Y
    assert np.array_equal(ref.view(dtype), Y.view(dtype))
    if N < 2:
        return
    ref_inv = sf.irfft(ref, N)
    z = fft_plans.irfft_inplace(Y, N)
    assert np.shares_memory(z, Y) and len(z) == N
    assert np.array_equal(ref_inv.view(dtype), z.view(dtype))


def test_spectrum_buffer_rejects_long_input():
    with pytest.raises(ValueError, match="transform length"):
        fft_plans.spectrum_buffer(np.ones(10), 9)


def test_low_spectrum_bound_unchanged():
    """The session-11 expression of _low_spectrum's moduli (copied verbatim) against the
    in-place one: same bytes."""
    u = 2.0**-53
    rng = np.random.default_rng(5)
    p = rng.random(5000) ** 30
    N, d64 = 8192, 1e-13
    ref = np.abs(sf.rfft(p, N)) * (1.0 + 4.0 * u) + (d64 + 1e-300)
    b = np.abs(fft_plans.rfft_inplace(fft_plans.spectrum_buffer(p, N), N))
    b *= 1.0 + 4.0 * u
    b += d64 + 1e-300
    assert ref.tobytes() == b.tobytes()
