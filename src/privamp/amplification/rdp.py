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
from dataclasses import replace
from functools import lru_cache

import numpy as np
from scipy.special import gammaln
from scipy.stats import hypergeom

from ..mechanisms import Gaussian, Laplace, Mechanism, RandomizedResponse
from ..numerics.mixture_divergence import (
    log_forward_moment_multinomial,
    log_moment_quadrature,
    logsumexp,
)
from ..sampling import AddRemove, Poisson, Relation, Scheme, Substitution, WithoutReplacement
from .registry import REGISTRY, rdp_curve, rdp_method

__all__ = [
    "wang2019_rdp",
    "hybrid_wor_substitution_rdp",
    "mironov_group_curve",
    "mironov_group_prop2",
    "poisson_group_gaussian_rdp",
    "poisson_group_rr_rdp",
    "wor_substitution_rr_rdp",
    "wor_addremove_rdp",
    "daigavane_rdp",
    "monotone_envelope",
]

SRC_WANG = "Wang, Balle, Kasiviswanathan 2019, Thm 9 + Thm 27 (Schuchardt et al. 2024, Prop E.2)"
SRC_MIRONOV_GROUP = (
    "Mironov 2017, Cor 4 / Prop 11 (recursive group privacy; Schuchardt et al. 2024, App. B.1)"
)
SRC_MIRONOV_PROP2 = "Mironov 2017, Prop 2 (Schuchardt et al. 2024, Prop 2.10)"
SRC_TIGHT = "Schuchardt et al. 2024, Thm 4.1/4.2, G.1 (Poisson, group) and Thm 3.7 (WOR, RR)"
SRC_F3 = "Schuchardt et al. 2024, Thm F.3 (WOR, insertion/removal)"
SRC_DAIGAVANE = "Daigavane et al. 2022 (Schuchardt et al. 2024, Prop E.5)"

_J27 = 100  # Thm 27 terms are used for j <= _J27 (as autodp does with its default m = 100)
_MULTINOMIAL_MAX = 600  # integer alpha * K up to which the exact expansion of G.5 is used


# ----------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------
def _pure_eps(mech: Mechanism, distance: int = 1) -> float:
    """Pure-DP epsilon of the base mechanism at a group distance (inf when it has none)."""
    if isinstance(mech, Laplace):
        return mech.epsilon0(distance)
    if isinstance(mech, RandomizedResponse):
        return mech.epsilon0()
    return math.inf


def _log_expm1(x: float) -> float:
    """log(e^x - 1) for x > 0 (inf for x = inf)."""
    if math.isinf(x):
        return math.inf
    return x + math.log(-math.expm1(-x))


def _interpolate_cgf(alpha: np.ndarray, cgf_at) -> np.ndarray:
    """Bound the CGF ``(alpha-1) eps(alpha)`` at real orders from bounds at integers.

    ``cgf_at(ints)`` returns upper bounds on the CGF at the integer orders ``ints`` (>= 2).  The
    true CGF is convex with value 0 at alpha = 1, so the chord between neighbouring integers
    bounds it.  Returns eps bounds (CGF / (alpha - 1)).
    """
    a = np.asarray(alpha, dtype=float)
    lo = np.floor(a)
    hi = np.ceil(a)
    ints = np.unique(np.concatenate([lo[lo >= 2], hi]).astype(np.int64))
    vals = np.asarray(cgf_at(ints), dtype=float)
    lookup = dict(zip(ints.tolist(), vals.tolist(), strict=True))
    f_lo = np.array([0.0 if v < 2 else lookup[int(v)] for v in lo])
    f_hi = np.array([lookup[int(v)] for v in hi])
    t = a - lo
    with np.errstate(invalid="ignore"):  # 0 * inf on the unused branch
        cgf = np.where(hi == lo, f_hi, (1 - t) * f_lo + t * f_hi)
        eps = cgf / (a - 1)
    # between 1 and 2 the chord from (1, 0) gives exactly the CGF bound at 2
    return np.where((lo < 2) & (hi == 2), f_hi, eps)


