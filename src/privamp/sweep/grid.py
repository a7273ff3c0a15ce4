"""Grid files: a TOML (or, with PyYAML installed, YAML) description of many configurations,
checked whole before anything runs.

A grid file has three parts::

    [sweep]                      # what to compute for every configuration
    task = "epsilon"             # "epsilon" (at delta), "delta" (at epsilon), "calibrate"
    accountant = "best"          # an accountant name (privamp support lists them)
    # knob = "noise"             # for task = "calibrate": noise, rate, batch_size, steps, epochs

    [grid]                       # the Cartesian product of every list
    sampler = ["poisson", "shuffle"]
    sigma = [0.8, 1.0, 1.5]
    batch_size = 256
    dataset_size = 60000
    epochs = [1, 10]
    delta = 1e-5

    [[configs]]                  # explicit configurations, added after the product
    sampler = "balanced-iteration"
    balanced_steps = 100
    sigma = 1.0
    epochs = 5
    delta = 1e-5

Keys: ``mechanism`` (gaussian, laplace, randomized-response; default gaussian) with ``sigma``,
``scale`` or ``theta`` and ``sensitivity``; ``sampler`` (a registered scheme name) with its
flags (``batch_size``, ``dataset_size``, ``rate``, ``drop_last``, ... as ``privamp epsilon
--help`` lists them); ``steps`` or ``epochs``; ``relation`` (add-remove, substitution,
zero-out, hybrid-substitution) and ``group``; the targets ``delta`` and ``epsilon``.

A key the sampler does not use is left out of that configuration (Poisson given ``rate`` uses
no ``batch_size``); a key no configuration uses, an unknown key, a value out of range or an
impossible combination (a shuffle batch larger than the dataset) is refused with the file,
line and key (:class:`GridError`).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..accounting.calibration import KNOBS
from ..sampling.registry import scheme_entries, scheme_entry
from .runs import MECHANISMS, RELATIONS, build_run, canonical_key, sampler_keys

__all__ = [
    "Grid",
    "GridError",
    "Problem",
    "TASKS",
    "load_grid",
    "grid_from_mapping",
]

#: what a sweep computes for each configuration
TASKS = ("epsilon", "delta", "calibrate")

#: the [sweep] table's keys and their defaults
SETTINGS = {"task": "epsilon", "accountant": "best", "knob": "noise"}

#: value checks of the keys that are not scheme flags: kind
CORE = {
    "mechanism": "choice", "sigma": "positive", "scale": "positive", "theta": "real",
    "sensitivity": "positive", "sampler": "choice", "steps": "count", "epochs": "positive",
    "relation": "choice", "group": "count", "delta": "delta", "epsilon": "nonnegative",
}
#: a value of each knob at which a configuration is built to check it
SAMPLE_KNOB = {"sigma": 1.0, "rate": 0.01, "batch_size": 1, "steps": 1, "epochs": 1.0}
#: grid keys that are list-valued (a flat list is one value, a list of lists an axis)
LIST_KINDS = ("reals", "wholes")


def _key_kinds() -> dict[str, str]:
    kinds = dict(CORE)
    for entry in scheme_entries():
        for flag in entry.flags:
            kinds.setdefault(flag.dest, flag.kind)
    return kinds


def _choices(key: str) -> tuple[str, ...]:
    if key == "mechanism":
        return tuple(MECHANISMS)
    if key == "relation":
        return tuple(RELATIONS)
    return tuple(n for e in scheme_entries() for n in (e.name, *e.aliases))


@dataclass(frozen=True)
class Problem:
    """One refusal: where (file, line: None when unknown) and which key."""

    file: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.key}: {self.message}"


class GridError(ValueError):
    """A grid refused before anything ran; ``problems`` lists each (file, line, key)."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        more = "" if len(problems) <= 12 else f"\n... and {len(problems) - 12} more"
        super().__init__("bad grid:\n" + "\n".join(map(str, problems[:12])) + more)


@dataclass(frozen=True)
class Grid:
    """A checked grid: its configurations (canonical dicts, in grid order, no duplicates),
    their keys (canonical JSON) and where it came from."""

    configs: tuple[dict[str, Any], ...]
    keys: tuple[str, ...]
    source: str = "<dict>"
    settings: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.configs)

    @property
    def task(self) -> str:
        """``"epsilon"``, ``"delta"`` or ``"calibrate"``."""
        return str(self.settings.get("task", "epsilon"))


# ------------------------------------------------------------------------------ locating
_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.-]+)\s*\]\]?")
_KEY = re.compile(r"^\s*(\"?)([A-Za-z0-9_-]+)\1\s*=")


