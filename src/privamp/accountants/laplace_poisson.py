"""Poisson-subsampled Laplace in the Poisson PLD accountant (issue 28): how one step is
discretised and how the run is composed.  The grid step itself is
:func:`privamp.accountants.grid.laplace_step`.  Heuristics of cost and width only: every
PLD is certified as by :func:`privamp.pld.discretise.discretise` and
:meth:`privamp.pld.grid.PLD.self_compose`.
"""

from __future__ import annotations

from ..pairs.combinators import SwappedPair
from ..pairs.loss_pair import LossPair
from ..pld.budget import TWO_LEVEL_MIN_T
from ..pld.compose import compose_two_level
from ..pld.discretise import discretise
from ..pld.grid import PLD, PowerMethodUnavailable
from .grid import laplace_direction

__all__ = [
    "laplace_compose",
    "laplace_single_step",
    "LAPLACE_POWER_MIN_T",
    "LAPLACE_DIRECT_BUDGET",
    "LAPLACE_OPTIMISTIC_SPLIT",
    "LAPLACE_SPLIT_MAX_POINTS",
    "laplace_precise",
    "needs_precise",
    "LAPLACE_ALLOWANCE_FRACTION",
    "LAPLACE_PRECISE_BUDGET",
]


#: Poisson-subsampled Laplace runs of at least this many steps are composed by the power
#: method (one transform pair) whatever their single step's number of atoms: its coarse
#: grid (:func:`~privamp.accountants.grid.laplace_step`) has few atoms, where
#: :meth:`PLD.self_compose`'s automatic choice falls back to squaring with large exact
#: direct sums (q 1e-3, b 2, T 1e4: 0.12 s against 0.018 s)
LAPLACE_POWER_MIN_T = 500


#: the optimistic side of the remove direction lies on the step this many times finer than
#: the pessimistic one (the lower bound's error is about first order in its step at tiny
#: rates: q 1e-5, b 1, T 1e3: interval 1.9% wide on one step, 0.5% on the half step)
LAPLACE_OPTIMISTIC_SPLIT = 2


#: ... but on the pessimistic step itself where one step's loss range spans at least this
#: many steps: there the finer step bought at most 3.8e-4 of the lower bound (relative)
#: on the 36 settings of benchmarks/laplace_speed.py and scan.py's Laplace grid, and cost up
#: to a third of the run (q 1e-2, b 0.5, T 100: 29 ms against 20 ms; issue 28).  Below it
#: (coarse steps: tiny rates, large scales) the half step is kept: it bought up to 1.4e-2
#: there.  A heuristic of width and cost only: both steps give certified lower sides.
LAPLACE_SPLIT_MAX_POINTS = 150


#: shorter runs are composed by squaring with exact direct sums of at most this many
#: multiply-adds per convolution (the default 3e7 costs q 0.1, b 2, T 100 19 ms against
#: 9 ms; the FFT rest adds a certified l1 allowance, 3.6e-11 in delta there)
LAPLACE_DIRECT_BUDGET = 1e6


def laplace_compose(pld: PLD, steps: int, pairs: list[LossPair],
                    truncation: float | None = None) -> PLD:
    """``pld.self_compose(steps, truncation)``, by the power method first for the runs of
    Poisson-subsampled Laplace (``pairs``: the run's step pairs) of at least
    ``LAPLACE_POWER_MIN_T`` steps (falling back to squaring where it does not apply),
    shorter ones by squaring with direct sums of at most ``LAPLACE_DIRECT_BUDGET``
    multiply-adds; an optimistic side of at least ``TWO_LEVEL_MIN_T`` steps in two levels
    (:func:`~privamp.pld.compose.compose_two_level`, its own truncation).  All are certified
    the same way (:meth:`PLD.self_compose`).

    Args:
        pld: one step's PLD.
        steps: the number of steps T >= 1.
        pairs: the run's single-step pairs (decides whether the run is Laplace's).
        truncation: as in :meth:`PLD.self_compose`.

    Returns:
        The T-fold composition."""
    if not all(laplace_direction(x) for x in pairs):
        return pld.self_compose(steps, truncation)
    if pld.kind == "optimistic" and steps >= TWO_LEVEL_MIN_T:
        # the lower side of long runs in two levels (:func:`compose_two_level`: every stage
        # stays optimistic, so the result is a certified lower side): on q 1e-5..1e-2,
        # T 1e4..1e5 it lowered the lower bound by <= 4e-5 (relative) and saved 10-20 % of
        # the call (q 1e-4, b 2, T 1e4: 14.8 -> 12.8 ms; issue 28).  Not the pessimistic
        # sides: their upper bound would move up (by <= 7e-5 there).
        return compose_two_level(pld, steps)
    if steps >= LAPLACE_POWER_MIN_T:
        try:
            return pld.self_compose(steps, truncation, method="power")
        except PowerMethodUnavailable:
            pass
    return pld.self_compose(steps, truncation, direct_budget=LAPLACE_DIRECT_BUDGET)


