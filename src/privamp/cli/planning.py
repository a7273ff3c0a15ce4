"""``privamp sweep`` and ``privamp plan``: many configurations at once, from a grid file
(:mod:`privamp.sweep.grid`) and/or flags, on Dask, kept in a store and resumed."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, cast

from ..results import Bound, Kind
from ..sweep.grid import GridError
from ..sweep.runner import as_grid, run_grid
from ..sweep.table import SweepResult
from .flags import command, count
from .values import CliError

__all__ = ["add_planning_commands", "cmd_sweep", "cmd_plan"]

_GRID_FLAGS = (
    ("sampler", str, "sampler name(s) (poisson, shuffle, ...)"),
    ("rate", float, "Poisson rate(s)"),
    ("batch_size", count, "batch size(s)"),
    ("dataset_size", count, "dataset size(s)"),
    ("steps", count, "steps"),
    ("epochs", float, "epochs"),
    ("delta", float, "delta(s)"),
    ("epsilon", float, "epsilon(s)"),
)


def _common(p: argparse.ArgumentParser, sigma: bool) -> None:
    p.add_argument("grid", nargs="?", help="grid file (.toml, or .yaml with PyYAML); "
                   "see docs/plan.md")
    g = p.add_argument_group("grid keys (each a list of values; set over the file's)")
    flags = (("sigma", float, "noise multiplier(s)"),) if sigma else ()
    for dest, kind, text in (*flags, *_GRID_FLAGS):
        g.add_argument("--" + dest.replace("_", "-"), dest=dest, type=kind, nargs="+",
                       help=text)
    g.add_argument("--accountant", help="accountant (default best)")
    e = p.add_argument_group("engine and store")
    e.add_argument("--workers", type=count,
                   help="local Dask workers (default: one per core); 1: serial, no Dask")
    e.add_argument("--scheduler", help="a Dask scheduler, tcp://HOST:8786 (default "
                   "$DASK_SCHEDULER_ADDRESS; else a local cluster)")
    e.add_argument("--store", help="the SQLite store (default: next to the grid file, "
                   "GRID.sqlite; privamp-sweep.sqlite without one)")
    e.add_argument("--no-store", action="store_true", help="keep nothing (no resume)")
    e.add_argument("--retry-failed", action="store_true",
                   help="compute again the configurations stored as failed")
    o = p.add_argument_group("output")
    o.add_argument("--out", help="write the rows to this file (.csv, or .parquet with pandas "
                   "and pyarrow); default: a table on stdout")
    o.add_argument("--plot", help="also draw a heat map to this file (png/pdf/svg)")
    o.add_argument("--x", help="the heat map's x axis (a grid key)")
    o.add_argument("--y", help="the heat map's y axis (a grid key)")
    o.add_argument("--value", help="the column shown (default: the upper bound or the knob)")
    o.add_argument("--where", nargs="+", default=[], metavar="KEY=VALUE",
                   help="fix the other varying keys for the heat map")


def add_planning_commands(sub: Any) -> None:
    """Register ``sweep`` and ``plan`` on the ``privamp`` subparsers ``sub``."""
    p = command(sub, "sweep", "epsilon (or delta) of every configuration of a grid, "
                "resumable, on Dask",
                "privamp sweep grid.toml --out grid.csv --plot grid.png --x sigma --y epochs",
                cmd_sweep)
    p.add_argument("--task", choices=("epsilon", "delta"),
                   help="epsilon at --delta (default) or delta at --epsilon")
    _common(p, sigma=True)
    p = command(sub, "plan", "the noise (or largest rate, batch, steps, epochs) meeting "
                "(epsilon, delta) for every configuration of a grid",
                "privamp plan --sampler poisson shuffle --batch-size 128 256 "
                "--dataset-size 60000 --epochs 1 10 --epsilon 3 --delta 1e-5", cmd_plan)
    p.add_argument("--knob", choices=("noise", "rate", "batch_size", "steps", "epochs"),
                   help="what to tune (default noise)")
    _common(p, sigma=False)


def _run(args: argparse.Namespace, settings: dict[str, Any]) -> SweepResult:
    values = {dest: v if len(v) > 1 else v[0] for dest in
              ("sigma", *(d for d, _, _ in _GRID_FLAGS))
              if (v := getattr(args, dest, None)) is not None}
    if args.accountant:
        settings["accountant"] = args.accountant
    if args.grid is None and not values:
        raise CliError("give a grid file or grid keys (--sampler ...); see --help")
    try:
        grid = as_grid(Path(args.grid) if args.grid else None,
                       {"sweep": settings, "grid": values})
    except GridError as exc:
        for problem in exc.problems:
            print(f"privamp: {problem}", file=sys.stderr)
        raise CliError(f"the grid is refused ({len(exc.problems)} problem(s) above); "
                       "nothing ran") from None
    if args.plot:  # before the computing (fuzz, session 11)
        from ..plotting import check_plot_path

        if not (args.x and args.y):
            raise CliError("--plot needs --x and --y (two grid keys)")
        check_plot_path(args.plot)
    store = None
    if not args.no_store:
        store = args.store or (str(Path(args.grid).with_suffix(".sqlite")) if args.grid
                               else f"privamp-{args.command}.sqlite")
    result = run_grid(grid, store=store, workers=args.workers, scheduler=args.scheduler,
                      retry_failed=args.retry_failed)
    _output(args, result)
    return result


def _output(args: argparse.Namespace, result: SweepResult) -> None:
    if args.out:
        result.write(args.out)
        print(f"wrote {args.out}")
    else:
        print(_text_table(result))
    if args.plot:
        from ..sweep.plots import heatmap

        if not (args.x and args.y):
            raise CliError("--plot needs --x and --y (two grid keys)")
        heatmap(result, args.x, args.y, value=args.value, where=_where(args.where),
                path=args.plot)
        print(f"wrote {args.plot}")
    print(result.summary(), file=sys.stderr)


def _where(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep:
            raise CliError(f"--where takes KEY=VALUE, got {item!r}")
        try:
            out[key] = json.loads(text)
        except json.JSONDecodeError:
            out[key] = text
        if isinstance(out[key], int) and key in ("epochs", "sigma", "delta", "epsilon"):
            out[key] = float(out[key])
    return out


def _text_table(result: SweepResult) -> str:
    """The varying keys, the result and the status of every row, aligned."""
    knob = result.meta.get("knob", "noise")
    if result.task == "calibrate":
        shown = [knob, "kind"]
    else:
        shown = [f"{result.task}_lower", f"{result.task}_upper"]
    skip = set(shown) | {"upper_source", "lower_source", "source", "status", "reason",
                         "seconds", "version"}
    keys = [c for c in result.columns if c not in skip
            and len({repr(r.get(c)) for r in result.rows}) > 1]
    head = [*keys, *shown, "status"]
    body = []
    for r in result.rows:
        cells = [_fmt(r.get(c), _kind(c, r, knob)) for c in head]
        if r["status"] != "answered":
            cells[-1] += f" ({r['reason'][:70]})"
        body.append(cells)
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h)
              for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)) for b in body]
    return "\n".join(line.rstrip() for line in lines)


def _kind(column: str, row: dict[str, Any], knob: str) -> str | None:
    if column.endswith("_upper"):
        return "upper"
    if column.endswith("_lower"):
        return "lower"
    return row.get("kind") if column == knob else None


def _fmt(v: Any, kind: str | None = None) -> str:
    """A cell; a bound rounded to the safe side (an upper bound up, a lower bound down)."""
    if v is None:
        return "-"
    if isinstance(v, float) and kind in ("upper", "lower"):
        return format(Bound(v, cast(Kind, kind), "sweep"), ".6g")
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def cmd_sweep(args: argparse.Namespace) -> None:
    """``privamp sweep``: every configuration of the grid, epsilon at delta (or delta at
    epsilon), as a table, a CSV/Parquet file and a heat map."""
    _run(args, {"task": args.task} if args.task else {})


def cmd_plan(args: argparse.Namespace) -> None:
    """``privamp plan``: the calibration table (the noise meeting the target) of the grid."""
    _run(args, {"task": "calibrate", **({"knob": args.knob} if args.knob else {})})
