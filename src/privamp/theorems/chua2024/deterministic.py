"""Deterministic batches (ABLQ_D, Chua et al. 2024, Prop 3.1): one Gaussian per epoch.

Each record is in at most one batch per epoch, so E epochs of a record that trains are E
releases of the Gaussian mechanism: the tightly dominating pair is (N(s sqrt(E), 1), N(0, 1))
and ``delta_D(eps)`` is the closed form of Prop 3.1 (Balle & Wang 2018, Thm 8) -- *exact*.
The same Gaussian curve is the upper bound of shuffled batches (see
:mod:`privamp.theorems.chua2024.accountants`).

Units: ``s = sensitivity / sigma``; the kernels :func:`gauss_delta` / :func:`gauss_epsilon`
take the total shift of the run.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..._validation import check_delta, check_epsilon, check_int, check_positive
from ...accountants.grid import auto_grid
from ...numerics.arrays import shaped
from ...numerics.logspace import log1mexp
from ...numerics.roots import bisect_monotone
from ...numerics.special import GAUSSIAN_PROFILE_RTOL, gaussian_profile
from ...pairs.mechanism_pairs import GaussianPair
from ...pld.discretise import discretise
from ...pld.grid import zero_pld
from ...pld.two_sided import TwoSidedPLD
from ...results import Bound
from ..registry import BoundPair, RunAnalysis

__all__ = [
    "GaussianRunAnalysis",
    "SRC_DET",
    "deterministic_delta",
    "deterministic_epsilon",
    "deterministic_shift",
    "group_epoch_square",
    "gauss_delta",
    "gauss_log_delta",
    "gauss_epsilon",
]


SRC_DET = "Chua et al. 2024, Prop 3.1 (deterministic batches; Balle & Wang 2018, Thm 8)"


def group_epoch_square(group: int, batch_size: int, dataset_size: int | None = None,
                       drop_last: bool = False) -> float:
    """Largest squared norm (in units of the sensitivity) by which a group of ``group``
    records moves one epoch's batch sums, over placements of the group in the batches.

    Batches hold at most ``b = batch_size`` records, so the largest sum of squares of the
    group's counts per batch is reached by filling batches: ``q b^2 + r^2`` for
    ``group = q b + r`` (convexity).  With ``dataset_size = n`` not a multiple of b there are
    ``floor(n / b)`` full batches and a short one of ``n mod b`` records (``drop_last=False``)
    or ``n mod b`` records out of the epoch (``drop_last=True``); group members beyond the
    full batches go to the short batch or sit out.  Attained (all gradients aligned), so
    exact per epoch.  ``dataset_size=None``: as many full batches as needed.

    Args:
        group: number of records that differ (>= 1).
        batch_size: records per full batch.
        dataset_size: records in the data set, or None.
        drop_last: PyTorch's convention for the last incomplete batch.

    Returns:
        The squared norm per epoch (1.0 for a single record).
    """
    k, b = int(group), int(batch_size)
    if k <= b:
        return float(k) ** 2
    if dataset_size is not None:
        full, r0 = divmod(int(dataset_size), b)
        if k > full * b:
            extra = min(k - full * b, 0 if drop_last else r0)
            return full * float(b) ** 2 + float(extra) ** 2
    q, r = divmod(k, b)
    return q * float(b) ** 2 + float(r) ** 2


def deterministic_shift(sigma: float, epochs: int = 1, sensitivity: float = 1.0,
                        group: int = 1, batch_size: int | None = None) -> float:
    """Mean shift (noise units) of the tightly dominating Gaussian pair of ABLQ_D.

    One record: ``sqrt(E) * sensitivity / sigma`` (Chua et al. 2024, Sec. 3).  A group of K
    records placed adversarially in batches of size b (q = K // b full batches, r = K % b in
    one more) moves the batch sums by a vector of norm ``sqrt(q b^2 + r^2) * sensitivity``
    per epoch, attained when all gradients align; b = None means K fits in one batch.
    """
    per_epoch_sq = (float(group) ** 2 if batch_size is None
                    else group_epoch_square(group, batch_size))
    return math.sqrt(epochs * per_epoch_sq) * sensitivity / sigma


def gauss_log_delta(eps: np.ndarray, s: float) -> np.ndarray:
    """log of the Gaussian privacy profile Phi(a) - e^eps Phi(b), a = s/2 - eps/s,
    b = -s/2 - eps/s (Prop 3.1), without underflow; within a relative 1e-12 of the profile
    where it is above 1e-300 (:func:`~privamp.numerics.special.gaussian_profile`).

    Where a < 0 (the tail), e^eps phi(b) = phi(a) gives Phi(a) - e^eps Phi(b) =
    e^{-a^2/2} (erfcx(-a/sqrt 2) - erfcx(-b/sqrt 2)) / 2, a difference of two moderate
    numbers (erfcx decreasing); elsewhere Phi(a) >= 1/2 and the direct form in log space is
    accurate.

    Args:
        eps: epsilons (array).
        s: total shift of the Gaussian pair in noise units (> 0).

    Returns:
        log delta (-inf where the profile is 0).
    """
    eps = np.asarray(eps, dtype=float)
    a, b = s / 2 - eps / s, -s / 2 - eps / s
    la = special.log_ndtr(a)
    lb = eps + special.log_ndtr(b)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        direct = la + log1mexp(np.minimum(lb - la, 0.0))
        r = math.sqrt(0.5)
        diff = special.erfcx(-a * r) - special.erfcx(-b * r)
        tail = -0.5 * a * a + np.log(0.5 * np.maximum(diff, 0.0))
        out = np.where(a < 0, tail, direct)
        # the float forms above cancel at small shifts (1e-5 relative at s = 1e-10): above
        # 1e-300 take the log of :func:`gaussian_profile` (1e-12 relative) instead
        d = gaussian_profile(eps, s)
        out = np.where(d > 1e-300, np.log(np.maximum(d, 1e-300)), out)
    return np.where(np.isnan(out), -np.inf, out)


def gauss_delta(eps: np.ndarray, s: float, side: str = "upper") -> np.ndarray:
    """Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s) (Prop 3.1), by
    :func:`~privamp.numerics.special.gaussian_profile` (relative error below
    ``GAUSSIAN_PROFILE_RTOL`` = 1e-12; the float log-space form erred by up to 1e-5 relative
    at s = 1e-10, 1e-8 at s = 1e-6), rounded to ``side`` by that allowance.

    Args:
        eps: epsilons (array).
        s: total shift of the Gaussian pair in noise units (> 0).
        side: "upper" (never below the profile), "lower" (never above it) or "nearest"
            (unrounded: the "exact" answers).

    Returns:
        The Gaussian privacy profile at ``eps``, rounded to ``side``.
    """
    d = gaussian_profile(eps, s)
    if side == "nearest":
        return d
    if side == "lower":
        return d * (1.0 - GAUSSIAN_PROFILE_RTOL)
    return np.minimum(d * (1.0 + GAUSSIAN_PROFILE_RTOL), 1.0)


def gauss_epsilon(delta: np.ndarray, s: float, side: str = "upper") -> np.ndarray:
    """Epsilon of the Gaussian profile at ``delta`` by bisection on :func:`gauss_delta`:
    ``side="upper"``: the smallest eps >= 0 with the upper-rounded profile <= delta (so the
    true epsilon is at most it); ``side="lower"``: an eps where the lower-rounded profile
    still exceeds delta (so the true epsilon is above it), or 0.

    Args:
        delta: deltas in (0, 1) (array).
        s: total shift of the Gaussian pair in noise units (> 0).
        side: "upper", "lower" or "nearest" (the unrounded profile inverted as "upper").

    Returns:
        Epsilons, rounded to ``side``.
    """
    delta = np.asarray(delta, dtype=float)
    hi = np.full(delta.shape, max(1.0, s * s))
    for _ in range(200):
        bad = gauss_delta(hi, s, side) > delta
        if not bad.any():
            break
        hi = np.where(bad, hi * 2.0, hi)
    eps = bisect_monotone(lambda e: gauss_delta(e, s, side), delta, 0.0, hi, increasing=False,
                          side="lo" if side == "lower" else "hi")
    return np.where(gauss_delta(np.zeros_like(delta), s, side) <= delta, 0.0, eps)


def deterministic_delta(epsilon, sigma: float, epochs: int = 1,
                        sensitivity: float = 1.0) -> Bound:
    """Exact delta_D(eps) of ABLQ_D over ``epochs`` epochs (Chua et al. 2024, Prop 3.1).

    Args:
        epsilon: epsilon(s) >= 0.
        sigma: noise multiplier (> 0).
        epochs: number of epochs (>= 1).
        sensitivity: clipping norm (> 0).

    Returns:
        An exact Bound.

    Raises:
        ValueError: a parameter out of range.
    """
    e = check_epsilon(epsilon)
    s = deterministic_shift(check_positive("sigma", sigma), check_int("epochs", epochs),
                            check_positive("sensitivity", sensitivity))
    return Bound(shaped(gauss_delta(e, s, "nearest"), epsilon), "exact", SRC_DET)


def deterministic_epsilon(delta, sigma: float, epochs: int = 1,
                          sensitivity: float = 1.0) -> Bound:
    """Exact eps_D(delta) of ABLQ_D (Prop 3.1 inverted; last bit rounded up).

    Args:
        delta: delta(s) in (0, 1).
        sigma: noise multiplier (> 0).
        epochs: number of epochs (>= 1).
        sensitivity: clipping norm (> 0).

    Returns:
        An exact Bound.

    Raises:
        ValueError: a parameter out of range.
    """
    d = check_delta(delta)
    s = deterministic_shift(check_positive("sigma", sigma), check_int("epochs", epochs),
                            check_positive("sensitivity", sensitivity))
    return Bound(shaped(gauss_epsilon(d, s, "nearest"), delta), "exact",
                 SRC_DET + " (inverted)")


class GaussianRunAnalysis(RunAnalysis):
    """A run whose profile lies between the Gaussian mechanism's at shift ``s_lo`` (realised
    by a pair of neighbours; None: no lower side) and at ``s_up`` (equal: exact): the
    deterministic batches of Prop 3.1, unamplified matrix mechanisms, ...

    Args:
        s_up: the dominating Gaussian's shift (noise units).
        s_lo: the realised Gaussian's shift, or None.
        up_source, lo_source: the sources of the two sides (``lo_source`` unused when exact).
        mark_inverted: append " (inverted)" to the sources of epsilon answers.
    """

    def __init__(self, s_up: float, s_lo: float | None, up_source: str,
                 lo_source: str = "", mark_inverted: bool = False) -> None:
        self.s_up, self.s_lo = s_up, s_lo
        self.up_source, self.lo_source, self.mark_inverted = up_source, lo_source, mark_inverted

    def _pair(self, x: np.ndarray, which: str) -> BoundPair:
        f = gauss_epsilon if which == "epsilon" else gauss_delta
        tag = " (inverted)" if self.mark_inverted and which == "epsilon" else ""
        exact = self.s_lo == self.s_up
        up = Bound(shaped(f(np.ravel(x), self.s_up, "nearest" if exact else "upper"), x),
                   "exact" if exact else "upper", self.up_source + tag)
        if exact:
            return up, up
        if self.s_lo is None:
            return up, None
        return up, Bound(shaped(f(np.ravel(x), self.s_lo, "lower"), x), "lower",
                         self.lo_source + tag)

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._pair(delta, "epsilon")

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._pair(epsilon, "delta")

    def grid_step(self) -> float:
        """The grid step this run would pick by itself (the dominating Gaussian's)."""
        return auto_grid(GaussianPair(self.s_up), 1)

    def pld(self, h: float | None = None) -> TwoSidedPLD:
        """The whole run's PLD (one symmetric direction): pessimistic and optimistic
        discretisations of the Gaussian pairs at ``s_up`` and ``s_lo`` (no lower side: the
        zero PLD)."""
        h = self.grid_step() if h is None else float(h)
        p, _ = discretise(GaussianPair(self.s_up), h, optimistic=False)
        if self.s_lo is None:
            return TwoSidedPLD([(p, zero_pld(h))])
        _, o = discretise(GaussianPair(self.s_lo), h, pessimistic=False)
        return TwoSidedPLD([(p, o)])
