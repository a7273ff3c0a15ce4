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
import math
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import __version__
from .accounting.calibration import Comparison, calibrate, compare
from .accounting.training import Training
from .errors import NotApplicable
from .mechanisms.base import Mechanism
from .mechanisms.gaussian import Gaussian
from .mechanisms.laplace import Laplace
from .mechanisms.randomized_response import RandomizedResponse
from .progress import iterate, progress, working
from .results import Bound, Guarantee
from .sampling.relations import AddRemove, HybridSubstitution, Relation, Substitution, ZeroOut
from .sampling.schemes import (
    BalancedIteration,
    BallsInBins,
    Deterministic,
    ModelSplit,
    PartialModelSplit,
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


RELATIONS = {"add-remove": AddRemove, "substitution": Substitution, "zero-out": ZeroOut,
             "hybrid-substitution": HybridSubstitution}


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


# -- building values from flags -----------------------------------------------------------
def _need(args: argparse.Namespace, name: str, why: str) -> Any:
    value = getattr(args, name, None)
    if value is None:
        raise CliError(f"--{name.replace('_', '-')} is required {why}")
    return value


def _rate(args: argparse.Namespace) -> float:
    """--rate, or --batch-size / --dataset-size (the expected batch over the dataset)."""
    if args.rate is not None:
        return args.rate
    if args.batch_size is not None and args.dataset_size is not None:
        if args.batch_size > args.dataset_size:
            raise CliError(
                f"--batch-size {args.batch_size} must be at most --dataset-size "
                f"{args.dataset_size} for a Poisson rate"
            )
        return args.batch_size / args.dataset_size
    raise CliError("--rate is required for --scheme poisson (or --batch-size and --dataset-size)")


def _batches(cls: type[Scheme]) -> Callable[[argparse.Namespace], Scheme]:
    def build(args: argparse.Namespace) -> Scheme:
        why = f"for --scheme {cls.name}"
        return cls(_need(args, "batch_size", why), _need(args, "dataset_size", why))

    return build


def _balanced(args: argparse.Namespace) -> Scheme:
    steps = args.balanced_steps or getattr(args, "steps", None)
    if steps is None:
        raise CliError("--balanced-steps (steps per epoch) is required for --scheme balanced")
    return BalancedIteration(steps, args.participations)


def _partial_split(args: argparse.Namespace) -> Scheme:
    parts = _need(args, "parts", "for partial-model-split")
    rate = 1.0 if args.rate is None else args.rate
    return PartialModelSplit(parts, args.split_norm, args.shared_norm, rate)


@dataclass(frozen=True)
class SchemeEntry:
    """One ``--scheme`` choice: how to build it from the flags, and its help line."""

    build: Callable[[argparse.Namespace], Scheme]
    help: str


#: the ``--scheme`` choices; a new scheme plugs in with one line here
SCHEMES: dict[str, SchemeEntry] = {
    "poisson": SchemeEntry(lambda a: Poisson(_rate(a)),
                           "each example in each batch with probability --rate"),
    "without-replacement": SchemeEntry(_batches(WithoutReplacement),
                                       "a fresh batch of --batch-size distinct examples a step"),
    "with-replacement": SchemeEntry(_batches(WithReplacement),
                                    "--batch-size draws with replacement a step"),
    "deterministic": SchemeEntry(_batches(Deterministic),
                                 "the same consecutive batches every epoch"),
    "shuffle": SchemeEntry(_batches(Shuffle), "a fresh random permutation every epoch"),
    "balanced": SchemeEntry(_balanced, "each example in --participations of the steps of "
                            "an epoch (Dong et al. 2025)"),
    "model-split": SchemeEntry(lambda a: ModelSplit(_need(a, "parts", "for model-split"),
                                                    a.selected),
                               "each example updates --selected of --parts submodels"),
    "dropout": SchemeEntry(lambda a: ModelSplit(2, 1), "dropout (model split in 2)"),
    "balls-in-bins": SchemeEntry(lambda a: BallsInBins(_need(a, "batches", "for balls-in-bins")),
                                 "each example in one random batch of --batches per epoch"),
    "partial-model-split": SchemeEntry(_partial_split,
                                       "--parts submodels plus a shared part (--shared-norm), "
                                       "Poisson --rate (default 1)"),
}


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
    if name not in SCHEMES:
        raise CliError(f"--scheme must be one of {', '.join(SCHEMES)}, got {name!r}")
    return SCHEMES[name].build(args)


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


def _source(args: argparse.Namespace, source: str) -> str:
    return source if getattr(args, "verbose", False) else short_source(source)


_NOT_INPUTS = ("func", "json", "verbose", "plot", "out")


def _inputs(args: argparse.Namespace, run: Training | None = None) -> dict[str, Any]:
    """The flags given (and, for a run, what they were read as), for JSON output."""
    out = {k: v for k, v in vars(args).items() if v is not None and k not in _NOT_INPUTS}
    if run is not None:
        out["run"] = {"mechanism": repr(run.mechanism), "scheme": repr(run.scheme),
                      "steps": run.steps, "relation": repr(run.relation)}
    return out


def _brief(obj: object) -> str:
    """``str(obj)`` with long decimals cut to 6 significant digits (for titles and headers;
    ``--json`` keeps the exact values)."""
    return _LONG_DECIMAL.sub(lambda m: f"{float(m.group()):.6g}", str(obj))


_LONG_DECIMAL = re.compile(r"\d*\.\d{7,}(?:e[-+]?\d+)?")


def _describe(run: Training) -> str:
    return _brief(f"{run.mechanism}, {run.scheme}, {run.steps} steps, {run.relation}")


def _print_guarantee(title: str, g: Guarantee, args: argparse.Namespace,
                     run: Training | None = None) -> None:
    if args.json:
        print(json.dumps({"inputs": _inputs(args, run), **g.to_dict()}))
        return
    print(title)
    if g.exact:
        print(f"  exact  {g.upper:>10.6g}   {_source(args, g.upper.source)}")
    else:
        for label, b in (("upper", g.upper), ("lower", g.lower)):
            if b is None:
                print(f"  {label}  {'-':>10}   no {label} bound available for this setting")
            else:
                print(f"  {label}  {b:>10.6g}   {_source(args, b.source)}")
    for name, why in g.declined:
        print(f"  ({name} does not apply: {why})")


# -- commands -------------------------------------------------------------------------------
def cmd_epsilon(args: argparse.Namespace) -> None:
    run = make_run(args)
    g = working("accounting", lambda: run.epsilon(args.delta, accountant=args.accountant))
    _print_guarantee(f"epsilon at delta={args.delta:g}  ({_describe(run)})", g, args, run)


def cmd_delta(args: argparse.Namespace) -> None:
    run = make_run(args)
    g = working("accounting", lambda: run.delta(args.epsilon, accountant=args.accountant))
    _print_guarantee(f"delta at epsilon={args.epsilon:g}  ({_describe(run)})", g, args, run)


def _calibrate_progress() -> tuple[Any, dict[str, Any]]:
    """A progress bar and the keyword arguments that feed it from ``calibrate``'s callback."""
    bar = progress(total=None, desc="calibrating", log_every=0.0, unit=" probes")

    def callback(value: float, guarantee: Guarantee | None) -> None:
        up = "-" if guarantee is None or guarantee.upper is None else f"{guarantee.upper:.4g}"
        bar.set_postfix_str(f"sigma={value:.4g}, epsilon<={up}", refresh=False)
        bar.update()

    return bar, {"callback": callback}


def cmd_calibrate(args: argparse.Namespace) -> None:
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
        print(json.dumps({"inputs": _inputs(args, run), "noise_multiplier": b.value,
                          "source": b.source}))
        return
    print(f"noise multiplier  {b:.6g}")
    print(f"  the smallest found whose epsilon upper bound at delta={args.delta:g} is at "
          f"most {args.epsilon:g}")
    print(f"  ({_brief(run.scheme)}, {run.steps} steps, {run.relation}; "
          f"{_source(args, b.source)})")


def _compare_run(args: argparse.Namespace) -> tuple[Training, list[Scheme], int, int, float]:
    if args.steps is None and args.epochs is None:
        raise CliError("give --steps (steps per epoch) and optionally --epochs")
    epochs = args.epochs or 1
    b = args.batch_size or 1
    n = args.dataset_size or b * _need(args, "steps", "without --dataset-size")
    if n % b:
        raise CliError(f"--batch-size {b} must divide --dataset-size {n}")
    per_epoch = n // b
    schemes: list[Scheme] = [
        Deterministic(b, n), Poisson(b / n), Shuffle(b, n), BalancedIteration(per_epoch, 1),
    ]
    total = int(round(epochs * per_epoch))
    base = Training(make_mechanism(args), schemes[1], steps=total, relation=make_relation(args))
    return base, schemes, b, n, epochs


def cmd_compare(args: argparse.Namespace) -> None:
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
        print(json.dumps({"inputs": _inputs(args, base), **table.to_dict()}))
    else:
        print(settings)
        _print_table(table, args)
    if args.plot:
        from .plotting import plot_epsilon_vs_sigma

        sigma = float(_need(args, "sigma", "for --plot"))
        path = plot_epsilon_vs_sigma(
            schemes, np.geomspace(sigma / 2.5, sigma * 2.5, 9), epochs, args.delta or 1e-6,
            args.plot, base.relation, args.sensitivity,
            title=f"batch {b} of {n}, {epochs:g} epochs, {base.relation}, "
                  f"delta={args.delta or 1e-6:g}",
        )
        print(f"wrote {path}", file=sys.stderr if args.json else sys.stdout)


def _print_table(table: Comparison, args: argparse.Namespace) -> None:
    other = "delta" if table.quantity == "epsilon" else "epsilon"
    print(f"{table.quantity} at {other} = {table.at:g}")
    print(f"{'scheme':<22}{'lower':>12}{'upper':>12}  source (of the upper bound)")
    for name, g, note in table.rows:
        if g is None:
            print(f"{name:<22}{'-':>12}{'-':>12}  {note}")
            continue
        lo = "-" if g.lower is None else f"{g.lower:.4g}"
        hi = "-" if g.upper is None else f"{g.upper:.4g}"
        src = (g.upper or g.lower).source
        print(f"{name:<22}{lo:>12}{hi:>12}  {_source(args, src)}")


def cmd_curve(args: argparse.Namespace) -> None:
    from .plotting import curve_steps, epsilon_over_training, plot_epsilon_curve

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
        print(json.dumps({"inputs": _inputs(args, run), "steps": steps,
                          "epsilon": [g.to_dict() for _, g in points]}))
    else:
        print(f"epsilon at delta={args.delta:g} over training  ({_describe(run)})")
        print(f"  {'steps':>10}{'lower':>12}{'upper':>12}")
        for k, g in points:
            lo = "-" if g.lower is None else f"{g.lower:.4g}"
            hi = "-" if g.upper is None else f"{g.upper:.4g}"
            print(f"  {k:>10}{lo:>12}{hi:>12}")
    if args.plot:
        path = plot_epsilon_curve(points, args.plot, f"{_describe(run)}, delta={args.delta:g}")
        print(f"wrote {path}", file=sys.stderr if args.json else sys.stdout)


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
                    "inputs": _inputs(args),
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
        print(f"  alpha {a:>10.4g}   epsilon <= {Bound(e, 'upper', m):.6g}   ({m})")


def cmd_reproduce(args: argparse.Namespace) -> None:
    from .reproduce import figures, reproduce

    names = [args.figure] if args.figure is not None else list(figures(args.paper))
    for name in iterate(names, f"drawing {args.paper}", unit=" figures"):
        for p in reproduce(args.paper, name, args.out, fast=args.fast):
            print(f"wrote {p}")


def cmd_support(args: argparse.Namespace) -> None:
    from .support import support_markdown

    print(support_markdown(), end="")


def cmd_demo(args: argparse.Namespace) -> None:
    args = argparse.Namespace(json=False, verbose=getattr(args, "verbose", False))
    q, sigma, epochs, delta = 256 / 60000, 1.1, 60, 1e-5
    mech = Gaussian(sigma)
    run = Training(mech, Poisson(q), epochs=epochs)
    print("privamp demo: DP-SGD on 60,000 examples, batches of 256, noise multiplier 1.1,")
    print(f"60 epochs ({run.steps} steps), delta = 1e-5, add/remove neighbours.\n")
    t0 = time.perf_counter()
    g = run.epsilon(delta)
    dt = time.perf_counter() - t0
    _print_guarantee("Poisson subsampling (what DP-SGD analyses assume):", g, args)
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
            _print_guarantee(f"{title}:", gg, args)
            print(f"  ({time.perf_counter() - t0:.2f} s)\n")
            if isinstance(scheme, Shuffle) and gg.lower is not None:
                shuffle_lower = float(gg.lower.value)
        except NotApplicable as exc:
            print(f"{title}: not available yet ({exc})\n")
    if shuffle_lower is not None and g.upper is not None:
        ratio = shuffle_lower / float(g.upper.value)
        print(f"Reporting the Poisson epsilon ({g.upper:.3g}) for a shuffled run "
              f"under-reports it by a factor of at least {math.floor(ratio * 10) / 10:.1f}.")


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


def _mechanism_flags(p: argparse.ArgumentParser, sigma: bool = True) -> None:
    m = p.add_argument_group("mechanism (one release, in units of the clipping norm)")
    m.add_argument("--mechanism", choices=("gaussian", "laplace", "rr"), default="gaussian",
                   help="base mechanism (default gaussian)")
    if sigma:
        m.add_argument("--sigma", type=float, help="Gaussian noise multiplier (noise std / C)")
    m.add_argument("--scale", type=float, help="Laplace scale")
    m.add_argument("--theta", type=float, help="randomized response: truth probability")
    m.add_argument("--sensitivity", type=float, default=1.0,
                   help="sensitivity under the relation (default 1; 2 for substitution of "
                        "clipped gradients)")


def _sampling_flags(p: argparse.ArgumentParser, scheme: bool = True) -> None:
    s = p.add_argument_group("sampling")
    if scheme:
        lines = "; ".join(f"{k}: {e.help}" for k, e in SCHEMES.items())
        s.add_argument("--scheme", choices=tuple(SCHEMES), required=True, metavar="SCHEME",
                       help=f"how batches are drawn ({lines})")
        s.add_argument("--rate", type=float,
                       help="Poisson rate (default --batch-size / --dataset-size)")
    s.add_argument("--batch-size", type=_count, help="examples per batch (expected, Poisson)")
    s.add_argument("--dataset-size", type=_count, help="examples in the dataset")
    if scheme:
        s.add_argument("--participations", type=_count, default=1,
                       help="balanced: steps per example per epoch (default 1)")
        s.add_argument("--balanced-steps", type=_count,
                       help="balanced: steps per epoch (default --steps)")
        s.add_argument("--parts", type=_count, help="model-split: number of submodels")
        s.add_argument("--selected", type=_count, default=1,
                       help="model-split: submodels each example updates (default 1)")
        s.add_argument("--batches", type=_count, help="balls-in-bins: batches per epoch")
        s.add_argument("--split-norm", type=float, default=1.0,
                       help="partial-model-split: clipping norm of the split part (default 1)")
        s.add_argument("--shared-norm", type=float, default=0.0,
                       help="partial-model-split: clipping norm of the shared part (default 0)")
    s.add_argument("--relation", choices=tuple(RELATIONS), default="add-remove",
                   help="neighbouring datasets (default add-remove)")
    s.add_argument("--group", type=_count, default=1, help="protect groups of K examples")


def _run_flags(p: argparse.ArgumentParser, *, sigma: bool = True, run: bool = True) -> None:
    """Mechanism, sampling, (with ``run``) steps and accountant, and output flags."""
    _mechanism_flags(p, sigma)
    _sampling_flags(p)
    if run:
        r = p.add_argument_group("run")
        r.add_argument("--steps", type=_count, help="number of training steps")
        r.add_argument("--epochs", type=float, help="number of epochs (instead of --steps)")
        r.add_argument("--accountant", default="best",
                       help="best (default: tightest of all that apply) | pld | rdp | "
                            "black-box-group")
    _output_flags(p)


def _output_flags(p: argparse.ArgumentParser) -> None:
    o = p.add_argument_group("output")
    o.add_argument("--json", action="store_true",
                   help="print JSON (the inputs echoed under 'inputs')")
    o.add_argument("--verbose", action="store_true",
                   help="full theorem text for each source (default: short)")


def _command(sub: Any, name: str, summary: str, example: str, func: Callable) -> Any:
    p = sub.add_parser(name, help=summary, description=summary,
                       epilog=f"example:\n  {example}",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=func)
    return p


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="privamp",
        description="How private is this training run, given how it samples its data?",
        epilog="run `privamp COMMAND --help` for the flags and an example of each command",
    )
    parser.add_argument("--version", action="version", version=f"privamp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = _command(sub, "epsilon", "epsilon of a run at a given delta (upper and lower bound)",
                 "privamp epsilon --sigma 1.1 --scheme poisson --batch-size 256 "
                 "--dataset-size 60000 --epochs 60 --delta 1e-5", cmd_epsilon)
    _run_flags(p)
    p.add_argument("--delta", type=float, required=True, help="target delta, in (0, 1)")

    p = _command(sub, "delta", "delta of a run at a given epsilon (upper and lower bound)",
                 "privamp delta --sigma 0.8 --scheme shuffle --batch-size 60 "
                 "--dataset-size 60000 --epochs 1 --epsilon 1", cmd_delta)
    _run_flags(p)
    p.add_argument("--epsilon", type=float, required=True, help="epsilon, >= 0")

    p = _command(sub, "calibrate", "the smallest noise multiplier meeting (epsilon, delta)",
                 "privamp calibrate --epsilon 3 --delta 1e-5 --scheme poisson --rate 0.01 "
                 "--steps 10000", cmd_calibrate)
    _run_flags(p, sigma=False)
    p.add_argument("--epsilon", type=float, required=True, help="target epsilon, > 0")
    p.add_argument("--delta", type=float, required=True, help="target delta, in (0, 1)")

    p = _command(sub, "compare", "deterministic / poisson / shuffle / balanced side by side",
                 "privamp compare --sigma 0.5 --batch-size 100 --dataset-size 10000 "
                 "--epochs 3 --delta 1e-6 --plot compare.png", cmd_compare)
    _mechanism_flags(p)
    _sampling_flags(p, scheme=False)
    r = p.add_argument_group("run")
    r.add_argument("--steps", type=_count, help="steps per epoch (without --dataset-size)")
    r.add_argument("--epochs", type=float, help="number of epochs (default 1)")
    _output_flags(p)
    p.add_argument("--delta", type=float, help="epsilon at this delta")
    p.add_argument("--epsilon", type=float, help="or delta at this epsilon")
    p.add_argument("--plot", help="also draw epsilon vs sigma to this file (png/pdf/svg)")

    p = _command(sub, "curve", "epsilon after each epoch (or at --points steps) of a run",
                 "privamp curve --sigma 1.0 --scheme shuffle --batch-size 100 "
                 "--dataset-size 10000 --epochs 5 --delta 1e-5 --plot curve.png", cmd_curve)
    _run_flags(p)
    p.add_argument("--delta", type=float, required=True, help="target delta, in (0, 1)")
    p.add_argument("--points", type=_count, default=10,
                   help="points on the curve (default 10; at most one per epoch for "
                        "epoch-structured schemes, at most 200)")
    p.add_argument("--plot", help="also draw the curve to this file (png/pdf/svg)")

    p = _command(sub, "rdp", "one-step Rényi DP curve, or --list the applicable methods",
                 "privamp rdp --sigma 1.0 --scheme poisson --rate 0.01 --alpha 2 4 8", cmd_rdp)
    _run_flags(p, run=False)
    p.add_argument("--alpha", type=float, nargs="+", default=[2, 4, 8, 16, 32, 64],
                   help="Rényi orders > 1 (default 2 4 8 16 32 64)")
    p.add_argument("--method", default="best", help="best, or a name from --list")
    p.add_argument("--list", action="store_true", help="list applicable methods and sources")

    p = _command(sub, "reproduce", "redraw a figure of one of the four papers",
                 "privamp reproduce chua2024 --figure 1 --out figures --fast", cmd_reproduce)
    p.add_argument("paper", choices=("balle2018", "schuchardt2024", "dong2025", "chua2024"),
                   help="which paper")
    p.add_argument("--figure", help="figure name (default: all)")
    p.add_argument("--out", default="figures", help="output folder (default: figures)")
    p.add_argument("--fast", action="store_true", help="coarse grids (seconds)")

    _command(sub, "support", "the support matrix (markdown), from the registries",
             "privamp support > support.md", cmd_support)
    p = _command(sub, "demo", "the canonical DP-SGD example", "privamp demo", cmd_demo)
    p.add_argument("--verbose", action="store_true", help="full theorem text for each source")
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

