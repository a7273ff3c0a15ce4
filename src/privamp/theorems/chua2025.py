"""Balls-and-bins batching with the bins kept for the whole run (Chua, Ghazi, Harrison,
Kamath, Kumar, Leeman, Manurangsi, Sinha, Zhang 2025, "Balls-and-bins sampling for DP-SGD",
arXiv:2412.16802; jax_privacy's ``BallsInBinsSampling``): each record is put once in one
uniformly random batch of the T batches of a cycle, independently of the other records, and
takes part in that batch of every cycle.

*Reduction.*  Over E cycles (steps = E T) the record takes part in the steps
S_t = {t, t + T, ..., t + (E - 1) T} of its bin t, uniform on the T bins and independent of
the other records' bins.

- Upper bound.  Condition on the other records' bins (independent of the record's, the same
  under both neighbours: joint convexity of the hockey-stick divergence over that mixture).
  The proof of Dong, Chen, Ozgur 2025, App. A.12 (re-centre each release on the other
  records' known sum, then the adversary's best per-step direction is fixed) applies to any
  law of the record's row of the sampling matrix independent of the others' rows; here the
  row is the indicator 1_{S_t}, so the run is dominated by
  P = (1/T) sum_t N(s 1_{S_t}, I_{ET}) vs Q = N(0, I_{ET}) (remove; (Q, P) for add).
  The vectors 1_{S_t} / sqrt(E) are orthonormal; rotating them onto e_1, ..., e_T turns the
  pair into (1/T) sum_t N(s sqrt(E) e_t, I_T) vs N(0, I_T) (times noise on the orthogonal
  complement, equal under both), the one-epoch pair of random allocation 1-of-T
  (Balanced Iteration with one participation) at noise sigma / sqrt(E).
- Lower bound.  The pair is realised (one record contributing its full gradient in a fixed
  direction at each of its steps, the others nothing), so the one-epoch Balanced Iteration
  lower bound at sigma / sqrt(E) is certified for this run.
- Groups: each member of a group has its own independent bin; the same argument gives the
  mixture over the members' bins of N(s sum_i 1_{S_(t_i)}) = N(s sum_t n_t 1_{S_t}) (n_t
  members in bin t), rotated to N(s sqrt(E) sum_t n_t e_t): the one-epoch group pair of the
  Balanced Iteration run at sigma / sqrt(E), which that run's accountants answer.
- One batch (T = 1): every record in every step, i.e. deterministic batches with one batch
  (exact Gaussian, :class:`~privamp.theorems.chua2024.accountants.DeterministicAnalysis`).
- Partial cycle (steps = E_f T + m, 0 < m < T): the bins t < m are released E_f + 1 times,
  the others E_f times; the run is dominated by the run of ceil(steps / T) cycles (more
  releases: the extra ones are a post-processing away) and dominates the run of E_f cycles
  (dropping the last m steps is a post-processing): upper bound from ceil, lower from floor.

Both sides are the answers of the registered accountants (Balanced Iteration's PLD, RDP, ...)
for the run ``Training(Gaussian(sigma / sqrt(E), sensitivity), BalancedIteration(T, 1),
steps=T)`` (:func:`equivalent_run`; combined as ``accountant="best"`` does: smallest upper,
largest lower).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..errors import NotApplicable
from ..mechanisms.gaussian import Gaussian
from ..numerics.arrays import shaped
from ..pld.grid import PLD
from ..pld.two_sided import TwoSidedPLD
from ..results import Bound
from ..sampling.relations import AddRemove, Relation, ZeroOut
from ..sampling.schemes import BalancedIteration, PersistentBallsInBins
from .chua2024.accountants import DeterministicAnalysis
from .chua2024.deterministic import SRC_DET, gauss_delta, gauss_epsilon, group_epoch_square
from .dong2025.bis_pld import bis_epoch_two_sided, lattice_step
from .registry import ACCOUNTANTS, BoundPair, RunAnalysis, run_accountant

__all__ = [
    "SRC_PERSISTENT_BINS",
    "PersistentBinsAnalysis",
    "EquivalentRun",
    "SRC_SUM_LOWER",
    "equivalent_run",
    "sum_statistic_lower",
]


SRC_PERSISTENT_BINS = (
    "persistent balls-in-bins (Chua et al. 2025, arXiv:2412.16802) over E cycles = random "
    "allocation 1-of-T at noise sigma/sqrt(E) (Dong et al. 2025, App. A.12 pair, rotated)"
)


_BIS_STEP = 1e-3  # the grid step of the Balanced Iteration PLD accountant
_NAME = "persistent-bins"


@dataclass(frozen=True)
class EquivalentRun:
    """The run ``Training(mechanism, scheme, steps=steps, relation=relation)`` describes, as
    the registered accountants read it (the theorems layer sits below
    :class:`~privamp.Training`, so it cannot build one)."""

    mechanism: Gaussian
    scheme: BalancedIteration
    steps: int
    relation: Relation
    epochs: float | None = None


def equivalent_run(run, cycles: int) -> EquivalentRun:
    """The one-epoch Balanced Iteration run equivalent to ``cycles`` cycles of ``run``.

    Args:
        run: a Training with a PersistentBallsInBins scheme and a Gaussian mechanism.
        cycles: number of whole cycles (>= 1).

    Returns:
        The run of ``Training(Gaussian(sigma / sqrt(cycles), sensitivity),
        BalancedIteration(T, 1), steps=T, relation=run.relation)``.
    """
    m = run.mechanism
    T = run.scheme.batches
    return EquivalentRun(Gaussian(m.sigma / math.sqrt(cycles), m.sensitivity),
                         BalancedIteration(T, 1), T, run.relation)


class _Answers:
    """Every registered accountant that applies to an equivalent run (built once): bounds
    combined like ``Training(...).epsilon(accountant="best")``, the smallest upper and the
    largest lower bound at each point."""

    def __init__(self, run: EquivalentRun) -> None:
        self.analyses: list[RunAnalysis] = []
        self.refusals: list[NotApplicable] = []
        for accs in ACCOUNTANTS.values():
            for acc in accs:
                # (an EquivalentRun stands in for the Training it describes)
                if acc.name != _NAME and acc.applies(cast(Any, run)):
                    try:
                        self.analyses.append(acc.build(cast(Any, run)))
                    except NotApplicable as exc:
                        self.refusals.append(exc)
        if not self.analyses:
            raise self.refusals[0] if self.refusals else NotApplicable(
                f"no accountant handles the equivalent Balanced Iteration run {run}")

    def ask(self, x: np.ndarray, which: str) -> tuple[list[Bound], list[Bound]]:
        ups, los = [], []
        errors = []
        for an in self.analyses:
            try:
                up, lo = getattr(an, which)(x)
            except NotApplicable as exc:
                errors.append(exc)
                continue
            ups += [up] if up is not None else []
            los += [lo] if lo is not None else []
        if not ups and not los and errors:
            raise errors[0]
        return ups, los


def _best(bounds: list[Bound], upper: bool) -> tuple[np.ndarray, str] | None:
    """Elementwise smallest (upper) or largest (lower) value and the winners' sources."""
    if not bounds:
        return None
    vals = np.array([np.ravel(np.asarray(b.value, dtype=float)) for b in bounds])
    idx = np.argmin(vals, axis=0) if upper else np.argmax(vals, axis=0)
    best = vals[idx, np.arange(vals.shape[1])]
    return best, "; ".join(dict.fromkeys(bounds[i].source for i in np.unique(idx)))


