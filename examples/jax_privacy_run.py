"""Which sampler does my jax_privacy run use, and what is its epsilon after each epoch?

Run:  python examples/jax_privacy_run.py [--n 10000] [--batch 100] [--epochs 5] [--sigma 1.0]

Describes DP-SGD over ``--epochs`` passes of ``--n`` examples with jax_privacy's batch-selection
strategies (expected batch size ``--batch``, noise multiplier ``--sigma``, add/remove), maps
each to its privamp run with :mod:`privamp.integrations.jax_privacy`, and prints privamp's
[lower, upper] epsilon interval at the end of each epoch, or the reason privamp refuses.

With jax_privacy installed (``pip install jax-privacy "jax[cpu]"``) the strategies are
jax_privacy's own objects; without it the script builds stand-ins with the same class names
and fields (the bridge reads only those), so it runs with privamp alone.
"""

from __future__ import annotations

import argparse

import privamp as pa
from privamp.integrations.jax_privacy import (
    STAND_INS,
    run_from_jax_privacy,
    scheme_of_strategy,
)


def strategies_module() -> tuple[object, str]:
    """jax_privacy.batch_selection, or stand-ins with its class names and fields."""
    try:
        from jax_privacy import batch_selection

        return batch_selection, "jax_privacy's own strategies"
    except ImportError:
        pass

    return STAND_INS, "stand-ins (jax_privacy is not installed)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--sigma", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    args = ap.parse_args()
    bs, where = strategies_module()
    k = args.n // args.batch  # batches per epoch
    steps = k * args.epochs
    print(f"n = {args.n}, batch {args.batch} ({k} steps per epoch), {args.epochs} epochs, "
          f"noise multiplier {args.sigma}, delta = {args.delta}; {where}\n")
    cases = [
        ("CyclicPoissonSampling(q, T)", bs.CyclicPoissonSampling(args.batch / args.n, steps),
         pa.AddRemove()),
        ("BallsInBinsSampling(T, k)", bs.BallsInBinsSampling(steps, k), pa.AddRemove()),
        ("FixedBatchSampling(b, T)", bs.FixedBatchSampling(args.batch, steps),
         pa.Substitution()),
    ]
    epochs = [k * (e + 1) for e in range(args.epochs)]
    for label, strategy, relation in cases:
        scheme = scheme_of_strategy(strategy, args.n)
        print(f"{label}  ->  privamp {scheme} under {relation}")
        try:
            run = run_from_jax_privacy(strategy, noise_multiplier=args.sigma,
                                       dataset_size=args.n, relation=relation)
            curve = run.epsilon_curve(args.delta, steps=epochs)
        except pa.NotApplicable as exc:
            print(f"  privamp refuses: {exc}\n")
            continue
        for e, (lo, up) in enumerate(zip(curve.lower.value, curve.upper.value, strict=True)):
            print(f"  epoch {e + 1}: epsilon in [{lo:.3f}, {up:.3f}]")
        print()
    fresh = pa.Training(pa.Gaussian(args.sigma), pa.BallsInBins(k), epochs=args.epochs)
    print("For contrast, privamp's BallsInBins (a fresh bin every epoch, NOT jax_privacy's):")
    curve = fresh.epsilon_curve(args.delta, steps=epochs)
    for e, (lo, up) in enumerate(zip(curve.lower.value, curve.upper.value, strict=True)):
        print(f"  epoch {e + 1}: epsilon in [{lo:.3f}, {up:.3f}]")


if __name__ == "__main__":
    main()
