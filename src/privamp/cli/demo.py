"""``privamp demo``: the canonical DP-SGD example (60,000 examples, batches of 256, noise
multiplier 1.1, 60 epochs, delta 1e-5) under four ways of drawing the batches.
``tools/docs_numbers.py`` prints the README's copy of it from :func:`demo_rows`."""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass

from ..accounting.training import Training
from ..errors import NotApplicable
from ..mechanisms.gaussian import Gaussian
from ..results import Guarantee
from ..sampling.relations import Substitution, ZeroOut
from ..sampling.schemes import Deterministic, Poisson, Shuffle, WithoutReplacement
from .output import print_guarantee

__all__ = [
    "DemoRow",
    "demo_rows",
    "under_report_factor",
    "cmd_demo",
    "BATCH_SIZE",
    "DATASET_SIZE",
    "SIGMA",
    "EPOCHS",
    "DELTA",
]

BATCH_SIZE, DATASET_SIZE, SIGMA, EPOCHS, DELTA = 256, 60000, 1.1, 60, 1e-5


@dataclass(frozen=True)
class DemoRow:
    """One setting of the demo.

    Attributes:
        key: a short name (``"poisson"``, ``"fixed-size"``, ``"shuffle"``,
            ``"deterministic"``).
        title: the line ``privamp demo`` prints above the numbers.
        label: the README's short label.
        source: the README's note on where the numbers come from.
        run: the training run.
    """

    key: str
    title: str
    label: str
    source: str
    run: Training


def demo_rows() -> list[DemoRow]:
    """The demo's four runs: Poisson (add/remove), fixed-size batches (substitution, clipped
    gradients of sensitivity 2C), shuffled and deterministic batches of 256 (zero-out
    neighbours, Chua et al. 2024; 60000 = 234 * 256 + 96: PyTorch's short last batch)."""
    b, n = BATCH_SIZE, DATASET_SIZE
    return [
        DemoRow("poisson", "Poisson subsampling (what DP-SGD analyses assume):",
                "Poisson subsampling", "two-sided PLD",
                Training(Gaussian(SIGMA), Poisson(b / n), epochs=EPOCHS)),
        DemoRow("fixed-size", "fixed-size batches, fresh random batch each step "
                "(substitution, sensitivity 2C):",
                "fixed-size batches (substitution)", "Balle et al. 2018, Thm 9 + PLD",
                Training(Gaussian(SIGMA, sensitivity=2.0), WithoutReplacement(b, n),
                         epochs=EPOCHS, relation=Substitution())),
        DemoRow("shuffle", "shuffled batches, zero-out neighbours (what most code actually "
                "runs):", "shuffled batches (zero-out)", "Chua et al. 2024, eq. (7) / Thm 4.1",
                Training(Gaussian(SIGMA), Shuffle(b, n), epochs=EPOCHS, relation=ZeroOut())),
        DemoRow("deterministic", "deterministic batches, zero-out neighbours:",
                "deterministic batches (zero-out)", "Chua et al. 2024, Prop 3.1",
                Training(Gaussian(SIGMA), Deterministic(b, n), epochs=EPOCHS,
                         relation=ZeroOut())),
    ]


def under_report_factor(poisson: Guarantee | None, shuffle: Guarantee | None) -> float | None:
    """How many times the shuffled run's certified lower bound exceeds the Poisson upper
    bound, rounded down to one decimal (None when either side is missing)."""
    if poisson is None or shuffle is None or poisson.upper is None or shuffle.lower is None:
        return None
    return math.floor(float(shuffle.lower.value) / float(poisson.upper.value) * 10) / 10


def cmd_demo(args: argparse.Namespace) -> None:
    """``privamp demo``: print the four settings (a setting no accountant covers yet says
    so in one line)."""
    args = argparse.Namespace(json=False, verbose=getattr(args, "verbose", False))
    rows = demo_rows()
    print(f"privamp demo: DP-SGD on {DATASET_SIZE:,} examples, batches of {BATCH_SIZE}, "
          f"noise multiplier {SIGMA:g},")
    print(f"{EPOCHS} epochs ({rows[0].run.steps} Poisson steps, {rows[2].run.steps} steps of "
          f"fixed batches), delta = {DELTA:g}, add/remove neighbours.\n")
    found: dict[str, Guarantee] = {}
    for row in rows:
        t0 = time.perf_counter()
        try:
            g = row.run.epsilon(DELTA)
        except NotApplicable as exc:
            print(f"{row.title.rstrip(':')}: not available yet ({exc})\n")
            continue
        found[row.key] = g
        print_guarantee(row.title, g, args)
        print(f"  ({time.perf_counter() - t0:.2f} s)\n")
    factor = under_report_factor(found.get("poisson"), found.get("shuffle"))
    if factor is not None:
        print(f"Reporting the Poisson epsilon ({found['poisson'].upper:.6g}) for a shuffled run "
              f"under-reports it by a factor of at least {factor:.1f}.")
