"""The ``privamp`` parser and entry point (``privamp.cli:main``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import __version__
from .commands import (
    KNOB_FLAGS,
    cmd_calibrate,
    cmd_compare,
    cmd_curve,
    cmd_delta,
    cmd_epsilon,
    cmd_rdp,
    cmd_reproduce,
    cmd_support,
)
from .config import expand_config
from .demo import cmd_demo
from .flags import Parser, command, count, mechanism_flags, output_flags, run_flags, sampling_flags
from .planning import add_planning_commands
from .serve import add_serve_command
from .tradeoff import add_tradeoff
from .values import CliError

__all__ = [
    "build_parser",
    "main",
]


def build_parser() -> argparse.ArgumentParser:
    """The ``privamp`` parser, its ``--scheme`` choices read from the scheme registry."""
    parser = Parser(
        prog="privamp",
        description="How private is this training run, given how it samples its data?",
        epilog="run `privamp COMMAND --help` for the flags and an example of each command",
    )
    parser.add_argument("--version", action="version", version=f"privamp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = command(sub, "epsilon", "epsilon of a run at a given delta (upper and lower bound)",
                "privamp epsilon --sigma 1.1 --scheme poisson --batch-size 256 "
                "--dataset-size 60000 --epochs 60 --delta 1e-5", cmd_epsilon)
    run_flags(p)
    p.add_argument("--delta", type=float, required=True, help="target delta, in (0, 1)")

    p = command(sub, "delta", "delta of a run at a given epsilon (upper and lower bound)",
                "privamp delta --sigma 0.8 --scheme shuffle --batch-size 60 "
                "--dataset-size 60000 --epochs 1 --epsilon 1", cmd_delta)
    run_flags(p)
    p.add_argument("--epsilon", type=float, required=True, help="epsilon, >= 0")

    p = command(sub, "calibrate", "the noise (or rate, batch size, steps, epochs) meeting "
                "(epsilon, delta), with the guarantee it meets",
                "privamp calibrate --epsilon 3 --delta 1e-5 --scheme poisson --rate 0.01 "
                "--steps 10000\n  privamp calibrate --knob rate --sigma 1.0 --epsilon 1 "
                "--delta 1e-5 --scheme poisson --steps 1000", cmd_calibrate)
    run_flags(p)
    p.add_argument("--knob", choices=tuple(KNOB_FLAGS), default="noise",
                   help="what to tune (default noise: the smallest --sigma; rate, batch-size, "
                        "steps, epochs: the largest value, the other flags fixed)")
    p.add_argument("--epsilon", type=float, required=True, help="target epsilon, > 0")
    p.add_argument("--delta", type=float, required=True, help="target delta, in (0, 1)")

    p = command(sub, "compare", "deterministic / poisson / shuffle / balanced side by side",
                "privamp compare --sigma 0.5 --batch-size 100 --dataset-size 10000 "
                "--epochs 3 --delta 1e-6 --plot compare.png", cmd_compare)
    mechanism_flags(p)
    sampling_flags(p, scheme=False)
    r = p.add_argument_group("run")
    r.add_argument("--steps", type=count, help="number of training steps")
    r.add_argument("--epochs", type=float, help="number of epochs (instead of --steps)")
    output_flags(p)
    p.add_argument("--delta", type=float, help="epsilon at this delta")
    p.add_argument("--epsilon", type=float, help="or delta at this epsilon")
    p.add_argument("--plot", help="also draw epsilon vs sigma to this file (png/pdf/svg)")

    p = command(sub, "curve", "epsilon after each epoch (or at --points steps) of a run",
                "privamp curve --sigma 1.0 --scheme shuffle --batch-size 100 "
                "--dataset-size 10000 --epochs 5 --delta 1e-5 --plot curve.png", cmd_curve)
    run_flags(p)
    p.add_argument("--delta", type=float, required=True, help="target delta, in (0, 1)")
    p.add_argument("--points", type=count, default=10,
                   help="points on the curve (default 10; at most one per epoch for "
                        "epoch-structured schemes, at most 200)")
    p.add_argument("--plot", help="also draw the curve to this file (png/pdf/svg)")

    p = command(sub, "rdp", "one-step Rényi DP curve, or --list the applicable methods",
                "privamp rdp --sigma 1.0 --scheme poisson --rate 0.01 --alpha 2 4 8", cmd_rdp)
    run_flags(p, run=False)
    p.add_argument("--alpha", type=float, nargs="+", default=[2, 4, 8, 16, 32, 64],
                   help="Rényi orders > 1 (default 2 4 8 16 32 64)")
    p.add_argument("--method", default="best", help="best, or a name from --list")
    p.add_argument("--list", action="store_true", help="list applicable methods and sources")

    p = command(sub, "reproduce", "redraw a figure of one of the four papers",
                "privamp reproduce chua2024 --figure 1 --out figures --fast", cmd_reproduce)
    p.add_argument("paper", choices=("balle2018", "schuchardt2024", "dong2025", "chua2024",
                                      "choquette2023"), help="which paper")
    p.add_argument("--figure", help="figure name (default: all)")
    p.add_argument("--out", default="figures", help="output folder (default: figures)")
    p.add_argument("--fast", action="store_true", help="coarse grids (seconds)")

    add_tradeoff(sub)

    command(sub, "support", "the support matrix (markdown), from the registries",
            "privamp support > support.md", cmd_support)
    p = command(sub, "demo", "the canonical DP-SGD example", "privamp demo", cmd_demo)
    p.add_argument("--verbose", action="store_true", help="full theorem text for each source")
    add_serve_command(sub)
    add_planning_commands(sub)  # sweep, plan (privamp.cli.planning)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``privamp`` with ``argv`` (default: the process's arguments).

    Returns:
        0 on success; 2 after a one-line error on stderr (bad input, or a run no accountant
        covers: ``NotApplicable``); 3 after a one-line internal error (any other exception:
        the CLI never shows a traceback); 130 when interrupted.
    """
    parser = build_parser()
    try:
        argv = expand_config(sys.argv[1:] if argv is None else argv)
    except CliError as exc:
        print(f"privamp: error: {exc}", file=sys.stderr)
        return 2
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, --version, or a one-line usage error (status 2)
        return int(stop.code or 0)
    try:
        args.func(args)
    except (CliError, ValueError, OverflowError) as exc:  # NotApplicable is a ValueError
        print(f"privamp: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("privamp: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("privamp: error: out of memory for this query (try fewer steps or a coarser "
              "setting)", file=sys.stderr)
        return 3
    except Exception as exc:  # noqa: BLE001 - the CLI never shows a traceback
        print(f"privamp: internal error ({type(exc).__name__}: {' '.join(str(exc).split())}); "
              "please report this with the command line", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
