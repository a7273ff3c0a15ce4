"""Model and data partitioning: model splitting, dropout and Balanced Iteration Subsampling
(Dong, Chen, Ozgur 2025, "Leveraging randomness in model and data partitioning for privacy
amplification").

All three schemes reduce (Thm 3.4, Thm 3.5, Cor 3.7, Thm 3.8) to one pair of distributions
(Thm 3.1): in units of the noise (shift s = c / sigma),

    P = mean over k-subsets S of [d] of N(s 1_S, I_d),     Q = N(0, I_d),

and the Rényi DP epsilon of one step (one *epoch* for Balanced Iteration) is
``max(D_alpha(P||Q), D_alpha(Q||P))``.  Optionally the data are also Poisson-subsampled with
rate gamma, which replaces P by P_gamma = (1 - gamma) Q + gamma P.

What privamp computes (every value is a sound upper bound):

* **forward, D_alpha(P||Q)** — for k = 1 exactly at integer orders: the alpha-th moment of
  dP/dQ is ``d^-a a! [x^a] (sum_m e^{s^2 m(m-1)/2} x^m / m!)^d`` (occupancy counts of the
  alpha chosen bins; a truncated power series raised to the d-th power in log space), i.e.
  the first term of Thm 3.1 (2) without enumerating d^alpha tuples.  For k > 1 exactly by a
  dynamic programme over the d coordinates whose state is the multiset of row sums, when that
  state space is small; otherwise the smaller of bound (3) (Cor 3.14) and a block bound
  (see below).  Real orders: log E[L^a] is convex in a (Hölder), so interpolating the log
  moments linearly between consecutive integers is an upper bound.
* **reverse, D_alpha(Q||P)** — the published second term of Thm 3.1 (Lemma 3.18 /
  Cor 3.19) is NOT an upper bound (docs/dong2025.md: at d = 2, k = 1, c = sigma = 1,
  alpha = 2 it gives 0.5502 while the exact value is 0.5690), so privamp never uses it
  (it is kept as :func:`published_reverse_term` for comparison only).  Instead, for k = 1,
  under Q the likelihood ratio is W = 1 - gamma + gamma * mean(Z_1..Z_d) with Z_i i.i.d.
  log-normal, and ``E[W^-b] = (1/Gamma(b)) int_0^inf t^(b-1) E[e^{-tW}] dt`` with
  ``E[e^{-tW}] = e^{-t(1-gamma)} phi(gamma t / d)^d``, phi the Laplace transform of one Z.
  Both integrals are bounded above with certified one-sided rules: phi by chords of the
  convex map z -> e^{-uz} (or of the concave 1 - e^{-uz}) on cells of X, whose Gaussian
  masses and first moments are closed forms; the t-integral by chords of log E[e^{-tW}],
  which is log-convex in t (a Laplace transform), integrated exactly against t^(b-1) with
  the incomplete gamma function; the far tail by W >= 1 - gamma + gamma * geometric mean
  (AM-GM).  Any real order alpha > 1.  For k > 1 (gamma = 1): a uniformly random k-subset is
  obtained by cutting [d] into k random blocks of sizes floor/ceil(d/k) and picking one
  coordinate per block, so by quasi-convexity of the Rényi divergence the k-subset pair is
  dominated by the product of k independent k = 1 pairs on the blocks: its divergences (both
  directions) are at most the sum of the blocks' k = 1 divergences.
"""

from __future__ import annotations

import math

import numpy as np

from ..._validation import check_int, check_orders, check_positive, check_rate
from ...mechanisms.gaussian import Gaussian
from ...numerics.logspace import log_diff_ndtr, log_ndtr, logsumexp
from ...results import Bound
from ...sampling.relations import AddRemove, ZeroOut
from ...sampling.schemes import BalancedIteration, ModelSplit, Scheme, SubsampledModelSplit
from ..registry import rdp_method
from .moments import (
    binomial_mix,
    check_dk,
    fast_forward_bound,
    forward_divergence,
    forward_log_moments,
    interp_log_moment,
    log_moments_dp,
    log_moments_k1,
    published_reverse_term,
    reverse_divergence,
    reverse_log_moments_k1,
    round_up_moments,
)

