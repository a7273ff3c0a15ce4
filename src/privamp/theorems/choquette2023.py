"""Amplified banded matrix factorisation (Choquette-Choo, Ganesh, McKenna, McMahan, Rush,
Thakurta, Xu 2023, "(Amplified) Banded Matrix Factorization: A unified approach to private
training", arXiv 2306.08153, Sec. 4) and the unamplified matrix mechanism.

Notation: :class:`~privamp.MatrixMechanism` releases ``C x + sigma clip z`` (C lower-triangular
T x T with b bands, x the per-step sums of gradients clipped to ``clip``); ``n_t = ||C e_t||``
its column norms; ``d`` the distance of two neighbouring examples' gradients in units of
``clip`` (1 under add/remove and zero-out, 2 under substitution).

*Theorem (b-min-sep reduction; Choquette-Choo et al. 2023; jax_privacy's
``amplified_bandmf_event``).*  Under
:class:`~privamp.CyclicPoisson` ``(p, k)`` with ``k >= b``, one example's run is dominated by
Poisson-subsampled DP-SGD at rate p over ``R = ceil(T / k)`` rounds with Gaussian shift
``d max_t n_t / sigma`` (noise multiplier ``sigma / max_t n_t``, jax_privacy's
``amplified_bandmf_event`` with the strategy column-normalised).

*Proof.*  Let the example x be in group j; it can only enter the steps
``S_j = {j, j + k, ...}`` (at most R of them).  Column t of C is supported on the rows
``B_t = {t, ..., t + b - 1}``; for s < t in S_j, t - s >= k >= b, so the blocks B_t (t in
S_j) are disjoint and no row outside them involves x.  Process the rows in order.  Row i's
mean is ``sum_{s <= i} C[i, s] x_s``; the other examples' gradients x_s are chosen
adaptively from the rows before (the same function under both neighbours), and x's own
contribution to row i is ``1[x in batch t] C[i, t] g_t`` with t the step of S_j whose block
holds i (none outside the blocks).  Subtracting the others' part (a bijection of the output
given the past, the same under both datasets) leaves, for each block B_t, the pair
``I_t C[B_t, t] g_t + sigma clip z`` vs ``sigma clip z`` (I_t ~ Bernoulli(p), independent
across steps and of everything else): one Poisson-subsampled Gaussian step of shift at most
``d n_t / sigma`` (under substitution the Poisson substitution pair of distance d n_t), chosen
adaptively; rows outside the blocks are identical under both.  Adaptive composition gives
|S_j| <= R such steps, each dominated by the one of shift ``d max n_t / sigma``.  The
partition (random or not) is independent of the data: the run's output is a mixture over
x's group with the same weights under both neighbours, and by joint convexity of the
hockey-stick divergence the worst group bounds it.  QED.

*Lower bound (realised pair).*  When x's group is public (``partition="fixed"``, or
k = 1) take x in group 0 (R steps), gradients ``clip u`` for a fixed unit vector u and the
other examples' gradients 0: the queries are non-adaptive and the run is exactly the R-fold
product of Poisson-subsampled Gaussians of shifts ``d n_t / sigma``, t in S_0; adding noise
(post-processing) lowers each to ``d min_{t in S_0} n_t / sigma``.  So Poisson DP-SGD at that
shift over R rounds is a certified lower bound, equal to the upper bound when the columns of
S_0 have the largest norm (a Toeplitz strategy with T a multiple of k: *exact*).  Under a
random partition x's group is a secret mixture; see the sum statistic below.  Under
substitution with ``p < 1`` the Poisson-substitution pair at ``2 n_t`` (privamp's
``(1-p) N(0) + p N(2 n_t)`` vs ``N(0)``) is *not* realised by gradients of norm <= clip (it
needs one record at 0 and the other at distance 2 clip; e.g. T = 1, p = 0.3, sigma = 1,
eps = 1: that pair's delta is 0.1043, the worst pair of clipped gradients, ``+clip u`` vs
``-clip u``, has 0.0192): the lower bound is the zero-out pair (the replacement's gradient
is 0) at ``n_t``, never exact.

*Lower bound under a random partition (any partition; realised pair).*  Take the other
examples' gradients 0 and the example's ``+clip u`` in every step (or ``(-1)^t clip u``),
T' = k floor(T/k), and the statistic ``w^T y[:T']`` with ``w ~= C[:T', :T']^-T 1`` (the
first T' outputs are the leading block's mechanism: C is lower-triangular).  Whatever the
example's group j, it takes part in exactly ``R' = T'/k`` of those steps, each with
probability q independently, so given the partition the statistic is
``N(sum_t I_t a_t, sigma^2 ||w||^2)`` with ``N = sum I_t ~ Bin(R', q)`` and
``a_t = (C^T w)_t >= a_lo > 0``; under the neighbour it is ``N(0, sigma^2 ||w||^2)``.  For
a threshold test ``{stat > c}``, ``P(stat > c) >= P(a_lo N + noise > c)`` pointwise for every
partition, hence for the mixture over partitions; the threshold test of the binomial pair
at ``a_lo`` (:func:`~privamp.theorems.poisson_groups.sum_statistic_delta`, its optimal test is
a threshold: the pair's likelihood ratio grows with the statistic) is a lower bound on the
run's delta.  For K examples the count is ``Bin(K R', q)`` (each member independently).
Valid when every example is used (``"equal-split"`` with ``dataset_size`` a multiple of k, or
unknown: the witness picks such a dataset), without truncation (it changes the inclusion
law).  Mechanism: :func:`partition_sum_lower` and :mod:`privamp.theorems.mmcc2024`'s
certified ``a_lo`` and ``||w||``.

*Truncated batches* (``truncated_batch_size = B``, ``"equal-split"`` groups of
``g = dataset_size // k``).  The proof above, block by block, with the block's one-step pair
replaced by :mod:`privamp.theorems.truncated_poisson`'s dominating pair for a truncated
Poisson step over g examples (the truncation of step t depends only on the sampling of the
example's group at step t, independent across steps; under zero-out the example and the
zero record hold the same slot, so the others are the g - 1 other members): the run is
dominated by truncated Poisson DP-SGD ``TruncatedPoisson(q, B, g)`` over R rounds at the
largest column norm (jax_privacy's ``truncated_amplified_bandmf_event`` has the same
parameters).  Random group sizes (``"independent"``), undescribed ones (``"fixed"``),
substitution and groups of several examples are refused.  For k < b, noise dominance with
the same truncated sampler.  No lower bound for k > 1 (the group is secret and truncation
rules out the sum statistic).

*Groups of K examples.*  (a) Noise dominance, valid for every placement of the members:
each step of DP-SGD at ``sigma / ||C||_2`` is a Poisson step whose query zeroes the members
outside the step's group, dominated by the K-group Poisson pair (privamp's group accountants,
Schuchardt et al. 2024), and only the steps of groups holding a member are non-trivial: at
most ``min(T, min(K, k) R)`` of them (given the partition; joint convexity over it).
(b) Group privacy by the chain of neighbours on the one-example bound
(:class:`~privamp.theorems.matrix_groups.GroupChainAnalysis`).  The upper side is the
smaller.  Lower (public partition, k >= b): the K members in group 0 with the same gradients,
each block a Poisson group step of shift ``n_t / sigma``: the K-group realised pair over R
rounds at the smallest column norm; any partition: the sum statistic above.

*Noise dominance (k < b).*  ``C x + sigma z`` is a post-processing of DP-SGD
``x + (sigma / ||C||_2) z'`` on the same batches (multiply by C, add independent noise of
covariance ``sigma^2 (I - C C^T / ||C||_2^2)``, drawn row by row: the adversary's extra
randomness); DP-SGD under cyclic Poisson is Poisson over R rounds.  Upper bound only.  The
reduction above does *not* hold for k < b: x's columns overlap.

*Unamplified (Gaussian at the strategy's sensitivity).*  When an example's participation
pattern pi is fixed by its position (deterministic batches: ``{t, t + E, ...}``; cyclic
Poisson with p = 1: its group's steps) the run is the Gaussian mechanism with shift
``d sens(pi) / (sigma clip)`` where ``sens`` is :meth:`~privamp.MatrixMechanism.sensitivity`
(Cauchy-Schwarz; the output shifts by ``sum_{t in pi} C e_t g_t``), maximised over the
patterns.  It is realised (exact) when the Gram matrix ``C^T C`` is entrywise >= 0 on the
worst pattern (aligned gradients); otherwise the larger of the aligned-gradient norm and the
orthogonal-gradient norm ``sqrt(sum n_t^2)`` (gradients in orthogonal directions) is a
certified lower bound.  For a random partition (p = 1, not ``"fixed"``): upper bound only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any, cast

import numpy as np

from ..errors import NotApplicable
from ..mechanisms.base import Mechanism
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.matrix import MatrixMechanism
from ..numerics.arrays import shaped
from ..pld.grid import zero_pld
from ..pld.two_sided import TwoSidedPLD
from ..results import Bound
from ..sampling.cyclic import CyclicPoisson
from ..sampling.relations import AddRemove, Relation, Substitution, ZeroOut
from ..sampling.schemes import Deterministic, Poisson, Scheme, TruncatedPoisson
from .chua2024.deterministic import GaussianRunAnalysis
from .matrix_groups import GroupChainAnalysis, partition_sum_lower, sum_lower_values
from .registry import ACCOUNTANTS, BoundPair, RunAnalysis, run_accountant

__all__ = [
    "SRC_AMPLIFIED",
    "SRC_DOMINANCE",
    "SRC_UNAMPLIFIED",
    "SRC_TRUNCATED",
    "SRC_GROUPS",
    "SRC_SUM_PARTITION",
    "PoissonRun",
    "amplified_runs",
    "partition_sum_lower",
    "DelegatedAnalysis",
    "GaussianShiftAnalysis",
    "unamplified_shifts",
]

SRC_AMPLIFIED = ("amplified BandMF: b-min-sep reduction to Poisson DP-SGD over ceil(T/k) "
                 "rounds at sigma / max column norm (Choquette-Choo et al. 2023, "
                 "arXiv 2306.08153; jax_privacy's amplified_bandmf_event)")
SRC_DOMINANCE = ("matrix mechanism by noise dominance: DP-SGD at sigma / ||C||_2 under the "
                 "same cyclic Poisson sampling, Poisson over ceil(T/k) rounds "
                 "(post-processing; cycle_length < bands)")
SRC_UNAMPLIFIED = ("matrix mechanism without amplification: the Gaussian mechanism at the "
                   "strategy's sensitivity over the participation pattern (Choquette-Choo "
                   "et al. 2023, arXiv 2306.08153, Sec. 2)")

SRC_TRUNCATED = ("; truncated batches: one group's steps are truncated Poisson over its "
                 "dataset_size // cycle_length examples (jax_privacy's "
                 "truncated_amplified_bandmf_event; the truncated Poisson dominating pair per "
                 "block of rows)")
SRC_GROUPS = ("; group of several examples: noise dominance (DP-SGD at sigma / ||C||_2), a "
              "Poisson group step at every step of a group holding a member, "
              "min(T, min(K, k) ceil(T/k)) rounds")

SRC_SUM_PARTITION = ("realised pair under any partition: other gradients 0, the {K} "
                     "example(s) +clip u (or (-1)^t clip u) in every step; the threshold test "
                     "on w^T y over the first k floor(T/k) steps, w = C^-T 1: "
                     "Binom({K} x {R}, q) counts whatever the groups (mmcc2024 sum "
                     "statistic; poisson_groups.sum_statistic_delta)")

_NAME = "amplified-bandmf"
_RELATIONS = (AddRemove, ZeroOut, Substitution)


@dataclass(frozen=True)
class PoissonRun:
    """The Poisson DP-SGD run ``Training(mechanism, Poisson(rate), steps, relation)``, as the
    registered accountants read it (the theorems layer sits below
    :class:`~privamp.Training`)."""

    mechanism: Mechanism
    scheme: Scheme
    steps: int
    relation: Relation
    epochs: float | None = None


def _distance(relation: Relation) -> float:
    return 2.0 if isinstance(relation, Substitution) else 1.0


def _check_run(run) -> tuple[CyclicPoisson, Relation]:
    scheme, rel = run.scheme, run.relation
    why = scheme.refusal(rel)
    if why is not None:
        raise NotApplicable(why)
    if rel.group != 1 and not isinstance(rel, _RELATIONS):
        raise NotApplicable(f"the matrix-mechanism accountants cover groups under add/remove, "
                            f"zero-out and substitution only, got {rel}")
    return scheme, rel


def _group(rel: Relation) -> int:
    return int(rel.group)


def _truncated(scheme: CyclicPoisson, rel: Relation) -> TruncatedPoisson | None:
    """The truncated Poisson sampler of one group's steps (None: no truncation)."""
    B = scheme.truncated_batch_size
    if B is None:
        return None
    if scheme.partition != "equal-split":
        raise NotApplicable(f"CyclicPoisson with truncated_batch_size and partition="
                            f"{scheme.partition!r}: an example's group size is random or not "
                            f"described (jax_privacy refuses INDEPENDENT with truncation); use "
                            f"partition='equal-split' with dataset_size")
    g = scheme.group_size
    if g is None:
        raise NotApplicable("CyclicPoisson with truncated_batch_size needs dataset_size (the "
                            "group size dataset_size // cycle_length sets the truncation "
                            "probability; jax_privacy's largest_group_size)")
    if g < 1:
        raise NotApplicable(f"dataset_size={scheme.dataset_size} < cycle_length="
                            f"{scheme.cycle_length}: the groups are empty")
    if isinstance(rel, Substitution):
        raise NotApplicable("truncated cyclic Poisson under substitution: the truncated "
                            "Poisson accountant covers add/remove and zero-out")
    if _group(rel) != 1:
        raise NotApplicable(f"truncated cyclic Poisson: one example only (group 1), got "
                            f"group={rel.group}")
    return TruncatedPoisson(scheme.rate, B, g)


