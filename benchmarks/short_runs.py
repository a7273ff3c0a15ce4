"""Short runs at small rates: privamp's default call against dp-accounting's PLD (and Opacus's
PRV accountant) side by side in one process, CPU time, interleaved, best of ``--repeat``.

Each repeat runs every library once per setting in turn, so all see the same machine load;
the table gives each library's epsilon at delta 1e-5 and its best CPU time
(``time.process_time``), and the ratio peer / privamp (above 1: privamp is faster).

    python benchmarks/short_runs.py [--repeat 5] [--out benchmarks/results/short_runs.md]
"""

from __future__ import annotations

import argparse
import math
import warnings
from collections.abc import Callable

from timing import cpu, dpa_call, emit, privamp_call

DELTA = 1e-5
SETTINGS = [(1e-5, 0.3, 10), (1e-4, 0.3, 10), (1e-3, 0.3, 10), (1e-5, 1.0, 10),
            (1e-4, 1.0, 10), (1e-5, 0.3, 100)]


def prv_call(q: float, sigma: float, T: int) -> Callable[[], float]:
    from opacus.accountants import PRVAccountant

    def run() -> float:
        acc = PRVAccountant()
        acc.history = [(sigma, q, T)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(acc.get_epsilon(DELTA))

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    from threadpoolctl import threadpool_limits

    calls = {s: {"privamp": privamp_call(*s), "dp-accounting PLD": dpa_call(*s),
                 "Opacus PRV": prv_call(*s)} for s in SETTINGS}
    best: dict = {s: dict.fromkeys(calls[s], math.inf) for s in SETTINGS}
    vals: dict = {s: {} for s in SETTINGS}
    with threadpool_limits(1):
        for _ in range(a.repeat):  # interleaved: every library once per setting per round
            for s in SETTINGS:
                for name, fn in calls[s].items():
                    v, t = cpu(fn)
                    vals[s][name] = v
                    best[s][name] = min(best[s][name], t)
    lines = ["| setting | privamp [lower, upper] (CPU s) | dp-accounting PLD (CPU s, ratio) "
             "| Opacus PRV (CPU s, ratio) |", "|---|---|---|---|"]
    for s in SETTINGS:
        q, sigma, T = s
        up, lo = vals[s]["privamp"]
        tp = best[s]["privamp"]
        cells = [f"q {q:g}, sigma {sigma:g}, T {T}", f"[{lo:.7g}, {up:.8g}] ({tp:.4f})"]
        for name in ("dp-accounting PLD", "Opacus PRV"):
            v, t = vals[s][name], best[s][name]
            flag = " LOOSER" if up > v else ""
            cells.append(f"{v:.8g} ({t:.4f}, {t / tp:.2f}x){flag}")
        lines.append("| " + " | ".join(cells) + " |")
    emit("\n".join(lines), a.out)


if __name__ == "__main__":
    main()
