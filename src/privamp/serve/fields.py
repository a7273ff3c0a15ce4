"""The calculator's inputs: one table of fields (name, kind, valid range, default, help), the
parser that turns a query string or a JSON object into a :class:`Query` (every bad value: a
:class:`FieldError` naming the field and its valid range), and the query string of a
:class:`Query` (the shareable URL).

Nothing here evaluates user text: numbers are read by a strict pattern and ``float``/``int``,
choices by dictionary lookup.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any, cast
from urllib.parse import urlencode

__all__ = [
    "Field",
    "FIELDS",
    "FIELD_NAMES",
    "SAMPLERS",
    "FieldError",
    "Query",
    "parse_query",
    "query_string",
    "MAX_TEXT",
]

#: the longest text accepted in one field
MAX_TEXT = 40

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d{1,3})?")

#: the samplers offered directly (the registry names of :mod:`privamp.sampling.registry`)
SAMPLERS = {
    "poisson": "Poisson subsampling (rate = batch / dataset)",
    "without-replacement": "fixed-size batches, a fresh random batch each step",
    "with-replacement": "batches drawn with replacement",
    "shuffle": "shuffled batches, a fresh permutation every epoch",
    "persistent-shuffle": "shuffled once, the same batches every epoch",
    "deterministic": "the same consecutive batches every epoch",
    "balanced-iteration": "balanced iteration (Dong et al. 2025)",
    "balls-in-bins": "balls in bins, a fresh bin every epoch",
    "balls-in-bins-persistent": "balls in bins kept for the run (jax_privacy)",
}


@dataclass(frozen=True)
class Field:
    """One input of the calculator.

    Attributes:
        name: the query-string key and JSON key.
        kind: ``"real"``, ``"int"``, ``"choice"`` or ``"switch"``.
        default: the value when absent (``None``: no value).
        low: the smallest valid number (reals and integers).
        high: the largest valid number.
        open_low: ``low`` itself is not valid.
        choices: the valid choices (``"choice"``).
        help: one line for the page and the OpenAPI schema.
    """

    name: str
    kind: str
    default: Any
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    choices: tuple[str, ...] = ()
    help: str = ""

    def range_text(self) -> str:
        """The valid range in words, for error messages and the schema."""
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "switch":
            return "true or false"
        what = "a whole number" if self.kind == "int" else "a number"
        left = "(" if self.open_low else "["
        return f"{what} in {left}{self.low:g}, {self.high:g}]"


FIELDS: tuple[Field, ...] = (
    Field("mechanism", "choice", "gaussian", choices=("gaussian", "laplace", "rr"),
          help="base mechanism (noise in units of the clipping norm)"),
    Field("sigma", "real", 1.1, 0.1, 1000.0, help="Gaussian noise multiplier"),
    Field("scale", "real", None, 0.0, 1000.0, open_low=True, help="Laplace scale"),
    Field("theta", "real", None, 0.5, 1.0, open_low=True,
          help="randomized response: probability of the truth"),
    Field("batch_size", "int", 256, 1, 1e8, help="examples per batch (expected, for Poisson)"),
    Field("dataset_size", "int", 60000, 1, 1e9, help="examples in the dataset"),
    Field("epochs", "real", 10.0, 0.0, 10000.0, open_low=True,
          help="passes over the data (or give steps)"),
    Field("steps", "int", None, 1, 1e7, help="training steps (instead of epochs)"),
    Field("delta", "real", 1e-5, 0.0, 0.5, open_low=True, help="target delta"),
    Field("relation", "choice", "add-remove",
          choices=("add-remove", "zero-out", "substitution"),
          help="neighbouring datasets (substitution doubles the sensitivity)"),
    Field("source", "choice", "sampler", choices=("sampler", "pytorch", "opacus", "jax"),
          help="choose the sampler directly, or say what the loader does"),
    Field("sampler", "choice", "poisson", choices=tuple(SAMPLERS),
          help="how batches are drawn"),
    Field("shuffle", "switch", True, help="PyTorch DataLoader(shuffle=...)"),
    Field("drop_last", "switch", False, help="PyTorch DataLoader(drop_last=...)"),
    Field("torch_sampler", "choice", "default", choices=("default", "replacement"),
          help="DataLoader sampler: the default, or RandomSampler(replacement=True)"),
    Field("poisson_sampling", "switch", True,
          help="Opacus make_private(poisson_sampling=...)"),
    Field("strategy", "choice", "cyclic-poisson",
          choices=("cyclic-poisson", "balls-in-bins", "fixed-batch", "fixed-batch-replace",
                   "b-min-sep"),
          help="jax_privacy batch_selection strategy"),
    Field("cycle_length", "int", 1, 1, 1e8,
          help="jax_privacy cycle_length (groups of the data)"),
    Field("target_epsilon", "real", None, 0.0, 1000.0, open_low=True,
          help="calibrate: the noise multiplier meeting this epsilon"),
    Field("points", "int", 8, 2, 20, help="points on the epsilon-over-training curve"),
)
FIELD_NAMES = tuple(f.name for f in FIELDS)
_BY_NAME = {f.name: f for f in FIELDS}


class FieldError(ValueError):
    """A bad input: ``field`` and one line naming it and its valid range."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Query:
    """A validated set of inputs (every field of :data:`FIELDS`)."""

    mechanism: str
    sigma: float | None
    scale: float | None
    theta: float | None
    batch_size: int
    dataset_size: int
    epochs: float | None
    steps: int | None
    delta: float
    relation: str
    source: str
    sampler: str
    shuffle: bool
    drop_last: bool
    torch_sampler: str
    poisson_sampling: bool
    strategy: str
    cycle_length: int
    target_epsilon: float | None
    points: int

    def key(self) -> str:
        """A canonical text of the inputs (the cache key)."""
        return query_string(self)


