"""Balls-in-bins (issue 13, item 2): privamp's certified delta interval next to jax_privacy's
Monte Carlo estimate (its only balls-in-bins accountant), one run, one epoch.

jax_privacy (`pip install jax-privacy`, CPU is enough) samples the privacy loss of its
dominating pair (`experimental.monte_carlo.sample_generation.get_privacy_loss_sample` with
`BallsInBinsSampling(iterations=T, cycle_length=T)`, DP-SGD: `c_col = [1]`) and averages
`1 - e^(eps - L)` (`delta_calculation.delta_from_epsilon_and_samples`), for the removal
(positive samples) and the addition (negative samples) direction; the table gives the larger
and +- 3 standard errors.  Its balls-in-bins keeps each record's bin in every cycle, privamp's
`BallsInBins` draws a fresh bin each epoch: the two schemes agree for one epoch only, which is
what is compared.  Without jax_privacy the script prints privamp's side only.

    python benchmarks/bench_ballsinbins.py [--samples 20000] [--out ...]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import privamp as pa

# (batches T, sigma, epsilons)
SETTINGS = [(100, 1.0, (0.1, 0.3, 0.5, 1.0)), (1000, 1.0, (0.05, 0.1, 0.2))]


def _jax_privacy():
    try:
        from jax_privacy import batch_selection
        from jax_privacy.experimental.monte_carlo import delta_calculation, sample_generation
    except ImportError:
        return None
    return batch_selection, sample_generation, delta_calculation


def _monte_carlo(jp, T: int, sigma: float, eps: tuple, samples: int, seed: int
                 ) -> tuple[list, float]:
    """Per eps: (estimate, 3 standard errors) of max(removal, addition) delta; seconds."""
    bs, sg, dc = jp
    strategy = bs.BallsInBinsSampling(iterations=T, cycle_length=T)
    t0 = time.perf_counter()
    per_side = []
    for positive in (True, False):
        loss, _ = sg.get_privacy_loss_sample(strategy, sigma, np.array([1.0]), seed=seed,
                                             positive_sample=positive, num_samples=samples)
        loss = np.asarray(loss, dtype=float)
        vals = []
        for e in eps:
            terms = -np.expm1(np.minimum(e - loss, 0.0))
            est = float(dc.delta_from_epsilon_and_samples(e, loss))
            vals.append((est, 3.0 * float(terms.std(ddof=1)) / np.sqrt(samples)))
        per_side.append(vals)
    best = [max(a, b) for a, b in zip(*per_side, strict=True)]
    return best, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=20000, help="Monte Carlo samples per side")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "ballsinbins.md"))
    args = ap.parse_args()
    jp = _jax_privacy()
    rows = []
    for T, sigma, eps in SETTINGS:
        run = pa.Training(pa.Gaussian(sigma), pa.BallsInBins(T), epochs=1)
        t0 = time.perf_counter()
        g = run.delta(np.array(eps))
        t_pa = time.perf_counter() - t0
        mc, t_mc = (None, None) if jp is None else _monte_carlo(jp, T, sigma, eps, args.samples,
                                                                  seed=T)
        for i, e in enumerate(eps):
            lo, hi = float(g.lower.value[i]), float(g.upper.value[i])
            cell = "not installed" if mc is None else f"{mc[i][0]:.4e} +- {mc[i][1]:.1e}"
            inside = "" if mc is None else (
                "no sampled mass" if mc[i][1] == 0.0 else
                "yes" if mc[i][0] - mc[i][1] <= hi and lo <= mc[i][0] + mc[i][1] else "NO")
            rows.append(f"| {T} | {sigma:g} | {e:g} | [{lo:.4e}, {hi:.4e}] | {t_pa:.2f} | "
                        f"{cell} | {'' if t_mc is None else f'{t_mc:.1f}'} | {inside} |")
        print(rows[-1], flush=True)
    head = [f"# Balls-in-bins, one epoch: privamp vs jax_privacy Monte Carlo "
            f"({args.samples} samples per side)", "",
            "privamp: `Training(Gaussian(sigma), BallsInBins(T), epochs=1).delta(eps)`, certified "
            "[lower, upper] (time for all eps of the row's setting). jax_privacy: Monte Carlo "
            "estimate +- 3 standard errors (an estimate, not a bound; time for both sides).", "",
            "| T | sigma | eps | privamp delta [lower, upper] | time (s) | jax_privacy MC delta "
            "| its time (s) | agree |", "|---|---|---|---|---|---|---|---|"]
    Path(args.out).write_text("\n".join(head + rows) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
