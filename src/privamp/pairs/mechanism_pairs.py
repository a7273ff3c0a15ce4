"""Dominating pairs of the base mechanisms: Gaussian and Laplace location pairs."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..numerics.logspace import log1mexp
from ..numerics.special import gaussian_profile
from .loss_pair import LossPair, as_array

__all__ = [
    "GaussianPair",
    "LaplacePair",
    "SMALL_SHIFT",
    "small_shift_delta",
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

    def tail_and_complement(self, l, dist, upper, strict):
        """Both tails from about one ``ndtr`` pass (issue 28: half the special-function work
        of a discretisation), with the values of :meth:`tail`: the smaller, ``Phi(-|z|)``,
        directly, the other as ``1 - Phi(-|z|)`` where |z| >= 1 -- which is how scipy
        computes ``ndtr(|z|)`` there (``1 - erfc(|z| / sqrt 2) / 2``: the same float) --
        and by ``ndtr(|z|)`` itself where |z| < 1 (``0.5 + 0.5 erf`` there), so the
        accuracy assumed of the tails is unchanged."""
        l = as_array(l)
        if l.ndim == 0:
            return self.tail(l, dist, upper, strict), self.tail(l, dist, not upper, not strict)
        s = self.s
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            z = l / s
            z += -s / 2 if dist == "P" else s / 2
        az = np.abs(z)
        small = np.negative(az)
        special.ndtr(small, out=small)  # Phi(-|z|)
        big = np.subtract(1.0, small)
        mid = az < 1.0
        if mid.any():
            big[mid] = special.ndtr(az[mid])
        pos = z > 0  # the upper tail Phi(-z) is the smaller one
        up = np.where(pos, small, big)
        np.copyto(small, big, where=pos)  # (now the lower tail)
        return (up, small) if upper else (small, up)

    def delta(self, epsilon):
        """delta = Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s) (Balle, Barthe, Gaboardi 2018,
        Thm 4; Balle & Wang 2018, Thm 8), within a relative ``GAUSSIAN_PROFILE_RTOL`` (1e-12)
        by :func:`~privamp.numerics.special.gaussian_profile` (the former float form here
        erred by up to 2e-8 relative at s ~ 3e-4, z ~ 37, through cancellation)."""
        return gaussian_profile(np.asarray(epsilon, dtype=float), self.s)


#: below this shift the log-space profile loses digits (its two logs differ by ~ s z, each
#: rounded to ~ u z^2): :func:`small_shift_delta` is used instead (checked against mpmath:
#: relative error ~1e-10 at s = 3e-4, where the log-space form also errs by ~2e-9)
SMALL_SHIFT = 3e-4


def small_shift_delta(eps: np.ndarray, s: float) -> np.ndarray:
    """The Gaussian profile for a small shift s, without cancellation.

    With a = s/2 - eps/s and b = a - s, delta = (Phi(a) - Phi(b)) - expm1(eps) Phi(b), and
    Phi(a) - Phi(b) = int_{-s/2}^{s/2} phi(m + u) du (m = -eps/s)
    = phi(m) int e^{-m u} e^{-u^2/2} du, where e^{-u^2/2} lies in [1 - s^2/8, 1]:
    = phi(eps/s) * s * sinh(eps/2) / (eps/2) * (1 - theta s^2 / 8), theta in [0, 1]
    (taken at theta = 1/3, relative error <= s^2 / 12: below 1e-8 for s <= 3e-4, below
    the rounding for s <= 1e-8; the final subtraction loses ~log10(z^2) digits in the tail,
    z = eps / s).  Valid for every s > 0 down to the smallest double: no
    s^2 is formed outside the correction factor.

    Args:
        eps: epsilons >= 0.
        s: the shift, > 0.

    Returns:
        delta(eps), same shape as ``eps``.
    """
    eps = np.asarray(eps, dtype=float)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        z = eps / s  # >= 0, may be inf
        h = np.maximum(eps / 2.0, 1e-300)
        # log(sinh(h) / h), without overflow: h + log(1 - e^{-2h}) - log(2h)
        log_sinhc = np.where(h < 1.0, np.log(np.sinh(h) / h),
                             h + log1mexp(-2.0 * h) - np.log(2.0 * h))
        log_diff = (math.log(s) - 0.5 * math.log(2.0 * math.pi) - 0.5 * z * z
                    + log_sinhc + math.log1p(-s * s / 24.0))
        diff = np.exp(np.where(np.isfinite(z), log_diff, -np.inf))
        tail_b = special.ndtr(-s / 2 - z)
        out = diff - np.where(tail_b > 0, np.expm1(eps) * tail_b, 0.0)
    return out


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

    def support(self) -> tuple[float, float]:
        """[-e0, e0]: the loss is bounded, its atoms at the ends."""
        return -self.e0, self.e0

    def delta(self, epsilon):
        eps = np.asarray(epsilon, dtype=float)
        e0 = self.e0
        # Balle, Barthe, Gaboardi 2018, Thm 3: 1 - exp((eps - e0)/2) on [-e0, e0].
        mid = -np.expm1((np.minimum(eps, e0) - e0) / 2.0)
        low = -np.expm1(np.minimum(eps, 0.0))
        return np.where(eps >= e0, 0.0, np.where(eps < -e0, low, mid))

