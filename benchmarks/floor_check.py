"""Bit-identity check of issue 28's speed work: 20 Training settings x 2 deltas, uppers and
lowers (the settings of ``benchmarks/results/floor_session10.md``).

    python benchmarks/floor_check.py --save before.json     # on the old tree
    python benchmarks/floor_check.py --compare before.json  # on the new tree

``--compare`` prints every number whose relative change is nonzero and the maximum relative
change (0 for a value-preserving change), and exits 1 if any upper decreased or any lower
increased (the interval may only widen by the reported amount).
"""

from __future__ import annotations

import argparse
import json
import sys

GAUSSIAN = [(1.1, 256 / 60000, 14063), (0.5, 1e-4, 1000), (0.5, 1e-3, 100000),
            (0.8, 0.01, 10000), (1.0, 0.1, 1000), (1.0, 1e-4, 100000), (2.0, 0.01, 100000),
            (4.0, 0.1, 10000), (4.0, 1e-3, 10), (1.5, 0.05, 5000), (0.7, 3e-3, 30000),
            (3.0, 1e-4, 100), (1.0, 0.02, 10), (2.0, 0.1, 100000), (0.6, 0.02, 2000),
            (1.2, 1e-3, 50000), (0.9, 0.1, 100), (2.5, 4e-3, 1000)]
DELTAS = (1e-5, 1e-8)


def settings():
    """(label, Training) of the 20 settings."""
    import privamp as pa

    for s, q, t in GAUSSIAN:
        yield f"G s={s} q={q} T={t}", pa.Training(pa.Gaussian(s), pa.Poisson(q), steps=t)
    yield "Laplace q=0.01 T=1000", pa.Training(pa.Laplace(2.0), pa.Poisson(0.01), steps=1000)
    yield "RR q=0.01 T=1000", pa.Training(pa.RandomizedResponse(0.75), pa.Poisson(0.01),
                                          steps=1000)


def run() -> dict[str, list[float | None]]:
    """{label|delta: [upper, lower]} of every setting."""
    out: dict[str, list[float | None]] = {}
    for label, tr in settings():
        for d in DELTAS:
            g = tr.epsilon(d)
            out[f"{label} | {d:g}"] = [None if g.upper is None else g.upper.value,
                                       None if g.lower is None else g.lower.value]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--save")
    ap.add_argument("--compare")
    a = ap.parse_args()
    res = run()
    if a.save:
        with open(a.save, "w") as f:
            json.dump(res, f, indent=1)
    if not a.compare:
        return
    with open(a.compare) as f:
        ref = json.load(f)
    worst, bad = 0.0, False
    for key, (u0, l0) in ref.items():
        u1, l1 = res[key]
        for name, x0, x1, wrong in (("upper", u0, u1, lambda a, b: b < a),
                                    ("lower", l0, l1, lambda a, b: b > a)):
            if x0 == x1:
                continue
            if x0 is None or x1 is None:
                print(f"{key} {name}: {x0} -> {x1}")
                bad = True
                continue
            rel = abs(x1 - x0) / abs(x0)
            worst = max(worst, rel)
            bad |= wrong(x0, x1)
            print(f"{key} {name}: {x0!r} -> {x1!r} (rel {rel:.3g})")
    print(f"{len(ref)} settings x (upper, lower): max relative change {worst:.3g}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
