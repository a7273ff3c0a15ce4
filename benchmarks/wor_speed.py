"""Issue 28: batches drawn without replacement, privamp's default call against dp-accounting's
PLD, side by side in one process, CPU time, interleaved and repeated.

Rows under substitution compare privamp (Balle et al. 2018 Thm 9 composed as PLD, plus the
Thm 6 RDP accountant when screening cannot rule it out) with dp-accounting's
``from_gaussian_mechanism(sigma, sampling_prob=m/n, REPLACE_ONE)`` self-composed T times (its
default value_discretization_interval 1e-4).  Rows under add/remove compare privamp (its
default call: the RDP accountant of Schuchardt et al. 2024) with dp-accounting's
``ADD_OR_REMOVE_ONE`` at rate m/n -- a timing reference only: that is Poisson sampling, not
a bound for batches without replacement under add/remove.

Each repetition runs privamp on a fresh Training with its kept Thm 6 profiles cleared (a cold
call), then dp-accounting, alternating which goes first.  Reported: median CPU seconds of
each, the ratio privamp / dp-accounting, and the epsilons at delta 1e-5 (privamp's upper and
lower bounds).

Run: ``PYTHONPATH=src python benchmarks/wor_speed.py [--reps 7]`` (any privamp tree on the
path: the before column of benchmarks/results/wor_speed.md ran the same script on the tree
before issue 28's changes).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

from timing import cpu

DELTA = 1e-5

ROWS = [
    # (batch, n, sigma, T, relation): benchmarks/scan.py's grid first (issue 28, session 10)
    *[(m, 60000, sigma, T, "sub") for m in (60, 256) for sigma in (0.8, 1.5, 3.0)
      for T in (100, 10_000)],
    (60, 60000, 1.5, 1_000_000, "sub"),
    (256, 60000, 1.1, 14_063, "sub"),
    (60, 60000, 1.5, 10_000, "ar"),
    (256, 60000, 3.0, 10_000, "ar"),
]


def privamp_call(m: int, n: int, sigma: float, T: int, rel: str
                 ) -> Callable[[], tuple[float, float]]:
    import privamp as pa

    try:  # absent before issue 28: nothing kept between calls then
        from privamp.theorems.balle2018.thm6 import clear_profile_cache
    except ImportError:  # pragma: no cover - the "before" tree

        def clear_profile_cache() -> None:
            return None

    def run() -> tuple[float, float]:
        clear_profile_cache()
        relation = pa.Substitution() if rel == "sub" else pa.AddRemove()
        t = pa.Training(pa.Gaussian(sigma), pa.WithoutReplacement(m, n), steps=T,
                        relation=relation)
        g = t.epsilon(DELTA)
        lo = 0.0 if g.lower is None else float(g.lower.value)
        return float(g.upper.value), lo

    return run


def dpa_call(m: int, n: int, sigma: float, T: int, rel: str) -> Callable[[], float]:
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution as pld

    relation = (NeighboringRelation.REPLACE_ONE if rel == "sub"
                else NeighboringRelation.ADD_OR_REMOVE_ONE)

    def run() -> float:
        d = pld.from_gaussian_mechanism(sigma, sampling_prob=m / n,
                                        neighboring_relation=relation)
        return float(d.self_compose(T).get_epsilon_for_delta(DELTA))

    return run

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    print("| setting | privamp upper | privamp lower | privamp cpu s | dp-accounting eps | "
          "dp-accounting cpu s | ratio |")
    print("|---|---|---|---|---|---|---|")
    for row in ROWS:
        m, n, sigma, T, rel = row
        a, b = privamp_call(*row), dpa_call(*row)
        a(), b()  # warm imports and caches of code (not of this row's results)
        ta, tb = [], []
        va: object = None
        vb = float("nan")
        for r in range(args.reps):
            first, second = ((a, ta), (b, tb)) if r % 2 == 0 else ((b, tb), (a, ta))
            for fn, acc in (first, second):
                v, t = cpu(fn)
                acc.append(t)
                if fn is a:
                    va = v
                else:
                    vb = float(v)  # type: ignore[arg-type]
        ma, mb = statistics.median(ta), statistics.median(tb)
        name = "subst." if rel == "sub" else "add/remove"
        up, lo = va if isinstance(va, tuple) else (float("nan"), float("nan"))
        print(f"| w/o repl. {m}/{n}, {name}, sigma {sigma:g}, T {T:.0e} | {up:.7g} | "
              f"{lo:.7g} | {ma:.4f} | {vb:.5g} | {mb:.4f} | {ma / mb:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
