"""The streamed block sums of :func:`privamp.pld.moments.renyi_floor` (issue 28:
:mod:`privamp.pld.jensen_blocks`) against the copy-based form they replaced (copied here as
the reference): the same bits on random grids, slack from 0 to above the total mass, grid
lengths around the block and chunk sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privamp.pld import jensen_blocks, moments
from privamp.pld.grid import PLD


def reference_drop(masses: np.ndarray, amount: float) -> np.ndarray:
    """The whole-array top-mass removal (pre-issue-28)."""
    if amount <= 0:
        return masses.copy()
    above = np.cumsum(masses[::-1])[::-1] - masses
    return np.clip(masses - np.maximum(amount - above, 0.0), 0.0, None)


def reference_floor(pld: PLD, alpha: np.ndarray) -> np.ndarray:
    """renyi_floor as of session 10 (one padded copy of the masses, all orders at once)."""
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    if pld.inf_mass > 0:
        return np.full(a.shape, np.inf)
    n = len(pld.masses)
    k = max(1, math.ceil(n / 1024))
    mb = np.zeros(n + (-n) % k)
    mb[:n] = reference_drop(pld.masses, pld.slack)
    mb2 = mb.reshape(-1, k)
    blocks = mb2.sum(axis=1)
    keep = blocks > 0
    if not keep.any():
        return np.zeros(a.shape)
    index = (mb2 @ np.arange(k, dtype=float))[keep] / blocks[keep]
    lm = (pld.offset + k * np.flatnonzero(keep) + index) * pld.h
    lw = np.log(blocks[keep])
    t = (a - 1.0)[:, None]
    e = t * lm[None, :] + lw[None, :]
    top = e.max(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        out = (top[:, 0] + np.log(np.exp(e - top).sum(axis=1))) / t[:, 0]
    return np.maximum(out, 0.0)


def random_masses(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.exponential(1.0, n) * 10.0 ** rng.uniform(-30, 0, n)
    m[rng.random(n) < 0.3] = 0.0
    return m / max(float(m.sum()), 1e-300)


SIZES = (1, 5, 1023, 1024, 1025, 5000, 70001, 131072, 300007, 1 << 20)


@pytest.mark.parametrize("seed", range(12))
def test_block_sums_same_bits_as_the_padded_copy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(SIZES[seed % len(SIZES)])
    m = random_masses(rng, n)
    tot = float(m.sum())
    for k in sorted({1, max(1, math.ceil(n / 1024)), 7, 1 << 12}):
        for amount in (0.0, 1e-300, tot * 1e-12, tot * 1e-3, tot * 0.5, tot, 2 * tot + 1.0,
                       float(m[-1])):
            mb = np.zeros(n + (-n) % k)
            mb[:n] = reference_drop(m, amount)
            got_s, got_w = jensen_blocks.block_sums(m, amount, k)
            np.testing.assert_array_equal(got_s, mb.reshape(-1, k).sum(axis=1))
            np.testing.assert_array_equal(got_w, mb.reshape(-1, k) @ np.arange(k, dtype=float))


@pytest.mark.parametrize("seed", range(6))
def test_renyi_floor_same_bits_as_before(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n = int(rng.choice([3, 2000, 70001, 400003]))
    m = random_masses(rng, n)
    alpha = np.sort(1.0 + 10.0 ** rng.uniform(-9, 6, 300))
    for slack in (0.0, 1e-12, 1e-4, 0.3):
        pld = PLD(1e-3, -n // 3, m, 0.0, "optimistic", slack)
        np.testing.assert_array_equal(moments.renyi_floor(pld, alpha), reference_floor(pld, alpha))


def test_drop_window_matches_the_windowed_removal() -> None:
    rng = np.random.default_rng(7)
    m = random_masses(rng, 50000)
    assert jensen_blocks.drop_window(m, 0.0) == 0
    assert jensen_blocks.drop_window(m, 2.0) == m.size  # more than the total: the whole grid
    w = jensen_blocks.drop_window(m, 0.4)
    above = np.cumsum(m[::-1])[::-1] - m
    assert above[m.size - w] >= 0.4 and w in (1024, 4096, 16384, 50000)
    assert w == 1024 or above[m.size - w // 4] < 0.4
