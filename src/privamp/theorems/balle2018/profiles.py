"""(eps, delta) amplification by subsampling: privacy profiles (Balle, Barthe, Gaboardi 2018).

A *privacy profile* delta_M(eps) = sup_{x ~ x'} H_{e^eps}(M(x) || M(x')) (hockey-stick
divergence) describes all (eps, delta) guarantees of a mechanism at once.  Subsampling with a
scheme whose output laws on neighbouring datasets are at total variation eta turns a profile
delta into delta' with

    delta'(eps') <= sum_j w_j delta_{M, k_j}(eps),    eps' = log(1 + eta (e^eps - 1)),

where the weights w_j (summing to eta) are the probabilities that the batch contains j of the
records in which the neighbours differ and delta_{M,k} is the profile of M at group distance k
(Balle, Barthe, Gaboardi 2018, Thm 7: distance-compatible couplings + advanced joint
convexity, Thm 2).  Instances:

* Poisson rate gamma, add/remove (Thm 8): eta = gamma, delta' <= gamma delta(eps).
* Without replacement, m of n, substitution (Thm 9): eta = m/n, delta' <= (m/n) delta(eps).
* With replacement, m of n, substitution (Thm 10) and removal (Thm 11):
  eta = 1 - (1 - 1/n)^m, delta' <= sum_k Binom(k; m, 1/n) delta_{M,k}(eps).
* Poisson, substitution (Thm 14, needs the dataset size n).
* Groups of K records (``relation.group = K``): the couplings of Thms 8-11 extend (each of the
  J sampled group members is moved by the coupling, so pairs are at distance J), giving
  weights Binom(j; K, gamma) (Poisson, add/remove), Hypergeom(j; n, K, m) (without
  replacement) and Binom(j; m, K/n) (with replacement).

Group profiles delta_{M,k}:

* ``"white-box"``: the mechanism itself at distance k (e.g. the Gaussian with sensitivity
  k Delta), via ``mechanism.delta_kernel(eps, k)``.
* ``"black-box"``: generic group privacy of an (eps, delta) profile.  Chaining the guarantee
  (eps/k, delta(eps/k)) along the k neighbouring steps x_0 ~ x_1 ~ ... ~ x_k gives
  P_0(E) <= e^{eps/k} P_1(E) + delta <= ... <= e^eps P_k(E) + delta sum_{i<k} e^{i eps/k},
  i.e. delta_k(eps) <= delta(eps/k) (e^eps - 1)/(e^{eps/k} - 1)  (the group-privacy lemma of
  (eps, delta)-DP, e.g. Vadhan 2017, "The Complexity of Differential Privacy", Lemma 2.2,
  in its geometric-sum form; this is the "black-box" group privacy of Balle et al. 2018,
  Sec. 5 and Figure 1(e)).

Under with-replacement sampling the mechanism runs on batches of fixed size m, so the group
distance of Thms 10/11 is measured by *substitutions inside the batch*.  Under
``Substitution`` the mechanism's sensitivity is already a substitution sensitivity; under
``AddRemove`` (Thm 11) one batch substitution is one removal and one addition, so distance j
becomes distance 2j of the mechanism (for clipped sums, the batch sum moves by up to 2C).

Profiles of neighbours in both orders: the relations here are symmetric (add/remove counts
both directions), and for eps < 0 we use H_a(A||B) = 1 - a + a H_{1/a}(B||A).

Theorem 6 (profile -> moment generating function) turns any such profile into Rényi DP:
with s = alpha - 1,

    exp((alpha-1) D_alpha) = 1 + s (s+1) int_0^inf (e^{s eps} delta(eps)
                                                    + e^{-(s+1) eps} delta~(eps)) d eps,

delta~ being the profile of the reversed pair; see :mod:`.thm6` (``rdp_from_profile``,
``profile_rdp``), registered as the RDP method ``"balle-profile"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._validation import check_epsilon, check_int
from ...mechanisms.base import Mechanism
from ...mechanisms.randomized_response import RandomizedResponse
from ...numerics.special import HypergeomLaw
from ...results import Bound
from ...sampling.relations import AddRemove, Relation, Substitution
from ...sampling.schemes import Poisson, Scheme, WithoutReplacement, WithReplacement

__all__ = [
    "profile",
    "profile_bound",
    "profile_terms",
    "ProfileTerms",
    "group_delta",
    "mixture_profile",
    "validate_setting",
    "covers_fixed_batch",
    "GROUP_MODES",
]


GROUP_MODES = ("white-box", "black-box")


PAPER = "Balle, Barthe, Gaboardi 2018"


#: relative safety margin on returned deltas (covers float error in weights and profiles)
_REL_MARGIN = 1e-12


#: binomial / hypergeometric weights below this total tail mass are lumped together
_TRUNC = 1e-20


# ------------------------------------------------------------------------------------------
# group profiles delta_{M,k}
# ------------------------------------------------------------------------------------------
def _check_group_mode(group: str) -> str:
    if group not in GROUP_MODES:
        raise ValueError(f"group must be one of {GROUP_MODES}, got {group!r}")
    return group


def _log_expm1(x: np.ndarray) -> np.ndarray:
    """log(e^x - 1) for x > 0, stable for large and small x."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):
        return np.where(x > 30, x + np.log1p(-np.exp(-np.minimum(x, 700.0))), np.log(np.expm1(x)))


