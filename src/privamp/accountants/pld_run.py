"""Shared machinery of the PLD run analyses: the refusals (too many steps for the grid's
allowances, an uncertified infinite epsilon) and the checkpoints of an epsilon curve."""

from __future__ import annotations

import math
from collections.abc import Container

import numpy as np

from .._validation import check_delta
from ..errors import NotApplicable
from ..numerics.arrays import shaped
from ..pld.budget import QUERY_REL
from ..pld.grid import OPTIMISTIC_SOURCE, PESSIMISTIC_SOURCE, PLD, zero_pld
from ..pld.two_sided import TwoSidedPLD
from ..results import Bound
from .registry import BoundPair

__all__ = [
    "check_slack",
    "check_finite_upper",
    "sparse_checkpoints",
    "curve_points",
    "settle_partial",
    "scalar_sides",
    "scalar_max",
    "checkpoint_plds",
    "TRUNC_CURVE",
    "CURVE_OPTIMISTIC",
    "CURVE_DIRECT",
    "SPARSE_RATIO",
    "CURVE_MAX_POINTS",
    "curve_coarsening",
    "gap_blocks",
    "DECIDING_RUN",
]


#: truncation budget of the checkpoint products of :meth:`PLDAnalysis.curve`, over t steps
#: each product truncates TRUNC_CURVE / t (at most one product per step)
TRUNC_CURVE = 1e-13


#: epsilon_curve of a long run: the optimistic side's blocks are coarsened this many times more
#: than the pessimistic side's (a heuristic: lower bounds only; half its transform lengths;
#: widest interval 0.018% -> 0.033% at q = 256/60000, sigma = 1.1, T = 14063, 0.059% ->
#: 0.066% at q = 1e-3, sigma = 1, T = 1e5)
CURVE_OPTIMISTIC = 2


#: direct-sum budget of the checkpoint products (their FFT allowance, ~1e-12 each, is
#: negligible against delta; the direct part costs more than the FFT there)
CURVE_DIRECT = 1e5


#: epsilon_curve evaluates a pessimistic-only direction at checkpoints about this factor
#: apart in steps (a heuristic: the others are settled, :func:`settle_partial`)
SPARSE_RATIO = 1.1


#: epsilon_curve: the gaps' blocks are coarsened until the last checkpoint's window, estimated
#: as a block's length times sqrt(steps / gap) (a Gaussian-like spread), is at most this many
#: points; with n < 100 checkpoints, 100 / n times this many (a heuristic for speed: every
#: checkpoint takes one inverse transform of about that length; any coarsening keeps the
#: PLD's kind, so the intervals stay certified, only wider: q 0.1, sigma 1, T 1000, 100
#: checkpoints: widest 6.3e-6 -> 9.9e-6 relative, 13x faster; not scaled down for more
#: checkpoints, whose products chain more coarsened blocks: q 0.01, sigma 1, 1000 epochs'
#: ends, widest 1.6e-4 -> 2.0e-4 at 2^16 points, but 1.0e-2 at 2^16 / 10)
CURVE_MAX_POINTS = 1 << 16


def curve_coarsening(blocks: list[tuple[int, int]], ts: np.ndarray) -> int:
    """The common coarsening factor of the gaps' blocks (``(length, gap)`` each) of an
    epsilon curve at checkpoints ``ts`` (increasing): the least integer bringing every
    block's estimated last window ``length sqrt(ts[-1] / gap)`` to
    ``CURVE_MAX_POINTS * max(1, 100 / len(ts))`` (1 when it already is)."""
    cap = CURVE_MAX_POINTS * max(1.0, 100.0 / len(ts))
    est = max(n * math.sqrt(max(int(ts[-1]), g) / g) for n, g in blocks)
    return max(1, math.ceil(est / cap))


def gap_blocks(block, gaps: list[int], ts: np.ndarray) -> dict[int, PLD]:
    """The blocks ``block(gap)`` of the distinct ``gaps`` between checkpoints ``ts``, all
    coarsened by :func:`curve_coarsening` (one grid: their running products share it)."""
    bs = {g: block(g) for g in set(gaps)}
    k = curve_coarsening([(len(b.masses), g) for g, b in bs.items()], ts)
    return {g: b.coarsen(k) for g, b in bs.items()}


def sparse_checkpoints(ts: np.ndarray) -> list[bool]:
    """The checkpoints (increasing steps ``ts``) where a pessimistic-only direction is
    evaluated: the last, and going down, each whose next evaluated one has more than
    SPARSE_RATIO times its steps."""
    out = [False] * len(ts)
    nxt = math.inf
    for k in range(len(ts) - 1, -1, -1):
        if nxt > SPARSE_RATIO * ts[k]:
            out[k], nxt = True, ts[k]
    return out


#: epsilon_curve: a pessimistic-only direction with a finer version that decides the upper
#: bound at this many checkpoints in a row from its first is not evaluated further on its
#: coarse grid (a heuristic for speed: settle_partial then evaluates the finer version at
#: every later checkpoint, as it would where the coarse one decides; q 1e-3, sigma 4,
#: T 1e6: 29 -> 3 coarse evaluations, each on a transform twice as long as the finer one's)
DECIDING_RUN = 3