def amplified_runs(run) -> tuple[PoissonRun, PoissonRun | None, str]:
    """The Poisson runs bounding a cyclic Poisson run above and below (see the module
    docstring), and the source of the upper one.

    Args:
        run: a Training with a :class:`~privamp.CyclicPoisson` scheme and a
            :class:`~privamp.MatrixMechanism` or a (one-release) mechanism.

    Returns:
        ``(upper, lower, source)``; ``lower`` is None when the example's group is secret or
        the bound is the noise-dominance one; it is ``upper`` itself when exact.  With
        truncation the runs are :class:`~privamp.TruncatedPoisson` over one group (of
        ``dataset_size // cycle_length`` examples); with a group of K > 1 examples the upper
        run is noise dominance over ``min(T, min(K, k) R)`` rounds.

    Raises:
        NotApplicable: truncation without ``"equal-split"`` groups and ``dataset_size``, or
            under substitution, or with a group; add/remove under ``"equal-split"`` groups.
    """
    scheme, rel = _check_run(run)
    trunc = _truncated(scheme, rel)
    rounds, mech = scheme.rounds(run.steps), run.mechanism
    sampler: Scheme = Poisson(scheme.rate) if trunc is None else trunc
    src = SRC_AMPLIFIED if trunc is None else SRC_AMPLIFIED + SRC_TRUNCATED
    K = _group(rel)
    if not isinstance(mech, MatrixMechanism):
        if K > 1 and scheme.cycle_length > 1:
            # the K examples may sit in different groups: a K-group step every step of a
            # group holding one of them (see groups in the module docstring)
            up = PoissonRun(mech, sampler, min(run.steps, min(K, scheme.cycle_length) * rounds),
                            rel)
            members = PoissonRun(mech, sampler, rounds, rel) if scheme.group_known else None
            return up, members, SRC_GROUPS
        one = PoissonRun(mech, sampler, rounds, rel)
        return one, (one if scheme.group_known else None), src
    d, T = _distance(rel), run.steps
    norms = mech.column_norms(T)
    low = float(norms[list(scheme.eligible_steps(T, 0))].min())
    low_run = None
    n_max = scheme.dataset_size
    if (scheme.group_known and (K == 1 or mech.bands <= scheme.cycle_length)
            and (n_max is None or K <= n_max)):  # review32: K members must exist
        # the realised pair: the K examples in group 0 with aligned gradients, others 0
        lrel = ZeroOut(group=K) if isinstance(rel, Substitution) and scheme.rate < 1 else rel
        dl = 1.0 if isinstance(lrel, ZeroOut) and isinstance(rel, Substitution) else d
        low_run = PoissonRun(Gaussian(mech.sigma, dl * low), sampler, rounds, lrel)
    if mech.bands > scheme.cycle_length or (K > 1 and scheme.cycle_length > 1):
        norm = mech.operator_norm_bound(T)
        n_up = rounds if K == 1 else min(T, min(K, scheme.cycle_length) * rounds)
        up = PoissonRun(Gaussian(mech.sigma, d * norm), sampler, n_up, rel)
        if mech.bands > scheme.cycle_length:
            return up, None, SRC_DOMINANCE
        return up, low_run, SRC_DOMINANCE + SRC_GROUPS
    up = PoissonRun(Gaussian(mech.sigma, d * float(norms.max())), sampler, rounds, rel)
    if low_run is None:
        return up, None, src
    if low == float(norms.max()) and low_run.relation is rel:
        return up, up, src
    return up, low_run, src


