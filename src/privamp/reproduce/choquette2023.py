"""Amplified BandMF (Choquette-Choo et al. 2023, "(Amplified) Banded Matrix Factorization",
arXiv 2306.08153): **jax_privacy's own accountant value**, reproduced.

No printed number of the paper is available offline, so what is reproduced here is the number
jax_privacy computes for the paper's mechanism: dp-accounting's PLD accountant on
``jax_privacy.experimental.accounting.amplified_bandmf_event`` (the b-min-sep reduction to
Poisson DP-SGD over ceil(T / b) rounds), and on ``truncated_amplified_bandmf_event`` for
truncated batches.  privamp computes the same runs from the mechanism itself
(``Training(MatrixMechanism.banded(c, sigma), CyclicPoisson(p, b, partition), steps=T)``,
accountant ``"amplified-bandmf"``) and gives a certified interval:

* public partition (``"fixed"``, add/remove): two-sided; jax_privacy's value must lie in it;
* jax_privacy's default (``EQUAL_SPLIT``, zero-out): the same upper bound, and the sum
  statistic's realised lower bound (the example's group is secret);
* truncated batches (``EQUAL_SPLIT``, dataset of n, cap B): privamp's truncated Poisson pair
  over one group of n // b; jax_privacy's value uses dp-accounting's truncated Poisson PLD
  (a different one-step pair, docs/truncated_poisson.md): the two upper bounds differ.

Setting (jax_privacy's conventions): Toeplitz coefficients (1, 0.5, 0.3, 0.2), noise
multiplier 1 for the column-normalised strategy, sampling probability 0.2 within a group,
delta 1e-5; epsilon against the number of steps.  ``FIGURES["1"]`` writes a PNG and a CSV.
When jax_privacy or dp-accounting is not installed, the peer column says so.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..accounting.training import Training
from ..errors import NotApplicable
from ..mechanisms.matrix import MatrixMechanism
from ..plotting import pyplot
from ..sampling.cyclic import CyclicPoisson
from ..sampling.relations import AddRemove, ZeroOut

__all__ = ["FIGURES", "table", "jax_privacy_epsilon", "privamp_interval"]

PAPER = "Choquette-Choo et al. 2023 (amplified BandMF), jax_privacy's accountant reproduced"

COEF = (1.0, 0.5, 0.3, 0.2)
NOISE_MULTIPLIER = 1.0
RATE = 0.2
DELTA = 1e-5
#: dataset size and batch cap of the truncated rows
DATASET, CAP = 400, 25


def jax_privacy_epsilon(steps: int, relation: str, truncated: bool = False) -> float | None:
    """jax_privacy's epsilon: dp-accounting's PLD accountant on jax_privacy's
    ``amplified_bandmf_event`` (or ``truncated_amplified_bandmf_event``).

    Args:
        steps: the number of iterations T.
        relation: ``"ADD_OR_REMOVE_ONE"`` or ``"REPLACE_SPECIAL"``.
        truncated: the truncated event (dataset :data:`DATASET`, cap :data:`CAP`).

    Returns:
        The peer epsilon, or None when jax_privacy or dp-accounting is not installed.
    """
    try:
        import dp_accounting as dpa
        from jax_privacy.experimental import accounting as jpa
    except ImportError:
        return None
    bands = len(COEF)
    if truncated:
        event = jpa.truncated_amplified_bandmf_event(
            noise_multiplier=NOISE_MULTIPLIER, iterations=steps, num_bands=bands,
            sampling_prob=RATE, largest_group_size=DATASET // bands, truncated_batch_size=CAP)
    else:
        event = jpa.amplified_bandmf_event(noise_multiplier=NOISE_MULTIPLIER,
                                           iterations=steps, num_bands=bands,
                                           sampling_prob=RATE)
    acc = dpa.pld.PLDAccountant(getattr(dpa.NeighboringRelation, relation))
    acc.compose(event)
    return float(acc.get_epsilon(DELTA))


def privamp_interval(scheme: CyclicPoisson, steps: int, relation) -> tuple[float, float]:
    """privamp's certified ``(lower, upper)`` epsilon at :data:`DELTA` for the setting's
    strategy under ``scheme`` (NaN where a side is missing or the run is refused).

    Args:
        scheme: the cyclic Poisson sampler.
        steps: T.
        relation: the neighbouring relation.

    Returns:
        ``(lower, upper)``.
    """
    mech = MatrixMechanism.banded(list(COEF), sigma=NOISE_MULTIPLIER * math.hypot(*COEF))
    try:
        g = Training(mech, scheme, steps=steps, relation=relation).epsilon(
            DELTA, accountant="amplified-bandmf")
    except NotApplicable:
        return math.nan, math.nan
    lo = math.nan if g.lower is None else float(g.lower)
    up = math.nan if g.upper is None else float(g.upper)
    return lo, up


def table(fast: bool = False) -> list[dict]:
    """One row per number of steps: jax_privacy's epsilon and privamp's intervals.

    Args:
        fast: three settings only.

    Returns:
        Rows with keys ``steps``, ``jax_privacy_add_remove``, ``fixed_lower``,
        ``fixed_upper``, ``jax_privacy_zero_out``, ``equal_split_lower``,
        ``equal_split_upper``, ``jax_privacy_truncated``, ``truncated_upper``.
    """
    steps_list = (20, 100, 400) if fast else (20, 50, 100, 200, 400, 1000)
    rows = []
    k = len(COEF)
    for T in steps_list:
        f_lo, f_up = privamp_interval(CyclicPoisson(RATE, k, "fixed"), T, AddRemove())
        e_lo, e_up = privamp_interval(CyclicPoisson(RATE, k, "equal-split"), T, ZeroOut())
        capped = CyclicPoisson(RATE, k, "equal-split", CAP, DATASET)
        _, t_up = privamp_interval(capped, T, ZeroOut())
        rows.append({
            "steps": T,
            "jax_privacy_add_remove": jax_privacy_epsilon(T, "ADD_OR_REMOVE_ONE"),
            "fixed_lower": f_lo, "fixed_upper": f_up,
            "jax_privacy_zero_out": jax_privacy_epsilon(T, "REPLACE_SPECIAL"),
            "equal_split_lower": e_lo, "equal_split_upper": e_up,
            "jax_privacy_truncated": jax_privacy_epsilon(T, "REPLACE_SPECIAL", True),
            "truncated_upper": t_up,
        })
    return rows


def _fmt(v) -> str:
    if v is None:
        return "not installed"
    return "-" if isinstance(v, float) and math.isnan(v) else f"{v:.6g}"


def figure1(out_dir: Path, fast: bool) -> list[Path]:
    """Epsilon at delta 1e-5 against the steps: jax_privacy's value and privamp's intervals
    (PNG + CSV)."""
    rows = table(fast)
    path = out_dir / "choquette2023_fig1.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(list(rows[0]))
        for r in rows:
            w.writerow([_fmt(v) if k != "steps" else v for k, v in r.items()])
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.6, 4.4))
    T = np.array([r["steps"] for r in rows], dtype=float)

    def col(key: str) -> np.ndarray:
        return np.array([math.nan if r[key] is None else r[key] for r in rows], dtype=float)

    ax.fill_between(T, col("fixed_lower"), col("fixed_upper"), alpha=0.3, color="C0",
                    label="privamp, public partition [lower, upper]")
    ax.plot(T, col("equal_split_lower"), "--", color="C0",
            label="privamp lower, random partition (sum statistic)")
    ax.plot(T, col("truncated_upper"), "-", color="C2", label=f"privamp upper, cap {CAP}")
    ax.plot(T, col("jax_privacy_add_remove"), "o", color="C1",
            label="jax_privacy (dp-accounting on amplified_bandmf_event)")
    ax.plot(T, col("jax_privacy_truncated"), "s", color="C3",
            label="jax_privacy, truncated event")
    ax.set_xscale("log")
    ax.set_xlabel("steps T")
    ax.set_ylabel(f"epsilon at delta = {DELTA:g}")
    ax.set_title(f"{PAPER}\nbands {len(COEF)}, noise multiplier {NOISE_MULTIPLIER}, "
                 f"rate {RATE}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    png = out_dir / "choquette2023_fig1.png"
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return [png, path]


FIGURES: dict[str, Callable[[Path, bool], list[Path]]] = {"1": figure1}
