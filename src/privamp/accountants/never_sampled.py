"""The never-sampled bound: under Poisson sampling a record takes part in no step with
probability ``(1 - q)^T``, so the run's privacy profile is at most ``1 - (1 - q)^T`` at
every epsilon (run accountant "never-sampled").

*Why it holds.*  Couple the runs on D and D' through the sampler: each step's inclusion of
the differing record(s) is drawn independently of the data (Poisson, or cyclic Poisson on
the record's eligible steps).  On the event N that no differing record is ever drawn, the
two runs release the same law (every query, adaptive or not, sees the same batches), so
``M(D) = (1 - eta) R + eta A`` and ``M(D') = (1 - eta) R + eta A'`` with the same R and
``eta = P(not N)``.  Balle, Barthe, Gaboardi 2018 (arXiv:1807.01647, Thm 2, advanced joint
convexity) then give ``H_{e^eps}(M(D) || M(D')) <= eta * H_{e^eps'}(A || A') <= eta`` for
every eps >= 0, in both orders.  With a group of K records (each drawn independently),
``eta = 1 - (1 - q)^{K T}``; under substitution the substituted slot is drawn with
probability q in each step.  The bound holds for every mechanism (one-release or matrix).

It is an upper bound only, and it wins where the mechanism leaks almost everything whenever
the record is drawn (tiny noise) but the record is rarely drawn: e.g. sigma 0.01, q 0.0015,
9 steps: eta = 0.0134, so epsilon(delta = 0.027) = 0 where the converted Rényi bound gave
5272 (fuzz, issue 27).
"""

from __future__ import annotations

import math

import numpy as np

from ..numerics.arrays import shaped
from ..results import Bound
from ..sampling.cyclic import CyclicPoisson
from ..sampling.relations import AddRemove, Substitution, ZeroOut
from ..sampling.schemes import Poisson
from .registry import BoundPair, RunAnalysis, run_accountant

__all__ = [
    "NeverSampledAnalysis",
    "never_sampled_probability",
    "SRC_NEVER_SAMPLED",
]

SRC_NEVER_SAMPLED = ("never-sampled coupling: delta(eps) <= P(a differing record is ever "
                     "drawn) = 1 - (1 - q)^(K T) (Balle, Barthe, Gaboardi 2018, Thm 2, "
                     "advanced joint convexity)")


def never_sampled_probability(rate: float, draws: int) -> float:
    """``1 - (1 - rate)^draws`` rounded up (a certified upper bound on the probability that
    at least one of ``draws`` independent Bernoulli(rate) trials succeeds).

    Args:
        rate: the inclusion probability of one draw, in [0, 1].
        draws: the number of independent draws (>= 0).

    Returns:
        The probability, rounded up by a few ulps, capped at 1.
    """
    if rate >= 1.0 and draws > 0:
        return 1.0
    value = -math.expm1(draws * math.log1p(-rate))
    # log1p, the product and expm1 each err by <= 1 ulp relative: 8 ulps cover them
    return min(1.0, value * (1.0 + 8 * 2.0 ** -52) + 5e-324)


class NeverSampledAnalysis(RunAnalysis):
    """delta(eps) <= eta for every eps; epsilon(delta) = 0 where delta >= eta (the module
    docstring's coupling)."""

    def __init__(self, eta: float) -> None:
        self.eta = float(eta)

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        d = np.asarray(delta, dtype=float)
        up = np.where(d >= self.eta, 0.0, np.inf)
        if not np.any(up == 0.0):
            return None, None
        return Bound(shaped(up, d), "upper", SRC_NEVER_SAMPLED), None

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        e = np.asarray(epsilon, dtype=float)
        return Bound(shaped(np.full(e.shape, self.eta), e), "upper", SRC_NEVER_SAMPLED), None


def _draws(run) -> int:
    steps = int(run.steps)
    if isinstance(run.scheme, CyclicPoisson):
        steps = run.scheme.rounds(steps)
    return run.relation.group * steps


def _applies(run) -> bool:
    return (isinstance(run.scheme, (Poisson, CyclicPoisson)) and 0.0 < run.scheme.rate
            and isinstance(run.relation, (AddRemove, ZeroOut, Substitution)))


@run_accountant(
    "never-sampled",
    applies=_applies,
    description="Poisson sampling: delta(eps) <= P(the record is ever drawn) = "
    "1 - (1 - q)^(K T) at every eps (a trivial upper bound that wins at tiny noise and "
    "rarely drawn records)",
)
def _build(run) -> NeverSampledAnalysis:
    return NeverSampledAnalysis(never_sampled_probability(run.scheme.rate, _draws(run)))
