"""The long-run step of heavy-tailed small-rate Gaussian directions (accountants/grid.py,
:func:`long_run_step`, issue 28): the coarser step keeps the certified upper bound at or below
dp-accounting's PLD estimate (computed here, the independent reference) and the interval
within 1e-3 relative; the rule only coarsens, only for heavy tails in long runs, and never
past ``LONG_MAX_STEP``."""

from __future__ import annotations

import math

import pytest
from dpa_peer import assert_within_dp_accounting
from scipy.stats import norm

import privamp as pa
import privamp.accountants.grid as grid
from privamp.accountants.grid import (
    LONG_HEAVY,
    LONG_MAX_STEP,
    LONG_SD_POINTS,
    grid_plan,
    long_run_step,
)
from privamp.accountants.poisson import poisson_pairs
from privamp.pld.budget import TWO_LEVEL_MIN_T


def test_heavy_long_run_against_dp_accounting() -> None:
    """q 1e-4, sigma 0.5, T 1e6 (was 3.1 s on 5M-point windows): upper at or below
    dp-accounting's estimate, relative width <= 1e-3."""
    q, sigma, T = 1e-4, 0.5, 10**6
    assert_within_dp_accounting(q, sigma, T, width=1e-3)


def test_step_rule() -> None:
    """sqrt(T) sd / LONG_SD_POINTS, capped at LONG_MAX_STEP."""
    assert long_run_step(1e-4, 10**6) == pytest.approx(1e-4 * 1e3 / LONG_SD_POINTS)
    assert long_run_step(1.0, 10**6) == LONG_MAX_STEP
    assert long_run_step(0.0, 10**6) == 0.0


@pytest.mark.parametrize(("q", "sigma", "T", "coarsened"), [
    (1e-4, 0.5, 10**6, True),  # heavy tail (sd ~ 14 interquartile ranges), two levels
    (1e-4, 1.0, 10**6, False),  # sd ~ 1.5 interquartile ranges: the automatic step
    (1e-4, 0.5, 10**3, False),  # short run: one level
])
def test_applies_only_to_heavy_long_runs(q: float, sigma: float, T: int, coarsened: bool,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The remove direction's step: coarser than the bulk's step (interquartile range / 15,
    computed from the Gaussian pair's closed form) where the rule applies, never coarser than
    LONG_MAX_STEP because of it; elsewhere the step without the rule."""
    pair = poisson_pairs(pa.Gaussian(sigma), q)[0]
    h = grid_plan(pair, T)[0]
    with monkeypatch.context() as m:
        m.setattr(grid, "LONG_SD_POINTS", math.inf)
        h_without = grid_plan(pair, T)[0]
    s = 1.0 / sigma  # the loss of N(s,1) mix vs N(0,1) is increasing in x: quartiles map
    def loss(x: float) -> float:
        return math.log1p(q * math.expm1(s * x - s * s / 2))

    def cdf(x: float) -> float:  # P = q N(s, 1) + (1 - q) N(0, 1)
        return q * norm.cdf(x - s) + (1 - q) * norm.cdf(x)

    def quantile(p: float) -> float:
        a, b = -40.0, 40.0
        for _ in range(200):
            m = 0.5 * (a + b)
            a, b = (m, b) if cdf(m) < p else (a, m)
        return 0.5 * (a + b)

    bulk = (loss(quantile(0.75)) - loss(quantile(0.25))) / 15.0
    assert T >= TWO_LEVEL_MIN_T or not coarsened
    if coarsened:
        assert h > 2.0 * bulk
        assert h <= LONG_MAX_STEP * (1 + 1e-12)
        assert h_without < 0.5 * h
    else:
        assert h == h_without
    assert LONG_HEAVY > 1.0
