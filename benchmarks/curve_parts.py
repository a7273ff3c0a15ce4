"""Issue 28: where an epsilon curve's CPU time goes, against one query of the same run.

For each setting of ``benchmarks/curve.py`` (or ``--rows``), the curve ``run.epsilon_curve(1e-5)``
(100 checkpoints) is timed with its parts measured by wrapping privamp's own functions (CPU
seconds, mean of ``--reps`` runs after a warm-up):

* ``steps``: the one-step PLDs (``PLDAnalysis._step_plds``; a single query pays the same);
* ``blocks``: the gaps' blocks (``pld_run.gap_blocks``: one composition per gap and side);
* ``products``: the checkpoints' PLDs (advancing the ``pld_run.checkpoint_plds`` streams:
  running Fourier products, one inverse FFT per checkpoint and side, window PLDs);
* ``epsilon``: the checkpoints' epsilon inversions (``TwoSidedPLD.epsilon_sides``);
* ``screen``: the Rényi screening of the checkpoints (``Training._screen``);
* ``other``: the rest (the curve's bookkeeping, Bounds, hooks, the Training layer);

plus the number of inverse real transforms of the curve and their summed length
(``numerics.fft_plans.irfft`` calls).  ``single`` is one query of the whole run, timed the same way.

Run: ``PYTHONPATH=src python benchmarks/curve_parts.py [--reps 5] [--rows 2,5]``.
"""

from __future__ import annotations

import argparse
import time

from curve import DELTA, ROWS, run_of


def main() -> None:
    import privamp.accountants.poisson as poisson
    import privamp.accounting.training as training
    import privamp.numerics.fft_plans as sfft
    import privamp.pld.two_sided as two_sided

    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rows", type=str, default="", help="comma-separated row indices")
    args = ap.parse_args()
    rows = [ROWS[int(i)] for i in args.rows.split(",")] if args.rows else ROWS

    acc: dict[str, float] = {}
    ffts = [0, 0]

    def timed(name: str, owner, attr: str) -> None:
        f = getattr(owner, attr)

        def wrapper(*a, **k):
            t = time.process_time()
            try:
                return f(*a, **k)
            finally:
                acc[name] = acc.get(name, 0.0) + time.process_time() - t

        setattr(owner, attr, wrapper)

    timed("steps", poisson.PLDAnalysis, "_step_plds")
    timed("blocks", poisson, "gap_blocks")
    timed("epsilon", two_sided.TwoSidedPLD, "epsilon_sides")
    timed("screen", training.Training, "_screen")
    plain = poisson.checkpoint_plds

    def products(*a, **k):
        gen = plain(*a, **k)
        while True:
            t = time.process_time()
            try:
                item = next(gen)
            except StopIteration:
                acc["products"] = acc.get("products", 0.0) + time.process_time() - t
                return
            acc["products"] = acc.get("products", 0.0) + time.process_time() - t
            yield item

    poisson.checkpoint_plds = products
    irfft = sfft.irfft

    def counted(x, n=None, *a, **k):
        ffts[0] += 1
        ffts[1] += int(n) if n is not None else 2 * (len(x) - 1)
        return irfft(x, n, *a, **k)

    sfft.irfft = counted
    print("| q | sigma | T | single s | curve s | ratio | steps | blocks | products | epsilon "
          "| screen | other | inverse FFTs (total length) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for q, sigma, T in rows:
        run_of(q, sigma, T).epsilon_curve(DELTA)  # (warm-up)
        t = time.process_time()
        for _ in range(args.reps):
            run_of(q, sigma, T).epsilon(DELTA)
        single = (time.process_time() - t) / args.reps
        acc.clear()
        ffts[:] = [0, 0]
        t = time.process_time()
        for _ in range(args.reps):
            run_of(q, sigma, T).epsilon_curve(DELTA)
        total = (time.process_time() - t) / args.reps
        parts = {k: acc.get(k, 0.0) / args.reps
                 for k in ("steps", "blocks", "products", "epsilon", "screen")}
        other = total - sum(parts.values())
        cells = " | ".join(f"{1e3 * v:.1f}" for v in (*parts.values(), other))
        print(f"| {q:.4g} | {sigma:g} | {T:g} | {single:.3f} | {total:.3f} | "
              f"{total / single:.2f}x | {cells} | {ffts[0] // args.reps} "
              f"({ffts[1] // args.reps:,}) |", flush=True)


if __name__ == "__main__":
    main()
