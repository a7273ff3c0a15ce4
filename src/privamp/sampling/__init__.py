"""Sampling schemes and neighbouring relations (immutable values, validated on construction)."""

from .relations import AddRemove, Relation, Substitution, ZeroOut
from .schemes import (
    BalancedIteration,
    BallsInBins,  # noqa: F401 (issue 13)
    Deterministic,
    Dropout,
    ModelSplit,
    Poisson,
    Scheme,
    Shuffle,
    SubsampledModelSplit,
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
    "BallsInBins",
]
