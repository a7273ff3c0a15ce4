"""Wang, Balle, Kasiviswanathan 2019 (arXiv:1808.00087): RDP of sampling without replacement
under substitution (Thm 9, with the Thm 27 refinement).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..mechanisms.base import Mechanism
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.laplace import Laplace
from ..mechanisms.pure import pure_eps
from ..mechanisms.randomized_response import RandomizedResponse
from ..numerics.logspace import logsumexp
from ..numerics.special import log_binom, log_expm1
from ..renyi.curves import interpolate_cgf
from ..sampling.relations import Substitution
from ..sampling.schemes import WithoutReplacement
from .registry import rdp_method

__all__ = [
    "wang2019_rdp",
]


SRC_WANG = "Wang, Balle, Kasiviswanathan 2019, Thm 9 + Thm 27 (Schuchardt et al. 2024, Prop E.2)"


_J27 = 100  # Thm 27 terms are used for j <= _J27 (as autodp does with its default m = 100)


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
        eps_j[2:] = mech.rdp_kernel(j[2:], distance)
    log_psi = (j - 1) * eps_j  # log e^{(j-1) eps(j)}
    einf = pure_eps(mech, distance)
    lem1 = log_expm1(einf)  # log(e^{eps_inf} - 1)
    with np.errstate(invalid="ignore"):
        pure = np.where(j >= 2, np.minimum(math.log(2.0), j * lem1), 0.0)
    log_t = log_psi + pure  # Thm 9, j >= 3
    if jmax >= 2:
        e2 = eps_j[2]
        t2 = min(math.log(4.0) + log_expm1(e2) if e2 > 0 else -np.inf,
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


def wang_eps(mech: Mechanism, gamma: float, alpha: np.ndarray, distance: int = 1) -> np.ndarray:
    a = np.asarray(alpha, dtype=float)
    if gamma == 0:
        return np.zeros_like(a)
    jmax = int(np.ceil(a.max()))
    c = _wang_log_terms(mech, gamma, jmax, distance)

    def cgf_at(ints):
        out = np.empty(ints.size)
        for idx, n in enumerate(ints):
            js = np.arange(n + 1, dtype=float)
            out[idx] = logsumexp(log_binom(float(n), js) + c[: n + 1])
        return out * (1 + 1e-14) + 1e-300

    eps = interpolate_cgf(a, cgf_at)
    eps = np.minimum(eps, mech.rdp_kernel(a, distance))
    einf = pure_eps(mech, distance)
    if math.isfinite(einf):
        eps = np.minimum(eps, math.log1p(gamma * math.expm1(einf)))
    return eps


def wang2019_rdp(mech: Mechanism, scheme: WithoutReplacement, alpha: np.ndarray) -> np.ndarray:
    """RDP of ``mech`` after sampling ``batch_size`` of ``dataset_size`` records without
    replacement, under substitution (Wang, Balle, Kasiviswanathan 2019, Thm 9 with the
    Thm 27 refinement for Gaussian and Laplace mechanisms; real orders by CGF convexity)."""
    return wang_eps(mech, scheme.batch_size / scheme.dataset_size, alpha, 1)


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

