"""The Balanced Iteration lattice's FFT roundoff charges (bis_lattice: ``factor``,
``_rfft_ld``, the inverse in ``SumLaw``) against pocketfft's proven bounds
(docs/fft_roundoff.md, sections 6 and 10), and measured on adversarial inputs.

Independent references: the proof's per-pass constants (the error interpreter of
tests/numerics/test_fft_roundoff_proof.py, loaded by path), the split's twiddle chain
recomputed here from the libm accuracy the proof assumes, scipy's long-double rfft (the
code the proof was read from and emulated bit for bit), and a full-length long-double
transform as the reference of the split one (its own proven error subtracted).
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.fft as sfft

from privamp.theorems.dong2025 import bis_lattice as bl

U64, ULD = 2.0**-53, 2.0**-64
_PROOF = Path(__file__).parents[2] / "numerics" / "test_fft_roundoff_proof.py"


def _proof():
    spec = importlib.util.spec_from_file_location("fft_roundoff_proof_for_bis", _PROOF)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


proof = _proof()
CONST = vars(bl)  # (module constants, read without importing private names)


def _sup_rate(u: float) -> float:
    """A bound on E2(N) / (u log2 N) for every 5-smooth N (both directions), as the proof's
    test argues: the largest per-log2 pass rate, the single radix-2 pass's excess paid by
    the DC-only pass (checked)."""
    top = 0.0
    for fwd in (True, False):
        t = proof.constant_table(fwd, u)
        rates = {r: math.sqrt(r) * max(t[(r, p)] for p in proof.POSITIONS[r]) / math.log2(r)
                 for r in (3, 4, 5)}
        extra = (max(math.sqrt(r) * t[(r, "dc")] for r in proof.POSITIONS)
                 + math.sqrt(2) * max(t[(2, p)] for p in proof.POSITIONS[2]))
        assert 1.001 * (extra + 2.001) <= max(rates.values()) * (math.log2(3) + 1.0)
        top = max(top, 1.001 * max(rates.values()))
    return top


def test_two_norm_rates_cover_the_proof() -> None:
    """_L2_RATE_LD / _L2_RATE_64 >= the proven 2-norm rates (the old 12 was below both)."""
    assert 12.0 < _sup_rate(ULD) <= CONST["_L2_RATE_LD"]
    assert 12.0 < _sup_rate(U64) <= CONST["_L2_RATE_64"]
    # at the lattice's lengths (powers of two up to 2^22) the per-length bound is smaller
    for u, rate in ((ULD, CONST["_L2_RATE_LD"]), (U64, CONST["_L2_RATE_64"])):
        tables = {fwd: proof.constant_table(fwd, u) for fwd in (True, False)}
        for e in range(1, 23):
            for fwd in (True, False):
                assert proof.proven_bound(2**e, fwd, u, tables[fwd], l2=True) <= rate * e


def _split_chain(libm_ulps: float = proof.LIBM_ULPS, atan_ulps: float = 2.0) -> float:
    """Per-coefficient error of _rfft_ld's combination, units of u_ld sum_r |F_r|."""
    s2g2 = math.sqrt(2.0) * 2.0 * ULD / (1.0 - 2.0 * ULD) / ULD  # complex product
    # 2 pi / n = 8 atanl(1) / n: atanl(1) within atan_ulps ulps of pi/4 (ulp 2^-64), the
    # product by j: one rounding; the angle <= pi
    arg = atan_ulps / (math.pi / 4) + 1.0
    tau = math.pi * arg + 2.0 * libm_ulps  # + cosl/sinl, each within 2 ulps <= 2 libm_ulps u
    w = [0.0, 2.0 * tau + s2g2]  # w^0 exact; w^1 = table entry * chunk start
    for _ in range(2, CONST["_SPLIT"]):
        w.append(w[-1] + w[1] + s2g2)  # w^r = w^(r-1) * w^1
    r_sums = CONST["_SPLIT"] - 1
    return max(w) + s2g2 + r_sums  # the product by F_r, then R - 1 complex sums (<= u each)


def test_split_units_cover_the_twiddle_chain() -> None:
    """_SPLIT_UNITS >= sqrt(R) * the chain (Cauchy-Schwarz and Parseval over k; R = 4:
    twice the chain); the old 16 Higham stages of 12 u_ld (192) were below it."""
    chain = _split_chain()
    assert chain == pytest.approx(111.0, abs=1.0)
    need = math.sqrt(CONST["_SPLIT"]) * chain * 1.01
    assert 192.0 < need <= CONST["_SPLIT_UNITS"]


