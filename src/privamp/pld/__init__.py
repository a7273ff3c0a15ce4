"""The generic two-sided PLD engine: a PLD on a grid of privacy losses (pessimistic or
optimistic), discretisation of a LossPair, composition by FFT, coarsening. Names no mechanism."""

from .budget import BUDGET, ErrorBudget
from .compose import compose_two_level
from .discretise import discretise
from .grid import PLD
from .two_sided import TwoSidedPLD

__all__ = ["BUDGET", "ErrorBudget", "PLD", "TwoSidedPLD", "discretise", "compose_two_level"]