def _toml_lines(text: str) -> dict[tuple[str, int, str], int]:
    """(table, index, key) -> line for a TOML text (``key`` "" is the table's header);
    index counts the entries of an array of tables ([[configs]])."""
    where: dict[tuple[str, int, str], int] = {}
    seen: dict[str, int]
    table, index, seen = "", 0, {}
    for number, line in enumerate(text.splitlines(), start=1):
        m = _HEADER.match(line)
        if m:
            table = m.group(2)
            index = seen.get(table, -1) + 1 if m.group(1) == "[[" else 0
            seen[table] = index
            where.setdefault((table, index, ""), number)
            continue
        m = _KEY.match(line)
        if m:
            where.setdefault((table, index, m.group(2)), number)
    return where


def _yaml_lines(text: str) -> dict[tuple[str, int, str], int]:
    """The same map for a YAML text (PyYAML's node marks)."""
    import yaml

    where: dict[tuple[str, int, str], int] = {}
    root = yaml.compose(text)
    if root is None or not isinstance(root, yaml.MappingNode):
        return where
    for knode, vnode in root.value:
        table = knode.value
        where[(table, 0, "")] = knode.start_mark.line + 1
        entries = vnode.value if isinstance(vnode, yaml.SequenceNode) else [vnode]
        for i, entry in enumerate(entries):
            if isinstance(entry, yaml.MappingNode):
                where.setdefault((table, i, ""), entry.start_mark.line + 1)
                for k, _ in entry.value:
                    where[(table, i, k.value)] = k.start_mark.line + 1
    return where