_ANCHORS = np.array([1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0])


def monotone_envelope(alpha: np.ndarray, eps_fn) -> np.ndarray:
    """min over beta >= alpha of eps_fn(beta), over the requested orders plus a few anchor
    orders: sound because Rényi divergences are nondecreasing in the order (van Erven &
    Harremoës 2014, Thm 3), and it removes the blow-up of bounds like Mironov's Cor 4 (or a
    factor 2) as alpha -> 1."""
    a = np.asarray(alpha, dtype=float)
    grid = np.unique(np.concatenate([a.ravel(), _ANCHORS[_ANCHORS > a.min()]]))
    vals = np.asarray(eps_fn(grid), dtype=float)
    env = np.minimum.accumulate(vals[::-1])[::-1]
    return env[np.searchsorted(grid, a)]


def _log_binom(n, k):
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


# ----------------------------------------------------------------------------------------
# Wang, Balle, Kasiviswanathan 2019
# ----------------------------------------------------------------------------------------
def _mp_psi(mech: Mechanism, distance: int):
    """Psi_i = exp((i-1) eps(i)) of the base mechanism as an mpmath function of integer i."""
    import mpmath  # high precision is needed here only; keeps `import privamp` light
    if isinstance(mech, Gaussian):
        s = mpmath.mpf(mech.sensitivity) * distance / mpmath.mpf(mech.sigma)
        return lambda i: mpmath.exp(mpmath.mpf(i) * (i - 1) * s * s / 2)
    if isinstance(mech, Laplace):
        e0 = mpmath.mpf(mech.sensitivity) * distance / mpmath.mpf(mech.scale)

        def psi(i):
            i = mpmath.mpf(i)
            d = 2 * i - 1
            return i / d * mpmath.exp((i - 1) * e0) + (i - 1) / d * mpmath.exp(-i * e0)

        return psi
    raise TypeError("no high-precision moments for this mechanism")


@lru_cache(maxsize=64)
def _log_pearson_vajda(kind: type, params: tuple, distance: int, lmax: int) -> np.ndarray:
    """log B(l) for even l = 2..lmax, B(l) = sum_i C(l,i) (-1)^(l-i) Psi_i = E_Q[(P/Q - 1)^l]
    (the Pearson-Vajda chi^l divergence, Wang et al. 2019, App. B.5), evaluated exactly in
    high-precision arithmetic (precision raised until two evaluations agree to 1e-30)."""
    import mpmath

    mech = kind(*params)
    psi = _mp_psi(mech, distance)
    ls = list(range(2, lmax + 1, 2))
    binoms = {l: [math.comb(l, i) * (-1) ** (l - i) for i in range(l + 1)] for l in ls}

    def evaluate(p: int) -> list:
        with mpmath.workprec(p):
            ps = [mpmath.mpf(1), mpmath.mpf(1)] + [psi(i) for i in range(2, lmax + 1)]
            return [mpmath.fsum(c * ps[i] for i, c in enumerate(binoms[l])) for l in ls]

    prec = 256
    while True:
        v1, v2 = evaluate(prec), evaluate(prec + 128)
        tol = mpmath.mpf(10) ** -30
        if all(b > 0 and abs(a - b) <= tol * abs(b) for a, b in zip(v1, v2, strict=True)):
            break
        prec *= 2
    out = np.full(lmax + 1, -np.inf)
    with mpmath.workprec(prec + 128):
        for l, v in zip(ls, v2, strict=True):
            out[l] = float(mpmath.log(v)) + 1e-12  # pad the float conversion upward
    return out


