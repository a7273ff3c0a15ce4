"""Sampling with replacement under substitution: a one-step privacy-profile bound that holds
for every pair of neighbouring datasets, turned into a dominating grid pair and composed.

Setting (docs/findings.md, "Sampling with replacement"): m draws with replacement from n
records, Gaussian sum, shift s = Delta / sigma (Delta = 2C bounds the distance between any
two records, so |v - v'|, |v - D_k|, |v' - D_k| <= Delta), J ~ Bin(m, 1/n)
copies of the differing record in a batch, b_j = P(J = j), eta = 1 - b_0.

Given the other draws D (joint convexity), both outputs put mass 1 - eta on the same N(0):
P_D = (1 - eta) N0 + eta P1, Q_D = (1 - eta) N0 + eta Q1.  For a >= 1, with
alpha = 1 + (a - 1) / eta and beta = a / alpha, Balle, Barthe, Gaboardi 2018
(arXiv:1807.01647), Thm 2 (advanced joint convexity, an identity of signed measures) and
convexity of H_alpha in its second argument give

    H_a(P_D || Q_D) = eta H_alpha(P1 || (1 - beta) N0 + beta Q1)
                    <= (1 - beta) eta H_alpha(P1 || N0) + beta eta H_alpha(P1 || Q1).

* eta H_alpha(P1 || N0) <= H_a(sum_j b_j N(j s) || N0): the mixture P1 has component means
  of norm <= j s, and the add/remove collinear worst case (Schuchardt et al. 2024,
  arXiv:2403.04867, App. H.2, extended in docs/findings.md) puts them at j s e; the identity
  above with Q1 = N0 turns eta H_alpha back into H_a of the one-sided pair.
* eta H_alpha(P1 || Q1) <= sum_{j >= 1} b_j H_alpha(N(j s) || N0): couple P1 and Q1 by the
  slots that draw the differing record (joint convexity); those components differ by
  j (v - v').

For a < 1, H_a(P || Q) = 1 - a + a H_{1/a}(Q || P) and (Q, P) is a neighbouring pair too.
Second bound, for every a > 0 (one step of the removal-then-addition triangle,
:mod:`.triangle`): H_a(P || Q) <= H_{a1}(remove) + a1 H_{a / a1}(add) for every a1 > 0,
(remove, add) the exact add/remove pairs; the smaller of the two is kept at each loss.
The resulting function bounds the profile of every neighbouring pair of one step; the
greatest convex minorant of its values on a loss grid is the profile of a grid pair that
dominates them all in both orders and for every eps (Zhu, Dong, Wang 2022, arXiv:2106.08567,
Def. 7; profile >= pointwise means tradeoff function <=, i.e. Blackwell dominance), so the
adaptive T-step run is dominated by its T-fold product (Dong, Roth, Su 2022, Thm 3.2; Zhu,
Dong, Wang 2022, Thm 10), composed with the PLD engine.  The full proof, step by step:
docs/findings.md, "Substitution: a one-step profile bound".
"""

from __future__ import annotations

import numpy as np

from ...pairs.loss_pair import LossPair
from ...pairs.mechanism_pairs import GaussianPair
from ...pld.grid import PLD
from ...pld.profiles import upper_profile_pld

__all__ = ["SRC_WR_SUBSTITUTION", "one_step_upper", "profile_pld"]


SRC_WR_SUBSTITUTION = (
    "with replacement, substitution: one-step profile bound given the other draws "
    "(Balle, Barthe, Gaboardi 2018 Thm 2 advanced joint convexity, arXiv:1807.01647; the "
    "add/remove collinear worst case, Schuchardt et al. 2024 App. H.2, arXiv:2403.04867; "
    "slot coupling for the substitution part; the smaller of it and the one-step "
    "removal-then-addition triangle; privamp, docs/findings.md), dominating grid "
    "pair of its convex minorant (Zhu, Dong, Wang 2022, arXiv:2106.08567), FFT composition"
)

_REL = 1e-9  # relative float allowance on every profile value (tails accurate to ~1e-15)
_ABS = 1e-16  # absolute allowance on 1 - a + a U(1/a) (a < 1)


def _revealed(b: np.ndarray, s: float, log_alpha: np.ndarray) -> np.ndarray:
    """sum_{j >= 1} b_j H_alpha(N(j s) || N(0)) at the given log alpha (>= 0)."""
    out = np.zeros_like(log_alpha)
    for j in range(1, len(b)):
        if b[j] > 0:
            out += b[j] * GaussianPair(j * s).delta(log_alpha)
    return out


def _upper_nonneg(one_sided: LossPair, b: np.ndarray, rho: float, s: float,
                  lp: np.ndarray) -> np.ndarray:
    """The bound U(a) at a = e^l, l >= 0 (module docstring), with the float allowance."""
    eta = 1.0 - float(b[0])
    # alpha = 1 + (a - 1) / eta, beta = a / alpha = eta / (1 - b0 / a), without overflow
    keep = -np.expm1(-lp) + eta * np.exp(-lp)  # 1 - b0 / a, in [eta, 1]
    beta = np.minimum(eta / keep, 1.0)
    log_alpha = np.maximum(lp + np.log(keep) - np.log(eta), 0.0)
    one = _delta_allowed(one_sided, lp)
    up = (1.0 - beta) * one + beta * (_revealed(b, s, log_alpha) + rho)
    return np.minimum(up * (1.0 + _REL) + 1e-300, 1.0)