__all__ = [
    "forward_log_moments",
    "forward_divergence",
    "reverse_divergence",
    "published_reverse_term",
    "fast_forward_bound",
    "partition_rdp",
    "partial_split_rdp",
    "poisson_gaussian_rdp",
    "model_split_rdp",
    "balanced_iteration_rdp",
]


SOURCE = "Dong, Chen, Ozgur 2025"


SRC_TIGHT = (
    f"{SOURCE}, Thm 3.1 bound (2) first term (exact forward moments by occupancy counts) "
    "with a certified reverse term (privamp; the published Cor 3.19 term is not an upper bound)"
)


SRC_FAST = (
    f"{SOURCE}, Thm 3.1 bound (3) first term (Cor 3.14) with a certified reverse term "
    "(privamp; the published Cor 3.19 term is not an upper bound)"
)



# ----------------------------------------------------------------------------------------
# schemes
# ----------------------------------------------------------------------------------------
def partition_rdp(c: float, sigma: float, d: int, k: int, alpha: float | np.ndarray,
                  rate: float = 1.0, method: str = "tight") -> Bound:
    """Rényi DP (upper bound) of the Thm 3.1 pair with shift c/sigma, both directions,
    optionally with Poisson subsampling of the data at ``rate`` (k = 1 only).

    ``method``: "tight" (exact forward moments where reachable) or "fast" (bound (3)).
    """
    c = check_positive("c", c)
    sigma = check_positive("sigma", sigma)
    d, k = check_dk(d, k)
    rate = check_rate("rate", rate)
    if rate == 0:
        raise ValueError("rate must be in (0, 1], got 0")
    if method not in ("tight", "fast"):
        raise ValueError(f"method must be 'tight' or 'fast', got {method!r}")
    a = check_orders(alpha)
    val = partition_rdp_kernel(c / sigma, d, k, a, rate, method)
    source = SRC_TIGHT if method == "tight" else SRC_FAST
    kk = min(k, d - k)  # complements have the same exactness (forward_log_moments)
    if method == "tight" and kk > 1:
        logm = log_moments_dp(c / sigma, d, kk, max(int(np.ceil(a.max())), 2))
        reach = int(np.max(np.nonzero(~np.isnan(logm))[0]))
        if reach < np.ceil(a.max()):
            source += (f"; k > 1: exact forward moments up to order {reach}, above it the "
                       "smaller of bound (3) and the block bound")
    return Bound(val, "upper", source)


def partition_rdp_kernel(s: float, d: int, k: int, alpha: np.ndarray, rate: float, method: str
                   ) -> np.ndarray:
    if rate < 1.0 and k > 1:
        raise ValueError("rate < 1 (Poisson subsampling on top) is supported for k = 1 only")
    fwd, _ = forward_divergence(s, d, k, alpha, rate, method)
    rev = reverse_divergence(s, d, k, alpha, rate)
    out = np.maximum(fwd, rev)
    if not np.all(np.isfinite(out)):
        raise ValueError("the Rényi order is too large for these parameters (overflow); "
                         "use smaller alpha")
    return out


def poisson_gaussian_rdp(s: float, rate: float, alpha: np.ndarray) -> np.ndarray:
    """Thm 3.11 (Zhu & Wang 2019) for the Gaussian with shift s at integer orders, and at real
    orders the log-convex interpolation of its moments (an upper bound)."""
    alpha = np.asarray(alpha, dtype=float)
    nmax = max(int(np.ceil(alpha.max())), 2)
    n = np.arange(nmax + 1, dtype=float)
    logm = s * s * n * (n - 1) / 2.0
    if rate < 1.0:
        logm = binomial_mix(logm, rate)
    return interp_log_moment(round_up_moments(logm), alpha) / (alpha - 1.0)