def _wang_log_terms(mech: Mechanism, gamma: float, jmax: int, distance: int) -> np.ndarray:
    """c_j = j log gamma + log T_j for j = 0..jmax (T_0 = 1, T_1 = 0), T_j the bound on the
    ternary-|chi|^j divergence of Wang et al. 2019 (Thm 9; Thm 27 for Gaussian/Laplace)."""
    j = np.arange(jmax + 1, dtype=float)
    eps_j = np.zeros(jmax + 1)
    if jmax >= 2:
        eps_j[2:] = mech._rdp(j[2:], distance)
    log_psi = (j - 1) * eps_j  # log e^{(j-1) eps(j)}
    einf = _pure_eps(mech, distance)
    lem1 = _log_expm1(einf)  # log(e^{eps_inf} - 1)
    with np.errstate(invalid="ignore"):
        pure = np.where(j >= 2, np.minimum(math.log(2.0), j * lem1), 0.0)
    log_t = log_psi + pure  # Thm 9, j >= 3
    if jmax >= 2:
        e2 = eps_j[2]
        t2 = min(math.log(4.0) + _log_expm1(e2) if e2 > 0 else -np.inf,
                 e2 + min(math.log(2.0), 2 * lem1))
        log_t[2] = t2
    if isinstance(mech, (Gaussian, Laplace)) and jmax >= 3:
        first = mech.sigma if isinstance(mech, Gaussian) else mech.scale
        params = (first, mech.sensitivity)
        top = min(jmax, _J27)
        lb = _log_pearson_vajda(type(mech), params, distance, _J27 + _J27 % 2)
        jj = np.arange(3, top + 1)
        t27 = math.log(4.0) + 0.5 * (lb[2 * (jj // 2)] + lb[2 * ((jj + 1) // 2)])
        log_t[3 : top + 1] = np.minimum(log_t[3 : top + 1], t27)
    with np.errstate(divide="ignore"):
        lg = math.log(gamma) if gamma > 0 else -np.inf
    c = j * lg + log_t
    c[0] = 0.0
    c[1] = -np.inf
    return c


def _wang_eps(mech: Mechanism, gamma: float, alpha: np.ndarray, distance: int = 1) -> np.ndarray:
    a = np.asarray(alpha, dtype=float)
    if gamma == 0:
        return np.zeros_like(a)
    jmax = int(np.ceil(a.max()))
    c = _wang_log_terms(mech, gamma, jmax, distance)

    def cgf_at(ints):
        out = np.empty(ints.size)
        for idx, n in enumerate(ints):
            js = np.arange(n + 1, dtype=float)
            out[idx] = logsumexp(_log_binom(float(n), js) + c[: n + 1])
        return out * (1 + 1e-14) + 1e-300

    eps = _interpolate_cgf(a, cgf_at)
    eps = np.minimum(eps, mech._rdp(a, distance))
    einf = _pure_eps(mech, distance)
    if math.isfinite(einf):
        eps = np.minimum(eps, math.log1p(gamma * math.expm1(einf)))
    return eps


def wang2019_rdp(mech: Mechanism, scheme: WithoutReplacement, alpha: np.ndarray) -> np.ndarray:
    """RDP of ``mech`` after sampling ``batch_size`` of ``dataset_size`` records without
    replacement, under substitution (Wang, Balle, Kasiviswanathan 2019, Thm 9 with the
    Thm 27 refinement for Gaussian and Laplace mechanisms; real orders by CGF convexity)."""
    return _wang_eps(mech, scheme.batch_size / scheme.dataset_size, alpha, 1)


def hybrid_wor_substitution_rdp(mech: Mechanism, scheme: WithoutReplacement, alpha) -> np.ndarray:
    """Thm F.2 of Schuchardt et al. 2024 (hybrid relations): datasets related by substitution,
    while ``mech`` is known to be private only w.r.t. insertion/removal of batch elements
    (its ``sensitivity`` is the add/remove one).  A substitution is an insertion plus a
    removal, so the Wang et al. expansion applies with the base mechanism at distance 2."""
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    return _wang_eps(mech, scheme.batch_size / scheme.dataset_size, a, 2)


@rdp_method(
    "wang2019",
    SRC_WANG,
    mechanisms=(Gaussian, Laplace, RandomizedResponse),
    schemes=(WithoutReplacement,),
    relations=(Substitution,),
    when=lambda m, s, r: r.group == 1,
)
def _wang2019_method(mech, scheme, relation, alpha):
    return wang2019_rdp(mech, scheme, alpha)


# ----------------------------------------------------------------------------------------
# Mironov 2017 group privacy
# ----------------------------------------------------------------------------------------
def _group_orders(K: int, a: np.ndarray, acc: list) -> None:
    if K == 1:
        acc.append(a)
        return
    k1, k2 = (K + 1) // 2, K // 2
    for first, second in {(k1, k2), (k2, k1)}:
        _group_orders(first, 2 * a, acc)
        _group_orders(second, 2 * a - 1, acc)


def _group_eval(K: int, a: np.ndarray, base_orders: np.ndarray, base_eps: np.ndarray) -> np.ndarray:
    if K == 1:
        return base_eps[np.searchsorted(base_orders, a)]
    k1, k2 = (K + 1) // 2, K // 2
    best = np.full(a.shape, np.inf)
    for first, second in {(k1, k2), (k2, k1)}:
        v = (a - 0.5) / (a - 1) * _group_eval(first, 2 * a, base_orders, base_eps) + _group_eval(
            second, 2 * a - 1, base_orders, base_eps
        )
        best = np.minimum(best, v)
    return best


def mironov_group_curve(
    mech: Mechanism, scheme: Scheme, alpha, relation: Relation, base_method: str = "best"
) -> np.ndarray:
    """Group-K RDP from the group-1 curve by the weak triangle inequality of Mironov 2017
    (Prop 11 with p = q = 2, his Cor 4):
    ``D_a(P||Q) <= (a - 1/2)/(a - 1) D_2a(P||R) + D_(2a-1)(R||Q)``, applied recursively with
    R at distance ceil(K/2) (or floor(K/2)) from P, taking the better split.

    (Schuchardt et al. 2024, App. B.1, print the second coefficient as a/(a-1); Hölder's
    inequality gives 1, which we use — it is smaller, and the proof is two lines: write
    P^a Q^(1-a) = [P^a R^(1/2-a)] [R^(a-1/2) Q^(1-a)] and apply Cauchy-Schwarz.)
    The base curve is ``rdp_curve(..., relation with group=1, method=base_method)``."""
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    K = relation.group
    acc: list = []
    _group_orders(K, a, acc)
    base_orders = np.unique(np.concatenate(acc))
    base = rdp_curve(mech, scheme, base_orders, replace(relation, group=1), base_method).epsilon
    return _group_eval(K, a, base_orders, np.asarray(base, dtype=float))


def mironov_group_prop2(
    mech: Mechanism, scheme: Scheme, alpha, relation: Relation, base_method: str = "best"
) -> np.ndarray:
    """Mironov 2017, Prop 2: (alpha, eps)-RDP implies (alpha/K, 3^log2(K) eps)-RDP at distance
    K = 2^C when alpha >= 2K.  Orders below 2 use the order-2 value (RDP is monotone in the
    order)."""
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    K = relation.group
    c = int(round(math.log2(K)))
    if 2**c != K:
        raise ValueError(f"Mironov 2017, Prop 2 needs a group size that is a power of 2, got {K}")
    b = np.maximum(a, 2.0)
    base = rdp_curve(mech, scheme, K * b, replace(relation, group=1), base_method).epsilon
    return 3.0**c * np.asarray(base, dtype=float)


_GROUP_METHODS = ("mironov-group", "mironov-group-prop2")


def _has_base(m, s, r) -> bool:
    """Some group-1 result applies to (m, s, r with group 1)."""
    if r.group <= 1:
        return False
    r1 = replace(r, group=1)
    return any(
        meth.in_best and meth.applies(m, s, r1)
        for name, meth in REGISTRY.items()
        if name not in _GROUP_METHODS
    )


@rdp_method(
    "mironov-group",
    SRC_MIRONOV_GROUP,
    when=_has_base,
)
def _mironov_group_method(mech, scheme, relation, alpha):
    return monotone_envelope(alpha, lambda a: mironov_group_curve(mech, scheme, a, relation))


@rdp_method(
    "mironov-group-prop2",
    SRC_MIRONOV_PROP2,
    when=lambda m, s, r: _has_base(m, s, r) and (r.group & (r.group - 1)) == 0,
    in_best=False,
)
def _mironov_prop2_method(mech, scheme, relation, alpha):
    return mironov_group_prop2(mech, scheme, alpha, relation)


# ----------------------------------------------------------------------------------------
# Schuchardt et al. 2024: tight results
# ----------------------------------------------------------------------------------------
def _binom_log_weights(K: int, r: float) -> np.ndarray:
    """log Binomial(k | K, r), k = 0..K, for 0 < r < 1 (no underflow for tiny r)."""
    k = np.arange(K + 1, dtype=float)
    return _log_binom(float(K), k) + k * math.log(r) + (K - k) * math.log1p(-r)


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
        return mech._rdp(a, group)
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


def _bern_log_psi(a: np.ndarray, q: float, delta: float) -> np.ndarray:
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
    val = np.maximum(_bern_log_psi(a, t, delta), _bern_log_psi(a, p, -delta))
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
                best = np.maximum(best, _bern_log_psi(a, q, w * (t2 - t4)))
    return np.maximum(best, 0.0) / (a - 1)


def _tight_applies(m, s, r) -> bool:
    if isinstance(s, Poisson) and type(r) is AddRemove:
        return isinstance(m, (Gaussian, RandomizedResponse))
    if isinstance(s, WithoutReplacement) and type(r) is Substitution:
        return isinstance(m, RandomizedResponse) and r.group == 1
    return False


@rdp_method(
    "schuchardt-tight",
    SRC_TIGHT,
    mechanisms=(Gaussian, RandomizedResponse),
    schemes=(Poisson, WithoutReplacement),
    relations=(AddRemove, Substitution),
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
    if q >= n:
        raise ValueError(
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
        log_psi[2:] = (j[2:] - 1) * mech._rdp(j[2:], 2)

    def cgf_at(ints):
        out = np.empty(ints.size)
        for idx, nn in enumerate(ints):
            js = np.arange(nn + 1, dtype=float)
            terms = _log_binom(float(nn), js) + js * math.log(w) + (nn - js) * math.log1p(-w)
            out[idx] = math.log(2.0) + logsumexp(terms + log_psi[: nn + 1])
        return out * (1 + 1e-14)

    eps = _interpolate_cgf(a, cgf_at)
    return np.minimum(eps, mech._rdp(a, 2))


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


# ----------------------------------------------------------------------------------------
# Daigavane et al. 2022 (Prop E.5)
# ----------------------------------------------------------------------------------------
def daigavane_rdp(mech: Mechanism, scheme: WithoutReplacement, group: int, alpha) -> np.ndarray:
    """Prop E.5 (Schuchardt et al. 2024), after Daigavane et al. 2022: for K-fold substitution
    under sampling ``q`` of ``N`` records without replacement,
    ``Psi_a <= sum_k HyperGeom(k | N, K, q) max_{d(y,y') <= k} Psi_a(b_y || b_y')``
    (optimal transport without conditioning, Thm 3.3).  The inner maximum is the base
    mechanism's RDP at group distance k (white-box)."""
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    q, n = scheme.batch_size, scheme.dataset_size
    if group > n:
        raise ValueError(f"group must be <= dataset_size={n} for Prop E.5, got {group}")
    ks = np.arange(0, min(group, q) + 1)
    logw = hypergeom.logpmf(ks, n, group, q)
    terms = [np.full(a.shape, logw[0])]
    for k, lw in zip(ks[1:], logw[1:], strict=True):
        terms.append(lw + (a - 1) * mech._rdp(a, int(k)))
    total = logsumexp(np.stack(terms), axis=0)
    return np.maximum(total * (1 + 1e-14), 0.0) / (a - 1)


@rdp_method(
    "daigavane",
    SRC_DAIGAVANE,
    schemes=(WithoutReplacement,),
    relations=(Substitution,),
    when=lambda m, s, r: type(r) is Substitution,
)
def _daigavane_method(mech, scheme, relation, alpha):
    return daigavane_rdp(mech, scheme, relation.group, alpha)
