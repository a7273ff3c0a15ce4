"""Width of the matrix-bins interval (issue 32): BandMF with the 4-band sqrt-Toeplitz
strategy (c_k = binom(2k, k) / 4^k) under persistent and fresh balls-in-bins, epsilon at
delta = 1e-5, with the DP-SGD (C = I) interval at the same sigma for reference.

Run: PYTHONPATH=src python benchmarks/bench_matrix_bins.py
"""

from __future__ import annotations

import time
from math import comb

import privamp as pa

COEF = [comb(2 * k, k) / 4 ** k for k in range(4)]


def row(scheme, epochs: int, sigma: float) -> str:
    steps = epochs * scheme.steps_per_epoch
    t = time.process_time()
    g = pa.Training(pa.MatrixMechanism.banded(COEF, sigma), scheme, steps=steps).epsilon(1e-5)
    cpu = time.process_time() - t
    d = pa.Training(pa.Gaussian(sigma), scheme, steps=steps).epsilon(1e-5)
    lo = "-" if g.lower is None else f"{float(g.lower):.3f}"
    dlo = "-" if d.lower is None else f"{float(d.lower):.3f}"
    return (f"| {scheme!r} | {epochs} | {sigma:g} | {lo} | {float(g.upper):.3f} | "
            f"{float(g.upper) / float(g.lower):.2f} | [{dlo}, {float(d.upper):.3f}] | "
            f"{cpu:.1f} |" if g.lower is not None else "")


def main() -> None:
    print("| scheme | epochs | sigma | lower | upper | upper/lower | DP-SGD (C = I) | CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    for scheme in (pa.PersistentBallsInBins(10), pa.PersistentBallsInBins(100),
                   pa.BallsInBins(10), pa.BallsInBins(100)):
        for epochs in (1, 5):
            for sigma in (1.0, 2.0, 4.0):
                print(row(scheme, epochs, sigma), flush=True)


if __name__ == "__main__":
    main()
