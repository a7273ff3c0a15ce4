"""Tiny rates (issue 28): privamp's default call against dp-accounting's PLD single query, side
by side in one process, CPU time, interleaved, best of ``--repeat``.

The grid: q in {1e-7, 1e-6, 1e-5, 1e-4}, sigma in {0.5, 1, 2, 4, 8}, T in {1e1, 1e2, 1e4,
1e6}, Gaussian, delta 1e-5.  privamp: ``pa.Training(pa.Gaussian(sigma), pa.Poisson(q),
steps=T).epsilon(1e-5)`` (a fresh run each call: nothing cached across calls);
dp-accounting: ``PLDAccountant()`` with default settings,
``compose(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)), T)``, ``get_epsilon(1e-5)``.
Each repeat runs both once per setting in turn (same machine load); the table gives each
one's epsilon and best CPU time (``time.process_time``), and the ratio dp-accounting /
privamp (at or above 1: privamp is at least as fast).

    python benchmarks/tiny_rates.py [--repeat 5] [--out benchmarks/results/tiny_rates.md]
        [--only-q 1e-6] [--only-sigma 2]
"""

from __future__ import annotations

import argparse
import math

from timing import cpu, dpa_call, emit, privamp_call

DELTA = 1e-5
QS = (1e-7, 1e-6, 1e-5, 1e-4)
SIGMAS = (0.5, 1.0, 2.0, 4.0, 8.0)
TS = (10, 100, 10**4, 10**6)



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default="")
    ap.add_argument("--only-q", type=float, default=None)
    ap.add_argument("--only-sigma", type=float, default=None)
    ap.add_argument("--only-T", type=int, default=None)
    a = ap.parse_args()
    from threadpoolctl import threadpool_limits

    settings = [(q, s, T) for q in QS for s in SIGMAS for T in TS
                if (a.only_q is None or q == a.only_q)
                and (a.only_sigma is None or s == a.only_sigma)
                and (a.only_T is None or T == a.only_T)]
    calls = {s: {"privamp": privamp_call(*s), "dp-accounting": dpa_call(*s)} for s in settings}
    best: dict = {s: dict.fromkeys(calls[s], math.inf) for s in settings}
    vals: dict = {s: {} for s in settings}
    with threadpool_limits(1):
        for s in settings:  # warm-up: imports and first-use caches out of the timings
            for fn in calls[s].values():
                fn()
            break
        for _ in range(a.repeat):  # interleaved: both once per setting per round
            for s in settings:
                for name, fn in calls[s].items():
                    v, t = cpu(fn)
                    vals[s][name] = v
                    best[s][name] = min(best[s][name], t)
    lines = [f"Gaussian, Poisson, epsilon at delta {DELTA:g}; best CPU time of {a.repeat} "
             "interleaved repeats; ratio = dp-accounting / privamp (>= 1: privamp at least "
             "as fast).", "",
             "| q | sigma | T | privamp [lower, upper] | privamp CPU ms | dp-accounting eps "
             "| dp-accounting CPU ms | ratio |", "|---|---|---|---|---|---|---|---|"]
    slower = 0
    for s in settings:
        q, sigma, T = s
        up, lo = vals[s]["privamp"]
        tp, td = best[s]["privamp"], best[s]["dp-accounting"]
        ratio = td / tp if tp > 0 else math.inf
        slower += ratio < 1.0
        lines.append(f"| {q:g} | {sigma:g} | {T:g} | [{lo:.6g}, {up:.7g}] | {1e3 * tp:.2f} | "
                     f"{vals[s]['dp-accounting']:.7g} | {1e3 * td:.2f} | {ratio:.2f}x"
                     f"{' SLOWER' if ratio < 1.0 else ''} |")
    lines += ["", f"{slower} of {len(settings)} settings slower than dp-accounting."]
    emit("\n".join(lines), a.out)


if __name__ == "__main__":
    main()
