"""Matrix mechanisms (BandMF, DP-FTRL) under shuffled and fixed-size batches, unamplified.

The run: ``Training(MatrixMechanism(C, sigma, clip), S, steps=T)`` with ``S`` a
:class:`~privamp.Shuffle` (a fresh permutation every epoch, or one kept for the whole run) or
:class:`~privamp.WithoutReplacement` (a fresh batch of distinct examples each step).  These
samplers' batch layouts depend on the dataset's size, so they are analysed under zero-out
(the default, as for Shuffle) or substitution neighbours; add/remove is refused.

*Theorem (unamplified matrix mechanism; Denisov et al. 2022, arXiv 2202.08312, Thm 2.1, with
joint convexity over the participation pattern).*  Let ``Pi`` be the set of participation
patterns the sampler can give one example (the steps it enters) and
``Delta = max_{pi in Pi} sqrt(sum_{s,t in pi} |(C^T C)_{st}|)`` (in units of ``clip``).  Then
the run is ``(epsilon, delta)``-DP whenever the Gaussian mechanism at shift
``d Delta / sigma`` is (``d`` = 1 for zero-out, 2 for substitution).

*Proof.*  The pattern pi of the differing example is drawn by the sampler independently of
the data (zero-out / substitution: the dataset's size is fixed, so the permutation or the
batches are too).  Conditionally on it the two runs differ only in the rows of X in pi, by
vectors of norm <= ``d clip`` chosen adaptively; Denisov et al.'s Thm 2.1 (the adaptive
matrix mechanism is no worse than the non-adaptive one with the same sensitivity) bounds the
conditional pair by the Gaussian at ``d clip ||C x_pi|| <= d clip Delta_pi`` (Cauchy-Schwarz
over the gradients: ``||sum_t C e_t g_t||^2 <= sum_{s,t} |G_st| ||g_s|| ||g_t||``).  Both runs
share the pattern's law, and the hockey-stick divergence is jointly convex, so the mixture
over pi is bounded by the worst pattern's Gaussian.  QED.

The patterns:

* fresh :class:`~privamp.Shuffle` (E steps per epoch): one step per epoch at any position (or
  none, when ``drop_last`` leaves the example out, or in a partial last epoch).  Adding a step
  to a pattern only adds non-negative terms, so the worst patterns have one step in every
  epoch; for a b-banded C with ``E >= b`` only adjacent epochs' steps interact, and
  :mod:`privamp.theorems.matrix_bins`'s dynamic programme for fresh balls-in-bins (the same
  patterns, one of E steps per epoch) finds the maximum (asked through its registered
  accountant).  With ``E < b`` a cheaper bound holds:
  ``sum_{s in pi} sum_{t in pi} |G_st| <= sum_{e} max_{s in e} sum_{e'} max_{t in e'} |G_st|``
  (each step's row maximised epoch by epoch);
* persistent :class:`~privamp.Shuffle`: the example's position j is kept, pattern
  ``{j, j + E, ...}``: the largest over the E positions;
* :class:`~privamp.WithoutReplacement`: any subset of the steps; the whole run is the worst.

Upper bound: the smaller of this Gaussian and, under zero-out, noise dominance (DP-SGD at
``sigma / ||C||_2`` under the same sampler: :func:`privamp.theorems.matrix_bins.dominating_run`,
whose shuffled-batch answers are Chua et al. 2024's).  Lower bound: whitening (DP-SGD at
``sigma / sigma_min(C)``, realised: :func:`~privamp.theorems.matrix_bins.dominated_run`).
When the pattern is forced (one batch holding the whole dataset: every example takes part
in every step) the aligned gradients realise the Gaussian at ``||C 1||``, the lower side
(equal to the upper one up to the rounding of the Gram sums when the Gram matrix is
entrywise non-negative on the pattern; two-sided, not "exact", for that rounding).
``C = c I`` is DP-SGD at ``sigma / |c|``, answered by the DP-SGD accountants on both sides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import NotApplicable
from ..mechanisms.matrix import MatrixMechanism
from ..numerics.arrays import shaped
from ..results import Bound
from ..sampling.relations import AddRemove, Relation, Substitution, ZeroOut
from ..sampling.schemes import BallsInBins, Scheme, Shuffle, WithoutReplacement
from .choquette2023 import GaussianShiftAnalysis
from .chua2024.deterministic import gauss_delta, gauss_epsilon
from .matrix_bins import MatrixBinsAnalysis, dominated_run, dominating_run
from .registry import ACCOUNTANTS, BoundPair, RunAnalysis, run_accountant

__all__ = [
    "SRC_BATCHES",
    "BatchesAnalysis",
    "worst_shift",
    "epoch_row_bound",
]

SRC_BATCHES = ("unamplified matrix mechanism under shuffled / fixed-size batches: the Gaussian "
               "at the worst participation pattern's sensitivity (Denisov et al. 2022, arXiv "
               "2202.08312, Thm 2.1; joint convexity over the pattern)")

_NAME = "matrix-batches"
_U = 2.0 ** -53
_NOT_ZERO_OUT = ("shuffled / fixed-size batches depend on the dataset's size: the matrix "
                 "mechanism under them is analysed under zero-out or substitution neighbours; "
                 "use relation=pa.ZeroOut()")


def _slack(n: int) -> float:
    """``1 + gamma_n`` rounded up: the relative rounding of a sum of n non-negative terms and
    its square root."""
    return 1.0 + (n + 8) * _U / (1.0 - (n + 8) * _U)


@dataclass(frozen=True)
class _BinsRun:
    """A fresh balls-in-bins run with the same patterns as a fresh shuffle (the matrix-bins
    accountant reads its dynamic programme from it)."""

    mechanism: MatrixMechanism
    scheme: Scheme
    steps: int
    relation: Relation
    epochs: float | None = None


def epoch_row_bound(mech: MatrixMechanism, steps: int, per: int) -> float:
    """An upper bound on ``max_pi sum_{s,t in pi} |G_st|`` over the patterns with at most one
    step in each epoch of ``per`` steps (any b): ``sum_e max_{s in e} sum_{e'} max_{t in e'}
    |G_st|`` from the dense ``|C|^T |C|`` (which bounds ``|G|`` entrywise).

    Args:
        mech: the strategy.
        steps: T (at most 5000: a dense T x T Gram matrix).
        per: steps per epoch (>= 1).

    Returns:
        The bound, in units of ``clip^2``.

    Raises:
        NotApplicable: T over 5000.
    """
    if steps > 5000:
        raise NotApplicable(f"the epoch-row bound builds a dense T x T Gram matrix: T <= 5000, "
                            f"got {steps}")
    a = np.abs(mech.matrix(steps))
    g = a.T @ a
    epochs = -(-steps // per)
    pad = np.zeros((steps, epochs * per))
    pad[:, :steps] = g
    row = pad.reshape(steps, epochs, per).max(axis=2).sum(axis=1)  # per s: sum_e' max_t
    padr = np.zeros(epochs * per)
    padr[:steps] = row
    return float(padr.reshape(epochs, per).max(axis=1).sum()) * _slack(steps * 2)


def _fresh_worst(mech: MatrixMechanism, steps: int, per: int) -> float:
    """The unamplified shift (units of noise, d = 1) of a fresh shuffle of ``per`` steps per
    epoch (see the module docstring)."""
    if per >= mech.bands:
        run = _BinsRun(mech, BallsInBins(per), steps, ZeroOut())
        for acc in ACCOUNTANTS.get("matrix-bins", []):
            if acc.applies(run):  # type: ignore[arg-type]
                an: Any = acc.build(run)  # type: ignore[arg-type]
                shift = getattr(an, "unamplified", None)
                if shift is not None:
                    return float(shift)
    return math.sqrt(epoch_row_bound(mech, steps, per)) / mech.sigma * _slack(4)


def worst_shift(mech: MatrixMechanism, scheme: Scheme, steps: int) -> tuple[float, list[int]
                                                                           | None]:
    """The Gaussian shift ``Delta / sigma`` of the worst participation pattern (units of the
    noise, zero-out distance), certified from above, and that pattern when it is forced
    (every example takes part in it surely), else None.

    Args:
        mech: the strategy.
        scheme: a Shuffle (fresh or persistent) or WithoutReplacement.
        steps: T.

    Returns:
        ``(shift, forced pattern or None)``.

    Raises:
        ValueError: another scheme.
    """
    steps = mech.check_steps(steps)
    if isinstance(scheme, WithoutReplacement):
        every = list(range(steps))
        forced = every if scheme.batch_size == scheme.dataset_size else None
        return mech.sensitivity(every, steps) / (mech.clip * mech.sigma) * _slack(
            steps * mech.bands), forced
    if not isinstance(scheme, Shuffle):
        raise ValueError(f"scheme must be Shuffle or WithoutReplacement, got {scheme!r}")
    per = scheme.steps_per_epoch
    if per == 1:
        every = list(range(steps))
        forced = every if scheme.dataset_size == scheme.batch_size else None
        return mech.sensitivity(every, steps) / (mech.clip * mech.sigma) * _slack(
            steps * mech.bands), forced
    if scheme.persistent:
        worst = max(mech.sensitivity(range(j, steps, per), steps) for j in range(min(per, steps)))
        return worst / (mech.clip * mech.sigma) * _slack(steps * mech.bands), None
    return _fresh_worst(mech, steps, per), None


def _applies(run) -> bool:
    return (isinstance(run.mechanism, MatrixMechanism)
            and type(run.scheme) in (Shuffle, WithoutReplacement)
            and isinstance(run.relation, (ZeroOut, Substitution, AddRemove)))


@run_accountant(
    _NAME, applies=_applies,
    description="matrix mechanism (BandMF) under shuffled / fixed-size batches: the Gaussian "
    "at the worst participation pattern's sensitivity (unamplified), noise dominance, and "
    "whitening for the lower bound",
)
def _build(run) -> RunAnalysis:
    rel = run.relation
    if type(rel) is AddRemove:
        raise NotApplicable(_NOT_ZERO_OUT)
    if rel.group != 1:
        raise NotApplicable(f"the matrix-mechanism accountants cover one example (group 1), "
                            f"got group={rel.group}")
    mech, T = run.mechanism, run.steps
    d = 2.0 if isinstance(rel, Substitution) else 1.0
    shift, forced = worst_shift(mech, run.scheme, T)
    shift *= d
    if not (math.isfinite(shift) and shift > 0):
        raise NotApplicable(f"the run's Gaussian shift must be finite and > 0, got {shift}")
    if forced is not None:
        # realised by aligned gradients: ||C 1_pi|| = sqrt(sum G); the computed sum is within
        # gamma * sum |G| of it (the same rounding the upper side's slack covers), so the
        # lower side is taken below it (not "exact": the two sides straddle the true shift
        # by ~T * bands ulps; review3: at T = 1000 the "exact" epsilon was 1.4e-10 high)
        gam = _slack(T * mech.bands) - 1.0
        sq = (mech.aligned_norm(forced, T) / mech.clip) ** 2 - 2.0 * gam * (
            mech.sensitivity(forced, T) / mech.clip) ** 2
        realised = d * math.sqrt(max(sq, 0.0)) / mech.sigma * (1 - 16 * _U)
        return GaussianShiftAnalysis(shift, realised if realised > 0 else None,
                                     " (the pattern is forced: every step)")
    if type(rel) is not ZeroOut:
        return GaussianShiftAnalysis(shift, None)
    up = dominating_run(run)
    if mech.toeplitz and mech.bands == 1:  # C = c I: DP-SGD at sigma / |c|
        return MatrixBinsAnalysis(up, up)
    return BatchesAnalysis(shift, MatrixBinsAnalysis(up, dominated_run(run)))


class BatchesAnalysis(RunAnalysis):
    """The unamplified Gaussian at ``shift`` (upper) combined with another analysis (noise
    dominance above, whitening below): the smaller upper bound, the larger lower bound (capped
    by the upper one).

    Args:
        shift: the worst pattern's Gaussian shift.
        other: the dominance / whitening analysis (its NotApplicable leaves the Gaussian).
    """

    def __init__(self, shift: float, other: RunAnalysis) -> None:
        self.shift, self.other = shift, other

    def _ask(self, x: np.ndarray, which: str) -> BoundPair:
        f = gauss_epsilon if which == "epsilon" else gauss_delta
        up = Bound(shaped(f(np.ravel(x), self.shift), x), "upper",
                   f"{SRC_BATCHES}, Gaussian shift {self.shift:.6g}")
        try:
            o_up, o_lo = getattr(self.other, which)(x)
        except NotApplicable:
            return up, None
        if o_up is not None:
            mine = np.asarray(up.value, dtype=float)
            theirs = np.asarray(o_up.value, dtype=float)
            if np.all(theirs <= mine):
                up = o_up
            elif np.any(theirs < mine):
                up = Bound(shaped(np.minimum(mine, theirs), x), "upper",
                           f"{up.source}; {o_up.source}")
        if o_lo is None:
            return up, None
        lo = Bound(shaped(np.minimum(np.asarray(o_lo.value, dtype=float),
                                     np.asarray(up.value, dtype=float)), x), "lower",
                   o_lo.source)
        return up, lo

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._ask(delta, "epsilon")

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._ask(epsilon, "delta")

    def __repr__(self) -> str:
        return f"BatchesAnalysis(shift={self.shift:.6g}, {self.other!r})"
