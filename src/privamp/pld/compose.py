"""Long compositions in two levels: T1 steps on the fine grid, then coarsened and powered."""

from __future__ import annotations

import functools
import math

import numpy as np

from .._validation import check_int
from .budget import TRUNC_BUDGET, TWO_LEVEL_FACTOR, TWO_LEVEL_MIN_T
from .grid import PLD, PowerMethodUnavailable

__all__ = [
    "compose_two_level",
    "heavy_tailed",
    "mix",
    "optimistic_factor",
]


#: two-level composition: least first-level length (the coarsening factor and the least T are
#: :data:`privamp.pld.budget.TWO_LEVEL_FACTOR` and ``TWO_LEVEL_MIN_T``)
_TWO_LEVEL_T1 = 1000


#: ... and at most about this many first-level blocks: a longer run takes T1 near
#: T / _TWO_LEVEL_BLOCKS, up to _TWO_LEVEL_MAX_T1 (issue 28; since session 12 only for a
#: heavy-tailed step, others T / _LIGHT_BLOCKS).  The coarse stage charges the
#: first level's certified FFT allowance (its slack) once per block and pays one
#: coarsening's discretisation error per block, so fewer, longer blocks are tighter:
#: q 1e-4, sigma 0.3, T 1e6 (T1 1000 -> 31250): slack 1.9e-9 -> 2.6e-10, upper
#: 71.234390 -> 71.233871 (dp-accounting 71.233872), lower 71.226291 -> 71.226825, at the
#: same CPU time.  If the first level's power method is unavailable (window too long), the
#: blocks of _TWO_LEVEL_T1 steps are used.
_TWO_LEVEL_BLOCKS = 32


#: ... the longest first level: its window grows about as sqrt(T1) where the steps' sum
#: spreads (q 1e-3, sigma 0.5, T 1e7: T1 312500 took 0.6 s CPU against 0.34 s at 1000,
#: T1 32000 0.4 s with nearly the same interval, [309.05489, 309.07284])
_TWO_LEVEL_MAX_T1 = 32000


#: direct-sum budget of the remainder steps' products: their FFT allowance (~1e-13 each) is
#: negligible against delta, while exact direct sums of coarse single steps (thousands of
#: atoms each) cost several milliseconds
_REMAINDER_DIRECT = 1e5


#: long first-level blocks (:func:`_coarse_factor`): the coarse stage pays its discretisation
#: error once per block, T / T1 <= ~64 times instead of ~T / 1000, so it may take a grid
#: this many times coarser than the first level's (was TWO_LEVEL_FACTOR = 8; with the
#: T / _LIGHT_BLOCKS blocks below, q 1e-2, sigma 1, T 1e6: 0.176 -> 0.085 s CPU, upper
#: 139.030723 -> 139.030777, dp-accounting 139.031357) ...
_LONG_FACTOR = 32


#: ... but only this many on the pessimistic side of a heavy-tailed step (sd above
#: _HEAVY_SD_IQR interquartile ranges), where the certified upper bound lies closest to
#: dp-accounting's estimate (q 1e-4, sigma 0.3, T 1e6: 71.2338717 at 16, 71.2338735 at 32,
#: dp-accounting 71.2338721)
_HEAVY_FACTOR = 16
_HEAVY_SD_IQR = 4.0


#: ... and a light-tailed step (not heavy_tailed) takes first-level blocks of about
#: T / _LIGHT_BLOCKS steps (at least 2 _TWO_LEVEL_T1, at most _TWO_LEVEL_MAX_T1): the first
#: level's window, hence its transform, shrinks with the block, while the slack and the
#: coarse stage's error grow by far less than these rows' margins to dp-accounting
_LIGHT_BLOCKS = 128


