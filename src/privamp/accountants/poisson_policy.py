"""Tuning constants of the Poisson PLD accountant (:mod:`.poisson`) at tiny and small
rates: which grid plan a secondary direction takes, when a long run is composed in one level,
which runs keep the optimistic side on the lead step, when the Rényi floor is taken from one
step.  Heuristics: soundness never depends on them (every choice is certified).
"""

from __future__ import annotations

import numpy as np

from ..errors import NotApplicable

__all__ = ["COARSE_SLACK_SHARE", "FINE_SECONDARY_RATE", "FINE_SECONDARY_SHIFT", "NEAR_TIE_SHARE",
           "PLD_MAX_STEPS", "SHORT_RUN", "SINGLE_FLOOR_POINTS", "SMALL_WINDOW", "check_steps",
           "near_tie"]


#: ``PLDAnalysis.renyi_floor`` takes T times one step's floor where every one-step
#: optimistic PLD has at most this many points (renyi_floor's block count: no Jensen
#: blocking), else also the composed run's floor
SINGLE_FLOOR_POINTS = 1024


#: at rates up to FINE_SECONDARY_RATE and shifts (sensitivity / sigma) up to
#: FINE_SECONDARY_SHIFT, the add direction of Poisson-subsampled Gaussian (pessimistic side
#: only, ``PLDAnalysis._single_steps``) is discretised on the remove direction's plan at
#: once, where ``PLDAnalysis._refine_if_deciding`` used to bring it after a first pass on
#: its own coarse grid (and its own :func:`grid_plan`): there the two directions' profiles
#: nearly coincide, so the coarse pass decided the upper bound in most runs and the direction
#: was composed twice (q 1e-6, sigma 4, T 1e4: 19.8 -> 15.7 ms; where it did not decide, the
#: saved plan pays for the finer grid: q 1e-4, sigma 2, T 100: 9.0 -> 7.8 ms).  At larger
#: shifts (sigma 1) the add direction lies well below and its fine grid costs more than the
#: plan (q 1e-5, sigma 1, T 10: 24 -> 34 ms): kept coarse.  A heuristic: soundness never
#: depends on the grid, and the lead's plan is the one the refinement uses.
FINE_SECONDARY_RATE = 1e-4
FINE_SECONDARY_SHIFT = 0.5


#: an epsilon query at delta composes a coarse pessimistic-only (add) direction on the lead's
#: plan at once where its run's float allowance (T times one step's slack) is at least this
#: share of delta (``PLDAnalysis._coarse_would_decide``): its coarse run then decided the
#: upper bound and was composed again (q 1e-5, sigma 1, T 1e7: allowance 9.1e-8 at delta
#: 1e-5, the same on the lead's plan, where it lies below the lead; T 1e6: 9.1e-9, the coarse
#: run below the lead: kept coarse; saves the coarse composition, ~6 of ~90 ms CPU, same
#: interval).  A heuristic: soundness never depends on it.
COARSE_SLACK_SHARE = 3e-3


#: a long run (at least TWO_LEVEL_MIN_T steps) of a small-rate Gaussian direction whose T-fold
#: window (:func:`grid_plan`'s width) spans at most this many steps of its grid is composed in
#: one level on that grid (``PLDAnalysis._two_level``): the two-level scheme's fixed costs
#: (two powers, a coarsening, a remainder) outweigh its shorter window there (q 1e-5,
#: sigma 4, T 1e4: 428-point steps, a 18k-point window: 2.8 -> 1.8 ms per side, upper
#: 3.484243e-4 -> 3.484073e-4; at 85k steps, q 1e-4, sigma 2, T 1e5: 3.0 against 7.6 ms).
#: A heuristic: both are certified, one level without the coarse stage's error.
SMALL_WINDOW = 4e4


#: runs shorter than this keep the optimistic side of the one-level regime on the lead step h
#: (``PLDAnalysis._lead_recipe``; a heuristic, soundness never depends on it): q 1e-5,
#: sigma 0.3, T 10: 1.84 s -> 0.92 s CPU, lower bound 0.0773320 -> 0.0773194 (upper
#: 0.0773323, dp-accounting 0.077332 in 1.99 s)
SHORT_RUN = 100


#: above this many steps the FFT composition is not attempted (its grid and float-error
#: allowances were checked up to 1e9 steps); the RDP accountant composes in closed form
PLD_MAX_STEPS = 10**9


def check_steps(steps: int) -> None:
    """Raises NotApplicable above :data:`PLD_MAX_STEPS` steps (moved here from
    :mod:`.poisson` in session 12, which re-exports it).

    Args:
        steps: the run's number of steps.

    Raises:
        NotApplicable: ``steps`` above :data:`PLD_MAX_STEPS`.
    """
    if steps > PLD_MAX_STEPS:
        raise NotApplicable(f"steps={steps} is above the PLD accountant's {PLD_MAX_STEPS:.0e} "
                            "steps (the Rényi-DP accountant composes any number in closed form)")


#: a refined pessimistic-only (add) direction whose upper bound exceeds the full directions'
#: by at most this share of their interval's width is not given an optimistic side
#: (:func:`near_tie`)
NEAR_TIE_SHARE = 0.1


def near_tie(upper: np.ndarray, best: np.ndarray, lower: np.ndarray) -> bool:
    """Whether a direction's upper bounds ``upper`` exceed the other directions' ``best``
    by at most :data:`NEAR_TIE_SHARE` of the interval ``[lower, best]`` at every query point:
    then ``PLDAnalysis._refine_if_deciding`` composes no optimistic side for it.  A
    heuristic for speed (issue 28, session 12): the lower bound of the other directions
    stays certified for the run, and only tightness could be lost.  At tiny rates the two
    directions' true profiles nearly coincide, and their pessimistic sides tie within the
    discretisation error: of 45 settings (q 1e-6..1e-4, sigma 0.5..8, T 100..1e6, delta
    1e-5) the two whose add direction decided (by 0.6% and 6.5% of the width) had an
    optimistic side 2% and 29% of the width below the remove direction's (q 1e-6, sigma 4,
    T 1e4: 16.3 -> ~13 ms, the same interval).

    Args:
        upper: the direction's upper bounds at the query points.
        best: the other directions' largest upper bounds there.
        lower: their largest lower bounds there.

    Returns:
        True if every excess ``upper - best`` is at most the share of ``best - lower``
        (False where any is not finite).
    """
    with np.errstate(invalid="ignore"):
        return bool(np.all(upper - best <= NEAR_TIE_SHARE * (best - lower)))
