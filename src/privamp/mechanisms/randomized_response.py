"""Randomized response on one bit."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validation import check_theta
from .base import Mechanism
from .pairs import DiscretePair, LossPair

__all__ = ["RandomizedResponse"]


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

    def _rdp(self, alpha, k):
        a = np.asarray(alpha, dtype=float)
        t = self.theta
        if t == 1.0:
            return np.full_like(a, np.inf)
        lt, lu = math.log(t), math.log1p(-t)
        return np.logaddexp(a * lt + (1 - a) * lu, a * lu + (1 - a) * lt) / (a - 1)

    def _delta(self, epsilon, k):
        eps = np.asarray(epsilon, dtype=float)
        t = self.theta
        with np.errstate(over="ignore"):
            return np.maximum(t - np.exp(eps) * (1.0 - t), 0.0)

    def pair(self, distance: int = 1) -> LossPair:
        t = self.theta
        return DiscretePair(np.array([t, 1 - t]), np.array([1 - t, t]))
