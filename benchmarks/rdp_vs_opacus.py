"""privamp's RDP accountant against Opacus's RDP accountant, side by side (issue 28).

``Training(Gaussian(sigma), Poisson(q), steps=T).epsilon(1e-5, accountant="rdp")`` against
Opacus's ``compute_rdp`` + ``get_privacy_spent`` (its default orders 1.1..10.9, 12..63) on
q in {1e-7, 1e-5, 1e-3, 1e-1} x sigma in {0.3, 1, 4, 8} x T in {10, 1e4, 1e7}.  CPU time
(time.process_time), the two interleaved in one process, fastest of ``--repeat`` calls each;
ratio = privamp CPU / Opacus CPU (<= 1: privamp no slower).  privamp's epsilon must be <=
Opacus's on every row.

    python benchmarks/rdp_vs_opacus.py [--repeat 7] [--out benchmarks/results/rdp_vs_opacus.md]
"""

from __future__ import annotations

import argparse
import gc
import math
import platform
import time
import warnings
from pathlib import Path

DELTA = 1e-5
OPACUS_ORDERS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))


def privamp_eps(q: float, sigma: float, T: int) -> float:
    import privamp as pa

    run = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T)
    return float(run.epsilon(DELTA, accountant="rdp").upper.value)


def opacus_eps(q: float, sigma: float, T: int) -> float:
    from opacus.accountants.analysis.rdp import compute_rdp, get_privacy_spent

    rdp = compute_rdp(q=q, noise_multiplier=sigma, steps=T, orders=OPACUS_ORDERS)
    with warnings.catch_warnings():  # "optimal order is the largest alpha"
        warnings.simplefilter("ignore")
        eps, _ = get_privacy_spent(orders=OPACUS_ORDERS, rdp=rdp, delta=DELTA)
    return float(eps)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "rdp_vs_opacus.md"))
    args = ap.parse_args()
    grid = [(q, s, T) for q in (1e-7, 1e-5, 1e-3, 1e-1) for s in (0.3, 1.0, 4.0, 8.0)
            for T in (10, 10**4, 10**7)]
    privamp_eps(0.01, 1.0, 100)  # warm-up: imports, first-call costs
    opacus_eps(0.01, 1.0, 100)
    lines = [
        "# privamp RDP accountant vs Opacus RDP (epsilon at delta = 1e-5)",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}; one process, "
        f"the two interleaved, CPU time (process_time), fastest of {args.repeat} calls each; "
        "ratio = privamp CPU / Opacus CPU. Opacus: compute_rdp + get_privacy_spent at its "
        "default orders (1.1..10.9, 12..63).",
        "",
        "| q | sigma | T | privamp eps | Opacus eps | privamp <= Opacus | privamp ms | "
        "Opacus ms | ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    ratios, looser = [], 0
    for q, s, T in grid:
        tp, to = math.inf, math.inf
        vp = vo = math.nan
        for _ in range(args.repeat):
            gc.collect()
            t0 = time.process_time()
            vp = privamp_eps(q, s, T)
            t1 = time.process_time()
            vo = opacus_eps(q, s, T)
            t2 = time.process_time()
            tp, to = min(tp, t1 - t0), min(to, t2 - t1)
        ok = vp <= vo
        looser += not ok
        ratios.append(tp / to)
        lines.append(f"| {q:g} | {s:g} | {T:.0e} | {vp:.6g} | {vo:.6g} | "
                     f"{'yes' if ok else 'NO'} | {1e3 * tp:.1f} | {1e3 * to:.1f} | "
                     f"{tp / to:.2f} |")
        print(lines[-1], flush=True)
    ratios.sort()
    lines += ["", f"{len(grid)} settings: privamp looser on {looser}; CPU ratio median "
              f"{ratios[len(ratios) // 2]:.2f}, worst {ratios[-1]:.2f}; no slower on "
              f"{sum(r <= 1.0 for r in ratios)} of {len(grid)}."]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(lines[-1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
