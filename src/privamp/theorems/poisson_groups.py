"""Certified lower bounds for groups under Poisson sampling, and for the hybrid relation
(issue 27: these runs had only RDP upper bounds, no lower bound).

A group of K records differs between D and D' (add/remove, zero-out, substitution of K
records, or one under hybrid substitution); the run is T steps of Poisson sampling at rate q.
Every witness below is a realised pair of neighbouring datasets (the records outside the
group contribute 0; the group's records are absent from D', null or replaced by records whose
contribution is 0), so the profile of its T-fold product (the queries are the same every
step) is a lower bound on the run's, in both orders (D, D') and (D', D).

* Gaussian (sum of per-record contributions of l2 norm <= Delta): every member of the group
  contributes the same vector of norm Delta.  A step's batch holds J ~ Binom(K, q) members,
  so the output is P = sum_j Binom(K, q)_j N(j s, 1) vs Q = N(0, 1), s = Delta / sigma (the
  worst case of Schuchardt et al. 2024, arXiv:2403.04867, Sec. 4 for group privacy under
  Poisson sampling).  The binomial weights above the index where their tail is <= rho are
  dropped and the rest renormalised: that moves P by rho in total variation, so T rho is
  subtracted from delta (at most 1e-15 here).
* Laplace and randomized response: the query min(#members in the batch, 1) times Delta
  (sensitivity Delta: one record changes it by at most Delta; for randomized response the
  bit "some member is in the batch").  A step's output is the one-record Poisson pair at rate
  q' = 1 - (1 - q)^K, whose two-sided PLD the Poisson accountant computes
  (:class:`privamp.accountants.poisson.PLDAnalysis`); its optimistic side is the witness's.
* Hybrid substitution (Schuchardt et al. 2024, App. F.2), K = 1 included: one batch element
  moves the query by at most Delta, so a substituted element moves it by at most 2 Delta:
  the run is a substitution run of the mechanism at sensitivity 2 Delta (the argument of
  their Thm F.2, which privamp's RDP results use as "hybrid-as-substitution").  Balle et al.
  2018's Poisson-substitution PLD (:class:`privamp.theorems.balle2018.pld.FixedBatchPLDAnalysis`)
  at 2 Delta gives both sides: its dominating pairs are then valid for the hybrid run, and
  its witness (the record's contribution v against v' with f(v) - f(v') = 2 Delta, e.g.
  +Delta and -Delta) is realised under the hybrid relation.  For Laplace groups, where it has
  no lower side, the witness above (the replacement contributes 0) gives one.

*Extreme deltas* (e.g. 1e-300): the PLDs' tails are truncated near 1e-16, so their lower
sides say nothing there.  For the Gaussian the sum of the outputs S = sum_t x_t is a
post-processing of the witness, so its profile is a lower bound too, and it is one
dimensional in closed form: S / sqrt(T) is N(0, 1) under Q and sum_n Binom(K T, q)_n
N(n s / sqrt(T), 1) under P (the members sampled over the run add up to Binom(K T, q)).
:func:`sum_statistic_delta` evaluates P(Y > x) - e^eps Q(Y > x) at the threshold x where the
pair's loss crosses eps, in log space (valid for any x: a threshold test), dropping the
weights below e^-740 (which only lowers P, so the value stays a lower bound) and rounding
down by a relative 1e-9 for the float evaluation.  It answers where only the RDP accountant
does; with K = 1 it is offered as a function (the Poisson PLD accountant's run is not this
module's).

Substitution groups of Gaussian and randomized response already have lower bounds
(:mod:`privamp.theorems.balle2018.pld`); this module covers Laplace there.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special, stats

from ..accountants.grid import auto_grid
from ..accountants.poisson import PLDAnalysis, check_steps
from ..errors import NotApplicable
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.laplace import Laplace
from ..mechanisms.randomized_response import RandomizedResponse
from ..numerics.arrays import shaped
from ..numerics.logspace import log_ndtr, logsumexp
from ..pairs.combinators import SwappedPair
from ..pairs.loss_pair import LossPair
from ..pairs.mechanism_pairs import GaussianPair
from ..pairs.mixtures import GaussianShiftMixturePair
from ..pld.discretise import discretise
from ..pld.grid import OPTIMISTIC_SOURCE, PLD
from ..pld.two_sided import TwoSidedPLD
from ..results import Bound
from ..sampling.relations import AddRemove, HybridSubstitution, Substitution, ZeroOut
from ..sampling.schemes import Poisson
from .balle2018.pld import FixedBatchPLDAnalysis
from .binary_exact import BinaryExactAnalysis
from .registry import BoundPair, RunAnalysis, run_accountant

__all__ = [
    "GroupWitnessAnalysis",
    "LowerSide",
    "group_witness",
    "HybridPoissonAnalysis",
    "SRC_HYBRID",
    "binomial_shift_pair",
    "sum_statistic_delta",
    "sum_statistic_epsilon",
    "group_rate",
    "SRC_GAUSS",
    "SRC_SUM",
    "SRC_RATE",
]

SRC_GAUSS = ("realised pair of a group of {K} under Poisson sampling: all members contribute "
             "the same vector, the output is sum_j Binom({K}, q)_j N(j Delta, sigma^2) vs "
             "N(0, sigma^2) (Schuchardt et al. 2024, Sec. 4 worst case); ")
SRC_RATE = ("realised pair of a group of {K} under Poisson sampling: the query "
            "Delta min(#members, 1), i.e. the one-record pair at rate 1 - (1 - q)^{K}; ")

SRC_HYBRID = ("; hybrid substitution as substitution at twice the sensitivity (Schuchardt et "
              "al. 2024, App. F.2, Thm F.2)")

SRC_SUM = ("; in the PLD's cut tails (delta < 1e-10): threshold test on the sum of the "
           "outputs (a post-processing of the witness; closed form in log space)")

#: the largest total-variation allowance of the truncated binomial weights
_RHO = 1e-15


def group_rate(q: float, k: int) -> float:
    """1 - (1 - q)^k: the probability that some of k members is in a Poisson batch.

    Args:
        q: rate in (0, 1].
        k: group size >= 1.

    Returns:
        The rate, computed without cancellation.
    """
    if q >= 1.0:
        return 1.0
    return -math.expm1(k * math.log1p(-q))


def binomial_shift_pair(k: int, q: float, s: float, rho: float) -> tuple[LossPair, float]:
    """The pair (sum_j Binom(k, q)_j N(j s, 1), N(0, 1)) with the weights above the index
    whose upper tail is <= ``rho / 2`` dropped and the rest renormalised, and the total
    variation distance to the untruncated pair (<= rho).

    Args:
        k: group size >= 1.
        q: rate in (0, 1].
        s: shift Delta / sigma > 0.
        rho: allowance in (0, 1).

    Returns:
        (pair, tv).
    """
    if q >= 1.0:
        return GaussianPair(k * s), 0.0
    j = np.arange(k + 1)
    b = stats.binom.pmf(j, k, q)
    tail = stats.binom.sf(j, k, q)  # P(J > j)
    top = int(np.argmax(tail <= rho / 2)) if np.any(tail <= rho / 2) else k
    top = max(top, 1)
    while top > 1 and b[top] <= 0:
        top -= 1
    tv = float(tail[top]) if top < k else 0.0
    w = b[: top + 1]
    return GaussianShiftMixturePair(w / w.sum(), s), min(2.0 * tv, 1.0)


def _sum_weights(n_max: int, q: float, s: float) -> tuple[np.ndarray, np.ndarray]:
    """(log weights, shifts) of the kept components n of Binom(n_max, q) (log weight >=
    -740, and within 60 standard deviations of the mean: dropping components only lowers
    P), shifts n s."""
    if q >= 1.0:
        return np.array([0.0]), np.array([n_max * s])
    mean, sd = n_max * q, math.sqrt(n_max * q * (1.0 - q))
    lo = max(0, int(mean - 60.0 * sd) - 10)
    hi = min(n_max, int(mean + 60.0 * sd) + 10)
    n = np.arange(lo, hi + 1, dtype=float)
    lw = stats.binom.logpmf(n, n_max, q)
    # logpmf is gammaln(N+1) - gammaln(n+1) - gammaln(N-n+1) + n log q + (N-n) log(1-q): its
    # absolute error grows with these terms' size (1e-6 at N = 1e9, 1e-2 at N = 1e12), far
    # beyond _delta_from's allowance; lowering every weight by a bound on it (a few ulps of
    # the terms' total size: gammaln to 1-2 ulps, 4 additions) keeps P below the mixture
    mag = (special.gammaln(n_max + 1.0) + special.gammaln(n + 1.0)
           + special.gammaln(n_max - n + 1.0) + np.abs(special.xlogy(n, q))
           + np.abs(special.xlog1py(n_max - n, -q)))
    lw = lw - 2e-15 * mag - 1e-15
    keep = lw >= -740.0
    return lw[keep], n[keep] * s


def _log_tails(x: float, lw: np.ndarray, mu: np.ndarray) -> tuple[float, float]:
    """(log P(Y > x), log Q(Y > x)) for P = sum exp(lw) N(mu, 1), Q = N(0, 1)."""
    return float(logsumexp(lw + log_ndtr(mu - x))), float(log_ndtr(-x))


def _threshold(eps: float, lw: np.ndarray, mu: np.ndarray) -> float:
    """x with log sum exp(lw) e^{mu x - mu^2 / 2} = eps (bisection; any x gives a valid
    threshold test, this one is near the best)."""
    def loss(x: float) -> float:
        return float(logsumexp(lw + mu * x - mu * mu / 2))

    lo, hi = -40.0, 40.0
    while loss(hi) < eps and hi < 1e8:
        hi *= 2.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if loss(mid) > eps:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-9 * max(1.0, abs(hi)):
            break
    return hi


def _delta_from(eps: float, lw: np.ndarray, mu: np.ndarray) -> float:
    x = _threshold(eps, lw, mu)
    lp, lq = _log_tails(x, lw, mu)
    # the float error of lp - lq (log_ndtr and a sum of lw.size terms, each a few ulps of
    # its magnitude) is added to the gap: at tiny shifts lp - lq cancels to rounding noise
    # the arguments mu - x of the normal tails round by ulps of max(|mu|, |x|), which moves
    # log Phi(mu - x) by up to |mu - x| times that
    z = abs(x) + float(np.max(np.abs(mu)))
    err = 1e-12 * max(1.0, abs(lp), abs(lq)) + 1e-15 * lw.size + 4e-16 * z * (z + 1.0)
    gap = lq + eps - lp + err
    if not gap < 0:
        return 0.0
    # lp itself may be high by err too
    return max(math.exp(lp - err) * -math.expm1(gap) * (1.0 - 1e-9), 0.0)


def sum_statistic_delta(eps: float, k: int, steps: int, q: float, s: float) -> float:
    """A certified lower bound on delta(eps) of T steps of the Poisson-subsampled Gaussian at
    shift ``s`` for a group of ``k``: the threshold test on the sum of the outputs (module
    docstring), in log space, rounded down.

    Args:
        eps: epsilon >= 0.
        k: group size >= 1.
        steps: T >= 1.
        q: rate in (0, 1].
        s: shift Delta / sigma > 0.

    Returns:
        A lower bound in [0, 1].
    """
    lw, mu = _sum_weights(k * steps, q, s / math.sqrt(steps))
    return _delta_from(float(eps), lw, mu)


def sum_statistic_epsilon(delta: float, k: int, steps: int, q: float, s: float) -> float:
    """A certified lower bound on epsilon(delta) from :func:`sum_statistic_delta`: the
    largest eps found (bisection) whose lower bound on delta(eps) still exceeds ``delta``
    (then the run's epsilon at ``delta`` is above it), or 0.

    Args:
        delta: in (0, 1).
        k: group size >= 1.
        steps: T >= 1.
        q: rate in (0, 1].
        s: shift Delta / sigma > 0.

    Returns:
        A lower bound >= 0.
    """
    lw, mu = _sum_weights(k * steps, q, s / math.sqrt(steps))

    def above(e: float) -> bool:
        return _delta_from(e, lw, mu) > delta

    if not above(0.0):
        return 0.0
    lo, hi = 0.0, 1.0
    while above(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e6:
            return lo
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if above(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-6 * hi:
            break
    return lo


class GroupWitnessAnalysis(RunAnalysis):
    """Lower bounds only: the optimistic PLD of a witness pair and its swap, composed T times,
    minus the witness's total-variation allowance ``T tv`` (Gaussian), or the Poisson
    accountant's lower side at the group rate (Laplace, randomized response)."""

    def __init__(self, source: str, steps: int, pair: LossPair | None = None,
                 tv: float = 0.0,
                 poisson: PLDAnalysis | BinaryExactAnalysis | None = None,
                 sum_test: tuple[int, float, float] | None = None) -> None:
        self.source, self.steps, self.pair, self.tv = source, int(steps), pair, float(tv)
        self.poisson = poisson
        #: (k, q, s) of the Gaussian's sum statistic, used where the PLD's tails are cut
        self.sum_test = sum_test
        self._plds: list[PLD] | None = None

    def _tiny(self, which: str, x: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, bool]:
        """``lo`` raised by the sum statistic where the PLD's lower side is in its cut tails
        (delta below 1e-10, or a lower delta below 1e-12)."""
        if self.sum_test is None:
            return lo, False
        k, q, s = self.sum_test
        flat, out, used = np.ravel(x), np.array(lo, dtype=float).ravel(), False
        for i, v in enumerate(flat):
            if which == "epsilon" and v < 1e-10:
                alt = sum_statistic_epsilon(float(v), k, self.steps, q, s)
            elif which == "delta" and out[i] < 1e-12:
                alt = sum_statistic_delta(float(v), k, self.steps, q, s)
            else:
                continue
            if alt > out[i]:
                out[i], used = alt, True
        return out, used

    def _sides(self) -> list[PLD]:
        if self._plds is None:
            assert self.pair is not None
            out = []
            for p in (self.pair, SwappedPair(self.pair)):
                h = auto_grid(p, self.steps)
                _, o = discretise(p, h, pessimistic=False)
                assert o is not None
                out.append(o.self_compose(self.steps))
            self._plds = out
        return self._plds

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        d = np.asarray(delta, dtype=float)
        lo: Any  # the Poisson side's Bound, or the array of lower values
        if self.poisson is not None:
            _, lo = self.poisson.epsilon(d)
            return None, None if lo is None else Bound(lo.value, "lower", self.source + lo.source)
        dd = np.ravel(d) + self.steps * self.tv
        ok = dd < 1.0
        lo = np.max([p.epsilon(np.where(ok, dd, 0.5)) for p in self._sides()], axis=0)
        lo = np.where(ok, np.maximum(lo, 0.0), 0.0)
        lo, used = self._tiny("epsilon", d, lo)
        src = self.source + OPTIMISTIC_SOURCE + (SRC_SUM if used else "")
        return None, Bound(shaped(lo, d), "lower", src)

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        e = np.asarray(epsilon, dtype=float)
        lo: Any  # the Poisson side's Bound, or the array of lower values
        if self.poisson is not None:
            _, lo = self.poisson.delta(e)
            return None, None if lo is None else Bound(lo.value, "lower", self.source + lo.source)
        lo = np.max([p.delta(np.ravel(e)) for p in self._sides()], axis=0)
        lo = np.maximum(lo - self.steps * self.tv, 0.0)
        lo, used = self._tiny("delta", e, lo)
        src = self.source + OPTIMISTIC_SOURCE + (SRC_SUM if used else "")
        return None, Bound(shaped(lo, e), "lower", src)


class LowerSide(RunAnalysis):
    """The lower side only of another analysis (whose optimistic side is a realised pair)."""

    def __init__(self, inner: RunAnalysis) -> None:
        self.inner = inner

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return None, self.inner.epsilon(delta)[1]

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return None, self.inner.delta(epsilon)[1]


class HybridPoissonAnalysis(RunAnalysis):
    """A Poisson run under hybrid substitution: Balle et al.'s Poisson-substitution PLD at
    twice the sensitivity (both sides, and its PLD for :func:`privamp.compose`), with the
    lower side raised by ``extra`` (a :class:`GroupWitnessAnalysis`) where given."""

    def __init__(self, sub: FixedBatchPLDAnalysis, extra: RunAnalysis | None = None
                 ) -> None:
        self.sub, self.extra = sub, extra

    def _both(self, which: str, x: np.ndarray) -> BoundPair:
        up, lo = getattr(self.sub, which)(x)
        up = None if up is None else Bound(up.value, up.kind, up.source + SRC_HYBRID)
        lo = None if lo is None else Bound(lo.value, lo.kind, lo.source + SRC_HYBRID)
        if self.extra is not None:
            _, lo2 = getattr(self.extra, which)(x)
            if lo2 is not None and (lo is None or np.all(np.asarray(lo2.value)
                                                          >= np.asarray(lo.value))):
                lo = lo2
        if lo is not None and up is not None:
            lo = Bound(np.minimum(lo.value, up.value), "lower", lo.source)
        return up, lo

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._both("epsilon", delta)

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._both("delta", epsilon)

    def grid_step(self) -> float:
        return self.sub.grid_step()

    def pld(self, h: float | None = None) -> TwoSidedPLD:
        """Balle et al.'s substitution PLD at twice the sensitivity (both sides realised or
        dominating under the hybrid relation, see the module docstring)."""
        return self.sub.pld(h)


def _doubled(mech):
    """The mechanism at twice its sensitivity (randomized response: itself)."""
    if isinstance(mech, Gaussian):
        return Gaussian(mech.sigma, 2.0 * mech.sensitivity)
    if isinstance(mech, Laplace):
        return Laplace(mech.scale, 2.0 * mech.sensitivity)
    return mech


def _hybrid_applies(run) -> bool:
    return (isinstance(run.scheme, Poisson) and run.scheme.rate > 0
            and isinstance(run.mechanism, (Gaussian, Laplace, RandomizedResponse))
            and isinstance(run.relation, HybridSubstitution))


@run_accountant(
    "pld",
    applies=_hybrid_applies,
    description="Poisson under hybrid substitution: Balle et al. 2018's Poisson-substitution "
    "PLD at twice the sensitivity (Schuchardt et al. 2024, Thm F.2), two-sided",
    capabilities=("pld", "grid_step"),
)
def _build_hybrid(run) -> HybridPoissonAnalysis:
    k = run.relation.group
    mech2 = _doubled(run.mechanism)
    if not math.isfinite(getattr(mech2, "sensitivity", 1.0)):
        raise NotApplicable("twice the sensitivity overflows")
    sub = FixedBatchPLDAnalysis(mech2, run.scheme, Substitution(group=k), run.steps)
    extra = group_witness(run) if isinstance(run.mechanism, Laplace) and k > 1 else None
    return HybridPoissonAnalysis(sub, extra)


def _applies(run) -> bool:
    mech, rel = run.mechanism, run.relation
    if not (isinstance(run.scheme, Poisson) and run.scheme.rate > 0):
        return False
    if not isinstance(mech, (Gaussian, Laplace, RandomizedResponse)):
        return False
    if isinstance(rel, (AddRemove, ZeroOut)):
        return rel.group > 1
    if isinstance(rel, Substitution):
        return rel.group > 1 and isinstance(mech, Laplace)
    return False


@run_accountant(
    "group-witness",
    applies=_applies,
    description="lower bounds of groups (and hybrid substitution) under Poisson sampling "
    "from realised pairs of neighbouring datasets, composed with optimistic PLDs",
)
def _build(run) -> RunAnalysis:
    return group_witness(run)


def group_witness(run) -> RunAnalysis:
    """The lower-bound analysis of a Poisson ``run`` of a group (or under hybrid
    substitution) from the witnesses of the module docstring.

    Args:
        run: a Training with Poisson sampling and a Gaussian, Laplace or randomized
            response mechanism.

    Returns:
        The analysis (lower bounds only; for Gaussian add/remove or zero-out groups the
        group PLD accountant's lower side, :func:`~.schuchardt2024.group_pld.shared_group_pld`).

    Raises:
        NotApplicable: the mechanism's loss does not fit the PLD grid, or too many steps.
    """
    check_steps(run.steps)
    mech, q, k = run.mechanism, run.scheme.rate, run.relation.group
    if isinstance(mech, Gaussian) and isinstance(run.relation, (AddRemove, ZeroOut)):
        # the group PLD accountant's lower side is this witness's pair composed without
        # truncation (with the same sum-statistic tails): shared, composed once
        from .schuchardt2024.group_pld import (
            WITNESS_GROUP_SHIFT,
            group_pld_applies,
            shared_group_pld,
        )

        if group_pld_applies(run) and k * mech.shift(1) <= WITNESS_GROUP_SHIFT:
            return LowerSide(shared_group_pld(run))
    if isinstance(mech, Gaussian):
        s = mech.shift(1)
        if not (math.isfinite(s) and 0 < s <= 25.0):
            raise NotApplicable(f"the group witness needs a Gaussian shift in (0, 25], got {s}")
        pair, tv = binomial_shift_pair(k, q, s, _RHO / run.steps)
        return GroupWitnessAnalysis(SRC_GAUSS.format(K=k), run.steps, pair=pair, tv=tv,
                                    sum_test=(k, q, s))
    if isinstance(mech, Laplace) and mech.sensitivity / mech.scale > 600.0:
        raise NotApplicable("the group witness needs a Laplace loss range within the grid's")
    rate = group_rate(q, k)
    an = (BinaryExactAnalysis(mech, rate, run.steps) if isinstance(mech, RandomizedResponse)
          else PLDAnalysis(mech, rate, run.steps))
    return GroupWitnessAnalysis(SRC_RATE.format(K=k), run.steps, poisson=an)