def _full_norm(spec: np.ndarray, n: int) -> float:
    """2-norm over the full Hermitian spectrum of a half spectrum (n even)."""
    w = np.full(len(spec), 2.0)
    w[0] = w[-1] = 1.0
    return math.sqrt(float(np.dot(w, np.abs(spec.astype(np.clongdouble)) ** 2)))


def _charge(n: int, x: np.ndarray) -> float:
    """factor's l2 charge without its 1.01: ((rate log2 n + units) u_ld + 4.5 u) sqrt n l2."""
    l2 = math.sqrt(float(np.dot(x, x)))
    return ((CONST["_L2_RATE_LD"] * math.log2(n) + CONST["_SPLIT_UNITS"]) * ULD
            + (2.0 + CONST["_SUB_ROUNDING"]) * U64) * math.sqrt(n) * l2


def _adversarial(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "impulse":  # single twiddles: X_k = w^{jk}
        x = np.zeros(n)
        x[n // 2 - 1] = 1.0
    elif kind == "atom_tail":
        x = 1e-9 * rng.random(n)
        x[3] = 1.0
    elif kind == "comb":
        x = np.where(np.arange(n) % 4 == 1, 1.0, 0.0)
    else:  # a Gaussian-like cell law
        t = np.arange(n) - n / 3
        x = np.exp(-0.5 * (t / (n / 20)) ** 2)
    return x


@pytest.mark.parametrize("kind", ["impulse", "atom_tail", "comb", "bell"])
def test_split_transform_within_its_charge(kind: str) -> None:
    """_rfft_ld (split into 4 long-double sub-transforms, combined, rounded to complex128)
    against the full-length long-double rfft: the 2-norm error over the full spectrum stays
    within the charge (the reference's own proven error subtracted)."""
    rfft_ld = CONST["_rfft_ld"]
    rng = np.random.default_rng(3)
    for n in (256, 2**12, 2**15):
        x = _adversarial(kind, n, rng)
        got = rfft_ld(x)
        ref = sfft.rfft(x.astype(np.longdouble))
        err = _full_norm(got.astype(np.clongdouble) - ref, n)
        ref_err = CONST["_L2_RATE_LD"] * math.log2(n) * ULD * math.sqrt(n) * math.sqrt(
            float(np.dot(x, x)))
        assert err + ref_err <= _charge(n, x)
        assert err <= 0.2 * _charge(n, x)  # (informative: far from the worst case)


def test_factor_charge_matches_the_formula() -> None:
    """factor's returned a >= the charge recomputed here (n = 2^14, a BIS cell law), and the
    spectrum within it against the full-length long-double transform of the same cells."""
    n, cache = 2**14, {}
    spec, _, _, a = bl.factor(1.25, 0.0, 2e-3, n, cache)
    cells = CONST["_cell_masses"](1.25, 0.0, 2e-3, n)[0]
    assert a >= _charge(n, cells)
    ref = sfft.rfft(cells.astype(np.longdouble))
    assert _full_norm(spec.astype(np.clongdouble) - ref, n) <= a


def test_numpy_long_double_fft_is_scipys() -> None:
    """bis_lattice transforms with numpy.fft (numpy >= 2 ships pocketfft's C++ header, as
    scipy does): bit-identical to scipy's rfft in long double and irfft in float64 at the
    lattice's lengths and their quarter lengths, so the proof (read from and emulated
    against scipy) applies."""
    assert CONST["_fft"] is np.fft
    rng = np.random.default_rng(11)
    for e in range(2, 17):
        n = 2**e
        x = (rng.random(n) ** 8).astype(np.longdouble)
        a, b = np.fft.rfft(x), sfft.rfft(x)
        assert a.dtype == b.dtype == np.clongdouble
        assert np.array_equal(a.view(np.longdouble), b.view(np.longdouble))
        y = sfft.rfft(rng.random(n))
        assert np.array_equal(np.fft.irfft(y, n), sfft.irfft(y, n))
    for n in (6, 10, 12, 30, 45, 96, 1000, 3**7):  # other radices too
        x = (rng.random(n) ** 8).astype(np.longdouble)
        assert np.array_equal(np.fft.rfft(x).view(np.longdouble),
                              sfft.rfft(x).view(np.longdouble))
