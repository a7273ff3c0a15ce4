""":func:`privamp.pld.tables.profile_at` in place (issue 28, session 11) against the form it
replaced (copied verbatim as the reference): the same bits on random masses and spacings,
including blocks chained over more than 30 in loss and single points."""

from __future__ import annotations

import numpy as np
import pytest

from privamp.pld.tables import profile_at


def reference_profile_at(m: np.ndarray, l: np.ndarray) -> np.ndarray:
    n = len(m)
    r = np.empty(n)
    carry, end = 0.0, n
    starts = np.searchsorted(l, np.arange(float(l[0]), float(l[-1]) + 30.0, 30.0))
    for b in starts[::-1]:
        b = int(b)
        if b >= end:
            continue
        seg = slice(b, end)
        d = l[seg] - l[b]
        inner = np.cumsum((m[seg] * np.exp(-d))[::-1])[::-1] * np.exp(d)
        if end < n:
            inner += carry * np.exp(-(l[end] - l[seg]))
        r[seg] = inner
        carry, end = float(r[b]), b
    inc = -np.expm1(-np.diff(l)) * r[1:]
    g = np.zeros(n)
    g[:-1] = np.cumsum(inc[::-1])[::-1]
    return g


@pytest.mark.parametrize("seed", range(16))
def test_same_bits(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 3, 10, 1000, 50_001]))
    span = float(rng.choice([1e-3, 5.0, 31.0, 200.0]))
    l = np.sort(rng.uniform(-span / 3, span, n))
    m = rng.exponential(1.0, n) * 10.0 ** rng.uniform(-30, 0, n)
    m[rng.random(n) < 0.2] = 0.0
    np.testing.assert_array_equal(profile_at(m, l), reference_profile_at(m, l))
