"""Figures 1-7 and the Appendix A numbers of Chua et al. 2024, "How private are DP-SGD
implementations?" (ABLQ with deterministic, Poisson and shuffled batches).

One epoch of T = n / b steps, Gaussian noise sigma, zero-out neighbours, clipping norm 1.

* deterministic: exact delta_D / eps_D (Prop 3.1) — :mod:`privamp.theorems.chua2024`;
* shuffle: certified lower bound (eq. (7), optimised threshold) and the Thm 4.1 upper bound;
* Poisson (rate 1/T): privamp's run accountants ``"pld"`` (upper and lower) and ``"rdp"``
  (upper), through ``Training(Gaussian(sigma), Poisson(1/T), steps=T, relation=ZeroOut())``.
  When an accountant is not available the curve is left out and the CSV says so.

``FIGURES["1"] .. FIGURES["7"]`` redraw the figures (PNG + CSV of the plotted numbers);
``FIGURES["A"]`` writes the table of every number printed in the text and Appendix A next to
privamp's value (``appendix_table()`` returns it, ``print_appendix()`` prints it).
``epsilon_vs_sigma`` / ``delta_vs_epsilon`` compute the curves and ``plot_compare_sigma`` /
``plot_compare_epsilon`` draw them for any setting (used by ``privamp compare --plot``).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from ..accounting.training import Training
from ..errors import NotApplicable
from ..mechanisms.gaussian import Gaussian
from ..results import Bound
from ..sampling.relations import ZeroOut
from ..sampling.schemes import Poisson
from ..theorems import chua2024 as _b

__all__ = [
    "FIGURES",
    "epsilon_vs_sigma",
    "delta_vs_epsilon",
    "plot_compare_sigma",
    "plot_compare_epsilon",
    "appendix_table",
    "print_appendix",
]


PAPER = "Chua et al. 2024"


#: Figure settings (Sec. 1, 4 and Appendix A).
EPS_FIGURES: dict[str, dict[str, Any]] = {  # epsilon vs sigma at fixed delta and T
    "1": {"T": 100_000, "delta": 1e-6},
    "4": {"T": 10_000, "delta": 1e-6},
    "5": {"T": 1000, "delta": 1e-5},
}


DELTA_FIGURES: dict[str, dict[str, Any]] = {  # delta vs epsilon at fixed sigma and T
    "2": {"sigma": 0.3, "T": 10, "eps_max": 20.0, "shuffle": False},
    "3": {"sigma": 0.4, "T": 10_000, "eps_max": 14.0, "shuffle": True},
    "6": {"sigma": 0.8, "T": 1000, "eps_max": 5.0, "shuffle": True},
    "7": {"sigma": 1.0, "T": 1000, "eps_max": 3.0, "shuffle": True},
}


# ------------------------------------------------------------------------------------------
# curves
# ------------------------------------------------------------------------------------------
def _poisson_run(sigma: float, T: int, epochs: int = 1) -> Training:
    return Training(Gaussian(sigma), Poisson(1.0 / T), steps=T * epochs, relation=ZeroOut())


def _poisson(sigma: float, T: int, epochs: int, accountant: str, what: str,
             at: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None, str]:
    """(upper, lower, note) of the Poisson run by ``accountant``; None when unavailable."""
    try:
        run = _poisson_run(sigma, T, epochs)
        g = run.epsilon(at, accountant=accountant) if what == "epsilon" else \
            run.delta(at, accountant=accountant)
    except NotApplicable as exc:
        return None, None, f"{accountant} unavailable: {exc}"
    up = None if g.upper is None else np.asarray(g.upper.value, dtype=float)
    lo = None if g.lower is None else np.asarray(g.lower.value, dtype=float)
    src = g.upper.source if g.upper is not None else ""
    return up, lo, src


def epsilon_vs_sigma(sigmas: Sequence[float] | np.ndarray, T: int, delta: float, epochs: int = 1,
                     poisson: Sequence[str] = ("pld", "rdp")) -> dict[str, np.ndarray]:
    """eps(delta) against sigma: ``eps_D`` (exact), ``eps_S_lower`` (certified lower),
    ``eps_S_upper`` (= eps_D, Thm 4.1) and, per Poisson accountant ``a``, ``eps_P_upper_a`` /
    ``eps_P_lower_a`` (NaN where the accountant gives nothing)."""
    sig = np.asarray(sigmas, dtype=float)
    out: dict[str, np.ndarray] = {"sigma": sig}
    d = np.array([delta])
    out["eps_D"] = np.array([float(_b.deterministic_epsilon(delta, s, epochs).value)
                             for s in sig])
    out["eps_S_lower"] = np.array([float(cast(np.ndarray, _b.shuffle_epsilon_lower(
                                       d, s, T, epochs).value)[0])
                                   for s in sig])
    out["eps_S_upper"] = out["eps_D"].copy()
    for acc in poisson:
        up, lo = np.full(len(sig), np.nan), np.full(len(sig), np.nan)
        for i, s in enumerate(sig):
            u, lw, _ = _poisson(float(s), T, epochs, acc, "epsilon", d)
            if u is None and lw is None:
                break
            up[i] = np.nan if u is None else float(u.ravel()[0])
            lo[i] = np.nan if lw is None else float(lw.ravel()[0])
        out[f"eps_P_upper_{acc}"] = up
        out[f"eps_P_lower_{acc}"] = lo
    return out


def delta_vs_epsilon(epsilons: Sequence[float] | np.ndarray, sigma: float, T: int, epochs: int = 1,
                     shuffle: bool = True,
                     poisson: Sequence[str] = ("pld", "rdp")) -> dict[str, np.ndarray]:
    """delta(eps) against eps: ``delta_D`` (exact), ``delta_S_lower`` / ``delta_S_upper`` and
    ``delta_P_upper_a`` / ``delta_P_lower_a`` per Poisson accountant."""
    eps = np.asarray(epsilons, dtype=float)
    out: dict[str, np.ndarray] = {"epsilon": eps}
    out["delta_D"] = np.asarray(_b.deterministic_delta(eps, sigma, epochs).value, dtype=float)
    if shuffle:
        g = _b.shuffle_delta(eps, sigma, T, epochs)
        out["delta_S_lower"] = np.asarray(cast(Bound, g.lower).value, dtype=float)
        out["delta_S_upper"] = np.asarray(cast(Bound, g.upper).value, dtype=float)
    for acc in poisson:
        u, lw, _ = _poisson(sigma, T, epochs, acc, "delta", eps)
        out[f"delta_P_upper_{acc}"] = np.full(len(eps), np.nan) if u is None else u
        out[f"delta_P_lower_{acc}"] = np.full(len(eps), np.nan) if lw is None else lw
    return out


# ------------------------------------------------------------------------------------------
# drawing
# ------------------------------------------------------------------------------------------
def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


_STYLE = {
    "D": ("deterministic (exact)", "k", "-"),
    "S_lower": ("shuffle, lower bound", "tab:red", "-"),
    "P_upper_pld": ("Poisson, PLD upper", "tab:blue", "-"),
    "P_lower_pld": ("Poisson, PLD lower", "tab:blue", ":"),
    "P_upper_rdp": ("Poisson, RDP upper", "tab:green", "--"),
}


def _write_csv(path: Path, data: dict[str, np.ndarray], notes: Sequence[str] = ()) -> Path:
    keys = list(data)
    with open(path, "w", newline="") as fh:
        for note in notes:
            fh.write(f"# {note}\n")
        w = csv.writer(fh)
        w.writerow(keys)
        for row in zip(*(np.ravel(data[k]) for k in keys), strict=True):
            w.writerow([f"{x:.10g}" for x in row])
    return path


def _plot(data: dict[str, np.ndarray], x: str, prefix: str, path: Path, xlabel: str,
          ylabel: str, title: str, logy: bool) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    xs = data[x]
    for key, (label, colour, ls) in _STYLE.items():
        y = data.get(f"{prefix}_{key}")
        if y is None or np.all(np.isnan(y)):
            continue
        y = np.where(y > 0, y, np.nan) if logy else y
        ax.plot(xs, y, ls=ls, color=colour, marker="o", ms=2.5, label=label)
    lo, up = data.get(f"{prefix}_S_lower"), data.get(f"{prefix}_S_upper")
    if lo is not None and up is not None:
        ax.fill_between(xs, np.where(lo > 0, lo, np.nan) if logy else lo, up,
                        color="tab:red", alpha=0.15, label="shuffle: certified interval")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def plot_compare_sigma(path: str | Path, sigmas: Sequence[float], T: int, delta: float,
                       epochs: int = 1, poisson: Sequence[str] = ("pld", "rdp"),
                       title: str | None = None) -> Path:
    """eps vs sigma for deterministic / shuffle / Poisson (Figure 1 style) into ``path``."""
    data = epsilon_vs_sigma(sigmas, T, delta, epochs, poisson)
    return _plot(data, "sigma", "eps", Path(path), "noise multiplier sigma",
                 f"epsilon at delta = {delta:g}",
                 title or f"T = {T} steps/epoch, {epochs} epoch(s), delta = {delta:g}", True)


def plot_compare_epsilon(path: str | Path, epsilons: Sequence[float], sigma: float, T: int,
                         epochs: int = 1, poisson: Sequence[str] = ("pld", "rdp"),
                         title: str | None = None) -> Path:
    """delta vs eps for deterministic / shuffle / Poisson (Figures 2-3 style) into ``path``."""
    data = delta_vs_epsilon(epsilons, sigma, T, epochs, True, poisson)
    return _plot(data, "epsilon", "delta", Path(path), "epsilon", "delta",
                 title or f"sigma = {sigma:g}, T = {T} steps/epoch, {epochs} epoch(s)", True)


def _eps_figure(name: str) -> Callable[[Path, bool], list[Path]]:
    cfg = EPS_FIGURES[name]

    def draw(out_dir: Path, fast: bool) -> list[Path]:
        T, delta = cfg["T"], cfg["delta"]
        sig = np.geomspace(0.3, 1.0, 4 if fast else 20)
        poisson = () if fast else ("pld", "rdp")
        data = epsilon_vs_sigma(sig, T, delta, 1, poisson)
        notes = [f"{PAPER}, Figure {name}: T = {T}, delta = {delta:g}"]
        if not poisson:
            notes.append("Poisson curves skipped in fast mode")
        title = f"{PAPER}, Figure {name}: T = {T}, delta = {delta:g}"
        png = _plot(data, "sigma", "eps", out_dir / f"chua2024_fig{name}.png",
                    "noise multiplier sigma", f"epsilon at delta = {delta:g}", title, True)
        return [png, _write_csv(out_dir / f"chua2024_fig{name}.csv", data, notes)]

    return draw


def _delta_figure(name: str) -> Callable[[Path, bool], list[Path]]:
    cfg = DELTA_FIGURES[name]

    def draw(out_dir: Path, fast: bool) -> list[Path]:
        sigma, T = cfg["sigma"], cfg["T"]
        eps = np.linspace(0.0, cfg["eps_max"], 6 if fast else 61)
        poisson = () if fast else ("pld", "rdp")
        data = delta_vs_epsilon(eps, sigma, T, 1, cfg["shuffle"], poisson)
        notes = [f"{PAPER}, Figure {name}: sigma = {sigma}, T = {T}"]
        if not poisson:
            notes.append("Poisson curves skipped in fast mode")
        title = f"{PAPER}, Figure {name}: sigma = {sigma}, T = {T}"
        png = _plot(data, "epsilon", "delta", out_dir / f"chua2024_fig{name}.png", "epsilon",
                    "delta", title, True)
        return [png, _write_csv(out_dir / f"chua2024_fig{name}.csv", data, notes)]

    return draw


# ------------------------------------------------------------------------------------------
# Appendix A and the numbers in the text
# ------------------------------------------------------------------------------------------
#: (where, quantity, sampler, kind of the printed bound, printed value, sigma, T, at, method)
#: ``at`` is delta for eps rows and eps for delta rows.  Poisson rows name the accountant.
PRINTED = [
    ("Sec. 1 / Fig. 1", "eps", "poisson", "upper", 3.0, 0.4, 100_000, 1e-6, "pld"),
    ("Sec. 1 / Fig. 1", "eps", "shuffle", "lower", 14.45, 0.4, 100_000, 1e-6, ""),
    ("Sec. 4.3 / Fig. 3", "delta", "poisson", "upper", 1.18e-5, 0.4, 10_000, 4.0, "pld"),
    ("Sec. 4.3 / Fig. 3", "delta", "shuffle", "lower", 0.226, 0.4, 10_000, 4.0, ""),
    ("Sec. 4.3 / Fig. 3", "delta", "deterministic", "approx", 0.244, 0.4, 10_000, 4.0, ""),
    ("Sec. 4.3 / Fig. 3", "delta", "shuffle", "lower", 7.5e-5, 0.4, 10_000, 12.0, ""),
    ("A.1 / Fig. 4", "eps", "poisson", "upper", 1.96, 0.5, 10_000, 1e-6, "pld"),
    ("A.1 / Fig. 4", "eps", "poisson", "upper", 3.43, 0.5, 10_000, 1e-6, "rdp"),
    ("A.1 / Fig. 4", "eps", "shuffle", "lower", 10.994, 0.5, 10_000, 1e-6, ""),
    ("A.1 / Fig. 4", "eps", "deterministic", "approx", 10.997, 0.5, 10_000, 1e-6, ""),
    ("A.1 / Fig. 5", "eps", "poisson", "upper", 0.61, 0.7, 1000, 1e-5, "pld"),
    ("A.1 / Fig. 5", "eps", "poisson", "upper", 1.64, 0.7, 1000, 1e-5, "rdp"),
    ("A.1 / Fig. 5", "eps", "shuffle", "lower", 6.528, 0.7, 1000, 1e-5, ""),
    ("A.1 / Fig. 5", "eps", "deterministic", "approx", 6.652, 0.7, 1000, 1e-5, ""),
    ("A.2 / Fig. 6", "delta", "poisson", "upper", 9.873e-9, 0.8, 1000, 1.0, "pld"),
    ("A.2 / Fig. 6", "delta", "poisson", "upper", 3.346e-5, 0.8, 1000, 1.0, "rdp"),
    ("A.2 / Fig. 6", "delta", "shuffle", "lower", 0.018, 0.8, 1000, 1.0, ""),
    ("A.2 / Fig. 6", "delta", "shuffle", "lower", 1.6e-4, 0.8, 1000, 4.0, ""),
    # A.2 / Fig. 7: printed "at eps = 1", but all three recompute at eps = 0.5 (see docs).
    ("A.2 / Fig. 7 (eps 0.5)", "delta", "poisson", "upper", 2.06e-10, 1.0, 1000, 0.5, "pld"),
    ("A.2 / Fig. 7 (eps 0.5)", "delta", "poisson", "upper", 8.45e-5, 1.0, 1000, 0.5, "rdp"),
    ("A.2 / Fig. 7 (eps 0.5)", "delta", "shuffle", "lower", 0.004, 1.0, 1000, 0.5, ""),
    ("A.2 / Fig. 7", "delta", "shuffle", "lower", 4.38e-7, 1.0, 1000, 4.0, ""),
    # the same shuffle number where the text puts it (eps = 1): does not reproduce
    ("A.2 / Fig. 7 (as printed)", "delta", "shuffle", "lower", 0.004, 1.0, 1000, 1.0, ""),
]


def _printed_digits(x: float) -> float:
    """Half a unit in the last printed digit (e.g. 0.018 -> 5e-4, 10.994 -> 5e-4)."""
    s = f"{x:.10g}"
    mant = s.split("e")[0]
    exp = int(s.split("e")[1]) if "e" in s else 0
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    return 0.5 * 10.0 ** (exp - decimals)


def _status(kind: str, printed: float, lo: float, up: float) -> str:
    half = _printed_digits(printed)
    if kind == "lower":
        if lo >= printed:
            return "reproduced (ours at least as strong)"
        if lo >= printed - half:
            return "reproduced to the printed digits (ours rounds to it)"
        return "NOT reproduced"
    if kind == "upper":
        if math.isnan(up):
            return "accountant unavailable"
        if up <= printed:
            return "reproduced (ours at least as tight)"
        if up <= printed + half:
            return "reproduced to the printed digits"
        if not math.isnan(lo) and lo <= printed:
            return "ours looser (printed value inside our interval)"
        return "NOT reproduced"
    # approx: exact value
    return "reproduced" if abs(lo - printed) <= half else "NOT reproduced"


def appendix_table(fast: bool = False) -> list[dict]:
    """Every number printed in the text and Appendix A with privamp's interval and a status.

    ``fast`` skips the Poisson rows (each PLD takes seconds) and
    uses eq. (7) alone for the shuffle delta rows (otherwise also the histogram statistic)."""
    rows = []
    for where, qty, sampler, kind, printed, sigma, T, at, acc in PRINTED:
        lo = up = math.nan
        if sampler == "poisson":
            if fast:
                rows.append(dict(where=where, quantity=qty, sampler=sampler, kind=kind,
                                 printed=printed, sigma=sigma, T=T, at=at, method=acc,
                                 lower=lo, upper=up, status="skipped (fast)"))
                continue
            u, lw, _ = _poisson(sigma, T, 1, acc, "epsilon" if qty == "eps" else "delta",
                                np.array([at]))
            up = math.nan if u is None else float(np.ravel(u)[0])
            lo = math.nan if lw is None else float(np.ravel(lw)[0])
        elif qty == "eps":
            g = _b.ABLQ(sampler, sigma, T).epsilon(at)
            lo, up = float(cast(Bound, g.lower).value), float(cast(Bound, g.upper).value)
        else:  # delta rows: the finer histogram statistic too (about 1 s each)
            g = _b.ABLQ(sampler, sigma, T, method="eq7" if fast else "histogram").delta(at)
            lo, up = float(cast(Bound, g.lower).value), float(cast(Bound, g.upper).value)
        rows.append(dict(where=where, quantity=qty, sampler=sampler, kind=kind, printed=printed,
                         sigma=sigma, T=T, at=at, method=acc or "privamp", lower=lo, upper=up,
                         status=_status(kind, printed, lo, up)))
    return rows


def _format_rows(rows: list[dict]) -> str:
    head = (f"{'where':<24}{'quantity':<16}{'sampler':<14}{'printed':>12}"
            f"{'privamp lower':>15}{'privamp upper':>15}  status")
    lines = [head, "-" * len(head)]
    for r in rows:
        at = f"{r['quantity']}({r['at']:g})" if r["quantity"] == "delta" else \
            f"eps(d={r['at']:g})"
        sym = {"upper": "<=", "lower": ">=", "approx": "~"}[r["kind"]]
        name = r["sampler"] + (f"/{r['method']}" if r["sampler"] == "poisson" else "")
        lines.append(f"{r['where']:<24}{at:<16}{name:<14}{sym + format(r['printed'], '.6g'):>12}"
                     f"{r['lower']:>15.6g}{r['upper']:>15.6g}  {r['status']}"
                     f"   [sigma={r['sigma']}, T={r['T']}]")
    return "\n".join(lines)


def print_appendix(fast: bool = False) -> list[dict]:
    """Print the table of :func:`appendix_table` and return its rows."""
    rows = appendix_table(fast)
    print(_format_rows(rows))
    return rows


def _appendix(out_dir: Path, fast: bool) -> list[Path]:
    rows = appendix_table(fast)
    txt = out_dir / "chua2024_appendixA.txt"
    txt.write_text(_format_rows(rows) + "\n")
    path = out_dir / "chua2024_appendixA.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return [txt, path]


FIGURES: dict[str, Callable[[Path, bool], list[Path]]] = {
    "1": _eps_figure("1"),
    "2": _delta_figure("2"),
    "3": _delta_figure("3"),
    "4": _eps_figure("4"),
    "5": _eps_figure("5"),
    "6": _delta_figure("6"),
    "7": _delta_figure("7"),
    "A": _appendix,
}

