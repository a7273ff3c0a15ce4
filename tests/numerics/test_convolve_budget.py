"""convolve_nonneg with its default direct budget (issue 28: scaled down for short arrays, so
their convolutions take the FFT path with a certified allowance): the allowance must cover
the error against the exact convolution, computed in integer arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from privamp.numerics.fft import convolve_nonneg

SCALE = 2.0**-20


def _exact(xi: np.ndarray, yi: np.ndarray) -> np.ndarray:
    """The convolution of integer arrays, exactly (int64: entries < 2^20, <= 4000 terms),
    in units of SCALE^2 as floats (exactly representable: < 2^53)."""
    return np.convolve(xi.astype(np.int64), yi.astype(np.int64)).astype(float)


@pytest.mark.parametrize("shape", ["flat", "peaked"])
@pytest.mark.parametrize("rnd", ["up", "down"])
def test_short_arrays_fft_path_certified(shape: str, rnd: str) -> None:
    rng = np.random.default_rng(28)
    n = 3000  # n^2 = 9e6 multiply-adds: above the short-array budget max(3e6, 4 n log2 n)
    if shape == "flat":
        xi = rng.integers(0, 2**20, n)
    else:  # a bulk and a long light tail (a PLD at a small rate)
        xi = np.where(rng.random(n) < 0.05, rng.integers(0, 2**20, n), rng.integers(0, 8, n))
        xi[1400:1420] = 2**20 - 1
    yi = rng.integers(0, 2**20, n)
    x, y = xi * SCALE, yi * SCALE
    z, err = convolve_nonneg(x, y, round=rnd)
    exact = _exact(xi, yi) * SCALE * SCALE
    assert err > 0.0  # the FFT path was taken (the direct one has no additive error)
    if rnd == "up":  # z >= exact - e with sum |e| <= err
        assert float(np.sum(np.maximum(exact - z, 0.0))) <= err
    else:  # z <= exact + e
        assert float(np.sum(np.maximum(z - exact, 0.0))) <= err
    # and the allowance is not vacuous: far below the total mass
    assert err < 1e-9 * float(exact.sum())


def test_self_convolution_certified() -> None:
    rng = np.random.default_rng(9)
    xi = rng.integers(0, 2**20, 2500)
    x = xi * SCALE
    z, err = convolve_nonneg(x, round="up")
    exact = _exact(xi, xi) * SCALE * SCALE
    assert float(np.sum(np.maximum(exact - z, 0.0))) <= err


def test_explicit_budget_direct() -> None:
    """An explicit budget above the work keeps the direct path (relative error only)."""
    rng = np.random.default_rng(3)
    xi, yi = rng.integers(0, 2**20, 2000), rng.integers(0, 2**20, 2000)
    z, err = convolve_nonneg(xi * SCALE, yi * SCALE, round="up", direct_budget=1e7)
    exact = _exact(xi, yi) * SCALE * SCALE
    assert err == 0.0
    assert np.all(z >= exact)
