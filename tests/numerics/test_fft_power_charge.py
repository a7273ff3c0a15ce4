"""The total roundoff charge of the Fourier-domain power (``self_convolve_power``: forward
transform, pointwise power, casts, inverse, the split radix-2 step, the atom path, the window),
docs/fft_roundoff.md section 12, checked two ways.

1. The charges against what the derivation needs, computed from the proof's per-pass
   constants (the error interpreter of ``test_fft_roundoff_proof``, reused): the forward
   charge ``fft_split.forward_units`` and the inverse's ``fft_power.inverse_error`` (entry
   and l2 routes) for every 5-smooth length up to 2^25, split lengths included; the d that
   ``self_convolve_power`` and ``atom_power`` actually pass to ``power_terms``.
2. The measured error of ``self_convolve_power`` (long-double path, split transforms, atom
   path) on adversarial inputs against the exact T-fold convolution (integers, by Kronecker
   substitution), within the certified bound.
"""

from __future__ import annotations

import importlib
import math
from fractions import Fraction

import numpy as np
import pytest
import test_fft_roundoff_proof as proof  # (same folder: pytest puts it on sys.path)

from privamp.numerics import fft_power, fft_split
from privamp.numerics.fft import self_convolve_power

fft_mod = importlib.import_module("privamp.numerics.fft")
U64, ULD = proof.U64, proof.ULD
C = fft_mod._FFT_C
S2G2 = math.sqrt(2.0) * 2.0 / (1.0 - 2.0 * U64)  # complex product, units of u (Lemma 3.5)


def _split_twiddle(u: float) -> float:
    """|t^ - t| / u of fft_split's twiddles hi[k // B] lo[k % B] under the proof's libm
    assumption (cosl / sinl / atanl within LIBM_ULPS ulps; docs section 12): the angle
    8 atanl(1) / N * k within a = LIBM_ULPS / (pi/4) + 2 u_ld relative; a hi entry (angle
    <= pi/2) within (pi/2) a + 2 LIBM_ULPS u_ld, a lo entry (angle < 0.01, cos in [0.5, 1):
    ulp = u_ld) within 0.01 a + 1.02 LIBM_ULPS; their product; float64: each table rounded
    to complex128 (u) and the product in complex128."""
    ulps = proof.LIBM_ULPS
    a = ulps / (math.pi / 4) + 2.0
    hi, lo = (math.pi / 2) * a + 2 * ulps, 0.01 * a + 1.02 * ulps
    t_ld = hi + lo + hi * lo * ULD + S2G2 * (1 + hi * ULD) * (1 + lo * ULD)
    if u == ULD:
        return t_ld
    e = t_ld * ULD / U64 + 1.0  # (one table entry, rounded to complex128)
    return 2 * e + S2G2 * (1 + e * U64) ** 2


def _split_forward_step(u: float) -> float:
    """X_k = E_k + t^ O_k: twiddle, product, sum (units of u ||x||_1, first order + 1%)."""
    return 1.01 * (_split_twiddle(u) + S2G2 + 1.0)


def _split_inverse_step(l2: bool) -> float:
    """E' = (a + b) / 2, O' = ((a - b) / 2) t'^ (float64): per coefficient within s (|Y_k| +
    |Y_{M-k}|) / 2, s = 1 + tau + sqrt(2) gamma_2; per entry s u sum|Y| / N, in l2
    sqrt(2) s u ||Y||_2 / sqrt(N) (fft_split's module docstring), + 1%."""
    s = 1.01 * (1.0 + _split_twiddle(U64) + S2G2)
    return math.sqrt(2.0) * s if l2 else s


def _proven(n: int, forward: bool, u: float, l2: bool = False) -> float:
    return proof.proven_bound(n, forward, u, proof.constant_table(forward, u), l2)


def _inverse_units(N: int) -> tuple[float, float]:
    """(entry, l2) per-u constants of inverse_error, read through its public interface:
    coefficients all in ``extra_y`` (no errors), the route picked by the sums."""
    z = np.zeros(0)
    entry = fft_power.inverse_error(z, z, z, N, 1, C, extra_y=(1.0, 1.0)) * N
    l2 = fft_power.inverse_error(z, z, z, N, N, C, extra_y=(float(N) ** 3, 1.0))
    return entry / U64 / (1 + 1e-6), l2 / U64 / (1 + 1e-6)


LENGTHS = [n for n in proof.smooth_lengths(proof.MAX_LEN) if n >= 2]


