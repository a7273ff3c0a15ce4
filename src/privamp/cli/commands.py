"""The commands (one function each, called with the parsed flags); ``demo`` is in
:mod:`privamp.cli.demo`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from ..accounting.calibration import Comparison, calibrate, compare
from ..accounting.training import Training
from ..progress import iterate, progress, working
from ..results import Bound, Guarantee
from ..sampling.schemes import BalancedIteration, Deterministic, Poisson, Scheme, Shuffle
from ..theorems.registry import rdp_curve, rdp_methods
from .output import brief, describe, inputs, print_guarantee, print_table, source_text
from .values import CliError, make_mechanism, make_relation, make_run, make_scheme, need

__all__ = [
    "cmd_epsilon",
    "cmd_delta",
    "cmd_calibrate",
    "cmd_compare",
    "cmd_curve",
    "cmd_rdp",
    "cmd_reproduce",
    "cmd_support",
    "check_plot_target",
]


def check_plot_target(path: str | None) -> None:
    """Check a ``--plot`` target before any computation: matplotlib importable, a known
    format, an existing writable folder.

    Raises:
        CliError: the file could not be written (the message says why).
        ValueError: matplotlib is missing.
    """
    if path is None:
        return
    import os
    from pathlib import Path

    from ..plotting import pyplot

    target = Path(path)
    if target.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise CliError(f"--plot {path}: the file must end in .png, .pdf or .svg")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise CliError(f"--plot {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise CliError(f"--plot {path}: not writable")
    if target.is_dir():
        raise CliError(f"--plot {path} is a folder, not a file")
    pyplot()


def cmd_epsilon(args: argparse.Namespace) -> None:
    """``privamp epsilon``: epsilon of a run at ``--delta``."""
    run = make_run(args)
    g = working("accounting", lambda: run.epsilon(args.delta, accountant=args.accountant))
    print_guarantee(f"epsilon at delta={args.delta:g}  ({describe(run)})", g, args, run)


def cmd_delta(args: argparse.Namespace) -> None:
    """``privamp delta``: delta of a run at ``--epsilon``."""
    run = make_run(args)
    g = working("accounting", lambda: run.delta(args.epsilon, accountant=args.accountant))
    print_guarantee(f"delta at epsilon={args.epsilon:g}  ({describe(run)})", g, args, run)


def _calibrate_progress() -> tuple[Any, dict[str, Any]]:
    """A progress bar and the keyword arguments that feed it from ``calibrate``'s callback."""
    bar = progress(total=None, desc="calibrating", log_every=0.0, unit=" probes")

    def callback(value: float, guarantee: Guarantee | None) -> None:
        up = "-" if guarantee is None or guarantee.upper is None else f"{guarantee.upper:.4g}"
        bar.set_postfix_str(f"sigma={value:.4g}, epsilon<={up}", refresh=False)
        bar.update()

    return bar, {"callback": callback}


def cmd_calibrate(args: argparse.Namespace) -> None:
    """``privamp calibrate``: the smallest Gaussian noise multiplier meeting the target."""
    if args.mechanism != "gaussian":
        raise CliError("calibrate tunes the Gaussian noise multiplier: use --mechanism gaussian")
    run = make_run(args, sigma=1.0)  # validate the other flags once, before searching
    bar, extra = _calibrate_progress()

    def search() -> Any:
        return calibrate(args.epsilon, args.delta, lambda s: make_run(args, sigma=s),
                         accountant=args.accountant, **extra)

    try:
        b = search() if extra else working("calibrating", search)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print(json.dumps({"inputs": inputs(args, run), "noise_multiplier": b.value,
                          "source": b.source}))
        return
    print(f"noise multiplier  {b:.6g}")
    print(f"  the smallest found whose epsilon upper bound at delta={args.delta:g} is at "
          f"most {args.epsilon:g}")
    print(f"  ({brief(run.scheme)}, {run.steps} steps, {run.relation}; "
          f"{source_text(args, b.source)})")


def _compare_run(args: argparse.Namespace) -> tuple[Training, list[Scheme], int, int, float]:
    """The base (Poisson) run and the four schemes of ``privamp compare``: batches of
    ``--batch-size`` cut from ``--dataset-size`` records, ceil(n / b) steps an epoch (a short
    last batch when b does not divide n, as PyTorch's DataLoader)."""
    if args.steps is None and args.epochs is None:
        raise CliError("give --steps (steps per epoch) and optionally --epochs")
    epochs = args.epochs or 1
    b = args.batch_size or 1
    n = args.dataset_size or b * need(args, "steps", "without --dataset-size")
    shuffle = Shuffle(b, n)
    per_epoch = shuffle.steps_per_epoch
    schemes: list[Scheme] = [
        Deterministic(b, n), Poisson(b / n), shuffle, BalancedIteration(per_epoch, 1),
    ]
    total = int(round(epochs * per_epoch))
    base = Training(make_mechanism(args), schemes[1], steps=total, relation=make_relation(args))
    return base, schemes, b, n, epochs


