"""Poisson-subsampled Laplace (issue 28): privamp's default call against dp-accounting's PLD,
side by side in one process, epsilon at delta = 1e-5.

privamp: ``pa.Training(pa.Laplace(b), pa.Poisson(q), steps=T).epsilon(1e-5)`` (its upper
and lower bounds).  dp-accounting: ``from_laplace_mechanism(parameter=b, sensitivity=1,
sampling_prob=q).self_compose(T).get_epsilon_for_delta(1e-5)`` (its default
value_discretization_interval 1e-4, connect-the-dots, pessimistic).  Both run with
single-threaded BLAS (threadpoolctl, as privamp does by default).  The machine may be
shared: CPU times (time.process_time), each library called in turn within every repetition
(interleaved), the median of ``--repeat`` calls per library, and the ratio of the medians;
every call is fresh (no cache survives between calls: a new Training each time).

    python benchmarks/laplace_speed.py [--repeat 5] [--out benchmarks/results/laplace_speed.md]
    python benchmarks/laplace_speed.py --small [--repeat 3]   # SMALL_DELTA rows (review,
                                                               # session 9), own delta each
    python benchmarks/laplace_speed.py --scan [--repeat 5]    # scan.py's Laplace grid
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from timing import cpu

DELTA = 1e-5

#: (rate q, scale b, steps T): issue 28's four rows first, then more
SETTINGS = [
    (1e-4, 0.5, 100), (1e-3, 0.5, 10), (1e-3, 2.0, 10_000), (1e-2, 2.0, 100),
    (1e-5, 1.0, 1000), (1e-5, 0.3, 100_000), (1e-5, 5.0, 10),
    (1e-4, 0.3, 10), (1e-4, 1.0, 10_000), (1e-4, 5.0, 100_000),
    (1e-3, 1.0, 100_000), (1e-3, 0.3, 1000), (1e-3, 5.0, 100),
    (1e-2, 0.3, 1000), (1e-2, 1.0, 10), (1e-2, 5.0, 10_000),
    (0.1, 1.0, 1000), (0.1, 5.0, 10), (0.1, 2.0, 100), (0.1, 0.5, 10),
]


#: benchmarks/scan.py's Laplace grid (issue 28, session 10: five rows there at 0.65-0.99x)
SCAN = [(q, b, T) for q in (1e-4, 1e-3, 1e-2) for b in (0.5, 1.0, 2.0) for T in (10, 100, 10_000)]


#: (rate q, scale b, steps T, delta) at small delta (review, session 9: the fast pass's
#: numerical allowances were up to a third of delta 1e-10; now composed again where needed)
SMALL_DELTA = [
    (0.1, 3.0, 100, 1e-10), (0.5, 10.0, 100, 1e-10), (1e-4, 0.5, 100, 1e-12),
    (1e-3, 0.3, 1000, 1e-10), (0.2, 5.0, 30, 1e-11), (0.01, 1.0, 1000, 1e-8),
    (0.5, 0.3, 10, 1e-12), (0.01, 1.0, 1000, 1e-12), (1e-3, 2.0, 10_000, 1e-12),
]


def privamp_call(q: float, b: float, T: int, delta: float = DELTA):
    import privamp as pa

    return pa.Training(pa.Laplace(b), pa.Poisson(q), steps=T).epsilon(delta)


def dp_call(q: float, b: float, T: int, delta: float = DELTA) -> float:
    from dp_accounting.pld import privacy_loss_distribution as pld

    return float(pld.from_laplace_mechanism(parameter=b, sensitivity=1.0, sampling_prob=q)
                 .self_compose(T).get_epsilon_for_delta(delta))

def run(repeat: int, settings=SETTINGS) -> list[dict]:
    """One row per setting: both libraries' epsilons and median CPU times."""
    privamp_call(1e-3, 1.0, 10)  # imports and first-call costs out of the timings
    dp_call(1e-3, 1.0, 10)
    rows = []
    for q, b, T, *rest in settings:
        d = rest[0] if rest else DELTA
        tp, td = [], []
        for _ in range(repeat):
            res, t = cpu(lambda q=q, b=b, T=T, d=d: privamp_call(q, b, T, d), quiet=True)
            tp.append(t)
            eps_dp, t = cpu(lambda q=q, b=b, T=T, d=d: dp_call(q, b, T, d), quiet=True)
            td.append(t)
        up, lo = float(res.upper.value), float(res.lower.value)
        rows.append(dict(q=q, b=b, T=T, delta=d, src=res.upper.source.split(",")[0],
                         upper=up, lower=lo, dp=eps_dp,
                         t_pa=statistics.median(tp), t_dp=statistics.median(td)))
        r = rows[-1]
        print(f"q {q:g} b {b:g} T {T:g} delta {d:g}: privamp [{lo:.7g}, {up:.7g}] "
              f"{r['t_pa']:.4f} s, "
              f"dp-accounting {eps_dp:.7g} {r['t_dp']:.4f} s, ratio "
              f"{r['t_pa'] / r['t_dp']:.2f}", flush=True)
    return rows