def laplace_single_step(pair: LossPair, h: float, tail: float, rho: float
                        ) -> tuple[PLD, PLD | None]:
    """(pessimistic, optimistic or None) PLDs of one step of a Poisson-subsampled Laplace
    direction: the pessimistic side on step ``h``; the optimistic side on
    ``h / LAPLACE_OPTIMISTIC_SPLIT`` for the remove direction (on ``h`` where one step's loss
    range spans ``LAPLACE_SPLIT_MAX_POINTS`` steps or more) and None for the add direction
    (Zhu, Dong, Wang 2022, arXiv:2106.08567: the remove pair's lower bound is realised by
    neighbouring datasets, so it is valid for the run; it is also the larger one, the add
    direction's profile lying below on every setting of benchmarks/laplace_speed.py).

    Args:
        pair: the direction's pair (:func:`~privamp.accountants.grid.laplace_direction`).
        h: the pessimistic step.
        tail, rho: as ``tail`` and ``rho_max`` of :func:`~privamp.pld.discretise.discretise`.

    Returns:
        The two PLDs."""
    if isinstance(pair, SwappedPair):
        return discretise(pair, h, tail, optimistic=False, rho_max=rho)[0], None
    lo, hi = pair.loss_range(tail)  # (the range discretise covers; kept by the pair)
    if (hi - lo) / h + 1 >= LAPLACE_SPLIT_MAX_POINTS:
        p, o = discretise(pair, h, tail, rho_max=rho)  # (both sides at once: tails shared)
        return p, o
    p, _ = discretise(pair, h, tail, optimistic=False, rho_max=rho)
    o = discretise(pair, h / LAPLACE_OPTIMISTIC_SPLIT, tail, rho_max=rho,
                   pessimistic=False)[1]
    return p, o


#: the Laplace path composes a direction again (:func:`laplace_precise`) when its pessimistic
#: side's numerical allowances (slack + mass at infinity) exceed this fraction of the delta
#: asked for (review, session 9: at delta 1e-10 the fast pass's FFT allowance, ~3e-11, was a
#: third of delta: q 0.1, b 3, T 100: upper 1.941 against dp-accounting's 1.924)
LAPLACE_ALLOWANCE_FRACTION = 1e-3


#: direct-sum budget (multiply-adds per convolution) of the precise pass: the exact direct
#: part covers all but the smallest masses, so the FFT's certified error is ~1e-13 or less
LAPLACE_PRECISE_BUDGET = 1e9


def needs_precise(pld: PLD, delta: float) -> bool:
    """True if ``pld``'s numerical allowances (slack + mass at +inf) exceed
    ``LAPLACE_ALLOWANCE_FRACTION`` of ``delta`` (a heuristic of tightness, not soundness).

    Args:
        pld: a composed pessimistic PLD.
        delta: the smallest delta asked for (> 0).

    Returns:
        Whether :func:`laplace_precise` is worth its cost."""
    return pld.slack + pld.inf_mass > LAPLACE_ALLOWANCE_FRACTION * delta


def laplace_precise(pair: LossPair, h: float, steps: int, delta: float, rho: float,
                    floor: float = 1.0) -> PLD | None:
    """The pessimistic T-fold PLD of one Poisson-subsampled Laplace direction for small
    ``delta``: one step discretised on ``h`` with tails dropped below ``1e-3 delta / T``
    (pessimistically: moved to +inf), composed by squaring with direct sums of up to
    ``LAPLACE_PRECISE_BUDGET`` multiply-adds and truncation ``1e-3 delta / (2 T)`` per
    convolution, so the allowances are a small fraction of delta where the float error of
    the single step permits (its absolute part, ~1e-14 per step for the add direction, is
    paid T times: delta 1e-12 at T >= 1e3 stays out of reach).  Certified as
    :func:`~privamp.pld.discretise.discretise` and :meth:`PLD.self_compose`.

    Args:
        pair: the direction's pair (:func:`~privamp.accountants.grid.laplace_direction`).
        h: the grid step (as the fast pass's).
        steps: the number of steps T >= 1.
        delta: the smallest delta asked for (> 0).
        rho: ``rho_max`` of :func:`~privamp.pld.discretise.discretise` (at most 1e-6).
        floor: the allowances to beat (the fast pass's): None is returned, without
            composing, if the single step's slack paid T times already reaches it.

    Returns:
        The composed pessimistic PLD, or None."""
    small = 1e-3 * delta / steps
    p, _ = discretise(pair, h, min(1e-16, small), optimistic=False,
                      rho_max=min(1e-6, max(rho, 1e-3 / steps)))
    if p.slack * steps >= floor:
        return None
    return p.self_compose(steps, truncation=min(0.5 * small, 1e-13 / (2 * steps)),
                          method="squaring", direct_budget=LAPLACE_PRECISE_BUDGET)
