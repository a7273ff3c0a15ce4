"""Issue 30: the whole certified trade-off curve on 1,000 alphas against one epsilon query
(target: at most 2x), each on a fresh run (so each builds its PLD), best of ``--repeat``;
with ``--samplers``, the canonical run's certified TPR at FPR 1e-3 / 1e-2 under each sampler.

    python benchmarks/tradeoff.py [--repeat 3] [--samplers]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import privamp as pa

RUNS = {
    "Poisson, canonical": lambda: pa.Training(pa.Gaussian(1.1), pa.Poisson(256 / 60000),
                                              epochs=60),
    "BallsInBins(235), 60 epochs": lambda: pa.Training(pa.Gaussian(1.1), pa.BallsInBins(235),
                                                       epochs=60),
    "Shuffle(256, 60000), 60 epochs": lambda: pa.Training(pa.Gaussian(1.1),
                                                          pa.Shuffle(256, 60000), epochs=60),
}


def _best(f, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        out.append(time.perf_counter() - t0)
    return min(out)


def samplers() -> None:
    """The canonical run (Gaussian(1.1), 60 epochs of 256 / 60000) under each sampler."""
    m = pa.Gaussian(1.1)
    runs = {
        "Poisson(256/60000)": pa.Training(m, pa.Poisson(256 / 60000), epochs=60),
        "Shuffle(256, 60000)": pa.Training(m, pa.Shuffle(256, 60000), epochs=60),
        "Deterministic(256, 60000)": pa.Training(m, pa.Deterministic(256, 60000), epochs=60),
        "BallsInBins(235)": pa.Training(m, pa.BallsInBins(235), epochs=60),
        "PersistentBallsInBins(235)": pa.Training(m, pa.PersistentBallsInBins(235), epochs=60),
        "WithoutReplacement, substitution (2C)": pa.Training(
            pa.Gaussian(1.1, 2.0), pa.WithoutReplacement(256, 60000), epochs=60,
            relation=pa.Substitution()),
    }
    print(f"{'sampler':<40}{'TPR @ FPR 1e-3':>22}{'TPR @ FPR 1e-2':>22}  mu <=    from")
    for name, run in runs.items():
        tr = run.tradeoff([1e-3, 1e-2])
        hi = 1 - np.asarray(tr.lower.value)
        lo = 1 - np.asarray(tr.upper.value)
        src = "PLD" if "pessimistic PLD" in tr.lower.source else "(eps, delta) profile"
        cells = [f"[{a:.5f}, {b:.5f}]" for a, b in zip(lo, hi, strict=True)]
        print(f"{name:<40}{cells[0]:>22}{cells[1]:>22}  {float(run.gdp_mu().upper):<7.4g}  {src}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--samplers", action="store_true", help="the canonical run's TPR table")
    args = ap.parse_args()
    if args.samplers:
        samplers()
        return
    alphas = np.concatenate(([0.0], np.logspace(-8, 0, 999)))
    print(f"{'run':<34}{'epsilon (s)':>12}{'curve (s)':>12}{'ratio':>8}")
    for name, make in RUNS.items():
        t_eps = _best(lambda make=make: make().epsilon(1e-5), args.repeat)
        t_cur = _best(lambda make=make: make().tradeoff(alphas), args.repeat)
        print(f"{name:<34}{t_eps:>12.3f}{t_cur:>12.3f}{t_cur / t_eps:>8.2f}")


if __name__ == "__main__":
    main()