class _Answers:
    """Every registered accountant applying to a :class:`PoissonRun` (built once)."""

    def __init__(self, run: PoissonRun) -> None:
        self.analyses: list[RunAnalysis] = []
        refusals: list[NotApplicable] = []
        for accs in ACCOUNTANTS.values():
            for acc in accs:
                if acc.name != _NAME and acc.applies(cast(Any, run)):
                    try:
                        self.analyses.append(acc.build(cast(Any, run)))
                    except NotApplicable as exc:
                        refusals.append(exc)
        if not self.analyses:
            raise refusals[0] if refusals else NotApplicable(
                f"no accountant handles the equivalent Poisson run {run}")

    def ask(self, x: np.ndarray, which: str, upper: bool) -> tuple[np.ndarray, str] | None:
        found = []
        for an in self.analyses:
            try:
                pair = getattr(an, which)(x)
            except NotApplicable:
                continue
            b = pair[0 if upper else 1]
            if b is not None:
                found.append(b)
        if not found:
            return None
        vals = np.array([np.ravel(np.asarray(b.value, dtype=float)) for b in found])
        idx = np.argmin(vals, axis=0) if upper else np.argmax(vals, axis=0)
        best = vals[idx, np.arange(vals.shape[1])]
        return best, "; ".join(dict.fromkeys(found[i].source for i in np.unique(idx)))

    def pld_analysis(self) -> RunAnalysis:
        for an in self.analyses:
            if type(an).pld is not RunAnalysis.pld:
                return an
        raise NotApplicable("no PLD accountant handles the equivalent Poisson run")


