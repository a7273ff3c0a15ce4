"""The PLD accountant for Poisson subsampling (add/remove, zero-out): the remove and add
dominating pairs of a Poisson-subsampled mechanism (Zhu, Dong, Wang 2022, arXiv:2106.08567),
the automatic grid, and the run accountant "pld" for Poisson runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .._validation import check_positive
from ..errors import NotApplicable
from ..mechanisms.base import Mechanism
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.laplace import Laplace
from ..mechanisms.randomized_response import RandomizedResponse
from ..numerics.arrays import shaped
from ..numerics.fft import shared_spectra
from ..pairs.combinators import MixturePair, SwappedPair
from ..pairs.discrete import DiscretePair
from ..pairs.loss_pair import LossPair
from ..pairs.mechanism_pairs import GaussianPair, LaplacePair
from ..pld.compose import _TWO_LEVEL_FACTOR, _TWO_LEVEL_MIN_T, _optimistic_factor, compose_two_level
from ..pld.discretise import _MAX_LOSS, discretise
from ..pld.grid import _QUERY_REL, OPTIMISTIC_SOURCE, PESSIMISTIC_SOURCE, PLD, _zero_pld
from ..pld.moments import two_sided_renyi_floor
from ..pld.two_sided import TwoSidedPLD
from ..results import Bound
from ..sampling.relations import AddRemove, ZeroOut
from ..sampling.schemes import Poisson
from .registry import BoundPair, RunAnalysis, run_accountant

__all__ = [
    "poisson_pairs",
    "phases_pld",
    "PhasesPLDAnalysis",
    "applies_to_phase",
    "PLDAnalysis",
    "auto_grid",
    "pld_analysis",
]


def poisson_pairs(mechanism: Mechanism, rate: float, distance: int = 1) -> list[LossPair]:
    """Dominating pairs of one Poisson-subsampled step under add/remove:
    [remove: (q P + (1-q) Q, Q), add: its swap] (Zhu, Dong, Wang 2022, "Optimal accounting
    of differential privacy via characteristic function", AISTATS, dominating pairs of
    Poisson subsampling; rate 1: the base pair and its swap).  ``distance`` is the group
    distance of the base mechanism's pair."""
    rate = float(rate)
    if not 0.0 < rate <= 1.0:
        raise ValueError(f"rate must be in (0, 1], got {rate}")
    base = mechanism.pair(distance)
    if rate == 1.0:
        return [base, SwappedPair(base)]
    mix = MixturePair(base, rate)
    return [mix, SwappedPair(mix)]


# ------------------------------------------------------------------------------------------
# run accountant
# ------------------------------------------------------------------------------------------
def auto_grid(pair: LossPair, T: int, points: float = 1.5e6) -> float:
    """A grid step h for composing ``pair`` T times (see :func:`_auto_grid`)."""
    return _auto_grid(pair, T, points)[0]


