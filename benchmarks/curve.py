"""Issue 28: ``run.epsilon_curve(delta)`` (100 evenly spaced checkpoints by default) against one
query ``run.epsilon(delta)``, Poisson-sampled Gaussian, side by side in one process.

Each repetition builds fresh Trainings (nothing kept between calls) and times, in CPU seconds,
the single query and the curve, alternating which goes first.  Reported per setting: the best
of ``--reps`` CPU times of each, their ratio (curve / single), the widest relative interval
of the curve and of the single query, and a consistency check of the curve against single
queries at a few checkpoints (upper >= single lower and lower <= single upper).

Run: ``PYTHONPATH=src python benchmarks/curve.py [--reps 5] [--check]`` (any privamp tree on
the path: the before column of benchmarks/results/curve.md ran the same script on main).
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import cpu

DELTA = 1e-5

ROWS = [
    # (q, sigma, T)
    (256 / 60000, 1.1, 14063),
    (1e-3, 1.0, 10_000),
    (0.01, 2.0, 1000),
    (1e-5, 0.5, 1_000_000),
    (1e-4, 1.0, 100_000),
    (1e-3, 4.0, 1_000_000),
    (0.01, 0.5, 1000),
    (0.01, 1.0, 10_000),
    (0.1, 1.0, 1000),
    (0.1, 4.0, 10_000),
    (0.05, 2.0, 100_000),
]


def run_of(q: float, sigma: float, T: int):
    import privamp as pa

    return pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T)

def check(q: float, sigma: float, T: int, curve) -> str:
    """Consistency with single queries at 3 checkpoints (first, middle, last)."""
    ts = np.unique(np.round(np.linspace(T / 100, T, 100)).clip(1).astype(int))
    bad = []
    for i in (0, len(ts) // 2, len(ts) - 1):
        one = run_of(q, sigma, int(ts[i])).epsilon(DELTA)
        lo1 = 0.0 if one.lower is None else float(one.lower.value)
        up, lo = float(curve.upper.value[i]), float(curve.lower.value[i])
        if not (up >= lo1 and lo <= float(one.upper.value)):
            bad.append(int(ts[i]))
    return "ok" if not bad else f"INCONSISTENT at {bad}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--rows", type=str, default="", help="comma-separated row indices")
    args = ap.parse_args()
    rows = [ROWS[int(i)] for i in args.rows.split(",")] if args.rows else ROWS
    print("| q | sigma | T | single cpu s | curve cpu s | ratio | single width | curve max "
          "width | check |")
    print("|---|---|---|---|---|---|---|---|---|")
    for q, sigma, T in rows:
        singles, curves = [], []
        g1 = gc = None
        for r in range(args.reps):
            order = ("s", "c") if r % 2 == 0 else ("c", "s")
            for w in order:
                if w == "s":
                    g1, t = cpu(lambda q=q, s=sigma, T=T: run_of(q, s, T).epsilon(DELTA))
                    singles.append(t)
                else:
                    gc, t = cpu(lambda q=q, s=sigma, T=T: run_of(q, s, T).epsilon_curve(DELTA))
                    curves.append(t)
        s, c = min(singles), min(curves)

        w1 = (float(g1.upper.value) - float(g1.lower.value)) / float(g1.upper.value)
        wc = float(np.max((gc.upper.value - gc.lower.value) / gc.upper.value))
        chk = check(q, sigma, T, gc) if args.check else "-"
        print(f"| {q:.4g} | {sigma:g} | {T:g} | {s:.3f} | {c:.3f} | {c / s:.2f}x | "
              f"{w1:.2e} | {wc:.2e} | {chk} |", flush=True)


if __name__ == "__main__":
    main()
