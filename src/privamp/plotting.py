"""Plots people would rather look at than read (matplotlib, optional extra ``plot``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .accounting.audit import AuditCheck
from .accounting.tradeoff import Tradeoff, gaussian_beta
from .accounting.training import Training
from .errors import NotApplicable
from .mechanisms.gaussian import Gaussian
from .results import Bound, Guarantee
from .sampling.relations import Relation
from .sampling.schemes import Scheme

__all__ = [
    "check_plot_path",
    "curve_steps",
    "epsilon_over_training",
    "plot_epsilon_curve",
    "plot_epsilon_vs_sigma",
    "plot_tradeoff",
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


#: the file types a plot may be written as
PLOT_SUFFIXES = (".png", ".pdf", ".svg")


def check_plot_path(path: str | Path) -> Path:
    """Check, before any computing, that a plot can be written to ``path``: matplotlib is
    installed, the folder exists and is writable, the suffix is png, pdf or svg.

    Returns:
        ``path`` as a Path.

    Raises:
        ValueError: what is wrong (matplotlib missing, no such folder, a suffix not
            supported).
    """
    import os

    path = Path(path)
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise ValueError(f"--plot {path}: the file must end in {', '.join(PLOT_SUFFIXES)}")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ValueError(f"--plot {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ValueError(f"--plot {path}: not writable")
    if path.is_dir():
        raise ValueError(f"--plot {path} is a folder, not a file")
    pyplot()
    return path


def plot_epsilon_vs_sigma(
    schemes: Sequence[Scheme],
    sigmas: Sequence[float] | np.ndarray,
    epochs: float,
    delta: float,
    path: str | Path,
    relation: Relation,
    sensitivity: float = 1.0,
    title: str = "",
    known: dict[tuple[str, float], Guarantee | None] | None = None,
    steps: int | None = None,
) -> Path:
    """Epsilon (upper bound as a line, certified interval shaded) against the noise multiplier,
    one curve per scheme, all runs of ``epochs`` epochs (or ``steps`` steps) (Chua et al.
    2024, Figure 1 style); ``title`` states the settings (batch, dataset, relation, delta).
    ``known``: answers already computed, by (scheme name, sigma) (None: declined), reused
    instead of asked again.  A progress bar counts the accountant queries.

    Raises:
        ValueError: matplotlib is missing (checked before computing).
    """
    from .progress import progress

    plt = pyplot()
    known = {} if known is None else known
    sig = np.asarray(sigmas, dtype=float)
    todo = sum((scheme.name, float(s)) not in known for scheme in schemes for s in sig)
    bar = progress(total=todo, desc="epsilon vs sigma", log_every=0.0, unit=" runs")
    try:
        return _draw_vs_sigma(plt, schemes, sig, epochs, delta, path, relation, sensitivity,
                              title, known, steps, bar)
    finally:
        bar.close()


def _draw_vs_sigma(plt: Any, schemes: Sequence[Scheme], sig: np.ndarray, epochs: float,
                   delta: float, path: str | Path, relation: Relation, sensitivity: float,
                   title: str, known: dict, steps: int | None, bar: Any) -> Path:
    """The figure of :func:`plot_epsilon_vs_sigma`."""
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    styles = [("--", "s"), ("-", "o"), (":", "^"), ("-.", "D"), ("-", "v")]
    for i, scheme in enumerate(schemes):
        ls, mk = styles[i % len(styles)]
        up, lo = [], []
        for s in sig:
            key = (scheme.name, float(s))
            if key not in known:
                run = Training(Gaussian(s, sensitivity), scheme, relation=relation,
                               **({"epochs": epochs} if steps is None else {"steps": steps}))
                try:
                    known[key] = run.epsilon(delta)
                except NotApplicable:
                    known[key] = None
                bar.update()
            g = known[key]
            if g is None:
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
    ax.set_title(f"{title or 'privacy of one run under each batch sampler'}\n(line: upper "
                 "bound; band: certified interval)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    return _save(fig, ax, path)



#: at most this many points on a curve
MAX_POINTS = 200


def curve_steps(run: Training, points: int = 10) -> list[int]:
    """Up to ``points`` step counts from the first to ``run.steps``, evenly spaced; whole
    epochs for epoch-structured schemes (shuffle, deterministic, balanced iteration)."""
    if not 1 <= points <= MAX_POINTS:
        raise ValueError(f"points must be in [1, {MAX_POINTS}], got {points}")
    assert run.steps is not None  # set by Training.__post_init__
    unit = int(round(run.scheme.steps_per_epoch)) if run.scheme.per_epoch else 1
    units = max(1, run.steps // unit)
    picks = np.unique(np.ceil(np.linspace(0, units, min(points, units) + 1)[1:]).astype(int))
    out = [int(k) * unit for k in picks]
    out[-1] = run.steps if not run.scheme.per_epoch else out[-1]
    return out


def epsilon_over_training(
    run: Training,
    delta: float,
    steps: Sequence[int],
    *,
    accountant: str = "best",
    callback: Callable[[int, Guarantee], None] | None = None,
) -> list[tuple[int, Guarantee]]:
    """``(steps, Guarantee on epsilon at delta)`` after each count in ``steps`` of ``run``:
    one ``run.epsilon_curve`` query.
    ``callback(steps, guarantee)`` is called after each point (e.g. a progress bar)."""
    steps = [int(k) for k in steps]
    curve = run.epsilon_curve(delta, steps=steps, accountant=accountant)
    out = [(k, _point(curve, i)) for i, k in enumerate(steps)]
    if callback is not None:
        for k, g in out:
            callback(k, g)
    return out


def _point(curve: Guarantee, i: int) -> Guarantee:
    """The ``i``-th point of a Guarantee whose bounds hold arrays."""
    def one(b: Bound | None) -> Bound | None:
        return None if b is None else Bound(np.asarray(b.value).ravel()[i], b.kind, b.source)

    return Guarantee(one(curve.upper), one(curve.lower), curve.declined)


def plot_epsilon_curve(
    points: Sequence[tuple[int, Guarantee]], path: str | Path, title: str
) -> Path:
    """Epsilon over training: the upper bound as a line, the certified interval shaded;
    ``title`` states the run's settings."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    ks = np.array([k for k, _ in points], dtype=float)
    up = np.array([np.nan if g.upper is None else float(g.upper.value) for _, g in points])
    lo = np.array([np.nan if g.lower is None else float(g.lower.value) for _, g in points])
    if np.isfinite(up).any():
        ax.plot(ks, up, "-o", ms=3, label="upper bound (report this)")
    ok = np.isfinite(up) & np.isfinite(lo)
    if ok.any():
        ax.fill_between(ks[ok], lo[ok], up[ok], alpha=0.25, label="certified interval")
    if np.isfinite(lo).any():
        ax.plot(ks, lo, ":", label="lower bound")
    ax.set_xlabel("training steps")
    ax.set_ylabel("epsilon")
    ax.set_title("\n".join(_wrap(title, 80)), fontsize=8)
    ax.grid(True, alpha=0.3)
    return _save(fig, ax, path)