def curve_points(ts: np.ndarray, streams: list, which: str, x: np.ndarray, hook,
                 sparse: list[bool] | None = None, finer: Container[int] = ()
                 ) -> tuple[list, list, dict[int, dict[int, tuple]]]:
    """The checkpoints' bounds from the directions' PLD streams (a stream yields None where
    its direction is not evaluated: those bounds cover the other directions only); also,
    per pessimistic-only direction, at the checkpoints where it was evaluated, its upper
    bound and the other directions' largest one (``(own, rest)``).  ``sparse``: the
    checkpoints where the pessimistic-only directions are evaluated (read by their streams
    as they go); once each of them is in ``finer`` and decided at its first
    ``DECIDING_RUN`` evaluations, the later ones are cleared."""
    out: list[BoundPair | NotApplicable] = []
    extra: list[object] = []
    partial: dict[int, dict[int, tuple]] = {}
    hints: dict[int, tuple] = {}  # the last answers: later epsilons lie above these
    zeros: dict[float, PLD] = {}  # one zero optimistic PLD per grid step
    one = which == "epsilon" and np.ndim(x) == 0  # (one delta: scalar_sides)
    d = check_delta(x) if one else x
    for k, t in enumerate(ts):
        if sparse is not None and partial and any(sparse[k:]) and all(
                i in finer and len(v) >= DECIDING_RUN and all(
                    bool(np.any(a > b)) for a, b in v.values()) for i, v in partial.items()):
            sparse[k:] = [False] * (len(ts) - k)
        dirs, present = [], []
        done = sparse is not None and not any(sparse[k:])  # (its products: no further)
        for i, (pess_side, opt_side) in enumerate(streams):
            pess = None if done and opt_side is None else next(pess_side)
            if opt_side is None:
                partial.setdefault(i, {})
            if pess is None:
                continue
            dirs.append((pess, zeros.setdefault(pess.h, zero_pld(pess.h)) if opt_side is None
                         else next(opt_side)))
            present.append(i)
        pld = TwoSidedPLD(dirs)
        try:
            if which == "epsilon":
                sides = scalar_sides(dirs, d, [hints.get(i) for i in present],
                                     set(map(id, zeros.values()))) if one else \
                    pld.epsilon_sides(x, [hints.get(i, (np.nan, np.nan)) for i in present])
                for n, (i, side) in enumerate(zip(present, sides, strict=True)):
                    hints[i] = side
                    if i in partial:
                        rest = [v[0] for m, v in enumerate(sides) if m != n]
                        partial[i][k] = (side[0], np.max(rest, axis=0) if rest else
                                         np.zeros_like(side[0]))
                up, lo = (np.max(v, axis=0) for v in zip(*sides, strict=True)) if not one \
                    else scalar_max(sides)
            else:
                up, lo = pld.delta(x)
            if not one or up == math.inf:  # (a finite scalar upper bound needs no check)
                check_finite_upper(pld, up, lo, x, which)
            out.append((Bound(float(up) if one else shaped(up, x), "upper", PESSIMISTIC_SOURCE),
                        Bound(float(lo) if one else shaped(lo, x), "lower", OPTIMISTIC_SOURCE)))
        except NotApplicable as exc:
            out.append(exc)
        extra.append(None if hook is None else hook(int(t), pld, out[-1]))
    return out, extra, partial