def optimistic_factor(w: float) -> int:
    """Coarsening of the optimistic side of the leading direction: the chained optimistic
    discretisation's error shrinks with the spread of the single-step loss (about w), so at
    rates above 1e-3 a grid ``round(sqrt(w / 1e-3))`` times coarser (at most 3) keeps the
    lower bound as close as the finest one at w = 1e-3 (a heuristic; the bound stays
    certified).

    Args:
        w: spread of the single-step loss (about the sampling rate).

    Returns:
        The coarsening factor, 1 to 3.
    """
    return int(min(max(round(math.sqrt(w / 1e-3)), 1), 3))


def _power_or_squaring(p: PLD, T: int, tau: float) -> PLD:
    try:
        return p.self_compose(T, truncation=tau, method="power")
    except PowerMethodUnavailable:
        return p.self_compose(T, truncation=tau)


@functools.lru_cache(maxsize=64)
def _first_level_length(T: int, target: int) -> int:
    """A first-level length in [0.7, 1.4] x ``target`` leaving the smallest remainder
    ``T mod T1`` (ties: nearest the target, then the shorter; one key, remainder times 2^32
    plus distance, as a lexicographic sort would order them)."""
    cands = np.arange(int(0.7 * target), int(1.4 * target) + 1, dtype=np.int64)
    key = (T % cands) * (1 << 32) + np.abs(cands - target)
    return int(cands[int(np.argmin(key))])


def _coarse_factor(fine: PLD, t1: int, heavy: bool) -> int:
    """The second level's coarsening factor: :data:`TWO_LEVEL_FACTOR` for blocks of under
    ``2 _TWO_LEVEL_T1`` steps; for longer blocks ``_LONG_FACTOR``, but ``_HEAVY_FACTOR`` on
    the pessimistic side of a heavy-tailed step (:func:`heavy_tailed`; issue 28, session
    12; a heuristic: every factor keeps the PLD's kind, so the bounds stay certified)."""
    if t1 < 2 * _TWO_LEVEL_T1:
        return TWO_LEVEL_FACTOR
    return _HEAVY_FACTOR if heavy and fine.kind == "pessimistic" else _LONG_FACTOR


def heavy_tailed(masses: np.ndarray) -> bool:
    """Whether a one-step PLD's masses have a standard deviation above ``_HEAVY_SD_IQR``
    times their interquartile range (rare large losses: small-rate Gaussian at sigma below
    ~0.65, as :data:`privamp.accountants.grid.LONG_HEAVY`).

    Args:
        masses: the PLD's masses on its grid (nonnegative, not all zero).

    Returns:
        True if heavy-tailed.
    """
    m = np.asarray(masses, dtype=float)
    tot = float(m.sum())
    if not tot > 0.0:
        return False
    x = np.arange(len(m), dtype=float)
    mean = float(m @ x) / tot
    sd = math.sqrt(max(float(m @ (x - mean) ** 2) / tot, 0.0))
    cdf = np.cumsum(m)
    iqr = float(np.searchsorted(cdf, 0.75 * tot) - np.searchsorted(cdf, 0.25 * tot))
    return sd > _HEAVY_SD_IQR * max(iqr, 1.0)


