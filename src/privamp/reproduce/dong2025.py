"""Figures 1-3 and Table 1's noise levels of Dong, Chen, Ozgur 2025, "Leveraging randomness in
model and data partitioning for privacy amplification".

* Figure 1: noise std needed for (3, 1e-5)-DP vs number of iterations, 3 disjoint submodels,
  data Poisson-subsampled at rate 0.1: baseline (Poisson-subsampled Gaussian, Thm 3.11) vs
  amplified (model splitting on top, Thm 3.4).
* Figure 2: RDP epsilon vs alpha for Balanced Iteration (T = 10, k = 4, sigma = 2; bounds (2)
  and (3) with privamp's certified reverse term) and Poisson at rate 0.4 composed 10 times.
* Figure 3: delta at eps = 8 vs T for BIS (one epoch of T steps, k = 0.4 T), BIS composed
  (epochs of T = 10, k = 4) and Poisson (rate 0.4; RDP, and PLD through privamp's "pld"
  accountant when available), sigma = 2; plus BIS by privamp's certified PLD
  (:func:`privamp.theorems.dong2025.bis_pld.bis_plds`).
* ``"table1"``: noise std for (8, 1e-5)-DP, 100 epochs at data rate 0.1 (1000 steps), with 3
  and 8 submodels, baseline vs amplified.  The paper splits only the middle blocks of a
  ResNet (its clipping norms are not given); privamp's amplified numbers are for a fully
  split model, so they are a lower envelope for the paper's, not a replica.

RDP is converted to (eps, delta) with Canonne, Kamath, Steinke 2020, Prop 12 (sound, and
tighter than the paper's Prop 2.3).  ``fast=True`` uses coarse grids.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from pathlib import Path
from typing import cast

import numpy as np

from ..errors import NotApplicable
from ..results import Bound
from ..theorems.dong2025.rdp import partition_rdp_kernel, poisson_gaussian_rdp

__all__ = [
    "FIGURES",
    "table1",
    "rdp_to_delta",
    "rdp_to_epsilon",
    "calibrate_sigma",
]


PAPER = "Dong, Chen, Ozgur 2025"


TABLE1_PAPER = {("baseline", 3): 3.31, ("amplified", 3): 2.72,
                ("baseline", 8): 3.31, ("amplified", 8): 2.49}


# ------------------------------------------------------------------------------------------
# conversions and calibration
# ------------------------------------------------------------------------------------------
def rdp_to_epsilon(rdp: np.ndarray, alpha: np.ndarray, delta: float) -> float:
    """Smallest eps over the orders (Canonne, Kamath, Steinke 2020, Prop 12)."""
    a = np.asarray(alpha, dtype=float)
    eps = rdp + (math.log(1 / delta) - np.log(a)) / (a - 1) + np.log1p(-1 / a)
    return float(max(np.min(eps), 0.0))


def rdp_to_delta(rdp: np.ndarray, alpha: np.ndarray, eps: float) -> float:
    """Smallest delta over the orders (Canonne, Kamath, Steinke 2020, Prop 12)."""
    a = np.asarray(alpha, dtype=float)
    logd = (a - 1) * (rdp - eps) - np.log(a) + (a - 1) * np.log1p(-1 / a)
    return float(min(math.exp(min(float(np.min(logd)), 0.0)), 1.0))


def _orders(fast: bool) -> np.ndarray:
    if fast:
        return np.array([2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0])
    return np.concatenate([np.arange(2.0, 33.0), np.array([40.0, 48.0, 56.0, 64.0, 80.0,
                                                             96.0, 128.0, 192.0, 256.0])])


def calibrate_sigma(rdp_of_sigma: Callable[[float], np.ndarray], alpha: np.ndarray,
                    steps: int, eps: float, delta: float, lo: float = 0.3, hi: float = 50.0,
                    rtol: float = 2e-3) -> float:
    """Smallest sigma (to rtol, rounded up) with steps * rdp(sigma) meeting (eps, delta)."""
    def ok(sigma: float) -> bool:
        return rdp_to_epsilon(steps * rdp_of_sigma(sigma), alpha, delta) <= eps

    if not ok(hi):
        raise ValueError(f"no sigma <= {hi} reaches eps={eps}")
    while ok(lo) and lo > 1e-3:
        lo /= 2
    while hi / lo > 1 + rtol:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _baseline(rate: float, alpha: np.ndarray) -> Callable[[float], np.ndarray]:
    return lambda sigma: poisson_gaussian_rdp(1.0 / sigma, rate, alpha)


def _amplified(parts: int, rate: float, alpha: np.ndarray) -> Callable[[float], np.ndarray]:
    return lambda sigma: partition_rdp_kernel(1.0 / sigma, parts, 1, alpha, rate, "tight")


# ------------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------------
def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def figure1(out_dir: Path, fast: bool) -> list[Path]:
    alpha = _orders(fast)
    steps = [100, 1000] if fast else [100, 300, 1000, 3000, 10_000]
    rtol = 5e-2 if fast else 2e-3
    rows = []
    for T in steps:
        base = calibrate_sigma(_baseline(0.1, alpha), alpha, T, 3.0, 1e-5, rtol=rtol)
        amp = calibrate_sigma(_amplified(3, 0.1, alpha), alpha, T, 3.0, 1e-5, hi=base * 1.01,
                              rtol=rtol)
        rows.append([T, base, amp])
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot([r[0] for r in rows], [r[1] for r in rows], "o-", label="baseline (Poisson 0.1)")
    ax.plot([r[0] for r in rows], [r[2] for r in rows], "s-", label="3 submodels (Thm 3.4)")
    ax.set_xscale("log")
    ax.set_xlabel("training iterations")
    ax.set_ylabel("noise std / clipping norm")
    ax.set_title("(3, 1e-5)-DP, data rate 0.1")
    ax.legend()
    fig.tight_layout()
    png = out_dir / "dong2025_fig1.png"
    fig.savefig(png, dpi=120)
    plt.close(fig)
    csvp = _write_csv(out_dir / "dong2025_fig1.csv", ["iterations", "sigma_baseline",
                                                      "sigma_amplified"], rows)
    return [png, csvp]


def figure2(out_dir: Path, fast: bool) -> list[Path]:
    alpha = np.arange(2.0, 21.0 if fast else 101.0)
    s = 0.5  # sigma = 2
    tight = partition_rdp_kernel(s, 10, 4, alpha, 1.0, "tight")
    fast_b = partition_rdp_kernel(s, 10, 4, alpha, 1.0, "fast")
    pois = 10 * poisson_gaussian_rdp(s, 0.4, alpha)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(alpha, tight, label="BIS, bound (2) + certified reverse")
    ax.plot(alpha, fast_b, "--", label="BIS, bound (3) + certified reverse")
    ax.plot(alpha, pois, ":", label="Poisson 0.4, 10 steps (Thm 3.11)")
    ax.set_xlabel("alpha")
    ax.set_ylabel("RDP epsilon")
    ax.set_yscale("log")
    ax.set_title("T = 10, k = 4, sigma = 2")
    ax.legend(fontsize=8)
    fig.tight_layout()
    png = out_dir / "dong2025_fig2.png"
    fig.savefig(png, dpi=120)
    plt.close(fig)
    rows = [[a, t, f, p] for a, t, f, p in zip(alpha, tight, fast_b, pois, strict=True)]
    csvp = _write_csv(out_dir / "dong2025_fig2.csv", ["alpha", "bis_tight", "bis_fast",
                                                      "poisson_10_steps"], rows)
    return [png, csvp]


def _poisson_pld_delta(sigma: float, rate: float, steps: int, eps: float) -> float | None:
    try:
        from ..accounting.training import Training
        from ..mechanisms.gaussian import Gaussian
        from ..sampling.schemes import Poisson

        g = Training(Gaussian(sigma), Poisson(rate), steps=steps).delta(eps, accountant="pld")
    except NotApplicable:  # the accountant declines this run: the curve is left out
        return None
    return None if g.upper is None else float(g.upper.value)


def _bis_pld_delta(sigma: float, T: int, k: int, eps: float) -> float | None:
    try:
        from ..theorems.dong2025.bis_pld import bis_plds

        rem, add = bis_plds(sigma, T, k)
    except NotApplicable:
        return None
    return float(max(rem.delta(eps), add.delta(eps)))


def figure3(out_dir: Path, fast: bool) -> list[Path]:
    alpha = _orders(True)
    s, eps = 0.5, 8.0
    Ts = [10, 20, 30, 40, 50, 60] if not fast else [10, 20, 30]
    epoch = partition_rdp_kernel(s, 10, 4, alpha, 1.0, "tight")
    pois_step = poisson_gaussian_rdp(s, 0.4, alpha)
    rows = []
    for T in Ts:
        k = round(0.4 * T)
        bis = partition_rdp_kernel(s, T, k, alpha, 1.0, "tight")
        rows.append([T, rdp_to_delta(bis, alpha, eps),
                     rdp_to_delta((T // 10) * epoch, alpha, eps),
                     rdp_to_delta(T * pois_step, alpha, eps),
                     _poisson_pld_delta(2.0, 0.4, T, eps) if not fast else None,
                     _bis_pld_delta(2.0, T, k, eps)])
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    labels = ["BIS (one epoch, RDP)", "BIS composed (T=10 epochs, RDP)", "Poisson (RDP)",
              "Poisson (PLD)", "BIS (PLD, block bound)"]
    for j, lab in enumerate(labels, start=1):
        pts = [(r[0], r[j]) for r in rows if r[j] is not None]
        if pts:
            ax.plot(*zip(*pts, strict=True), "o-", label=lab)
    ax.axhline(1e-5, ls=":", c="k")
    ax.set_yscale("log")
    ax.set_xlabel("T (iterations)")
    ax.set_ylabel("delta at eps = 8")
    ax.set_title("gamma = k/T = 0.4, sigma = 2")
    ax.legend(fontsize=8)
    fig.tight_layout()
    png = out_dir / "dong2025_fig3.png"
    fig.savefig(png, dpi=120)
    plt.close(fig)
    csvp = _write_csv(out_dir / "dong2025_fig3.csv",
                      ["T", "bis_rdp", "bis_composed_rdp", "poisson_rdp", "poisson_pld",
                       "bis_pld"], rows)
    return [png, csvp]


#: Remark 3.10 settings (sigma = 1, delta = 1e-5): one long epoch (T, k) against E composed
#: short epochs (T / E, k / E) with the same steps and rate
REMARK310 = [((100, 10), (10, 1), 10), ((1000, 10), (100, 1), 10), ((1000, 5), (200, 1), 5)]


def _bis_interval(T: int, k: int, epochs: int) -> tuple[float | None, float]:
    from ..accounting.training import Training
    from ..mechanisms.gaussian import Gaussian
    from ..sampling.schemes import BalancedIteration

    g = Training(Gaussian(1.0), BalancedIteration(T, k), epochs=epochs).epsilon(
        1e-5, accountant="pld")
    return (None if g.lower is None else float(g.lower.value)), float(cast(Bound, g.upper).value)


def remark310(out_dir: Path, fast: bool) -> list[Path]:
    """Remark 3.10: one epoch of T steps with k participations against E epochs of T/E steps
    with k/E participations (same steps, same rate), sigma = 1, eps at delta = 1e-5, certified
    [lower, upper] for both (``fast``: T = 20, k = 4 against 4 x (5, 1) only).  The
    ordering (long epoch more private) is certified when the
    long epoch's upper bound is below the short epochs' lower bound; with the k x 1-of-T/k
    reduction as the only upper bound for k > 1 that cannot happen (the reduction of the long
    epoch is the composition of the short ones), see docs/dong2025.md for the Monte Carlo
    check of the truth."""
    rows = []
    for (T, k), (t, kk), E in [((20, 4), (5, 1), 4)] if fast else REMARK310:
        lo_l, up_l = _bis_interval(T, k, 1)
        lo_s, up_s = _bis_interval(t, kk, E)
        rows.append([T, k, lo_l, up_l, t, kk, E, lo_s, up_s,
                     lo_s is not None and up_l < lo_s])
    return [_write_csv(out_dir / "dong2025_remark310.csv",
                       ["T", "k", "long_lower", "long_upper", "short_T", "short_k", "epochs",
                        "short_lower", "short_upper", "certified_long_better"], rows)]


def table1(fast: bool = False) -> list[dict]:
    """Noise std for (8, 1e-5)-DP, 1000 steps at data rate 0.1: baseline vs amplified
    (fully split model), with the paper's values next to them."""
    alpha = _orders(fast)
    rtol = 5e-2 if fast else 1e-3
    base = calibrate_sigma(_baseline(0.1, alpha), alpha, 1000, 8.0, 1e-5, rtol=rtol)
    out = []
    for parts in (3, 8):
        amp = calibrate_sigma(_amplified(parts, 0.1, alpha), alpha, 1000, 8.0, 1e-5,
                              hi=base * 1.01, rtol=rtol)
        out.append({"submodels": parts, "method": "baseline", "sigma": base,
                    "paper": TABLE1_PAPER[("baseline", parts)]})
        out.append({"submodels": parts, "method": "amplified (full split)", "sigma": amp,
                    "paper": TABLE1_PAPER[("amplified", parts)]})
    return out


def _table1(out_dir: Path, fast: bool) -> list[Path]:
    rows = table1(fast)
    return [_write_csv(out_dir / "dong2025_table1.csv", ["submodels", "method", "sigma",
                                                         "paper"],
                       [[r["submodels"], r["method"], r["sigma"], r["paper"]] for r in rows])]


FIGURES: dict[str, Callable[[Path, bool], list[Path]]] = {
    "1": figure1,
    "2": figure2,
    "3": figure3,
    "table1": _table1,
    "remark310": remark310,
}

