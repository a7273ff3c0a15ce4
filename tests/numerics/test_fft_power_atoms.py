"""The few-atoms path of :func:`privamp.numerics.fft.self_convolve_power` (issue 28, session
11: :func:`privamp.numerics.fft_power.atom_power`) against the exact T-fold convolution
(rational arithmetic on a sparse array), against the full long-double transform, and the
cases it must decline."""

from __future__ import annotations

import importlib
from fractions import Fraction

import numpy as np
import pytest
from exact_powers import sparse_power  # (same folder: pytest puts it on sys.path)

from privamp.numerics import fft_power
from privamp.numerics.fft import self_convolve_power

fft_mod = importlib.import_module("privamp.numerics.fft")


def _atoms_array(n: int, atoms: dict[int, float], rest: dict[int, float]) -> np.ndarray:
    p = np.zeros(n)
    for j, v in {**atoms, **rest}.items():
        p[j] = v
    return p


@pytest.mark.parametrize("case", [
    # one atom plus 1e-16 spread far away (the shape of a tiny rate's optimistic PLD)
    ({3: 1.0 - 2e-16}, {1000: 1e-16, 150_000: 5e-17, 299_999: 5e-17}, 3),
    # two atoms, the rest 1e-9 of the mass
    ({0: 0.7, 5: 0.3 - 3e-9}, {77_777: 1e-9, 200_000: 2e-9}, 2),
])
def test_atom_path_matches_exact_convolution(case, monkeypatch: pytest.MonkeyPatch) -> None:
    atoms, rest, T = case
    n = 300_000
    p = _atoms_array(n, atoms, rest)
    used = []
    orig = fft_mod.atom_power

    def spy(*a, **k):
        r = orig(*a, **k)
        used.append(r is not None)
        return r

    monkeypatch.setattr(fft_mod, "atom_power", spy)
    res = self_convolve_power(p, T, 1e-30)
    assert res is not None and used == [True]
    start, z, err, tau_lo, tau_hi = res
    exact = sparse_power({j: Fraction(float(p[j])) for j in np.flatnonzero(p)}, T)
    ref = np.zeros(len(z))
    outside = Fraction(0)
    for i, v in exact.items():
        if start <= i < start + len(z):
            ref[i - start] = float(v)
        else:
            outside += v
    # z = x_window + a + e, a >= 0 aliased mass <= tau_lo + tau_hi, sum |e| <= err
    # (ref's own float rounding: relative u per entry)
    dev = float(np.abs(z - ref).sum())
    assert dev <= err + tau_lo + tau_hi + 4e-16 * float(ref.sum()), (dev, err)
    assert float(outside) <= tau_lo + tau_hi


def test_atom_path_no_looser_than_long_double_transform(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """The same window by both paths: they agree within the sum of their certified errors,
    and the atom path's error is the smaller (its coefficients' error d is ~20x smaller)."""
    rng = np.random.default_rng(3)
    n = 400_000
    p = np.zeros(n)
    p[rng.integers(0, n, 2000)] = rng.exponential(1e-19, 2000)
    p[12] = 1.0
    T, tau = 10**6, 1e-12
    atom = self_convolve_power(p, T, tau)
    monkeypatch.setattr(fft_mod, "ATOM_MIN_LEN", 1 << 40)
    full = self_convolve_power(p, T, tau)
    assert atom is not None and full is not None
    assert atom[0] == full[0] and len(atom[1]) == len(full[1])
    diff = float(np.abs(atom[1] - full[1]).sum())
    assert diff <= atom[2] + full[2], (diff, atom[2], full[2])
    assert atom[2] <= full[2]


def test_atom_power_declines_spread_arrays() -> None:
    n = 1 << 18
    spread = np.full(n, 1.0 / n)
    assert fft_power.atom_power(spread, 10, 1.0, n, 8.0, 1.0, 1e9) is None
    many = np.zeros(n)
    many[: fft_power.ATOM_MAX + 1] = 1.0 / (fft_power.ATOM_MAX + 1)
    assert fft_power.atom_power(many, 10, 1.0, n, 8.0, 1.0, 1e9) is None
    heavy_rest = np.zeros(n)
    heavy_rest[0], heavy_rest[1000:2000] = 1.0 - 1e-3, 1e-6
    assert fft_power.atom_power(heavy_rest, 10, 1.0, n, 8.0, 1.0, 1e9) is None
    one = np.zeros(n)
    one[0] = 1.0
    assert fft_power.atom_power(one, 10, 1.0, n, 8.0, 1e-30, 1e9) is None  # d > d_max
    assert fft_power.atom_power(one, 10, 1.0, n, 8.0, 1.0, 10.0) is None  # too many kept


def test_hermitian_weights_and_circular_window() -> None:
    np.testing.assert_array_equal(fft_power.hermitian_weights(6), [1.0, 2.0, 2.0, 1.0])
    np.testing.assert_array_equal(fft_power.hermitian_weights(7), [1.0, 2.0, 2.0, 2.0])
    a = np.arange(5.0)
    np.testing.assert_array_equal(fft_power.circular_window(a, 3, 4), [3.0, 4.0, 0.0, 1.0])
    np.testing.assert_array_equal(fft_power.circular_window(a, 6, 2), [1.0, 2.0])


def test_inverse_then_release_values_and_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inverse transform's values are scipy's; plans are released from RELEASE_LEN on."""
    import scipy.fft

    calls = []
    monkeypatch.setattr(fft_power.sfft, "release_fft_plans", lambda: calls.append(1))
    x = np.random.default_rng(0).random(1000)
    Y = scipy.fft.rfft(x)
    np.testing.assert_array_equal(fft_power.inverse_then_release(Y.copy(), 1000),
                                  scipy.fft.irfft(Y, 1000))
    assert calls == []
    monkeypatch.setattr(fft_power, "RELEASE_LEN", 1000)
    fft_power.inverse_then_release(Y.copy(), 1000)
    assert calls == [1]
