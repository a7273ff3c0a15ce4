"""Schuchardt et al. 2024, Thm 4.2 (tight group RDP of the Poisson-subsampled Gaussian):
privamp's float64 log-space evaluation against a 50-digit mpmath tanh-sinh evaluation (the
authors' method, App. B), in one run: time of each, speed ratio, max relative difference of
the RDP epsilon.

    python benchmarks/bench_schuchardt.py [--quick] [--out benchmarks/results/schuchardt.md]

The mpmath reference integrates both directions of the univariate mixture divergence
(``sum_k Bin(k|K,r) N(k, sigma^2)`` against ``N(0, sigma^2)``) with the densities written out,
on windows around the modes of the integrand (located on a float64 grid).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import mpmath as mp
import numpy as np


def mp_eps(alpha: float, K: int, r: float, sigma: float) -> float:
    mp.mp.dps = 50
    a = mp.mpf(alpha)
    s = 1 / mp.mpf(sigma)
    w = [mp.binomial(K, k) * mp.mpf(r) ** k * (1 - mp.mpf(r)) ** (K - k) for k in range(K + 1)]

    def mix(z):
        return mp.fsum(w[k] * mp.npdf(z, k * s, 1) for k in range(K + 1))

    out = []
    for direction in ("forward", "reverse"):
        if direction == "forward":
            def f(z):
                return mix(z) ** a * mp.npdf(z) ** (1 - a)
            lo, hi = -40.0, float(alpha * K / sigma) + 40.0
        else:
            def f(z):
                return mp.npdf(z) ** a * mix(z) ** (1 - a)
            lo, hi = -float((alpha - 1) * K / sigma) - 40.0, 40.0
        # modes located on a float64 grid of the log-integrand (independent of privamp)
        z = np.linspace(lo, hi, int(min(2e5, (hi - lo) * 4)) + 1)
        k = np.arange(K + 1)
        logw = np.array([float(mp.log(x)) for x in w])
        comp = logw[:, None] - 0.5 * (z[None, :] - k[:, None] / sigma) ** 2
        m = comp.max(axis=0)
        lmix = m + np.log(np.exp(comp - m).sum(axis=0))
        l0 = -0.5 * z**2
        lf = alpha * lmix + (1 - alpha) * l0 if direction == "forward" else (
            alpha * l0 + (1 - alpha) * lmix)
        peak = z[np.argmax(lf)]
        pts = sorted({lo, hi, *[float(np.clip(peak + d, lo, hi))
                                for d in (-40, -20, -10, -5, -2, 0, 2, 5, 10, 20, 40)]})
        out.append(mp.log(mp.quad(f, [mp.mpf(p) for p in pts])) / (a - 1))
    return float(max(out))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import privamp as pa

    K, sigma = 8, 1.0
    n_orders = 6 if args.quick else 16
    orders = np.unique(np.floor(np.geomspace(2, 1e4, n_orders)))
    lines = ["| K | r | sigma | orders | privamp s | mpmath s | speed ratio | max rel diff |",
             "|---|---|---|---|---|---|---|---|"]
    for r in (0.001, 0.1):
        t0 = time.perf_counter()
        mine = pa.rdp(pa.Gaussian(sigma), pa.Poisson(r), orders, pa.AddRemove(K),
                      method="schuchardt-tight")
        t_mine = time.perf_counter() - t0
        t0 = time.perf_counter()
        ref = np.array([mp_eps(a, K, r, sigma) for a in orders])
        t_ref = time.perf_counter() - t0
        rel = float(np.max(np.abs(mine - ref) / np.abs(ref)))
        below = bool(np.any(mine < ref * (1 - 1e-12)))
        lines.append(f"| {K} | {r} | {sigma} | {orders.size} (2..{int(orders[-1])}) | "
                     f"{t_mine:.3f} | {t_ref:.1f} | {t_ref / t_mine:.0f}x | {rel:.1e}"
                     f"{' (BELOW reference!)' if below else ''} |")
        print(lines[-1], flush=True)
    grid = np.unique(np.floor(np.geomspace(2, 1e4, 121)))
    a98 = grid[np.round(np.linspace(0, grid.size - 1, 98)).astype(int)]
    t0 = time.perf_counter()
    pa.rdp(pa.Gaussian(1.0), pa.Poisson(0.01), a98, pa.AddRemove(8), method="schuchardt-tight")
    lines.append(f"\n98 integer orders 2..{int(a98[-1])}, K = 8, r = 0.01: "
                 f"{time.perf_counter() - t0:.2f} s (privamp)")
    print(lines[-1])
    text = "# Thm 4.2: privamp vs mpmath (50 digits)\n\n" + "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
