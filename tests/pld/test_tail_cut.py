""":func:`privamp.pld.tail_cut.tail_cut` against the full prefix sums it replaced in
:func:`privamp.pld.grid.truncated` (issue 28): the same cut index and prefix mass, bit for
bit, for short and long tails (cuts inside the first block, across blocks, never), ties with
tau, zeros, negative and NaN entries, reversed views, and the empty array."""

from __future__ import annotations

import numpy as np
import pytest

from privamp.pld.tail_cut import tail_cut


def reference(z: np.ndarray, tau: float) -> tuple[int, float]:
    cs = np.cumsum(z)
    i = int(np.searchsorted(cs, tau, side="right"))
    return i, float(cs[i - 1]) if i > 0 else 0.0


def _arrays(rng: np.random.Generator):
    for n in (1, 2, 1023, 1024, 1025, 5000, 30000):
        x = np.linspace(-30, 30, n)
        yield np.exp(-0.5 * x * x) * rng.uniform(0.5, 1.5, n)  # Gaussian tails
        z = np.exp(rng.normal(size=n) * 30 - 60)
        z[rng.random(n) < 0.3] = 0.0
        yield z
        yield np.zeros(n)
        w = rng.random(n)
        w[n // 2] = -1e-20  # a negative entry: the full prefix sums
        yield w
        v = rng.random(n)
        v[n - 1] = np.nan
        yield v


@pytest.mark.parametrize("seed", [0, 1])
def test_tail_cut_bit_identical(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for z in _arrays(rng):
        cs = np.cumsum(z)
        taus = [0.0, 1e-300, 3.5e-18, 1e-9, 0.5, 1e300]
        taus += [float(cs[j]) for j in rng.integers(0, len(z), 3)]  # ties with tau
        for tau in taus:
            for arr in (z, z[::-1]):
                want = reference(arr, tau)
                # (session 12: the caller may pass z.min() >= 0 it computed for both ends)
                for got in (tail_cut(arr, tau), tail_cut(arr, tau, bool(arr.min() >= 0.0))):
                    assert got[0] == want[0]
                    assert got[1] == want[1] or (np.isnan(got[1]) and np.isnan(want[1]))
    assert tail_cut(np.zeros(0), 1e-9) == (0, 0.0)
