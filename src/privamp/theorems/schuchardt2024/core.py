"""Rényi-DP amplification by subsampling: the optimal-transport framework of Schuchardt et al.
2024 (ICML, "Unified Mechanism-Specific Amplification by Subsampling and Group Privacy
Amplification", RDP part) and the prior bounds it generalises.

Registered methods (see :func:`privamp.rdp_methods`):

* ``"wang2019"`` — Wang, Balle, Kasiviswanathan 2019 (AISTATS), subsampling without replacement
  under substitution: Thm 9 (with the ``min(4(e^{eps(2)}-1), ...)`` term of Lemma 17/19), and
  for Gaussian and Laplace mechanisms the Thm 27 refinement of the ternary-|chi|^j terms by
  Pearson-Vajda chi^j divergences (exact high-precision evaluation for j <= 100), plus the
  trivial bounds eps(alpha) and the amplified pure-DP epsilon.  (Schuchardt et al. 2024,
  Prop E.2 and App. B.)
* ``"mironov-group"`` — group privacy for ``relation.group = K > 1`` on top of the best group-1
  curve: recursive weak triangle inequality (Mironov 2017, Prop 11 / Cor 4 with p = q = 2;
  Schuchardt et al. 2024, App. B.1), splitting K into ceil(K/2) + floor(K/2).
* ``"mironov-group-prop2"`` — Mironov 2017, Prop 2 (Schuchardt et al. 2024, Prop 2.10), K a
  power of two; kept for comparison (``in_best=False``).
* ``"schuchardt-tight"`` — tight results: Thm 4.1/4.2 (Poisson, insertion/removal of a group
  of K, Gaussian; both directions) and Thm G.1 (same, randomized response); Thm 3.7 (without
  replacement, substitution, randomized response).
* ``"schuchardt-wor-addremove"`` — Thm F.3: without replacement under insertion/removal.
* ``"daigavane"`` — Daigavane et al. 2022 via Schuchardt et al. 2024, Prop E.5: K-fold
  substitution under sampling without replacement, hypergeometric weights.

Plain functions: :func:`hybrid_wor_substitution_rdp` (Thm F.2), :func:`mironov_group_curve`.

Conventions.  A mechanism's ``sensitivity`` is measured under the relation in use (for the
substitution results it is the substitution sensitivity).  Rényi orders are real; results that
exist only at integer orders are extended to real orders by the convexity of
``(alpha - 1) D_alpha`` in alpha (linear interpolation of the bound on the CGF between
neighbouring integers, with value 0 at alpha = 1), which is sound.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import NotApplicable
from ...mechanisms.base import Mechanism
from ...mechanisms.gaussian import Gaussian
from ...mechanisms.laplace import Laplace
from ...mechanisms.randomized_response import RandomizedResponse
from ...numerics.mixture_divergence import (
    log_forward_moment_multinomial,
    log_moment_quadrature,
    logsumexp,
)
from ...numerics.special import log_binom
from ...renyi.curves import interpolate_cgf, monotone_envelope
from ...sampling.relations import AddRemove, Substitution, ZeroOut
from ...sampling.schemes import Poisson, WithoutReplacement
from ..registry import rdp_method
from ..wang2019 import wang_eps

__all__ = [
    "hybrid_wor_substitution_rdp",
    "poisson_group_gaussian_rdp",
    "poisson_group_rr_rdp",
    "wor_substitution_rr_rdp",
    "wor_addremove_rdp",
]


SRC_TIGHT = "Schuchardt et al. 2024, Thm 4.1/4.2, G.1 (Poisson, group) and Thm 3.7 (WOR, RR)"


SRC_F3 = "Schuchardt et al. 2024, Thm F.3 (WOR, insertion/removal)"


_MULTINOMIAL_MAX = 600  # integer alpha * K up to which the exact expansion of G.5 is used


def hybrid_wor_substitution_rdp(mech: Mechanism, scheme: WithoutReplacement, alpha) -> np.ndarray:
    """Thm F.2 of Schuchardt et al. 2024 (hybrid relations): datasets related by substitution,
    while ``mech`` is known to be private only w.r.t. insertion/removal of batch elements
    (its ``sensitivity`` is the add/remove one).  A substitution is an insertion plus a
    removal, so the Wang et al. expansion applies with the base mechanism at distance 2."""
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    return wang_eps(mech, scheme.batch_size / scheme.dataset_size, a, 2)


# ----------------------------------------------------------------------------------------
# Schuchardt et al. 2024: tight results
# ----------------------------------------------------------------------------------------
def _binom_log_weights(K: int, r: float) -> np.ndarray:
    """log Binomial(k | K, r), k = 0..K, for 0 < r < 1 (no underflow for tiny r)."""
    k = np.arange(K + 1, dtype=float)
    return log_binom(float(K), k) + k * math.log(r) + (K - k) * math.log1p(-r)


def gaussian_mixture_log_moments(
    alpha, log_weights: np.ndarray, s: float
) -> tuple[np.ndarray, np.ndarray]:
    """(log Psi_fwd, log Psi_rev) of ``sum_k w_k N(k s, 1)`` against ``N(0,1)``, rounded up:
    log-space quadrature, and for integer orders with ``alpha * K <= 600`` also the exact
    multinomial expansion of App. G.5; the smaller of the two upper bounds is kept
    (see :mod:`privamp.numerics.mixture_divergence`)."""
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    K = log_weights.size - 1
    fwd = np.array(log_moment_quadrature(a, log_weights, s, "forward"), dtype=float)
    fwd = fwd.reshape(a.shape)
    exact = (a == np.round(a)) & (a * K <= _MULTINOMIAL_MAX)
    for i in np.flatnonzero(exact):
        # both are upper bounds; the quadrature keeps more relative accuracy when log Psi is tiny
        fwd[i] = min(fwd[i], log_forward_moment_multinomial(int(a[i]), log_weights, s))
    rev = np.array(log_moment_quadrature(a, log_weights, s, "reverse"), dtype=float)
    rev = rev.reshape(a.shape)
    return fwd, rev


def poisson_group_gaussian_rdp(mech: Gaussian, rate: float, group: int, alpha) -> np.ndarray:
    """Thm 4.2 (Schuchardt et al. 2024): tight RDP of the Poisson-subsampled Gaussian mechanism
    for the insertion/removal of a group of ``group`` records:
    ``max(Psi_a(sum_i w_i d_i || d_0), Psi_a(d_0 || sum_i w_i d_i))``, ``w_i = Bin(i|K, r)``,
    ``d_i = N(i * sensitivity, sigma^2)``."""
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    if rate == 0:
        return np.zeros_like(a)
    if rate == 1:
        return mech.rdp_kernel(a, group)
    fwd, rev = gaussian_mixture_log_moments(a, _binom_log_weights(group, rate), mech.shift(1))
    return np.maximum(np.maximum(fwd, rev), 0.0) / (a - 1)


def _second_order(u: float, a: np.ndarray) -> np.ndarray:
    """(1 + u)^a - 1 - a u for u >= -1, accurate also for tiny |u| (series)."""
    if abs(u) < 1e-3:
        acc = np.zeros_like(a)
        c = a.copy()
        for n in range(2, 14):
            c = c * (a - n + 1) / n
            acc = acc + c * u**n
        return acc
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        # u = -1 (a law with an empty atom) gives log1p(u) = -inf and (1 + u)^a = 0
        return np.expm1(a * np.log1p(u)) - a * u


def bern_log_psi(a: np.ndarray, q: float, delta: float) -> np.ndarray:
    """log Psi_a(Bern(q + delta) || Bern(q)) (laws given by P(z = 0)), exact.

    ``Psi - 1 = q g(delta/q) + (1-q) g(-delta/(1-q))`` with ``g(u) = (1+u)^a - 1 - a u`` (the
    linear terms cancel), so tiny divergences keep their relative accuracy; ``delta`` is
    passed separately for the same reason.  Conventions 0^a = 0 and x/0 = inf for x > 0."""
    p = q + delta
    out = []
    for pp, qq in ((p, q), (1 - p, 1 - q)):
        if pp <= 0:
            out.append(np.full(a.shape, -np.inf))
        elif qq <= 0:
            out.append(np.full(a.shape, np.inf))
        else:
            out.append(a * math.log(pp) + (1 - a) * math.log(qq))
    direct = np.logaddexp(out[0], out[1]) * (1 + 1e-14)
    if q <= 0.0 or q >= 1.0 or p <= 0.0 or p >= 1.0:
        return direct  # an empty atom: no cancellation to guard against
    small = direct < 1.0
    if small.any():
        b = a[small]
        d = q * _second_order(delta / q, b) + (1 - q) * _second_order(-delta / (1 - q), b)
        d = np.maximum(d, 0.0) * (1 + 1e-13) + 1e-300
        direct = direct.copy()
        direct[small] = np.log1p(d)
    return direct


def poisson_group_rr_rdp(mech: RandomizedResponse, rate: float, group: int, alpha) -> np.ndarray:
    """Thm G.1 (Schuchardt et al. 2024): tight RDP of Poisson-subsampled randomized response for
    the insertion/removal of a group of K records.  The maximum over ``tau_1..tau_{K+1}`` is
    attained with all of ``tau_2..tau_{K+1}`` opposite to ``tau_1`` (Psi_a is convex in each
    argument and the output law is Bernoulli, so the extreme mixing weight wins), giving
    Bernoulli divergences between ``theta`` and ``w theta + (1-w)(1-theta)``, ``w = (1-r)^K``."""
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    t = mech.theta
    moved = -math.expm1(group * math.log1p(-rate)) if rate < 1 else 1.0  # 1 - (1-r)^K
    delta = moved * (1 - 2 * t)  # mixture P(z=0) minus theta
    p = t + delta
    val = np.maximum(bern_log_psi(a, t, delta), bern_log_psi(a, p, -delta))
    return np.maximum(val, 0.0) / (a - 1)


def wor_substitution_rr_rdp(
    mech: RandomizedResponse, scheme: WithoutReplacement, alpha
) -> np.ndarray:
    """Thm 3.7 (Schuchardt et al. 2024): tight RDP of randomized response after sampling
    without replacement, under substitution; ``w = batch/dataset``, maximum over the eight
    choices of ``tau_1, tau_2, tau_4`` in ``{theta, 1 - theta}``."""
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    w = scheme.batch_size / scheme.dataset_size
    t = mech.theta
    best = np.full(a.shape, -np.inf)
    for t1 in (t, 1 - t):
        for t2 in (t, 1 - t):
            for t4 in (t, 1 - t):
                # P(z = 0) under x and x' (|0 - tau| = tau); they differ by w (t2 - t4)
                q = (1 - w) * t1 + w * t4
                best = np.maximum(best, bern_log_psi(a, q, w * (t2 - t4)))
    return np.maximum(best, 0.0) / (a - 1)


#: largest group for the tight Poisson-subsampled Gaussian quadrature (Thm 4.2)
_TIGHT_MAX_GROUP = 32

#: largest K^2 Delta / sigma for it (its cost grows with the shift as well)
_TIGHT_MAX_GROUP_COST = 250.0


def _tight_applies(m, s, r) -> bool:
    # zero-out: the null records contribute nothing, so the output laws are the add/remove ones
    if isinstance(s, Poisson) and type(r) in (AddRemove, ZeroOut):
        # the Gaussian mixture's quadrature costs ~K^2 (group 32: 11 s, 100: 2 min and
        # 1.4 GB, found by fuzzing): larger groups go to the other methods (Mironov's
        # recursion, Balle et al.'s profiles), much looser there
        # and ~K^2 s (K = 8, s = 10: 24 s; K = 3, s = 100: 47 s; K = 2, s = 33: 5.6 s): K^2 s
        # <= 250 keeps it near 10 s; K s <= 60 is answered by the group PLD
        # (group_pld.py) and past both the looser methods and the never-sampled bound answer
        return isinstance(m, RandomizedResponse) or (
            isinstance(m, Gaussian) and r.group <= _TIGHT_MAX_GROUP
            and r.group * r.group * m.shift(1) <= _TIGHT_MAX_GROUP_COST)
    if isinstance(s, WithoutReplacement) and type(r) is Substitution:
        return isinstance(m, RandomizedResponse) and r.group == 1
    return False


@rdp_method(
    "schuchardt-tight",
    SRC_TIGHT,
    mechanisms=(Gaussian, RandomizedResponse),
    schemes=(Poisson, WithoutReplacement),
    relations=(AddRemove, Substitution, ZeroOut),
    when=_tight_applies,
    tight=True,
)
def _tight_method(mech, scheme, relation, alpha):
    if isinstance(scheme, Poisson):
        if isinstance(mech, Gaussian):
            return poisson_group_gaussian_rdp(mech, scheme.rate, relation.group, alpha)
        return poisson_group_rr_rdp(mech, scheme.rate, relation.group, alpha)
    return wor_substitution_rr_rdp(mech, scheme, alpha)


# ----------------------------------------------------------------------------------------
# Thm F.3: without replacement under insertion/removal
# ----------------------------------------------------------------------------------------
def wor_addremove_rdp(mech: Mechanism, scheme: WithoutReplacement, alpha) -> np.ndarray:
    """Thm F.3 (Schuchardt et al. 2024): RDP of sampling ``q = batch_size`` records without
    replacement under insertion/removal, valid for every pair of neighbouring datasets that
    both have at least ``N = dataset_size > q`` records (the bound grows with ``w = q/N``, so
    the maximum over sizes is at the smallest one).  After the coupling, the removal case is
    ``max Psi_a((1-w) b_y + w b_y' || b_y)`` and the insertion case
    ``max Psi_a(b_y || (1-w) b_y + w b_y')`` over batches at distance 2 (one substitution =
    one insertion and one removal):

    * Gaussian: both terms are evaluated exactly (App. H: collinear worst case, mean shift
      2 * sensitivity), which avoids the factor 2 of the theorem's closing step;
    * randomized response: both terms exactly (Bernoulli laws);
    * Laplace: the theorem as printed, ``2 sum_l C(a,l) w^l (1-w)^(a-l) Psi_l(distance 2)``
      at integer orders, with the base RDP at distance 2 as a second bound.
    """
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    q, n = scheme.batch_size, scheme.dataset_size
    if q >= n:  # (NotApplicable: the accountants then ask the others; fuzzing)
        raise NotApplicable(
            f"batch_size must be < dataset_size for Thm F.3 (got batch_size={q}, dataset_size={n})"
        )
    w = q / n
    if isinstance(mech, Gaussian):
        log_w = np.array([math.log1p(-w), math.log(w)])
        fwd, rev = gaussian_mixture_log_moments(a, log_w, 2 * mech.shift(1))
        return np.maximum(np.maximum(fwd, rev), 0.0) / (a - 1)
    if isinstance(mech, RandomizedResponse):
        return poisson_group_rr_rdp(mech, w, 1, a)
    jmax = int(np.ceil(a.max()))
    j = np.arange(jmax + 1, dtype=float)
    log_psi = np.zeros(jmax + 1)
    if jmax >= 2:
        log_psi[2:] = (j[2:] - 1) * mech.rdp_kernel(j[2:], 2)

    def cgf_at(ints):
        out = np.empty(ints.size)
        for idx, nn in enumerate(ints):
            js = np.arange(nn + 1, dtype=float)
            terms = log_binom(float(nn), js) + js * math.log(w) + (nn - js) * math.log1p(-w)
            out[idx] = math.log(2.0) + logsumexp(terms + log_psi[: nn + 1])
        return out * (1 + 1e-14)

    eps = interpolate_cgf(a, cgf_at)
    return np.minimum(eps, mech.rdp_kernel(a, 2))


@rdp_method(
    "schuchardt-wor-addremove",
    SRC_F3,
    mechanisms=(Gaussian, Laplace, RandomizedResponse),
    schemes=(WithoutReplacement,),
    relations=(AddRemove,),
    when=lambda m, s, r: r.group == 1 and type(r) is AddRemove,
)
def _f3_method(mech, scheme, relation, alpha):
    return monotone_envelope(alpha, lambda a: wor_addremove_rdp(mech, scheme, a))

