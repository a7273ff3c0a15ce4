"""Short runs at small rates: privamp's default call against dp-accounting's PLD (and Opacus's
PRV accountant) side by side in one process, CPU time, interleaved, best of ``--repeat``.

Each repeat runs every library once per setting in turn, so all see the same machine load;
the table gives each library's epsilon at delta 1e-5 and its best CPU time
(``time.process_time``), and the ratio peer / privamp (above 1: privamp is faster).

    python benchmarks/short_runs.py [--repeat 5] [--out benchmarks/results/short_runs.md]

``--session10``: instead, the 17-setting grid's short (T 1e3) rows and the canonical run
(benchmarks/run.py), privamp's default call under session 10's grid plan (short runs refined
to ``SHORT_RUN_POINTS`` whatever their length; the quartile search in five tail evaluations,
both restored by patching ``privamp.accountants.grid`` in this process) against the current
one and dp-accounting's PLD, interleaved, CPU time, best of ``--repeat``.
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


GRID17 = [(1e-3, 0.8, 1000), (1e-3, 1.0, 1000), (1e-2, 0.8, 1000), (1e-2, 1.0, 1000),
          (256 / 60000, 1.1, 14063)]


def session10(repeat: int, out: str) -> None:
    """Session 10's grid plan against the current one (see the module's docstring)."""
    from threadpoolctl import threadpool_limits

    from privamp.accountants import grid

    new_step, new_replay = grid.short_run_step, grid.replayed_brackets

    def plan(old: bool) -> None:
        grid.short_run_step = (lambda h, w, T=0: new_step(h, w)) if old else new_step
        grid.replayed_brackets = (lambda *a, **k: None) if old else new_replay

    names = ["session 10", "session 11", "dp-accounting PLD"]
    best = {s: dict.fromkeys(names, math.inf) for s in GRID17}
    vals: dict = {s: {} for s in GRID17}
    with threadpool_limits(1):
        for _ in range(repeat):
            for s in GRID17:
                for name in names:
                    plan(name == "session 10")
                    fn = dpa_call(*s) if name.startswith("dp") else privamp_call(*s)
                    vals[s][name], t = cpu(fn)
                    best[s][name] = min(best[s][name], t)
    plan(False)
    lines = ["| setting | session 10 [lower, upper] (CPU s) | session 11 [lower, upper] (CPU s) "
             "| dp-accounting PLD (CPU s) | ratio dp / privamp: session 10 -> 11 |",
             "|---|---|---|---|---|"]
    for s in GRID17:
        q, sigma, T = s
        cells = [f"q {q:.6g}, sigma {sigma:g}, T {T}"]
        for name in names[:2]:
            up, lo = vals[s][name]
            cells.append(f"[{lo:.8g}, {up:.8g}] (width {(up - lo) / up:.1e}; "
                         f"{best[s][name]:.4f})")
        d, td = vals[s][names[2]], best[s][names[2]]
        cells.append(f"{d:.8g} ({td:.4f})")
        cells.append(f"{td / best[s][names[0]]:.1f}x -> {td / best[s][names[1]]:.1f}x")
        lines.append("| " + " | ".join(cells) + " |")
    emit("\n".join(lines), out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default="")
    ap.add_argument("--session10", action="store_true",
                    help="session 10's grid plan against the current one (17-setting grid)")
    a = ap.parse_args()
    if a.session10:
        session10(a.repeat, a.out)
        return
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
