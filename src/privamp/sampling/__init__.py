"""Sampling schemes and neighbouring relations (immutable values, validated on construction)."""

from .relations import AddRemove, HybridSubstitution, Relation, Substitution, ZeroOut
from .schemes import (
    BalancedIteration,
    BallsInBins,
    CustomSampler,
    Deterministic,
    Dropout,
    ModelSplit,
    PartialModelSplit,
    PersistentBallsInBins,
    Poisson,
    Scheme,
    Shuffle,
    SubsampledModelSplit,
    TruncatedPoisson,
    WithoutReplacement,
    WithReplacement,
)

__all__ = [
    "Relation",
    "AddRemove",
    "SubsampledModelSplit", "Substitution",
    "ZeroOut",
    "Scheme",
    "Poisson",
    "WithoutReplacement",
    "WithReplacement",
    "Deterministic",
    "Shuffle",
    "BalancedIteration",
    "ModelSplit",
    "Dropout",
    "HybridSubstitution",
    "PartialModelSplit",
    "CustomSampler",
    "BallsInBins",
    "PersistentBallsInBins",
    "TruncatedPoisson",
]
