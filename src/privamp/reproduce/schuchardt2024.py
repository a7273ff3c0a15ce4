"""Figures of Schuchardt, Stoian, Kosmala, Günnemann 2024, "Unified Mechanism-Specific
Amplification by Subsampling and Group Privacy Amplification" (RDP part; paper file
``schuchardt2024-group-privacy-amplification-rdp.md``).

* ``"3"`` / ``"6"``: randomized response, sampling without replacement, substitution:
  Thm 3.7 (tight) vs Wang et al. 2019 (Thm 9/27), RDP vs alpha (q/N = 0.001; Fig 6 adds
  q/N = 0.1, 0.01).
* ``"4"`` / ``"8"``: randomized response under Poisson sampling, groups of 2, 4, 8: Thm G.1
  (tight) vs Zhu & Wang 2019 (no factor 2) + Mironov 2017 recursive group privacy (App. B.1).
* ``"5"`` / ``"9"`` / ``"10"``: the same for the Gaussian mechanism (Thm 4.2); Fig 10 zooms
  into small orders (real orders in (1, 10]).
* ``"7"``: Prop E.5 (Daigavane et al. 2022) vs Wang et al. 2019 + group privacy, Gaussian
  (sigma = 5), sampling without replacement, K-fold substitution.
* ``"11"`` / ``"12"``: epsilon (delta = 1e-5) vs number of iterations after RDP composition and
  conversion (Balle et al. 2020, Thm 21): Gaussian at rate 0.001 (Fig 11), randomized
  response theta = 0.6 at rates 0.1 and 0.001 (Fig 12).

Orders: 121 log-spaced points in [2, 1e4] rounded down (paper, App. B); ``fast=True`` uses a
dozen orders up to 1e3 and fewer panels.  Each figure writes a PNG and a CSV of its numbers.
Where the paper's exact parameters are not stated (Figs 11, 12: sigma, delta), the choices
are written in the figure titles.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import cast

import numpy as np

from ..accountants.registry import rdp_values as rdp_of
from ..mechanisms.base import Mechanism
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.randomized_response import RandomizedResponse
from ..renyi.conversion import eps_from_rdp
from ..renyi.curves import monotone_envelope
from ..sampling.relations import AddRemove, Substitution
from ..sampling.schemes import Poisson, WithoutReplacement
from ..theorems.mironov2017 import mironov_group_curve

__all__ = [
    "FIGURES",
    "orders",
]


PAPER = "Schuchardt et al. 2024"


def orders(fast: bool, small: bool = False) -> np.ndarray:
    if small:
        return np.geomspace(1.05, 10.0, 12 if fast else 121)
    if fast:
        return np.unique(np.floor(np.geomspace(2, 1e3, 12)))
    return np.unique(np.floor(np.geomspace(2, 1e4, 121)))


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _write(out: Path, name: str, fig, rows: list[dict]) -> list[Path]:
    png = out / f"schuchardt2024_fig{name}.png"
    fig.savefig(png, dpi=110, bbox_inches="tight")
    _plt().close(fig)
    path = out / f"schuchardt2024_fig{name}.csv"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return [png, path]


def _panels(out: Path, name: str, title: str, panels: list[tuple[str, dict[str, Callable]]],
            x: np.ndarray, xlabel: str = "RDP order alpha", ylabel: str = "RDP epsilon",
            logx: bool = True) -> list[Path]:
    """One subplot per panel; each panel maps a curve label to a function of x."""
    plt = _plt()
    n = len(panels)
    cols = min(n, 3)
    rows_n = -(-n // cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.2 * cols, 3.2 * rows_n), squeeze=False)
    rows: list[dict] = []
    for ax, (ptitle, curves) in zip(axes.ravel(), panels, strict=False):
        for label, fn in curves.items():
            y = np.asarray(fn(x), dtype=float)
            ax.plot(x, y, label=label)
            rows.extend({"panel": ptitle, "curve": label, "x": float(a), "y": float(v)}
                        for a, v in zip(x, y, strict=True))
        if logx:
            ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(ptitle, fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    fig.suptitle(f"{PAPER}, {title}", fontsize=10)
    fig.tight_layout()
    return _write(out, name, fig, rows)


# ------------------------------------------------------------------------------------------
# curves
# ------------------------------------------------------------------------------------------
def _poisson_tight(mech: Mechanism, r: float, K: int) -> Callable:
    return lambda a: rdp_of(mech, Poisson(r), a, AddRemove(K), method="schuchardt-tight")


def _poisson_baseline(mech: Mechanism, r: float, K: int) -> Callable:
    """Zhu & Wang 2019 without the factor 2, then Mironov's recursive group privacy."""
    if K == 1:
        return lambda a: rdp_of(mech, Poisson(r), a, AddRemove(), method="zhu-wang-tight")
    return lambda a: monotone_envelope(a, lambda b: mironov_group_curve(
        mech, Poisson(r), b, AddRemove(K), base_method="zhu-wang-tight"))