class DelegatedAnalysis(RunAnalysis):
    """Bounds of a run from the Poisson runs bounding it (:func:`amplified_runs`): the upper
    side of ``up``'s accountants, the lower side of ``lo``'s (None: no lower bound)."""

    def __init__(self, up: PoissonRun, lo: PoissonRun | None, source: str,
                 sum_lower: tuple[int, int, float, float] | None = None) -> None:
        self.up_run, self.lo_run, self.source = up, lo, source
        #: the sum statistic's pair (:func:`partition_sum_lower`), a lower side for any
        #: partition
        self.sum_lower = sum_lower
        self._pld_up: Any = None
        self._up = _Answers(up)
        self._lo = self._up if lo is up else (None if lo is None else _Answers(lo))

    def _ask(self, x: np.ndarray, which: str) -> BoundPair:
        tag = f" (rounds={self.up_run.steps})"
        u = self._up.ask(x, which, True)
        lo_pick = None if self._lo is None else self._lo.ask(x, which, False)
        up = None if u is None else Bound(shaped(u[0], x), "upper",
                                          f"{self.source}{tag}; {u[1]}")
        lo = None
        if lo_pick is not None:
            v = lo_pick[0] if u is None else np.minimum(lo_pick[0], u[0])
            lo_tag = "" if self.lo_run is None else f" (rounds={self.lo_run.steps})"
            lo = Bound(shaped(v, x), "lower", f"{SRC_AMPLIFIED}{lo_tag}, realised pair; "
                       f"{lo_pick[1]}")
        if self.sum_lower is not None and (u is None or np.all(np.isfinite(u[0]))):
            sv = sum_lower_values(self.sum_lower, x, which)
            if u is not None:
                sv = np.minimum(sv, u[0])
            if lo is None or np.any(sv > np.ravel(np.asarray(lo.value, dtype=float))):
                prev = None if lo is None else np.ravel(np.asarray(lo.value, dtype=float))
                v = sv if prev is None else np.maximum(sv, prev)
                src = SRC_SUM_PARTITION.format(K=self.sum_lower[0], R=self.sum_lower[1])
                lo = Bound(shaped(v, x), "lower",
                           src if lo is None else f"{lo.source}; where larger: {src}")
        return up, lo

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._ask(delta, "epsilon")

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._ask(epsilon, "delta")

    def upper_delta(self, epsilon: np.ndarray) -> np.ndarray:
        """A certified upper bound on delta(epsilon), fast for repeated queries: the upper
        Poisson run's PLD (pessimistic sides, the larger direction), else the full query.

        Args:
            epsilon: the epsilons (array).

        Returns:
            The upper deltas, flattened (1 where there is none).
        """
        x = np.ravel(np.asarray(epsilon, dtype=float))
        if self._pld_up is None:
            try:
                an = self._up.pld_analysis()
                self._pld_up = an.pld(an.grid_step())
            except NotApplicable:
                self._pld_up = False
        if self._pld_up is False:
            u = self._up.ask(x, "delta", True)
            return np.ones_like(x) if u is None else np.minimum(u[0], 1.0)
        return np.minimum(np.ravel(np.asarray(self._pld_up.delta(x)[0], dtype=float)), 1.0)

    def grid_step(self) -> float:
        """The equivalent Poisson run's own grid step."""
        return self._up.pld_analysis().grid_step()

    def pld(self, h: float | None = None) -> TwoSidedPLD:
        """The whole run's PLD: pessimistic sides of the upper Poisson run's PLD, optimistic
        sides of the lower one's (zero PLDs when there is no lower bound).

        Raises:
            NotApplicable: no PLD accountant handles the equivalent Poisson run.
        """
        h = self.grid_step() if h is None else float(h)
        up = self._up.pld_analysis().pld(h)
        if self._lo is self._up:
            return up
        lo = None if self._lo is None else self._lo.pld_analysis().pld(h)
        dirs = []
        for i, (p, _) in enumerate(up.directions):
            o = zero_pld(p.h) if lo is None else lo.directions[min(i, len(lo.directions) - 1)][1]
            dirs.append((p, o))
        return TwoSidedPLD(dirs)