def partial_split_rdp(sigma: float, split_norm: float, shared_norm: float, parts: int,
                      alpha: float | np.ndarray, rate: float = 1.0, method: str = "tight"
                      ) -> Bound:
    """Partial model splitting (Dong, Chen, Ozgur 2025, Sec. 3.2.2): the split part (clipped
    to ``split_norm``, each example in one of ``parts`` disjoint submodels) and the shared
    part (clipped to ``shared_norm``, no amplification) get the same noise std ``sigma``
    (in the same units as the norms).  One step, on a Poisson sample of the data at
    ``rate`` (1 = no subsampling).  ``shared_norm=0`` means no shared part.

    rate = 1: the two parts' RDP add up (composition, as in the paper).  rate < 1: the two
    parts share the data sample, so the step is treated as one mechanism whose pair is
    (N(s_sh) x P_split, N(0) x Q_split), Poisson-subsampled: forward moments exactly (binomial
    expansion, the moments of the two parts multiply), reverse by conditioning on the shared
    coordinate (privamp; see :func:`_partial_reverse`).
    """
    sigma = check_positive("sigma", sigma)
    split_norm = check_positive("split_norm", split_norm)
    if isinstance(shared_norm, bool) or not isinstance(shared_norm, (int, float, np.floating)):
        raise ValueError(f"shared_norm must be a real number >= 0, got {shared_norm!r}")
    if not (shared_norm >= 0 and math.isfinite(shared_norm)):
        raise ValueError(f"shared_norm must be in [0, inf), got {shared_norm!r}")
    parts = check_int("parts", parts, minimum=1)
    rate = check_rate("rate", rate)
    if rate == 0:
        raise ValueError("rate must be in (0, 1], got 0")
    if method not in ("tight", "fast"):
        raise ValueError(f"method must be 'tight' or 'fast', got {method!r}")
    a = check_orders(alpha)
    s_sp, s_sh = split_norm / sigma, shared_norm / sigma
    if rate == 1.0 or s_sh == 0.0:
        split = partition_rdp_kernel(s_sp, parts, 1, a, rate, method)
        shared = a * s_sh ** 2 / 2.0
        return Bound(split + shared, "upper",
                     f"{SOURCE}, Sec. 3.2.2 (split part: Thm 3.4; shared part: Gaussian RDP; "
                     "composition)")
    flat = a.ravel()
    fwd = _partial_forward(s_sp, s_sh, parts, rate, flat)
    rev = _partial_reverse(s_sp, s_sh, parts, rate, flat)
    out = np.maximum(fwd, rev)
    if not np.all(np.isfinite(out)):
        raise ValueError("the Rényi order is too large for these parameters (overflow)")
    return Bound(out.reshape(a.shape), "upper",
                 f"{SOURCE}, Sec. 3.2.2 with Poisson subsampling of the data (privamp: exact "
                 "forward moments, certified reverse bound)")


def _partial_forward(s_sp: float, s_sh: float, d: int, rate: float, alpha: np.ndarray
                     ) -> np.ndarray:
    """D_alpha((1-g) Q + g P || Q) for P = N(s_sh) x P_split: E_Q[(1-g+g L)^n] with
    E_Q[L^l] = e^{s_sh^2 l(l-1)/2} M_l (M_l the split part's exact moments)."""
    nmax = max(int(np.ceil(alpha.max())), 2)
    n = np.arange(nmax + 1, dtype=float)
    logm = log_moments_k1(s_sp, d, nmax) + s_sh * s_sh * n * (n - 1) / 2.0
    return interp_log_moment(round_up_moments(binomial_mix(logm, rate)), alpha) / (alpha - 1.0)


_G_LOGIT = np.linspace(-20.0, 20.0, 81)  # lattice of effective rates g' in logit space