def _wor_wang(mech: Mechanism, scheme: WithoutReplacement, K: int = 1) -> Callable:
    if K == 1:
        return lambda a: rdp_of(mech, scheme, a, Substitution(), method="wang2019")
    return lambda a: monotone_envelope(a, lambda b: mironov_group_curve(
        mech, scheme, b, Substitution(K), base_method="wang2019"))


# ------------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------------
def _rr_wor(out: Path, fast: bool, name: str, ratios: list[float]) -> list[Path]:
    thetas = [0.6, 0.75, 0.9]
    if fast:
        ratios = ratios[:1]
        thetas = thetas[:2]
    panels = []
    for ratio in ratios:
        scheme = WithoutReplacement(1, int(round(1 / ratio)))
        for t in thetas:
            mech = RandomizedResponse(t)
            panels.append((f"theta={t}, q/N={ratio}", {
                "Thm 3.7 (tight)": lambda a, m=mech, s=scheme: rdp_of(
                    m, s, a, Substitution(), method="schuchardt-tight"),
                "Wang et al. 2019": _wor_wang(mech, scheme),
            }))
    return _panels(out, name, "randomized response, WOR, substitution", panels, orders(fast))


def figure3(out: Path, fast: bool) -> list[Path]:
    return _rr_wor(out, fast, "3", [0.001])


def figure6(out: Path, fast: bool) -> list[Path]:
    return _rr_wor(out, fast, "6", [0.1, 0.01, 0.001])


def _poisson_groups(out: Path, fast: bool, name: str, mechs: list[Mechanism], title: str,
                    small: bool = False) -> list[Path]:
    rates = [0.2, 0.1, 0.001]
    groups = [2, 4, 8]
    if fast:
        rates, groups, mechs = rates[1:2], groups[::2], mechs[:1]
    panels = []
    for mech in mechs:
        for r in rates:
            curves = {}
            for K in groups:
                curves[f"K={K} tight"] = _poisson_tight(mech, r, K)
                curves[f"K={K} baseline"] = _poisson_baseline(mech, r, K)
            label = f"theta={mech.theta}" if isinstance(mech, RandomizedResponse) else (
                f"sigma={cast(Gaussian, mech).sigma}")
            panels.append((f"{label}, r={r}", curves))
    return _panels(out, name, title, panels, orders(fast, small))


def figure4(out: Path, fast: bool) -> list[Path]:
    return _poisson_groups(out, fast, "4", [RandomizedResponse(0.75)],
                           "randomized response, Poisson, groups (Thm G.1 vs Zhu-Wang + B.1)")


def figure8(out: Path, fast: bool) -> list[Path]:
    return _poisson_groups(out, fast, "8", [RandomizedResponse(t) for t in (0.6, 0.7, 0.8, 0.9)],
                           "randomized response, Poisson, groups (Thm G.1 vs Zhu-Wang + B.1)")


