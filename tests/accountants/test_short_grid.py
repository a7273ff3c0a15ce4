"""The short-run step rule of session 11 (accountants/short_grid.py, issue 28): short runs of
at least SHORT_RUN_COARSE_T steps refine their step only up to SHORT_RUN_MIN_POINTS
sqrt(T / SHORT_RUN_COARSE_T) window points.  On the 17-setting grid's T 1e3 rows (and the
nearest-to-the-line settings of the session-11 survey) privamp's certified upper bound stays at
or below dp-accounting's PLD estimate (computed here, the independent reference) and the
interval at most 1e-3 relative wide; the rule's steps stay in their documented range."""

from __future__ import annotations

import math

import pytest
from dpa_peer import assert_within_dp_accounting

import privamp as pa
from privamp.accountants.grid import grid_plan
from privamp.accountants.poisson import poisson_pairs
from privamp.accountants.short_grid import (
    SHORT_RUN_COARSE_T,
    SHORT_RUN_MIN_POINTS,
    SHORT_RUN_MIN_STEP,
    SHORT_RUN_POINTS,
    SHORT_RUN_REFINE,
    short_run_step,
)
from privamp.pld.budget import TWO_LEVEL_MIN_T

DELTA = 1e-5


def test_rule() -> None:
    h = 6e-5
    T = SHORT_RUN_COARSE_T
    assert short_run_step(SHORT_RUN_MIN_STEP / 2, 10.0, T) == SHORT_RUN_MIN_STEP / 2
    assert short_run_step(h, 10.0, T - 1) == pytest.approx(10.0 / SHORT_RUN_POINTS)
    assert short_run_step(h, 10.0, T) == h  # 1.7e5 points: not refined from T on
    assert short_run_step(h, 1.0, T) == pytest.approx(1.0 / SHORT_RUN_MIN_POINTS)
    assert short_run_step(h, 2.0, 4 * T) == pytest.approx(2.0 / (2 * SHORT_RUN_MIN_POINTS))
    assert short_run_step(h, 1e-3, T) == pytest.approx(h / SHORT_RUN_REFINE)


@pytest.mark.parametrize("q, sigma", [(1e-3, 0.8), (1e-3, 1.0), (1e-2, 0.8), (1e-2, 1.0)])
def test_grid_rows_unrefined(q: float, sigma: float) -> None:
    """The 17-setting grid's T 1e3 rows (benchmarks/run.py) keep the automatic step."""
    lead = poisson_pairs(pa.Gaussian(sigma), q)[0]
    assert grid_plan(lead, 1000, short_run=True)[0] == grid_plan(lead, 1000)[0]


@pytest.mark.slow  # (dp-accounting: ~1-5 s a call on a shared machine)
@pytest.mark.parametrize("q, sigma", [(1e-3, 0.8), (256 / 60000, 0.8), (1e-2, 0.8)])
def test_upper_at_or_below_dp_accounting(q: float, sigma: float) -> None:
    # (q 256/60000, sigma 0.8 and q 1e-2, sigma 0.8: the closest to dp-accounting's estimate
    # at T 1e3 in the survey of benchmarks/results/grid17_session11.md)
    assert_within_dp_accounting(q, sigma, 1000, 1e-3)


@pytest.mark.parametrize("q, sigma, T", [(1e-3, 2.0, 1000), (3e-3, 4.0, 4000),
                                         (1e-2, 4.0, 2000)])
def test_narrow_where_window_is_short(q: float, sigma: float, T: int) -> None:
    """Where the automatic step's window is short (the unrefined interval was 1.5e-3, 1.1e-3
    and 9.4e-4 relative wide), the refinement keeps the interval within 1e-3."""
    lead = poisson_pairs(pa.Gaussian(sigma), q)[0]
    h0, width, _ = grid_plan(lead, T)
    h = grid_plan(lead, T, short_run=True)[0]
    assert h < h0
    assert width / h >= min(SHORT_RUN_MIN_POINTS * math.sqrt(T / SHORT_RUN_COARSE_T),
                            SHORT_RUN_REFINE * width / h0) * (1 - 1e-9)
    r = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T).epsilon(DELTA)
    assert r.lower is not None
    up, lo = float(r.upper.value), float(r.lower.value)
    assert 0.0 < lo <= up and (up - lo) / up <= 1e-3


def test_long_runs_keep_their_step() -> None:
    lead = poisson_pairs(pa.Gaussian(1.0), 1e-2)[0]
    T = TWO_LEVEL_MIN_T
    assert grid_plan(lead, T, short_run=True)[0] == grid_plan(lead, T)[0]
