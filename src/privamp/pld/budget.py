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

Memory (issue 27: every query under 1 GB peak resident memory, the process's imports
included, or refused up front): :data:`MEMORY_LIMIT` less an import baseline and a resident
allowance leaves :data:`MEMORY_BUDGET` to one engine operation, predicted by calibrated
bytes per point (:func:`discretise_bytes`, :data:`POWER_POINT_BYTES`; measured with
tracemalloc and the child process's ru_maxrss); :func:`release_memory` returns what a
finished query held (for callers running many).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

from ..numerics.fft_plans import release_fft_plans

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
    "MEMORY_LIMIT",
    "BASELINE_BYTES",
    "RESIDENT_BYTES",
    "DENSE_POINT_BYTES",
    "GRID_POINT_BYTES",
    "POWER_MAX_LEN",
    "POWER_POINT_BYTES",
    "discretise_bytes",
    "release_fft_plans",
    "release_memory",
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


#: the peak resident memory (bytes) of a process answering one query, the interpreter's and
#: privamp's own imports included (issue 27: every query answers in seconds and under 1 GB,
#: or is refused up front)
MEMORY_LIMIT = 10**9


#: allowance for what the process holds before the query: the interpreter, numpy, scipy and
#: privamp take 106-111 MiB peak RSS after ``import privamp`` (with the soundness tests'
#: references too: 111 MiB; the CLI with matplotlib more); rounded up generously
BASELINE_BYTES = 256 * 2**20


#: allowance for the arrays alive beside the largest operation (the other direction's and
#: side's PLDs, cached windows, allocator slack)
RESIDENT_BYTES = 64 * 2**20


#: memory one engine operation (one discretisation, one composition) may take at its peak
#: (bytes): an operation predicted to need more is refused up front
#: (:func:`privamp.pld.discretise.discretise`, :meth:`privamp.pld.grid.PLD.compose`:
#: NotApplicable naming the step h that would fit), never allocated, and the planners
#: (:mod:`privamp.accountants.grid`) do not refine a grid past it.  It is
#: :data:`MEMORY_LIMIT` less :data:`BASELINE_BYTES` and :data:`RESIDENT_BYTES` (about
#: 634 MiB), so that the whole process stays under 1 GB (session 8's fuzz run: a 3e-74 shift
#: at delta(3e-73) reached 1130 MB when this budget was 1 GiB for the grid alone)
MEMORY_BUDGET = MEMORY_LIMIT - BASELINE_BYTES - RESIDENT_BYTES


#: peak bytes per grid point carrying mass in :func:`privamp.pld.discretise.discretise`,
#: temporaries included (tracemalloc peak over 1e6-point grids, session 9: Poisson-subsampled
#: Gaussian and Laplace pairs, their swaps and the plain Gaussian pair, both sides 244-260,
#: optimistic only 228-244, pessimistic only 112-128, a dense grid asked for a sparse tail
#: 252-268 B per point of this and :data:`GRID_POINT_BYTES` together; rounded up)
DENSE_POINT_BYTES = 256


#: ... and per point of the full grid (its losses, the masses put back on it; a sparse
#: tail: 24-33 B per point of the full grid in all)
GRID_POINT_BYTES = 32


#: peak bytes per point of the FFT length of one power-method composition
#: (:func:`privamp.numerics.fft.self_convolve_power`, :func:`privamp.numerics.fft.product_windows`):
#: its long-double spectrum, moduli and output (about 96 by that module's count) and scipy's
#: plans for the length (about 20); resident-set growth measured at 46-85 (session 9:
#: windows of 2.7-6.7M points, Gaussian input, and the one-level run q 1e-7, sigma 0.1,
#: T 1e5 at 4.86M points); rounded up
POWER_POINT_BYTES = 128


#: longest window the power method may take under :data:`MEMORY_BUDGET` (about 5.2M
#: points; longer: the engine falls back to repeated squaring, whose convolutions are
#: budgeted one by one)
POWER_MAX_LEN = MEMORY_BUDGET // POWER_POINT_BYTES


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


def release_memory() -> None:
    """Return what one finished query held: a full garbage collection (objects of a
    reference cycle, e.g. an exception's frames holding PLDs, wait for it) and
    :func:`release_fft_plans`.  For callers that run many queries in one process
    (:func:`privamp.calibrate` between its probes)."""
    gc.collect()
    release_fft_plans()


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
