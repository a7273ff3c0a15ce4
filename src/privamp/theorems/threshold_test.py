"""Certified lower bounds under Poisson sampling from a threshold test on a realised pair: the
count of steps whose output exceeds a threshold (issue 27: at delta = 1e-300 the Laplace
mechanism had no lower bound at all, groups and substitution only loose ones).

The realised pairs (every record but the differing ones contributes 0, the differing ones
contribute along one direction, the noise is Laplace(b) or Gaussian(sigma) in that direction;
one output per step):

* add/remove, zero-out, a group of K: each of the K records contributes Delta in D and is
  absent (or zeroed) in D'.  Under D a step outputs ``sum_j Binom(K, q)_j Noise(j Delta)``,
  under D' ``Noise(0)``.
* substitution, a group of K: each record contributes +Delta/2 in D and -Delta/2 in D'
  (both reachable by contributions clipped to Delta/2, as in
  :mod:`privamp.theorems.balle2018.pld`'s realised pair):
  ``sum_j Binom(K, q)_j Noise(j Delta/2)`` vs ``sum_j Binom(K, q)_j Noise(-j Delta/2)``.
* hybrid substitution (sensitivity for one insertion / removal): the same at +-Delta.
* randomized response, substitution or hybrid, one record: the pair
  :mod:`privamp.theorems.balle2018.pld` realises, ``q Bern(theta) + (1 - q) Bern(1 - theta)``
  vs ``Bern(1 - theta)``, whose outputs are already binary.

The statistic: for a threshold t, the number of steps with output >= t.  It is a
post-processing of the outputs, so the privacy profile of its law under (D, D') (both orders)
is a lower bound on the run's.  Per step the event has probabilities p = P_D(X >= t),
p' = P_D'(X >= t), computed in log space (Laplace: closed-form tails; Gaussian: scipy's
``log_ndtr``) with an absolute error allowance eta on each log-probability; the T-fold
composition of the two-outcome pair is the binomial sum of
:func:`privamp.theorems.binary_exact.binary_delta_bounds` (certified float error).  With
errors at most eta on the log-probabilities, the T-fold log-probabilities are off by at most
T eta and the losses by 2 T eta, so the true profile is at least
``exp(-T eta) * delta_hat(eps + 2 T eta)`` where delta_hat is the computed pair's: that is the
value returned.  Thresholds run over a small set (between the extreme means, and for the
Gaussian out in the tails, where tiny deltas are decided); the largest lower bound wins.

Lower side only; ``Training`` keeps the largest lower bound over its accountants.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.special import gammaln, log_ndtr

from ..accountants.registry import BoundPair, RunAnalysis, run_accountant
from ..errors import NotApplicable
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.laplace import Laplace
from ..mechanisms.randomized_response import RandomizedResponse
from ..numerics.arrays import shaped
from ..numerics.logspace import logsumexp
from ..numerics.roots import last_true
from ..results import Bound
from ..sampling.relations import AddRemove, HybridSubstitution, Substitution, ZeroOut
from ..sampling.schemes import Poisson
from .binary_exact import binary_delta_bounds

__all__ = ["ThresholdTestAnalysis", "StepLaws", "step_laws", "SRC_THRESHOLD", "MAX_STEPS",
           "log_tails"]

SRC_THRESHOLD = ("realised pair under Poisson sampling ({pair}): count of steps whose output "
                 "exceeds a threshold, exact binomial composition in log space with its float "
                 "error bounded, rounded down (privamp, issue 27)")

#: above this many steps the binomial window (~ sqrt(T) terms per evaluation) gets slow
MAX_STEPS = 10**7

#: epsilon(delta) for one record under add/remove or zero-out only below this delta (above,
#: the PLD's optimistic side is there and tighter than a threshold test), unless the shift
#: exceeds :data:`LARGE_SHIFT` noise units (there the PLD's grid is coarse: at sigma 0.05,
#: rate 1e-6, 1e6 steps, delta 1e-5 its lower side is 912.5, this test's 1134.8)
TINY_DELTA = 1e-7
LARGE_SHIFT = 4.0

_ETA_ABS = 1e-13  # allowance on each log-probability: absolute part ...
_ETA_REL = 1e-13  # ... plus this times the size of the log terms (lgamma, log-tails)


class StepLaws:
    """One step's output laws under D and D' of a realised pair: atoms of log-weights ``lw``
    at locations ``loc`` (in noise units), plus the noise ``kind`` ("laplace", "gauss" or
    "binary": then ``lw`` are log P(output = 1) only, under D and D')."""

    def __init__(self, kind: str, lw_d: np.ndarray, loc_d: np.ndarray, lw_d2: np.ndarray,
                 loc_d2: np.ndarray, label: str) -> None:
        self.kind, self.label = kind, label
        self.lw_d, self.loc_d = np.asarray(lw_d, float), np.asarray(loc_d, float)
        self.lw_d2, self.loc_d2 = np.asarray(lw_d2, float), np.asarray(loc_d2, float)

    def thresholds(self) -> list[float]:
        """The thresholds tried (in noise units)."""
        lo = float(min(self.loc_d.min(), self.loc_d2.min()))
        hi = float(max(self.loc_d.max(), self.loc_d2.max()))
        ts = [lo + (hi - lo) * f for f in (0.0, 0.25, 0.5, 0.75, 1.0)]
        if self.kind == "gauss":
            for c in (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0):
                ts += [hi + c, lo - c]
        return sorted(set(ts))


def log_tails(kind: str, z: np.ndarray) -> np.ndarray:
    """log P(N >= z) for the unit noise N (Laplace of scale 1, or standard normal).

    Args:
        kind: "laplace" or "gauss".
        z: points.

    Returns:
        The log-survival function at z (float error a few ulp of its size).
    """
    z = np.asarray(z, dtype=float)
    if kind == "gauss":
        return log_ndtr(-z)
    with np.errstate(over="ignore"):
        neg = np.log1p(-0.5 * np.exp(np.minimum(z, 0.0)))
    return np.where(z >= 0, math.log(0.5) - z, neg)


def _event(laws: StepLaws, t: float) -> tuple[tuple[float, float], tuple[float, float], float]:
    """((log P(X < t), log P(X >= t)) under D, the same under D', eta)."""
    out, size = [], 0.0
    for lw, loc in ((laws.lw_d, laws.loc_d), (laws.lw_d2, laws.loc_d2)):
        up = lw + log_tails(laws.kind, t - loc)
        dn = lw + log_tails(laws.kind, loc - t)
        z = np.abs(t - loc)
        # the tails' own size (Gaussian: ~z^2/2, relative error a few ulp) and the rounding
        # of t - loc and of loc (~u (|t| + |loc|)) times the tail's slope (<= z + 1); without
        # these the Gaussian errs by up to 8 eta at z ~ 2000 (review27)
        tails = np.concatenate([up, dn]) - np.concatenate([lw, lw])
        size = max(size, float(np.max(np.abs(lw[np.isfinite(lw)]), initial=0.0)),
                   float(np.max(z)), float(np.max(np.abs(tails[np.isfinite(tails)]),
                                                 initial=0.0)),
                   1e-3 * float(np.max((z + 1.0) * (abs(t) + np.abs(loc)))))
        # (a log-probability can round above 0: clamped, within the allowance eta)
        out.append((min(float(logsumexp(dn)), 0.0), min(float(logsumexp(up)), 0.0)))
    return out[0], out[1], _ETA_ABS + _ETA_REL * (size + 40.0)


class ThresholdTestAnalysis(RunAnalysis):
    """Lower bounds only, from the threshold test of :mod:`this module <.threshold_test>`.

    Args:
        laws: one step's laws under the realised pair.
        steps: T.
        tiny_only: answer ``epsilon(delta)`` only for delta below :data:`TINY_DELTA`.
    """

    def __init__(self, laws: StepLaws, steps: int, tiny_only: bool = False) -> None:
        self.laws, self.steps, self.tiny_only = laws, int(steps), tiny_only
        self.source = SRC_THRESHOLD.format(pair=laws.label)
        self._tests: list | None = None
        #: groups: (which, x) -> a certified lower bound where the group PLD's interval is
        #: already tight, else None (:func:`~.schuchardt2024.group_pld.tight_lower_screen`)
        self.screen: Callable[[str, np.ndarray], Bound | None] | None = None

    @property
    def tests(self) -> list:
        """The tests (both orders of the pair: (D, D') and (D', D)), built on first use: a
        tiny-delta-only analysis asked at an ordinary delta never needs them."""
        if self._tests is None:
            laws = self.laws
            if laws.kind == "binary":
                p, p2 = float(laws.lw_d[0]), float(laws.lw_d2[0])
                eta = _ETA_ABS + _ETA_REL * (abs(p) + abs(p2) + 40.0)
                tests = [((math.log1p(-math.exp(p)), p), (math.log1p(-math.exp(p2)), p2), eta)]
            else:
                tests = [_event(laws, t) for t in laws.thresholds()]
            self._tests = [x for a, b, e in tests for x in ((a, b, e), (b, a, e))]
        return self._tests

    def _lower(self, i: int, eps: float) -> float:
        lp, lq, eta = self.tests[i]
        T = self.steps
        lo = binary_delta_bounds(lp, lq, T, eps + 2.0 * T * eta)[1]
        return max(lo * math.exp(-T * eta) * (1.0 - 1e-15), 0.0)

    def delta_lower(self, eps: float) -> float:
        """A certified lower bound on the run's delta(eps) (the best test's)."""
        return max(self._lower(i, eps) for i in range(len(self.tests)))

    def epsilon_lower(self, delta: float) -> float:
        """A certified lower bound on the run's epsilon(delta): the largest eps found at
        which some test's delta exceeds ``delta``."""
        best = 0.0
        for i in range(len(self.tests)):
            def above(e: float, i: int = i) -> bool:
                return self._lower(i, e) > delta

            best = last_true(above, best, cap=1e12, rtol=1e-9, iterations=80)
        return best

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        d = np.asarray(delta, dtype=float)
        if self.screen is not None and (got := self.screen("epsilon", d)) is not None:
            return None, got
        flat = np.ravel(d)
        ask = flat < TINY_DELTA if self.tiny_only else np.ones(flat.shape, bool)
        if not np.any(ask):
            return None, None
        lo = np.array([self.epsilon_lower(float(v)) if a else 0.0
                       for v, a in zip(flat, ask, strict=True)])
        return None, Bound(shaped(lo, d), "lower", self.source)

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        e = np.asarray(epsilon, dtype=float)
        if self.screen is not None and (got := self.screen("delta", e)) is not None:
            return None, got
        lo = np.array([self.delta_lower(float(v)) for v in np.ravel(e)])
        return None, Bound(shaped(lo, e), "lower", self.source)


def step_laws(mechanism, relation, q: float) -> StepLaws:
    """One step's laws under the realised pair of the module docstring.

    Args:
        mechanism: Laplace, Gaussian or RandomizedResponse.
        relation: AddRemove, ZeroOut, Substitution or HybridSubstitution (any group).
        q: the Poisson rate in (0, 1].

    Returns:
        The laws (locations in noise units).

    Raises:
        NotApplicable: a mechanism / relation without a realised pair here, or a shift outside
            the range where the tails are computed.
    """
    K = relation.group
    if isinstance(mechanism, RandomizedResponse):
        if not isinstance(relation, (Substitution, HybridSubstitution)) or K != 1:
            raise NotApplicable("randomized response: the threshold test covers one record "
                                "under substitution (add/remove is exact in binary_exact)")
        t = mechanism.theta
        if t >= 1.0:
            raise NotApplicable("theta = 1: the upper bound is already the answer (no noise)")
        # log P(outcome 0) under D (q Bern(theta) + (1 - q) Bern(1 - theta)) and D'
        p1, p2 = math.log(q * (1.0 - t) + (1.0 - q) * t), math.log(t)
        return StepLaws("binary", np.array([p1]), np.zeros(1), np.array([p2]), np.zeros(1),
                        "one record set vs unset (randomized response)")
    if isinstance(mechanism, Laplace):
        kind, unit = "laplace", mechanism.sensitivity / mechanism.scale
    elif isinstance(mechanism, Gaussian):
        kind, unit = "gauss", mechanism.shift(1)
    else:
        raise NotApplicable("the threshold test covers Laplace, Gaussian, randomized response")
    j = np.arange(K + 1, dtype=float)
    if q < 1.0:
        lw = (gammaln(K + 1.0) - gammaln(j + 1.0) - gammaln(K - j + 1.0)
              + j * math.log(q) + (K - j) * math.log1p(-q))
    else:  # every record sampled: all the weight on j = K
        lw = np.where(j == K, 0.0, -np.inf)
    if isinstance(relation, (AddRemove, ZeroOut)):
        loc, loc2, lw2 = j * unit, np.zeros(1), np.zeros(1)
        label = f"{K} record(s) contributing Delta vs absent"
    elif isinstance(relation, (Substitution, HybridSubstitution)):
        half = unit / 2 if type(relation) is Substitution else unit
        loc, loc2, lw2 = j * half, -j * half, lw
        label = (f"{K} record(s) contributing +{'Delta/2' if half < unit else 'Delta'} "
                 f"replaced by -{'Delta/2' if half < unit else 'Delta'}")
    else:
        raise NotApplicable(f"the threshold test does not cover {relation}")
    top = float(K * unit)
    if not (math.isfinite(top) and 1e-12 <= top <= 1e4):
        raise NotApplicable(f"the threshold test needs K Delta / noise in [1e-12, 1e4], got "
                            f"{top}")
    keep, keep2 = np.isfinite(lw), np.isfinite(lw2)
    return StepLaws(kind, lw[keep], loc[keep], lw2[keep2], loc2[keep2], label)


def _covered_elsewhere(run) -> bool:
    """One record of randomized response under add/remove or zero-out: exact already
    (:mod:`privamp.theorems.binary_exact`)."""
    one = isinstance(run.relation, (AddRemove, ZeroOut)) and run.relation.group == 1
    return one and isinstance(run.mechanism, RandomizedResponse)


def _applies(run) -> bool:
    return (isinstance(run.scheme, Poisson) and run.scheme.rate > 0
            and isinstance(run.mechanism, (Laplace, Gaussian, RandomizedResponse))
            and isinstance(run.relation, (AddRemove, ZeroOut, Substitution,
                                          HybridSubstitution))
            and not _covered_elsewhere(run))


@run_accountant(
    "threshold-test",
    applies=_applies,
    description="lower bounds under Poisson sampling (tiny deltas, groups, substitution): the "
    "count of steps whose output exceeds a threshold, for a realised pair, composed exactly",
)
def _build(run) -> ThresholdTestAnalysis:
    if run.steps > MAX_STEPS:
        raise NotApplicable(f"the threshold test stops at {MAX_STEPS:.0e} steps")
    laws = step_laws(run.mechanism, run.relation, run.scheme.rate)
    one = isinstance(run.relation, (AddRemove, ZeroOut)) and run.relation.group == 1
    big = float(np.max(np.abs(laws.loc_d))) > LARGE_SHIFT
    an = ThresholdTestAnalysis(laws, run.steps, tiny_only=one and not big)
    if not one:  # (issue 28: groups skip the test where the group PLD is already tight)
        from .schuchardt2024.group_pld import tight_lower_screen
        an.screen = tight_lower_screen(run)
    return an
