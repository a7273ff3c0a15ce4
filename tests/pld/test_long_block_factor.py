"""The second level's coarsening factor for long first-level blocks (issue 28, session 12):
32 (16 on the pessimistic side of a heavy-tailed step) where the blocks are at least 2000
steps, 8 below.  References: the closed-form profile of the T-fold Gaussian pair
(N(sqrt(T) s, 1) against N(0, 1); Balle & Wang 2018, Thm 8) on both sides of the switch,
and dp-accounting's PLD accountant on a grid row."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

import privamp.pld.compose as compose_mod
from privamp.pairs.mechanism_pairs import GaussianPair
from privamp.pld.compose import compose_two_level, heavy_tailed
from privamp.pld.discretise import discretise
from privamp.pld.grid import PLD


def gauss_delta(mu: float, eps: np.ndarray) -> np.ndarray:
    """Exact profile of N(mu, 1) against N(0, 1) (Balle & Wang 2018, Thm 8)."""
    return norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * norm.cdf(-mu / 2 - eps / mu)


def _factors(monkeypatch) -> list[int]:
    """Record every coarsening factor."""
    seen: list[int] = []
    orig = PLD.coarsen

    def spy(self, k):
        seen.append(int(k))
        return orig(self, k)

    monkeypatch.setattr(PLD, "coarsen", spy)
    return seen


S = 0.005


def _bracket(up: PLD, lo: PLD, T: int) -> None:
    eps = np.linspace(0.0, 6.0, 61)
    exact = gauss_delta(math.sqrt(T) * S, eps)
    assert np.all(up.delta(eps) >= exact - 1e-15)
    assert np.all(lo.delta(eps) <= exact + 1e-15)
    big = exact > 1e-8
    assert np.all((up.delta(eps) - lo.delta(eps))[big] <= 2e-3 * exact[big])


@pytest.mark.parametrize("T", [60_000, 64_000, 66_001])
def test_switch_point_contains_closed_form(T, monkeypatch):
    """Across the switch (blocks of T1 < 2000 steps: factor 8; from 2000: 32) both sides
    bracket the exact T-fold Gaussian profile."""
    p, o = discretise(GaussianPair(S), 4e-5)
    seen = _factors(monkeypatch)
    up, lo = compose_two_level(p, T), compose_two_level(o, T)
    t1 = compose_mod._first_level_length(T, max(1000, T // 32) if T < 64_000 else 2000)
    want = 32 if t1 >= 2000 else 8
    assert seen and seen[0] == want  # (then the remainder's: 8, and 4 to 32 h)
    assert (T % t1 == 0) == (len(seen) == 2)
    _bracket(up, lo, T)


def test_switch_points_cover_both_factors():
    """The parametrised T values above fall on both sides of the switch."""
    t1s = [compose_mod._first_level_length(T, max(1000, T // 32) if T < 64_000 else 2000)
           for T in (60_000, 64_000, 66_001)]
    assert min(t1s) < 2000 <= max(t1s)


def test_heavy_factor_contains_closed_form(monkeypatch):
    """The pessimistic side's factor 16 (forced: every step counted heavy-tailed) also
    brackets the exact profile."""
    monkeypatch.setattr(compose_mod, "_HEAVY_SD_IQR", 0.0)
    T = 200_000
    p, o = discretise(GaussianPair(0.003), 2e-5)
    seen = _factors(monkeypatch)
    up = compose_two_level(p, T)
    assert 16 in seen
    lo = compose_two_level(o, T)
    assert 32 in seen
    eps = np.linspace(0.0, 6.0, 61)
    exact = gauss_delta(math.sqrt(T) * 0.003, eps)
    assert np.all(up.delta(eps) >= exact - 1e-15)
    assert np.all(lo.delta(eps) <= exact + 1e-15)


def test_heavy_tailed():
    """A Gaussian bulk is not heavy-tailed; the same bulk with 1e-3 of its mass 1e4 steps
    away is (sd about sqrt(1e-3) 1e4 = 316 steps against an interquartile range of ~13)."""
    x = np.arange(-60, 61)
    bulk = norm.pdf(x / 10.0)
    assert not heavy_tailed(bulk)
    far = np.zeros(20_000)
    far[:121] = bulk / bulk.sum() * (1 - 1e-3)
    far[10_060] = 1e-3
    assert heavy_tailed(far)
    assert not heavy_tailed(np.zeros(5))


def test_grid_row_q1e3_sigma1_t1e5_against_dp_accounting():
    """A grid row on long blocks (T1 3125, factor 32): the certified upper bound at or
    below dp-accounting's estimate (h = 1e-4, connect-the-dots), the lower bound below."""
    from dp_accounting.pld import privacy_loss_distribution as dpl

    import privamp as pa

    q, sigma, steps = 1e-3, 1.0, 10**5
    d = dpl.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=1e-4,
                                    use_connect_dots=True)
    peer = float(d.self_compose(steps).get_epsilon_for_delta(1e-5))
    r = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=steps).epsilon(
        1e-5, accountant="pld")
    assert float(r.lower.value) <= float(r.upper.value) <= peer
