"""privamp's RDP accountant against dp-accounting's and Opacus's RDP accountants, side by side.

Issue 14's RDP target: ``Training(...).epsilon(1e-5, accountant="rdp")`` for the
Poisson-subsampled Gaussian no slower than dp-accounting's ``RdpAccountant`` (default orders)
and never looser, on q in {1e-3, 1e-2} x sigma in {0.8, 1} x T in {1e3, 1e4, 1e5, 1e6}.
Each accountant is timed in the same process, alternately, fastest of ``--repeat`` calls
(the least noisy estimate on a shared machine); ratios are peer time / privamp time.

    python benchmarks/bench_rdp.py [--settings N] [--repeat 5] [--out benchmarks/results/rdp.md]
"""

from __future__ import annotations

import argparse
import gc
import math
import platform
import time
from collections.abc import Callable
from pathlib import Path

from run import dpa_rdp, opacus_rdp, privamp_rdp


def fastest(fn: Callable[[], float], repeat: int) -> tuple[float, float]:
    """(value, seconds): the fastest of ``repeat`` calls."""
    best, value = math.inf, math.nan
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return float(value), best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--settings", type=int, default=0, help="only the first N settings")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "rdp.md"))
    args = ap.parse_args()
    grid = [(q, s, T) for q in (1e-3, 1e-2) for s in (0.8, 1.0) for T in (10**3, 10**4, 10**5,
                                                                          10**6)]
    grid = grid[: args.settings] if args.settings else grid
    for fn in (privamp_rdp, dpa_rdp, opacus_rdp):  # warm-up: imports, first-call costs
        fn(1e-2, 1.0, 100)
    lines = [
        "# privamp RDP accountant vs dp-accounting and Opacus RDP (epsilon at delta = 1e-5)",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}; one run, same "
        f"process, fastest of {args.repeat} calls each; ratio = peer time / privamp time.",
        "",
        "| q | sigma | T | privamp | dp-accounting | Opacus | privamp <= dp-acc | "
        "privamp ms | ratio dp-acc | ratio Opacus |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    met, worst = 0, math.inf
    for q, s, T in grid:
        v, t = fastest(lambda: privamp_rdp(q, s, T), args.repeat)  # noqa: B023
        vd, td = fastest(lambda: dpa_rdp(q, s, T), args.repeat)  # noqa: B023
        vo, to = fastest(lambda: opacus_rdp(q, s, T), args.repeat)  # noqa: B023
        ok = v <= vd
        met += ok and td >= t
        worst = min(worst, td / t)
        lines.append(f"| {q:g} | {s:g} | {T:.0e} | {v:.6f} | {vd:.6f} | {vo:.6f} | "
                     f"{'yes' if ok else 'NO'} | {1e3 * t:.1f} | {td / t:.2f}x | {to / t:.2f}x |")
        print(lines[-1], flush=True)
    lines += ["", f"No slower than dp-accounting and no looser: met in {met} of {len(grid)} "
              f"settings; slowest ratio {worst:.2f}x."]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(lines[-1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
