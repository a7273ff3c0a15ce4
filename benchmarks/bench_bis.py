"""Random allocation k-of-T (Balanced Iteration Subsampling with k participations, Dong, Chen,
Ozgur 2025; Feldman & Shenfeld 2025) at sigma = 1, delta = 1e-5: privamp's certified
[lower, upper] with width, wall-clock time and peak memory, next to Poisson at the same
expected batch size (rate k/T, same steps), the published upper bound, and the PLD_accounting
package (v2.0, Feldman & Shenfeld's group) as a timing / upper-bound peer (E = 1 only: it
takes minutes per setting) -- one run.

    python benchmarks/bench_bis.py [--no-peer] [--out benchmarks/results/bis.md]
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import privamp as pa

SIGMA = 1.0
DELTA = 1e-5
SETTINGS = [(1000, 1, 1), (1000, 1, 10), (1000, 5, 1), (1000, 5, 10), (1000, 10, 1),
            (1000, 10, 10), (100, 10, 1)]
#: published upper bounds (Feldman & Shenfeld 2025, arXiv:2502.08202), sigma = 1, delta = 1e-5
PUBLISHED = {(100, 10, 1): 6.1198}
#: settings measured for resident memory only (sigma, T, k, E)
RSS_ONLY = [(0.8, 1000, 1, 1)]
#: privamp before issue 13 (same machine, same settings)
BEFORE = {(1000, 1, 1): (0.13795, 0.13972), (1000, 5, 1): (0.6457, 0.8078),
          (1000, 10, 1): (1.1497, 1.7106), (100, 10, 1): (4.9437, 6.1244)}


def _timed(fn: Callable[[], object]) -> tuple[object, float, float]:
    """(result, seconds, peak MB): time of a plain run, then peak traced memory of a second
    run (tracemalloc sees numpy's buffers; it slows the run, so it is not timed)."""
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t0
    gc.collect()
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return out, dt, peak


_RSS_CODE = """
import json, sys, time
import privamp as pa
def kib(key):  # this process's own values (ru_maxrss would count the forking parent's)
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1])
T, k, E, sigma = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
r0 = kib("VmHWM:")
t0 = time.perf_counter()
g = pa.Training(pa.Gaussian(sigma), pa.BalancedIteration(T, k), epochs=E).epsilon(
    1e-5, accountant="pld")
dt = time.perf_counter() - t0
r1 = kib("VmHWM:")
print(json.dumps({"extra_mb": (r1 - r0) / 1024, "seconds": dt, "upper": float(g.upper.value)}))
"""


def _rss(T: int, k: int, E: int, sigma: float = SIGMA) -> dict:
    """Peak resident memory above the import baseline (VmHWM of /proc/self/status) of one
    query in a fresh interpreter: sees what tracemalloc does not (FFT work buffers,
    allocator)."""
    out = subprocess.run([sys.executable, "-c", _RSS_CODE, str(T), str(k), str(E), str(sigma)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _privamp(T: int, k: int, E: int) -> tuple[float, float]:
    g = pa.Training(pa.Gaussian(SIGMA), pa.BalancedIteration(T, k), epochs=E).epsilon(
        DELTA, accountant="pld")
    lo = float(g.lower.value) if g.lower is not None else float("nan")
    return lo, float(g.upper.value)


def _poisson(T: int, k: int, E: int) -> tuple[float, float]:
    g = pa.Training(pa.Gaussian(SIGMA), pa.Poisson(k / T), steps=T * E).epsilon(
        DELTA, accountant="pld")
    lo = float(g.lower.value) if g.lower is not None else float("nan")
    return lo, float(g.upper.value)


def _peer(T: int, k: int, E: int) -> tuple[float, float] | None:
    try:
        from PLD_accounting import gaussian_allocation_epsilon_range
    except ImportError:
        return None
    up, lo = gaussian_allocation_epsilon_range(delta=DELTA, sigma=SIGMA, num_steps=T,
                                               num_selected=k, num_epochs=E)
    return float(lo), float(up)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-peer", action="store_true", help="skip PLD_accounting (slow)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "bis.md"))
    args = ap.parse_args()
    lines = [
        f"# Random allocation k-of-T, sigma = {SIGMA:g}, delta = {DELTA:g}",
        "",
        "privamp `Training(Gaussian(1), BalancedIteration(T, k), epochs=E).epsilon(1e-5, "
        "accountant='pld')`: certified [lower, upper] (k = 1: chords over the cells of the "
        "lattice sum (upper) and threshold tests on it (lower); k > 1: upper by the k x "
        "1-of-T/k reduction, lower by threshold tests on the saddle-point lattice statistic "
        "sum_i log(1 + z W_i) / z, z = 0.75 k / T, of the exact k-of-T output). "
        "Poisson: rate k/T, T E steps (`pld`). PLD_accounting: "
        "`gaussian_allocation_epsilon_range` (its lower end bounds the *reduced* mechanism, "
        "not the k-of-T scheme). Times: one run, wall clock; memory: tracemalloc peak of a "
        "second run (numpy arrays), and resident peak above the import baseline of the query "
        "in a fresh interpreter (VmHWM: also FFT work buffers and the allocator).",
        "",
        "| T | k | E | privamp [lower, upper] | width | time (s) | peak MB (traced) | "
        "peak MB (resident) | before | "
        "Poisson k/T [lower, upper] | published upper | PLD_accounting [lower, upper] | "
        "its time (s) | time ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for T, k, E in SETTINGS:
        (lo, up), dt, mb = _timed(lambda T=T, k=k, E=E: _privamp(T, k, E))
        rss = _rss(T, k, E)["extra_mb"]
        (plo, pup) = _poisson(T, k, E)
        before = BEFORE.get((T, k, E))
        bef = f"[{before[0]:.4f}, {before[1]:.4f}]" if before else ""
        pub = f"{PUBLISHED[(T, k, E)]:.4f}" if (T, k, E) in PUBLISHED else ""
        peer, pdt = None, float("nan")
        if not args.no_peer and E == 1:  # the peer needs > 5 min per setting at E = 10
            t0 = time.perf_counter()
            peer = _peer(T, k, E)
            pdt = time.perf_counter() - t0
        pr = f"[{peer[0]:.4f}, {peer[1]:.4f}]" if peer else ""
        ratio = f"{pdt / dt:.1f}x" if peer else ""
        lines.append(
            f"| {T} | {k} | {E} | [{lo:.5f}, {up:.5f}] | {100 * (up - lo) / up:.2f}% "
            f"| {dt:.2f} | {mb:.0f} | {rss:.0f} | {bef} | [{plo:.4f}, {pup:.4f}] | {pub} | {pr} "
            f"| {'' if peer is None else f'{pdt:.1f}'} | {ratio} |")
        print(lines[-1], flush=True)
    for sigma, T, k, E in RSS_ONLY:
        r = _rss(T, k, E, sigma)
        lines.append(f"\nsigma = {sigma:g}, T = {T}, k = {k}, E = {E}: upper {r['upper']:.5f}, "
                     f"{r['seconds']:.2f} s, resident peak {r['extra_mb']:.0f} MB above import")
        print(lines[-1], flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
