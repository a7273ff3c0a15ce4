"""Daigavane et al. 2022 (arXiv:2111.15521): the group RDP bound for sampling without
replacement that Schuchardt et al. 2024 restate as Prop E.5.
"""

from __future__ import annotations

import numpy as np

from ..mechanisms.base import Mechanism
from ..numerics.logspace import logsumexp
from ..numerics.special import log_hypergeom_pmf
from ..sampling.relations import Substitution
from ..sampling.schemes import WithoutReplacement
from .registry import rdp_method

__all__ = [
    "daigavane_rdp",
]


SRC_DAIGAVANE = "Daigavane et al. 2022 (Schuchardt et al. 2024, Prop E.5)"


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
    logw = log_hypergeom_pmf(n, group, q)
    # Psi = 1 + sum_{k >= 1} w_k expm1((a - 1) D_k): w_0 ~ 1 never enters, so a tiny
    # log Psi (orders near 1, rare members) is not lost to the rounding of the weights
    # (summing w_k e^{...} in log space gave log Psi < 0 -> RDP 0 at a = 1.0001, and the
    # total-variation shortcut then eps = 0 for every delta: found by fuzzing); the
    # weights' logs are within ~K u (log_hypergeom_pmf), the log/expm1 steps a few u each:
    # the factor 1 + (K + 16) 1e-14 covers both
    terms = []
    for k, lw in zip(ks[1:], logw[1:], strict=True):
        c = (a - 1) * mech.rdp_kernel(a, int(k))
        with np.errstate(divide="ignore"):
            terms.append(lw + c + np.log(-np.expm1(-c)))  # log(w_k expm1(c))
    total = np.logaddexp(0.0, logsumexp(np.stack(terms), axis=0))
    return np.maximum(total * (1 + (group + 16) * 1e-14), 0.0) / (a - 1)


@rdp_method(
    "daigavane",
    SRC_DAIGAVANE,
    schemes=(WithoutReplacement,),
    relations=(Substitution,),
    when=lambda m, s, r: type(r) is Substitution,
)
def _daigavane_method(mech, scheme, relation, alpha):
    return daigavane_rdp(mech, scheme, relation.group, alpha)

