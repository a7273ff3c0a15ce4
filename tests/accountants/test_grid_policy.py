"""The short-run step policy of the automatic grid (accountants/grid.py, issue 28): on the
settings where privamp's certified upper bound sat above dp-accounting's PLD estimate, the
refined step brings it at or below that estimate (dp-accounting computed here, as the
independent reference); the policy's step stays in its documented range; the quartile search
matches the Gaussian pair's closed form."""

from __future__ import annotations

import math

import pytest
from dpa_peer import dp_accounting_epsilon
from scipy.stats import norm

import privamp as pa
from privamp.accountants.grid import (
    SECONDARY_COST,
    SHORT_RUN_MIN_STEP,
    SHORT_RUN_POINTS,
    SHORT_RUN_REFINE,
    grid_plan,
    loss_iqr,
    short_run_step,
)
from privamp.accountants.poisson import poisson_pairs
from privamp.pld.budget import MEMORY_BUDGET, TWO_LEVEL_MIN_T, discretise_bytes

DELTA = 1e-5

#: (q, sigma, T): the LOOSER rows of benchmarks/results/scan_session9.md that the policy
#: targets (privamp answered in <= 1/10 of dp-accounting's CPU time there)
LOOSER = [(0.001, 1.0, 100), (256 / 60000, 0.8, 100), (256 / 60000, 1.1, 100)]


@pytest.mark.parametrize("q, sigma, T", LOOSER)
def test_upper_at_or_below_dp_accounting(q: float, sigma: float, T: int) -> None:
    g = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T).epsilon(DELTA)
    assert g.upper is not None and g.lower is not None
    ref = dp_accounting_epsilon(q, sigma, T)
    assert g.lower.value <= g.upper.value <= ref
    assert "PLD" in g.upper.source  # (the PLD answered: no refusal, no fallback)
    # dp-accounting's estimate is not certified, but it lies inside the certified interval
    assert g.lower.value <= ref


@pytest.mark.parametrize("q, sigma, T", LOOSER)
def test_refined_step_in_range(q: float, sigma: float, T: int) -> None:
    lead, add = poisson_pairs(pa.Gaussian(sigma), q)
    h, width, _ = grid_plan(lead, T, short_run=True)
    h_long = grid_plan(lead, 10**4, short_run=True)[0]  # (a long run: not refined)
    assert grid_plan(lead, T)[0] >= SHORT_RUN_MIN_STEP  # (composition: grid_step, not refined)
    assert h_long >= SHORT_RUN_MIN_STEP  # these settings are the policy's (wide losses)
    assert h < SHORT_RUN_MIN_STEP
    assert width / h <= SHORT_RUN_POINTS * (1 + 1e-9)  # (within every memory budget)
    # the add direction keeps its coarse step (its profile lies far below)
    assert grid_plan(add, T, short_run=True)[0] >= SECONDARY_COST * h


def test_short_run_step_rule() -> None:
    fine = SHORT_RUN_MIN_STEP / 2
    assert short_run_step(fine, 10.0) == fine  # a fine step is kept
    h = 6e-5
    assert short_run_step(h, 40.0) == h  # a window already over the point target
    assert short_run_step(h, 1e-3) == pytest.approx(h / SHORT_RUN_REFINE)
    assert short_run_step(h, 15.0) == pytest.approx(15.0 / SHORT_RUN_POINTS)


@pytest.mark.parametrize("sigma", [0.3, 1.0, 4.0])
def test_loss_iqr_gaussian_closed_form(sigma: float) -> None:
    # Gaussian mechanism, sensitivity 1: the loss under P is N(1 / (2 s^2), 1 / s^2)
    iqr = 2 * norm.ppf(0.75) / sigma
    got = loss_iqr(pa.Gaussian(sigma).pair(1))
    assert got == pytest.approx(iqr, rel=1e-4)
    assert math.isfinite(got)


def test_refined_grids_within_memory_budget() -> None:
    """Wherever the policy refines (short runs, wide losses), the window holds at most
    SHORT_RUN_POINTS points (or the unrefined step's) and one step's grid fits the memory
    budget; long runs keep their step."""
    for q in (1e-3, 256 / 60000, 0.01, 0.05, 0.1):
        for sigma in (0.5, 0.8, 1.0, 2.0, 4.0):
            lead = poisson_pairs(pa.Gaussian(sigma), q)[0]
            lo, hi = lead.loss_range(1e-16)
            for T in (1, 10, 100, 1000, TWO_LEVEL_MIN_T - 1, TWO_LEVEL_MIN_T):
                h0, width, _ = grid_plan(lead, T)
                h = grid_plan(lead, T, short_run=True)[0]
                assert h0 / SHORT_RUN_REFINE * (1 - 1e-12) <= h <= h0
                assert width / h <= max(SHORT_RUN_POINTS, width / h0) * (1 + 1e-9)
                points = (hi - lo) / h + 3
                assert discretise_bytes(points, points) <= MEMORY_BUDGET
                if T >= TWO_LEVEL_MIN_T:
                    assert h == h0