class GaussianShiftAnalysis(GaussianRunAnalysis):
    """The Gaussian mechanism at shift ``s_up`` bounds the run above; the one at ``s_lo``
    (None: no lower bound) is realised; equal: exact."""

    def __init__(self, s_up: float, s_lo: float | None, note: str = "") -> None:
        super().__init__(s_up, s_lo, f"{SRC_UNAMPLIFIED}, Gaussian shift {s_up:.6g}{note}",
                         "" if s_lo is None else
                         f"{SRC_UNAMPLIFIED}, realised shift {s_lo:.6g}{note}")
        self.note = note


def _patterns(run) -> tuple[list[list[int]], bool]:
    """The participation patterns of the run (one per batch position) and whether the
    example's position is public."""
    T, sch = run.steps, run.scheme
    if isinstance(sch, Deterministic):
        E = sch.steps_per_epoch
        return [list(range(t, T, E)) for t in range(min(E, T))], True
    return [list(sch.eligible_steps(T, j)) for j in range(min(sch.cycle_length, T))], \
        sch.group_known


def _capacity(run, position: int) -> int | None:
    """How many examples can share the participation pattern ``position`` (None: any)."""
    sch = run.scheme
    if not isinstance(sch, Deterministic):
        return None
    last_short = (not sch.drop_last and sch.remainder > 0
                  and position == sch.steps_per_epoch - 1)
    return sch.remainder if last_short else sch.batch_size


