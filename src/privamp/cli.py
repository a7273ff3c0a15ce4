"""The ``privamp`` command line.

    privamp epsilon --sigma 1.1 --scheme poisson --rate 0.0042667 --steps 14063 --delta 1e-5
    privamp delta   --sigma 0.8 --scheme shuffle --batch-size 60 --dataset-size 60000 \
                    --epochs 1 --epsilon 1
    privamp compare --sigma 0.5 --steps 10000 --delta 1e-6
    privamp calibrate --epsilon 3 --delta 1e-5 --scheme poisson --rate 0.01 --steps 10000
    privamp rdp     --sigma 1.0 --scheme poisson --rate 0.01 --alpha 2 4 8 [--method NAME]
    privamp reproduce PAPER [--figure N] [--out DIR]
    privamp support     # which results and accountants apply where (markdown)
    privamp demo

Bad input prints one line ``privamp: error: ...`` and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import __version__
from .accounting.calibration import calibrate, compare
from .accounting.training import Training
from .errors import NotApplicable
from .mechanisms.base import Mechanism
from .mechanisms.gaussian import Gaussian
from .mechanisms.laplace import Laplace
from .mechanisms.randomized_response import RandomizedResponse
from .results import Guarantee
from .sampling.relations import AddRemove, Relation, Substitution, ZeroOut
from .sampling.schemes import (
    BalancedIteration,
    Deterministic,
    ModelSplit,
    Poisson,
    Scheme,
    Shuffle,
    WithoutReplacement,
    WithReplacement,
)
from .theorems.registry import rdp_curve, rdp_methods

__all__ = [
    "main",
    "build_parser",
]


SCHEMES = (
    "poisson",
    "without-replacement",
    "with-replacement",
    "deterministic",
    "shuffle",
    "balanced",
    "model-split",
    "dropout",
)


RELATIONS = {"add-remove": AddRemove, "substitution": Substitution, "zero-out": ZeroOut}


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


# -- building values from flags -----------------------------------------------------------
def _need(args: argparse.Namespace, name: str, why: str) -> Any:
    value = getattr(args, name)
    if value is None:
        raise CliError(f"--{name.replace('_', '-')} is required {why}")
    return value


def make_mechanism(args: argparse.Namespace, sigma: float | None = None) -> Mechanism:
    kind = args.mechanism
    if kind == "gaussian":
        s = sigma if sigma is not None else _need(args, "sigma", "for the Gaussian mechanism")
        return Gaussian(s, sensitivity=args.sensitivity)
    if kind == "laplace":
        return Laplace(_need(args, "scale", "for the Laplace mechanism"), args.sensitivity)
    return RandomizedResponse(_need(args, "theta", "for randomized response"))


def make_scheme(args: argparse.Namespace, name: str | None = None) -> Scheme:
    name = name or args.scheme
    why = f"for --scheme {name}"
    if name == "poisson":
        return Poisson(_need(args, "rate", why))
    if name in ("without-replacement", "with-replacement", "deterministic", "shuffle"):
        cls = {
            "without-replacement": WithoutReplacement,
            "with-replacement": WithReplacement,
            "deterministic": Deterministic,
            "shuffle": Shuffle,
        }[name]
        return cls(_need(args, "batch_size", why), _need(args, "dataset_size", why))
    if name == "balanced":
        steps = args.balanced_steps or _need(args, "steps", why)
        return BalancedIteration(steps, args.participations)
    if name == "model-split":
        return ModelSplit(_need(args, "parts", why), args.selected)
    if name == "dropout":
        return ModelSplit(2, 1)
    raise CliError(f"--scheme must be one of {', '.join(SCHEMES)}, got {name!r}")


def make_relation(args: argparse.Namespace) -> Relation:
    return RELATIONS[args.relation](group=args.group)


def make_run(args: argparse.Namespace, sigma: float | None = None) -> Training:
    if (args.steps is None) == (args.epochs is None):
        raise CliError("give exactly one of --steps or --epochs")
    return Training(
        make_mechanism(args, sigma),
        make_scheme(args),
        steps=args.steps,
        epochs=args.epochs,
        relation=make_relation(args),
    )


# -- output -------------------------------------------------------------------------------
def _with_progress(label: str, fn: Callable[[], Any]) -> Any:
    """Run fn; on a terminal, show elapsed seconds on stderr while it takes more than 1 s."""
    if not sys.stderr.isatty():
        return fn()
    done = threading.Event()

    def ticker() -> None:
        start = time.monotonic()
        while not done.wait(0.5):
            elapsed = time.monotonic() - start
            if elapsed > 1.0:
                sys.stderr.write(f"\r{label} ... {elapsed:.0f} s")
                sys.stderr.flush()

    t = threading.Thread(target=ticker, daemon=True)
    t.start()
    try:
        return fn()
    finally:
        done.set()
        t.join()
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


def _describe(run: Training) -> str:
    return f"{run.mechanism}, {run.scheme}, {run.steps} steps, {run.relation}"


def _print_guarantee(title: str, g: Guarantee, as_json: bool) -> None:
    if as_json:
        print(g.to_json())
        return
    print(title)
    if g.exact:
        print(f"  exact  {float(g.upper.value):.6g}   {g.upper.source}")
    else:
        for label, b in (("upper", g.upper), ("lower", g.lower)):
            if b is None:
                print(f"  {label}  {'-':>10}   no {label} bound available for this setting")
            else:
                print(f"  {label}  {float(b.value):>10.6g}   {b.source}")
    for name, why in g.declined:
        print(f"  ({name} does not apply: {why})")


# -- commands -------------------------------------------------------------------------------
def cmd_epsilon(args: argparse.Namespace) -> None:
    run = make_run(args)
    g = _with_progress("accounting", lambda: run.epsilon(args.delta, accountant=args.accountant))
    _print_guarantee(f"epsilon at delta={args.delta:g}  ({_describe(run)})", g, args.json)


def cmd_delta(args: argparse.Namespace) -> None:
    run = make_run(args)
    g = _with_progress("accounting", lambda: run.delta(args.epsilon, accountant=args.accountant))
    _print_guarantee(f"delta at epsilon={args.epsilon:g}  ({_describe(run)})", g, args.json)


def cmd_calibrate(args: argparse.Namespace) -> None:
    if args.mechanism != "gaussian":
        raise CliError("calibrate tunes the Gaussian noise multiplier: use --mechanism gaussian")
    make_run(args, sigma=1.0)  # validate the other flags once, before searching
    b = _with_progress(
        "calibrating",
        lambda: calibrate(
            args.epsilon, args.delta, lambda s: make_run(args, sigma=s), accountant=args.accountant
        ),
    )
    if args.json:
        print(b.to_json())
    else:
        print(f"noise multiplier for epsilon <= {args.epsilon:g} at delta = {args.delta:g}")
        print(f"  sigma  {float(b.value):.6g}   {b.source}")


def cmd_compare(args: argparse.Namespace) -> None:
    if args.steps is None and args.epochs is None:
        raise CliError("give --steps (steps per epoch) and optionally --epochs")
    steps_per_epoch = args.steps
    epochs = args.epochs or 1
    b = args.batch_size or 1
    n = args.dataset_size or b * steps_per_epoch
    if n % b:
        raise CliError(f"--batch-size {b} must divide --dataset-size {n}")
    steps_per_epoch = n // b
    total = int(round(epochs * steps_per_epoch))
    schemes: list[Scheme] = [
        Deterministic(b, n),
        Poisson(b / n),
        Shuffle(b, n),
        BalancedIteration(steps_per_epoch, 1),
    ]
    mech = make_mechanism(args)
    base = Training(mech, schemes[1], steps=total, relation=make_relation(args))
    table = _with_progress(
        "comparing", lambda: compare(base, schemes, delta=args.delta, epsilon=args.epsilon)
    )
    if args.json:
        print(json.dumps(table.to_dict()))
    else:
        print(f"{mech}, batch {b} of {n}, {total} steps ({epochs:g} epochs), {base.relation}")
        print(table)
    if args.plot:
        from .plotting import plot_epsilon_vs_sigma

        sigma = float(args.sigma)
        path = plot_epsilon_vs_sigma(
            schemes, np.geomspace(sigma / 2.5, sigma * 2.5, 9), epochs, args.delta or 1e-6,
            args.plot, base.relation, args.sensitivity,
        )
        print(f"wrote {path}")


def cmd_rdp(args: argparse.Namespace) -> None:
    mech = make_mechanism(args)
    scheme = make_scheme(args)
    rel = make_relation(args)
    if args.list:
        for name, source in rdp_methods(mech, scheme, rel):
            print(f"{name:<22}{source}")
        return
    curve = rdp_curve(mech, scheme, np.asarray(args.alpha, dtype=float), rel, args.method)
    if args.json:
        print(
            json.dumps(
                {
                    "alpha": curve.alpha.tolist(),
                    "epsilon": curve.epsilon.tolist(),
                    "kind": "upper",
                    "methods": list(curve.methods),
                }
            )
        )
        return
    print(f"Rényi DP upper bounds, one step: {mech}, {scheme}, {rel}")
    for a, e, m in zip(curve.alpha, curve.epsilon, curve.methods, strict=True):
        print(f"  alpha {a:>10.4g}   epsilon <= {e:.6g}   ({m})")


def cmd_reproduce(args: argparse.Namespace) -> None:
    from .reproduce import reproduce

    paths = _with_progress(
        "drawing", lambda: reproduce(args.paper, args.figure, args.out, fast=args.fast)
    )
    for p in paths:
        print(f"wrote {p}")


def cmd_support(args: argparse.Namespace) -> None:
    from .support import support_markdown

    print(support_markdown(), end="")


def cmd_demo(args: argparse.Namespace) -> None:
    q, sigma, epochs, delta = 256 / 60000, 1.1, 60, 1e-5
    mech = Gaussian(sigma)
    run = Training(mech, Poisson(q), epochs=epochs)
    print("privamp demo: DP-SGD on 60,000 examples, batches of 256, noise multiplier 1.1,")
    print(f"60 epochs ({run.steps} steps), delta = 1e-5, add/remove neighbours.\n")
    t0 = time.perf_counter()
    g = run.epsilon(delta)
    dt = time.perf_counter() - t0
    _print_guarantee("Poisson subsampling (what DP-SGD analyses assume):", g, False)
    print(f"  ({dt:.2f} s)\n")
    schemes: list[tuple[str, Scheme]] = [
        ("fixed-size batches, fresh random batch each step (substitution, sensitivity 2C)",
         WithoutReplacement(256, 60000)),
        ("shuffled batches, zero-out neighbours (what most code actually runs)",
         Shuffle(250, 60000)),
        ("deterministic batches, zero-out neighbours", Deterministic(250, 60000)),
    ]
    shuffle_lower = None
    for title, scheme in schemes:
        # fixed-size batches: substitution (sensitivity 2C); shuffle / deterministic batches:
        # zero-out neighbours (Chua et al. 2024), the relation their analysis uses
        relation = Substitution() if isinstance(scheme, WithoutReplacement) else ZeroOut()
        sens = 2.0 if isinstance(scheme, WithoutReplacement) else 1.0
        r = Training(Gaussian(sigma, sensitivity=sens), scheme, epochs=epochs, relation=relation)
        try:
            t0 = time.perf_counter()
            gg = r.epsilon(delta)
            _print_guarantee(f"{title}:", gg, False)
            print(f"  ({time.perf_counter() - t0:.2f} s)\n")
            if isinstance(scheme, Shuffle) and gg.lower is not None:
                shuffle_lower = float(gg.lower.value)
        except NotApplicable as exc:
            print(f"{title}: not available yet ({exc})\n")
    if shuffle_lower is not None and g.upper is not None:
        ratio = shuffle_lower / float(g.upper.value)
        print(f"Reporting the Poisson epsilon ({float(g.upper.value):.3g}) for a shuffled run "
              f"under-reports it by a factor of at least {ratio:.1f}.")


# -- parser ---------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``privamp <command>: error: <what>`` on stderr and exit
    status 2, pointing at ``--help`` instead of printing the whole usage."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _count(text: str) -> int:
    """A whole number >= 1 for --steps, --batch-size, ...: also accepts 1e12 or 1000.0."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if not (x >= 1 and x.is_integer()):
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(x)


