"""Which accountants can win: the rule "best" follows (issue 14).

The rule.  "best" reports the smallest upper bound and the largest lower bound over the
applicable accountants.  It runs every accountant except those declaring the capability
"rdp_accountant" (:mod:`privamp.accountants.registry`: their answers are conversions of a
Rényi-DP curve; today the "rdp" accountant) -- so the PLD accountants, the exact and
closed-form ones.  The RDP accountant gives no lower bound, so it matters only if its
upper bound could be smaller than the best upper bound already in hand; it is run unless that
is ruled out by a certified floor on its answer:

* an analysis that offers ``renyi_floor(alpha)`` (capability of
  :mod:`privamp.accountants.registry`; e.g. the Poisson PLD accountant: its optimistic
  PLDs belong to pairs the run's true pair dominates, so by data processing their Rényi
  divergences are <= the run's RDP, hence <= any RDP upper bound the "rdp" accountant
  composes) bounds the RDP curve from below at every order;
* the conversion (Balle et al. 2020, arXiv:1905.09982, Thm 21, with the total-variation
  shortcut) is monotone in the RDP value, so its minimum over an interval of orders [a, b]
  is at least :func:`~privamp.renyi.conversion.eps_floor` of the floor at a (the RDP of a
  pair is nondecreasing in the order); intervals covering all orders the accountant may try
  (1 + 1e-9 .. 1e6) are split where the floor is below the target, for a bounded number of
  rounds;
* a pure-DP step (Laplace, randomized response) makes the RDP accountant answer at most the
  pure epsilon of the run: if that is below the best upper bound, "rdp" runs.

If every interval's floor is >= the best upper bound at every query point, the RDP
accountant cannot give a smaller upper bound and is skipped: "best" is then exactly as tight
as running all accountants, at the cost of the PLD alone.  Otherwise (tiny delta, very long
runs, no floor offered, the PLD declined) it runs as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np

from ..accountants.rdp import compositions, pure_dp_epsilon
from ..accountants.registry import offers
from ..errors import NotApplicable
from ..renyi.conversion import eps_floor, log_delta_floor

__all__ = [
    "FLOOR_SCREENED",
    "floor_screened",
    "rdp_cannot_win",
    "rdp_ruled_out",
    "rdp_ruled_out_scaled",
]


#: accountants without the "rdp_accountant" capability whose answers are nonetheless the
#: Balle 2020 conversion (:class:`~privamp.accountants.rdp.RdpAccountant`) of a Rényi-DP
#: upper bound of the run, so the rule of this module screens them the same way:
#: "black-box-group" (Balle et al. 2018's black-box group profile -> RDP, composed; it does
#: not declare the capability because composition and epsilon curves take the first RDP
#: curve offered, and it is registered ahead of the tight "rdp" accountant)
FLOOR_SCREENED = ("black-box-group",)


def floor_screened(accountants: list) -> tuple:
    """The accountants among ``accountants`` (RunAccountant) named in
    :data:`FLOOR_SCREENED` and not already screened by their capability.

    Args:
        accountants: the applicable RunAccountants of a run.

    Returns:
        Those that "best" asks last, only where :func:`rdp_ruled_out` does not rule them out.
    """
    return tuple(a for a in accountants
                 if a.name in FLOOR_SCREENED and "rdp_accountant" not in a.capabilities)


#: orders the RDP accountant may try: a - 1 in [1e-9, 1e6 - 1]
_T_LO, _T_HI = 1e-9, 1e6


_START_INTERVALS = 48


_ROUNDS = 16


_MAX_INTERVALS = 1500


def rdp_cannot_win(floor: Callable[[np.ndarray], np.ndarray], which: str, x: np.ndarray,
                   target: np.ndarray) -> bool:
    """True if the Balle 2020 conversion of every RDP curve >= ``floor`` gives, at every
    query point ``x`` (deltas if ``which == "epsilon"``, epsilons if ``"delta"``), a value
    >= ``target`` (the best upper bound already in hand); False if that is not certified
    within the round budget."""
    x = np.atleast_1d(np.asarray(x, dtype=float)).ravel()
    target = np.broadcast_to(np.asarray(target, dtype=float), np.shape(x)).ravel()
    edges = np.geomspace(_T_LO, _T_HI, _START_INTERVALS + 1)
    lo, hi = edges[:-1], edges[1:]
    vals = np.asarray(floor(1.0 + lo), dtype=float)
    for _ in range(_ROUNDS):
        if which == "epsilon":
            fl = eps_floor(1.0 + lo, 1.0 + hi, vals, x)
        else:
            fl = np.exp(log_delta_floor(1.0 + lo, 1.0 + hi, vals, x))
        bad = cast(np.ndarray, (fl < target[:, None]).any(axis=0))
        if not bad.any():
            return True
        if lo.size + bad.sum() > _MAX_INTERVALS:
            return False
        lo, hi, vals = _split(lo, hi, vals, bad, floor)
    return False


def _split(lo: np.ndarray, hi: np.ndarray, vals: np.ndarray, which: np.ndarray,
           floor: Callable[[np.ndarray], np.ndarray]
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split the order intervals (alpha - 1 in [lo, hi], floor value ``vals`` at their left
    end) flagged by ``which`` at their geometric middle; the right halves' floor is taken at
    the middle, and never below the whole interval's (a finer split only raises floors)."""
    mid = np.sqrt(lo[which] * hi[which])
    new_vals = np.maximum(np.asarray(floor(1.0 + mid), dtype=float), vals[which])
    return (np.concatenate([lo[~which], lo[which], mid]),
            np.concatenate([hi[~which], mid, hi[which]]),
            np.concatenate([vals[~which], vals[which], new_vals]))


