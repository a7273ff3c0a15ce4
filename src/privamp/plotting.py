"""Plots people would rather look at than read (matplotlib, optional extra ``plot``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .accounting.training import Training
from .errors import NotApplicable
from .mechanisms.gaussian import Gaussian
from .sampling.relations import Relation
from .sampling.schemes import Scheme

__all__ = [
    "plot_epsilon_vs_sigma",
    "pyplot",
]


def pyplot() -> Any:
    """matplotlib.pyplot with the file-only Agg backend (clear error when missing)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ValueError("plotting needs matplotlib: pip install 'privamp[plot]'") from exc
    return plt


def plot_epsilon_vs_sigma(
    schemes: Sequence[Scheme],
    sigmas: Sequence[float],
    epochs: float,
    delta: float,
    path: str | Path,
    relation: Relation,
    sensitivity: float = 1.0,
) -> Path:
    """Epsilon (upper bound as a line, certified interval shaded) against the noise multiplier,
    one curve per scheme, all runs of ``epochs`` epochs (Chua et al. 2024, Figure 1 style)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    sig = np.asarray(sigmas, dtype=float)
    styles = [("--", "s"), ("-", "o"), (":", "^"), ("-.", "D"), ("-", "v")]
    for i, scheme in enumerate(schemes):
        ls, mk = styles[i % len(styles)]
        up, lo = [], []
        for s in sig:
            run = Training(Gaussian(s, sensitivity), scheme, epochs=epochs, relation=relation)
            try:
                g = run.epsilon(delta)
            except NotApplicable:
                up.append(np.nan)
                lo.append(np.nan)
                continue
            up.append(np.nan if g.upper is None else float(g.upper.value))
            lo.append(np.nan if g.lower is None else float(g.lower.value))
        up_a, lo_a = np.array(up), np.array(lo)
        if np.all(np.isnan(up_a)) and np.all(np.isnan(lo_a)):
            continue
        (line,) = ax.plot(sig, np.where(np.isnan(up_a), lo_a, up_a), ls=ls, marker=mk, ms=4,
                          label=scheme.name)
        ok = ~np.isnan(up_a) & ~np.isnan(lo_a)
        if ok.any():
            ax.fill_between(sig[ok], lo_a[ok], up_a[ok], color=line.get_color(), alpha=0.25)
        only_lower = np.isnan(up_a) & ~np.isnan(lo_a)
        if only_lower.any():
            ax.plot(sig[only_lower], lo_a[only_lower], ls=":", color=line.get_color())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("noise multiplier sigma")
    ax.set_ylabel(f"epsilon at delta = {delta:g}")
    ax.set_title("privacy of one run under each batch sampler\n(line: upper bound; band: "
                 "certified interval)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path

