"""The windowed top-mass removal of :func:`privamp.pld.moments.renyi_floor` (issue 28)
against the whole-array form it replaced (copied here as the reference): the same bits on
random mass vectors, amounts from 0 to above the total."""

from __future__ import annotations

import numpy as np
import pytest

from privamp.pld import moments


def reference_drop(masses: np.ndarray, amount: float) -> np.ndarray:
    """The pre-issue-28 implementation, unchanged."""
    if amount <= 0:
        return masses
    above = np.cumsum(masses[::-1])[::-1] - masses
    return np.clip(masses - np.maximum(amount - above, 0.0), 0.0, None)


@pytest.mark.parametrize("seed", range(30))
def test_same_bits_as_whole_array_removal(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 5, 1023, 1024, 1025, 5000, 70000]))
    m = rng.exponential(1.0, n) * 10.0 ** rng.uniform(-30, 0, n)
    m[rng.random(n) < 0.3] = 0.0
    tot = float(m.sum())
    for amount in (0.0, 1e-300, tot * 1e-12, tot * 1e-3, tot * 0.5, tot, 2 * tot + 1.0,
                   float(m[-1]) if n else 0.0):
        got = moments._drop_top_mass(m, amount)
        np.testing.assert_array_equal(got, reference_drop(m, amount))


@pytest.mark.parametrize("seed", range(8))
def test_same_bits_into_out(seed: int) -> None:
    """Session 11: the window's sums written into ``out`` (no temporary) give the same bits,
    and ``masses`` is left unchanged."""
    rng = np.random.default_rng(50 + seed)
    n = int(rng.choice([1, 1024, 1025, 70000]))
    m = rng.exponential(1.0, n) * 10.0 ** rng.uniform(-30, 0, n)
    keep = m.copy()
    tot = float(m.sum())
    for amount in (0.0, tot * 1e-12, tot * 0.5, 2 * tot + 1.0):
        out = np.full(n + 3, np.nan)
        got = moments._drop_top_mass(m, amount, out=out[:n])
        np.testing.assert_array_equal(got, reference_drop(m, amount))
        np.testing.assert_array_equal(m, keep)
