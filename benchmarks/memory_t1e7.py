"""Issue 28: peak extra memory of ``Training(Gaussian(sigma), Poisson(q), steps=1e7)
.epsilon(1e-5)`` (each setting in a fresh subprocess).

base = VmRSS after a warm-up query (a short run, so imports, FFT plans of small lengths and
the caches are in); peak = VmHWM after the query; extra = peak - base (MiB); CPU =
``time.process_time`` of the query.  Usage::

    PYTHONPATH=src python benchmarks/memory_t1e7.py [--quick] [--repeat R]
        [--settings 0.3:1e-7,0.5:1e-4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, time, warnings
warnings.simplefilter('ignore')
import privamp as pa
def status(key):
    return next(int(v.split()[1]) for v in open('/proc/self/status')
                if v.startswith(key + ':')) / 1024.0
pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=100).epsilon(1e-5)
base = status('VmRSS')
t0 = time.process_time()
g = pa.Training(pa.Gaussian(SIGMA), pa.Poisson(Q), steps=STEPS).epsilon(1e-5)
cpu = time.process_time() - t0
print(json.dumps({'base': base, 'peak': status('VmHWM'), 'cpu': cpu,
                  'up': None if g.upper is None else g.upper.value,
                  'lo': None if g.lower is None else g.lower.value}))
"""

RATES = (1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 0.5)
SIGMAS = (0.3, 0.5, 1.0, 2.0)


def measure(sigma: float, q: float, steps: int = 10**7) -> dict:
    """One setting in a fresh interpreter."""
    code = CHILD.replace("SIGMA", repr(sigma)).replace("Q", repr(q)).replace(
        "STEPS", str(steps))
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True)
    if res.returncode != 0:
        return {"error": res.stderr.strip().splitlines()[-1]}
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["extra"] = out["peak"] - out["base"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="sigma 0.5 only")
    ap.add_argument("--repeat", type=int, default=1, help="runs per setting (min CPU kept)")
    ap.add_argument("--settings", default="",
                    help="only these sigma:q pairs, comma-separated (e.g. 0.3:1e-7,0.5:1e-4)")
    args = ap.parse_args()
    sigmas = (0.5,) if args.quick else SIGMAS
    pairs = [(s, q) for s in sigmas for q in RATES]
    if args.settings:
        pairs = [(float(a), float(b)) for a, b in
                 (item.split(":") for item in args.settings.split(","))]
    print("| sigma | q | base MB | peak MB | extra MB | CPU s | upper | lower |")
    print("|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for sigma, q in pairs:
        runs = [measure(sigma, q) for _ in range(args.repeat)]
        if "error" in runs[0]:
            print(f"| {sigma} | {q:g} | error: {runs[0]['error']} |||||")
            continue
        r = min(runs, key=lambda o: o["cpu"])
        extra = max(o["extra"] for o in runs)
        worst = max(worst, extra)
        print(f"| {sigma} | {q:g} | {r['base']:.0f} | {r['peak']:.0f} | {extra:.0f} "
              f"| {r['cpu']:.2f} | {r['up']!r} | {r['lo']!r} |", flush=True)
    print(f"\nworst extra: {worst:.0f} MB")


if __name__ == "__main__":
    main()