def _run_flags(p: argparse.ArgumentParser, *, scheme_required: bool = True) -> None:
    m = p.add_argument_group("mechanism")
    m.add_argument("--mechanism", choices=("gaussian", "laplace", "rr"), default="gaussian")
    m.add_argument("--sigma", type=float, help="Gaussian noise multiplier")
    m.add_argument("--scale", type=float, help="Laplace scale")
    m.add_argument("--theta", type=float, help="randomized response: truth probability")
    m.add_argument("--sensitivity", type=float, default=1.0, help="sensitivity (default 1)")
    s = p.add_argument_group("sampling")
    s.add_argument("--scheme", choices=SCHEMES, default="poisson" if not scheme_required else None,
                   required=scheme_required)
    s.add_argument("--rate", type=float, help="Poisson sampling rate")
    s.add_argument("--batch-size", type=_count)
    s.add_argument("--dataset-size", type=_count)
    s.add_argument("--participations", type=_count, default=1, help="balanced: steps per record")
    s.add_argument("--balanced-steps", type=_count, help="balanced: steps per epoch")
    s.add_argument("--parts", type=_count, help="model split: number of submodels")
    s.add_argument("--selected", type=_count, default=1, help="model split: parts per record")
    s.add_argument("--relation", choices=tuple(RELATIONS), default="add-remove")
    s.add_argument("--group", type=_count, default=1, help="group size K")
    r = p.add_argument_group("run")
    r.add_argument("--steps", type=_count)
    r.add_argument("--epochs", type=float)
    r.add_argument("--accountant", default="best", help="best | pld | rdp | ...")
    p.add_argument("--json", action="store_true", help="print JSON")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="privamp",
        description="How private is this training run, given how it samples its data?",
    )
    parser.add_argument("--version", action="version", version=f"privamp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("epsilon", help="epsilon of a run at a given delta")
    _run_flags(p)
    p.add_argument("--delta", type=float, required=True)
    p.set_defaults(func=cmd_epsilon)

    p = sub.add_parser("delta", help="delta of a run at a given epsilon")
    _run_flags(p)
    p.add_argument("--epsilon", type=float, required=True)
    p.set_defaults(func=cmd_delta)

    p = sub.add_parser("calibrate", help="noise multiplier meeting a target (epsilon, delta)")
    _run_flags(p)
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, required=True)
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("compare", help="deterministic / poisson / shuffle / balanced side by side")
    _run_flags(p, scheme_required=False)
    p.add_argument("--delta", type=float)
    p.add_argument("--epsilon", type=float)
    p.add_argument("--plot", help="also draw eps vs sigma to this file (png/pdf/svg)")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("rdp", help="one-step Rényi DP curve, or --list the applicable methods")
    _run_flags(p)
    p.add_argument("--alpha", type=float, nargs="+", default=[2, 4, 8, 16, 32, 64])
    p.add_argument("--method", default="best")
    p.add_argument("--list", action="store_true", help="list applicable methods and sources")
    p.set_defaults(func=cmd_rdp)

    p = sub.add_parser("reproduce", help="redraw a figure of one of the four papers")
    p.add_argument("paper", choices=("balle2018", "schuchardt2024", "dong2025", "chua2024"))
    p.add_argument("--figure", help="figure name (default: all)")
    p.add_argument("--out", default="figures", help="output folder (default: figures)")
    p.add_argument("--fast", action="store_true", help="coarse grids (seconds)")
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser("support", help="the support matrix (markdown), from the registries")
    p.set_defaults(func=cmd_support)

    p = sub.add_parser("demo", help="the canonical DP-SGD example")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, --version, or a one-line usage error (status 2)
        return int(stop.code or 0)
    try:
        args.func(args)
    except (CliError, ValueError) as exc:
        print(f"privamp: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