def unamplified_shifts(run) -> tuple[float, float | None]:
    """Gaussian shifts (upper, realised lower or None) of a matrix-mechanism run whose
    participation patterns are fixed by the example's position (see the module docstring).

    A group of K examples: the output shifts by ``sum_i sum_{t in pi_i} C e_t g_{i,t}``, of
    norm at most ``sum_i sens(pi_i) <= K max sens`` (triangle inequality): the upper shift is
    K times one example's.  The realised lower puts ``min(K, capacity)`` members with the same
    gradients on the worst pattern (the capacity of a batch position: its batch size under
    :class:`~privamp.Deterministic`; any number in a fixed group), the others' gradients 0;
    at most ``dataset_size`` members, and under truncation at most B (alone in their group;
    none when k = 1 and ``dataset_size > B``: every batch is cut, the pattern is random).

    Args:
        run: a Training with a MatrixMechanism under Deterministic or CyclicPoisson.

    Returns:
        ``(s_up, s_lo)`` in noise units.
    """
    mech, T = run.mechanism, run.steps
    d = _distance(run.relation)
    K = _group(run.relation)
    patterns, known = _patterns(run)
    sens = [mech.sensitivity(pi, T) for pi in patterns]
    worst = int(np.argmax(sens))
    scale = d / (mech.sigma * mech.clip)
    pi = patterns[worst]
    # float error of the Gram sums (|pi|^2 dot products of <= bands terms), the square
    # root and the scaling: a relative slack, up on the upper shift, down on the lower
    # (review: an unrounded "exact" shift sat ~T bands ulps below the truth)
    slack = (len(pi) ** 2 + mech.bands + 16) * 2.0 ** -52
    s_up = K * sens[worst] * scale * (1 + slack)
    if not known or (isinstance(run.scheme, CyclicPoisson) and run.scheme.rate < 1):
        return s_up, None
    cap = _capacity(run, worst)
    members = K if cap is None else min(K, cap)
    sch = run.scheme
    if isinstance(sch, CyclicPoisson):
        # review32: the members must exist (dataset_size) and their group's batches must not
        # be cut (truncation at rate 1 makes the pattern random: no realised fixed pattern)
        n, B = sch.dataset_size, sch.truncated_batch_size
        if n is not None:
            members = min(members, n)
        if B is not None:
            if sch.cycle_length == 1 and n is not None and n > B:
                return s_up, None
            members = min(members, B)  # the members alone in their group
    norms = mech.column_norms(T)[pi] * mech.clip
    aligned = mech.aligned_norm(pi, T)
    s_lo = members * max(aligned, float(np.sqrt(np.sum(norms ** 2)))) * scale * (1 - slack)
    return s_up, min(s_lo, s_up)


