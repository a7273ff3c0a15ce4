"""The coarser lead step of short one-level runs (accountants/grid.py,
:func:`short_optimistic_step`, issue 28): the upper bound stays at or below dp-accounting's
PLD estimate (computed here, the independent reference), the interval within 1e-4 relative,
and the rule leaves the step alone where the range asks for too many bulk steps."""

from __future__ import annotations

import pytest
from dpa_peer import assert_within_dp_accounting

import privamp as pa
from privamp.accountants.grid import (
    OPTIMISTIC_BULK_STEPS,
    grid_plan,
    short_optimistic_step,
)
from privamp.accountants.poisson import poisson_pairs


def test_short_run_against_dp_accounting() -> None:
    """q 1e-4, sigma 0.5, T 10 (was 0.74 s on an 877k-point optimistic grid)."""
    q, sigma, T = 1e-4, 0.5, 10
    assert_within_dp_accounting(q, sigma, T, width=1e-4)


def test_rule() -> None:
    """span / 4e5 where that is within OPTIMISTIC_BULK_STEPS bulk steps, else h; never finer."""
    assert short_optimistic_step(1e-6, 4.0, 2e-6) == pytest.approx(1e-5)
    assert short_optimistic_step(1e-6, 4.0, 1e-5 / (OPTIMISTIC_BULK_STEPS + 1)) == 1e-6
    assert short_optimistic_step(2e-5, 4.0, 1e-5) == 2e-5


@pytest.mark.parametrize(("q", "T", "coarser"), [(1e-4, 10, True), (1e-4, 100, False),
                                                 (1e-5, 10, False)])
def test_where_it_applies(q: float, T: int, coarser: bool,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    """sigma 0.5: the remove direction's step is coarser only for the short run at q 1e-4
    (T 100 is not short; at q 1e-5 the range asks for ~10 bulk steps)."""
    import privamp.accountants.grid as grid
    pair = poisson_pairs(pa.Gaussian(0.5), q)[0]
    h = grid_plan(pair, T)[0]
    with monkeypatch.context() as m:
        m.setattr(grid, "OPTIMISTIC_SHORT_T", 0)
        h0 = grid_plan(pair, T)[0]
    assert (h > 2.0 * h0) if coarser else (h == h0)
