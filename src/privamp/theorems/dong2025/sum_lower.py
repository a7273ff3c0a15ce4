"""Certified lower bounds for Balanced Iteration, balls-in-bins, model splitting, dropout and
their subsampled / partial variants from the sum of the blocks (issue 27: dropout and model
splitting had no lower bound at tiny deltas, Balanced Iteration none where its lattice is too
large, subsampled and partial model splitting none at all).

The realised pair (Gaussian mechanism, noise sigma, sensitivity C, s = C / sigma): a group
of K records (K = 1: one record) whose gradients are C along one fixed coordinate of every
block (step, submodel), every other record's gradient 0; D' = D without the group (or with it
zeroed).  The statistic: the sum of that coordinate over the blocks of one unit, divided by
the noise's standard deviation of that sum, a post-processing of the outputs.

* Balanced Iteration (T0 steps, k participations per epoch; balls-in-bins: k = 1), one unit
  = one epoch: every record of the group takes part in exactly k of the T0 steps, so the
  sum is N(K k C, T0 sigma^2) under D and N(0, T0 sigma^2) under D': a Gaussian shift
  ``K k s / sqrt(T0)`` per full epoch (a partial last epoch is not used: ignoring outputs is
  post-processing).  (Dong, Chen, Ozgur 2025, arXiv:2503.03043, Sec. 3.3.)
* Model splitting into d parts, each record in k of them (dropout: d = 2, k = 1), one unit
  = one step: shift ``K k s / sqrt(d)`` (Thm 3.4, Cor 3.7).
* Subsampled model splitting (rate q, each sampled record in one of d parts): the sum is
  ``sum_j Binom(K, q)_j N(j s / sqrt(d), 1)`` vs N(0, 1) per step.
* Partial model splitting (split norm a, shared norm b in units of C, rate q): a record puts
  b C on a shared coordinate and a C on one coordinate of its block; the statistic
  ``b y_shared + (a / d) sum_blocks y`` has shift ``s sqrt(b^2 + a^2 / d)`` per sampled record
  (the best linear combination), so ``sum_j Binom(K, q)_j N(j mu, 1)`` vs N(0, 1).

Units are independent, so the run's statistic law is the n-fold product: with rate 1 a
Gaussian of shift ``mu sqrt(n)`` (closed form, :class:`~privamp.pairs.mechanism_pairs.
GaussianPair`, evaluated in mpmath, rounded down by a relative 1e-11), else the threshold test of
:mod:`privamp.theorems.threshold_test` on the mixture.  Lower side only.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
from scipy.special import gammaln

from ...accountants.registry import BoundPair, RunAnalysis, run_accountant
from ...errors import NotApplicable
from ...mechanisms.gaussian import Gaussian
from ...numerics.arrays import shaped
from ...pairs.mechanism_pairs import GaussianPair
from ...results import Bound
from ...sampling.relations import AddRemove, ZeroOut
from ...sampling.schemes import (
    BalancedIteration,
    ModelSplit,
    PartialModelSplit,
    SubsampledModelSplit,
)
from ..threshold_test import MAX_STEPS, StepLaws, ThresholdTestAnalysis

__all__ = ["GaussianShiftLower", "split_sum_pair", "SRC_SPLIT_SUM"]

SRC_SPLIT_SUM = ("realised pair of {K} record(s) with gradient C on one coordinate of every "
                 "block, others 0: the sum over the blocks, {how} (Dong, Chen, Ozgur 2025 "
                 "schemes; privamp, issue 27)")

_REL = 1e-11  # relative allowance on the Gaussian profile's float value (rounded down)


class GaussianShiftLower(RunAnalysis):
    """Lower bounds from a realised statistic whose laws are N(mu, 1) vs N(0, 1).

    Args:
        mu: the shift (> 0).
        source: the Bound's source.
    """

    def __init__(self, mu: float, source: str) -> None:
        self.mu, self.source = float(mu), source
        self.pair = GaussianPair(self.mu)

    def delta_lower(self, eps: float) -> float:
        """The Gaussian profile at eps, rounded down.

        Evaluated in mpmath (``Phi(a) - e^eps Phi(a - s)``, a = s/2 - eps/s) with enough
        digits for the cancellation (it loses about log10(1/s + |a| + 2) of them): the float
        log-space form errs by up to ~1.4e-8 relative at s = 3e-4 (review27), above the
        1e-11 allowance.  Zero where Phi(a) < 1e-307 (a < -38)."""
        s, e = self.mu, float(eps)
        a_f = s / 2 - e / s
        if not math.isfinite(a_f) or a_f < -38.0:
            return 0.0
        dps = 30 + int(math.log10(1.0 / s + abs(a_f) + 2.0))
        with mpmath.workdps(dps):
            ms, me = mpmath.mpf(s), mpmath.mpf(e)
            a = ms / 2 - me / ms
            d = float(mpmath.ncdf(a) - mpmath.exp(me) * mpmath.ncdf(a - ms))
        if not math.isfinite(d) or d < 1e-307:
            return 0.0
        return min(d, 1.0) * (1.0 - _REL)

    def epsilon_lower(self, delta: float) -> float:
        """The largest eps found with delta_lower(eps) > delta (a certified lower bound)."""
        if not self.delta_lower(0.0) > delta:
            return 0.0
        lo, hi = 0.0, max(1.0, self.mu * self.mu)
        while self.delta_lower(hi) > delta:
            lo, hi = hi, 2.0 * hi
            if hi > 1e300:
                return lo
        for _ in range(200):
            if hi - lo <= 1e-10 * hi:
                break
            mid = 0.5 * (lo + hi)
            if self.delta_lower(mid) > delta:
                lo = mid
            else:
                hi = mid
        return lo

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        d = np.asarray(delta, dtype=float)
        lo = np.array([self.epsilon_lower(float(v)) for v in np.ravel(d)])
        return None, Bound(shaped(lo, d), "lower", self.source)

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        e = np.asarray(epsilon, dtype=float)
        lo = np.array([self.delta_lower(float(v)) for v in np.ravel(e)])
        return None, Bound(shaped(lo, e), "lower", self.source)


def split_sum_pair(run) -> tuple[float, float, int]:
    """(q, mu, n): each of n independent units gives the statistic
    ``sum_j Binom(K, q)_j N(j mu, 1)`` vs N(0, 1) for the run's realised pair (module
    docstring; q = 1: N(K mu, 1), returned as mu already multiplied by K).

    Args:
        run: a Training with a Gaussian mechanism and one of the schemes above.

    Returns:
        (rate q, shift per sampled record mu (per group if q = 1), number of units n).

    Raises:
        NotApplicable: another scheme, or no full unit.
    """
    sch, K = run.scheme, run.relation.group
    s = run.mechanism.shift(1)
    if isinstance(sch, BalancedIteration):
        n = run.steps // sch.steps
        if n < 1:
            raise NotApplicable("the sum test needs one full Balanced Iteration epoch")
        return 1.0, K * sch.participations * s / math.sqrt(sch.steps), n
    if isinstance(sch, ModelSplit):
        return 1.0, K * sch.selected * s / math.sqrt(sch.parts), run.steps
    if isinstance(sch, SubsampledModelSplit):
        mu = s / math.sqrt(sch.parts)
        return (1.0, K * mu, run.steps) if sch.rate >= 1 else (sch.rate, mu, run.steps)
    if isinstance(sch, PartialModelSplit):
        mu = s * math.hypot(sch.shared_norm, sch.split_norm / math.sqrt(sch.parts))
        return (1.0, K * mu, run.steps) if sch.rate >= 1 else (sch.rate, mu, run.steps)
    raise NotApplicable(f"the split sum test does not cover {type(sch).__name__}")


def _applies(run) -> bool:
    return (isinstance(run.mechanism, Gaussian)
            and isinstance(run.scheme, (BalancedIteration, ModelSplit, SubsampledModelSplit,
                                        PartialModelSplit))
            and isinstance(run.relation, (AddRemove, ZeroOut)))


@run_accountant(
    "split-sum-test",
    applies=_applies,
    description="lower bounds for Balanced Iteration, balls-in-bins, (subsampled, partial) "
    "model splitting and dropout: the sum over the blocks of a realised pair",
)
def _build(run) -> RunAnalysis:
    q, mu, n = split_sum_pair(run)
    K = run.relation.group
    if not (math.isfinite(mu) and mu > 0):
        raise NotApplicable(f"the split sum test needs a finite positive shift, got {mu}")
    if q >= 1.0:
        tot = mu * math.sqrt(n)
        if not math.isfinite(tot) or tot > 1e150:
            raise NotApplicable("the run's Gaussian shift overflows")
        how = f"a Gaussian of shift {tot:.6g} over {n} unit(s), closed form rounded down"
        return GaussianShiftLower(tot, SRC_SPLIT_SUM.format(K=K, how=how))
    if n > MAX_STEPS or not K * mu <= 1e4:
        raise NotApplicable("the subsampled split sum test stops at 1e7 steps and shift 1e4")
    j = np.arange(K + 1, dtype=float)
    lw = (gammaln(K + 1.0) - gammaln(j + 1.0) - gammaln(K - j + 1.0)
          + j * math.log(q) + (K - j) * math.log1p(-q))
    laws = StepLaws("gauss", lw, j * mu, np.zeros(1), np.zeros(1),
                    f"{K} record(s) with gradient C on one coordinate of every block, "
                    "others 0; statistic: the sum over the blocks of each step")
    return ThresholdTestAnalysis(laws, n)
