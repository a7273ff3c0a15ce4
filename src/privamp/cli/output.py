"""Printing results: guarantees, comparison tables, short sources, JSON inputs."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any, cast

from ..accounting.compare import Comparison
from ..accounting.training import Training
from ..results import Bound, Guarantee

__all__ = [
    "short_source",
    "source_text",
    "inputs",
    "brief",
    "describe",
    "print_guarantee",
    "print_table",
]


def short_source(source: str) -> str:
    """The first clause of a source (cut near 72 characters) and its relation or
    post-processing notes; ``--verbose`` prints the whole text."""
    parts = _clauses(source)
    head = parts[0]
    if len(head) > 72:
        head = head[: max(head.rfind(" ", 0, 70), 20)] + " ..."
    notes = [p.split(":")[0] for p in parts[1:]
             if any(w in p for w in ("analysed as", "partial epoch", "noise changed"))]
    return "; ".join([head, *notes])


def _clauses(text: str) -> list[str]:
    """``text`` split at the semicolons outside parentheses."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == ";" and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    return [*out, text[start:].strip()]


def source_text(args: argparse.Namespace, source: str) -> str:
    """``source`` in full with ``--verbose``, else :func:`short_source`."""
    return source if getattr(args, "verbose", False) else short_source(source)


_NOT_INPUTS = ("func", "json", "verbose", "plot", "out")


def inputs(args: argparse.Namespace, run: Training | None = None) -> dict[str, Any]:
    """The flags given (and, for a run, what they were read as), for JSON output."""
    out = {k: v for k, v in vars(args).items() if v is not None and k not in _NOT_INPUTS}
    if run is not None and hasattr(run, "phases"):
        out["run"] = {"phases": [inputs(argparse.Namespace(), p)["run"] for p in run.phases]}
    elif run is not None:
        out["run"] = {"mechanism": repr(run.mechanism), "scheme": repr(run.scheme),
                      "steps": run.steps, "relation": repr(run.relation)}
    return out


_LONG_DECIMAL = re.compile(r"\d*\.\d{7,}(?:e[-+]?\d+)?")


def brief(obj: object) -> str:
    """``str(obj)`` with long decimals cut to 6 significant digits (for titles and headers;
    ``--json`` keeps the exact values)."""
    return _LONG_DECIMAL.sub(lambda m: f"{float(m.group()):.6g}", str(obj))


def describe(run: Training) -> str:
    """One line naming the run's mechanism, scheme, steps and relation (each phase's, for a
    run made of phases)."""
    if hasattr(run, "phases"):
        return " then ".join(f"({describe(p)})" for p in run.phases)
    return brief(f"{run.mechanism}, {run.scheme}, {run.steps} steps, {run.relation}")


def print_guarantee(title: str, g: Guarantee, args: argparse.Namespace,
                    run: Training | None = None) -> None:
    """Print ``g`` under ``title`` (or as JSON with ``--json``)."""
    if args.json:
        print(json.dumps({"inputs": inputs(args, run), **g.to_dict()}))
        return
    print(title)
    if g.exact:
        up = cast(Bound, g.upper)  # exact: the upper bound is the value
        print(f"  exact  {up:>10.6g}   {source_text(args, up.source)}")
    else:
        for label, b in (("upper", g.upper), ("lower", g.lower)):
            if b is None:
                print(f"  {label}  {'-':>10}   no {label} bound available for this setting")
            else:
                print(f"  {label}  {b:>10.6g}   {source_text(args, b.source)}")
    for name, why in g.declined:
        print(f"  ({name} does not apply: {why})")


def print_table(table: Comparison, args: argparse.Namespace) -> None:
    """Print a comparison of schemes, one row each."""
    other = "delta" if table.quantity == "epsilon" else "epsilon"
    print(f"{table.quantity} at {other} = {table.at:g}")
    print(f"{'scheme':<22}{'lower':>12}{'upper':>12}  source (of the upper bound)")
    for name, g, note in table.rows:
        if g is None:
            print(f"{name:<22}{'-':>12}{'-':>12}  {note}")
            continue
        lo = "-" if g.lower is None else f"{g.lower:.4g}"
        hi = "-" if g.upper is None else f"{g.upper:.4g}"
        src = source_text(args, cast(Bound, g.upper or g.lower).source)
        print(f"{name:<22}{lo:>12}{hi:>12}  {f'({note}) ' if note else ''}{src}")
