"""Groups of K examples for the matrix-mechanism accountants: group privacy by the chain of
neighbours, combined with the accountants' own K-group bounds.

*Theorem (group privacy; e.g. Dwork and Roth 2014, Thm 2.2, carried to the privacy profile;
Vadhan 2017, Lemma 2.2).*  If every pair of neighbouring datasets (in both orders) satisfies
``P(S) <= e^eps Q(S) + delta_1(eps)`` for every event S, then two datasets at distance K
(a chain ``D = D_0, D_1, ..., D_K = D'`` of neighbours: add or remove one member, replace
one by the zero record, or substitute one) satisfy, for every eps >= 0,

    P_0(S) <= e^{K eps} P_K(S) + delta_1(eps) sum_{i < K} e^{i eps}

(induction: ``P_0(S) <= e^eps P_1(S) + delta_1 <= e^eps (e^{(K-1) eps} P_K(S) + delta_1
sum_{i < K-1} e^{i eps}) + delta_1``).  So ``delta_K(K eps) <= delta_1(eps) sum_{i<K}
e^{i eps}``, and ``epsilon_K(delta) <= K eps_1`` for any eps_1 where the right-hand side is
<= delta.  The intermediate datasets are ordinary datasets, so any sampler whose
single-example bound holds for every neighbouring pair (including a random partition into
groups, which is independent of the data) qualifies.

:class:`GroupChainAnalysis` evaluates this from a single-example analysis's upper side (the
epsilon query searches eps_1 and reports only values it has checked: sound whatever the shape
of the search), and keeps the better of it and a direct K-group analysis (upper: the smaller;
lower: the larger of the direct analysis's realised lower sides).

:func:`partition_sum_lower` gives the sum statistic's realised pair for a matrix mechanism
under cyclic Poisson groups, valid for every partition of the examples into groups (the proof
is in :mod:`privamp.theorems.choquette2023`).
"""

from __future__ import annotations

import math

import numpy as np

from ..mechanisms.matrix import MatrixMechanism
from ..numerics.arrays import shaped
from ..results import Bound
from .registry import BoundPair, RunAnalysis

__all__ = ["GroupChainAnalysis", "chain_factor", "SRC_CHAIN", "partition_sum_lower",
           "sum_lower_values"]

SRC_CHAIN = ("group privacy by the chain of {K} neighbours (delta_K(K eps) <= delta_1(eps) "
             "sum_{{i<K}} e^(i eps); Dwork and Roth 2014, Thm 2.2) on: ")

#: grid points of the eps_1 search (then bisection between the last infeasible and the first
#: feasible point)
_GRID = 256
_BISECT = 40


def chain_factor(k: int, eps: np.ndarray) -> np.ndarray:
    """``sum_{i < k} e^{i eps}``, rounded up (relative 1e-12).

    Args:
        k: the group size K >= 1.
        eps: the single-example epsilons (>= 0).

    Returns:
        The factor, elementwise (inf where it overflows).

    Raises:
        ValueError: k < 1.
    """
    if int(k) < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    e = np.asarray(eps, dtype=float)
    with np.errstate(over="ignore"):
        # e^{(k-1) eps} sum_{j<k} e^{-j eps}: stable for every eps >= 0
        tail = np.where(e > 0, -np.expm1(-k * e) / -np.expm1(-np.where(e > 0, e, 1.0)), k)
        out = np.exp((k - 1) * e) * tail
    return out * (1.0 + 1e-12)


