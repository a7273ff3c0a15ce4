"""Cheap certified bounds on a Poisson-subsampled run that need no composition: the total
variation distance of the run's products (:func:`hellinger_tv_bound`, to answer epsilon 0
without composing) and a floor on its Rényi DP from one step's optimistic PLDs
(:func:`product_renyi_floor`, for the RDP screening of :mod:`privamp.accounting.screening`).
"""

from __future__ import annotations

import math

import numpy as np

from ..numerics.chernoff import UNIT_ROUNDOFF
from ..pairs.combinators import MixturePair, SwappedPair
from ..pairs.loss_pair import LossPair
from ..pairs.mechanism_pairs import GaussianPair
from ..pld.grid import PLD, strip
from ..pld.moments import renyi_floor

__all__ = ["hellinger_tv_bound", "product_renyi_floor", "run_tv_bound", "swapped_pessimistic"]


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


def run_tv_bound(pairs: list[LossPair], steps: int) -> float:
    """An upper bound on the delta at epsilon 0 of ``steps`` steps whose dominating pairs are
    ``pairs``: steps times the largest total variation distance of one step's pairs (the
    total variation of a product is at most the sum of its factors'; TV(P, Q) = delta(0) of
    the pair, rounded up by a relative 1e-9 and an absolute 1e-14 for the float error of its
    two tails), and :func:`hellinger_tv_bound` (Poisson-subsampled Gaussian: about q sqrt(T)
    instead of q T).  ``PLDAnalysis.tv_bound``: q = 1e-7, sigma 0.3, T = 10, delta = 1e-5:
    epsilon 0 without the 0.76 s composition; q = 1e-7, sigma 1, T = 1e4: in 1 ms instead of
    a 30 ms composition (moved here from ``PLDAnalysis.tv_bound`` in session 12, unchanged).

    Args:
        pairs: one step's dominating pairs.
        steps: the number of steps T.

    Returns:
        The bound, at most 1.
    """
    tv = max(float(np.asarray(p.delta(0.0))) for p in pairs)
    return min(1.0, steps * (tv * (1.0 + 1e-9) + 1e-14), hellinger_tv_bound(pairs, steps))


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


def swapped_pessimistic(pld: PLD) -> PLD | None:
    """A pessimistic PLD of the swapped pair (Q, P) from a pessimistic PLD of (P, Q): the
    add direction of a run from its remove direction, with no composition of its own.

    Why it is sound.  For probability measures P, Q and a > 0, ``H_a(Q || P) = 1 - a + a
    H_{1/a}(P || Q)`` (sup_S Q(S) - a P(S), written over complements; the identity used by
    Zhu, Dong, Wang 2022, arXiv:2106.08567, for the two directions of a pair).  A pessimistic
    PLD bounds the profile at every real epsilon (:meth:`privamp.pld.grid.PLD.delta`; its
    composition needs that): ``H_b(P || Q) <= sum_i m_i (1 - b e^{-l_i})_+ + m_inf + s`` for all
    b > 0 (masses m_i at losses l_i, m_inf at +inf, slack s).  Put b = 1/a, a = e^eps, and
    ``M_P = sum m_i + m_inf``, ``M_Q = sum m_i e^{-l_i}``:

        H_a(Q || P) <= sum_{l_i <= -eps} m_i e^{-l_i} (1 - e^{eps + l_i})
                       + (1 - M_Q) + e^eps (M_P + s - 1),

    whose first term is the raw profile at eps of the grid PLD with masses ``m_i e^{-l_i}`` at
    the losses ``-l_i``.  So that PLD, with slack ``max(0, c1 + c2')``, ``c1 = 1 - M_Q``,
    ``c2 = M_P + s - 1`` and ``c2' = e^E c2`` if c2 >= 0 (E >= 0 its largest finite loss), else
    ``c2' = 0``, bounds the swapped profile at every eps <= E; above E its profile is its slack
    and the true one at most its value at E (profiles are nonincreasing).  (c1 and c2 nearly
    cancel: a pessimistic grid pair's excess P-mass, e.g. 6.6e-6 after 1e4 steps at q 1e-5,
    sigma 4, is matched by its excess Q-mass, leaving about (e^E - 1) c2.)  Floats: e^{-l}
    for |l| <= 700 has relative error <= (|l| + 2) u, sums of n nonnegative terms (n - 1) u;
    each rounded to the safe side (masses and M_P up, M_Q down).

    Args:
        pld: a pessimistic PLD of (P, Q).

    Returns:
        The pessimistic PLD of (Q, P), or None (an overflow, or allowances above 1e-3).

    Raises:
        ValueError: ``pld`` is not pessimistic.
    """
    if pld.kind != "pessimistic":
        raise ValueError(f"swapped_pessimistic needs a pessimistic PLD, got {pld.kind!r}")
    u = UNIT_ROUNDOFF
    m = pld.masses
    n = len(m)
    if n == 0:
        return None
    losses = (pld.offset + np.arange(n)) * pld.h
    top = float(np.max(np.abs(losses)))
    if top > 700.0:
        return None
    with np.errstate(over="ignore"):
        mq = m * np.exp(-losses)
    if not np.all(np.isfinite(mq)):
        return None
    m_q_lo = float(np.sum(mq)) * (1.0 - (n + top + 6.0) * u)
    masses = mq[::-1] * (1.0 + (top + 4.0) * u)
    m_p_up = (float(np.sum(m)) + pld.inf_mass) * (1.0 + (n + 4.0) * u)
    c1 = 1.0 - m_q_lo  # (Sterbenz: exact for M_Q in [1/2, 2]; else rounded, below)
    c2 = (m_p_up - 1.0) + pld.slack
    e_top = max(0.0, -pld.offset * pld.h)  # >= the largest finite loss of the swapped grid
    if c2 >= 0.0:  # c1 + e^eps c2 <= c1 + e^E c2 for every eps <= E
        c2 *= math.exp(e_top) * (1.0 + 8.0 * u)
    slack = max(0.0, (c1 + c2) + 4.0 * u * (abs(c1) + abs(c2)))
    if not (math.isfinite(slack) and slack <= 1e-3):
        return None
    return strip(PLD(pld.h, -(pld.offset + n - 1), masses, 0.0, "pessimistic", slack))
