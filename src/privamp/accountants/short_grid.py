"""The step of short runs (one-level composition, ``T < TWO_LEVEL_MIN_T``) of a small-rate
Poisson-subsampled Gaussian remove direction: how far :func:`privamp.accountants.grid.grid_plan`
refines its automatic step there (issue 28); and in the one-level regime of tiny rates, on how
many grid points above the bulk the pessimistic step carries mass (:func:`tail_sparsity`).
Heuristics: soundness never depends on the step or on the points carrying mass (the
pessimistic PLD dominates on every grid and every increasing set of points), only the width
of the certified interval and the cost."""

from __future__ import annotations

import math

from ..pairs.combinators import MixturePair
from ..pairs.loss_pair import LossPair
from ..pld.budget import MAX_LOSS

__all__ = [
    "SPARSE_TAIL",
    "DENSE_TAIL_MAX_T",
    "DENSE_TAIL_MIN_STEP",
    "DENSE_TAIL_LONG_STEP",
    "DENSE_TAIL_MIN_HITS",
    "DENSE_TAIL_MAX_POINTS",
    "tail_sparsity",
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


#: one-level regime: above the bulk, one grid point in this many carries mass
#: (:func:`privamp.pld.discretise.discretise`'s ``sparse_tail``; q = 1e-5, T = 1e5,
#: sigma 0.3: 1.35M -> 74k points, both bounds within 1e-8 relative of the full grid's),
#: except where :func:`tail_sparsity` keeps the pessimistic tail dense
SPARSE_TAIL = 32


#: one-level runs of at most this many steps may take a dense pessimistic tail
#: (:func:`tail_sparsity`) ...
DENSE_TAIL_MAX_T = 10_000


#: ... where the one-level step is at least this (the sparse tail's spacing of
#: ``SPARSE_TAIL`` steps then at least 4e-4, four times dp-accounting's default resolution) ...
DENSE_TAIL_MIN_STEP = 1.25e-5


#: ... and at least this in runs of ``SHORT_RUN_COARSE_T`` steps or more ...
DENSE_TAIL_LONG_STEP = 5e-5


#: ... where the run expects at least this many sampled steps (T q) ...
DENSE_TAIL_MIN_HITS = 1e-3


#: ... and the dense step's grid has at most this many points (its cost: one tail
#: evaluation of the mixture per point)
DENSE_TAIL_MAX_POINTS = 1e6


def tail_sparsity(pair: LossPair, step: float | None, h: float, T: int, tail: float) -> int:
    """How many grid points in one carry mass above the bulk in the pessimistic step of a
    small-rate Gaussian direction (:func:`privamp.pld.discretise.discretise`'s
    ``sparse_tail``): 1 (dense) where there is no one-level step (``step`` None: two-level
    composition, no sparse tail), and for the remove direction of a one-level run when

    * the range, not the bulk, sets the one-level step (``step > h``: the loss range spans
      more than ~4e5 automatic steps, a heavy tail: sigma <= 0.5 at q <= 1e-3),
    * ``T <= DENSE_TAIL_MAX_T`` and ``step >= DENSE_TAIL_MIN_STEP``
      (``DENSE_TAIL_LONG_STEP`` from ``SHORT_RUN_COARSE_T`` steps on),
    * the run expects at least ``DENSE_TAIL_MIN_HITS`` sampled steps (``T w``, w the
      mixture weight: the sampling rate), and
    * the grid (``pair.loss_range(tail)``, as discretise covers it) has at most
      ``DENSE_TAIL_MAX_POINTS`` points;

    else ``SPARSE_TAIL``.

    Why (issue 28, benchmarks/results/sparse_session11.md): above the bulk the sparse tail
    puts mass on one grid point in ``SPARSE_TAIL``, and its chord error is ~SPARSE_TAIL^2
    times a dense bin's.  For runs of 10..1e4 steps at sigma 0.3..0.5 the query's delta 1e-5
    lives there: it held privamp's certified upper above dp-accounting's PLD estimate on seven
    rows of benchmarks/scan.py (q 1e-5, sigma 0.3, T 100; q 1e-4, T 10, 100, 1e4; q 1e-3,
    T 10, 100; q 1e-3, sigma 0.5, T 10; dense: two below it, five within 3.4e-8 relative).
    The dense tail costs one mixture tail evaluation per grid point (the one-level grid has
    ~4e5: 0.03-0.1 s), small against those runs' compositions (0.3-1.7 s) and far below
    dp-accounting's (0.9-2 s).  Where it stays sparse:

    * sigma >= 0.8 (``step == h``): dp-accounting's estimate lies above the sparse tail's
      bound, and the 17-setting grid's one-level rows (q 1e-3, sigma 0.8 and 1, T 1000:
      17-29 ms) would pay ~10-25% more;
    * finer one-level steps (q <= 1e-5 at sigma 0.5): dp-accounting's estimate lies far
      above, and privamp's whole call is about as fast as dp-accounting's (q 1e-7, T 1e4:
      0.32 s against 0.36 s);
    * long runs (``T >= SHORT_RUN_COARSE_T``) on steps below ``DENSE_TAIL_LONG_STEP``: at
      T 1e4 (q 1e-7, 1e-6, 1e-5 at sigma 0.3: steps 2.7e-5..4.4e-5) the dense tail moved the
      upper by at most 1.8e-7 relative, the relative float allowance and the certified FFT
      bounds hold them; q 1e-5 was already below dp-accounting, whose call is faster there
      (1.9 s against 2.2 s).  Longer than ``DENSE_TAIL_MAX_T`` likewise (T 1e6: 2e-7);
    * fewer expected sampled steps: the sparse tail starts where one step's P-tail falls
      below a tenth of its delta(0) (~w TV), so it shapes the run's deltas below about
      0.1 T w TV only; at T w = 1e-4 (q 1e-6, T 100; q 1e-5, T 10: sigma 0.3) that is
      below 1e-5 and the dense tail moved the upper at delta 1e-5 by at most 4e-9 relative
      (dp-accounting's call is about as fast there: q 1e-6, T 100: 1.66 s against 1.7 s);
    * the add direction: its profile lies far below the remove direction's.

    A heuristic: soundness never depends on the points carrying mass.

    Args:
        pair: one step's pair (the remove direction ``(w P + (1-w) Q, Q)``, or its swap:
            sparse).
        step: the one-level pessimistic grid step (None: none, two-level composition).
        h: the direction's automatic step (:func:`privamp.accountants.grid.grid_plan`).
        T: the number of steps.
        tail: the discretisation's tail (its grid covers ``pair.loss_range(tail)``).

    Returns:
        1 or ``SPARSE_TAIL``.
    """
    if step is None:
        return 1
    least = DENSE_TAIL_MIN_STEP if T < SHORT_RUN_COARSE_T else DENSE_TAIL_LONG_STEP
    if (not isinstance(pair, MixturePair) or T > DENSE_TAIL_MAX_T or step <= h or step < least
            or T * pair.w < DENSE_TAIL_MIN_HITS):
        return SPARSE_TAIL
    lo, hi = pair.loss_range(tail)
    points = (min(hi, MAX_LOSS) - max(lo, -MAX_LOSS)) / step + 3.0
    return 1 if points <= DENSE_TAIL_MAX_POINTS else SPARSE_TAIL
