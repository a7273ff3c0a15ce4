"""Dominating pairs: a LossPair is a pair (P, Q) of distributions given by its privacy loss
(log dP/dQ), its tails and profile; the engines (pld/) discretise and compose them."""

from .combinators import MixturePair, SwappedPair, mixture_pair
from .discrete import DiscretePair
from .loss_pair import LossPair
from .mechanism_pairs import GaussianPair, LaplacePair
from .mixtures import DisjointMixturePair, GaussianShiftMixturePair, SymmetrisedPair

__all__ = [
    "LossPair", "GaussianPair", "LaplacePair", "DiscretePair", "SwappedPair", "MixturePair",
    "mixture_pair", "DisjointMixturePair", "SymmetrisedPair", "GaussianShiftMixturePair",
]
