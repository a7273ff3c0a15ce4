"""The step of short runs (one-level composition, ``T < TWO_LEVEL_MIN_T``) of a small-rate
Poisson-subsampled Gaussian remove direction: how far :func:`privamp.accountants.grid.grid_plan`
refines its automatic step there (issue 28).  A heuristic: soundness never depends on the
step (the pessimistic PLD dominates on every grid), only the width of the certified interval
and the cost."""

from __future__ import annotations

import math

__all__ = [
    "SHORT_RUN_POINTS",
    "SHORT_RUN_REFINE",
    "SHORT_RUN_MIN_STEP",
    "SHORT_RUN_COARSE_T",
    "SHORT_RUN_MIN_POINTS",
    "short_run_step",
]


#: short runs (one-level composition) of small-rate Gaussian: the composed window gets at
#: least about this many points, the step refined by at most ``SHORT_RUN_REFINE``
#: (:func:`short_run_step`) ...
SHORT_RUN_POINTS = 5e5


#: ... the most :func:`short_run_step` refines the automatic step
SHORT_RUN_REFINE = 4.0


#: ... and only a step at least this coarse (within ~3x of dp-accounting's default
#: resolution, value_discretization_interval 1e-4)
SHORT_RUN_MIN_STEP = 3e-5


#: runs of at least this many steps refine only up to ``SHORT_RUN_MIN_POINTS`` points over
#: the composed window (:func:`short_run_step`)
SHORT_RUN_COARSE_T = 1000


#: ... the least points over the composed window there at T = ``SHORT_RUN_COARSE_T``, growing
#: as sqrt(T) (a window of fewer points is where the unrefined step's certified interval was
#: wider than 1e-3 relative)
SHORT_RUN_MIN_POINTS = 3.5e4


def short_run_step(h: float, width: float, T: int = 0) -> float:
    """The step of a short run (``T < TWO_LEVEL_MIN_T``, one-level composition) of a
    small-rate Poisson-subsampled Gaussian direction: h, and where h >= ``SHORT_RUN_MIN_STEP``
    (a wide loss: q >= 1e-3 at sigma >= 0.5) h refined, by at most ``SHORT_RUN_REFINE``,
    until the composed window ``width`` holds ``SHORT_RUN_POINTS`` points (runs of fewer than
    ``SHORT_RUN_COARSE_T`` steps) or ``SHORT_RUN_MIN_POINTS sqrt(T / SHORT_RUN_COARSE_T)``
    points (longer runs).

    What it targets: the certified upper bound at or below dp-accounting's (uncertified)
    PLD estimate, and a certified interval at most 1e-3 relative wide.  Both discretise by
    connect-the-dots; privamp's upper bound also carries certified numerical allowances.
    Where the automatic step (at most 6e-5) is within ~3x of dp-accounting's 1e-4,
    privamp's smaller discretisation error did not always pay for them: its upper bound sat
    up to 1.2e-4 relative above dp-accounting's estimate (q 0.001, sigma 1, T 100:
    [0.0551265, 0.0551815] vs 0.055175; q 256/60000, sigma 0.8 and 1.1, T 100; refined:
    [0.055163, 0.055166]).  Where the step is already finer (smaller rates or larger sigma,
    e.g. q 1e-4, sigma 1: 5.9e-6), dp-accounting's estimate lies well above and the
    refinement only cost time; long runs (two-level composition) keep h.

    Why the longer short runs refine less (session 11): dp-accounting's estimate moves away
    above the truth as T grows, faster than privamp's allowances.  With the unrefined step,
    on q in {1e-3, 256/60000, 1e-2} x sigma in {0.8, 1} (benchmarks/results/
    grid17_session11.md), privamp's upper bound was above dp-accounting's at T 100 on all
    six, at T 300 and 500 on three, at T 700 on one (q 256/60000, sigma 0.8: +8.5e-7
    relative), and below it at T 1000 and 3000 on all six (by 8.5e-7 .. 2.8e-4), as on
    q in {1e-3, 3e-3, 1e-2, 3e-2, 0.1} x sigma in {0.5, 2, 4} at T 1000 (except q 0.1,
    sigma 0.5, +2.7e-8 with and without the refinement).  What the refinement still buys
    there is width: the unrefined interval was wider than 1e-3 relative only on windows
    of at most ~2e4 points (q 1e-3, sigma 2: 9.6e3 points, 1.5e-3; q 3e-3, sigma 4: 8.4e3,
    5e-3), at most 9.3e-4 on 2.8e4 (q 1e-2, sigma 4) and 5.7e-4 on 3.6e4 (q 1e-3,
    sigma 1); so those runs refine only up to ``SHORT_RUN_MIN_POINTS`` points, times
    sqrt(T / 1000): at a fixed count the width grows with T (3.5e4 points at T 4000: 1.1e-3
    on q 3e-3 and 256/60000, sigma 2 and 4).  CPU
    time on the 17-setting grid's T 1e3 rows: 1.6-2.6x less (q 1e-3, sigma 0.8:
    70 -> 27 ms against dp-accounting's ~0.4 s).

    A heuristic: soundness never depends on the step.

    Args:
        h: the automatic step (> 0).
        width: the composed window's width in loss.
        T: the number of steps (0: the short-run rule, ``SHORT_RUN_POINTS``).

    Returns:
        The step, in [h / SHORT_RUN_REFINE, h].
    """
    if h < SHORT_RUN_MIN_STEP:
        return h
    points = (SHORT_RUN_MIN_POINTS * math.sqrt(T / SHORT_RUN_COARSE_T)
              if T >= SHORT_RUN_COARSE_T else SHORT_RUN_POINTS)
    return float(min(h, max(h / SHORT_RUN_REFINE, width / points)))
