"""Issue 30: the whole certified trade-off curve on 1,000 alphas against one epsilon query
(target: at most 2x), each on a fresh run (so each builds its PLD), best of ``--repeat``.

    python benchmarks/tradeoff.py [--repeat 3]
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    alphas = np.concatenate(([0.0], np.logspace(-8, 0, 999)))
    print(f"{'run':<34}{'epsilon (s)':>12}{'curve (s)':>12}{'ratio':>8}")
    for name, make in RUNS.items():
        t_eps = _best(lambda make=make: make().epsilon(1e-5), args.repeat)
        t_cur = _best(lambda make=make: make().tradeoff(alphas), args.repeat)
        print(f"{name:<34}{t_eps:>12.3f}{t_cur:>12.3f}{t_cur / t_eps:>8.2f}")


if __name__ == "__main__":
    main()