def _auto_grid(pair: LossPair, T: int, points: float = 1.5e6
               ) -> tuple[float, float, float | None]:
    """A grid step h for composing ``pair`` T times (a heuristic: soundness never depends on
    it, only the width of the certified interval and the cost).

    h = (interquartile range of the single-step loss under P) / 120, but coarse enough that
    the T-fold grid (about 20 sqrt(T) sd(L) + the single-step range, after truncation) has
    at most ``points`` points.  For the remove direction ``(w P + (1-w) Q, Q)`` of
    Poisson-subsampled Gaussian at rates w <= 0.1, h is at most ``_LEAD_STEP`` (the
    connect-the-dots error is second order in h whatever the loss's spread, and the chained
    optimistic discretisation keeps the lower bound within a fraction of a percent at that
    step), and for its add direction ``_SECONDARY_COST`` times coarser (its profile lies far
    below; :class:`PLDAnalysis` composes only its pessimistic side and refines it if it ever
    decides the upper bound).

    Third value: for those two directions in long runs whose window one step's range sets
    (tiny rates: rare large losses, a concentrated bulk), the step of a one-level
    pessimistic composition (:func:`_one_level_step`), else None.
    """
    atoms = _atoms(pair)
    if atoms is not None and len(atoms[0]):
        # discrete: misplaced atoms cost the optimistic bound first order in h, so use the
        # whole point budget (but at most sd / 2000 is needed)
        l, p, _ = atoms
        tot = max(float(p.sum()), 1e-300)
        mean = float(np.sum(p * l)) / tot
        sd = math.sqrt(max(float(np.sum(p * (l - mean) ** 2)) / tot, 1e-18))
        width = 20.0 * math.sqrt(T) * sd + float(l.max() - l.min())
        return (_cap_composed(float(min(max(width / points, sd / 2000.0), 0.05)), width),
                width, None)
    coarse = _secondary_direction(pair)
    lead = _lead_direction(pair)
    lo_d, hi_d = pair.loss_range(min(1e-16, 1e-13 / T))  # the range discretise() will use
    lo_d, hi_d = max(lo_d, -_MAX_LOSS), min(hi_d, _MAX_LOSS)  # ... clipped as _grid does
    lo, hi = pair.loss_range(1e-12)
    grid = np.linspace(lo, hi, 4001)
    cdf = np.clip(pair.tail(grid, "P", False, False), 0.0, 1.0)
    mid = 0.5 * (grid[1:] + grid[:-1])
    w = np.diff(cdf)
    tot = max(float(w.sum()), 1e-300)
    mean = float(np.sum(w * mid)) / tot
    sd = math.sqrt(max(float(np.sum(w * (mid - mean) ** 2)) / tot, 0.0))
    width = 20.0 * math.sqrt(T) * sd + (hi_d - lo_d)
    if lead or coarse:
        base = pair.base if coarse else pair
        h = min(_LEAD_STEP, _loss_iqr(base) / _LEAD_IQR_BINS)
        h *= _SECONDARY_COST if coarse else 1.0
        if T >= _TWO_LEVEL_MIN_T:  # the long window is composed on the coarse grid
            points *= _TWO_LEVEL_FACTOR
    else:
        quart = np.interp([0.25, 0.75], cdf, grid)
        iqr = float(quart[1] - quart[0])
        spread = max(iqr if iqr > 0.1 * sd else sd, (hi - lo) / 4000.0, 1e-9)
        h = spread / 120.0
    h = max(h, width / points,
            (hi_d - lo_d) / (_MAX_SINGLE_POINTS / (_SECONDARY_COST if coarse else 1.0)))
    # composed in two levels, the long window lies on the grid _TWO_LEVEL_FACTOR times
    # coarser: cap on a grid half that coarse (at most ~4e6 points there; q = 0.01, T = 1e6:
    # h 2e-4 -> 6e-5, upper bound 1.3e-5 relative lower, 60 MiB at T = 1e7)
    # (only where the composed spread, not one step's range, sets the window: tiny rates
    # have a long range of rare large losses, and a finer grid there only costs time)
    long = (lead or coarse) and T >= _TWO_LEVEL_MIN_T
    two = long and 20.0 * math.sqrt(T) * sd >= hi_d - lo_d
    h = _cap_composed(float(min(h, 0.05)), width, _TWO_LEVEL_FACTOR // 2 if two else 1)
    one = _one_level_step(h, hi_d - lo_d, coarse) if long and not two else None
    return h, width, one


#: one-level pessimistic composition (tiny rates): about this many points over one step's
#: loss range (the T-fold window is about twice that)
_ONE_LEVEL_POINTS = 4e5


#: one-level regime: above the bulk, one grid point in this many carries mass
#: (:func:`privamp.pld.discretise.discretise`'s ``sparse_tail``; q = 1e-5, T = 1e5,
#: sigma 0.3: 1.35M -> 74k points, both bounds within 1e-8 relative of the full grid's)
_SPARSE_TAIL = 32


#: one-level regime, optimistic side: the single step drops P-mass above its grid
#: (<= _ONE_LEVEL_LOST / T) and the composition truncates tails of total <= _ONE_LEVEL_LOST,
#: so its lower bounds on delta give up at most 2e-11 (about 20% shorter windows)
_ONE_LEVEL_LOST = 1e-11


def _one_level_optimistic(pair: LossPair, h: float) -> float:
    """Grid step of the optimistic side of a lead direction in the one-level regime: h, or
    h / 2 where h exceeds 200 times the step the loss's interquartile range asks for (the
    point budget over a long range set h; the bulk is then only a few steps wide, and the
    optimistic error there is first order in the step, times T: q = 1e-5, T = 1e5,
    sigma 0.3: lower bound 9.4765 -> 9.8787 (upper 9.878932), sigma 0.32: 7.7086 -> 7.8730;
    from sigma 0.34 the ratio is below 150 and the interval already 0.003% wide).  A
    heuristic: soundness never depends on it."""
    fine = _loss_iqr(pair) / _LEAD_IQR_BINS
    return h / 2.0 if h > 200.0 * fine else h


def _one_level_step(h: float, span: float, coarse: bool) -> float:
    """Grid step of the one-level pessimistic composition of a direction whose window one
    step's loss range ``span`` sets (tiny rates).  There the two-level scheme gains nothing
    (its fine level must cover the whole range anyway), and its certified FFT allowance
    grows with the coarse steps (T / T1 times the fine level's); one power on a grid of
    about ``_ONE_LEVEL_POINTS`` points over the range is faster and tighter (q = 1e-5,
    T = 1e5, sigma 0.3: 9.87896 against 9.87927 two-level, dp-accounting 9.87894).  Not
    finer than the automatic step h; the coarse (add) direction ``_SECONDARY_COST`` times
    coarser.  A heuristic: soundness never depends on it."""
    return max(h, span / _ONE_LEVEL_POINTS * (_SECONDARY_COST if coarse else 1.0))


#: truncation budget of the checkpoint products of :meth:`PLDAnalysis.curve`, over t steps
#: each product truncates _TRUNC_CURVE / t (at most one product per step)
_TRUNC_CURVE = 1e-13


#: epsilon_curve of a long run: the optimistic side's blocks are coarsened this many times more
#: than the pessimistic side's (a heuristic: lower bounds only; half its transform lengths;
#: widest interval 0.018% -> 0.033% at q = 256/60000, sigma = 1.1, T = 14063, 0.059% ->
#: 0.066% at q = 1e-3, sigma = 1, T = 1e5)
_CURVE_OPTIMISTIC = 2


#: direct-sum budget of the checkpoint products (their FFT allowance, ~1e-12 each, is
#: negligible against delta; the direct part costs more than the FFT there)
_CURVE_DIRECT = 1e5


#: at most about this many points in the T-fold composition's window (the 0.05 cap on h
#: gives way for very long runs: T = 1e12 steps of Laplace would otherwise need ~1e9 points)
_MAX_COMPOSED_POINTS = 2e6


def _cap_composed(h: float, width: float, coarsening: int = 1) -> float:
    """h, coarsened if the composed window ``width`` would need more than
    ``_MAX_COMPOSED_POINTS`` points on the grid ``coarsening`` times coarser than h (where
    the long composition happens; a coarser grid is as sound, only wider)."""
    return float(max(h, width / (_MAX_COMPOSED_POINTS * coarsening)))


#: grid step of the leading (remove) direction of small-rate Poisson-subsampled Gaussian:
#: at most _LEAD_STEP, and at most the interquartile range of its loss / _LEAD_IQR_BINS
_LEAD_STEP = 6e-5


_LEAD_IQR_BINS = 15.0


#: at most this many grid points for one step's PLD
_MAX_SINGLE_POINTS = 2e6


def _loss_iqr(pair: LossPair) -> float:
    """Interquartile range of the loss under P (bracket search on the tails)."""
    from ..pairs.loss_pair import _bracket

    def cdf(x: np.ndarray) -> np.ndarray:
        return pair.tail(x, "P", False, False)

    lo, hi = pair.loss_range(1e-12)
    q1 = _bracket(cdf, 0.25, lo, hi, increasing=True, side="hi", rounds=5)
    q3 = _bracket(cdf, 0.75, lo, hi, increasing=True, side="hi", rounds=5)
    return max(q3 - q1, 1e-12)


#: the secondary (add) direction of a Poisson-subsampled pair gets a grid this much coarser
_SECONDARY_COST = 4.0


def _lead_direction(pair: LossPair) -> bool:
    """True for the remove direction ``(w P + (1 - w) Q, Q)`` of Poisson-subsampled Gaussian
    at a small rate ``w <= 0.1``."""
    return (isinstance(pair, MixturePair) and isinstance(pair.base, GaussianPair)
            and pair.w <= 0.1)


def _secondary_direction(pair: LossPair) -> bool:
    """True for the add direction ``(Q, w P + (1 - w) Q)`` of Poisson-subsampled Gaussian at a
    small rate ``w <= 0.1``.  Its profile lies well below the remove direction's for the pairs the
    accountant handles (the run's bounds are maxima over directions), so a coarser grid there
    costs no width of the run's interval, only time saved.  A heuristic: soundness never
    depends on the grid."""
    return isinstance(pair, SwappedPair) and _lead_direction(pair.base)


class PLDAnalysis(RunAnalysis):
    """PLD analysis of a Poisson-subsampled run (add/remove or zero-out, group 1).

    ``h`` overrides the automatic grid step (:func:`auto_grid`; for randomized response the
    step of each direction is adjusted so that its largest loss lies on the grid, which
    removes the first-order rounding of the top atom in the optimistic bound).  The
    composition is computed on the first query and cached.
    """

    def __init__(self, mechanism: Mechanism, rate: float, steps: int, h: float | None = None):
        self.mechanism, self.rate, self.steps = mechanism, float(rate), int(steps)
        self.h = None if h is None else check_positive("h", h)
        self.grid: list[float] = []
        self._pld: TwoSidedPLD | None = None
        self._singles: list[tuple[PLD, PLD | None, tuple[bool, bool]]] | None = None

    def _single_steps(self) -> list[tuple[PLD, PLD | None, tuple[bool, bool]]]:
        """Per direction: (pessimistic, optimistic or None, two-level per side) PLDs of one
        step, on the grids :func:`_auto_grid` picks for this run's length; None: the
        direction's pessimistic side only (a coarse secondary direction); two-level: composed
        by :func:`compose_two_level` (else plain self-composition).  Where one step's range
        sets the window (tiny rates), the pessimistic side is composed in one level on its
        own grid (:func:`_one_level_step`)."""
        if self._singles is None:
            self._pairs = poisson_pairs(self.mechanism, self.rate)
            self._tail = min(1e-16, 1e-13 / self.steps)
            self._rho = min(1e-6, max(1e-10, 1e-4 / self.steps))
            self._partial = []
            singles = []
            for i, pair in enumerate(self._pairs):
                h, width, one = ((self.h, 0.0, None) if self.h is not None
                                 else _auto_grid(pair, self.steps))
                if isinstance(self.mechanism, (RandomizedResponse, Laplace)):
                    h = _aligned_step(pair, h, width / _MAX_COMPOSED_POINTS)
                self.grid.append(h)
                if self.h is None and _secondary_direction(pair):
                    # pessimistic side only: a lower bound from the other direction is
                    # valid, and this one is refined if it ever decides the upper bound
                    p, _ = discretise(pair, h if one is None else one, self._tail,
                                      optimistic=False, rho_max=self._rho,
                                      sparse_tail=1 if one is None else _SPARSE_TAIL)
                    self._partial.append(i)
                    singles.append((p, None, (one is None, True)))
                elif self.h is None and _lead_direction(pair):
                    sparse = 1 if one is None else _SPARSE_TAIL
                    tail = self._tail if one is None else max(self._tail,
                                                              _ONE_LEVEL_LOST / self.steps)
                    p, o = discretise(pair, h if one is None else _one_level_optimistic(pair, h),
                                      tail, rho_max=self._rho, pessimistic=one is None,
                                      sparse_tail=sparse)
                    if one is not None:
                        p, _ = discretise(pair, one, self._tail, optimistic=False,
                                          rho_max=self._rho, sparse_tail=sparse)
                    singles.append((p, o.coarsen(_optimistic_factor(pair.w)),
                                    (one is None, one is None)))
                else:
                    p, o = discretise(pair, h, self._tail, rho_max=self._rho)
                    _check_slack(p, self.steps)
                    singles.append((p, o, (False, False)))
            self._singles = singles
        return self._singles

    @property
    def pld(self) -> TwoSidedPLD:
        if self._pld is None:
            dirs = []
            for p, o, two_level in self._single_steps():
                sides = [compose_two_level(x, self.steps) if two else x.self_compose(
                    self.steps, truncation=None if x is p or two_level[0]
                    else _ONE_LEVEL_LOST / self.steps)
                         for x, two in zip((p, o), two_level, strict=True) if x is not None]
                dirs.append((sides[0], _zero_pld(p.h) if o is None else sides[1]))
            self._pld = TwoSidedPLD(dirs)
        return self._pld

    def curve(self, steps: np.ndarray, which: str, x: np.ndarray,
              hook: Callable[[int, TwoSidedPLD, object], object] | None = None
              ) -> tuple[list[BoundPair | NotApplicable], list[object]]:
        """Bounds after each number of steps in ``steps`` (increasing, each <= the run's),
        reusing the compositions: the PLD after steps[i] is the one after steps[i - 1]
        composed with the gap's block (each distinct gap composed once, on the fine grid,
        then coarsened like :func:`compose_two_level` when the run is long; the optimistic
        side ``_CURVE_OPTIMISTIC`` times more).  Every block and
        product keeps its side's kind, so each checkpoint's interval is certified as for a
        run of that length (a little wider: one coarsening per block).  A checkpoint the grid
        cannot answer is returned as its NotApplicable.  ``hook(t, pld, bounds)``, if given,
        is called at each checkpoint (its results are returned alongside)."""
        if self.rate == 0.0:
            x = np.asarray(x, dtype=float)
            return [self._query(x, which) for _ in steps], [False for _ in steps]
        singles = self._single_steps()
        coarse = self.steps >= _TWO_LEVEL_MIN_T
        blocks: dict[tuple[int, int], PLD] = {}

        def block(i: int, side: int, gap: int) -> PLD:
            key = (i, side, gap)
            if key not in blocks:
                one, two_level = singles[i][side], singles[i][2][side]
                b = compose_two_level(one, gap) if two_level else one.self_compose(gap)
                if two_level and coarse:  # (compose_two_level coarsens long gaps itself)
                    b = b.coarsen(round(one.h * _TWO_LEVEL_FACTOR * (
                        _CURVE_OPTIMISTIC if side else 1) / b.h))
                elif side and not two_level:  # one level: on the pessimistic side's grid
                    # at most (the optimistic side's finer one-level grid would make every
                    # checkpoint's transform that much longer: sigma 0.1, q 1e-6, T 7253:
                    # 8M-point windows, 73 s)
                    b = b.coarsen(max(1, int(singles[i][0].h / b.h)))
                blocks[key] = b
            return blocks[key]

        ts = np.asarray(steps, dtype=int)
        gaps = np.diff(np.concatenate(([0], ts))).tolist()

        def stream(i: int, side: int, want: list[bool] | None = None):
            return _checkpoints({g: block(i, side, g) for g in set(gaps)}, gaps, want)

        # a pessimistic-only direction (optimistic side 0) matters only where its upper
        # bound exceeds the others': for epsilon it is evaluated at a few checkpoints
        # (_sparse), then settled at the others (_settle_partial)
        sparse = _sparse(ts) if which == "epsilon" else None
        with shared_spectra():  # the gaps' blocks of one direction share its transform
            streams = [(stream(i, 0, sparse if o is None else None),
                        None if o is None else stream(i, 1))
                       for i, (_, o, _) in enumerate(singles)]
        x = np.asarray(x, dtype=float)
        out, extra, partial = _curve_points(ts, streams, which, x, hook)
        if sparse is not None:
            _settle_partial(out, partial, sparse, lambda i, want: stream(i, 0, want), x)
        return out, extra

    def _refine_if_deciding(self, x: np.ndarray, which: str) -> None:
        """Compose a coarse, pessimistic-only direction fully (on the finest grid in use) if
        its upper bound exceeds every full direction's at some query point."""
        pld = self.pld
        full = [i for i in range(len(pld.directions)) if i not in self._partial]
        if not self._partial or not full:
            return
        best = np.max([getattr(pld.directions[i][0], which)(x) for i in full], axis=0)
        h = min(self.grid[i] for i in full)
        for i in list(self._partial):
            if np.any(getattr(pld.directions[i][0], which)(x) > best):
                p, o = discretise(self._pairs[i], h, self._tail, rho_max=self._rho)
                pld.directions[i] = (p.self_compose(self.steps), o.self_compose(self.steps))
                self.grid[i] = h
                self._partial.remove(i)

    def _query(self, x: np.ndarray, which: str) -> BoundPair:
        x = np.asarray(x, dtype=float)
        if self.rate == 0.0:
            z = Bound(np.zeros_like(x) if x.ndim else 0.0, "exact", "rate 0: no privacy loss")
            return z, z
        self._refine_if_deciding(x, which)
        up, lo = getattr(self.pld, which)(x)
        _check_finite_upper(self.pld, up, lo, x, which)
        return Bound(shaped(up, x), "upper", PESSIMISTIC_SOURCE), Bound(
            shaped(lo, x), "lower", OPTIMISTIC_SOURCE)

    def renyi_floor(self, alpha: np.ndarray) -> np.ndarray:
        """Lower bounds on the run's Rényi DP at orders ``alpha``
        (:func:`privamp.pld.moments.two_sided_renyi_floor`: each optimistic PLD belongs to a
        pair the true one dominates)."""
        if self.rate == 0.0:
            return np.zeros(np.shape(alpha))
        return two_sided_renyi_floor(self.pld, alpha)

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._query(delta, "epsilon")

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._query(epsilon, "delta")


#: epsilon_curve evaluates a pessimistic-only direction at checkpoints about this factor
#: apart in steps (a heuristic: the others are settled, :func:`_settle_partial`)
_SPARSE_RATIO = 1.1


def _sparse(ts: np.ndarray) -> list[bool]:
    """The checkpoints (increasing steps ``ts``) where a pessimistic-only direction is
    evaluated: the last, and going down, each whose next evaluated one has more than
    _SPARSE_RATIO times its steps."""
    out = [False] * len(ts)
    nxt = math.inf
    for k in range(len(ts) - 1, -1, -1):
        if nxt > _SPARSE_RATIO * ts[k]:
            out[k], nxt = True, ts[k]
    return out


def _curve_points(ts: np.ndarray, streams: list, which: str, x: np.ndarray, hook
                  ) -> tuple[list, list, dict[int, dict[int, np.ndarray]]]:
    """The checkpoints' bounds from the directions' PLD streams (a stream yields None where
    its direction is not evaluated: those bounds cover the other directions only); also,
    per pessimistic-only direction, its upper bounds at the checkpoints where it was."""
    out: list[BoundPair | NotApplicable] = []
    extra: list[object] = []
    partial: dict[int, dict[int, np.ndarray]] = {}
    hints: dict[int, tuple] = {}  # the last answers: later epsilons lie above these
    for k, t in enumerate(ts):
        dirs, present = [], []
        for i, (pess_side, opt_side) in enumerate(streams):
            pess = next(pess_side)
            if opt_side is None:
                partial.setdefault(i, {})
            if pess is None:
                continue
            dirs.append((pess, _zero_pld(pess.h) if opt_side is None else next(opt_side)))
            present.append(i)
        pld = TwoSidedPLD(dirs)
        try:
            if which == "epsilon":
                sides = pld.epsilon_sides(x, [hints.get(i, (np.nan, np.nan)) for i in present])
                for i, side in zip(present, sides, strict=True):
                    hints[i] = side
                    if i in partial:
                        partial[i][k] = side[0]
                up, lo = (np.max(v, axis=0) for v in zip(*sides, strict=True))
            else:
                up, lo = pld.delta(x)
            _check_finite_upper(pld, up, lo, x, which)
            out.append((Bound(shaped(up, x), "upper", PESSIMISTIC_SOURCE),
                        Bound(shaped(lo, x), "lower", OPTIMISTIC_SOURCE)))
        except NotApplicable as exc:
            out.append(exc)
        extra.append(None if hook is None else hook(int(t), pld, out[-1]))
    return out, extra, partial


def _settle_partial(out: list, partial: dict[int, dict[int, np.ndarray]], sparse: list[bool],
                    stream, x: np.ndarray) -> None:
    """Complete the upper bounds of the checkpoints where a pessimistic-only direction was
    not evaluated.  Each direction's epsilon grows with the steps (the first t steps'
    outputs are a post-processing of the first t' > t steps'), so its certified upper bound
    at the next evaluated checkpoint bounds it at this one: where that is <= the bound
    already there, the bound stands (at most the old max over directions); elsewhere the
    direction is evaluated there (``stream(i, want)``: its PLDs, None where not wanted)."""
    n = len(out)
    nxt, s = [0] * n, n - 1
    for k in range(n - 1, -1, -1):
        s = k if sparse[k] else s
        nxt[k] = s
    for i, vals in partial.items():
        miss = [not sparse[k] and not isinstance(out[k], NotApplicable) and (
            nxt[k] not in vals or bool(np.any(vals[nxt[k]] > out[k][0].value)))
            for k in range(n)]
        if not any(miss):
            continue
        hints, last = None, max(k for k in range(n) if miss[k])
        for k, pess in zip(range(last + 1), stream(i, miss), strict=False):
            if not miss[k]:
                continue
            one = TwoSidedPLD([(pess, _zero_pld(pess.h))])
            hints = one.epsilon_sides(x, hints)
            up = np.maximum(np.asarray(out[k][0].value, dtype=float), hints[0][0])
            try:
                _check_finite_upper(one, up, np.asarray(out[k][1].value), x, "epsilon")
            except NotApplicable as exc:
                out[k] = exc
                continue
            out[k] = (Bound(shaped(up, x), "upper", PESSIMISTIC_SOURCE), out[k][1])


def _checkpoints(blocks: dict[int, PLD], gaps: list[int], want: list[bool] | None = None):
    """The PLDs after each checkpoint: running products of the gaps' blocks, by one inverse
    FFT each (:meth:`PLD.running_products`, tails of mass _TRUNC_CURVE / 2 cut on each side
    once), else -- or from the first checkpoint where its allowance is not certified -- by
    composing checkpoint after checkpoint (each product truncating _TRUNC_CURVE / k at the
    k-th).  With ``want``: None at the k-th checkpoint where ``want[k]`` is false."""
    done = 0
    spectral = PLD.running_products(blocks, gaps, _TRUNC_CURVE / 2.0, want)
    if spectral is not None:
        try:
            for pld in spectral:
                done += 1
                yield pld
        except ArithmeticError:
            pass
        if done == len(gaps):
            return
    current = None
    for k, g in enumerate(gaps):
        b = blocks[g]
        current = b if current is None else current.compose(
            b, _TRUNC_CURVE / (k + 1), direct_budget=_CURVE_DIRECT)
        if k >= done:
            yield current if want is None or want[k] else None


def _check_slack(p: PLD, T: int) -> None:
    """Refuse (NotApplicable) before composing when the allowances of one step (float-error
    slack, mass at +inf, total mass above 1 from the safety factors), added T times, already
    reach 0.1: every upper bound of the composition would be >= 0.1, at great cost."""
    excess = p.slack + p.inf_mass + max(float(np.sum(p.masses)) - 1.0, 0.0)
    if T * excess >= 0.1:
        raise NotApplicable(
            f"steps={T} is too many for the PLD accountant here: the numerical allowances of "
            f"one step ({excess:.3g}) times the steps reach {T * excess:.3g}, so every upper "
            f"bound would be >= 0.1; steps must be below {0.1 / excess:.3g}")


def _check_finite_upper(pld: TwoSidedPLD, up: np.ndarray, lo: np.ndarray, x: np.ndarray,
                        which: str) -> None:
    """Refuse (NotApplicable) an infinite upper bound on epsilon that the lower bound does not
    certify: the grid's mass at +inf plus its float-error allowance exceed the delta asked
    for, so this grid cannot answer (another accountant may).  An infinite epsilon certified
    by both sides (e.g. randomized response with theta = 1, whose P-mass at +inf exceeds
    delta) is the true answer and is returned."""
    if which != "epsilon":
        return
    bad = np.isposinf(np.asarray(up)) & ~np.isposinf(np.asarray(lo))
    if not np.any(bad):
        return
    floor = max(p.inf_mass + p.slack for p, _ in pld.directions)
    d = float(np.min(np.asarray(x, dtype=float)[np.broadcast_to(bad, np.shape(x))]))
    raise NotApplicable(
        f"the PLD accountant cannot certify a finite epsilon at delta={d:.3g}: its grid's "
        f"mass at infinite loss plus its numerical-error allowance is {floor:.3g}; it "
        f"answers delta >= {floor * (1 + 2 * _QUERY_REL):.3g} (or ask another accountant)")


def pld_analysis(run, h: float | None = None) -> PLDAnalysis:
    """The PLD analysis of a :class:`~privamp.Training` run with an explicit grid step
    ``h`` (``None``: automatic).  ``Training.epsilon(accountant="pld")`` uses h=None."""
    if not _applies(run):
        raise NotApplicable(
            "the PLD accountant handles Poisson-subsampled Gaussian, Laplace and randomized "
            "response runs under add/remove or zero-out with group 1"
        )
    return PLDAnalysis(run.mechanism, run.scheme.rate, run.steps, h)


def _aligned_step(pair: LossPair, h: float, floor: float = 0.0) -> float:
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


def _finite_losses(pair: LossPair) -> np.ndarray:
    atoms = _atoms(pair)
    return np.array([]) if atoms is None else atoms[0]


def _applies(run) -> bool:
    mech = run.mechanism
    if not (
        isinstance(run.scheme, Poisson)
        and isinstance(mech, (Gaussian, Laplace, RandomizedResponse))
        and isinstance(run.relation, (AddRemove, ZeroOut))
        and run.relation.group == 1
    ):
        return False
    # the single-step losses must fit the grid's range [-700, 700]
    if isinstance(mech, Gaussian):
        return mech.shift(1) <= 25.0
    if isinstance(mech, Laplace):
        return mech.sensitivity / mech.scale <= 600.0
    return True


@run_accountant(
    "pld",
    applies=_applies,
    description="privacy loss distributions, two-sided (pessimistic connect-the-dots and "
    "optimistic lowered chords), FFT composition",
)
def _build(run) -> PLDAnalysis:
    return PLDAnalysis(run.mechanism, run.scheme.rate, run.steps)



# ------------------------------------------------------------------------------------------
# several phases (pa.compose)
# ------------------------------------------------------------------------------------------
def applies_to_phase(run) -> bool:
    """True when the Poisson PLD accountant handles this run (as a phase of a composition)."""
    return _applies(run)


def phases_pld(phases: list[tuple[Mechanism, float, int]]) -> TwoSidedPLD:
    """The two-sided PLD of phases run one after the other: ``(mechanism, rate, steps)`` each
    Poisson-subsampled under add/remove (or zero-out), group 1.

    For fixed neighbours, the pair of the whole history is the product of the phases' pairs
    in the same orientation, so the remove directions compose with each other and the add
    directions with each other (Zhu, Dong, Wang 2022, arXiv:2106.08567, dominating pairs of
    Poisson subsampling; composition of dominating pairs, their Thm 10), and the run's bounds
    are the max over the two.  Every phase is discretised on one grid per direction (the
    finest :func:`_auto_grid` step among the phases for the total length), composed like a
    run of its own (:func:`compose_two_level` for small-rate Gaussian phases), brought to the
    coarsest grid of the phases by :meth:`PLD.coarsen` (same kind: still certified), and the
    phases composed by FFT.
    """
    total = sum(T for _, _, T in phases)
    tail = min(1e-16, 1e-13 / total)
    rho = min(1e-6, max(1e-10, 1e-4 / total))
    pairs = [poisson_pairs(m, q) for m, q, _ in phases]
    h = [min(_auto_grid(pp[i], total)[0] for pp in pairs) for i in range(2)]
    sides: list[list[list[PLD]]] = [[[], []], [[], []]]  # [direction][side] -> phase PLDs
    for pp, (_, _, T) in zip(pairs, phases, strict=True):
        for i, pair in enumerate(pp):
            p, o = discretise(pair, h[i], tail, rho_max=rho)
            two = (_lead_direction(pair) or _secondary_direction(pair))
            if not two:
                _check_slack(p, T)
            for side, one in enumerate((p, o)):
                sides[i][side].append(compose_two_level(one, T) if two else one.self_compose(T))
    dirs = []
    for i in range(2):
        out = []
        for side in range(2):
            parts = sides[i][side]
            top = max(x.h for x in parts)
            parts = [x if x.h == top else x.coarsen(int(round(top / x.h))) for x in parts]
            acc = parts[0]
            for x in parts[1:]:
                acc = acc.compose(x, _TRUNC_CURVE / len(parts))
            out.append(acc)
        dirs.append((out[0], out[1]))
    return TwoSidedPLD(dirs)


class PhasesPLDAnalysis(RunAnalysis):
    """PLD analysis of a composition of Poisson phases (:func:`phases_pld`)."""

    def __init__(self, phases: list[tuple[Mechanism, float, int]]) -> None:
        self.phases = phases
        self._pld: TwoSidedPLD | None = None

    @property
    def pld(self) -> TwoSidedPLD:
        if self._pld is None:
            self._pld = phases_pld(self.phases)
        return self._pld

    def renyi_floor(self, alpha: np.ndarray) -> np.ndarray:
        """Lower bounds on the history's Rényi DP (see :meth:`PLDAnalysis.renyi_floor`)."""
        return two_sided_renyi_floor(self.pld, alpha)

    def _query(self, x: np.ndarray, which: str) -> BoundPair:
        x = np.asarray(x, dtype=float)
        up, lo = getattr(self.pld, which)(x)
        _check_finite_upper(self.pld, up, lo, x, which)
        return Bound(shaped(up, x), "upper", PESSIMISTIC_SOURCE), Bound(
            shaped(lo, x), "lower", OPTIMISTIC_SOURCE)

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._query(delta, "epsilon")

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._query(epsilon, "delta")
