"""Pure-DP facts of the base mechanisms (the epsilon of Laplace and randomized response)."""

from __future__ import annotations

import math

from .base import Mechanism
from .laplace import Laplace
from .randomized_response import RandomizedResponse


# ----------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------
def pure_eps(mech: Mechanism, distance: int = 1) -> float:
    """Pure-DP epsilon of the base mechanism at a group distance (inf when it has none)."""
    if isinstance(mech, Laplace):
        return mech.epsilon0(distance)
    if isinstance(mech, RandomizedResponse):
        return mech.epsilon0()
    return math.inf

