"""CPU time of the default ``epsilon(1e-5)`` call for a group of K records under Poisson
sampling against the same run with one record (issue 28: a group <= 3x a single record),
with the epsilon intervals.

Run: ``PYTHONPATH=src python benchmarks/bench_groups.py [--repeat N] [--json FILE]``; prints
a markdown table.  CPU time (time.process_time), each query on a fresh Training with a fresh
group composition; the single-record and group queries of a setting alternate in the same
process (interleaved), best of ``--repeat`` each, and the ratio is group / single.
"""

from __future__ import annotations

import argparse
import json
import time

import privamp as pa

try:
    from privamp.theorems.schuchardt2024.group_pld import clear_shared
except ImportError:  # before the group PLD accountant
    clear_shared = None

Q, DELTA = 1e-3, 1e-5
SIGMAS = [0.5, 1.0, 2.0, 4.0]
STEPS = [100, 10_000]
GROUPS = [2, 4, 8, 16]


def one(sigma: float, steps: int, k: int) -> tuple[float, pa.Guarantee]:
    """(cpu seconds, guarantee) of one fresh default query."""
    run = pa.Training(pa.Gaussian(sigma), pa.Poisson(Q), steps=steps,
                      relation=pa.AddRemove(group=k))
    if clear_shared is not None:
        clear_shared()  # each query composes afresh
    t0 = time.process_time()
    g = run.epsilon(DELTA)
    return time.process_time() - t0, g


def _val(b) -> float:
    return float("nan") if b is None else float(b.value)


def main(repeat: int = 3, out: str | None = None) -> None:
    print("| sigma, T | K | single CPU s | group CPU s | group / single | "
          "group epsilon [lower, upper] |")
    print("|---|---|---|---|---|---|")
    rows = {}
    for sigma in SIGMAS:
        for steps in STEPS:
            for k in GROUPS:
                single = group = float("inf")
                g = None
                for _ in range(repeat):  # interleaved: single, group, single, group, ...
                    single = min(single, one(sigma, steps, 1)[0])
                    t, g = one(sigma, steps, k)
                    group = min(group, t)
                assert g is not None
                lo, up = _val(g.lower), _val(g.upper)
                rows[f"{sigma},{steps},{k}"] = dict(single=single, group=group, lower=lo,
                                                    upper=up)
                print(f"| {sigma:g}, {steps} | {k} | {single:.3f} | {group:.3f} | "
                      f"{group / single:.2f} | [{lo:.8g}, {up:.8g}] |", flush=True)
    if out:
        with open(out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    main(a.repeat, a.json)