def cmd_compare(args: argparse.Namespace) -> None:
    """``privamp compare``: deterministic, Poisson, shuffle and balanced batches side by
    side (a row says why when no accountant covers its scheme)."""
    check_plot_target(args.plot)
    if args.plot:
        need(args, "sigma", "for --plot")
    base, schemes, b, n, epochs = _compare_run(args)
    rows = []
    for scheme in iterate(schemes, "comparing", unit=" schemes"):
        rows.extend(compare(base, [scheme], delta=args.delta, epsilon=args.epsilon).rows)
    quantity = "epsilon" if args.delta is not None else "delta"
    at = args.delta if args.delta is not None else args.epsilon
    table = Comparison(quantity, float(at), tuple(rows))
    settings = (f"{base.mechanism}, batch {b} of {n}, {base.steps} steps ({epochs:g} epochs), "
                f"{base.relation}")
    if args.json:
        print(json.dumps({"inputs": inputs(args, base), **table.to_dict()}))
    else:
        print(settings)
        print_table(table, args)
    if args.plot:
        from ..plotting import plot_epsilon_vs_sigma

        sigma = float(need(args, "sigma", "for --plot"))
        path = plot_epsilon_vs_sigma(
            schemes, np.geomspace(sigma / 2.5, sigma * 2.5, 9), epochs, args.delta or 1e-6,
            args.plot, base.relation, args.sensitivity,
            title=f"batch {b} of {n}, {epochs:g} epochs, {base.relation}, "
                  f"delta={args.delta or 1e-6:g}",
        )
        print(f"wrote {path}", file=sys.stderr if args.json else sys.stdout)


def cmd_curve(args: argparse.Namespace) -> None:
    """``privamp curve``: epsilon after each epoch (or at ``--points`` steps) of a run."""
    from ..plotting import curve_steps, epsilon_over_training, plot_epsilon_curve

    check_plot_target(args.plot)
    run = make_run(args)
    steps = curve_steps(run, args.points)
    bar = progress(total=len(steps), desc="epsilon over training", log_every=0.0,
                   unit=" points")
    try:
        points = epsilon_over_training(run, args.delta, steps, accountant=args.accountant,
                                       callback=lambda k, g: bar.update())
    finally:
        bar.close()
    if args.json:
        print(json.dumps({"inputs": inputs(args, run), "steps": steps,
                          "epsilon": [g.to_dict() for _, g in points]}))
    else:
        print(f"epsilon at delta={args.delta:g} over training  ({describe(run)})")
        print(f"  {'steps':>10}{'lower':>12}{'upper':>12}")
        for k, g in points:
            lo = "-" if g.lower is None else f"{g.lower:.4g}"
            hi = "-" if g.upper is None else f"{g.upper:.4g}"
            print(f"  {k:>10}{lo:>12}{hi:>12}")
    if args.plot:
        path = plot_epsilon_curve(points, args.plot, f"{describe(run)}, delta={args.delta:g}")
        print(f"wrote {path}", file=sys.stderr if args.json else sys.stdout)


def cmd_rdp(args: argparse.Namespace) -> None:
    """``privamp rdp``: the one-step Rényi DP curve, or ``--list`` the methods."""
    mech = make_mechanism(args)
    scheme = make_scheme(args)
    rel = make_relation(args)
    if args.list:
        for name, source in rdp_methods(mech, scheme, rel):
            print(f"{name:<22}{source}")
        return
    curve = rdp_curve(mech, scheme, np.asarray(args.alpha, dtype=float), rel, args.method)
    if args.json:
        print(json.dumps({
            "inputs": inputs(args),
            "alpha": curve.alpha.tolist(),
            "epsilon": curve.epsilon.tolist(),
            "kind": "upper",
            "methods": list(curve.methods),
        }))
        return
    print(f"Rényi DP upper bounds, one step: {mech}, {scheme}, {rel}")
    for a, e, m in zip(curve.alpha, curve.epsilon, curve.methods, strict=True):
        print(f"  alpha {a:>10.4g}   epsilon <= {Bound(e, 'upper', m):.6g}   ({m})")


def cmd_reproduce(args: argparse.Namespace) -> None:
    """``privamp reproduce``: redraw a paper's figures."""
    from ..reproduce import figures, reproduce

    names = [args.figure] if args.figure is not None else list(figures(args.paper))
    for name in iterate(names, f"drawing {args.paper}", unit=" figures"):
        for p in reproduce(args.paper, name, args.out, fast=args.fast):
            print(f"wrote {p}")


def cmd_support(args: argparse.Namespace) -> None:
    """``privamp support``: the support matrix as markdown."""
    from ..support import support_markdown

    print(support_markdown(), end="")
