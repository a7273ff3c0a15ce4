"""privamp: how private is this training run, given how it samples its data?

Tight upper bounds, and certified lower bounds, on the privacy of differentially private
training under Poisson, fixed-size, with-replacement, shuffled, deterministic and balanced
batches, model splitting and dropout — each number labelled with the theorem it came from.

>>> import privamp as pa
>>> run = pa.Training(pa.Gaussian(1.1), pa.Poisson(256 / 60000), steps=14063)
>>> g = run.epsilon(1e-5)          # Guarantee: g.upper, g.lower are Bounds
"""

from . import theorems as _theorems  # noqa: F401  (imports register every result)
from .accounting import Training, calibrate, compare
from .errors import NotApplicable
from .integrations.dp_accounting import from_dp_event
from .mechanisms import Gaussian, Laplace, Mechanism, RandomizedResponse
from .pld import PLD, TwoSidedPLD, discretise
from .results import Bound, Guarantee
from .sampling import (
    AddRemove,
    BalancedIteration,
    BallsInBins,  # noqa: F401 (issue 13)
    Deterministic,
    Dropout,
    ModelSplit,
    Poisson,
    Relation,
    Scheme,
    Shuffle,
    SubsampledModelSplit,
    Substitution,
    WithoutReplacement,
    WithReplacement,
    ZeroOut,
)
from .theorems.balle2018.profiles import profile, profile_bound
from .theorems.chua2024 import ABLQ, calibrate_interval
from .theorems.dong2025.rdp import partial_split_rdp
from .theorems.poisson_pld import poisson_pairs
from .theorems.rdp_composition import RdpAccountant
from .theorems.registry import rdp, rdp_curve, rdp_methods

__version__ = "0.1.0"

__all__ = [
    "Bound",
    "Guarantee",
    "NotApplicable",
    "Mechanism",
    "Gaussian",
    "Laplace",
    "RandomizedResponse",
    "Scheme",
    "Poisson",
    "WithoutReplacement",
    "WithReplacement",
    "Deterministic",
    "Shuffle",
    "BalancedIteration",
    "ModelSplit",
    "Dropout",
    "Relation",
    "AddRemove",
    "Substitution",
    "ZeroOut",
    "rdp",
    "profile",
    "profile_bound",
    "rdp_curve",
    "rdp_methods",
    "Training",
    "calibrate",
    "compare",
    "from_dp_event",
    "PLD",
    "TwoSidedPLD",
    "discretise",
    "poisson_pairs",
    "SubsampledModelSplit",
    "partial_split_rdp",
    "RdpAccountant",
    "ABLQ",
    "calibrate_interval",
    "BallsInBins",
]