def _applies_cyclic(run) -> bool:
    return (isinstance(run.scheme, CyclicPoisson)
            and isinstance(run.mechanism, (MatrixMechanism, Mechanism))
            and isinstance(run.relation, _RELATIONS)
            and run.scheme.refusal(run.relation) is None)


@run_accountant(
    _NAME, applies=_applies_cyclic,
    description="cyclic Poisson (b-min-sep) with a banded matrix mechanism or one-release "
    "noise: Poisson over ceil(T/k) rounds at sigma / max column norm (Choquette-Choo et al. 2023); "
    "noise dominance at sigma / ||C||_2 when k < bands",
    capabilities=("pld", "grid_step"),
)
def _build_amplified(run) -> RunAnalysis:
    K = _group(run.relation)
    spec = partition_sum_lower(run)
    if K == 1:
        return DelegatedAnalysis(*amplified_runs(run), sum_lower=spec)
    one = SimpleNamespace(mechanism=run.mechanism, scheme=run.scheme, steps=run.steps,
                          relation=replace(run.relation, group=1))
    single = DelegatedAnalysis(*amplified_runs(one))
    try:
        direct: RunAnalysis | None = DelegatedAnalysis(*amplified_runs(run), sum_lower=spec)
    except NotApplicable:
        direct = None
    return GroupChainAnalysis(single, K, direct)


def _applies_plain(run) -> bool:
    if not isinstance(run.mechanism, MatrixMechanism):
        return False
    if isinstance(run.scheme, Deterministic):
        return isinstance(run.relation, (ZeroOut, Substitution))
    return (isinstance(run.scheme, CyclicPoisson) and isinstance(run.relation, _RELATIONS)
            and run.scheme.refusal(run.relation) is None)


@run_accountant(
    "matrix-gaussian", applies=_applies_plain,
    description="matrix mechanism without amplification: the Gaussian at the strategy's "
    "sensitivity over the worst participation pattern (deterministic batches, cyclic groups)",
    capabilities=("pld", "grid_step"),
)
def _build_plain(run) -> RunAnalysis:
    if isinstance(run.scheme, CyclicPoisson):
        _check_run(run)
        if run.scheme.truncated_batch_size is not None and isinstance(run.relation, AddRemove):
            raise NotApplicable("truncated cyclic Poisson under add/remove: the added example "
                                "can displace another (distance 2); the unamplified matrix "
                                "Gaussian covers zero-out and substitution with truncation")
    s_up, s_lo = unamplified_shifts(run)
    if not (math.isfinite(s_up) and s_up > 0):
        raise NotApplicable(f"the run's Gaussian shift must be finite and > 0, got {s_up}")
    return GaussianShiftAnalysis(s_up, s_lo)