def _mirror(l: np.ndarray, up: np.ndarray) -> np.ndarray:
    """The bound at the losses l from U at |l|: for l < 0 (a < 1), 1 - a + a U(1/a)
    (-expm1(l) = 1 - e^l without cancellation)."""
    return np.where(l < 0, np.minimum(-np.expm1(l) + np.exp(l) * up + _ABS, 1.0), up)


def one_step_upper(one_sided: LossPair, b: np.ndarray, rho: float, s: float,
                   losses: np.ndarray) -> np.ndarray:
    """Upper bound on H_{e^l}(M(x) || M(x')) of one step for all substitution neighbours, at
    the losses l (any real; module docstring).

    ``one_sided``: a pair whose ``delta(l)``, l >= 0, is >= that of
    (sum_j b_j N(j s), N(0)) with the untruncated count law; ``b``: P(J = j), j = 0..len - 1;
    ``rho``: P(J >= len(b)) (bounded by 1 in the substitution term)."""
    l = np.asarray(losses, dtype=float)
    return _mirror(l, _upper_nonneg(one_sided, b, rho, s, np.abs(l)))


def _delta_allowed(pair: LossPair, l: np.ndarray) -> np.ndarray:
    """``pair.delta(l)`` plus 1e-13 P(L > l): its tails are accurate to ~1e-15 relative."""
    return pair.delta(l) + 1e-13 * pair.tail(l, "P", True, True)


def _delta_up(pair: LossPair, l: np.ndarray) -> np.ndarray:
    """:func:`_delta_allowed` with the relative allowance, capped at 1."""
    return np.minimum(_delta_allowed(pair, l) * (1.0 + _REL) + 1e-300, 1.0)


def _one_step_triangle(remove: LossPair, add: LossPair, l: np.ndarray, h: float,
                       top: float, below: float = 0.05, max_splits: int = 512
                       ) -> np.ndarray:
    """min over splits l1 + l2 = l (l2 = k h in [-``below``, ``top`` + h], l1 on the grid
    ``l``) of H_{e^l1}(remove) + e^l1 H_{e^l2}(add), at the grid losses ``l`` (ascending,
    step h); every split is an upper bound on one step's H_{e^l} (module docstring).
    ``top``: where the add order's profile reaches 0 (larger l2 only raise the first term).
    At most about ``max_splits`` splits, evenly spaced (on fine grids, e.g. n >> m, the full
    set would cost (top + below) / h passes over the grid)."""
    x = _delta_up(remove, l)
    k = np.arange(-int(below / h), int(np.ceil(top / h)) + 2)
    k = k[:: max(1, -(-len(k) // max_splits))]  # any subset of splits is sound
    y = _delta_up(add, k * h)
    best = np.ones_like(l)  # (a split leaving the grid gives the trivial bound 1)
    el, n = np.exp(l), len(l)
    for kk, yk in zip(k.tolist(), y, strict=True):
        if abs(kk) >= n:
            continue
        dst, src = (slice(kk, n), slice(0, n - kk)) if kk >= 0 else (
            slice(0, n + kk), slice(-kk, n))  # l1 = l - k h at index j - k
        np.minimum(best[dst], x[src] + el[src] * yk, out=best[dst])
    return np.minimum(best * (1.0 + _REL) + 1e-300, 1.0)


def profile_pld(remove: LossPair, add: LossPair, b: np.ndarray, rho: float, s: float,
                h: float, tail: float, max_points: int = 80_001) -> PLD:
    """Pessimistic grid PLD dominating every substitution pair of one step: the greatest
    convex minorant of the smaller of the two bounds at the grid losses i h'
    (:func:`one_step_upper` with ``one_sided = remove``, and :func:`_one_step_triangle`),
    over a symmetric range [-L, L] with the first bound at e^L <= ``tail`` (at most
    L = 700; the rest of the profile becomes mass at +inf, which only raises it);
    h' = max(h, 2 L / max_points) (any step is sound: the connect-the-dots error is second
    order in it).  ``remove``: the add/remove pair of the removal order (its ``delta`` >=
    that of (sum_j b_j N(j s), N(0)) with the untruncated count law); ``add``: its swap."""
    def above(x: float) -> bool:
        return float(_upper_nonneg(remove, b, rho, s, np.array([x]))[0]) > tail

    lo, hi = 0.0, 1.0
    while hi < 700.0 and above(hi):
        lo, hi = hi, min(2.0 * hi, 700.0)
    for _ in range(30):  # the smallest such L, roughly (any L is sound)
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if above(mid) else (lo, mid)
    h = max(float(h), 2.0 * hi / (max_points - 1))
    n = int(np.ceil(hi / h))
    up = _upper_nonneg(remove, b, rho, s, np.arange(n + 1) * h)
    idx = np.arange(-n, n + 1)
    first = _mirror(idx * h, np.concatenate([up[:0:-1], up]))
    top = -float(np.log(b[0])) if b[0] > 0 else 1.0  # the add order's largest loss, -log b0
    tri = _one_step_triangle(remove, add, idx * h, h, top)
    return upper_profile_pld(idx, h, np.minimum(first, tri))
