"""Balanced Iteration Subsampling with k = 1 (Dong, Chen, Ozgur 2025; "random allocation"),
T = 1000 steps per epoch: privamp's two-sided BIS PLD next to the Poisson PLD at rate 1/T
(same number of steps), eps(delta) intervals and wall-clock times side by side, one run.

    python benchmarks/bench_bis.py [--epochs 1 2] [--out benchmarks/results/bis.md]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import privamp as pa

T = 1000
SIGMAS = (0.8, 1.0, 2.0)
DELTAS = np.array([1e-5, 1e-8])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "bis.md"))
    args = ap.parse_args()
    lines = [
        f"# BIS (k = 1) vs Poisson at rate 1/T, T = {T}",
        "",
        "privamp `Training(Gaussian(sigma), BalancedIteration(T, 1), epochs=E).epsilon(delta)`"
        " (accountant `pld`: certified [lower, upper]) next to "
        "`Training(Gaussian(sigma), Poisson(1/T), steps=T*E).epsilon(delta)` (accountant `pld`)."
        " Times are wall-clock for both deltas together (fresh accountant each).",
        "",
        "| sigma | E | delta | BIS eps [lower, upper] | width | BIS time (s) "
        "| Poisson eps [lower, upper] | Poisson time (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for sigma in SIGMAS:
        for E in args.epochs:
            t0 = time.perf_counter()
            bis = pa.Training(pa.Gaussian(sigma), pa.BalancedIteration(T, 1), epochs=E)
            gb = bis.epsilon(DELTAS, accountant="pld")
            tb = time.perf_counter() - t0
            t0 = time.perf_counter()
            poi = pa.Training(pa.Gaussian(sigma), pa.Poisson(1.0 / T), steps=T * E)
            gp = poi.epsilon(DELTAS, accountant="pld")
            tp = time.perf_counter() - t0
            for i, dl in enumerate(DELTAS):
                bl, bu = float(gb.lower.value[i]), float(gb.upper.value[i])
                pl = float(gp.lower.value[i]) if gp.lower is not None else float("nan")
                pu = float(gp.upper.value[i])
                lines.append(
                    f"| {sigma:g} | {E} | {dl:g} | [{bl:.4f}, {bu:.4f}] | {bu - bl:.4f} "
                    f"| {tb:.2f} | [{pl:.4f}, {pu:.4f}] | {tp:.2f} |")
            print(lines[-2], lines[-1], sep="\n", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
