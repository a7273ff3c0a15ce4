"""The commands (one function each, called with the parsed flags); ``demo`` is in
:mod:`privamp.cli.demo`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from ..accounting.calibration import KNOBS, calibrate
from ..accounting.compare import Comparison, compare
from ..accounting.training import Training
from ..mechanisms.base import Mechanism
from ..progress import iterate, progress, working
from ..results import Bound, Guarantee
from ..sampling.schemes import BalancedIteration, Deterministic, Poisson, Scheme, Shuffle
from ..theorems.registry import rdp_curve, rdp_methods
from .output import describe, inputs, print_guarantee, print_table, source_text
from .values import CliError, make_mechanism, make_relation, make_run, make_scheme, need

__all__ = [
    "KNOB_FLAGS",
    "cmd_epsilon",
    "cmd_delta",
    "cmd_calibrate",
    "cmd_compare",
    "cmd_curve",
    "cmd_rdp",
    "cmd_reproduce",
    "cmd_support",
]


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


#: ``--knob`` of ``privamp calibrate``: (calibrate's knob, the flag it replaces)
KNOB_FLAGS = {"noise": ("noise", "sigma"), "rate": ("rate", "rate"),
              "batch-size": ("batch_size", "batch_size"), "steps": ("steps", "steps"),
              "epochs": ("epochs", "epochs")}


def _calibrate_progress(knob: str) -> tuple[Any, dict[str, Any]]:
    """A progress bar and the keyword arguments that feed it from ``calibrate``'s callback."""
    bar = progress(total=None, desc="calibrating", log_every=0.0, unit=" probes")

    def callback(value: float, guarantee: Guarantee | None) -> None:
        up = "-" if guarantee is None or guarantee.upper is None else f"{guarantee.upper:.4g}"
        bar.set_postfix_str(f"{knob}={value:.4g}, epsilon<={up}", refresh=False)
        bar.update()

    return bar, {"callback": callback}


def _knob_run(args: argparse.Namespace, knob: str) -> Any:
    """``value -> the run`` with ``value`` in place of the knob's flag."""
    _, dest = KNOB_FLAGS[knob]

    def make(value: float) -> Any:
        if dest == "sigma":
            return make_run(args, sigma=value)
        ns = argparse.Namespace(**vars(args))
        setattr(ns, dest, value)
        if dest in ("steps", "epochs"):
            setattr(ns, "epochs" if dest == "steps" else "steps", None)
        return make_run(ns)

    return make


def cmd_calibrate(args: argparse.Namespace) -> None:
    """``privamp calibrate``: the value of ``--knob`` (default the Gaussian noise multiplier)
    meeting the target, with the guarantee it meets."""
    knob = args.knob
    name, dest = KNOB_FLAGS[knob]
    if knob == "noise" and args.mechanism != "gaussian":
        raise CliError("--knob noise tunes the Gaussian noise multiplier: use --mechanism "
                       "gaussian, or tune --knob rate, batch-size, steps or epochs")
    if knob == "noise" and getattr(args, "sigma", None) is not None:
        raise CliError("--knob noise searches the noise: drop --sigma (or tune another knob)")
    if knob != "noise" and getattr(args, "phase", None):
        raise CliError("with --phase groups, calibrate tunes the noise of every phase "
                       "(--knob noise)")
    if knob in ("rate", "batch-size") and dest not in vars(args):
        raise CliError(f"--knob {knob} needs a scheme with --{knob}")
    make = _knob_run(args, knob)
    low, _, integer, _ = KNOBS[name]
    # check the other flags before searching
    run = make(1.0 if knob == "noise" else int(low) if integer else low)
    bar, extra = _calibrate_progress(dest)
    try:
        c = calibrate(args.epsilon, args.delta, make, accountant=args.accountant, knob=name,
                      **extra)
    finally:
        bar.close()
    if args.json:
        print(json.dumps({"inputs": inputs(args, run), "knob": name, "value": c.value,
                          "noise_multiplier" if knob == "noise" else name: c.value,
                          "source": c.source, "calibration": c.to_dict()}))
        return
    print(c.text(source_text(args, c.source)))
    side = "smallest" if knob == "noise" else "largest"
    print(f"  the {side} {c.name} found (to 0.1%) whose epsilon upper bound at "
          f"delta={args.delta:g} is at most {args.epsilon:g}; lower bound "
          + ("-" if c.guarantee.lower is None else f"{c.guarantee.lower:.4g}"))
    print(f"  ({describe(make(c.value))}; {c.probes} accountant probes"
          + (f"; {c.note}" if c.note else "") + ")")


