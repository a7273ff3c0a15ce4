"""Pairs of distributions described through their privacy loss.

A :class:`LossPair` is a pair (P, Q) of output distributions, described by the distribution of
the privacy loss L = log dP/dQ under P and under Q.  Everything the (eps, delta) machinery needs
is a tail probability of L: the privacy profile is
``H_{e^eps}(P || Q) = P(L > eps) - e^eps Q(L > eps)``, and a privacy loss distribution is
built from the masses P(L in bin), Q(L in bin).

Conventions: ``P(L = +inf)`` (mass of P where Q vanishes) is :attr:`LossPair.p_inf`;
``Q(L = -inf)`` is :attr:`LossPair.q_minf`.  Tails count these atoms where they belong.
``tail(l, dist, upper, strict)`` returns ``dist(L > l)`` (upper, strict), ``dist(L >= l)``
(upper, not strict), ``dist(L < l)`` (lower, strict) or ``dist(L <= l)`` (lower, not strict);
each is computed directly (never as 1 - the complement) so that tiny tails stay accurate.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np

__all__ = [
    "LossPair",
    "cell_masses",
]


class LossPair(ABC):
    """A pair (P, Q) through its privacy loss L = log dP/dQ (see module docstring)."""

    p_inf: float = 0.0
    q_minf: float = 0.0

    @abstractmethod
    def tail(self, l: np.ndarray, dist: str, upper: bool, strict: bool) -> np.ndarray:
        """dist in {"P", "Q"}; see module docstring."""

    def tail_and_complement(self, l: np.ndarray, dist: str, upper: bool, strict: bool
                            ) -> tuple[np.ndarray, np.ndarray]:
        """``(tail(l, dist, upper, strict), tail(l, dist, not upper, not strict))``: a tail
        and its complement (``L > l`` and ``L <= l``, or ``L >= l`` and ``L < l``; they sum
        to 1).  Each is computed directly here; a pair may override this to evaluate one
        special function for both, keeping each within its documented accuracy."""
        return self.tail(l, dist, upper, strict), self.tail(l, dist, not upper, not strict)

    # -- derived quantities -------------------------------------------------------------
    def delta(self, epsilon: np.ndarray | float) -> np.ndarray:
        """Hockey-stick divergence H_{e^eps}(P||Q) = P(L > eps) - e^eps Q(L > eps), any real eps."""
        eps = np.asarray(epsilon, dtype=float)
        p = self.tail(eps, "P", True, True)
        q = self.tail(eps, "Q", True, True)
        with np.errstate(over="ignore", invalid="ignore"):
            out = p - np.exp(eps) * q
        return np.maximum(np.where(np.isnan(out), 0.0, out), 0.0)

    def bin_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Masses of P and Q on (-inf, e_0], (e_0, e_1], ..., (e_{K-1}, e_K], (e_K, inf].

        The last cell includes the atom at +inf (P) and the first the atom at -inf (Q).
        Each interior mass is a difference of whichever tails are smaller, so that masses far
        out in the tails keep their relative precision.
        """
        edges = np.asarray(edges, dtype=float)
        out = []
        for dist in ("P", "Q"):
            up, lo = self.tail_and_complement(edges, dist, True, True)  # L > e, L <= e
            out.append(cell_masses(up, lo))
        return out[0], out[1]

    def loss_range(self, tail: float) -> tuple[float, float]:
        """(lo, hi) with P(hi < L < inf), Q(-inf < L < lo), P(-inf < L < lo) all <= tail.

        Found by a vectorised bracket search on the tail functions over [-1e4, 1e4] (to
        about 2e-5; callers round outwards to their grids and account the mass outside
        exactly, so only the cost depends on the precision).  Cached per tail.
        """
        cache = self.__dict__.setdefault("_loss_range_cache", {})
        key = float(tail)
        if key in cache:
            return cache[key]
        known = self.support()
        if known is not None:  # every finite loss lies in it: no mass outside
            cache[key] = known
            return known

        def upper_p(x: np.ndarray) -> np.ndarray:
            return self.tail(x, "P", True, True) - self.p_inf

        def lower_q(x: np.ndarray) -> np.ndarray:
            return self.tail(x, "Q", False, True) - self.q_minf

        big = _WIDE
        starts = self.range_starts(key)
        hi = lo = None
        if starts is not None:  # narrow brackets: the same precision in fewer rounds
            lo = _narrow(lower_q, key, *starts[0], increasing=True, side="lo")
            hi = _narrow(upper_p, key, *starts[1], increasing=False, side="hi")
        if hi is None:
            hi = bracket(upper_p, key, -big, big, increasing=False, side="hi")
        if lo is None:
            lo = bracket(lower_q, key, -big, big, increasing=True, side="lo")
        lo = min(lo, hi)
        cache[key] = (lo, hi)
        return lo, hi


    def support(self) -> tuple[float, float] | None:
        """(lo, hi) with P(lo <= L <= hi or L = +-inf) = Q(...) = 1, known in closed form
        (e.g. bounded losses), or None; :meth:`loss_range` then skips its search."""
        return None

    def range_starts(self, tail: float
                     ) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """Optional starting brackets ``((lo_a, lo_b), (hi_a, hi_b))`` for the two searches
        of :meth:`loss_range` (a pair may know them in closed form), or None.  A heuristic:
        each is checked to bracket its solution (else the wide search runs), and any range
        is sound for the callers (mass outside it is accounted)."""
        return None


