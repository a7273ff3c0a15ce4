"""Zhu & Wang 2019 (ICML 2019, 'Poisson subsampled Rényi differential privacy'): RDP of
Poisson subsampling for any base mechanism, the general upper bound (Thm 6) and the tight
bound at integer orders (Thm 8).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..mechanisms.base import Mechanism
from ..numerics.logspace import logsumexp
from ..sampling.relations import AddRemove, Relation, ZeroOut
from ..sampling.schemes import Poisson
from .mironov2019 import check_rows, is_poisson_group1, round_up
from .registry import rdp_method

__all__ = [
    "zhu_wang_rdp",
]


# ----------------------------------------------------------------------------------------
# Zhu & Wang 2019 general bound
# ----------------------------------------------------------------------------------------
def _zw_log_bound_integer(eps: np.ndarray, n: int, q: float) -> float:
    """log sum_{l=0}^n C(n,l) q^l (1-q)^(n-l) exp((l-1) eps_l), with eps_l = eps[l-2] the base
    RDP at order l (the l = 0, 1 terms have exp(...) = 1), computed as
    log(1 + sum_{l>=2} C(n,l) q^l (1-q)^(n-l) (exp((l-1) eps_l) - 1))."""
    if n == 1:
        return 0.0
    ll = np.arange(2, n + 1, dtype=float)
    y = (ll - 1.0) * eps[: n - 1]
    lbin = special.gammaln(n + 1.0) - special.gammaln(ll + 1.0) - special.gammaln(n - ll + 1.0)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        lexpm1 = np.where(
            y < 30.0, np.log(np.expm1(np.minimum(y, 30.0))), y + np.log1p(-np.exp(-y))
        )
        l1q = math.log1p(-q) if q < 1 else -np.inf
        rest = np.where(n - ll == 0, 0.0, (n - ll) * l1q)
    terms = lbin + ll * math.log(q) + rest + lexpm1
    pad = 4e-16 * (
        np.abs(lbin) + np.abs(np.where(np.isfinite(y), y, 0.0)) + abs(n * math.log(q)) + 1.0
    )
    return float(np.logaddexp(0.0, logsumexp(terms + pad)))


def zhu_wang_rdp(
    mechanism: Mechanism, q: float, alpha: np.ndarray | float, factor: float = 2.0
) -> np.ndarray:
    """Zhu & Wang 2019 Poisson bound as stated by Schuchardt et al. 2024, Prop. E.4:

        exp((a - 1) eps(a)) <= factor * sum_{l=0}^a C(a,l) q^l (1-q)^(a-l) exp((l-1) eps_B(l))

    for integer a >= 2, with eps_B the base mechanism's RDP (group distance 1, both
    directions) and ``factor`` = 2 (valid for any mechanism; ``factor=1`` is the form of
    Dong et al. 2025, Thm 3.11, see :func:`_zhu_wang_tight`).

    Real orders: f(a) = (a - 1) D_a(M(x) || M(x')) = log E[(dM(x)/dM(x'))^a] is convex in a
    for every pair (Hölder's inequality; van Erven & Harremoës 2014, Thm 11), and f(1) = 0.
    Writing a = (1 - t) n + t (n + 1) with n = floor(a), f(a) <= (1 - t) f(n) + t f(n + 1)
    <= (1 - t) B(n) + t B(n + 1), where B is the integer-order bound above (B(1) = f(1) = 0).
    The right side bounds every pair of neighbours, hence the worst one: eps(a) <= that / (a-1).
    """
    a = check_rows(np.atleast_1d(alpha))
    shape = np.shape(alpha)
    flat = a.ravel()
    if q <= 0.0:
        return np.zeros(shape)
    n0 = np.floor(flat).astype(np.int64)
    is_int = flat == n0
    n1 = np.where(is_int, n0, n0 + 1)
    top = int(n1.max())
    eps = np.asarray(mechanism.rdp_kernel(np.arange(2, top + 1, dtype=float), 1), dtype=float)
    lf = math.log(factor)
    cache: dict[int, float] = {1: 0.0}

    def B(n: int) -> float:
        if n not in cache:
            cache[n] = lf + _zw_log_bound_integer(eps, n, q)
        return cache[n]

    out = np.empty_like(flat)
    for i, (x, lo, hi) in enumerate(zip(flat, n0, n1, strict=True)):
        if lo == hi:
            f = B(int(lo))
        else:
            t = x - lo
            f = (1.0 - t) * B(int(lo)) + t * B(int(hi))
        out[i] = f
    return round_up(out, flat).reshape(shape)


@rdp_method(
    "zhu-wang",
    "Zhu & Wang 2019 Poisson bound as in Schuchardt et al. 2024, Prop. E.4 (factor 2)",
    schemes=(Poisson,),
    relations=(AddRemove, ZeroOut),
    when=is_poisson_group1,
)
def _zhu_wang(
    mechanism: Mechanism, scheme: Poisson, relation: Relation, alpha: np.ndarray
) -> np.ndarray:
    """Zhu & Wang 2019 general Poisson bound with the factor 2 (Schuchardt et al. 2024,
    Prop. E.4), any base mechanism with an RDP curve; real orders by log-convex
    interpolation (see :func:`zhu_wang_rdp`)."""
    return zhu_wang_rdp(mechanism, scheme.rate, alpha, factor=2.0)


@rdp_method(
    "zhu-wang-tight",
    "Zhu & Wang 2019, Thm 8 / Dong et al. 2025, Thm 3.11 (no factor 2; proven for removal, "
    "and for insertion only under symmetry conditions; kept out of 'best')",
    schemes=(Poisson,),
    relations=(AddRemove, ZeroOut),
    when=is_poisson_group1,
    in_best=False,
)
def _zhu_wang_tight(
    mechanism: Mechanism, scheme: Poisson, relation: Relation, alpha: np.ndarray
) -> np.ndarray:
    """sum_{l=0}^a C(a,l) q^l (1-q)^(a-l) exp((l-1) eps_B(l)) without the factor 2.

    At integer orders this is exactly the *removal* moment E_Q[(1-q+qL)^a] of the base pair
    (binomial expansion; Schuchardt et al. 2024, proof of Prop. E.4, Case 1), so it is always
    valid for removal.  For insertion it needs extra conditions: Mironov, Talwar, Zhang 2019,
    Thm 5 (the Gaussian, where it coincides with "mironov-sgm" at integer orders and is
    looser elsewhere) or Zhu & Wang 2019, Thm 8 (a bound on the Pearson-Vajda
    pseudo-divergence).  For a general mechanism it is not a proven upper bound, hence
    ``in_best=False``: it is computed only when asked for by name, for comparison.

    Numerical check (tests/theorems/mironov2019/test_poisson_rdp.py): against the exact
    two-direction Poisson RDP
    of Laplace (scales 0.1..10) and randomized response (theta 0.51..0.999) at rates 1e-4..0.99
    and orders 1.001..3000, the insertion moment never exceeded the removal one, so this form
    was never below "poisson-exact" (no counter-example found; still no proof).
    """
    return zhu_wang_rdp(mechanism, scheme.rate, alpha, factor=1.0)