def compose_two_level(p: PLD, T: int) -> PLD:
    """The T-fold composition of a PLD in two levels: ``T1`` steps on p's grid, then that
    PLD coarsened k times (:meth:`PLD.coarsen`: connect-the-dots of its atoms for a
    pessimistic PLD, merged atoms and chained lowered chords for an optimistic one) and
    composed ``T // T1`` times, times r = T mod T1 coarsened single steps.

    T1 is 0.7..1.4 times a target, the one leaving the smallest remainder: the target is
    ``min(max(1000, T / 32), 32000)``; where that is at least 2000 and p is not
    :func:`heavy_tailed`, ``min(max(2000, T / 128), 32000)`` (issue 28, session 12); blocks
    of 700..1400 steps where the power method cannot take the longer ones.  k is 8 for
    blocks of under 2000 steps, else 32 (16 on the pessimistic side of a heavy-tailed p).

    Every stage keeps the PLD's kind, so the result bounds the truth the same way.  The
    coarse stage's discretisation error (second order in the step, once per block) adds a
    fraction to the fine one's (once per step), while its window is k times shorter: for
    long runs this is both faster and about as tight as one level on p's grid.  One level
    for T < 5000.

    Args:
        p: one step's PLD.
        T: the number of steps (>= 1).

    Returns:
        The T-fold composition's PLD, of p's kind, on step ``k p.h`` (``p.h`` below 5000
        steps).

    Raises:
        ValueError: T not a positive integer.
    """
    T = check_int("T", T, minimum=1)
    if T < TWO_LEVEL_MIN_T:
        return p.self_compose(T)
    tau = TRUNC_BUDGET / (2.0 * T)
    target = min(max(_TWO_LEVEL_T1, T // _TWO_LEVEL_BLOCKS), _TWO_LEVEL_MAX_T1)
    heavy = target >= 2 * _TWO_LEVEL_T1 and heavy_tailed(p.masses)
    if target >= 2 * _TWO_LEVEL_T1 and not heavy:  # light tails: more, shorter blocks
        target = min(max(2 * _TWO_LEVEL_T1, T // _LIGHT_BLOCKS), _TWO_LEVEL_MAX_T1)
    fine = None
    if target > _TWO_LEVEL_T1:  # long blocks: by the power method only, else short ones
        t1 = _first_level_length(T, target)
        try:
            fine = p.self_compose(t1, truncation=tau, method="power")
        except PowerMethodUnavailable:
            fine = None
    if fine is None:
        t1 = _first_level_length(T, _TWO_LEVEL_T1)
        fine = _power_or_squaring(p, t1, tau)
    t2, r = divmod(T, t1)
    k = _coarse_factor(fine, t1, heavy)
    coarse = fine.coarsen(k)
    del fine
    # one FFT pair even for few coarse steps (squaring would take log2(t2) pairs)
    out = _power_or_squaring(coarse, t2, tau)
    if r:  # r < t2 steps, each coarsened on its own (r H^2 against T h^2: a small share)
        # (on the grid TWO_LEVEL_FACTOR times coarser, their product then brought to k h in
        # one coarsening: r (8 h)^2 + (k h)^2 rather than r (k h)^2)
        k0 = min(k, TWO_LEVEL_FACTOR)
        rest = p.coarsen(k0).self_compose(r, truncation=tau, direct_budget=_REMAINDER_DIRECT)
        if k > k0:
            rest = rest.coarsen(k // k0)
        out = out.compose(rest, truncation=tau, direct_budget=_REMAINDER_DIRECT)
    return out


def mix(parts: list[tuple[float, PLD]], kind: str, rel: float = 1e-12) -> PLD:
    """The PLD of a labelled mixture (the label revealed: a disjoint union of the parts'
    outcomes) on the parts' common grid: the weighted sum of their masses, infinite masses and
    slacks.  A PLD's profile is linear in its masses, so the sum bounds the union's profile on
    the side of ``kind`` when each part bounds its component's.

    Args:
        parts: (weight >= 0, PLD) pairs, every PLD of kind ``kind`` on one grid step.
        kind: ``"pessimistic"`` or ``"optimistic"``.
        rel: relative float allowance of the sums, applied in the safe direction (masses up
            for pessimistic, down for optimistic; the slack always up).

    Returns:
        The mixture's PLD.

    Raises:
        ValueError: no parts, or parts on different grid steps.
    """
    if not parts:
        raise ValueError("mix needs at least one (weight, PLD) part")
    h = parts[0][1].h
    if any(p.h != h for _, p in parts):
        raise ValueError("every part must be on the same grid step")
    lo = min(p.offset for _, p in parts)
    hi = max(p.offset + len(p.masses) for _, p in parts)
    masses = np.zeros(hi - lo)
    inf_mass = slack = 0.0
    for w, p in parts:
        masses[p.offset - lo: p.offset - lo + len(p.masses)] += w * p.masses
        inf_mass += w * p.inf_mass
        slack += w * p.slack
    f = 1.0 + rel if kind == "pessimistic" else 1.0 - rel
    return PLD(h, lo, masses * f, inf_mass * f, kind, slack * (1.0 + rel))