# ------------------------------------------------------------------------------ loading
def load_grid(path: str | Path, overrides: Mapping[str, Mapping[str, Any]] | None = None
              ) -> Grid:
    """Read and check the grid file ``path`` (``.toml``, or ``.yaml``/``.yml`` with PyYAML).

    Args:
        path: the grid file.
        overrides: ``{"sweep": {...}, "grid": {...}}``: keys set over the file's (a refusal
            of one of them cites its table's line).

    Returns:
        The checked :class:`Grid`.

    Raises:
        GridError: a syntax error, an unknown key, a value out of range or an impossible
            combination, with the file, line and key of each.
        ValueError: an unsupported file type or a YAML file without PyYAML installed.
    """
    path = Path(path)
    text = path.read_text()
    name = str(path)
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError as exc:
            raise ValueError(f"{name}: reading YAML grids needs PyYAML (pip install pyyaml); "
                             "or write the grid as TOML") from exc
        try:
            doc = yaml.safe_load(text)
            where = _yaml_lines(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise GridError([Problem(name, None if mark is None else mark.line + 1, "-",
                                     f"not valid YAML: {exc}")]) from exc
    elif path.suffix.lower() == ".toml":
        try:
            import tomllib  # type: ignore[import-not-found, unused-ignore]  # (Python >= 3.11)
        except ImportError:  # Python 3.10: the same parser as the tomli package
            try:
                import tomli as tomllib
            except ImportError as exc:
                raise ValueError(f"{name}: reading TOML on Python 3.10 needs tomli (pip "
                                 "install tomli), or Python >= 3.11") from exc
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            m = re.search(r"line (\d+)", str(exc))
            raise GridError([Problem(name, int(m.group(1)) if m else None, "-",
                                     f"not valid TOML: {exc}")]) from exc
        where = _toml_lines(text)
    else:
        raise ValueError(f"grid file must end in .toml, .yaml or .yml, got {name}")
    if not isinstance(doc, Mapping):
        raise GridError([Problem(name, 1, "-", "a grid file is a table of [sweep], [grid] "
                                 "and [[configs]]")])
    return _check(_merged(doc, overrides), name, where)


def grid_from_mapping(doc: Mapping[str, Any], source: str = "<dict>",
                      overrides: Mapping[str, Mapping[str, Any]] | None = None) -> Grid:
    """A :class:`Grid` from a mapping shaped as a grid file (``{"sweep": ..., "grid": ...,
    "configs": [...]}``), or from the ``[grid]`` table alone; ``overrides`` as
    :func:`load_grid`.

    Raises:
        GridError: as :func:`load_grid` (lines are unknown).
    """
    if doc and not any(k in doc for k in ("sweep", "grid", "configs")):
        doc = {"grid": dict(doc)}
    return _check(_merged(doc, overrides), source, {})


def _merged(doc: Mapping[str, Any], overrides: Mapping[str, Mapping[str, Any]] | None
            ) -> Mapping[str, Any]:
    if not overrides:
        return doc
    out = dict(doc)
    sweep = overrides.get("sweep") or {}
    if sweep:
        base = out.get("sweep")
        out["sweep"] = {**(base if isinstance(base, Mapping) else {}), **sweep}
    values = overrides.get("grid") or {}
    if values:  # set in the [grid] table and in every [[configs]] entry
        configs = out.get("configs")
        if isinstance(configs, list):
            out["configs"] = [{**e, **values} if isinstance(e, Mapping) else e
                              for e in configs]
        base = out.get("grid")
        if isinstance(base, Mapping) or not configs:
            out["grid"] = {**(base if isinstance(base, Mapping) else {}), **values}
    return out


# ------------------------------------------------------------------------------ checking
class _Checker:
    def __init__(self, file: str, where: dict[tuple[str, int, str], int]) -> None:
        self.file, self.where = file, where
        self.problems: list[Problem] = []
        self.kinds = _key_kinds()

    def line(self, table: str, index: int, key: str) -> int | None:
        return self.where.get((table, index, key), self.where.get((table, index, "")))

    def refuse(self, table: str, index: int, key: str, message: str) -> None:
        p = Problem(self.file, self.line(table, index, key), key, message)
        if p not in self.problems:
            self.problems.append(p)

    def value_ok(self, key: str, value: Any) -> str | None:
        """Why ``value`` is not a valid single value of ``key`` (None: it is)."""
        kind = self.kinds[key]
        if kind == "choice":
            ok = _choices(key)
            return None if value in ok else f"must be one of {', '.join(ok)}, got {value!r}"
        if kind == "switch":
            return None if isinstance(value, bool) else f"must be true or false, got {value!r}"
        if kind in LIST_KINDS:
            good = isinstance(value, list) and value and all(_number(v) for v in value)
            return None if good else f"must be a list of numbers, got {value!r}"
        if not _number(value):
            return f"must be a number, got {value!r}"
        x = float(value)
        if kind == "count" and not (float(x).is_integer() and x >= 1):
            return f"must be a whole number >= 1, got {value!r}"
        if kind == "positive" and not (0 < x < math.inf):
            return f"must be in (0, inf), got {value!r}"
        if kind == "delta" and not 0 < x < 1:
            return f"must be in (0, 1), got {value!r}"
        if kind == "nonnegative" and not 0 <= x < math.inf:
            return f"must be in [0, inf), got {value!r}"
        if kind == "real" and not math.isfinite(x):
            return f"must be finite, got {value!r}"
        return None

    def values(self, table: str, index: int, key: str, value: Any, axis: bool) -> list[Any]:
        """The values of one entry (a list is an axis where ``axis``), checked."""
        many = axis and isinstance(value, list) and not (
            self.kinds[key] in LIST_KINDS and all(_number(v) for v in value))
        vals = list(value) if many else [value]
        if not vals:
            self.refuse(table, index, key, "an empty list gives no configuration")
        for v in vals:
            why = self.value_ok(key, v)
            if why:
                self.refuse(table, index, key, why)
        return vals


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check(doc: Mapping[str, Any], file: str, where: dict[tuple[str, int, str], int]) -> Grid:
    c = _Checker(file, where)
    for table in doc:
        if table not in ("sweep", "grid", "configs"):
            c.refuse(table, 0, table, "unknown table (use [sweep], [grid] and [[configs]])")
    settings = dict(SETTINGS)
    raw = doc.get("sweep", {}) or {}
    for key, value in (raw.items() if isinstance(raw, Mapping) else []):
        if key not in SETTINGS:
            c.refuse("sweep", 0, key, f"unknown key (the [sweep] keys: {', '.join(SETTINGS)})")
        elif not isinstance(value, str):
            c.refuse("sweep", 0, key, f"must be a string, got {value!r}")
        else:
            settings[key] = value
    if settings["task"] not in TASKS:
        c.refuse("sweep", 0, "task", f"must be one of {', '.join(TASKS)}, "
                 f"got {settings['task']!r}")
    if settings["knob"] not in KNOBS:
        c.refuse("sweep", 0, "knob", f"must be one of {', '.join(KNOBS)}, "
                 f"got {settings['knob']!r}")
    blocks: list[tuple[str, int, Mapping[str, Any]]] = []
    grid = doc.get("grid")
    if grid is not None:
        if isinstance(grid, Mapping):
            blocks.append(("grid", 0, grid))
        else:
            c.refuse("grid", 0, "grid", "must be a table of keys")
    configs = doc.get("configs", []) or []
    if not isinstance(configs, list) or not all(isinstance(e, Mapping) for e in configs):
        c.refuse("configs", 0, "configs", "must be a list of tables ([[configs]])")
        configs = []
    blocks += [("configs", i, e) for i, e in enumerate(configs)]
    if not blocks:
        c.refuse("grid", 0, "grid", "no [grid] and no [[configs]]: nothing to run")
    expanded: list[tuple[str, int, dict[str, Any]]] = []
    used: dict[tuple[str, int, str], bool] = {}
    for table, index, block in blocks:
        axes = []
        for key, value in block.items():
            if key not in c.kinds:
                close = [k for k in c.kinds if k.replace("_", "") == key.replace("_", "")
                         .replace("-", "")]
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                c.refuse(table, index, key, f"unknown key{hint}")
                continue
            used[(table, index, key)] = False
            axes.append([(key, v) for v in c.values(table, index, key, value,
                                                    axis=(table == "grid"))])
        if c.problems:
            continue
        for combo in itertools.product(*axes):
            expanded.append((table, index, dict(combo)))
    if c.problems:
        raise GridError(c.problems)
    out: dict[str, dict[str, Any]] = {}
    for table, index, values in expanded:
        config = _configure(c, table, index, values, settings)
        if config is None:
            continue
        for key in values:
            if key in config:
                used[(table, index, key)] = True
        out.setdefault(canonical_key(config), config)
        if len(c.problems) >= 50:
            break
    if not c.problems:
        for (table, index, key), was in used.items():
            if not was:
                c.refuse(table, index, key, "used by no configuration (not a key of its "
                         "sampler or mechanism, or not needed by this task)")
    if c.problems:
        raise GridError(c.problems)
    return Grid(tuple(out.values()), tuple(out), file, settings)


def _configure(c: _Checker, table: str, index: int, values: dict[str, Any],
               settings: dict[str, Any]) -> dict[str, Any] | None:
    """The canonical configuration of one combination, or None after a refusal."""
    task, knob = settings["task"], settings["knob"]
    cfg: dict[str, Any] = {"task": task, "accountant": settings["accountant"]}
    if task == "calibrate":
        cfg["knob"] = knob
    mech = values.get("mechanism", "gaussian")
    cfg["mechanism"] = mech
    if task == "calibrate" and knob == "noise" and mech != "gaussian":
        c.refuse(table, index, "mechanism", "knob 'noise' tunes the Gaussian noise multiplier: "
                 "mechanism must be gaussian")
        return None
    param = MECHANISMS[mech][1]
    tuned = "sigma" if task == "calibrate" and knob == "noise" else (
        knob if task == "calibrate" else None)
    cfg["sensitivity"] = float(values.get("sensitivity", 1.0))
    if param != tuned:
        if param not in values:
            c.refuse(table, index, param, f"required by mechanism {mech!r}")
            return None
        cfg[param] = float(values[param])
    if "sampler" not in values:
        c.refuse(table, index, "sampler", "required (a scheme name, e.g. poisson)")
        return None
    entry = scheme_entry(values["sampler"])
    cfg["sampler"] = entry.name
    probe = values if tuned in (None, "sigma") else {**values, tuned: SAMPLE_KNOB[tuned]}
    keys = sampler_keys(entry.name, probe)
    for key in keys:
        if key != tuned:
            cfg[key] = _typed(c.kinds[key], values[key])
    if tuned not in (None, "sigma") and tuned not in keys | {"steps", "epochs"}:
        c.refuse(table, index, "knob", f"knob {knob!r} is not a parameter of sampler "
                 f"{entry.name!r}")
        return None
    length = [k for k in ("steps", "epochs") if k in values and k != tuned]
    if len(length) + (tuned in ("steps", "epochs")) != 1:
        c.refuse(table, index, "steps", "give exactly one of steps or epochs")
        return None
    k: str
    for k in length:
        cfg[k] = _typed(c.kinds[k], values[k])
    cfg["relation"] = values.get("relation", "add-remove")
    cfg["group"] = int(values.get("group", 1))
    targets = {"epsilon": ("delta",), "delta": ("epsilon",), "calibrate": ("epsilon", "delta")}
    for k in targets[task]:
        if k not in values:
            c.refuse(table, index, k, f"required by task {task!r}")
            return None
        cfg[k] = float(values[k])
    if task == "calibrate" and cfg["epsilon"] <= 0:
        c.refuse(table, index, "epsilon", "a calibration target must be > 0")
        return None
    try:
        build_run(cfg, tuned, SAMPLE_KNOB.get(tuned or ""))
    except ValueError as exc:
        text = " ".join(str(exc).split())
        named = [k for k in values if re.search(rf"\b-*{k.replace('_', '[-_]')}\b", text)]
        key = named[0] if named else "sampler"
        c.refuse(table, index, key, f"{text} (in {json.dumps(values, sort_keys=True)})")
        return None
    return cfg


def _typed(kind: str, value: Any) -> Any:
    if kind == "count":
        return int(value)
    if kind in ("real", "positive", "delta", "nonnegative"):
        return float(value)
    if kind == "wholes":
        return [int(v) for v in value]
    if kind == "reals":
        return [float(v) for v in value]
    return value
