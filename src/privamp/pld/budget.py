"""The PLD engine's error budget and tuning constants, in one place.

Every float-error allowance and every tuning knob the grid PLDs use is named here, with what
it covers; the engine modules (:mod:`privamp.pld.grid`, :mod:`privamp.pld.discretise`,
:mod:`privamp.pld.compose`) read these names, and accountants that size grids or explain a
refusal read them too, instead of reaching into the engines' private names.

:class:`ErrorBudget` gathers them as one frozen object (:data:`BUDGET` holds the values in
use); the module constants are the same numbers, for hot paths.

Allowances (all applied in the safe direction; see the :mod:`privamp.pld.grid` docstring):

* :data:`REL_SAFETY`: relative factor 1 +- 1e-12 on one discretised step's masses (relative
  float error of the tail evaluations and of the isotonic regression).
* :data:`TRUNC_BUDGET`: l1 mass a whole self-composition may truncate (moved up/to +inf on
  the pessimistic side, dropped on the optimistic one).
* :data:`QUERY_REL`: relative allowance for the float error of the suffix sums that answer
  ``delta()`` / ``epsilon()``.

Tuning (speed only; every choice stays certified):

* :data:`MAX_LOSS`: grids are clipped to losses in [-700, 700] (``e^700`` is near the float
  range); mass beyond is moved to +inf (pessimistic) or dropped (optimistic).
* :data:`TWO_LEVEL_MIN_T`, :data:`TWO_LEVEL_FACTOR`: runs of at least 5000 steps are
  composed in two levels, the second on a grid 8 times coarser
  (:func:`privamp.pld.compose.compose_two_level`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BUDGET",
    "MAX_LOSS",
    "QUERY_REL",
    "REL_SAFETY",
    "TRUNC_BUDGET",
    "TWO_LEVEL_FACTOR",
    "TWO_LEVEL_MIN_T",
    "ErrorBudget",
    "MEMORY_BUDGET",
    "DENSE_POINT_BYTES",
    "GRID_POINT_BYTES",
    "discretise_bytes",
]


#: relative safety factor applied to the masses of one discretised step (covers relative
#: float error in the tail evaluations and in the isotonic regression)
REL_SAFETY = 1e-12


#: default l1 budget of the tails dropped/moved by truncation over a whole self-composition
TRUNC_BUDGET = 1e-13


#: relative allowance for float error in the suffix sums used by delta() / epsilon()
QUERY_REL = 1e-9


#: largest |loss| a discretisation grid reaches (beyond: mass moved to +inf or dropped)
MAX_LOSS = 700.0


#: two-level composition: coarsening factor of the second level
TWO_LEVEL_FACTOR = 8


#: two-level composition is used for T >= this many steps
TWO_LEVEL_MIN_T = 5000


#: memory one discretisation may take (bytes): a grid that would need more is refused up
#: front (:func:`privamp.pld.discretise.discretise`: NotApplicable, naming the step h that
#: would fit), never allocated (issue 27: a 3e-297 shift took 1062 MB)
MEMORY_BUDGET = 2**30


#: peak bytes per grid point carrying mass in :func:`privamp.pld.discretise.discretise`
#: (tracemalloc, Poisson-subsampled Gaussian pairs: 240 for both sides, 128 pessimistic
#: only, 415 optimistic only over a sparse tail; rounded up)
DENSE_POINT_BYTES = 450


#: ... and per point of the full grid (its losses, the masses put back on it)
GRID_POINT_BYTES = 32


def discretise_bytes(dense: float, full: float) -> float:
    """Estimated peak memory (bytes) of discretising on ``full`` grid points of which
    ``dense`` carry mass (the others: a sparse tail).

    Args:
        dense: grid points carrying mass.
        full: points of the whole grid.

    Returns:
        The estimate, in bytes.
    """
    return DENSE_POINT_BYTES * dense + GRID_POINT_BYTES * full


@dataclass(frozen=True)
class ErrorBudget:
    """The PLD engine's allowances and tuning constants as one object.

    Attributes:
        rel_safety: :data:`REL_SAFETY`.
        trunc_budget: :data:`TRUNC_BUDGET`.
        query_rel: :data:`QUERY_REL`.
        max_loss: :data:`MAX_LOSS`.
        two_level_factor: :data:`TWO_LEVEL_FACTOR`.
        two_level_min_t: :data:`TWO_LEVEL_MIN_T`.
    """

    rel_safety: float = REL_SAFETY
    trunc_budget: float = TRUNC_BUDGET
    query_rel: float = QUERY_REL
    max_loss: float = MAX_LOSS
    two_level_factor: int = TWO_LEVEL_FACTOR
    two_level_min_t: int = TWO_LEVEL_MIN_T


#: the budget in use (the engines read the module constants above, which are these values)
BUDGET = ErrorBudget()