class PersistentBinsAnalysis(RunAnalysis):
    """Upper bound from the run of ``upper`` cycles, lower bound from ``lower`` cycles (None:
    no lower bound), each answered by the Balanced Iteration accountants ("best")."""

    def __init__(self, up_run: EquivalentRun, lo_run: EquivalentRun | None,
                 partial: bool, s_trivial: float | None = None,
                 s_sum: float | None = None) -> None:
        self.up_run, self.lo_run, self.partial = up_run, lo_run, partial
        # lower bound where the lattice gives none: the sum of all outputs of the whole cycles
        # (a post-processing of the realised pair) is Gaussian with shift s_sum
        self.s_sum = s_sum
        # each record takes part in one step per cycle: the Gaussian at the whole run's shift
        # is always an upper bound (deterministic batches, Chua et al. 2024, Prop 3.1)
        self.s_trivial = s_trivial
        self._up = _Answers(up_run)
        self._lo = self._up if lo_run is up_run else (
            None if lo_run is None else _Answers(lo_run))

    def grid_step(self) -> float:
        """The grid step this run would pick by itself (the Balanced Iteration PLD's)."""
        return _BIS_STEP

    def pld(self, h: float | None = None) -> TwoSidedPLD:
        """The whole run's PLD, directions [remove, add]: pessimistic the one-epoch Balanced
        Iteration PLD at sigma / sqrt(ceil(steps / T)), optimistic the one at
        sigma / sqrt(floor(steps / T)) (realised pair; zero when there is no whole cycle).

        Raises:
            NotApplicable: a group of several records (the one-record PLD only), or a lattice
                too large for this sigma and T.
        """
        h = _BIS_STEP if h is None else h
        if self.up_run.relation.group != 1:
            raise NotApplicable("the persistent balls-in-bins PLD covers one record (group 1), "
                                f"got group={self.up_run.relation.group}")

        def sides(run):
            m = run.mechanism
            sig, T = m.sigma / m.sensitivity, run.scheme.steps
            return bis_epoch_two_sided(sig, T, h, lattice_step(sig, T))
        up = sides(self.up_run)
        lo = None if self.lo_run is None else sides(self.lo_run)
        dirs = []
        for key in ("remove", "add"):
            opt = None if lo is None else lo[key + "_opt"]
            dirs.append((up[key], PLD(h, 0, np.zeros(1), 0.0, "optimistic") if opt is None
                         else opt))
        return TwoSidedPLD(dirs)

    def _ask(self, x: np.ndarray, which: str) -> BoundPair:
        tag = "; partial cycle: upper from ceil(steps/T) cycles, lower from floor" \
            if self.partial else ""
        ups, los = self._up.ask(x, which)
        if self.s_trivial is not None:
            f = gauss_epsilon if which == "epsilon" else gauss_delta
            ups.append(Bound(shaped(f(np.ravel(x), self.s_trivial), x), "upper",
                             SRC_DET + " with one release per cycle (every record's bin "
                             "fixed: deterministic batches over E cycles)"))
        if self._lo is not self._up:
            los = [] if self._lo is None else self._lo.ask(x, which)[1]
        if not los and self.s_sum is not None:
            los = [Bound(shaped(sum_statistic_lower(np.ravel(x), self.s_sum, which), x),
                         "lower", SRC_SUM_LOWER)]
        pick_up, pick_lo = _best(ups, True), _best(los, False)
        up = lo = None
        if pick_up is not None:
            up = Bound(shaped(pick_up[0], x), "upper",
                       f"{SRC_PERSISTENT_BINS}{tag}; {pick_up[1]}")
        if pick_lo is not None:
            v = pick_lo[0] if pick_up is None else np.minimum(pick_lo[0], pick_up[0])
            lo = Bound(shaped(v, x), "lower", f"{SRC_PERSISTENT_BINS}{tag}; {pick_lo[1]}")
        return up, lo

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._ask(delta, "epsilon")

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._ask(epsilon, "delta")


