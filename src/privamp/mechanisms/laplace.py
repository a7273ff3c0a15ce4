"""The Laplace mechanism."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_positive, check_shift
from ..pairs.loss_pair import LossPair
from ..pairs.mechanism_pairs import LaplacePair
from .base import Mechanism

__all__ = [
    "Laplace",
]


@dataclass(frozen=True, eq=True)
class Laplace(Mechanism):
    """Adds Lap(0, scale) noise to a query of l1-sensitivity ``sensitivity``.

    * Rényi DP, e0 = k Delta / b: 1/(alpha-1) log(alpha/(2alpha-1) e^{(alpha-1) e0}
      + (alpha-1)/(2alpha-1) e^{-alpha e0}) (Mironov 2017, Table 2).
    * Profile: 1 - exp((eps - e0)/2) for eps <= e0, else 0 (Balle, Barthe, Gaboardi 2018, Thm 3).
    * Dominating pair: Lap(k Delta, b) vs Lap(0, b).
    """

    scale: float
    sensitivity: float = 1.0

    name = "laplace"
    rdp_source = "Laplace mechanism RDP, Mironov 2017, Table 2"
    profile_source = "Laplace profile, Balle, Barthe, Gaboardi 2018, Thm 3"

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        check_shift(self.sensitivity, self.scale, "scale")

    def epsilon0(self, k: int = 1) -> float:
        """k * sensitivity / scale: the pure-DP epsilon at distance k."""
        return k * self.sensitivity / self.scale

    def rdp_kernel(self, alpha, k):
        a = np.asarray(alpha, dtype=float)
        e0 = self.epsilon0(k)
        t1 = np.log(a / (2 * a - 1)) + (a - 1) * e0
        t2 = np.log((a - 1) / (2 * a - 1)) - a * e0
        return np.logaddexp(t1, t2) / (a - 1)

    def pair(self, distance: int = 1) -> LossPair:
        return LaplacePair(self.epsilon0(distance))