def _group_delta_nonneg(mech: Mechanism, eps: np.ndarray, k: int, group: str) -> np.ndarray:
    if group == "white-box" or k == 1:
        return np.asarray(mech.delta_kernel(eps, k), dtype=float)
    base = np.asarray(mech.delta_kernel(eps / k, 1), dtype=float)
    pos = eps > 0
    e = np.where(pos, eps, 1.0)
    log_factor = np.where(pos, _log_expm1(e) - _log_expm1(e / k), math.log(k))
    with np.errstate(divide="ignore"):
        out = np.exp(np.minimum(np.log(base) + log_factor, 0.0))
    return np.where(base > 0, out, 0.0)


def group_delta(mech: Mechanism, eps: np.ndarray | float, k: int, group: str = "white-box"
                ) -> np.ndarray:
    """Upper bound on the profile delta_{M,k}(eps) of ``mech`` at group distance k, any real eps.

    ``group="white-box"``: the mechanism at distance k (exact).  ``"black-box"``: the
    group-privacy lemma delta_k(eps) <= delta(eps/k) (e^eps - 1)/(e^{eps/k} - 1) (module
    docstring).  For eps < 0 the reversed pair is used (symmetric relations):
    delta(eps) = 1 - e^eps + e^eps delta(-eps).
    """
    eps = np.asarray(eps, dtype=float)
    d = _group_delta_nonneg(mech, np.abs(eps), int(k), group)
    with np.errstate(over="ignore", invalid="ignore"):
        neg = -np.expm1(np.minimum(eps, 0.0)) + np.exp(np.minimum(eps, 0.0)) * d
    return np.clip(np.where(eps < 0, neg, d), 0.0, 1.0)


# ------------------------------------------------------------------------------------------
# the mixture-form theorems: weights over the number of sampled group members
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProfileTerms:
    """delta'(eps') <= sum_j weights[j] delta_{M, distances[j]}(eps), eps = log(1 + (e^eps'-1)/eta).

    ``weights`` sum to ``eta`` (the total variation between the batch laws).  Weights of
    improbable counts are lumped into the last term at the largest possible distance (profiles
    grow with the distance, so this is sound).  ``tight`` marks settings where the bound is
    attained by a pair of neighbouring datasets (the profile is then exact).
    """

    eta: float
    distances: np.ndarray
    weights: np.ndarray
    source: str
    tight: bool


def _lumped(dist, j: np.ndarray, jmax: int, eta: float) -> tuple[np.ndarray, np.ndarray]:
    """Weights dist.pmf(j) for j = 1..jmax, truncated where the tail is negligible, with the
    tail mass lumped at distance jmax."""
    pmf = dist.pmf(j)
    sf = dist.sf(j)  # P(J > j)
    keep = np.nonzero(sf > _TRUNC * max(eta, 1e-300))[0]
    last = int(keep[-1]) + 1 if keep.size else 1
    last = min(last + 1, j.size)
    w = pmf[:last].astype(float)
    ks = j[:last].astype(int)
    tail = float(sf[last - 1]) if last < j.size else 0.0
    if tail > 0:
        ks = np.append(ks, jmax)
        w = np.append(w, tail)
    return ks, w