def _partial_reverse(s_sp: float, s_sh: float, d: int, rate: float, alpha: np.ndarray
                     ) -> np.ndarray:
    """Upper bound on D_alpha(Q || (1-g) Q + g P), P = N(s_sh) x P_split, Q = N(0) x Q_split.

    Given the shared coordinate, with lam = exp(s_sh x - s_sh^2/2):
    1 - g + g lam L = c (1 - g' + g' L), c = 1 - g + g lam, g' = g lam / c, so
    E[W^-b | x] = c^-b f(g'), f(g') = E_Q[(1 - g' + g' L)^-b] (the split part's subsampled
    negative moment).  f is convex with f'(0) = 0, hence nondecreasing in g'; c^-b decreases
    and g' increases with x.  On each cell of x the integrand is at most
    c(left)^-b f(g'(right) rounded up to a lattice), and f at the lattice points is bounded
    above by the certified k = 1 computation; tails of x use c >= 1 - g and f(g') <= f(1).
    """
    betas = tuple(sorted({float(x) - 1.0 for x in alpha}))
    g_lat = 1.0 / (1.0 + np.exp(-_G_LOGIT))
    g_lat[-1] = 1.0
    log_f = np.array([reverse_log_moments_k1(float(s_sp), int(d), float(g), betas)
                      for g in g_lat])  # [g, beta]
    x = np.arange(-12.0, 12.0 + 1e-9, 0.02)
    logp = log_diff_ndtr(x[:-1], x[1:])
    lam = np.exp(s_sh * x - s_sh * s_sh / 2)
    c = 1 - rate + rate * lam
    gp = np.minimum(rate * lam / c, 1.0)
    idx = np.minimum(np.searchsorted(g_lat, gp[1:] * (1 + 1e-12), side="left"), g_lat.size - 1)
    out = {}
    for j, b in enumerate(betas):
        terms = logp - b * np.log(c[:-1]) + log_f[idx, j]
        left = float(log_ndtr(x[0])) - b * math.log1p(-rate) + log_f[
            min(int(np.searchsorted(g_lat, gp[0] * (1 + 1e-12))), g_lat.size - 1), j]
        right = float(log_ndtr(-x[-1])) - b * math.log(c[-1]) + log_f[-1, j]
        total = float(logsumexp(np.concatenate([terms, [left, right]])))
        out[b] = round_up_moments(np.array(total)) / b
    return np.array([out[float(x_) - 1.0] for x_ in alpha])


def _scheme_dk(scheme: Scheme) -> tuple[int, int, float]:
    if isinstance(scheme, ModelSplit):
        return scheme.parts, scheme.selected, 1.0
    if isinstance(scheme, BalancedIteration):
        return scheme.steps, scheme.participations, 1.0
    if isinstance(scheme, SubsampledModelSplit):
        return scheme.parts, 1, scheme.rate
    raise ValueError(f"scheme must be ModelSplit, BalancedIteration or SubsampledModelSplit, "
                     f"got {scheme!r}")


def _applies(mech, scheme, relation) -> bool:
    return relation.group == 1


@rdp_method("dong-tight", SRC_TIGHT, mechanisms=(Gaussian,),
            schemes=(ModelSplit, BalancedIteration, SubsampledModelSplit),
            relations=(AddRemove, ZeroOut), when=_applies)
def _dong_tight(mech: Gaussian, scheme: Scheme, relation, alpha: np.ndarray) -> np.ndarray:
    d, k, rate = _scheme_dk(scheme)
    return partition_rdp_kernel(mech.sensitivity / mech.sigma, d, k, alpha, rate, "tight")


@rdp_method("dong-fast", SRC_FAST, mechanisms=(Gaussian,),
            schemes=(ModelSplit, BalancedIteration),
            relations=(AddRemove, ZeroOut), when=_applies)
def _dong_fast(mech: Gaussian, scheme: Scheme, relation, alpha: np.ndarray) -> np.ndarray:
    d, k, rate = _scheme_dk(scheme)
    return partition_rdp_kernel(mech.sensitivity / mech.sigma, d, k, alpha, rate, "fast")


def model_split_rdp(sigma: float, parts: int, alpha: float | np.ndarray, sensitivity: float = 1.0,
                    rate: float = 1.0, method: str = "tight") -> Bound:
    """One step of disjoint model splitting into ``parts`` submodels (Thm 3.4; mixtures of
    partitions Thm 3.5; dropout with p = 1/2 is parts = 2, Cor 3.7), optionally on a Poisson
    sample of the data at ``rate``."""
    return partition_rdp(sensitivity, sigma, parts, 1, alpha, rate, method)


def balanced_iteration_rdp(sigma: float, steps: int, participations: int,
                           alpha: float | np.ndarray, sensitivity: float = 1.0,
                           method: str = "tight") -> Bound:
    """One epoch of Balanced Iteration Subsampling (Thm 3.8): each example in exactly
    ``participations`` of ``steps`` steps.  Epochs compose (Remark 3.10)."""
    return partition_rdp(sensitivity, sigma, steps, participations, alpha, 1.0, method)



