"""Base mechanisms (one release): Rényi DP, privacy profile and dominating pair of each, at
any group distance."""

from .base import Mechanism
from .gaussian import Gaussian
from .laplace import Laplace
from .matrix import MatrixMechanism
from .randomized_response import RandomizedResponse

__all__ = [
    "Mechanism",
    "Gaussian",
    "Laplace",
    "MatrixMechanism",
    "RandomizedResponse",
]