def _compare_run(args: argparse.Namespace) -> tuple[Training, list[Scheme], int, int, float]:
    """The base (Poisson) run and the four schemes of ``privamp compare``: batches of
    ``--batch-size`` cut from ``--dataset-size`` records, ceil(n / b) steps an epoch (a short
    last batch when b does not divide n, as PyTorch's DataLoader); ``--steps`` training steps
    in all, or ``--epochs`` epochs (the same meaning as in every command)."""
    b = need(args, "batch_size", "(the batch every scheme draws)")
    n = need(args, "dataset_size", "(the records the batches are cut from)")
    if (args.steps is None) == (args.epochs is None):
        raise CliError("give exactly one of --steps (training steps in all) or --epochs")
    if b > n:
        raise CliError(f"--batch-size ({b}) must be at most --dataset-size ({n})")
    shuffle = Shuffle(b, n)
    per_epoch = shuffle.steps_per_epoch
    schemes: list[Scheme] = [
        Deterministic(b, n), Poisson(b / n), shuffle, BalancedIteration(per_epoch, 1),
    ]
    total = args.steps if args.steps is not None else int(round(args.epochs * per_epoch))
    epochs = total / per_epoch
    base = Training(make_mechanism(args), schemes[1], steps=total, relation=make_relation(args))
    return base, schemes, b, n, epochs


def cmd_compare(args: argparse.Namespace) -> None:
    """``privamp compare``: deterministic, Poisson, shuffle and balanced batches side by
    side (a row says why when no accountant covers its scheme)."""
    if args.plot:
        from ..plotting import check_plot_path

        if args.mechanism == "matrix":
            raise CliError("--plot draws the Gaussian mechanism's epsilon vs sigma: not with "
                           "--mechanism matrix")
        check_plot_path(args.plot)  # before the computing
        need(args, "sigma", "for --plot")
    base, schemes, b, n, epochs = _compare_run(args)
    rows: list[tuple[str, Guarantee | None, str]] = []
    for scheme in iterate(schemes, "comparing", unit=" schemes"):
        rows.extend(compare(base, [scheme], delta=args.delta, epsilon=args.epsilon,
                            scheme_relations=args.relation is None).rows)
    quantity = "epsilon" if args.delta is not None else "delta"
    at = args.delta if args.delta is not None else args.epsilon
    table = Comparison(quantity, float(at), tuple(rows))
    settings = (f"{base.mechanism}, batch {b} of {n}, {base.steps} steps ({epochs:.4g} "
                f"epoch{'' if epochs == 1 else 's'}), {base.relation}")
    if args.json:
        print(json.dumps({"inputs": inputs(args, base), **table.to_dict()}))
    else:
        print(settings)
        print_table(table, args)
    if args.plot:
        from ..plotting import plot_epsilon_vs_sigma

        sigma = float(args.sigma)
        delta = args.delta or 1e-6
        # the table's answers are the plot's middle points when it shows epsilon at --delta
        known = ({} if args.delta is None else
                 {(name, sigma): g for name, g, _ in table.rows})
        sigmas = np.geomspace(sigma / 2.5, sigma * 2.5, 7)
        sigmas[3] = sigma  # exactly the table's
        path = plot_epsilon_vs_sigma(
            schemes, sigmas, epochs, delta,
            args.plot, base.resolved_relation, args.sensitivity,
            title=f"batch {b} of {n}, {base.steps} steps, {base.relation}, delta={delta:g}",
            known=known, steps=base.steps,
        )
        print(f"wrote {path}", file=sys.stderr if args.json else sys.stdout)


def cmd_curve(args: argparse.Namespace) -> None:
    """``privamp curve``: epsilon after each epoch (or at ``--points`` steps) of a run."""
    from ..plotting import curve_steps, epsilon_over_training, plot_epsilon_curve

    if args.plot:
        from ..plotting import check_plot_path

        if args.mechanism == "matrix":
            raise CliError("--plot draws the Gaussian mechanism's epsilon vs sigma: not with "
                           "--mechanism matrix")
        check_plot_path(args.plot)  # before the computing
    run = make_run(args)
    if hasattr(run, "phases"):
        raise CliError("curve follows one run: give its flags, not --phase groups")
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
    if not isinstance(mech, Mechanism):
        raise CliError("--mechanism matrix is a whole-run mechanism with no one-step Rényi DP "
                       "curve; ask privamp epsilon / delta for the run")
    scheme = make_scheme(args)
    rel = make_relation(args, scheme)
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
    from ..plotting import pyplot
    from ..reproduce import figures, reproduce

    pyplot()  # matplotlib checked before any computing
    names = [args.figure] if args.figure is not None else list(figures(args.paper))
    for name in iterate(names, f"drawing {args.paper}", unit=" figures"):
        for p in reproduce(args.paper, name, args.out, fast=args.fast):
            print(f"wrote {p}")


def cmd_support(args: argparse.Namespace) -> None:
    """``privamp support``: the support matrix as markdown."""
    from ..support import support_markdown

    print(support_markdown(), end="")
