"""Poisson sampling at rate 1: every record is in every batch -- the same sampler as
deterministic batches of the whole dataset, Chua et al. 2024's ABLQ_D with one batch per
epoch -- so the run is the unsampled Gaussian mechanism released ``T`` times, in closed
form and *exact* (run accountant "full-batch").

*Why it is exact.*  At rate 1 the batch is the whole dataset under both neighbours, whatever
the relation (add/remove or zero-out): the differing record(s) take part in every step.
Conditioned on the queries, each release is the Gaussian mechanism at the relation's
sensitivity, so the run is dominated by ``T`` Gaussian pairs at shift ``K c / sigma`` (a
group of K records moves a sum of clipped terms by at most ``K c``), whose product is one
Gaussian pair at shift ``K c sqrt(T) / sigma`` (Balle & Wang 2018, arXiv:1805.06530, Thm 8;
Dong, Roth, Su 2022, Gaussian DP, Cor. 2).  The adversary's queries that put every one of
the K records' terms at the clipping norm in one fixed direction realise that pair, so the
profile is attained: upper and lower bounds coincide (the same closed form as Chua et al.
2024, arXiv:2403.17673, Prop 3.1, for deterministic batches).  The two sides are evaluated
with outward rounding (upper rounded up, lower down: a few ulps apart), so each is a
certified bound and not only a nearest float.

The Poisson PLD accountant answers the same runs by composing the pair numerically
(a certified interval, wide at large shifts: sigma 300, T 1e7, delta 1e-8 gave [113.63,
114.21] around the exact 113.91); this one gives the exact number in microseconds.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import NotApplicable
from ...mechanisms.gaussian import Gaussian
from ...numerics.arrays import shaped
from ...results import Bound
from ...sampling.relations import AddRemove, ZeroOut
from ...sampling.schemes import Poisson
from ..registry import BoundPair, RunAnalysis, run_accountant
from .deterministic import gauss_delta, gauss_epsilon

__all__ = ["FullBatchAnalysis", "SRC_FULL_BATCH", "full_batch_shift"]

SRC_FULL_BATCH = ("Poisson rate 1 (every record in every batch): the Gaussian mechanism "
                  "composed T times, one Gaussian at shift K c sqrt(T) / sigma (Balle & Wang "
                  "2018, Thm 8), attained")


def full_batch_shift(sigma: float, steps: int, group: int = 1, sensitivity: float = 1.0
                     ) -> float:
    """The whole run's Gaussian shift ``group * sensitivity * sqrt(steps) / sigma``.

    Args:
        sigma: the noise multiplier (> 0).
        steps: the number of releases (>= 1).
        group: the records that differ (>= 1).
        sensitivity: one record's clipping norm (> 0).

    Returns:
        The shift in noise units.

    Raises:
        NotApplicable: the shift is not finite and positive.
    """
    s = group * sensitivity * math.sqrt(steps) / sigma
    if not (math.isfinite(s) and s > 0):
        raise NotApplicable(f"the full-batch Gaussian shift must be finite and > 0, got {s} "
                            f"(sigma {sigma}, steps {steps}, group {group})")
    return s


class FullBatchAnalysis(RunAnalysis):
    """The run is one Gaussian pair at shift ``s``, realised: the upper side rounded up, the
    lower side rounded down (the module docstring).

    Args:
        s: the whole run's Gaussian shift (noise units, > 0).
    """

    def __init__(self, s: float) -> None:
        self.s = float(s)

    def _sides(self, x: np.ndarray, f, tag: str) -> BoundPair:
        flat = np.ravel(x)
        return (Bound(shaped(f(flat, self.s, "upper"), x), "upper", SRC_FULL_BATCH + tag),
                Bound(shaped(f(flat, self.s, "lower"), x), "lower", SRC_FULL_BATCH + tag))

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._sides(np.asarray(delta, dtype=float), gauss_epsilon, " (inverted)")

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._sides(np.asarray(epsilon, dtype=float), gauss_delta, "")


def _applies(run) -> bool:
    return (type(run.scheme) is Poisson and run.scheme.rate == 1.0
            and isinstance(run.mechanism, Gaussian)
            and isinstance(run.relation, (AddRemove, ZeroOut)))


@run_accountant(
    "full-batch",
    applies=_applies,
    description="Poisson sampling at rate 1 with a Gaussian: the unsampled mechanism "
    "composed T times, one Gaussian in closed form (attained: upper = lower up to "
    "rounding)",
)
def _build(run) -> FullBatchAnalysis:
    mech = run.mechanism
    return FullBatchAnalysis(full_batch_shift(mech.sigma, int(run.steps), run.relation.group,
                                              mech.sensitivity))
