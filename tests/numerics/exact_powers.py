"""Exact T-fold convolution powers of sparse rational laws: the references of the FFT power
tests (tests/numerics/test_fft_power_atoms.py, test_fft_split.py)."""

from __future__ import annotations

from fractions import Fraction


def sparse_power(p: dict[int, Fraction], T: int) -> dict[int, Fraction]:
    """The exact T-fold convolution of the law ``p`` (position -> mass), by repeated
    products over its support."""
    out = {0: Fraction(1)}
    for _ in range(T):
        nxt: dict[int, Fraction] = {}
        for i, a in out.items():
            for j, b in p.items():
                nxt[i + j] = nxt.get(i + j, Fraction(0)) + a * b
        out = nxt
    return out
