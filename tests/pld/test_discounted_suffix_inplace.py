""":func:`privamp.pld.tables.discounted_suffix` done in place in chunks (issue 28) against
the whole-array form it replaced (copied here as the reference): the same bits; and its
traced peak is about two arrays of the grid's length (input and result), not four."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from privamp.pld import tables


def reference_suffix(m: np.ndarray, h: float, up: bool) -> np.ndarray:
    """The session-10 implementation, unchanged."""
    n = len(m)
    B = int(max(1, min(1024, math.floor(30.0 / h))))
    nb = -(-n // B)
    wrev, tailrev, decay = tables.suffix_weights(B, h)
    mm = np.zeros(nb * B)
    mm[:n] = m
    inner = np.cumsum(mm[::-1].reshape(nb, B) * wrev, axis=1)
    inner /= wrev
    starts = inner[:, -1]
    carry = np.zeros(nb)
    acc = 0.0
    for b in range(nb):
        carry[b] = acc
        acc = float(starts[b]) + decay * acc
    inner += carry[:, None] * tailrev
    r = inner.ravel()[::-1][:n]
    a = n * math.exp(30.0) * 5e-324
    return r + a if up else np.maximum(r - a, 0.0)


@pytest.mark.parametrize("seed", range(10))
def test_same_bits_as_the_whole_array_form(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 63, 1024, 1025, 65537, 200003]))
    h = float(rng.choice([1e-6, 1e-3, 0.05, 2.0, 40.0]))
    m = rng.exponential(1.0, n) * 10.0 ** rng.uniform(-320, 0, n)
    m[rng.random(n) < 0.2] = 0.0
    for up in (True, False):
        np.testing.assert_array_equal(tables.discounted_suffix(m, h, up),
                                      reference_suffix(m, h, up))


def test_peak_about_one_extra_array() -> None:
    n = 1 << 21
    m = np.random.default_rng(0).random(n)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        c0 = tracemalloc.get_traced_memory()[0]
        r = tables.discounted_suffix(m, 1e-4, False)
        peak = tracemalloc.get_traced_memory()[1] - c0
    finally:
        tracemalloc.stop()
    assert r.size == n
    assert peak < 1.5 * m.nbytes  # the result (+ chunk temporaries); was ~4 arrays
