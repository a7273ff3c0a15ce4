"""CPU time of the default ``epsilon(1e-5)`` call for groups under Poisson sampling (issue 28:
a group of 8 <= 3x a single record), with the epsilon interval and each accountant's time.

Run: ``PYTHONPATH=src python benchmarks/bench_groups.py [label]``; prints a markdown table.
CPU time (time.process_time), each setting in a fresh Training, best of ``--repeat``.
"""

from __future__ import annotations

import sys
import time

import privamp as pa

try:
    from privamp.theorems.schuchardt2024.group_pld import clear_shared
except ImportError:  # before the group PLD accountant
    clear_shared = None

SETTINGS = [(1e-3, 1.0, 100), (1e-3, 2.0, 10_000)]
GROUPS = [1, 2, 4, 8, 32]
DELTA = 1e-5


def one(q: float, sigma: float, steps: int, k: int, accountant: str = "best"):
    """(cpu seconds, guarantee) of one fresh query."""
    run = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=steps,
                      relation=pa.AddRemove(group=k))
    if clear_shared is not None:
        clear_shared()  # each query composes afresh
    t0 = time.process_time()
    g = run.epsilon(DELTA, accountant=accountant)
    return time.process_time() - t0, g


def main(label: str, repeat: int = 2) -> None:
    print(f"| {label}: q, sigma, T | K | CPU s | epsilon [lower, upper] | upper from |")
    print("|---|---|---|---|---|")
    for q, sigma, steps in SETTINGS:
        for k in GROUPS:
            best, g = min((one(q, sigma, steps, k) for _ in range(repeat)), key=lambda r: r[0])
            lo = g.lower.value if g.lower is not None else float("nan")
            up = g.upper.value if g.upper is not None else float("nan")
            src = (g.upper.source[:40] if g.upper is not None else "-").replace("|", "/")
            print(f"| {q:g}, {sigma:g}, {steps} | {k} | {best:.3f} | [{float(lo):.4f}, "
                  f"{float(up):.4f}] | {src} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "now")