def plot_tradeoff(curve: Tradeoff, path: str | Path, title: str, mu: float | None = None,
                  audits: Sequence[AuditCheck] = ()) -> Path:
    """Draw the certified TPR band (1 - upper / lower envelopes on beta, either order) against
    the FPR, the symmetrised f-DP guarantee, the Gaussian-DP curve ``1 - G_mu`` (if ``mu``)
    and each audit's confidence corner (FPR upper bound, TPR lower bound; red if it violates
    the certified curve).

    Args:
        curve: a :class:`Tradeoff` (e.g. ``run.tradeoff(np.logspace(-6, 0, 400))``).
        path: output file (png, pdf, svg).
        title: the plot title.
        mu: a GDP mu to draw as reference, or None.
        audits: results of :func:`privamp.audit_check` to mark.

    Returns:
        The path written.

    Raises:
        ValueError: matplotlib is missing.
    """
    plt = pyplot()
    a = np.asarray(curve.alphas, dtype=float).ravel()
    keep = a > 0
    a = a[keep]
    t_up = 1 - np.asarray(curve.either.lower.value, dtype=float).ravel()[keep]
    t_lo = 1 - np.asarray(curve.either.upper.value, dtype=float).ravel()[keep]
    t_sym = 1 - np.asarray(curve.symmetric.lower.value, dtype=float).ravel()[keep]
    fig, ax = plt.subplots(figsize=(6.0, 4.5))
    ax.fill_between(a, t_lo, t_up, color="tab:blue", alpha=0.3,
                    label="certified TPR (lower: realised attack, upper: guarantee)")
    ax.plot(a, t_up, color="tab:blue", lw=1.2)
    ax.plot(a, t_sym, color="tab:blue", lw=0.8, ls=":", label="symmetrised f-DP guarantee")
    if mu is not None:
        ax.plot(a, 1 - gaussian_beta(mu, a), color="tab:gray", ls="--",
                label=f"Gaussian DP, mu = {mu:.3g}")
    ax.plot(a, a, color="black", lw=0.6, ls="-", label="random guess")
    for chk in audits:
        ax.plot([chk.fpr_upper], [max(chk.tpr_lower, a[0])], marker="o", ms=7,
                color="tab:green" if chk.consistent else "tab:red", ls="none",
                label="audit (FPR upper, TPR lower)" if chk.consistent else
                "audit VIOLATES the accounting")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(a[0], 1.0)
    ax.set_ylim(max(a[0], 1e-6), 1.05)
    ax.set_xlabel("false-positive rate (type I error alpha)")
    ax.set_ylabel("true-positive rate (1 - beta)")
    ax.set_title("\n".join(_wrap(title, 80)), fontsize=8)
    ax.grid(True, which="both", alpha=0.2)
    return _save(fig, ax, path)


def _save(fig: Any, ax: Any, path: str | Path) -> Path:
    """Legend, tight layout, write ``path`` at 150 dpi, close the figure."""
    ax.legend()
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=150)
    pyplot().close(fig)
    return path


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]
