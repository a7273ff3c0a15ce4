"""The automatic grid of the PLD accountants: a grid step h for composing a pair T times
(a heuristic: soundness never depends on it, only the width of the certified interval and
the cost).  Used by the Poisson PLD accountant and by the papers' PLD analyses (fixed-size
batches, shuffling, balanced iteration)."""

from __future__ import annotations

import math
from typing import cast

import numpy as np

from ..numerics.chernoff import chernoff_k, chernoff_x
from ..pairs.combinators import MixturePair, SwappedPair
from ..pairs.discrete import DiscretePair
from ..pairs.loss_pair import LossPair
from ..pairs.mechanism_pairs import GaussianPair, LaplacePair
from ..pld.budget import (
    MAX_LOSS,
    MEMORY_BUDGET,
    TWO_LEVEL_FACTOR,
    TWO_LEVEL_MIN_T,
    discretise_bytes,
)
from .quartiles import mixture_quantile, replayed_brackets
from .short_grid import (
    DENSE_TAIL_LONG_STEP,
    DENSE_TAIL_MAX_POINTS,
    DENSE_TAIL_MAX_T,
    DENSE_TAIL_MIN_HITS,
    DENSE_TAIL_MIN_STEP,
    SHORT_RUN_COARSE_T,
    SHORT_RUN_MIN_POINTS,
    SHORT_RUN_MIN_STEP,
    SHORT_RUN_POINTS,
    SHORT_RUN_REFINE,
    SPARSE_TAIL,
    short_run_step,
    tail_sparsity,
)

__all__ = [
    "auto_grid",
    "grid_plan",
    "aligned_step",
    "lead_direction",
    "secondary_direction",
    "one_level_optimistic_step",
    "cap_composed",
    "SECONDARY_COST",
    "SHORT_RUN_POINTS",
    "SHORT_RUN_REFINE",
    "SHORT_RUN_MIN_STEP",
    "SHORT_RUN_COARSE_T",
    "SHORT_RUN_MIN_POINTS",
    "short_run_step",
    "long_run_step",
    "short_optimistic_step",
    "OPTIMISTIC_SHORT_T",
    "OPTIMISTIC_BULK_STEPS",
    "LONG_SD_POINTS",
    "LONG_HEAVY",
    "LONG_MAX_STEP",
    "SPARSE_TAIL",
    "DENSE_TAIL_MAX_T",
    "DENSE_TAIL_MIN_STEP",
    "DENSE_TAIL_LONG_STEP",
    "DENSE_TAIL_MIN_HITS",
    "DENSE_TAIL_MAX_POINTS",
    "tail_sparsity",
    "ONE_LEVEL_LOST",
    "MAX_COMPOSED_POINTS",
    "laplace_direction",
    "laplace_step",
    "LAPLACE_SD_BINS",
    "LAPLACE_MAX_STEP",
]


# ------------------------------------------------------------------------------------------
# the automatic grid
# ------------------------------------------------------------------------------------------
def auto_grid(pair: LossPair, T: int, points: float = 1.5e6) -> float:
    """A grid step h for composing ``pair`` T times (see :func:`grid_plan`)."""
    return grid_plan(pair, T, points)[0]


