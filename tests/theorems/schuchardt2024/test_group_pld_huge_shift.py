"""Groups at huge shifts (issue 27: K Delta / sigma > 60 and K^2 Delta / sigma > 250 answered
only by the Rényi conversions, 1000x loose).  The group PLD accountant now takes K Delta /
sigma up to 100 (declining at query time where its coarse grid cannot certify), and the
witness keeps its own pair there."""

from __future__ import annotations

import warnings

import mpmath as mp

import privamp as pa
from privamp.theorems.schuchardt2024.group_pld import MAX_GROUP_SHIFT, WITNESS_GROUP_SHIFT


def test_huge_group_shift_interval_is_tight():
    """sigma 0.125, K = 8 (K s = 64), q = 0.01, 1000 steps, delta 1e-5: before, upper 4.3e6
    (RDP, mironov-group); after, the group PLD's upper, within 5% of the certified lower
    bound, and below the unsampled group bound (one Gaussian at shift K s sqrt(T), closed
    form in mpmath: every step releases the group's sum at most)."""
    assert WITNESS_GROUP_SHIFT < 64 <= MAX_GROUP_SHIFT
    run = pa.Training(pa.Gaussian(0.125), pa.Poisson(0.01), steps=1000,
                      relation=pa.AddRemove(group=8))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # pld/grid.py coarsening (reported)
        g = run.epsilon(1e-5)
    lo, up = float(g.lower.value), float(g.upper.value)
    assert 0 < lo <= up <= 1.05 * lo
    mu = mp.mpf(64) * mp.sqrt(1000)
    unsampled = mu * mu / 2 + mu * mp.sqrt(2 * mp.log(1 / mp.mpf(1e-5)))  # > the exact eps
    assert up < float(unsampled)


def test_witness_kept_past_the_witness_shift():
    """K s = 80 (sigma 0.1, K = 8, q = 0.01, 100 steps): the coarse group PLD declines at
    delta 1e-5; the lower bound is still the witness's (at least the threshold test's), below
    the upper bound."""
    run = pa.Training(pa.Gaussian(0.1), pa.Poisson(0.01), steps=100,
                      relation=pa.AddRemove(group=8))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g = run.epsilon(1e-5)
        w = run.epsilon(1e-5, accountant="group-witness")
    assert w.lower is not None and 0 < float(w.lower.value) <= float(g.lower.value)
    assert float(g.lower.value) <= float(g.upper.value)