def _check_group_vs_batch(scheme: WithoutReplacement | WithReplacement,
                          relation: Relation) -> int:
    K = relation.group
    m, n = scheme.batch_size, scheme.dataset_size
    if K > m:
        raise ValueError(
            f"relation group must be in [1, batch_size={m}] for {scheme.name} sampling, got {K}"
        )
    if K > n:
        raise ValueError(f"relation group must be in [1, dataset_size={n}], got {K}")
    return K


def profile_terms(mechanism: Mechanism, scheme: Scheme, relation: Relation) -> ProfileTerms:
    """The weights of Balle et al. 2018, Thms 8-11 (with groups via Thm 7) for this setting.

    Poisson under substitution: advanced joint convexity (Thm 2) with the coupling that
    gives each substituted pair one coin, eta = 1 - (1 - gamma)^K, weights Binom(j; K, gamma);
    like Thm 14 it bounds the insertion of a record by the substitution sensitivity (true for
    clipped sums: C <= 2C).  With ``dataset_size``, :func:`profile` also takes Thm 14.

    Raises ValueError for settings the theorems do not cover."""
    from scipy import stats  # heavy: on first use, not at import
    K = relation.group
    if isinstance(scheme, Poisson) and type(relation) is AddRemove:
        g = scheme.rate
        eta = -math.expm1(K * math.log1p(-g)) if g < 1 else 1.0
        j = np.arange(1, K + 1)
        ks, w = _lumped(stats.binom(K, g), j, K, eta) if 0 < g < 1 else (
            (np.array([K]), np.array([1.0])) if g == 1 else (np.array([1]), np.array([0.0])))
        src = f"{PAPER}, Thm 8 (Poisson, add/remove)" + (", groups via Thm 7" if K > 1 else "")
        return ProfileTerms(eta, ks, w, src, tight=(K == 1))
    if isinstance(scheme, Poisson) and type(relation) is Substitution:
        # each substituted pair (a_i, a'_i) shares one coin; the batches of x and x' differ in
        # the j sampled pairs (j substitutions) and from the batch without them by j
        # insertions, which the substitution sensitivity bounds as well (as in Thm 14)
        g = scheme.rate
        eta = -math.expm1(K * math.log1p(-g)) if g < 1 else 1.0
        j = np.arange(1, K + 1)
        ks, w = _lumped(stats.binom(K, g), j, K, eta) if 0 < g < 1 else (
            (np.array([K]), np.array([1.0])) if g == 1 else (np.array([1]), np.array([0.0])))
        src = f"{PAPER}, Thm 2 (advanced joint convexity) with the Poisson coupling of " \
            "substituted pairs (no dataset size needed)" + (", groups via Thm 7" if K > 1 else "")
        return ProfileTerms(eta, ks, w, src, tight=False)
    if isinstance(scheme, WithoutReplacement) and type(relation) is Substitution:
        K = _check_group_vs_batch(scheme, relation)
        m, n = scheme.batch_size, scheme.dataset_size
        dist = HypergeomLaw(n, K, m)
        eta = float(dist.sf(0)) if K > 1 else m / n
        jmax = min(K, m)
        ks, w = _lumped(dist, np.arange(1, jmax + 1), jmax, eta)
        if K == 1:
            w = np.array([eta])
        src = f"{PAPER}, Thm 9 (without replacement, substitution)" + (
            ", groups via Thm 7" if K > 1 else "")
        return ProfileTerms(eta, ks, w, src, tight=(K == 1))
    if isinstance(scheme, WithReplacement) and type(relation) in (Substitution, AddRemove):
        K = _check_group_vs_batch(scheme, relation)
        m, n = scheme.batch_size, scheme.dataset_size
        p = K / n
        eta = -math.expm1(m * math.log1p(-p)) if p < 1 else 1.0
        if p < 1:
            ks, w = _lumped(stats.binom(m, p), np.arange(1, m + 1), m, eta)
        else:
            ks, w = np.array([m]), np.array([1.0])
        thm = "Thm 10 (with replacement, substitution)" if type(relation) is Substitution else (
            "Thm 11 (with replacement, removal; a batch substitution = distance 2 under "
            "add/remove)")
        if type(relation) is AddRemove:
            ks = 2 * ks
        src = f"{PAPER}, {thm}" + (", groups via Thm 7" if K > 1 else "")
        # randomized response does not depend on the distance: the sum collapses to
        # eta * delta(eps), attained by the query "is the record in the batch".
        tight = isinstance(mechanism, RandomizedResponse)
        return ProfileTerms(eta, ks, w, src, tight=tight)
    raise ValueError(
        f"no subsampled privacy profile for {type(scheme).__name__} under {relation}: "
        "supported are Poisson with AddRemove (Thm 8) or Substitution (Thm 2 / Thm 14), "
        "WithoutReplacement with Substitution (Thm 9), WithReplacement with "
        "Substitution (Thm 10) or AddRemove (Thm 11)"
    )


