"""Shuffle and sampling with replacement (issue 13, items 3 and 4) in one run: privamp's
interval, its width and time per setting, next to Poisson at the same expected batch size,
dp-accounting where it has an accountant for the sampler, and the values before issue 13.

    python benchmarks/bench_shuffle.py [--out benchmarks/results/shuffle.md]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import privamp as pa

DELTA = 1e-5

# (name, run, Poisson run at the same expected batch size, interval before issue 13)
SETTINGS = [
    ("shuffle, canonical DP-SGD (make demo): b=250, n=60000, sigma=1.1, 60 epochs, zero-out",
     lambda: pa.Training(pa.Gaussian(1.1), pa.Shuffle(250, 60000), epochs=60,
                         relation=pa.ZeroOut()),
     lambda: pa.Training(pa.Gaussian(1.1), pa.Poisson(250 / 60000), steps=240 * 60),
     (10.741, 54.046)),
    ("shuffle, same, 1 epoch",
     lambda: pa.Training(pa.Gaussian(1.1), pa.Shuffle(250, 60000), epochs=1,
                         relation=pa.ZeroOut()),
     lambda: pa.Training(pa.Gaussian(1.1), pa.Poisson(250 / 60000), steps=240),
     None),
    ("with replacement, n=1000, m=10, T=100, sigma=1, substitution",
     lambda: pa.Training(pa.Gaussian(1.0), pa.WithReplacement(10, 1000), steps=100,
                         relation=pa.Substitution()),
     None,
     (0.785, 2.673)),
    ("with replacement, n=1000, m=10, T=100, sigma=1, add/remove",
     lambda: pa.Training(pa.Gaussian(1.0), pa.WithReplacement(10, 1000), steps=100,
                         relation=pa.AddRemove()),
     lambda: pa.Training(pa.Gaussian(1.0), pa.Poisson(10 / 1000), steps=100),
     (9.58, 15.11)),
]


def dpa_with_replacement(relation: str) -> str:
    """dp-accounting's RDP accountant on SampledWithReplacementDpEvent, if it has one."""
    try:
        import dp_accounting as dpa

        acc = dpa.rdp.RdpAccountant(
            neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE
            if relation == "substitution" else dpa.NeighboringRelation.ADD_OR_REMOVE_ONE)
        ev = dpa.SelfComposedDpEvent(
            dpa.SampledWithReplacementDpEvent(1000, 10, dpa.GaussianDpEvent(1.0)), 100)
        acc.compose(ev)
        return f"{acc.get_epsilon(DELTA):.4f}"
    except Exception as exc:  # noqa: BLE001 - report whatever the peer says
        return f"unsupported ({type(exc).__name__})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "shuffle.md"))
    args = ap.parse_args()
    lines = [f"# Shuffle and with replacement, delta = {DELTA:g}", "",
             "| setting | before | privamp [lower, upper] | width | time (s) | Poisson "
             "(same expected batch) | peer |", "|---|---|---|---|---|---|---|"]
    for name, make, make_poisson, before in SETTINGS:
        t0 = time.perf_counter()
        g = make().epsilon(DELTA)
        dt = time.perf_counter() - t0
        lo, up = float(g.lower.value), float(g.upper.value)
        pois = "n/a (substitution)"
        if make_poisson is not None:
            gp = make_poisson().epsilon(DELTA)
            pois = f"[{float(gp.lower.value):.4f}, {float(gp.upper.value):.4f}]"
        peer = "none (no peer accountant for shuffle)"
        if "with replacement" in name:
            peer = "dp-accounting RDP: " + dpa_with_replacement(
                "substitution" if "substitution" in name else "add/remove")
        b = f"[{before[0]}, {before[1]}]" if before else "-"
        lines.append(f"| {name} | {b} | [{lo:.5f}, {up:.5f}] | {up / lo - 1:.2%} | "
                     f"{dt:.2f} | {pois} | {peer} |")
        print(lines[-1], flush=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