@pytest.mark.parametrize("dtype", [np.float64, np.longdouble], ids=["float64", "longdouble"])
def test_forward_charge_covers_the_proof(dtype) -> None:
    """forward_units(N, dtype, C) >= E(N) (pocketfft, proven) for every 5-smooth N <= 2^25,
    and for split lengths >= E(N / 2) + the radix-2 step (its twiddles recomputed); the
    old 4 C is not needed: C alone covers the proven constant."""
    u = U64 if dtype is np.float64 else ULD
    worst = 0.0
    for N in LENGTHS:
        got = fft_split.forward_units(N, dtype, C)
        need = _proven(N, True, u)
        if fft_split.splits(N, dtype):
            need = max(need, _proven(N // 2, True, u) + _split_forward_step(u))
        assert need <= got, (N, need, got)
        worst = max(worst, need / got)
    assert 0.5 < worst <= 1.0, worst  # (the charge is not vacuous either)
    assert fft_split.split_constant(dtype) >= _split_forward_step(u)


def test_inverse_charge_covers_the_proof() -> None:
    """inverse_error's own-roundoff units: entry route >= E_inv(N) (with the 1/N scaling), l2
    route >= the proven 2-norm E2_inv(N), for every 5-smooth N <= 2^25; split lengths also
    >= the half-length bound + the radix-2 step.  No factor 2 needed."""
    for N in LENGTHS:
        entry, l2 = _inverse_units(N)
        need_e, need_2 = _proven(N, False, U64), _proven(N, False, U64, l2=True)
        if fft_power.splits_inverse(N):
            need_e = max(need_e, _proven(N // 2, False, U64) + _split_inverse_step(False))
            need_2 = max(need_2, _proven(N // 2, False, U64, True) + _split_inverse_step(True))
        assert need_e <= entry and need_2 <= l2, (N, need_e, entry, need_2, l2)
    assert fft_split.split_inverse_constant() >= _split_inverse_step(False)
    assert fft_split.split_inverse_constant(l2=True) >= _split_inverse_step(True)
    # the exact inverse maps coefficient errors with weight 1/N per entry, ||E||_2 / sqrt(N)
    z = np.zeros(0)
    assert fft_power.inverse_error(z, z, z, 64, 1, C, extra=(1.0, 1.0)) >= 1.0 / 64
    assert fft_power.inverse_error(z, z, z, 64, 64, C, extra=(1e9, 1.0)) >= 1.0


def _spy_d(monkeypatch: pytest.MonkeyPatch, module) -> list[float]:
    seen: list[float] = []
    orig = module.power_terms

    def spy(Xk, b, lb, pw, T, d):
        seen.append(float(d))
        return orig(Xk, b, lb, pw, T, d)

    monkeypatch.setattr(module, "power_terms", spy)
    return seen


@pytest.mark.parametrize("split", [False, True])
def test_long_double_path_passes_the_proven_d(split: bool,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The d self_convolve_power hands to power_terms covers the proven forward bound of the
    transform it ran (long double; split: half-length + step) times ||p||_1."""
    if split:
        monkeypatch.setattr(fft_split, "SPLIT_MIN_LEN", 1 << 6)
    seen = _spy_d(monkeypatch, fft_mod)
    p = np.random.default_rng(3).random(300) ** 4
    res = self_convolve_power(p, 5, 1e-30)
    assert res is not None and seen
    N = fft_split.split_len(max(len(res[1]), len(p)), np.longdouble)
    assert fft_split.splits(N, np.longdouble) == split
    need = _proven(N, True, ULD)
    if split:
        need = max(need, _proven(N // 2, True, ULD) + _split_forward_step(ULD))
    assert min(seen) >= need * ULD * math.fsum(p), (min(seen), need)


def test_atom_path_passes_the_proven_d(monkeypatch: pytest.MonkeyPatch) -> None:
    """atom_power's d covers the atoms' long-double terms (angle, cosl / sinl, product,
    additions; docstring of atom_power, recomputed under the 2-ulp convention) and the
    float64 transform of the rest at the proven constant."""
    monkeypatch.setattr(fft_mod, "ATOM_MIN_LEN", 64)
    seen = _spy_d(monkeypatch, fft_power)
    p = np.zeros(200)
    p[[0, 7, 150]] = [0.6, 0.3, 0.1 - 1e-7]
    p[20:120] = 1e-9
    res = self_convolve_power(p, 3, 1e-30)
    assert res is not None and seen
    N = fft_split.split_len(max(len(res[1]), len(p)))
    a = proof.LIBM_ULPS / (math.pi / 4) + 2.0  # angle, relative (u_ld)
    comp = 2 * math.pi * a + 2 * proof.LIBM_ULPS + 1.0  # a component of p_j e^{-i phi}
    atoms = 3
    need = ((math.sqrt(2) * comp + 2 * (atoms + 1)) * ULD * math.fsum(p)
            + _proven(N, True, U64) * U64 * math.fsum(p[20:120]))
    assert min(seen) >= need, (min(seen), need)


# ---------------------------------------------------------------- measured against exact
def _exact_power(k: np.ndarray, T: int) -> list[int]:
    """The coefficients of (sum k_i z^i)^T exactly (nonnegative integers, Kronecker
    substitution: one big-integer power)."""
    ks = [int(v) for v in k]
    nb = (T * max(sum(ks), 1).bit_length()) // 8 + 1  # bytes a slot (> the largest value)
    packed = sum(v << (8 * nb * i) for i, v in enumerate(ks)) ** T
    m = T * (len(ks) - 1) + 1
    raw = packed.to_bytes(nb * m, "little")
    return [int.from_bytes(raw[nb * i : nb * (i + 1)], "little") for i in range(m)]


def _exact_l1_deviation(z: np.ndarray, exact: list[int], e: int) -> float:
    """sum_i |z_i - exact_i / 2^e| exactly (integers over the common denominator 2^D)."""
    D = max(e, 1074)
    tot = 0
    for a, v in zip(z.tolist(), exact, strict=True):
        num, den = float(a).as_integer_ratio()  # (den a power of 2, <= 2^1074)
        tot += abs((num << (D - den.bit_length() + 1)) - (v << (D - e)))
    return float(Fraction(tot, 1 << D))


def _adversarial(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Integer masses (<= 2^40): two equal end atoms (|X_k| = ||p||_1 at many k), an atom
    with a tiny tail, geometric, a comb, uniform, a discretised Gaussian."""
    i = np.arange(n)
    two = np.zeros(n, dtype=np.int64)
    two[[0, n - 1]] = 1 << 39
    tail = np.full(n, 3, dtype=np.int64)
    tail[n // 3] = 1 << 40
    comb = np.where(i % 7 == 0, 1 << 30, 0).astype(np.int64)
    return {"two atoms": two, "atom + tail": tail,
            "geometric": np.floor(2.0**40 * 0.8**i).astype(np.int64),
            "comb": comb, "uniform": rng.integers(0, 1 << 40, n),
            "gauss": np.floor(2.0**40 * np.exp(-0.5 * ((i - n / 2) / (n / 10)) ** 2)
                              ).astype(np.int64)}


@pytest.mark.parametrize("path", ["long double", "split", "atoms"])
def test_measured_error_within_the_new_bound(path: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """self_convolve_power's window against the exact T-fold convolution of the same float64
    input: sum |z - x| <= err + tau_lo + tau_hi (tau = 1e-30, far below the errors); and the
    bound is below the old charge's (forward 4 C, inverse x 2) by construction of the test
    input's scale."""
    if path == "split":
        monkeypatch.setattr(fft_split, "SPLIT_MIN_LEN", 1 << 6)
    if path == "atoms":
        monkeypatch.setattr(fft_mod, "ATOM_MIN_LEN", 64)
    rng = np.random.default_rng(11)
    worst = 0.0
    for n, T in ((17, 2), (60, 7), (120, 30)):
        for name, k in _adversarial(n, rng).items():
            if path == "atoms" and name not in ("two atoms", "atom + tail"):
                continue
            bits = int(k.sum()).bit_length()  # p = k / 2^bits: sum p <= 1, exact in float64
            p = k.astype(float) * 2.0**-bits
            res = self_convolve_power(p, T, 1e-30)
            assert res is not None, (n, T, name)
            start, z, err, tau_lo, tau_hi = res
            exact = _exact_power(k, T)[start : start + len(z)]
            exact += [0] * (len(z) - len(exact))
            dev = _exact_l1_deviation(z, exact, bits * T)
            assert dev <= err + tau_lo + tau_hi, (path, n, T, name, dev, err)
            worst = max(worst, dev / err)
    print(path, "largest measured / bound:", worst)
    assert 0.0 < worst <= 1.0, worst