class GroupChainAnalysis(RunAnalysis):
    """A group of K examples: the chain bound on ``single``'s upper side, and ``direct``'s
    K-group sides (None: none).

    Args:
        single: the same run's analysis for one example (its upper side is used; through
            its ``upper_delta(epsilon)`` when it has one).
        k: the group size K >= 2.
        direct: an analysis of the K-group run itself (upper and realised lower), or None.
    """

    def __init__(self, single: RunAnalysis, k: int, direct: RunAnalysis | None) -> None:
        self.single, self.k, self.direct = single, int(k), direct
        self.src = SRC_CHAIN.format(K=self.k)

    def _single_delta(self, eps: np.ndarray) -> np.ndarray:
        fast = getattr(self.single, "upper_delta", None)
        if fast is not None:
            return np.asarray(fast(eps), dtype=float)
        up, _ = self.single.delta(eps)
        if up is None:
            return np.ones_like(eps)
        return np.minimum(np.ravel(np.asarray(up.value, dtype=float)), 1.0)

    def _chain_delta(self, eps: np.ndarray) -> tuple[np.ndarray, str]:
        e1 = np.asarray(eps, dtype=float) / self.k
        one = self._single_delta(e1)
        # review32: delta_1 = 0 gives 0 even where the factor overflows (0 * inf is NaN)
        with np.errstate(invalid="ignore"):
            d = np.where(one > 0, one * chain_factor(self.k, e1), 0.0)
        return np.minimum(d, 1.0), getattr(self.single, "source", "the one-example run")

    def _chain_epsilon(self, delta: np.ndarray) -> tuple[np.ndarray, str]:
        out = np.full(delta.shape, math.inf)
        up, _ = self.single.epsilon(np.asarray(delta, dtype=float))
        if up is None:
            return out, ""
        e_one = np.ravel(np.asarray(up.value, dtype=float))
        for i, (dlt, e0) in enumerate(zip(delta, e_one, strict=True)):
            if not (math.isfinite(e0) and dlt > 0):
                continue
            top = max(4.0 * e0, e0 + 20.0 / self.k, 1e-3)
            grid = np.linspace(0.0, top, _GRID)
            ok = self._single_delta(grid) * chain_factor(self.k, grid) <= dlt
            if not ok.any():
                continue
            j = int(np.argmax(ok))
            if j == 0:
                out[i] = 0.0
                continue
            lo, hi = float(grid[j - 1]), float(grid[j])
            for _ in range(_BISECT):
                mid = 0.5 * (lo + hi)
                v = (self._single_delta(np.array([mid]))[0]
                     * chain_factor(self.k, np.array([mid]))[0])
                if v <= dlt:
                    hi = mid
                else:
                    lo = mid
            out[i] = self.k * hi * (1.0 + 1e-12)
        return out, up.source

    def _ask(self, x: np.ndarray, which: str) -> BoundPair:
        flat = np.ravel(np.asarray(x, dtype=float))
        vals, src = (self._chain_epsilon(flat) if which == "epsilon"
                     else self._chain_delta(flat))
        srcs = [self.src + src]
        lo = None
        if self.direct is not None:
            d_up, d_lo = getattr(self.direct, which)(flat)
            if d_up is not None:
                dv = np.ravel(np.asarray(d_up.value, dtype=float))
                if np.any(dv < vals):
                    srcs.append(d_up.source)
                vals = np.minimum(vals, dv)
            if d_lo is not None:
                lv = np.minimum(np.ravel(np.asarray(d_lo.value, dtype=float)), vals)
                lo = Bound(shaped(lv, x), "lower", d_lo.source)
        return Bound(shaped(vals, x), "upper", "; ".join(srcs)), lo

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._ask(delta, "epsilon")

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._ask(epsilon, "delta")


def partition_sum_lower(run) -> tuple[int, int, float, float] | None:
    """The sum statistic's realised pair, valid under every partition
    (:mod:`privamp.theorems.choquette2023`, *lower bound under a random partition*):
    ``(K, R', q, s')`` for
    :func:`~privamp.theorems.poisson_groups.sum_statistic_delta` (``k=K, steps=R'``), or None.

    Args:
        run: a Training with a :class:`~privamp.MatrixMechanism` under
            :class:`~privamp.CyclicPoisson` without truncation.

    Returns:
        ``(K, R', q, s')`` with ``R' = floor(T / k)`` and ``s'`` the shift per
        ``sqrt(R')`` of the statistic ``w^T y[:T']``, ``T' = k R'``; None when it does not
        apply (truncation, T < k, equal-split groups leaving examples out, no certified
        shift).
    """
    scheme, mech = run.scheme, run.mechanism
    if not isinstance(mech, MatrixMechanism) or scheme.truncated_batch_size is not None:
        return None
    k = scheme.cycle_length
    rounds = run.steps // k
    if rounds < 1:
        return None
    n = scheme.dataset_size
    if n is not None and int(run.relation.group) > n:
        return None  # review32: the K members must exist
    if scheme.partition == "equal-split" and n is not None and n % k != 0:
        return None  # some examples sit out: the count is no longer Bin(K R', q)
    # imported here: importing these modules registers their accountants, and the registry's
    # order (docs/support.md) follows the theorem modules' discovery order
    from .mmcc2024 import sum_statistic_shift

    t_used = k * rounds
    lead = mech
    if mech.steps is not None and t_used != mech.steps:
        c = np.asarray(mech.strategy, dtype=float)[:t_used, :t_used]
        lead = MatrixMechanism(c, mech.sigma, mech.clip)
    shifts = [sum_statistic_shift(lead, t_used, alt) for alt in (False, True)]
    best = max((v for v in shifts if v is not None), default=None)
    if best is None:
        return None
    return int(run.relation.group), rounds, scheme.rate, best * math.sqrt(rounds / t_used)


def sum_lower_values(spec: tuple[int, int, float, float], x: np.ndarray,
                     which: str) -> np.ndarray:
    """The sum statistic's lower bounds at ``x``.

    Args:
        spec: ``(K, R', q, s')`` from :func:`partition_sum_lower`.
        x: deltas (``which="epsilon"``) or epsilons (``which="delta"``).
        which: ``"epsilon"`` or ``"delta"``.

    Returns:
        The lower bounds, flattened.
    """
    from .poisson_groups import sum_statistic_delta, sum_statistic_epsilon

    K, R, q, s = spec
    f = sum_statistic_epsilon if which == "epsilon" else sum_statistic_delta
    return np.array([f(float(v), K, R, q, s) for v in np.ravel(x)])
