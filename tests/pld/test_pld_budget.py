"""pld.budget: the engine's allowances in one object, the same numbers the engines use."""

from __future__ import annotations

import dataclasses
import importlib
import math

import pytest

from privamp.pld import BUDGET, ErrorBudget, budget, compose, grid

discretise = importlib.import_module("privamp.pld.discretise")  # (the package exports the function)


def test_budget_values_are_the_engines_constants() -> None:
    # the values documented in privamp.pld.grid's docstring (1 +- 1e-12 per step, a
    # relative 1e-9 per query, truncation 1e-13 per self-composition, |loss| <= 700)
    assert BUDGET == ErrorBudget(1e-12, 1e-13, 1e-9, 700.0, 8, 5000)
    assert budget.REL_SAFETY == 1e-12 and budget.QUERY_REL == 1e-9
    # the engines read the budget's objects (no private copies)
    assert grid.QUERY_REL is budget.QUERY_REL and discretise.MAX_LOSS is budget.MAX_LOSS
    assert compose.TWO_LEVEL_MIN_T is budget.TWO_LEVEL_MIN_T


def test_budget_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        BUDGET.query_rel = 0.0  # type: ignore[misc]


def test_query_allowance_is_applied() -> None:
    """A PLD's delta is its raw profile raised by QUERY_REL (pessimistic) / lowered
    (optimistic): one atom of P-mass 0.5 at loss 1 has profile 0.5 (1 - e^{-1}) at eps 0."""
    import math

    import numpy as np

    raw = 0.5 * (1.0 - math.exp(-1.0))
    p = grid.PLD(1.0, 1, np.array([0.5]), 0.0, "pessimistic")
    o = grid.PLD(1.0, 1, np.array([0.5]), 0.0, "optimistic")
    assert float(p.delta(0.0)) == pytest.approx(raw * (1 + budget.QUERY_REL), rel=1e-15)
    assert float(o.delta(0.0)) == pytest.approx(raw * (1 - budget.QUERY_REL), rel=1e-15)


def test_grid_over_the_memory_budget_is_refused_before_allocation():
    """A step whose grid would exceed MEMORY_BUDGET is refused (NotApplicable naming h) with
    only the grid's losses allocated (8 bytes a point, not the ~450 the masses take)."""
    import tracemalloc

    from privamp.errors import NotApplicable
    from privamp.pairs.combinators import MixturePair
    from privamp.pairs.mechanism_pairs import GaussianPair
    from privamp.pld.budget import MEMORY_BUDGET, discretise_bytes
    from privamp.pld.discretise import discretise

    pair = MixturePair(GaussianPair(1.0), 0.01)
    lo, hi = pair.loss_range(1e-16)
    h = (hi - lo) / 3.5e6  # 3.5M points: ~1.5 GB estimated
    assert discretise_bytes(3.5e6, 3.5e6) > MEMORY_BUDGET
    tracemalloc.start()
    with pytest.raises(NotApplicable, match="h >= "):
        discretise(pair, h, 1e-16)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 64 * 2**20


def test_tiny_shift_at_tiny_delta_stays_within_budget():
    """Issue 27: Gaussian(4.4e226, sensitivity 1.3e-70) (shift 3e-297) under Poisson(0.0054),
    one step, delta(3e-297) took 1062 MB.  Truth: delta(eps) <= q TV(N(s, 1), N(0, 1)) =
    q erf(s / (2 sqrt 2)), about 6e-300 (closed form); the answer must lie above the truth
    and peak traced memory stay well under 1 GB."""
    import tracemalloc

    import privamp as pa

    run = pa.Training(pa.Gaussian(4.442779350439995e+226, sensitivity=1.3434462757726846e-70),
                      pa.Poisson(0.0054158120507610315), steps=1)
    tracemalloc.start()
    d = run.delta(3.0238870081171937e-297)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    s = 1.3434462757726846e-70 / 4.442779350439995e+226
    truth_max = 0.0054158120507610315 * s / math.sqrt(2 * math.pi)  # erf(x) <= 2x / sqrt(pi)
    assert d.upper.value >= 0.0 and d.lower.value <= truth_max * (1 + 1e-9)
    assert peak < 600 * 2**20
