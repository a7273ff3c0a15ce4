"""The work a request asks for, as plain functions of plain data (run in the worker
processes of :mod:`privamp.serve.workers`): the interval of one run, one row of the
comparison, the epsilon-over-training curve, the calibrated noise.  Each takes the query's
fields (a dict) and returns a JSON-able dict; a bad input raises
:class:`~privamp.serve.fields.FieldError`.
"""

from __future__ import annotations

import math
from typing import Any

from ..accounting.calibration import calibrate
from ..errors import NotApplicable
from ..plotting import curve_steps, epsilon_over_training
from ..results import Bound, Guarantee
from .fields import FieldError, Query
from .runs import docs_page, run_for, sampler_scheme

__all__ = ["TASKS", "run_task", "bound_dict", "guarantee_dict", "under_report_factor"]


def bound_dict(b: Bound | None) -> dict[str, Any] | None:
    """A bound as JSON (value, kind, source, docs page of its paper)."""
    if b is None:
        return None
    return {"value": float(b.value), "kind": b.kind, "source": b.source,
            "docs": docs_page(b.source)}


def guarantee_dict(g: Guarantee) -> dict[str, Any]:
    """A guarantee as JSON: both sides (``None`` where absent) and the accountants that
    declined."""
    return {"upper": bound_dict(g.upper), "lower": bound_dict(g.lower),
            "declined": [[name, why] for name, why in g.declined]}


def under_report_factor(poisson_upper: float | None, lower: float | None) -> float | None:
    """How many times a run's certified lower bound exceeds the Poisson upper bound, rounded
    down to one decimal (``None`` when a side is missing or the factor is below 1)."""
    if poisson_upper is None or lower is None or poisson_upper <= 0:
        return None
    factor = math.floor(lower / poisson_upper * 10) / 10
    return factor if factor > 1 else None


def _interval(q: Query) -> dict[str, Any]:
    run = run_for(q)
    try:
        g = run.epsilon(q.delta)
    except NotApplicable as exc:
        raise FieldError("sampler", f"sampler: no accountant covers this run "
                         f"({' '.join(str(exc).split())})") from None
    return {"scheme": repr(run.scheme), "steps": run.steps, **guarantee_dict(g)}


def _row(q: Query, sampler: str) -> dict[str, Any]:
    try:
        run = run_for(q, sampler_scheme(sampler, q.batch_size, q.dataset_size))
        g = run.epsilon(q.delta)
    except (NotApplicable, ValueError) as exc:
        return {"sampler": sampler, "note": f"not available: {' '.join(str(exc).split())}"}
    return {"sampler": sampler, "scheme": repr(run.scheme), "steps": run.steps,
            **guarantee_dict(g)}


def _curve(q: Query) -> dict[str, Any]:
    run = run_for(q)
    steps = curve_steps(run, q.points)
    try:
        points = epsilon_over_training(run, q.delta, steps)
    except NotApplicable as exc:
        raise FieldError("sampler", f"sampler: {' '.join(str(exc).split())}") from None
    return {"steps": [k for k, _ in points],
            "upper": [None if g.upper is None else float(g.upper) for _, g in points],
            "lower": [None if g.lower is None else float(g.lower) for _, g in points]}


def _calibrate(q: Query) -> dict[str, Any]:
    if q.target_epsilon is None:
        raise FieldError("target_epsilon", "target_epsilon is needed to calibrate: a number "
                         "in (0, 1000]")
    run_for(q)  # the other fields, checked once
    try:
        b = calibrate(q.target_epsilon, q.delta, lambda s: run_for(q, sigma=s))
    except (NotApplicable, ValueError) as exc:
        raise FieldError("target_epsilon", f"target_epsilon: "
                         f"{' '.join(str(exc).split())}") from None
    return {"noise_multiplier": float(b.value), "kind": b.kind, "source": b.source,
            "target_epsilon": q.target_epsilon, "delta": q.delta}


#: task name -> function of (query, argument)
TASKS = {
    "interval": lambda q, arg: _interval(q),
    "row": _row,
    "curve": lambda q, arg: _curve(q),
    "calibrate": lambda q, arg: _calibrate(q),
}


def run_task(task: str, fields: dict[str, Any], arg: Any = None) -> dict[str, Any]:
    """Run task ``task`` on the query ``fields``.

    Returns:
        ``{"ok": result}`` or ``{"error": {"field": ..., "message": ...}}``.
    """
    try:
        return {"ok": TASKS[task](Query(**fields), arg)}
    except FieldError as exc:
        return {"error": {"field": exc.field, "message": exc.message}}
    except MemoryError:
        return {"error": {"field": "budget", "message": "the run needs more memory than the "
                          "server's per-request memory budget"}}
    except (ValueError, ArithmeticError, OverflowError) as exc:  # a refusal we did not name
        return {"error": {"field": "sampler", "message": ' '.join(str(exc).split())[:300]}}
