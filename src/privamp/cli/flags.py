"""The parser's flags; the ``--scheme`` choices and their flags come from the scheme registry
(:mod:`privamp.sampling.registry`), so a registered scheme is on the command line."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ..sampling.registry import Flag, SchemeEntry, scheme_entries
from .values import RELATIONS

__all__ = [
    "Parser",
    "count",
    "whole",
    "mechanism_flags",
    "sampling_flags",
    "scheme_flag_help",
    "run_flags",
    "output_flags",
    "command",
]


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``privamp <command>: error: <what>`` on stderr and exit
    status 2, pointing at ``--help`` instead of printing the whole usage."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def count(text: str) -> int:
    """A whole number >= 1 for --steps, --batch-size, ...: also accepts 1e12 or 1000.0."""
    return _whole_at_least(text, 1)


def whole(text: str) -> int:
    """A whole number >= 0 (also accepts 1e3 or 2.0)."""
    return _whole_at_least(text, 0)


def _whole_at_least(text: str, low: int) -> int:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number >= {low}, got {text!r}") from None
    if not (x >= low and x.is_integer()):
        raise argparse.ArgumentTypeError(f"expected a whole number >= {low}, got {text!r}")
    return int(x)


def _argparse_kwargs(kind: str) -> dict[str, Any]:
    """How argparse reads a registry flag of ``kind`` (absent: ``None``, so each scheme's own
    default applies)."""
    table: dict[str, dict[str, Any]] = {
        "count": {"type": count},
        "real": {"type": float},
        "switch": {"action": "store_true", "default": None},
        "reals": {"type": float, "nargs": "+"},
        "wholes": {"type": whole, "nargs": "+"},
    }
    return table[kind]


def scheme_flag_help(entries: tuple[SchemeEntry, ...] | None = None) -> dict[str, tuple[Flag, str]]:
    """For every flag dest of the registered schemes: the flag (its first declaration) and a
    help line naming the schemes that read it.

    Raises:
        ValueError: two schemes declare the same flag with different kinds.
    """
    uses: dict[str, list[tuple[str, Flag]]] = {}
    for entry in scheme_entries() if entries is None else entries:
        for flag in entry.flags:
            uses.setdefault(flag.dest, []).append((entry.name, flag))
    out = {}
    for dest, used in uses.items():
        kinds = {f.kind for _, f in used}
        if len(kinds) > 1:
            raise ValueError(f"{used[0][1].option} is declared with kinds {sorted(kinds)} "
                             f"by the schemes {', '.join(n for n, _ in used)}")
        by_help: dict[str, list[str]] = {}
        for name, f in used:
            by_help.setdefault(f.help, []).append(name)
        out[dest] = (used[0][1], "; ".join(f"{h} ({', '.join(ns)})" for h, ns in by_help.items()))
    return out


def mechanism_flags(p: argparse.ArgumentParser, sigma: bool = True) -> None:
    """--mechanism and its parameters."""
    m = p.add_argument_group("mechanism (one release, in units of the clipping norm)")
    m.add_argument("--mechanism", choices=("gaussian", "laplace", "rr", "matrix"),
                   default="gaussian",
                   help="base mechanism (default gaussian); matrix: correlated noise C x + "
                        "sigma z (BandMF, DP-FTRL) given by --strategy, --coefficients or "
                        "--strategy-file")
    if sigma:
        m.add_argument("--sigma", type=float, help="Gaussian noise multiplier (noise std / C)")
    m.add_argument("--scale", type=float, help="Laplace scale")
    m.add_argument("--theta", type=float, help="randomized response: truth probability")
    m.add_argument("--sensitivity", type=float, default=1.0,
                   help="sensitivity under the relation (default 1; 2 for substitution of "
                        "clipped gradients)")
    x = p.add_argument_group("matrix mechanism (--mechanism matrix, units of the clip norm)")
    x.add_argument("--strategy", choices=("identity", "sqrt-toeplitz", "banded"),
                   help="identity (DP-SGD), sqrt-toeplitz (square root of the prefix sum, "
                        "truncated to --bands), banded (Toeplitz with --coefficients)")
    x.add_argument("--bands", type=count,
                   help="bands kept of the sqrt-toeplitz strategy (default: all --steps)")
    x.add_argument("--coefficients", nargs="+", metavar="C",
                   help="first column of a banded Toeplitz strategy: 1,0.5,0.25 or 1 0.5 0.25")
    x.add_argument("--strategy-file", metavar="FILE",
                   help="a dense lower-triangular T x T strategy (.npy, or text: .csv/.txt)")


def sampling_flags(p: argparse.ArgumentParser, scheme: bool = True) -> None:
    """--scheme and the flags of every registered scheme (or, without ``scheme``, only
    --batch-size and --dataset-size), --relation and --group."""
    s = p.add_argument_group("sampling")
    if scheme:
        entries = scheme_entries()
        names = [n for e in entries for n in (e.name, *e.aliases)]
        lines = "; ".join(f"{e.name}: {e.summary}" for e in entries)
        s.add_argument("--scheme", choices=names, metavar="SCHEME",
                       help=f"how batches are drawn ({lines})")
        for dest, (flag, text) in scheme_flag_help(entries).items():
            s.add_argument(flag.option, dest=dest, help=text, **_argparse_kwargs(flag.kind))
    else:
        s.add_argument("--batch-size", type=count, help="examples per batch (expected, Poisson)")
        s.add_argument("--dataset-size", type=count, help="examples in the dataset")
    s.add_argument("--relation", choices=tuple(RELATIONS), default=None,
                   help="neighbouring datasets (default: add-remove; zero-out for shuffled "
                        "and deterministic batches)")
    s.add_argument("--group", type=count, default=1, help="protect groups of K examples")


def run_flags(p: argparse.ArgumentParser, *, sigma: bool = True, run: bool = True) -> None:
    """Mechanism, sampling, (with ``run``) steps and accountant, and output flags."""
    mechanism_flags(p, sigma)
    sampling_flags(p)
    if run:
        r = p.add_argument_group("run")
        r.add_argument("--steps", type=count, help="number of training steps")
        r.add_argument("--epochs", type=float, help="number of epochs (instead of --steps)")
        r.add_argument("--accountant", default="best",
                       help="best (default: tightest of all that apply) | pld | rdp | "
                            "black-box-group")
        r.add_argument("--phase", action="append", metavar="'FLAGS'",
                       help="one phase of a run made of phases, as a quoted group of run flags "
                            "(repeat for each phase, in order): e.g. --phase '--sigma 1 "
                            "--scheme poisson --rate 0.01 --steps 1000'")
    output_flags(p)


def output_flags(p: argparse.ArgumentParser) -> None:
    """--json and --verbose."""
    o = p.add_argument_group("output")
    o.add_argument("--json", action="store_true",
                   help="print JSON (the inputs echoed under 'inputs')")
    o.add_argument("--verbose", action="store_true",
                   help="full theorem text for each source (default: short)")
    o.add_argument("--config", metavar="FILE",
                   help="read flags from a TOML file (keys are flag names; [[phase]] tables "
                        "are --phase groups); flags on the command line win")


def command(sub: Any, name: str, summary: str, example: str, func: Callable) -> Any:
    """A subcommand with its summary, an example in its ``--help`` and its function."""
    p = sub.add_parser(name, help=summary, description=summary,
                       epilog=f"example:\n  {example}",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=func)
    return p
