"""The Chernoff window of the power method is near the best Chernoff bound (issue 27: a bulk
at 0 followed by zeros and a sparse tail -- an optimistic PLD at a tiny sampling rate -- got
a window 14 times too long, 27.5M points and 2.1 GB at q 1e-6, sigma 0.05)."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from privamp.numerics.chernoff import blocked_log_masses, chernoff_k, chernoff_x


def _best_x(p: np.ndarray, T: int, c: float) -> float:
    """min over a dense lambda grid of (T log M(lam) + c) / lam, computed directly."""
    nz = np.nonzero(p)[0]
    lp = np.log(p[nz])
    lams = np.geomspace(5e-6, 5e-4, 120)
    k = np.array([logsumexp(lp + lam * nz) for lam in lams])
    return float(np.min((T * k + c) / lams))


def test_bulk_then_zeros_window_near_optimum():
    n = 300_000  # the optimum lambda lies near 4e-5
    rng = np.random.default_rng(0)
    p = np.zeros(n)
    p[0] = 1.0 - 1e-6
    tail = np.arange(100_000, 250_000)
    w = np.exp(-((tail - 150_000) / 20_000.0) ** 2) * (1 + 0.1 * rng.random(len(tail)))
    p[tail] = 1e-6 * w / w.sum()
    T, c = 1000, -math.log(2.5e-17)
    lp, ix = blocked_log_masses(p, "max")
    x = chernoff_x(*chernoff_k(lp, ix, T, c), T, c)
    best = _best_x(p, T, c)
    assert x is not None and 0.99 * best <= x <= 1.1 * best + 4096
