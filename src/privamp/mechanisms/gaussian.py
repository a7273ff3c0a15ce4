"""The Gaussian mechanism."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_positive, check_shift
from ..pairs.loss_pair import LossPair
from ..pairs.mechanism_pairs import GaussianPair
from .base import Mechanism

__all__ = [
    "Gaussian",
]

#: the smallest positive double (a subnormal)
SMALLEST_DOUBLE = float(np.nextafter(0.0, 1.0))


@dataclass(frozen=True, eq=True)
class Gaussian(Mechanism):
    """Adds N(0, sigma^2 I) to a query of l2-sensitivity ``sensitivity``.

    With per-example gradients clipped to norm C, use ``sensitivity=C`` under add/remove or
    zero-out and ``2C`` under substitution; ``Gaussian(sigma)`` then means noise multiplier
    sigma.

    * Rényi DP: alpha * (k Delta)^2 / (2 sigma^2) (Mironov 2017, Prop 7).
    * Profile: Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s), s = k Delta / sigma
      (Balle, Barthe, Gaboardi 2018, Thm 4; Balle & Wang 2018, Thm 8).
    * Dominating pair: N(k Delta, sigma^2) vs N(0, sigma^2).
    """

    sigma: float
    sensitivity: float = 1.0

    name = "gaussian"
    rdp_source = "Gaussian mechanism RDP, Mironov 2017, Prop 7"
    profile_source = "analytic Gaussian profile, Balle, Barthe, Gaboardi 2018, Thm 4"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        check_shift(self.sensitivity, self.sigma, "sigma")

    def shift(self, k: int = 1) -> float:
        """k * sensitivity / sigma: the mean shift of the dominating pair in noise units."""
        return k * self.sensitivity / self.sigma

    def rdp_kernel(self, alpha, k):
        """alpha s^2 / 2; where that underflows (s below ~1e-154) the true value is positive
        and below the smallest double, so the smallest double is returned (rounded up: a
        0 would claim identical outputs and convert to delta = 0, an under-report)."""
        s = self.shift(k)
        out = np.asarray(alpha, dtype=float) * s * s / 2.0
        return np.where(out > 0, out, SMALLEST_DOUBLE)

    def pair(self, distance: int = 1) -> LossPair:
        return GaussianPair(self.shift(distance))

