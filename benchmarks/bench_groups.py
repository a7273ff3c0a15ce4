"""CPU time of the default ``epsilon(1e-5)`` call for a group of K records under Poisson
sampling against the same run with one record (issue 28: a group <= 3x a single record),
with the epsilon intervals.

Run: ``PYTHONPATH=src python benchmarks/bench_groups.py [--repeat N] [--json FILE]
[--base FILE]``; prints a markdown table (with the relative widths (upper - lower) / upper of
the group's and the single record's intervals, and with ``--base`` the upper bound's move).
CPU time (time.process_time), each query on a fresh Training with a fresh group composition;
the single-record and group queries of a setting alternate in the same process (interleaved),
best of ``--repeat`` each, and the ratio is group / single.
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


def _width(g: pa.Guarantee) -> float:
    """(upper - lower) / upper of a guarantee (nan without both sides)."""
    lo, up = _val(g.lower), _val(g.upper)
    return (up - lo) / up


def main(repeat: int = 3, out: str | None = None, base: str | None = None) -> None:
    """Print the table (and write ``out`` as JSON); with ``base`` (an earlier ``--json``), the
    upper bound's relative move against it ("upper moved": after / before - 1)."""
    before = json.load(open(base)) if base else {}
    print("| sigma, T | K | single CPU s | group CPU s | group / single | "
          "group epsilon [lower, upper] | width group | width single | upper moved |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = {}
    for sigma in SIGMAS:
        for steps in STEPS:
            for k in GROUPS:
                single = group = float("inf")
                g = s1 = None
                for _ in range(repeat):  # interleaved: single, group, single, group, ...
                    t1, s1 = one(sigma, steps, 1)
                    single = min(single, t1)
                    t, g = one(sigma, steps, k)
                    group = min(group, t)
                assert g is not None and s1 is not None
                lo, up = _val(g.lower), _val(g.upper)
                key = f"{sigma},{steps},{k}"
                rows[key] = dict(single=single, group=group, lower=lo, upper=up,
                                 width=_width(g), single_width=_width(s1))
                moved = (f"{up / before[key]['upper'] - 1:+.1e}" if key in before else "")
                print(f"| {sigma:g}, {steps} | {k} | {single:.3f} | {group:.3f} | "
                      f"{group / single:.2f} | [{lo:.8g}, {up:.8g}] | {_width(g):.1e} | "
                      f"{_width(s1):.1e} | {moved} |", flush=True)
    if out:
        with open(out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--base", default=None, help="an earlier --json: report the upper's move")
    a = ap.parse_args()
    main(a.repeat, a.json, a.base)
