"""Cheap certified bounds on a Poisson-subsampled run that need no composition: the total
variation distance of the run's products (:func:`hellinger_tv_bound`, to answer epsilon 0
without composing) and a floor on its Rényi DP from one step's optimistic PLDs
(:func:`product_renyi_floor`, for the RDP screening of :mod:`privamp.accounting.screening`).
"""

from __future__ import annotations

import math

import numpy as np

from ..pairs.combinators import MixturePair, SwappedPair
from ..pairs.loss_pair import LossPair
from ..pairs.mechanism_pairs import GaussianPair
from ..pld.grid import PLD
from ..pld.moments import renyi_floor

__all__ = ["hellinger_tv_bound", "product_renyi_floor"]


def hellinger_tv_bound(pairs: list[LossPair], steps: int) -> float:
    """An upper bound on the total variation distance of ``steps``-fold products of the
    Poisson-subsampled Gaussian pairs ``pairs`` (each ``(M, Q)`` or ``(Q, M)`` with
    ``M = w N(s, 1) + (1 - w) N(0, 1)``, ``Q = N(0, 1)``); ``inf`` for any other pair.

    The bound: ``sqrt(T chi2) / (1 + sqrt(1 - w))`` with ``chi2 = chi^2(M || Q) =
    w^2 (e^{s^2} - 1)`` (the chi-square divergence of a mixture with Q is w^2 times the
    base pair's, and chi^2(N(s, 1) || N(0, 1)) = e^{s^2} - 1).  Why: the Bhattacharyya
    coefficient BC = int sqrt(M Q) multiplies over products, and Le Cam's inequality gives
    TV(M^T, Q^T) <= sqrt(1 - BC^{2T}) <= sqrt(2 T (1 - BC)) (Bernoulli's inequality);
    2 (1 - BC) = int (sqrt M - sqrt Q)^2 = int (M - Q)^2 / (sqrt M + sqrt Q)^2, and
    M >= (1 - w) Q makes the denominator >= (1 + sqrt(1 - w))^2 Q, so 2 (1 - BC) <=
    chi2 / (1 + sqrt(1 - w))^2 (Tsybakov 2009, Introduction to Nonparametric Estimation,
    Lemma 2.3 and Sec. 2.4).  TV is symmetric, so both directions share it.  It grows like
    w sqrt(T) where the sum of the steps' distances grows like w T: at tiny rates it
    decides epsilon(delta) = 0 for long runs.  Rounded up by a relative 1e-11 (e^{s^2} - 1
    has relative error <= (1 + s^2) ulps, s^2 <= 700 here; the rest a few ulps).

    Args:
        pairs: one step's dominating pairs.
        steps: the number of steps T.

    Returns:
        The bound (``inf`` where it does not apply).
    """
    chi2 = 0.0
    sub = 2.0
    for pair in pairs:
        mix = pair.base if isinstance(pair, SwappedPair) else pair
        if not (isinstance(mix, MixturePair) and isinstance(mix.base, GaussianPair)):
            return math.inf
        s2 = mix.base.s * mix.base.s
        if s2 > 700.0:
            return math.inf
        chi2 = max(chi2, mix.w * mix.w * math.expm1(s2))
        sub = min(sub, 1.0 + math.sqrt(1.0 - mix.w))
    return math.sqrt(steps * chi2) / sub * (1.0 + 1e-11) + 1e-300


def product_renyi_floor(optimistic: list[PLD], steps: int, alpha: np.ndarray) -> np.ndarray:
    """Lower bounds on the Rényi DP at orders ``alpha`` of ``steps`` identical steps whose
    true pair (in each direction) dominates the one-step optimistic PLD of that direction in
    ``optimistic``: ``steps`` times the largest one-step :func:`~privamp.pld.moments.renyi_floor`.

    Why: each optimistic PLD belongs to a pair the step's true pair dominates, so its Rényi
    divergence is at most the true pair's (data processing); the Rényi divergence of a
    product of T identical pairs is exactly T times one's (Mironov 2017, arXiv:1702.07476,
    Prop. 1, additivity), and the run's RDP is at least that of either direction.  The one-step
    floor (a few hundred to a few thousand points) is cheaper than the composed run's, and
    tighter: the composition's truncations, coarsenings and the 1024-block Jensen step only
    lower the composed one.  Multiplied by T and rounded down by a relative 1e-12 (the floor's
    own float error is a few ulps of its log-sum-exp).

    Args:
        optimistic: one step's optimistic PLDs, one per direction.
        steps: the number of steps T (>= 1).
        alpha: the orders (> 1).

    Returns:
        The floors, shaped like ``np.atleast_1d(alpha)`` (0 where ``optimistic`` is empty).
    """
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    out = np.zeros(a.shape)
    for o in optimistic:
        out = np.maximum(out, renyi_floor(o, a))
    return out * (steps * (1.0 - 1e-12))
