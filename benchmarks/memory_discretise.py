"""Issue 28: traced peak of each single-step discretisation (``pld.discretise.discretise``)
inside ``Training(Gaussian(sigma), Poisson(q), steps=T).epsilon(1e-5)``, each setting in a
fresh interpreter: per call, the tracemalloc peak above what was traced at its entry (MiB)
and that peak in grid-length float arrays (8 bytes x the grid's points).  Usage::

    PYTHONPATH=src python benchmarks/memory_discretise.py [--steps 10000000]
        [--settings 0.3:1e-5,0.5:1e-4]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, sys, tracemalloc, warnings
warnings.simplefilter('ignore')
import privamp as pa
pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=100).epsilon(1e-5)
rows, start = [], []
def prof(frame, event, arg):
    code = frame.f_code
    if code.co_name != 'discretise' or not code.co_filename.endswith('discretise.py'):
        return
    if event == 'call':
        tracemalloc.reset_peak()
        start.append(tracemalloc.get_traced_memory()[0])
    elif event == 'return':
        peak = tracemalloc.get_traced_memory()[1] - start.pop()
        rows.append({'points': int(frame.f_locals.get('full', 0)), 'peak': peak,
                     'h': frame.f_locals['h']})
tracemalloc.start()
sys.setprofile(prof)
pa.Training(pa.Gaussian(SIGMA), pa.Poisson(Q), steps=STEPS).epsilon(1e-5)
sys.setprofile(None)
print(json.dumps(rows))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10**7)
    ap.add_argument("--settings", default="0.3:1e-5,0.5:1e-4",
                    help="sigma:q pairs, comma-separated")
    args = ap.parse_args()
    print("| sigma | q | grid points | h | traced peak MiB | grid arrays |")
    print("|---|---|---|---|---|---|")
    for item in args.settings.split(","):
        sigma, q = (float(x) for x in item.split(":"))
        code = CHILD.replace("SIGMA", repr(sigma)).replace("Q", repr(q)).replace(
            "STEPS", str(args.steps))
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if res.returncode != 0:
            print(f"| {sigma} | {q:g} | error: {res.stderr.strip().splitlines()[-1]} |||")
            continue
        for r in json.loads(res.stdout.strip().splitlines()[-1]):
            arrays = r["peak"] / (8 * r["points"]) if r["points"] else float("nan")
            print(f"| {sigma} | {q:g} | {r['points']} | {r['h']:.3g} | "
                  f"{r['peak'] / 2**20:.1f} | {arrays:.1f} |", flush=True)


if __name__ == "__main__":
    main()
