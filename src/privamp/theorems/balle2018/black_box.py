"""Black-box group privacy (Balle, Barthe, Gaboardi 2018, arXiv:1807.01647, Sec. 5 and
Figure 1(e)) as a one-step RDP method and a whole-run accountant.

``"balle-profile-black-box"`` — Thm 6 (profile -> RDP) of the subsampled profile whose group
terms delta_{M,k} come from the group-privacy lemma of (eps, delta)-DP rather than from the
mechanism at distance k (:func:`~privamp.theorems.balle2018.profiles.group_delta`).  It never
beats the white-box result for the mechanisms privamp knows (white-box is their exact group
profile), so it stays out of ``method="best"``; it is what applies when only the mechanism's
one-record profile may be trusted.

Run accountant ``"black-box-group"`` — that curve composed over the run's steps (Mironov 2017,
Prop 1) and converted by Balle et al. 2020 (arXiv:1905.09982), Thm 21:
``Training(..., relation=AddRemove(group=K)).epsilon(delta, accountant="black-box-group")``.
"""

from __future__ import annotations

import numpy as np

from ...errors import NotApplicable
from ...mechanisms.gaussian import Gaussian
from ...mechanisms.laplace import Laplace
from ...mechanisms.randomized_response import RandomizedResponse
from ...numerics.special import FLOAT_PROFILE_MIN_SHIFT
from ...renyi.conversion import SOURCE_BALLE
from ...results import Bound
from ...sampling.relations import AddRemove, Substitution
from ...sampling.schemes import Poisson, WithoutReplacement, WithReplacement
from ..registry import REGISTRY, BoundPair, RunAnalysis, rdp_method, run_accountant
from .profiles import PAPER, covers_fixed_batch
from .thm6 import profile_rdp

__all__ = ["SRC_BLACK_BOX"]


SRC_BLACK_BOX = f"{PAPER}, Thm 6 of Thms 8-11 / Poisson substitution with black-box group " \
    "privacy (Sec. 5)"


def _check_cost(mech) -> None:
    """Thm 6's grid asks a Gaussian's one-record profile at ~1e5 points; below shift
    :data:`~privamp.numerics.special.FLOAT_PROFILE_MIN_SHIFT` each is an mpmath evaluation
    (sigma 50: 20-140 s a query, review session 11), so such runs are refused."""
    if isinstance(mech, Gaussian) and mech.shift(1) < FLOAT_PROFILE_MIN_SHIFT:
        raise NotApplicable(
            f"black-box group privacy needs sensitivity / sigma >= {FLOAT_PROFILE_MIN_SHIFT} "
            f"(sigma <= {1 / FLOAT_PROFILE_MIN_SHIFT:.4g} at sensitivity 1), got "
            f"{mech.shift(1):.4g}: its profile would take minutes in high precision; the "
            "white-box group accountants (accountant='best') answer this run")


def _applies(mech, scheme, relation) -> bool:
    if relation.group < 2:
        return False
    if isinstance(scheme, Poisson):
        return type(relation) in (AddRemove, Substitution)
    return covers_fixed_batch(scheme, relation)


@rdp_method(
    "balle-profile-black-box",
    SRC_BLACK_BOX,
    mechanisms=(Gaussian, Laplace, RandomizedResponse),
    schemes=(Poisson, WithoutReplacement, WithReplacement),
    relations=(AddRemove, Substitution),
    when=_applies,
    in_best=False,
)
def _black_box_rdp(mech, scheme, relation, alpha: np.ndarray) -> np.ndarray:
    _check_cost(mech)
    return profile_rdp(mech, scheme, alpha, relation, "black-box")


class _BlackBoxRun(RunAnalysis):
    def __init__(self, run) -> None:
        # imported here so that importing this module does not register the "rdp" accountant
        # ahead of the others (Training asks accountants in registration order)
        from ...accountants.rdp import RdpAccountant, compositions

        method = REGISTRY["balle-profile-black-box"]

        def curve(a: np.ndarray) -> np.ndarray:
            return method.func(run.mechanism, run.scheme, run.relation, np.asarray(a, float))

        self.acc = RdpAccountant().compose(curve, compositions(run))
        self.source = f"RDP ({SRC_BLACK_BOX}) converted by {SOURCE_BALLE}"

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        eps = self.acc.get_epsilon(delta)
        return Bound(eps, "upper", self.source), None

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return Bound(self.acc.get_delta(epsilon), "upper", self.source), None


@run_accountant(
    "black-box-group",
    lambda run: run.relation is not None and REGISTRY["balle-profile-black-box"].applies(
        run.mechanism, run.scheme, run.relation),
    "groups by black-box group privacy of the one-record profile (Balle et al. 2018, Sec. 5), "
    "Thm 6 -> RDP, composed (never tighter than the white-box group accountants: asked by "
    "name only)",
    in_best=False,
)
def _build(run) -> RunAnalysis:
    _check_cost(run.mechanism)
    return _BlackBoxRun(run)
