"""Issue 28, session 12: the wide scan's small rows where dp-accounting's PLD was faster than
privamp's default call (both 5-40 ms CPU), side by side: privamp and dp-accounting called in
turn (interleaved, ``--repeats`` rounds, median CPU times), each as benchmarks/scan.py calls
it.

    python benchmarks/small_rows.py [--repeats N] [--rows SUBSTRING] [--json FILE] [--no-peer]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scan  # noqa: E402  (benchmarks/scan.py: the same calls)

ROWS = [
    ("gauss", 1e-6, 1, 10**4), ("gauss", 1e-6, 2, 10**4), ("gauss", 1e-6, 2, 10**6),
    ("gauss", 1e-6, 4, 10**4), ("gauss", 1e-5, 1, 10**6), ("gauss", 1e-5, 2, 100),
    ("gauss", 1e-5, 2, 10**4), ("gauss", 1e-5, 4, 100), ("gauss", 1e-5, 4, 10**4),
    ("gauss", 1e-5, 4, 10**6), ("gauss", 1e-5, 8, 10**4), ("gauss", 1e-4, 2, 100),
    ("gauss", 1e-4, 2, 10**4), ("gauss", 1e-4, 4, 10**4),
    ("laplace", 1e-4, 0.5, 10**4), ("laplace", 1e-4, 1, 10**4), ("laplace", 1e-4, 2, 10**4),
    ("laplace", 1e-3, 0.5, 100), ("laplace", 1e-3, 2, 100),
    ("wor", 60, 3, 100), ("wor", 60, 3, 10**4),
]


def setting(row: tuple) -> dict:
    kind, a, b, T = row
    if kind == "gauss":
        return {"kind": "gauss", "q": a, "sigma": b, "T": T}
    if kind == "laplace":
        return {"kind": "laplace", "q": a, "b": b, "T": T}
    return {"kind": "wor", "batch": a, "n": 60000, "sigma": b, "T": T}


def cpu(fn) -> tuple[object, float]:
    gc.collect()
    c0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = fn()
    return v, time.process_time() - c0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--rows", default="")
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-peer", action="store_true")
    args = ap.parse_args()
    from threadpoolctl import threadpool_limits

    import privamp as pa

    threadpool_limits(1, user_api="blas")
    pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=10).epsilon(scan.DELTA)  # warm up
    out = []
    for row in ROWS:
        s = setting(row)
        lab = scan.label(s)
        if args.rows not in lab:
            continue
        mine, peer = scan.privamp_call(s), scan.peer_call("dp-accounting PLD", s)
        tp, td = [], []
        v: object = None
        for _ in range(args.repeats):
            v, t = cpu(mine)
            tp.append(t)
            if not args.no_peer and peer is not None:
                td.append(cpu(peer)[1])
        mp = statistics.median(tp) * 1e3
        md = statistics.median(td) * 1e3 if td else float("nan")
        print(f"{lab:50s} privamp {mp:6.1f} ms  dp {md:6.1f} ms  ratio {md / mp:5.2f}  {v}",
              flush=True)
        out.append({"row": lab, "privamp_ms": mp, "dp_ms": md, "interval": list(v)})
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
