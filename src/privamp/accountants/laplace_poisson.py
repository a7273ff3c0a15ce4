"""Poisson-subsampled Laplace in the Poisson PLD accountant (issue 28): how one step is
discretised and how the run is composed.  The grid step itself is
:func:`privamp.accountants.grid.laplace_step`.  Heuristics of cost and width only: every
PLD is certified as by :func:`privamp.pld.discretise.discretise` and
:meth:`privamp.pld.grid.PLD.self_compose`.
"""

from __future__ import annotations

from ..pairs.combinators import SwappedPair
from ..pairs.loss_pair import LossPair
from ..pld.discretise import discretise
from ..pld.grid import PLD, PowerMethodUnavailable
from .grid import laplace_direction

__all__ = [
    "laplace_compose",
    "laplace_single_step",
    "LAPLACE_POWER_MIN_T",
    "LAPLACE_DIRECT_BUDGET",
    "LAPLACE_OPTIMISTIC_SPLIT",
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
    multiply-adds.  All are certified the same way (:meth:`PLD.self_compose`).

    Args:
        pld: one step's PLD.
        steps: the number of steps T >= 1.
        pairs: the run's single-step pairs (decides whether the run is Laplace's).
        truncation: as in :meth:`PLD.self_compose`.

    Returns:
        The T-fold composition."""
    if not all(laplace_direction(x) for x in pairs):
        return pld.self_compose(steps, truncation)
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
    ``h / LAPLACE_OPTIMISTIC_SPLIT`` for the remove direction and None for the add direction
    (Zhu, Dong, Wang 2022, arXiv:2106.08567: the remove pair's lower bound is realised by
    neighbouring datasets, so it is valid for the run; it is also the larger one, the add
    direction's profile lying below on every setting of benchmarks/laplace_speed.py).

    Args:
        pair: the direction's pair (:func:`~privamp.accountants.grid.laplace_direction`).
        h: the pessimistic step.
        tail, rho: as ``tail`` and ``rho_max`` of :func:`~privamp.pld.discretise.discretise`.

    Returns:
        The two PLDs."""
    p, _ = discretise(pair, h, tail, optimistic=False, rho_max=rho)
    o = None if isinstance(pair, SwappedPair) else discretise(
        pair, h / LAPLACE_OPTIMISTIC_SPLIT, tail, rho_max=rho, pessimistic=False)[1]
    return p, o