def _pure_total(runs: list) -> float | None:
    """The pure-DP epsilon the RDP accountant may use for these runs composed (None: none)."""
    total = 0.0
    for run in runs:
        pure = pure_dp_epsilon(run.mechanism, run.scheme, run.relation)
        if pure is None:
            return None
        total += compositions(run) * pure
    return total


def rdp_ruled_out(run, analyses: list, which: str, x: np.ndarray, best_upper: np.ndarray
                  ) -> bool:
    """The rule of this module for one query: True if the "rdp" accountant cannot beat
    ``best_upper`` (the smallest upper bound of the accountants run so far).  ``run``: a
    Training, or a list of them (the phases of a composition)."""
    floors = [an.renyi_floor for an in analyses if offers(an, "renyi_floor")]
    if not floors:
        return False
    best_upper = np.asarray(best_upper, dtype=float)
    if np.all(best_upper <= 0.0):
        return True  # nothing is below 0
    if not np.all(np.isfinite(best_upper)):
        return False
    total = _pure_total(run if isinstance(run, list) else [run])
    if total is not None:
        if which == "epsilon" and np.any(total < best_upper):
            return False
        if which == "delta" and np.any(np.asarray(x) >= total):
            return False  # delta = 0 exactly there by pure DP

    def floor(alpha: np.ndarray) -> np.ndarray:
        return np.max([f(alpha) for f in floors], axis=0)

    try:
        return rdp_cannot_win(floor, which, x, best_upper)
    except NotApplicable:  # an analysis declined its floor for this run: no screening
        return False


def rdp_ruled_out_scaled(runs: list, floor: Callable[[np.ndarray], np.ndarray],
                         scales: np.ndarray, delta: float, best_upper: np.ndarray
                         ) -> np.ndarray:
    """The rule for several runs at once (the checkpoints of an epsilon curve): per k, True
    if the "rdp" accountant cannot beat ``best_upper[k]`` at ``delta`` for ``runs[k]``, whose
    Rényi DP is at least ``scales[k] * floor`` at every order.  The intervals of orders are
    split where any undecided run's floor is below its target (shared: a finer split only
    raises every floor), within the budget of :func:`rdp_cannot_win`; the pure-DP and
    nonfinite cases are decided as in :func:`rdp_ruled_out`."""
    scales = np.asarray(scales, dtype=float)
    targets = np.asarray(best_upper, dtype=float)
    done = targets <= 0.0  # nothing is below 0
    open_ = ~done & np.isfinite(targets)
    for k in np.flatnonzero(open_):
        total = _pure_total([runs[k]])
        if total is not None and total < targets[k]:
            open_[k] = False
    d = np.atleast_1d(np.asarray(delta, dtype=float))
    edges = np.geomspace(_T_LO, _T_HI, _START_INTERVALS + 1)
    lo, hi = edges[:-1], edges[1:]
    vals = np.asarray(floor(1.0 + lo), dtype=float)
    for _ in range(_ROUNDS):
        if not open_.any():
            break
        ks = np.flatnonzero(open_)
        n = lo.size
        fl = eps_floor(np.tile(1.0 + lo, ks.size), np.tile(1.0 + hi, ks.size),
                       (scales[ks, None] * vals[None, :]).ravel(), d).reshape(ks.size, n)
        bad = fl < targets[ks, None]
        won = ~bad.any(axis=1)
        done[ks[won]] = True
        open_[ks[won]] = False
        split = cast(np.ndarray, bad[~won].any(axis=0))
        if not split.any() or n + split.sum() > _MAX_INTERVALS:
            break
        lo, hi, vals = _split(lo, hi, vals, split, floor)
    return done
