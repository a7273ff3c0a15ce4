"""A certified lower bound for one record under Poisson sampling where the PLD's lower side is
missing: tiny deltas (issue 27: at delta = 1e-300 only the RDP accountant answered, with no
lower bound).

The run: T steps of the Gaussian mechanism (shift s = Delta / sigma in noise units) under
Poisson sampling at rate q, one record differing (add/remove or zero-out).  The realised pair:
every record but the differing one contributes 0 and the differing one contributes a vector of
norm Delta (the same every step); D holds it, D' does not (or holds it zeroed).  Each step's
output is then (1 - q) N(0, 1) + q N(s, 1) under D and N(0, 1) under D' (along that vector, in
noise units).  Any statistic of the outputs is a post-processing, so the privacy profile of its
law under (D, D') is a lower bound on the run's.  The statistic used here: the sum of the first
m outputs, scaled, S_m / sqrt(m), which is N(0, 1) under D' and
sum_n Binom(m, q)_n N(n s / sqrt(m), 1) under D, evaluated by a threshold test in log space
(:func:`privamp.theorems.poisson_groups.sum_statistic_delta`, rounded down).  m runs over a
geometric ladder up to T (m = T is best at moderate deltas, m = 1, the single step, at the
tiniest ones); the largest lower bound wins.

The PLD accountant's tails are truncated near 1e-13, so it has no lower side below that; this
accountant answers ``epsilon(delta)`` for delta < 1e-10 and ``delta(epsilon)`` everywhere
(a lower side only: ``Training`` combines it with the other accountants' answers, keeping the
largest lower bound).
"""

from __future__ import annotations

import math

import numpy as np

from ..accountants.registry import BoundPair, RunAnalysis, run_accountant
from ..errors import NotApplicable
from ..mechanisms.gaussian import Gaussian
from ..numerics.arrays import shaped
from ..numerics.roots import last_true
from ..results import Bound
from ..sampling.relations import AddRemove, ZeroOut
from ..sampling.schemes import Poisson
from .poisson_groups import sum_statistic_delta

__all__ = ["SumTestAnalysis", "SRC_SUM_TEST", "TINY_DELTA", "sum_test_ladder"]

SRC_SUM_TEST = ("realised pair of one record under Poisson sampling (every other record "
                "contributes 0): threshold test on the sum of the first m outputs, "
                "sum_n Binom(m, q)_n N(n Delta / sqrt(m), sigma^2) vs N(0, sigma^2), in log "
                "space, rounded down (privamp, issue 27)")

#: epsilon(delta) is answered below this delta (the PLD's lower side stops near 1e-13)
TINY_DELTA = 1e-10

#: the ladder's m keeps m q (1 - q) below this (the sum's binomial weights stay ~5,000)
_MAX_VARIANCE = 1700.0


def sum_test_ladder(steps: int, q: float) -> list[int]:
    """The numbers of steps m whose sums are tested: 1, 4, 16, ... and ``steps`` itself, all
    with m q (1 - q) <= 1700 (longer sums cost more; fewer steps is still a valid test).

    Args:
        steps: T >= 1.
        q: rate in (0, 1].

    Returns:
        Increasing step counts in [1, steps], largest first tested last.
    """
    var = q * (1.0 - q)
    cap = steps if var <= 0 else min(steps, max(1, int(_MAX_VARIANCE / var)))
    out = [m for m in (4 ** i for i in range(40)) if m < cap]
    return out + [cap]


class SumTestAnalysis(RunAnalysis):
    """Lower bounds only, from the sum statistic of :mod:`this module <.poisson_sum_test>`."""

    def __init__(self, steps: int, q: float, s: float) -> None:
        self.steps, self.q, self.s = int(steps), float(q), float(s)
        self.ladder = sum_test_ladder(self.steps, self.q)

    def _delta_at(self, eps: float) -> float:
        best = sum_statistic_delta(eps, 1, self.ladder[-1], self.q, self.s)
        if best > TINY_DELTA:  # the PLD's lower side is there: no need to climb the ladder
            return best
        for m in self.ladder[:-1]:
            best = max(best, sum_statistic_delta(eps, 1, m, self.q, self.s))
        return best

    def _epsilon_at(self, delta: float) -> float:
        """The largest eps found whose test's delta exceeds ``delta`` (each such eps is a
        certified lower bound on epsilon(delta)), over the ladder."""
        best = 0.0
        for m in reversed(self.ladder):
            def above(e: float, m: int = m) -> bool:
                return sum_statistic_delta(e, 1, m, self.q, self.s) > delta

            best = last_true(above, best, cap=1e6, rtol=1e-6, iterations=60)
        return best

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        d = np.asarray(delta, dtype=float)
        flat = np.ravel(d)
        if not np.any(flat < TINY_DELTA):
            return None, None
        lo = np.array([self._epsilon_at(float(v)) if v < TINY_DELTA else 0.0 for v in flat])
        return None, Bound(shaped(lo, d), "lower", SRC_SUM_TEST)

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        e = np.asarray(epsilon, dtype=float)
        lo = np.array([self._delta_at(float(v)) for v in np.ravel(e)])
        return None, Bound(shaped(lo, e), "lower", SRC_SUM_TEST)


def _applies(run) -> bool:
    return (isinstance(run.scheme, Poisson) and run.scheme.rate > 0
            and isinstance(run.mechanism, Gaussian)
            and isinstance(run.relation, (AddRemove, ZeroOut)) and run.relation.group == 1)


@run_accountant(
    "sum-test",
    applies=_applies,
    description="lower bounds for one record under Poisson sampling at tiny deltas (where the "
    "PLD's lower side is cut): threshold test on the sum of the outputs of a realised pair",
)
def _build(run) -> SumTestAnalysis:
    s = run.mechanism.shift(1)
    if not (math.isfinite(s) and 0 < s <= 1e3):
        raise NotApplicable(f"the sum test needs a Gaussian shift in (0, 1000], got {s}")
    return SumTestAnalysis(run.steps, run.scheme.rate, s)
