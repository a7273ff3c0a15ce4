"""The Rényi floor's order-independent blocks kept on the PLD (session 12): the same floats
as a fresh PLD's at every set of orders, recomputed when the masses array or the slack
changes, and still below the grid pair's exact Rényi divergence (computed here directly by
log-sum-exp over every grid point)."""

from __future__ import annotations

import numpy as np

from privamp.pld.grid import PLD
from privamp.pld.moments import renyi_floor


def _pld(seed: int, n: int = 5000, slack: float = 1e-12) -> PLD:
    rng = np.random.default_rng(seed)
    m = np.exp(-0.5 * ((np.arange(n) - n / 3) / (n / 10)) ** 2) * rng.uniform(0.5, 1.0, n)
    return PLD(1e-3, -n // 4, m / m.sum() * (1 - 1e-9), 0.0, "optimistic", slack)


def _exact(p: PLD, alpha: np.ndarray) -> np.ndarray:
    """D_alpha of the grid pair, (1 / (alpha - 1)) log sum_i p_i e^{(alpha - 1) l_i}."""
    lo = (p.offset + np.arange(len(p.masses))) * p.h
    t = (alpha - 1.0)[:, None]
    e = t * lo[None, :] + np.log(p.masses)[None, :]
    top = e.max(axis=1)
    return (top + np.log(np.exp(e - top[:, None]).sum(axis=1))) / t[:, 0]


def test_kept_blocks_give_a_fresh_pld_s_floats() -> None:
    p = _pld(0)
    for alpha in (np.array([1.5, 2.0, 8.0]), np.linspace(1.01, 64.0, 200), np.array([3.0])):
        got = renyi_floor(p, alpha)
        fresh = renyi_floor(_pld(0), alpha)  # (a new object: nothing kept)
        assert np.array_equal(got, fresh)
        assert np.all(got <= _exact(p, alpha) * (1 + 1e-9) + 1e-12)
        assert np.all(got > 0)


def test_changed_masses_or_slack_recompute() -> None:
    p = _pld(1)
    alpha = np.array([2.0, 10.0])
    renyi_floor(p, alpha)
    q = _pld(2)
    p.masses = q.masses  # (another array: the kept blocks no longer apply)
    assert np.array_equal(renyi_floor(p, alpha), renyi_floor(_pld(2), alpha))
    p.slack = 1e-3  # (a larger top drop)
    assert np.array_equal(renyi_floor(p, alpha), renyi_floor(_pld(2, slack=1e-3), alpha))
