"""``privamp tradeoff``: certified TPR at FPR (trade-off curve, f-DP), GDP mu, audits."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from ..accounting.audit import audit_check
from ..errors import NotApplicable
from ..progress import working
from .flags import command, run_flags
from .output import describe, inputs, source_text
from .values import make_run

__all__ = [
    "add_tradeoff",
    "cmd_tradeoff",
]


def add_tradeoff(sub: Any) -> None:
    """Register the ``tradeoff`` subcommand on the subparsers ``sub``."""
    p = command(sub, "tradeoff", "certified TPR of any membership attack at given FPRs "
                "(trade-off curve, f-DP), a certified Gaussian-DP mu, audit checks",
                "privamp tradeoff --sigma 1.1 --scheme poisson --batch-size 256 "
                "--dataset-size 60000 --epochs 60 --fpr 1e-3 1e-2 --audit 0.001 0.004 100000 "
                "--plot tradeoff.png", cmd_tradeoff)
    run_flags(p)
    p.add_argument("--fpr", type=float, nargs="+", default=[1e-3, 1e-2, 0.1],
                   help="false-positive rates in [0, 1] (default 1e-3 1e-2 0.1)")
    p.add_argument("--order", default="either", choices=("either", "remove", "add"),
                   help="either order of the neighbours (default), remove (membership: "
                        "type I on the world without the record) or add")
    p.add_argument("--audit", type=float, nargs=3, action="append", metavar=("FPR", "TPR", "N"),
                   help="an audit's observed FPR, TPR over N trials per class (repeatable)")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="joint confidence of an audit's Clopper-Pearson bounds (default 0.95)")
    p.add_argument("--plot", help="also draw the curve to this file (png/pdf/svg)")


def cmd_tradeoff(args: argparse.Namespace) -> None:
    """``privamp tradeoff``: TPR bounds at ``--fpr``, GDP mu, ``--audit`` checks, ``--plot``."""
    if args.accountant != "best":
        raise ValueError("tradeoff uses every accountant offering a PLD (--accountant best)")
    if args.plot:
        from ..plotting import check_plot_path

        check_plot_path(args.plot)  # before the computing (fuzz, session 11)
    run = make_run(args)
    fprs = np.asarray(args.fpr, dtype=float)
    g = working("trade-off curve", lambda: run.tpr_at_fpr(fprs, args.order))
    try:
        gdp = run.gdp_mu()
        mu: float | None = float(gdp.upper)
    except NotApplicable as exc:
        gdp, mu, why = None, None, str(exc)
    audits = [audit_check(run, f, t, int(n), args.confidence) for f, t, n in args.audit or []]
    up, lo = np.asarray(g.upper.value), np.asarray(g.lower.value)
    if args.json:
        print(json.dumps({
            "inputs": inputs(args, run), "order": args.order, "fpr": fprs.tolist(),
            "tpr_upper": up.tolist(), "tpr_lower": lo.tolist(),
            "tpr_upper_source": g.upper.source, "tpr_lower_source": g.lower.source,
            "gdp_mu_upper": mu, "gdp_tolerance": None if gdp is None else gdp.tolerance,
            "gdp_clt_estimate": None if gdp is None else gdp.estimate,
            "audits": [{"fpr": a.fpr, "tpr": a.tpr, "fpr_upper": a.fpr_upper,
                        "tpr_lower": a.tpr_lower, "certified_tpr": a.certified_tpr,
                        "consistent": a.consistent, "message": a.message} for a in audits],
        }, indent=2))
    else:
        print(f"TPR of any attack at each FPR ({args.order} order; {describe(run)})")
        print(f"{'FPR':>10}{'TPR lower':>12}{'TPR upper':>12}")
        for f, a, b in zip(fprs, lo, up, strict=True):
            print(f"{f:>10.3g}{a:>12.5g}{b:>12.5g}")
        print(f"upper: {source_text(args, g.upper.source)}")
        print(f"lower: {source_text(args, g.lower.source)}")
        if gdp is not None:
            est = "" if gdp.estimate is None else (
                f"; CLT estimate {gdp.estimate:.4g} (an estimate, NOT a bound)")
            print(f"Gaussian DP: mu <= {mu:.4g} (certified, additive tolerance "
                  f"{gdp.tolerance:g}){est}")
        else:
            print(f"Gaussian DP: no certified mu ({why})")
        for a in audits:
            print(("!!! " if not a.consistent else "audit: ") + a.message)
    if args.plot:
        from ..plotting import plot_tradeoff

        curve = run.tradeoff(np.logspace(-6, 0, 400))
        path = plot_tradeoff(curve, args.plot, describe(run), mu, audits)
        print(f"wrote {path}", file=sys.stderr if args.json else sys.stdout)