def table(rows: list[dict], repeat: int, small: bool = False) -> str:
    if small:
        return small_table(rows, repeat)
    lines = [
        "# Poisson-subsampled Laplace: privamp vs dp-accounting (issue 28)",
        "",
        f"`python benchmarks/laplace_speed.py --repeat {repeat}`: epsilon at delta 1e-5, "
        "median CPU seconds over the repetitions (interleaved, one process, single-threaded "
        "BLAS); ratio = privamp / dp-accounting (below 1: privamp faster); "
        "upper - dp: privamp's upper bound minus dp-accounting's epsilon, relative "
        "(<= 0: privamp at or below).",
        "",
        "| q | b | T | privamp lower | privamp upper | dp-accounting | upper - dp (rel) "
        "| privamp s | dp-accounting s | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["dp"] > 0:
            rel = f"{(r['upper'] - r['dp']) / r['dp']:+.1e}"
        else:  # (epsilon 0: both exact)
            rel = "0" if r["upper"] == 0 else f"+{r['upper']:.1e} abs"
        lines.append(
            f"| {r['q']:g} | {r['b']:g} | {r['T']:g} | {r['lower']:.7g} | {r['upper']:.7g} "
            f"| {r['dp']:.7g} | {rel} | {r['t_pa']:.4f} | {r['t_dp']:.4f} "
            f"| {r['t_pa'] / r['t_dp']:.2f} |")
    return "\n".join(lines) + "\n"


def small_table(rows: list[dict], repeat: int) -> str:
    """The ``--small`` rows: each at its own delta, with the accountant that answered."""
    lines = [
        f"`python benchmarks/laplace_speed.py --small --repeat {repeat}`: as above, each row "
        "at its own delta; 'answered by': the accountant of privamp's upper bound.",
        "",
        "| q | b | T | delta | privamp lower | privamp upper | dp-accounting | upper - dp (rel) "
        "| answered by | privamp s | dp-accounting s | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['q']:g} | {r['b']:g} | {r['T']:g} | {r['delta']:g} | {r['lower']:.7g} "
            f"| {r['upper']:.7g} | {r['dp']:.7g} | {(r['upper'] - r['dp']) / r['dp']:+.1e} "
            f"| {r['src']} | {r['t_pa']:.4f} | {r['t_dp']:.4f} | {r['t_pa'] / r['t_dp']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--small", action="store_true", help="the SMALL_DELTA rows")
    ap.add_argument("--issue", action="store_true", help="issue 28's four rows only")
    ap.add_argument("--scan", action="store_true", help="scan.py's 27 Laplace rows")
    args = ap.parse_args()
    try:
        from threadpoolctl import threadpool_limits
        ctx = threadpool_limits(1)
    except ImportError:  # pragma: no cover
        ctx = None
    rows = run(args.repeat, SMALL_DELTA if args.small else SCAN if args.scan
               else SETTINGS[:4] if args.issue else SETTINGS)
    if ctx is not None:
        ctx.unregister()
    text = table(rows, args.repeat, args.small)
    print(text)
    if args.out is not None:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
