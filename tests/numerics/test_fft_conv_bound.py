"""The FFT branch of ``convolve_nonneg`` (``_fft_conv``): its l1 roundoff charge against
pocketfft's proven 2-norm bound (docs/fft_roundoff.md, sections 6 and 10), and against exact
convolutions of adversarial inputs.

Independent references: the proof's per-pass constants (the error interpreter of
``test_fft_roundoff_proof``, recomputed here for each length), and exact convolutions (integer
multiples of a power of two whose direct sums stay below 2^53, so ``np.convolve`` is exact).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.fft as sfft
import test_fft_roundoff_proof as proof  # (same folder: pytest puts it on sys.path)

from privamp.numerics.fft import convolve_nonneg

U = 2.0**-53


def _norms(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    return (float(np.sum(x)), float(np.sum(y)), math.sqrt(float(np.dot(x, x))),
            math.sqrt(float(np.dot(y, y))))


def _fft_err(x: np.ndarray, y: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """convolve_nonneg forced onto its FFT branch (no direct part)."""
    z, err = convolve_nonneg(x, y, direct_budget=0.0)
    assert err > 0.0  # (the FFT branch ran)
    return z, err


def _required(n: int, x: np.ndarray, y: np.ndarray) -> float:
    """The l1 bound the proof gives for irfft(rfft(x) rfft(y))[:n] (module docstring of
    privamp.numerics.fft): sqrt(n) [E2 (l2x l1y + 2 l1x l2y) + 5 u l1x l2y], E2 the proven
    2-norm bound of the length used (forward and inverse, with the 1/N scaling)."""
    N = sfft.next_fast_len(n, real=True)
    tables = {fwd: proof.constant_table(fwd, U) for fwd in (True, False)}
    e2 = max(proof.proven_bound(N, fwd, U, tables[fwd], l2=True) for fwd in (True, False)) * U
    l1x, l1y, l2x, l2y = _norms(x, y)
    return math.sqrt(n) * (e2 * (l2x * l1y + 2.0 * l1x * l2y) + 5.0 * U * l1x * l2y)


def _charged_eta(n: int, x: np.ndarray, y: np.ndarray, err: float) -> float:
    """eta recovered from the charge err = 2 sqrt(n) (3 k eta + 3 u) max(l2x l1y, l1x l2y)."""
    N = sfft.next_fast_len(n, real=True)
    l1x, l1y, l2x, l2y = _norms(x, y)
    cross = max(l2x * l1y, l1x * l2y)
    return (err / (2.0 * math.sqrt(n) * cross) - 3.0 * U) / (3.0 * max(math.log2(N), 1.0))


def test_charged_eta_covers_the_proven_rate_for_every_length() -> None:
    """2 eta >= the proven 2-norm rate of every 5-smooth length (float64): the largest
    per-log2 rate sqrt(r) c_r / log2(r) of the radix 3, 4, 5 passes bounds E2 / log2 N, the
    single radix-2 pass's excess being paid by the DC-only pass (as in the proof's test)."""
    x = np.random.default_rng(0).random(3000)
    z, err = _fft_err(x)
    eta = _charged_eta(2 * len(x) - 1, x, x, err)
    assert eta == pytest.approx(12.0 * U, rel=1e-6)  # (the formula read back)
    for fwd in (True, False):
        t = proof.constant_table(fwd, U)
        rates = {r: math.sqrt(r) * max(t[(r, p)] for p in proof.POSITIONS[r]) / math.log2(r)
                 for r in (3, 4, 5)}
        top = max(rates.values())
        assert 1.001 * top <= 2.0 * eta / U, rates
        extra = (max(math.sqrt(r) * t[(r, "dc")] for r in proof.POSITIONS)
                 + math.sqrt(2) * max(t[(2, p)] for p in proof.POSITIONS[2]))
        assert 1.001 * (extra + 2.001) <= top * (math.log2(3) + 1.0)
    # the old eta = 6 u (12 u per log2 N) was below the proof
    assert 2.0 * 6.0 < proof.proven_c(U, l2=True) <= 2.0 * eta / U


@pytest.mark.parametrize("n", [3 * 2**10 - 1, 3**7, 2 * 3**8, 5**5 + 1, 4096])
def test_charge_covers_the_proof_at_each_length(n: int) -> None:
    """The returned l1 bound >= the proof's bound at the very length used (two shapes)."""
    rng = np.random.default_rng(n)
    for m in (n // 2, n // 5):
        x, y = rng.random(m) ** 6, rng.random(n + 1 - m)
        _, err = _fft_err(x, y)
        assert err >= _required(n, x, y) * 1.0001


def _exact_inputs(rng: np.random.Generator, kind: str, m: int) -> np.ndarray:
    """Nonnegative integers below 2^17 (scaled by 2^-17): exact products and sums."""
    if kind == "atom_tail":  # a PLD early in a composition: one big atom, a small tail
        v = rng.integers(0, 3, m)
        v[m // 3] = 2**17 - 1
    elif kind == "comb":  # energy on a few frequencies
        v = np.where(np.arange(m) % 3 == 0, 2**17 - 1, 0)
    elif kind == "heavy":
        v = np.floor((2**17 - 1) * rng.random(m) ** 12)
    else:  # flat
        v = np.full(m, 2**17 - 1)
    return np.asarray(v, dtype=float) * 2.0**-17


@pytest.mark.parametrize("kind", ["atom_tail", "comb", "heavy", "flat"])
def test_measured_error_within_the_charge(kind: str) -> None:
    """Against exact convolutions: the FFT branch's l1 error stays within its charge, and
    within the proof's bound (the charge's lower limit)."""
    rng = np.random.default_rng(7)
    worst = 0.0
    for m in (700, 2000, 3001):
        x, y = _exact_inputs(rng, kind, m), _exact_inputs(rng, kind, m + 17)
        exact = np.convolve(x, y)  # integers * 2^-34 below 2^53 * 2^-34: exact
        assert float(np.max(exact)) * 2.0**34 < 2.0**53
        z, err = _fft_err(x, y)
        got = float(np.sum(np.abs(z - exact)))
        assert got <= _required(len(exact), x, y) <= err
        worst = max(worst, got / err)
        zs, errs = _fft_err(x)  # the self-convolution path
        assert float(np.sum(np.abs(zs - np.convolve(x, x)))) <= errs
    assert worst < 0.5  # (informative: measured errors sit far below the worst case)
