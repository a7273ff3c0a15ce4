"""Randomized response on one bit."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validation import check_delta, check_theta
from ..pairs.discrete import DiscretePair
from ..pairs.loss_pair import LossPair
from .base import Mechanism

__all__ = [
    "RandomizedResponse",
]


@dataclass(frozen=True, eq=True)
class RandomizedResponse(Mechanism):
    """Reports a binary query answer f(x) truthfully with probability ``theta`` in (1/2, 1].

    The output law is Bern(theta) or Bern(1 - theta) whatever the datasets, so the group
    distance does not change it (white-box group privacy of RR is the mechanism itself; this is
    the setting of Schuchardt et al. 2024, Thm 3.7 and G.1).

    * Rényi DP: 1/(alpha-1) log(theta^alpha (1-theta)^(1-alpha) + (1-theta)^alpha theta^(1-alpha)).
    * Profile: [theta - e^eps (1 - theta)]_+ (Balle, Barthe, Gaboardi 2018, Sec. 5).
    * Dominating pair: Bern(theta) vs Bern(1 - theta).
    """

    theta: float

    name = "randomized-response"
    rdp_source = "randomized response RDP (closed form of D_alpha(Bern(theta)||Bern(1-theta)))"
    profile_source = "randomized response profile, Balle, Barthe, Gaboardi 2018, Sec. 5"

    def __post_init__(self) -> None:
        object.__setattr__(self, "theta", check_theta(self.theta))

    def epsilon0(self) -> float:
        """log(theta / (1 - theta)), the pure-DP epsilon (inf for theta = 1)."""
        t = self.theta
        return math.inf if t == 1.0 else math.log(t) - math.log1p(-t)

    def _no_randomisation(self, what: str) -> ValueError:
        return ValueError(
            f"theta=1 (randomized response that always tells the truth) has delta(eps) = 1 "
            f"for every epsilon and infinite Rényi divergence: {what}; theta must be in "
            f"(1/2, 1) for a finite value")

    def rdp(self, alpha, distance: int = 1):
        """Rényi DP epsilon at order(s) alpha > 1, exact; ValueError for theta = 1 (infinite)."""
        if self.theta == 1.0:
            raise self._no_randomisation("no finite Rényi DP epsilon exists")
        return super().rdp(alpha, distance)

    def epsilon(self, delta, distance: int = 1):
        """Smallest epsilon with delta(epsilon) <= delta, exact up to the bisection's last bit
        (rounded up); ValueError for theta = 1, where no finite epsilon exists for delta < 1."""
        if self.theta == 1.0:
            check_delta(delta)
            raise self._no_randomisation("no finite epsilon exists for any delta < 1")
        return super().epsilon(delta, distance)

    def rdp_kernel(self, alpha, k):
        a = np.asarray(alpha, dtype=float)
        t = self.theta
        if t == 1.0:
            return np.full_like(a, np.inf)
        lt, lu = math.log(t), math.log1p(-t)
        return np.logaddexp(a * lt + (1 - a) * lu, a * lu + (1 - a) * lt) / (a - 1)

    def delta_kernel(self, epsilon, k):
        eps = np.asarray(epsilon, dtype=float)
        t = self.theta
        if t == 1.0:  # no randomisation: delta(eps) = 1 for every eps (no inf * 0)
            return np.ones_like(eps)
        with np.errstate(over="ignore"):
            return np.maximum(t - np.exp(eps) * (1.0 - t), 0.0)

    def pair(self, distance: int = 1) -> LossPair:
        t = self.theta
        return DiscretePair(np.array([t, 1 - t]), np.array([1 - t, t]))

