"""Grid sizing at extremes (issue 27): the automatic grid of a discrete pair covers the T-fold
window its rare atoms open (a grid sized by the bulk's spread alone held 4.6M points, 1 GB,
for randomized response with theta 0.9999999)."""

from __future__ import annotations

import numpy as np
from scipy.stats import binom

import privamp as pa
from privamp.accountants.grid import grid_plan
from privamp.accountants.poisson import poisson_pairs
from privamp.pairs.combinators import SwappedPair


def _atoms(pair):
    """(losses, P-masses) of the add direction (Q, w P + (1 - w) Q) of randomized response,
    from its definition (independent of privamp's atom helpers)."""
    base = pair.base
    p, q = base.base.p, base.base.q
    w = base.w
    mix = w * p + (1 - w) * q
    keep = (mix > 0) & (q > 0)
    return np.log(q[keep] / mix[keep]), q[keep]


def test_rr_window_covers_rare_atoms():
    T = 1000
    pairs = poisson_pairs(pa.RandomizedResponse(0.9999999), 0.3)
    add = next(p for p in pairs if isinstance(p, SwappedPair))
    h, width, _ = grid_plan(add, T)
    l, p = _atoms(add)
    bulk = l[np.argmax(p)]
    rare = np.argmax(np.abs(l - bulk))
    # hits of the rarest-loss atom with mass >= 1e-12 in T steps: all of them in the window
    ks = np.arange(0, 20)
    k_max = int(ks[binom.pmf(ks, T, p[rare]) >= 1e-12].max())
    assert width >= k_max * abs(l[rare] - bulk)
    assert width / h <= 2.1e6  # ... and the grid still within its point budget