def _error(f: Field, got: Any) -> FieldError:
    shown = str(got)
    if len(shown) > 20:
        shown = shown[:20] + "..."
    return FieldError(f.name, f"{f.name} must be {f.range_text()}, got {shown!r}")


def _read(f: Field, raw: Any) -> Any:
    """The value of field ``f`` from a raw string (query) or JSON value."""
    if f.kind == "switch":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower() if isinstance(raw, str) else None
        if text in ("true", "on", "1", "yes"):
            return True
        if text in ("false", "off", "0", "no"):
            return False
        raise _error(f, raw)
    if f.kind == "choice":
        if isinstance(raw, str) and raw.strip() in f.choices:
            return raw.strip()
        raise _error(f, raw)
    if isinstance(raw, bool):
        raise _error(f, raw)
    if isinstance(raw, (int, float)):
        x = float(raw)
    elif isinstance(raw, str) and len(raw) <= MAX_TEXT and _NUMBER.fullmatch(raw.strip()):
        x = float(raw.strip())
    else:
        raise _error(f, raw)
    low, high = cast(float, f.low), cast(float, f.high)  # set on every numeric field
    bad_low = x <= low if f.open_low else x < low
    if not math.isfinite(x) or bad_low or x > high:
        raise _error(f, raw)
    if f.kind == "int":
        if not x.is_integer():
            raise _error(f, raw)
        return int(x)
    return x


def parse_query(params: Any) -> Query:
    """The :class:`Query` of ``params`` (a mapping of field names to strings or JSON values;
    empty strings count as absent).

    Args:
        params: the query parameters or the JSON object of a request.

    Returns:
        The validated inputs.

    Raises:
        FieldError: the first bad field (an unknown name, a value out of range, a missing
            value, or an impossible combination), with one line naming it and its range.
    """
    if not hasattr(params, "items"):
        raise FieldError("body", "the request body must be a JSON object of fields")
    values: dict[str, Any] = {}
    for name, raw in params.items():
        if not isinstance(name, str) or name not in _BY_NAME:
            shown = str(name)[:20]
            raise FieldError(shown or "body", f"unknown field {shown!r} (fields: "
                             f"{', '.join(FIELD_NAMES)})")
        if raw is None or (isinstance(raw, str) and raw.strip() == ""):
            continue
        values[name] = _read(_BY_NAME[name], raw)
    if "steps" in values and "epochs" in values:
        raise FieldError("steps", "steps: give epochs or steps, not both")
    out = {f.name: values.get(f.name, f.default) for f in FIELDS}
    if "steps" in values:
        out["epochs"] = None
    _check_mechanism(out)
    if out["batch_size"] > out["dataset_size"]:
        raise FieldError("batch_size", f"batch_size must be a whole number in [1, "
                         f"dataset_size = {out['dataset_size']}], got {out['batch_size']}")
    return Query(**out)


def _check_mechanism(out: dict[str, Any]) -> None:
    need = {"gaussian": "sigma", "laplace": "scale", "rr": "theta"}[out["mechanism"]]
    if out[need] is None:
        f = _BY_NAME[need]
        raise FieldError(need, f"{need} is needed for mechanism={out['mechanism']}: "
                         f"{f.range_text()}")
    if out["target_epsilon"] is not None and out["mechanism"] != "gaussian":
        raise FieldError("target_epsilon", "target_epsilon: calibrate tunes the Gaussian "
                         "noise multiplier (mechanism must be gaussian)")


def query_string(q: Query) -> str:
    """The query string holding ``q``'s inputs (fields at their default left out)."""
    pairs = []
    for f in FIELDS:
        v = asdict(q)[f.name]
        if v is None or (v == f.default and f.name not in ("epochs", "sigma")):
            continue
        pairs.append((f.name, str(v).lower() if isinstance(v, bool) else f"{v:g}"
                      if isinstance(v, float) else str(v)))
    return urlencode(pairs)