def grid_plan(pair: LossPair, T: int, points: float = 1.5e6, short_run: bool = False
               ) -> tuple[float, float, float | None]:
    """A grid step h for composing ``pair`` T times (a heuristic: soundness never depends on
    it, only the width of the certified interval and the cost).

    h = (interquartile range of the single-step loss under P) / 120, but coarse enough that
    the T-fold grid (about 20 sqrt(T) sd(L) + the single-step range, after truncation) has
    at most ``points`` points.  For the remove direction ``(w P + (1-w) Q, Q)`` of
    Poisson-subsampled Gaussian at rates w <= 0.1, h is at most ``_LEAD_STEP`` (the
    connect-the-dots error is second order in h whatever the loss's spread, and the chained
    optimistic discretisation keeps the lower bound within a fraction of a percent at that
    step), and for its add direction ``SECONDARY_COST`` times coarser (its profile lies far
    below; :class:`PLDAnalysis` composes only its pessimistic side and refines it if it ever
    decides the upper bound).

    Third value: for those two directions in long runs whose window one step's range sets
    (tiny rates: rare large losses, a concentrated bulk), the step of a one-level
    pessimistic composition (:func:`one_level_step`), else None.

    Heavy-tailed long runs take at least :func:`long_run_step`, and short one-level runs'
    remove direction :func:`short_optimistic_step` (both coarser, issue 28).

    ``short_run``: the remove direction of a short run may take a finer step
    (:func:`short_run_step`).  Only a run's own query asks for it (the Poisson accountant's):
    a composition brings every phase to its finest phase's step, and a short phase's cheap
    refinement would make every other phase that much finer (a deterministic-batch phase
    refused its PLD on the refined step).

    Args:
        pair: one step's dominating pair.
        T: the number of steps.
        points: the most points of the T-fold window (before the caps).
        short_run: whether a short run's remove direction may take :func:`short_run_step`.

    Returns:
        (step h, composed window width, one-level pessimistic step or None).
    """
    atoms = _atoms(pair)
    if atoms is not None and len(atoms[0]):
        # discrete: misplaced atoms cost the optimistic bound first order in h, so use the
        # whole point budget (but at most sd / 2000 is needed)
        l, p, _ = atoms
        tot = max(float(p.sum()), 1e-300)
        mean = float(np.sum(p * l)) / tot
        sd = math.sqrt(max(float(np.sum(p * (l - mean) ** 2)) / tot, 1e-18))
        width = max(20.0 * math.sqrt(T) * sd + float(l.max() - l.min()),
                    _atoms_window(l, p, T))
        return (cap_composed(float(min(max(width / points, sd / 2000.0), 0.05)), width),
                width, None)
    coarse = secondary_direction(pair)
    lead = lead_direction(pair)
    lo_d, hi_d = pair.loss_range(min(1e-16, 1e-13 / T))  # the range discretise() will use
    lo_d, hi_d = max(lo_d, -MAX_LOSS), min(hi_d, MAX_LOSS)  # ... clipped as _grid does
    lo, hi = pair.loss_range(1e-12)
    grid = np.linspace(lo, hi, 4001)
    cdf = np.clip(pair.tail(grid, "P", False, False), 0.0, 1.0)
    mid = 0.5 * (grid[1:] + grid[:-1])
    w = np.diff(cdf)
    tot = max(float(w.sum()), 1e-300)
    mean = float(np.sum(w * mid)) / tot
    sd = math.sqrt(max(float(np.sum(w * (mid - mean) ** 2)) / tot, 0.0))
    width = 20.0 * math.sqrt(T) * sd + (hi_d - lo_d)
    iqr = math.inf
    if lead or coarse:
        base = cast(MixturePair, pair).base if coarse else pair
        iqr = loss_iqr(base)
        h = min(_LEAD_STEP, iqr / _LEAD_IQR_BINS)
        h *= SECONDARY_COST if coarse else 1.0
        if T >= TWO_LEVEL_MIN_T:  # the long window is composed on the coarse grid
            points *= TWO_LEVEL_FACTOR
    elif laplace_direction(pair):
        h = laplace_step(max(sd, 1e-12))
    else:
        quart = np.interp([0.25, 0.75], cdf, grid)
        iqr = float(quart[1] - quart[0])
        spread = max(iqr if iqr > 0.1 * sd else sd, (hi - lo) / 4000.0, 1e-9)
        h = spread / 120.0
    h = max(h, width / points,
            (hi_d - lo_d) / (_MAX_SINGLE_POINTS / (SECONDARY_COST if coarse else 1.0)))
    # composed in two levels, the long window lies on the grid TWO_LEVEL_FACTOR times
    # coarser: cap on a grid half that coarse (at most ~4e6 points there; q = 0.01, T = 1e6:
    # h 2e-4 -> 6e-5, upper bound 1.3e-5 relative lower, 60 MiB at T = 1e7)
    # (only where the composed spread, not one step's range, sets the window: tiny rates
    # have a long range of rare large losses, and a finer grid there only costs time)
    # the one-level regime also serves short runs at tiny rates (q 1e-7, sigma 0.3, T 10:
    # 2M-point steps squared into 4M-point windows before; now ~4e5 points over the range)
    long = (lead or coarse) and T >= TWO_LEVEL_MIN_T
    ranged = (lead or coarse) and 20.0 * math.sqrt(T) * sd < hi_d - lo_d
    two = long and not ranged
    if two and sd > LONG_HEAVY * iqr:  # heavy tail, long run: see long_run_step
        h = max(h, long_run_step(sd, T) * (SECONDARY_COST if coarse else 1.0))
    if lead and ranged and T < OPTIMISTIC_SHORT_T:  # short one-level runs
        h = short_optimistic_step(h, hi_d - lo_d, iqr / _LEAD_IQR_BINS)
    if short_run and lead and T < TWO_LEVEL_MIN_T:  # (the add direction keeps its step)
        h = short_run_step(h, width, T)
    h = cap_composed(float(min(h, 0.05)), width, TWO_LEVEL_FACTOR // 2 if two else 1)
    one = one_level_step(h, hi_d - lo_d, coarse) if ranged else None
    return h, width, one


#: long two-level runs of a heavy-tailed direction (:func:`long_run_step`): the composed
#: loss's standard deviation spans at least about this many grid steps ...
LONG_SD_POINTS = 3e4


#: ... where the single-step loss's standard deviation exceeds this many interquartile ranges
#: (Gaussian sigma <= ~0.65: 5.3 at sigma 0.6, 14 at 0.5, 90 at 0.4; 3.1 at 0.7, 1.5 at 1) ...
LONG_HEAVY = 4.0


#: ... and the step stays at most this (a fifth of dp-accounting's default resolution 1e-4:
#: a coarser step let the certified upper bound pass dp-accounting's estimate, q 1e-3,
#: sigma 0.5, T 1e6: 52.3478 against 52.3421)
LONG_MAX_STEP = 2e-5


def long_run_step(sd: float, T: int) -> float:
    """The least grid step of a long run (two-level composition, the composed spread setting
    the window) of a heavy-tailed small-rate Gaussian direction: ``sqrt(T) sd /
    LONG_SD_POINTS``, at most ``LONG_MAX_STEP``.

    Why: the automatic step (the loss's interquartile range / 15) resolves the single
    step's bulk, but when the loss's standard deviation is many interquartile ranges (rare
    large losses, sigma <= ~0.65) the T-fold composition is shaped by the rare large losses
    and its spread is ``sqrt(T) sd``; the step from the bulk put ~1.6e5 grid steps per
    standard deviation (q 1e-4, sigma 0.5, T 1e6: 5.2M-point windows, 3.1 s against
    dp-accounting's 0.96 s).  On this step: 0.31 s, [3.89695, 3.89833] against
    [3.89803, 3.898216] (relative width 3.5e-4; dp-accounting 3.900304); q 1e-4, sigma 0.4,
    T 1e6: 2.8 -> 1.1 s, [13.1022, 13.10423] (dp-accounting 13.10485).  A heuristic:
    soundness never depends on the step.

    Args:
        sd: the single-step loss's standard deviation under P.
        T: the number of steps.

    Returns:
        The step (the automatic step is coarsened to it, never refined).
    """
    return min(math.sqrt(T) * sd / LONG_SD_POINTS, LONG_MAX_STEP)


#: runs shorter than this in the one-level regime (tiny rates) may take a coarser lead step
#: (:func:`short_optimistic_step`; the Poisson accountant's ``SHORT_RUN`` keeps its
#: optimistic side on that step) ...
OPTIMISTIC_SHORT_T = 100


#: ... where the coarser step is at most this many of the bulk's steps (the loss's
#: interquartile range / 15)
OPTIMISTIC_BULK_STEPS = 6.0


def short_optimistic_step(h: float, span: float, bulk: float) -> float:
    """The lead step of a short run (``T < OPTIMISTIC_SHORT_T``) of a small-rate Gaussian
    remove direction in the one-level regime (one step's loss range ``span`` sets the
    window): ``span / _ONE_LEVEL_POINTS`` (the pessimistic side's one-level step, which
    this leaves unchanged) where that is at most ``OPTIMISTIC_BULK_STEPS`` bulk steps, else
    h.

    Why: such runs compose their optimistic side on the lead step, over the whole range
    (q 1e-4, sigma 0.5, T 10: 877k points, 0.57 s of the call's 0.74 s, against
    dp-accounting's 0.72 s), on a grid ~4x finer than the pessimistic side's, and the
    interval was ~1e-6 relative wide.  On the coarser step: 0.26 s, [0.03943574,
    0.03943584] (upper unchanged, dp-accounting 0.03943616); T 50: 0.68 -> 0.33 s, width
    6e-6 -> 1.5e-5; sigma 0.55: 0.47 -> 0.25 s.  Where the range asks for 10 bulk steps or
    more (q 1e-5, sigma 0.5, T 10) the lower bound fell from 6.8e-4 to 3.4e-2 relative
    below the upper: kept.  A heuristic: soundness never depends on the step.

    Args:
        h: the automatic step.
        span: one step's loss range (the discretisation's).
        bulk: the bulk's step (interquartile range / ``_LEAD_IQR_BINS``).

    Returns:
        The step (h or coarser).
    """
    coarse = span / _ONE_LEVEL_POINTS
    return max(h, coarse) if coarse <= OPTIMISTIC_BULK_STEPS * bulk else h


#: one-level pessimistic composition (tiny rates): about this many points over one step's
#: loss range (the T-fold window is about twice that)
_ONE_LEVEL_POINTS = 4e5


#: one-level regime, optimistic side: the single step drops P-mass above its grid
#: (<= ONE_LEVEL_LOST / T) and the composition truncates tails of total <= ONE_LEVEL_LOST,
#: so its lower bounds on delta give up at most 2e-11 (about 20% shorter windows)
ONE_LEVEL_LOST = 1e-11


def one_level_optimistic_step(pair: LossPair, h: float) -> float:
    """Grid step of the optimistic side of a lead direction in the one-level regime: h, or
    h / 2 where h exceeds 200 times the step the loss's interquartile range asks for (the
    point budget over a long range set h; the bulk is then only a few steps wide, and the
    optimistic error there is first order in the step, times T: q = 1e-5, T = 1e5,
    sigma 0.3: lower bound 9.4765 -> 9.8787 (upper 9.878932), sigma 0.32: 7.7086 -> 7.8730;
    from sigma 0.34 the ratio is below 150 and the interval already 0.003% wide).  A
    heuristic: soundness never depends on it."""
    fine = loss_iqr(pair) / _LEAD_IQR_BINS
    if h <= 200.0 * fine:
        return h
    lo, hi = pair.loss_range(1e-16)  # (h / 2 only if its grid fits the memory budget)
    lo, hi = max(lo, -MAX_LOSS), min(hi, MAX_LOSS)
    points = (hi - lo) / (h / 2.0) + 3.0
    # points carrying mass over the sparse tail: all up to where the P-tail falls below a
    # tenth of delta(0) (a hundredth here, erring towards more), then one in SPARSE_TAIL
    # (delta(0) = 0 in floats: all dense)
    at, tv = np.linspace(lo, hi, 4097), float(np.asarray(pair.delta(0.0)))
    bulk = at[pair.tail(at, "P", True, True) > 0.01 * tv]
    top = float(bulk.max()) if len(bulk) and tv > 0 else hi
    dense = (top - lo) / (h / 2.0) + points / SPARSE_TAIL + 4.0
    return h / 2.0 if discretise_bytes(min(dense, points), points) <= MEMORY_BUDGET else h


def one_level_step(h: float, span: float, coarse: bool) -> float:
    """Grid step of the one-level pessimistic composition of a direction whose window one
    step's loss range ``span`` sets (tiny rates).  There the two-level scheme gains nothing
    (its fine level must cover the whole range anyway), and its certified FFT allowance
    grows with the coarse steps (T / T1 times the fine level's); one power on a grid of
    about ``_ONE_LEVEL_POINTS`` points over the range is faster and tighter (q = 1e-5,
    T = 1e5, sigma 0.3: 9.87896 against 9.87927 two-level, dp-accounting 9.87894).  Not
    finer than the automatic step h; the coarse (add) direction ``SECONDARY_COST`` times
    coarser.  A heuristic: soundness never depends on it."""
    return max(h, span / _ONE_LEVEL_POINTS * (SECONDARY_COST if coarse else 1.0))


#: at most about this many points in the T-fold composition's window (the 0.05 cap on h
#: gives way for very long runs: T = 1e12 steps of Laplace would otherwise need ~1e9 points)
MAX_COMPOSED_POINTS = 2e6


def cap_composed(h: float, width: float, coarsening: int = 1) -> float:
    """h, coarsened if the composed window ``width`` would need more than
    ``MAX_COMPOSED_POINTS`` points on the grid ``coarsening`` times coarser than h (where
    the long composition happens; a coarser grid is as sound, only wider)."""
    return float(max(h, width / (MAX_COMPOSED_POINTS * coarsening)))


#: grid step of the leading (remove) direction of small-rate Poisson-subsampled Gaussian:
#: at most _LEAD_STEP, and at most the interquartile range of its loss / _LEAD_IQR_BINS
_LEAD_STEP = 6e-5


_LEAD_IQR_BINS = 15.0


#: at most this many grid points for one step's PLD
_MAX_SINGLE_POINTS = 2e6


def loss_iqr(pair: LossPair) -> float:
    """Interquartile range of the loss under P (bracket search on the tails: both quartiles'
    brackets in one tail evaluation per round, the same points as
    :func:`privamp.pairs.loss_pair.bracket` with 5 rounds of 32; the last pair's value is
    kept, as the add direction of a Poisson pair asks again for its remove direction's).
    For the remove direction of small-rate Poisson-subsampled Gaussian the search's final
    brackets are replayed from the quartiles in closed form and checked by one tail
    evaluation (:func:`privamp.accountants.quartiles.replayed_brackets`: the same value, bit
    for bit, in one tail evaluation instead of five).

    Args:
        pair: the pair.

    Returns:
        The interquartile range (at least 1e-12).
    """
    memo = _IQR_MEMO
    if memo[0] is pair:
        return memo[1]
    lo, hi = pair.loss_range(1e-12)
    brackets = [(lo, hi), (lo, hi)]
    replay = None
    if lead_direction(pair):  # the search's brackets from the quantiles (quartiles.py)
        s, w = cast(GaussianPair, cast(MixturePair, pair).base).s, cast(MixturePair, pair).w
        replay = replayed_brackets(pair, [mixture_quantile(s, w, t) for t in (0.25, 0.75)],
                                   (0.25, 0.75), lo, hi)
    for _ in range(0 if replay is not None else 5):
        xs = [a + (b - a) * np.arange(1, 32) / 32 for a, b in brackets]
        with np.errstate(all="ignore"):
            v = np.asarray(pair.tail(np.concatenate(xs), "P", False, False), dtype=float)
        for j, target in enumerate((0.25, 0.75)):
            x, right = xs[j], v[31 * j: 31 * (j + 1)] < target
            k = int(np.argmin(right)) if not right.all() else len(x)
            a, b = brackets[j]
            brackets[j] = (float(x[k - 1]) if k > 0 else a, float(x[k]) if k < len(x) else b)
    brackets = brackets if replay is None else replay
    iqr = max(brackets[1][1] - brackets[0][1], 1e-12)
    _IQR_MEMO[:] = [pair, iqr]
    return iqr


#: the last (pair, interquartile range) of :func:`loss_iqr`
_IQR_MEMO: list = [None, 0.0]


#: Poisson-subsampled Laplace: the step is the loss's standard deviation over this many bins
#: (:func:`laplace_step`)
LAPLACE_SD_BINS = 8.0


#: ... and at most this (dp-accounting's default value_discretization_interval is 1e-4;
#: the accountant aligns the step with the atoms in [h / 2, h])
LAPLACE_MAX_STEP = 2e-4


def laplace_direction(pair: LossPair) -> bool:
    """True for either direction of Poisson-subsampled Laplace (rate < 1): the mixture
    ``(w P + (1 - w) Q, Q)`` of a :class:`LaplacePair` or its swap."""
    base = pair.base if isinstance(pair, SwappedPair) else pair
    return isinstance(base, MixturePair) and isinstance(base.base, LaplacePair)


def laplace_step(sd: float) -> float:
    """Grid step for one direction of Poisson-subsampled Laplace whose single-step loss has
    standard deviation ``sd`` under P (before the point caps of :func:`grid_plan`).

    The discretisation budget.  The loss is bounded (in [log(1 - w(1 - e^-e0)),
    log(1 + w(e^e0 - 1))]) with atoms at both ends, which the accountant puts on (or next
    to) grid points (:func:`aligned_step`); the rest has a density.  Connect-the-dots splits
    each loss between its two grid neighbours keeping both masses, which adds at most
    variance h^2 / 4 per step, so the T-fold upper bound on delta errs by about
    ``T h^2 / 12`` times the density of the composed loss at epsilon, and epsilon by about
    ``z sqrt(T) h^2 / (12 sd)`` (z ~ 4 at delta 1e-5, composed spread sqrt(T) sd): with
    ``h = sd / 8`` that is below 0.006 sd sqrt(T), a small fraction of epsilon's own
    z sd sqrt(T) (measured on benchmarks/laplace_speed.py's settings: the upper bound
    within 5e-4 relative of the old iqr / 120 grid's, which is near exact there).
    ``LAPLACE_MAX_STEP`` keeps the step near dp-accounting's resolution where the loss is
    wide (rates >= 0.01 at small scales), where both are within ~5e-7 relative of each
    other.  The optimistic side errs about first order in its step (atoms off the grid):
    the Poisson accountant puts it on h / 2 (interval <= 2% wide on the benchmark, q 1e-5,
    b 0.3, T 1e5; mostly <= 0.3%).  A heuristic: soundness never depends on it (issue 28:
    iqr / 120 made windows of 1e5 points where dp-accounting's 1e-4 grid has 1e2-1e4).
    At small delta the step is not what limits the upper bound but the composition's
    numerical allowances: the Poisson accountant composes a deciding direction again then
    (:func:`privamp.accountants.laplace_poisson.laplace_precise`; at delta 1e-10, q 0.1,
    b 3, T 100, steps sd / 16 .. sd / 64 left the fast pass's upper bound unchanged).

    Args:
        sd: standard deviation of one step's loss under P (> 0).

    Returns:
        The step h.
    """
    return float(min(sd / LAPLACE_SD_BINS, LAPLACE_MAX_STEP))


#: the secondary (add) direction of a Poisson-subsampled pair gets a grid this much coarser
SECONDARY_COST = 4.0


def lead_direction(pair: LossPair) -> bool:
    """True for the remove direction ``(w P + (1 - w) Q, Q)`` of Poisson-subsampled Gaussian
    at a small rate ``w <= 0.1``."""
    return (isinstance(pair, MixturePair) and isinstance(pair.base, GaussianPair)
            and pair.w <= 0.1)


def secondary_direction(pair: LossPair) -> bool:
    """True for the add direction ``(Q, w P + (1 - w) Q)`` of Poisson-subsampled Gaussian at a
    small rate ``w <= 0.1``.  Its profile lies well below the remove direction's for the pairs the
    accountant handles (the run's bounds are maxima over directions), so a coarser grid there
    costs no width of the run's interval, only time saved.  A heuristic: soundness never
    depends on the grid."""
    return isinstance(pair, SwappedPair) and lead_direction(pair.base)


def aligned_step(pair: LossPair, h: float, floor: float = 0.0) -> float:
    """For a discrete pair: a step in [max(h/4, floor), h] putting the largest finite loss just
    above a grid point and the other atoms as close to grid points as possible.

    A grid-supported optimistic pair must lose O(Q_atom h) on a half-line for every atom
    strictly inside a bin (and round the top atom down), which composes to a first-order
    error; atoms (nearly) on grid points cost nothing.  Soundness does not depend on this.
    """
    atoms = _atom_list(pair)
    if atoms is None or not len(atoms[0]):
        return h
    l, q = atoms
    top = float(l.max())
    if top <= 0:
        return h
    n0 = math.ceil(top / h)
    ns = np.arange(n0, 4 * n0 + 1)[:20000]
    steps = top / ns * (1.0 - 1e-12)
    steps = steps[steps >= max(h / 4.0, floor)]  # floor: the composed window's point cap
    if not len(steps):  # no aligned step in range (e.g. the top atom lies below h / 4)
        return h
    others = l < top
    if not others.any():
        return float(steps[0])
    frac = np.mod(l[others][None, :] / steps[:, None], 1.0)
    score = np.sum(q[others][None, :] * np.minimum(frac, 1.0 - frac), axis=1)
    return float(steps[int(np.argmin(score))])


def _atoms(pair: LossPair) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(finite losses, P-probabilities, Q-probabilities) of a pair built from DiscretePair
    by mixing and swapping; None for pairs with a continuous part."""
    if isinstance(pair, DiscretePair):
        keep = np.isfinite(pair.losses)
        return pair.losses[keep], pair.p[keep], pair.q[keep]
    if isinstance(pair, SwappedPair):
        base = _atoms(pair.base)
        return None if base is None else (-base[0], base[2], base[1])
    if isinstance(pair, MixturePair):
        base = _atoms(pair.base)
        if base is None:
            return None
        l, p, q = base
        return np.log1p(pair.w * np.expm1(l)), pair.w * p + (1 - pair.w) * q, q
    return None


def _atom_list(pair: LossPair) -> tuple[np.ndarray, np.ndarray] | None:
    """(losses, Q-masses) of the finite atoms of a pair (the atoms of a Laplace pair at
    +-e0 included), for grid alignment; None when unknown."""
    if isinstance(pair, LaplacePair):
        e0 = pair.e0
        return np.array([-e0, e0]), np.array([0.5, 0.5 * math.exp(-e0)])
    if isinstance(pair, SwappedPair):
        base = _atom_list(pair.base)
        if base is None:
            return None
        l, q = base
        # Q of the swap is P of the base: P-mass of an atom = e^l * Q-mass
        return -l, np.exp(l) * q
    if isinstance(pair, MixturePair):
        base = _atom_list(pair.base)
        return None if base is None else (np.log1p(pair.w * np.expm1(base[0])), base[1])
    atoms = _atoms(pair)
    return None if atoms is None else (atoms[0], atoms[2])


def _atoms_window(l: np.ndarray, p: np.ndarray, T: int) -> float:
    """Width (in loss) of the window of the T-fold composition of the atoms ``l`` with
    masses ``p`` outside which lies mass <= 1e-13 on each side (Chernoff bounds,
    :func:`privamp.numerics.chernoff.chernoff_k`, on the losses in units of 1e-3): rare atoms
    of large loss (randomized response with theta near 1) widen it far beyond the spread of
    the bulk (theta 0.9999999, q 0.3, T 1000: 48 against 18.3, so a grid sized by the
    spread held 4.6M points, 1 GB).  0 when the bound fails (a heuristic for the grid's
    size: soundness never depends on it)."""
    keep = p > 0
    if T < 2 or not np.any(keep):
        return 0.0
    lp, pos = np.log(p[keep]), (l[keep] - float(l[keep].min())) * 1e3
    order = np.argsort(pos)
    lp, pos = lp[order], pos[order]
    c = -math.log(1e-13)
    hi = chernoff_x(*chernoff_k(lp, pos, T, c), T, c)
    rev = chernoff_x(*chernoff_k(lp[::-1], float(pos[-1]) - pos[::-1], T, c), T, c)
    if hi is None or rev is None:
        return 0.0
    return max(float(hi + rev) - T * float(pos[-1]), 0.0) * 1e-3


def _finite_losses(pair: LossPair) -> np.ndarray:
    atoms = _atoms(pair)
    return np.array([]) if atoms is None else atoms[0]


