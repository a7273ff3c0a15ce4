"""Figure 1 (a)-(e) of Balle, Barthe, Gaboardi 2018, "Privacy amplification by subsampling:
tight analyses via couplings and divergences" (appendix A): privacy profiles delta(eps).

* (a) randomized response, Laplace and Gaussian calibrated to the same delta(0) = 1/2
  (profiles of Sec. 5, Thm 3, Thm 4).
* (b) subsampled Gaussian (sigma = 1, sensitivity 1), dataset of n = 1000 records: without
  replacement (Thm 9) vs with replacement (Thm 10, white-box group privacy), same batch
  sizes m.
* (c) the same for the Laplace mechanism (scale 1, sensitivity 1).
* (d) subsampled Laplace with replacement: Thm 10 with the group terms (white-box) vs its
  first term alone (the bound one would get if a record could be drawn at most once).
* (e) subsampled Laplace with replacement: white-box vs black-box group privacy.

The appendix gives no numbers for its parameter choices, so these are representative values;
every curve is computed with :func:`privamp.theorems.balle2018.profiles.profile`.  Each figure
writes a PNG and a CSV of the plotted numbers.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import stats

from ..mechanisms.gaussian import Gaussian
from ..mechanisms.laplace import Laplace
from ..mechanisms.randomized_response import RandomizedResponse
from ..plotting import pyplot
from ..sampling.relations import Substitution
from ..sampling.schemes import WithoutReplacement, WithReplacement
from ..theorems.balle2018.profiles import profile, profile_terms

__all__ = [
    "FIGURES",
]


PAPER = "Balle, Barthe, Gaboardi 2018, Figure 1"


N = 1000


def _write(out: Path, name: str, eps: np.ndarray, curves: dict[str, np.ndarray], title: str,
           logy: bool, xlabel: str = "epsilon") -> list[Path]:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.6, 4.4))
    for i, (label, y) in enumerate(curves.items()):
        yy = np.where(y > 0, y, np.nan) if logy else y
        # subsampled figures come in pairs (same batch size): same colour, solid / dashed
        colour, style = (f"C{i // 2}", "-" if i % 2 == 0 else "--") if logy else (f"C{i}", "-")
        ax.plot(eps, yy, style, color=colour, label=label, linewidth=1.6)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("delta (privacy profile)")
    ax.set_title(f"{PAPER}({name[-1]})\n{title}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    png = out / f"balle2018_fig{name}.png"
    fig.savefig(png, dpi=120)
    plt.close(fig)
    path = out / f"balle2018_fig{name}.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["epsilon", *curves])
        for j, e in enumerate(eps):
            w.writerow([f"{e:.6g}", *(f"{float(c[j]):.6e}" for c in curves.values())])
    return [png, path]


def _grid(fast: bool, hi: float) -> np.ndarray:
    return np.linspace(0.0, hi, 25 if fast else 301)


def fig_a(out: Path, fast: bool) -> list[Path]:
    """Profiles calibrated to delta(0) = 1/2: theta = 3/4, Laplace e0 = 2 log 2,
    Gaussian Delta/sigma = 2 Phi^{-1}(3/4)."""
    eps = _grid(fast, 3.0)
    rr = RandomizedResponse(0.75)
    lap = Laplace(1.0 / (2 * math.log(2.0)))
    gau = Gaussian(1.0 / (2 * stats.norm.ppf(0.75)))
    curves = {
        "randomized response (theta = 0.75)": rr.delta_kernel(eps, 1),
        f"Laplace (e0 = {lap.epsilon0():.3f})": lap.delta_kernel(eps, 1),
        f"Gaussian (Delta/sigma = {gau.shift():.3f})": gau.delta_kernel(eps, 1),
    }
    return _write(out, "1a", eps, curves, "mechanisms calibrated to delta(0) = 0.5", False)


def _wor_vs_wr(out: Path, fast: bool, mech, name: str, what: str) -> list[Path]:
    eps = _grid(fast, 2.0)
    curves = {}
    for m in (10, 100, 500):
        curves[f"WOR m = {m} (Thm 9)"] = profile(mech, WithoutReplacement(m, N), eps)
        curves[f"WR m = {m} (Thm 10, white-box)"] = profile(mech, WithReplacement(m, N), eps)
    return _write(out, name, eps, curves,
                  f"subsampled {what}, n = {N}: without vs with replacement", True)


def fig_b(out: Path, fast: bool) -> list[Path]:
    return _wor_vs_wr(out, fast, Gaussian(1.0), "1b", "Gaussian (sigma = 1)")


def fig_c(out: Path, fast: bool) -> list[Path]:
    return _wor_vs_wr(out, fast, Laplace(1.0), "1c", "Laplace (scale = 1)")


def fig_d(out: Path, fast: bool) -> list[Path]:
    """Thm 10 with all group terms vs its k = 1 term only (Laplace, n = 100)."""
    eps = _grid(fast, 2.0)
    mech, n = Laplace(1.0), 100
    curves = {}
    for m in (25, 50, 100):
        scheme = WithReplacement(m, n)
        full = profile(mech, scheme, eps)
        terms = profile_terms(mech, scheme, Substitution())
        eta = terms.eta
        inner = np.log1p(np.expm1(eps) / eta)
        first = stats.binom(m, 1 / n).pmf(1) * mech.delta_kernel(inner, 1)
        curves[f"WR m = {m}: Thm 10 (all k)"] = full
        curves[f"WR m = {m}: k = 1 term only"] = first
    return _write(out, "1d", eps, curves,
                  "subsampled Laplace with replacement (n = 100): group-privacy effect", True)


def fig_e(out: Path, fast: bool) -> list[Path]:
    eps = _grid(fast, 2.0)
    mech, n = Laplace(1.0), 100
    curves = {}
    for m in (25, 50, 100):
        scheme = WithReplacement(m, n)
        curves[f"WR m = {m}: white-box"] = profile(mech, scheme, eps)
        curves[f"WR m = {m}: black-box"] = profile(mech, scheme, eps, group="black-box")
    return _write(out, "1e", eps, curves,
                  "subsampled Laplace with replacement (n = 100): white- vs black-box groups",
                  True)


FIGURES: dict[str, Callable[[Path, bool], list[Path]]] = {
    "1a": fig_a,
    "1b": fig_b,
    "1c": fig_c,
    "1d": fig_d,
    "1e": fig_e,
}