def _applies(run) -> bool:
    return (
        type(run.scheme) is PersistentBallsInBins
        and isinstance(run.mechanism, Gaussian)
        and isinstance(run.relation, (AddRemove, ZeroOut))
    )


@run_accountant(
    _NAME,
    applies=_applies,
    description="persistent balls-in-bins, Gaussian noise: E cycles as one epoch of random "
    "allocation at sigma/sqrt(E) (Chua et al. 2025; Dong et al. 2025 accountants)",
    capabilities=("pld", "grid_step"),
)
def _build(run) -> RunAnalysis:
    T = run.scheme.batches
    E_f, m = divmod(run.steps, T)
    E_up = E_f + (m > 0)
    if T == 1:  # one batch: every record in every step (m = 0 here)
        mech = run.mechanism
        sq = group_epoch_square(run.relation.group, run.relation.group)
        s_all = math.sqrt(E_f * sq) * mech.sensitivity / mech.sigma
        return DeterministicAnalysis(s_all, s_all, "; persistent balls-in-bins with one batch")
    up_run = equivalent_run(run, E_up)
    lo_run = up_run if m == 0 else (equivalent_run(run, E_f) if E_f else None)
    mech, g = run.mechanism, run.relation.group
    s_trivial = math.sqrt(E_up) * g * mech.sensitivity / mech.sigma  # g members in one bin
    s_sum = g * math.sqrt(E_f / T) * mech.sensitivity / mech.sigma if E_f else None
    return PersistentBinsAnalysis(up_run, lo_run, m > 0, s_trivial, s_sum)


SRC_SUM_LOWER = (
    "sum statistic of persistent balls-in-bins: the sum of every output of the E whole "
    "cycles (post-processing of a realised pair: g records each adding the clipping norm to "
    "its bin) is N(g E C, E T sigma^2) vs N(0, E T sigma^2), a Gaussian pair of shift "
    "g C sqrt(E / T) / sigma (Chua et al. 2024, Prop 3.1 profile), rounded down")


def sum_statistic_lower(x: np.ndarray, s: float, which: str) -> np.ndarray:
    """Lower bounds on epsilon (``which="epsilon"``, x = deltas) or delta (x = epsilons) of
    the Gaussian pair of shift ``s``, from below: the shift shrunk by a relative 1e-12 (the
    profile grows with it); delta times 1 - 1e-9; epsilon: the upper epsilon of
    :func:`gauss_epsilon` lowered by a relative 1e-6 and kept only where the profile there
    still exceeds delta (so the true epsilon is above it), else 0.

    Args:
        x: deltas in (0, 1) or epsilons >= 0 (array).
        s: shift in noise units (> 0).
        which: "epsilon" or "delta".

    Returns:
        Lower bounds, elementwise.
    """
    s_lo = s * (1.0 - 1e-12)
    if which == "delta":
        return gauss_delta(x, s_lo, "lower") * (1.0 - 1e-9)
    up = gauss_epsilon(x, s_lo)
    cand = np.maximum(up * (1.0 - 1e-6) - 1e-12, 0.0)
    ok = gauss_delta(cand, s_lo, "lower") * (1.0 - 1e-9) > x
    return np.where(ok, cand, 0.0)
