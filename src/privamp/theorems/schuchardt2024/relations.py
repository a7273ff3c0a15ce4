"""Relations other than the one a base mechanism's sensitivity is measured for, reduced to
results privamp already has.

* ``"schuchardt-hybrid"`` — Schuchardt et al. 2024 (NeurIPS 2024), Thm F.2: sampling
  without replacement, datasets related by substitution, base mechanism private w.r.t. the
  insertion/removal of batch elements (:class:`~privamp.HybridSubstitution`).  A batch
  substitution is an insertion and a removal, so the batches of Thm 3.6's coupling are at
  distance 2 of the batch relation; evaluated as printed (Prop E.2 form), the Wang et al.
  expansion with the base mechanism at distance 2.
* ``"hybrid-as-substitution"`` — the same observation for every scheme and group size: the
  mechanism's substitution sensitivity is at most twice its insertion/removal sensitivity
  (triangle inequality), so every registered substitution result applies to the mechanism
  with doubled sensitivity (Gaussian, Laplace; randomized response is unchanged).
* ``"zero-out-as-substitution"`` — zeroing out ``K`` records is substituting them by the null
  record, and the mechanism's zero-out sensitivity bounds exactly those substitutions, so
  every registered substitution result applies to the mechanism as given (e.g. sampling
  without replacement under zero-out, which had no result).
"""

from __future__ import annotations

import numpy as np

from ...mechanisms.base import Mechanism
from ...mechanisms.gaussian import Gaussian
from ...mechanisms.laplace import Laplace
from ...mechanisms.randomized_response import RandomizedResponse
from ...sampling.relations import HybridSubstitution, Substitution, ZeroOut
from ...sampling.schemes import WithoutReplacement
from ..registry import REGISTRY, rdp_curve, rdp_method
from .core import hybrid_wor_substitution_rdp

__all__ = ["doubled"]


SRC_F2 = "Schuchardt et al. 2024, Thm F.2 (hybrid relations: dataset substitution, batch " \
    "insertion/removal)"


def doubled(mech: Mechanism) -> Mechanism:
    """The mechanism with twice its sensitivity (a batch substitution = insertion + removal)."""
    if isinstance(mech, Gaussian):
        return Gaussian(mech.sigma, 2.0 * mech.sensitivity)
    if isinstance(mech, Laplace):
        return Laplace(mech.scale, 2.0 * mech.sensitivity)
    return mech  # randomized response: any two different batches, the same pair


def _has_substitution_result(mech, scheme, group: int) -> bool:
    rel = Substitution(group)
    return any(m.in_best and m.applies(mech, scheme, rel) for m in REGISTRY.values())


@rdp_method(
    "schuchardt-hybrid",
    SRC_F2,
    mechanisms=(Gaussian, Laplace, RandomizedResponse),
    schemes=(WithoutReplacement,),
    relations=(HybridSubstitution,),
    when=lambda m, s, r: r.group == 1,
)
def _hybrid_f2(mech, scheme, relation, alpha: np.ndarray) -> np.ndarray:
    return hybrid_wor_substitution_rdp(mech, scheme, alpha)


@rdp_method(
    "hybrid-as-substitution",
    f"{SRC_F2}; every substitution result at doubled sensitivity",
    mechanisms=(Gaussian, Laplace, RandomizedResponse),
    relations=(HybridSubstitution,),
    when=lambda m, s, r: _has_substitution_result(doubled(m), s, r.group),
)
def _hybrid_reduced(mech, scheme, relation, alpha: np.ndarray) -> np.ndarray:
    return rdp_curve(doubled(mech), scheme, alpha, Substitution(relation.group)).epsilon


@rdp_method(
    "zero-out-as-substitution",
    "zero-out = substitution by the null record (Kairouz et al. 2021; Chua et al. 2024): "
    "every substitution result at the zero-out sensitivity",
    mechanisms=(Gaussian, Laplace, RandomizedResponse),
    relations=(ZeroOut,),
    when=lambda m, s, r: _has_substitution_result(m, s, r.group),
)
def _zero_out_reduced(mech, scheme, relation, alpha: np.ndarray) -> np.ndarray:
    return rdp_curve(mech, scheme, alpha, Substitution(relation.group)).epsilon
