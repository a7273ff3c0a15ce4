"""pld.budget: the engine's allowances in one object, the same numbers the engines use."""

from __future__ import annotations

import dataclasses
import importlib

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