def bracket(f, target: float, lo: float, hi: float, *, increasing: bool, side: str,
             rounds: int = 6, points: int = 32) -> float:
    """Bracket search for monotone scalar f: ``points - 1`` interior points per round; the
    bracket [lo, hi] keeps f(lo) on the "solution to the right" side (f < target for
    increasing f, f > target for decreasing) and f(hi) on the other.  Returns the bracket's
    ``side`` end, like :func:`privamp.numerics.bisect_monotone`.

    Args:
        f: vectorised monotone function.
        target: the level sought.
        lo, hi: the starting bracket.
        increasing: whether f increases.
        side: ``"lo"`` or ``"hi"``, the end returned.
        rounds, points: search rounds and points per round.

    Returns:
        The chosen end of the final bracket.
    """
    for _ in range(rounds):
        xs = lo + (hi - lo) * np.arange(1, points) / points
        with np.errstate(all="ignore"):
            v = np.asarray(f(xs), dtype=float)
        right = v < target if increasing else v > target
        k = int(np.argmin(right)) if not right.all() else len(xs)  # leading True count
        new_lo = float(xs[k - 1]) if k > 0 else lo
        new_hi = float(xs[k]) if k < len(xs) else hi
        lo, hi = new_lo, new_hi
    return hi if side == "hi" else lo


#: :meth:`LossPair.loss_range`'s wide search: [-_WIDE, _WIDE] in 6 rounds of 32 points, so
#: it ends on a cell of the lattice -_WIDE + k _STEP (up to the rounding of its points)
_WIDE = 1e4
_STEP = 2.0 * _WIDE / 32.0**6


def _narrow(f, target: float, a: float, b: float, *, increasing: bool, side: str
            ) -> float | None:
    """The end ``side`` of the lattice cell where monotone f crosses ``target`` -- the cell
    the wide search of :meth:`LossPair.loss_range` ends on, so both give the same range up
    to rounding -- found from [a, b] (if f(a) and f(b) lie on the bracket's two sides, and
    the cell's ends check out; else None)."""
    if not (math.isfinite(a) and math.isfinite(b) and a < b):
        return None

    def right(x: np.ndarray) -> np.ndarray:  # on the side of the bracket's left end
        with np.errstate(all="ignore"):
            v = np.asarray(f(x), dtype=float)
        return v < target if increasing else v > target

    # (a monotone f crosses the target in one lattice cell: if the check below passes, the
    # cell is that one whether or not [a, b] held the crossing)
    rounds = max(1, math.ceil(math.log((b - a) / (_STEP / 8.0)) / math.log(256.0)))
    x = bracket(f, target, a, b, increasing=increasing, side="hi", rounds=rounds,
                points=256)
    k = math.ceil((x + _WIDE) / _STEP)
    ends = -_WIDE + np.array([k - 1, k], dtype=float) * _STEP
    if not np.array_equal(right(ends), [True, False]):
        return None
    return float(ends[1] if side == "hi" else ends[0])


def as_array(l: np.ndarray | float) -> np.ndarray:
    """``l`` as a float numpy array (the pairs' common input coercion)."""
    return np.asarray(l, dtype=float)




#: elements per chunk of :func:`cell_masses`' masked pass
_CELL_CHUNK = 1 << 16


def cell_masses(up: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Masses of (-inf, e_0], (e_0, e_1], ..., (e_K, inf] from the tails ``up = dist(L > e)``
    and ``lo = dist(L <= e)`` at the edges e: each interior mass the difference of the
    smaller tails (clipped at 0), the first ``lo[0]``, the last ``up[-1]``.

    Args:
        up: the upper tails at the K + 1 edges.
        lo: the lower tails there.

    Returns:
        The K + 2 masses.
    """
    out = np.empty(len(up) + 1)
    inner = out[1:-1]
    np.subtract(lo[1:], lo[:-1], out=inner)
    for i in range(0, len(inner), _CELL_CHUNK):  # (chunk-sized temporaries: issue 28)
        j = min(len(inner), i + _CELL_CHUNK)
        np.copyto(inner[i:j], up[i:j] - up[i + 1 : j + 1], where=up[i:j] < lo[i + 1 : j + 1])
    np.maximum(inner, 0.0, out=inner)
    out[0], out[-1] = lo[0], up[-1]
    return out