def figure5(out: Path, fast: bool) -> list[Path]:
    return _poisson_groups(out, fast, "5", [Gaussian(1.0)],
                           "Gaussian, Poisson, groups (Thm 4.2 vs Zhu-Wang + B.1)")


def figure9(out: Path, fast: bool) -> list[Path]:
    return _poisson_groups(out, fast, "9", [Gaussian(s) for s in (0.5, 1.0, 2.0, 5.0)],
                           "Gaussian, Poisson, groups (Thm 4.2 vs Zhu-Wang + B.1)")


def figure10(out: Path, fast: bool) -> list[Path]:
    return _poisson_groups(out, fast, "10", [Gaussian(s) for s in (0.5, 1.0, 2.0, 5.0)],
                           "Gaussian, small orders (Thm 4.2 vs Zhu-Wang + B.1)", small=True)


def figure7(out: Path, fast: bool) -> list[Path]:
    mech = Gaussian(5.0)
    settings = [(1000, 100), (1000, 10), (1000, 1), (10000, 10)]
    groups = [1, 2, 4]
    if fast:
        settings, groups = settings[:1], groups[1:2]
    panels = []
    for n, q in settings:
        scheme = WithoutReplacement(q, n)
        curves = {}
        for K in groups:
            curves[f"K={K} Prop E.5"] = lambda a, s=scheme, k=K: rdp_of(
                mech, s, a, Substitution(k), method="daigavane")
            curves[f"K={K} Wang+group"] = _wor_wang(mech, scheme, K)
        panels.append((f"N={n}, q={q}", curves))
    return _panels(out, "7", "Gaussian sigma=5, WOR: direct transport vs baseline", panels,
                   orders(fast))


def _conversion(out: Path, fast: bool, name: str, cases: list[tuple[str, Mechanism, float]],
                title: str) -> list[Path]:
    groups = [2, 4, 8]
    if fast:
        groups, cases = groups[1:2], cases[:1]
    a = np.concatenate([np.geomspace(1.05, 10, 12 if fast else 60),
                        np.unique(np.floor(np.geomspace(11, 1e4, 12 if fast else 60)))])
    iterations = np.unique(np.geomspace(1, 1e4, 8 if fast else 25).astype(int))
    delta = 1e-5
    panels = []
    for label, mech, r in cases:
        curves = {}
        for K in groups:
            for kind, fn in (("tight", _poisson_tight(mech, r, K)),
                             ("baseline", _poisson_baseline(mech, r, K))):
                rdp_curve = np.asarray(fn(a), dtype=float)
                curves[f"K={K} {kind}"] = lambda t, c=rdp_curve: np.array(
                    [float(eps_from_rdp(a, ti * c, delta)[0]) for ti in t])
        panels.append((f"{label}, r={r}, delta={delta}", curves))
    return _panels(out, name, title, panels, iterations, xlabel="iterations",
                   ylabel="epsilon")


def figure11(out: Path, fast: bool) -> list[Path]:
    return _conversion(out, fast, "11", [("Gaussian sigma=1", Gaussian(1.0), 0.001),
                                         ("Gaussian sigma=2", Gaussian(2.0), 0.001)],
                       "conversion to (eps, delta), Gaussian")


def figure12(out: Path, fast: bool) -> list[Path]:
    return _conversion(out, fast, "12", [("RR theta=0.6", RandomizedResponse(0.6), 0.1),
                                         ("RR theta=0.6", RandomizedResponse(0.6), 0.001)],
                       "conversion to (eps, delta), randomized response")


FIGURES: dict[str, Callable[[Path, bool], list[Path]]] = {
    "3": figure3,
    "4": figure4,
    "5": figure5,
    "6": figure6,
    "7": figure7,
    "8": figure8,
    "9": figure9,
    "10": figure10,
    "11": figure11,
    "12": figure12,
}

