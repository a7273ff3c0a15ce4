"""The base-mechanism interface shared by Gaussian, Laplace and randomized response."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from .._validation import check_delta, check_epsilon, check_int, check_orders
from ..numerics.roots import bisect_monotone
from ..pairs.loss_pair import LossPair
from ..results import Bound

__all__ = [
    "Mechanism",
]


class Mechanism(ABC):
    """A randomised release of one query answer.

    Subclasses implement the plain-float kernels ``rdp_kernel``, ``delta_kernel`` and
    ``pair``; the public methods validate their inputs and wrap results in
    :class:`~privamp.Bound`.

    ``distance`` is the group distance k between the two datasets (white-box group privacy:
    the mechanism evaluated at sensitivity k times its sensitivity).
    """

    name: str = "mechanism"
    #: source of the closed forms, per quantity
    rdp_source: str = ""
    profile_source: str = ""

    # -- kernels (plain numbers, no validation) -------------------------------------------
    @abstractmethod
    def rdp_kernel(self, alpha: np.ndarray, k: int) -> np.ndarray:
        """Rényi divergence of order alpha (> 1, real) between the outputs at distance k.

        The plain-float kernel behind :meth:`rdp`: no validation, no :class:`Bound`; for
        theorem modules that evaluate it many times on checked orders.

        Args:
            alpha: orders > 1 (array).
            k: group distance >= 1.

        Returns:
            The exact Rényi divergences, same shape as ``alpha``.
        """

    def delta_kernel(self, epsilon: np.ndarray, k: int) -> np.ndarray:
        """Privacy profile at distance k (hockey-stick divergence of the dominating pair).

        The plain-float kernel behind :meth:`delta` (no validation, no :class:`Bound`).

        Args:
            epsilon: epsilons >= 0 (array).
            k: group distance >= 1.

        Returns:
            The exact hockey-stick divergences, same shape as ``epsilon``.
        """
        return self.pair(k).delta(epsilon)

    @abstractmethod
    def pair(self, distance: int = 1) -> LossPair:
        """The dominating pair (P, Q) of one release at group distance ``distance``."""

    def _epsilon(self, delta: np.ndarray, k: int) -> np.ndarray:
        """Smallest eps >= 0 with delta(eps) <= delta (by bisection; sound side)."""
        delta = np.asarray(delta, dtype=float)
        hi = np.ones_like(delta)
        for _ in range(60):
            bad = self.delta_kernel(hi, k) > delta
            if not bad.any():
                break
            hi = np.where(bad, hi * 2.0, hi)
        else:
            raise ValueError(
                f"no finite epsilon <= 2^60 meets delta={float(np.min(delta[bad])):.3g} for "
                f"{self} at distance {k}; delta must be larger")
        zero_ok = self.delta_kernel(np.zeros_like(delta), k) <= delta
        eps = bisect_monotone(lambda e: self.delta_kernel(e, k), delta, 0.0, hi, increasing=False)
        return np.where(zero_ok, 0.0, eps)

    # -- public, validated ------------------------------------------------------------------
    def rdp(self, alpha: float | np.ndarray, distance: int = 1) -> Bound:
        """Rényi DP epsilon at order(s) ``alpha`` > 1 (real), exact, at group distance k."""
        a = check_orders(alpha)
        k = check_int("distance", distance)
        return Bound(self.rdp_kernel(a, k), "exact", self.rdp_source)

    def delta(self, epsilon: float | np.ndarray, distance: int = 1) -> Bound:
        """Privacy profile delta(eps) (hockey-stick divergence), exact."""
        e = check_epsilon(epsilon)
        k = check_int("distance", distance)
        return Bound(self.delta_kernel(e, k), "exact", self.profile_source)

    def epsilon(self, delta: float | np.ndarray, distance: int = 1) -> Bound:
        """Smallest epsilon with delta(epsilon) <= delta; exact up to the bisection's last bit,
        which is rounded up."""
        d = check_delta(delta)
        k = check_int("distance", distance)
        return Bound(self._epsilon(d, k), "exact", self.profile_source + " (inverted)")