def _inner_eps(eps_prime: np.ndarray, eta: float) -> np.ndarray:
    """eps with eps' = log(1 + eta (e^eps - 1)), eps' >= 0, rounded down (the sound side:
    profiles decrease in eps)."""
    if eta >= 1.0:
        return eps_prime.copy()
    with np.errstate(divide="ignore"):
        e = eps_prime + np.log(eta - (1.0 - eta) * np.expm1(-eps_prime)) - math.log(eta)
    return np.maximum(e - 1e-13 * (1.0 + e), 0.0)


def mixture_profile(mech: Mechanism, terms: ProfileTerms, eps_prime: np.ndarray,
                    group: str) -> np.ndarray:
    """The bound sum_j w_j delta_{M, k_j}(eps) of ``terms`` at eps' (module docstring).

    Args:
        mech: the mechanism.
        terms: the weights (:func:`profile_terms`).
        eps_prime: epsilons >= 0, an array.
        group: "white-box" or "black-box" group profiles.

    Returns:
        Upper bounds on the subsampled profile, rounded up by 1e-12 relative, at most 1.
    """
    if terms.eta == 0.0:
        return np.zeros_like(eps_prime)
    eps = _inner_eps(eps_prime, terms.eta)
    total = np.zeros_like(eps_prime)
    for k, w in zip(terms.distances, terms.weights, strict=True):
        if w > 0:
            total = total + w * group_delta(mech, eps, int(k), group)
    return np.minimum(total * (1.0 + _REL_MARGIN), 1.0)


def _poisson_substitution(mech: Mechanism, gamma: float, n: int, eps_prime: np.ndarray
                          ) -> np.ndarray:
    """Balle, Barthe, Gaboardi 2018, Thm 14."""
    from scipy import stats  # heavy: on first use, not at import
    if gamma == 0.0:
        return np.zeros_like(eps_prime)
    if gamma == 1.0:
        return np.minimum(group_delta(mech, eps_prime, 1) * (1 + _REL_MARGIN), 1.0)
    eps = _inner_eps(eps_prime, gamma)
    one_minus_beta = -np.expm1(np.minimum(eps_prime - eps, 0.0))
    beta = 1.0 - one_minus_beta
    # k = 1..n, j = k - 1 ~ Binom(n-1, gamma): gt_k = P(j = k-1)
    dist = stats.binom(n - 1, gamma)
    mu = (n - 1) * gamma
    sd = math.sqrt((n - 1) * gamma * (1 - gamma))
    lo = max(0, int(math.floor(mu - 40 * sd - 10)))
    hi = min(n - 1, int(math.ceil(mu + 40 * sd + 10)))
    j = np.arange(lo, hi + 1)
    gt = dist.pmf(j)
    outside = float(dist.cdf(lo - 1)) + float(dist.sf(hi)) if lo > 0 else float(dist.sf(hi))
    k = j + 1
    inner = k <= n - 1
    shift = math.log(gamma) - math.log1p(-gamma)
    acc = np.zeros_like(eps_prime)
    if inner.any():
        kk = k[inner].astype(float)
        ek = eps[None, :] + shift + np.log((n - kk) / kk)[:, None]
        acc = (gt[inner][:, None] * group_delta(mech, ek, 1)).sum(axis=0)
    acc = acc + float(gt[~inner].sum()) + outside  # gt_n (and lumped tails) with delta <= 1
    out = gamma * beta * group_delta(mech, eps, 1) + gamma * one_minus_beta * acc
    return np.minimum(out * (1.0 + _REL_MARGIN), 1.0)


