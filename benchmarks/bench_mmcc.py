"""Matrix mechanisms under Poisson sampling (privamp.theorems.mmcc2024): time and width of the
certified interval (noise-dominance upper, realised-pair lower) for the sqrt-Toeplitz strategy
``binom(2k, k) / 4^k`` at a few (bands, q, sigma, T), delta = 1e-5.

    python benchmarks/bench_mmcc.py [--out benchmarks/results/mmcc.md]
"""

from __future__ import annotations

import argparse
import time

from scipy.special import comb

import privamp as pa

DELTA = 1e-5
CASES = [  # (bands, q, sigma, T)
    (1, 0.01, 1.0, 1000),
    (4, 0.01, 1.0, 100),
    (4, 0.01, 1.0, 1000),
    (4, 0.1, 2.0, 1000),
    (16, 0.01, 2.0, 10_000),
    (64, 0.001, 4.0, 100_000),
]


def row(bands: int, q: float, sigma: float, steps: int) -> str:
    coef = [comb(2 * k, k) / 4.0 ** k for k in range(bands)]
    mech = pa.MatrixMechanism.banded(coef, sigma)
    t0 = time.process_time()
    g = pa.Training(mech, pa.Poisson(q), steps=steps).epsilon(DELTA, accountant="matrix-poisson")
    cpu = time.process_time() - t0
    up = float(g.upper.value)
    lo = float(g.lower.value) if g.lower is not None else 0.0
    ratio = up / lo if lo > 0 else float("inf")
    return (f"| {bands} | {q:g} | {sigma:g} | {steps} | {up:.4g} | {lo:.4g} | {ratio:.3g} "
            f"| {cpu:.2f} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="also write the table to this file")
    args = ap.parse_args()
    lines = ["| bands | q | sigma | T | upper | lower | upper/lower | CPU s |",
             "|---|---|---|---|---|---|---|---|"]
    for case in CASES:
        lines.append(row(*case))
        print(lines[-1], flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(f"delta = {DELTA:g}\n\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
