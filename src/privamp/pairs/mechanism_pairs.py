"""Dominating pairs of the base mechanisms: Gaussian and Laplace location pairs."""

from __future__ import annotations

import numpy as np
from scipy import special

from ..numerics.logspace import log1mexp
from .loss_pair import LossPair, as_array

__all__ = [
    "GaussianPair",
    "LaplacePair",
]


class GaussianPair(LossPair):
    """P = N(s, 1), Q = N(0, 1): L ~ N(s^2/2, s^2) under P and N(-s^2/2, s^2) under Q."""

    def __init__(self, s: float) -> None:
        if not s > 0:
            raise ValueError(f"GaussianPair needs a shift s > 0, got {s}")
        self.s = float(s)

    def tail(self, l, dist, upper, strict):
        l = as_array(l)
        s = self.s
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            z = l / s + (-s / 2 if dist == "P" else s / 2)  # standardised: (l - mean)/s
        return special.ndtr(-z) if upper else special.ndtr(z)

    def delta(self, epsilon):
        eps = np.asarray(epsilon, dtype=float)
        s = self.s
        # delta = Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s), computed in log space
        # (Balle, Barthe, Gaboardi 2018, Thm 4; Balle & Wang 2018, Thm 8).
        la = special.log_ndtr(s / 2 - eps / s)
        lb = eps + special.log_ndtr(-s / 2 - eps / s)
        out = np.exp(la + log1mexp(np.minimum(lb - la, 0.0)))
        return np.maximum(out, 0.0)


class LaplacePair(LossPair):
    """P = Lap(e0, 1), Q = Lap(0, 1) (units of the scale b, e0 = Delta/b).

    L = |x| - |x - e0|: an atom at -e0 (x <= 0), an atom at +e0 (x >= e0), and
    L = 2x - e0 in between.
    """

    def __init__(self, e0: float) -> None:
        if not e0 > 0:
            raise ValueError(f"LaplacePair needs e0 > 0, got {e0}")
        self.e0 = float(e0)

    def tail(self, l, dist, upper, strict):
        l = as_array(l)
        e0 = self.e0
        t = np.clip((l + e0) / 2.0, 0.0, e0)
        if dist == "P":
            mid_up = 1.0 - 0.5 * np.exp(t - e0)
            mid_lo = 0.5 * np.exp(t - e0)
        else:
            mid_up = 0.5 * np.exp(-t)
            mid_lo = 1.0 - 0.5 * np.exp(-t)
        if upper:
            below, above = (l < -e0, l >= e0) if strict else (l <= -e0, l > e0)
            return np.where(below, 1.0, np.where(above, 0.0, mid_up))
        below, above = (l <= -e0, l > e0) if strict else (l < -e0, l >= e0)
        return np.where(below, 0.0, np.where(above, 1.0, mid_lo))

    def delta(self, epsilon):
        eps = np.asarray(epsilon, dtype=float)
        e0 = self.e0
        # Balle, Barthe, Gaboardi 2018, Thm 3: 1 - exp((eps - e0)/2) on [-e0, e0].
        mid = -np.expm1((np.minimum(eps, e0) - e0) / 2.0)
        low = -np.expm1(np.minimum(eps, 0.0))
        return np.where(eps >= e0, 0.0, np.where(eps < -e0, low, mid))