# ------------------------------------------------------------------------------------------
# public API
# ------------------------------------------------------------------------------------------
def validate_setting(mechanism, scheme, relation, group) -> None:
    """Check the types of a setting and the group mode.

    Raises:
        ValueError: not a privamp mechanism, scheme or relation, or an unknown group mode.
    """
    if not isinstance(mechanism, Mechanism):
        raise ValueError(f"mechanism must be a privamp mechanism, got {mechanism!r}")
    if not isinstance(scheme, Scheme):
        raise ValueError(f"scheme must be a privamp sampling scheme, got {scheme!r}")
    if not isinstance(relation, Relation):
        raise ValueError(f"relation must be a privamp relation, got {relation!r}")
    _check_group_mode(group)


def _profile(mechanism, scheme, eps, relation, group, dataset_size) -> tuple[np.ndarray, str, bool]:
    if (isinstance(scheme, Poisson) and type(relation) is Substitution
            and relation.group == 1 and dataset_size is not None):
        # Thm 14 (needs the dataset size) and the size-free mixture bound: both sound
        n = check_int("dataset_size", dataset_size, minimum=2)
        vals = _poisson_substitution(mechanism, scheme.rate, n, eps)
        terms = profile_terms(mechanism, scheme, relation)
        free = mixture_profile(mechanism, terms, eps, group)
        src = f"{PAPER}, Thm 14 (Poisson, substitution)"
        if (free < vals).any():
            src += f"; {terms.source} where smaller"
        return np.minimum(vals, free), src, False
    terms = profile_terms(mechanism, scheme, relation)
    vals = mixture_profile(mechanism, terms, eps, group)
    tight = terms.tight and (group == "white-box" or terms.distances.max() == 1)
    src = terms.source + ("" if group == "white-box" else "; black-box group privacy")
    return vals, src, tight


def profile(
    mechanism: Mechanism,
    scheme: Scheme,
    epsilon: float | np.ndarray,
    relation: Relation | None = None,
    group: str = "white-box",
    dataset_size: int | None = None,
) -> np.ndarray:
    """Upper bounds on the privacy profile delta'(epsilon) of one subsampled release.

    ``mechanism``: Gaussian, Laplace or RandomizedResponse (sensitivity measured under
    ``relation``).  ``scheme``: Poisson (Thm 8 under AddRemove; under Substitution the
    size-free bound of :func:`profile_terms`, and with ``dataset_size`` also Thm 14, the
    smaller kept), WithoutReplacement (Thm 9, Substitution),
    WithReplacement (Thm 10 Substitution, Thm 11 AddRemove) (Balle, Barthe, Gaboardi 2018).
    ``relation.group = K`` protects groups of K records (Thm 7's couplings).  ``group``:
    ``"white-box"`` (mechanism at distance k) or ``"black-box"`` (generic group privacy).
    ``epsilon``: >= 0, scalar or array; returns a float array of the same shape.
    """
    b = profile_bound(mechanism, scheme, epsilon, relation, group, dataset_size)
    return np.asarray(b.value, dtype=float)


def profile_bound(
    mechanism: Mechanism,
    scheme: Scheme,
    epsilon: float | np.ndarray,
    relation: Relation | None = None,
    group: str = "white-box",
    dataset_size: int | None = None,
) -> Bound:
    """:func:`profile` as a labelled :class:`~privamp.Bound` (kind "exact" where the theorem
    is attained by a pair of neighbouring datasets: Thms 8 and 9 with one record, and
    randomized response under with-replacement sampling; "upper" otherwise)."""
    relation = Substitution() if relation is None else relation
    validate_setting(mechanism, scheme, relation, group)
    eps = check_epsilon(epsilon)
    vals, src, tight = _profile(mechanism, scheme, np.atleast_1d(eps).ravel(), relation, group,
                                dataset_size)
    vals = vals.reshape(eps.shape)
    return Bound(vals if vals.ndim else float(vals), "exact" if tight else "upper", src)


def covers_fixed_batch(scheme, relation) -> bool:
    """Whether Thms 9-11 give a white-box group profile for this fixed-size scheme and
    relation: without replacement under substitution, with replacement under substitution or
    add/remove, for groups no larger than a batch."""
    if isinstance(scheme, WithoutReplacement):
        return type(relation) is Substitution and relation.group <= scheme.batch_size
    if isinstance(scheme, WithReplacement):
        return type(relation) in (Substitution, AddRemove) and relation.group <= scheme.batch_size
    return False