def scalar_sides(dirs: list[tuple[PLD, PLD]], d: np.ndarray, hints: list,
                 zeros: Container[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """:meth:`TwoSidedPLD.epsilon_sides` at one delta ``d`` (a checked 0-d array), step for
    step without its array plumbing (an epsilon curve asks it at every checkpoint): per
    direction ``(p.epsilon(d, hint), o.epsilon(d, hint))``, the hints the least finite
    earlier answers (None if there is none), an optimistic side whose ``id`` is in ``zeros``
    (a zero PLD: profile 0) giving 0 as epsilon_sides does."""
    out = []
    for (p, o), h in zip(dirs, hints, strict=True):
        hp, ho = (None, None) if h is None else (_finite(h[0]), _finite(h[1]))
        out.append((p.epsilon(d, hp), np.zeros(()) if id(o) in zeros else o.epsilon(d, ho)))
    return out


def _finite(v: np.ndarray) -> float | None:
    """One earlier answer as an epsilon hint: the float if finite, else None."""
    f = float(v)
    return f if math.isfinite(f) else None


def scalar_max(sides: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The largest upper and lower bounds of ``sides`` (0-d arrays), as ``np.max`` over them
    gives them (NaN, which no Bound may hold, propagated likewise)."""
    ups = [float(a) for a, _ in sides]
    los = [float(b) for _, b in sides]
    if any(math.isnan(v) for v in ups + los):
        return np.asarray(math.nan), np.asarray(math.nan)
    return np.asarray(max(ups)), np.asarray(max(los))


def settle_partial(out: list, partial: dict[int, dict[int, tuple]], sparse: list[bool],
                    stream, x: np.ndarray, finer: Container[int] = ()) -> None:
    """Complete the upper bounds of the checkpoints where a pessimistic-only direction was
    not evaluated.  Each direction's epsilon grows with the steps (the first t steps'
    outputs are a post-processing of the first t' > t steps'), so its certified upper bound
    at the next evaluated checkpoint bounds it at this one: where that is <= the bound
    already there, the bound stands (at most the old max over directions); elsewhere the
    direction is evaluated there (``stream(i, want, False)``: its PLDs, None where not
    wanted).

    A direction ``i`` in ``finer`` has a version on a finer grid (``stream(i, want,
    True)``): if the coarse one decided the upper bound at some evaluated checkpoint, the
    finer one is used instead, and also at those checkpoints; each of the direction's
    certified upper bounds there (the finer one, the coarse one at that checkpoint or at
    the next evaluated one) bounds its epsilon, so the least of them is taken (session 11:
    q 1e-3, sigma 4, T 1e6: the add direction decides at every checkpoint)."""
    n = len(out)
    nxt, s = [0] * n, n - 1
    for k in range(n - 1, -1, -1):
        s = k if sparse[k] else s
        nxt[k] = s
    for i, vals in partial.items():
        ok = [not isinstance(out[k], NotApplicable) for k in range(n)]
        miss = [ok[k] and not sparse[k] and (
            nxt[k] not in vals or bool(np.any(vals[nxt[k]][0] > out[k][0].value)))
            for k in range(n)]
        decide = [i in finer and ok[k] and sparse[k] and k in vals and
                  bool(np.any(vals[k][0] > vals[k][1])) for k in range(n)]
        fine = any(decide)  # (else the coarse grid, which decided nowhere, settles)
        want = [a or b for a, b in zip(miss, decide, strict=True)]
        if not any(want):
            continue
        hints, last = None, max(k for k in range(n) if want[k])
        d = check_delta(x) if np.ndim(x) == 0 else None  # (one delta: scalar_sides)
        for k, pess in zip(range(last + 1), stream(i, want, fine), strict=False):
            if not want[k]:
                continue
            z = zero_pld(pess.h)
            one = TwoSidedPLD([(pess, z)])
            hints = one.epsilon_sides(x, hints) if d is None else scalar_sides(
                one.directions, d, [None if hints is None else hints[0]], {id(z)})
            old, rest = (vals[k] if decide[k] else (  # (own, the others') bounds
                vals[nxt[k]][0] if nxt[k] in vals else np.inf,
                np.asarray(out[k][0].value, dtype=float)))
            up = np.maximum(rest, np.minimum(hints[0][0], old))
            try:
                check_finite_upper(one, up, np.asarray(out[k][1].value), x, "epsilon")
            except NotApplicable as exc:
                out[k] = exc
                continue
            out[k] = (Bound(shaped(up, x), "upper", PESSIMISTIC_SOURCE), out[k][1])


def checkpoint_plds(blocks: dict[int, PLD], gaps: list[int], want: list[bool] | None = None):
    """The PLDs after each checkpoint: running products of the gaps' blocks, by one inverse
    FFT each (:meth:`PLD.running_products`, tails of mass TRUNC_CURVE / 2 cut on each side
    once), else -- or from the first checkpoint where its allowance is not certified -- by
    composing checkpoint after checkpoint (each product truncating TRUNC_CURVE / k at the
    k-th).  With ``want``: None at the k-th checkpoint where ``want[k]`` is false."""
    done = 0
    spectral = PLD.running_products(blocks, gaps, TRUNC_CURVE / 2.0, want)
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
            b, TRUNC_CURVE / (k + 1), direct_budget=CURVE_DIRECT)
        if k >= done:
            yield current if want is None or want[k] else None


def check_slack(p: PLD, T: int) -> None:
    """Refuse (NotApplicable) before composing when the allowances of one step (float-error
    slack, mass at +inf, total mass above 1 from the safety factors), added T times, already
    reach 0.1: every upper bound of the composition would be >= 0.1, at great cost."""
    excess = p.slack + p.inf_mass + max(float(np.sum(p.masses)) - 1.0, 0.0)
    if excess >= 0.1:  # one step already: no step count is small enough
        raise NotApplicable(
            f"one step's mass at loss +inf plus its numerical allowances is {excess:.3g} >= "
            f"0.1, so every upper bound of the PLD accountant would be >= 0.1")
    if T * excess >= 0.1:
        raise NotApplicable(
            f"steps={T} is too many for the PLD accountant here: the numerical allowances of "
            f"one step ({excess:.3g}) times the steps reach {T * excess:.3g}, so every upper "
            f"bound would be >= 0.1; steps must be below {0.1 / excess:.3g}")


def check_finite_upper(pld: TwoSidedPLD, up: np.ndarray, lo: np.ndarray, x: np.ndarray,
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
        f"answers delta >= {floor * (1 + 2 * QUERY_REL):.3g} (or ask another accountant)")


