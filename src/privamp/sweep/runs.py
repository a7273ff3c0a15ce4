"""One configuration of a sweep: its canonical key, its training run, its row.

A configuration is a flat dict of plain values (strings, numbers, booleans, lists of numbers):
the task (``"epsilon"``, ``"delta"``, ``"calibrate"``), the accountant, the mechanism and its
parameter, the sampler and the keys it uses, ``steps`` or ``epochs``, the relation and the
targets.  Its key is its JSON with sorted keys, so two spellings of one configuration (an
explicit default, ``1`` for ``1.0``) are one configuration.

:func:`evaluate` runs in the Dask workers: it needs nothing but the configuration.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from typing import Any

from ..accounting.calibration import calibrate
from ..accounting.training import Training
from ..errors import NotApplicable
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.laplace import Laplace
from ..mechanisms.randomized_response import RandomizedResponse
from ..results import Guarantee
from ..sampling.registry import scheme_entry
from ..sampling.relations import AddRemove, HybridSubstitution, Substitution, ZeroOut

__all__ = [
    "MECHANISMS",
    "RELATIONS",
    "RESULT_COLUMNS",
    "build_run",
    "canonical_key",
    "evaluate",
    "evaluate_batch",
    "privamp_version",
    "result_columns",
    "sampler_keys",
]

#: mechanism name -> (class, the grid key of its parameter)
MECHANISMS = {"gaussian": (Gaussian, "sigma"), "laplace": (Laplace, "scale"),
              "randomized-response": (RandomizedResponse, "theta")}
#: relation name -> class
RELATIONS = {"add-remove": AddRemove, "substitution": Substitution, "zero-out": ZeroOut,
             "hybrid-substitution": HybridSubstitution}

#: the columns every row ends with, after the task's own (see :func:`result_columns`)
RESULT_COLUMNS = ("status", "reason", "seconds", "version")


def privamp_version() -> str:
    """privamp's version (read at call time: this package is imported by privamp's own
    ``__init__`` before the version is set)."""
    from .. import __version__

    return __version__


def result_columns(task: str, knob: str = "noise") -> tuple[str, ...]:
    """The result columns of a row of ``task`` (before :data:`RESULT_COLUMNS`)."""
    if task == "calibrate":
        return (knob, "kind", "source")
    return (f"{task}_upper", f"{task}_lower", "upper_source", "lower_source")


def canonical_key(config: Mapping[str, Any]) -> str:
    """The configuration as JSON with sorted keys and no spaces (its identity in the store)."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


def sampler_keys(sampler: str, values: Mapping[str, Any]) -> set[str]:
    """The keys of ``values`` that build the scheme ``sampler`` (Poisson: ``rate`` when
    given, else ``batch_size`` and ``dataset_size``)."""
    entry = scheme_entry(sampler)
    keys = {f.dest for f in entry.flags} & set(values)
    if entry.name == "poisson" and "rate" in keys:
        keys = {"rate"}
    return keys


def build_run(config: Mapping[str, Any], tuned: str | None = None,
              value: float | None = None) -> Training:
    """The :class:`~privamp.Training` of ``config``, with the key ``tuned`` (a calibration's
    knob) set to ``value``.

    Raises:
        ValueError: a value the mechanism, the scheme or the run refuses (named).
    """
    d = dict(config)
    if tuned is not None:
        d[tuned] = value
    cls, param = MECHANISMS[d["mechanism"]]
    if cls is RandomizedResponse:
        mech = cls(d[param])
    else:
        mech = cls(d[param], sensitivity=d.get("sensitivity", 1.0))
    scheme = scheme_entry(d["sampler"]).build(d)
    relation = RELATIONS[d.get("relation", "add-remove")](group=d.get("group", 1))
    return Training(mech, scheme, steps=d.get("steps"), epochs=d.get("epochs"),
                    relation=relation)


def _number(x: Any) -> float | None:
    return None if x is None else float(x.value)


def _guarantee(task: str, g: Guarantee) -> dict[str, Any]:
    return {f"{task}_upper": _number(g.upper), f"{task}_lower": _number(g.lower),
            "upper_source": None if g.upper is None else g.upper.source,
            "lower_source": None if g.lower is None else g.lower.source}


def evaluate(config: Mapping[str, Any]) -> dict[str, Any]:
    """The row of one configuration: the configuration, the task's columns
    (:func:`result_columns`), then ``status`` (``"answered"``, ``"refused"`` when an
    accountant declines or the target cannot be met, with the ``reason``, ``"failed"`` with
    the error), ``seconds`` and privamp's ``version``.  Never raises for a configuration."""
    task, knob = config["task"], config.get("knob", "noise")
    row: dict[str, Any] = dict(config)
    row.update(dict.fromkeys(result_columns(task, knob)))
    start = time.perf_counter()
    status, reason = "answered", ""
    try:
        acc = config.get("accountant", "best")
        if task == "epsilon":
            row.update(_guarantee(task, build_run(config).epsilon(config["delta"], acc)))
        elif task == "delta":
            row.update(_guarantee(task, build_run(config).delta(config["epsilon"], acc)))
        else:
            tuned = "sigma" if knob == "noise" else knob
            limit: dict[str, Any] = {"hi": float(config["dataset_size"])} if (
                knob == "batch_size" and "dataset_size" in config) else {}
            found = calibrate(config["epsilon"], config["delta"],
                              lambda v: build_run(config, tuned, v), accountant=acc, knob=knob,
                              **limit)
            # calibrate's result: the knob's value, its safe side and the bound's source
            value = float(found.value)
            row.update({knob: int(value) if knob in ("batch_size", "steps") else value,
                        "kind": found.kind, "source": found.source})
    except ValueError as exc:  # NotApplicable is a ValueError: the accountant declined
        status = "refused"
        reason = ("not applicable: " if isinstance(exc, NotApplicable) else "") + " ".join(
            str(exc).split())
    except Exception as exc:  # noqa: BLE001 - a sweep records a failure as a row
        status, reason = "failed", f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    seconds = time.perf_counter() - start
    row.update({"status": status, "reason": reason,
                "seconds": float(f"{seconds:.6g}") if math.isfinite(seconds) else None,
                "version": privamp_version()})
    return row


def evaluate_batch(configs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`evaluate` of each configuration (one Dask task)."""
    return [evaluate(c) for c in configs]
