"""Pairs built from pairs: the swapped pair (Q, P) and finite mixtures."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from .loss_pair import LossPair, as_array, cell_masses
from .mechanism_pairs import GaussianPair

__all__ = [
    "SwappedPair",
    "MixturePair",
    "mixture_pair",
]


class SwappedPair(LossPair):
    """The pair (Q, P) of a pair (P, Q): its loss is -L."""

    def __init__(self, base: LossPair) -> None:
        self.base = base
        self.p_inf = base.q_minf
        self.q_minf = base.p_inf

    def tail(self, l, dist, upper, strict):
        other = "Q" if dist == "P" else "P"
        return self.base.tail(-as_array(l), other, not upper, strict)

    def tail_and_complement(self, l, dist, upper, strict):
        """The base pair's tail and complement at -l (as :meth:`tail`)."""
        other = "Q" if dist == "P" else "P"
        return self.base.tail_and_complement(-as_array(l), other, not upper, strict)

    def support(self) -> tuple[float, float] | None:
        base = self.base.support()
        return None if base is None else (-base[1], -base[0])

    def range_starts(self, tail: float
                     ) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """The base's, reflected: this pair's P(L > x) is the base's Q(L < -x) and its
        Q(L < x) the base's P(L > -x)."""
        base = self.base.range_starts(tail)
        if base is None:
            return None
        (lo_a, lo_b), (hi_a, hi_b) = base
        return (-hi_b, -hi_a), (-lo_b, -lo_a)


class MixturePair(LossPair):
    """(w P + (1 - w) Q, Q) for a base pair (P, Q) and 0 < w < 1.

    This is the dominating pair of Poisson subsampling at rate w (removal direction) and,
    through Balle et al. 2018's advanced joint convexity, of many other subsampling schemes.
    Its loss is L' = log(1 - w + w e^L) >= log(1 - w), a monotone function of the base loss.
    """

    def __init__(self, base: LossPair, w: float) -> None:
        if not 0.0 < w < 1.0:
            raise ValueError(f"MixturePair weight must be in (0, 1), got {w}")
        self.base, self.w = base, float(w)
        self.floor = math.log1p(-self.w)
        self.p_inf = self.w * base.p_inf
        self.q_minf = 0.0

    def _preimage(self, l: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            x = np.expm1(l)
            x += self.w
            pos = x > 0
            if l.ndim and pos.all():  # (the same floats as below, in place)
                np.log(x, out=x)
                x -= math.log(self.w)
                return x
            out = np.log(np.where(pos, x, 1.0)) - math.log(self.w)
        return np.where(pos, out, -np.inf)

    def tail(self, l, dist, upper, strict):
        l = as_array(l)
        memo = self._cached_memo(l)
        l0 = None if memo else self._preimage(np.maximum(l, self.floor))
        return self._tail_from(l, l0, dist, upper, strict, memo)

    def tail_and_complement(self, l, dist, upper, strict):
        """Both from one preimage and the base's tails and complements (those of the edges
        :meth:`split_bin_masses` kept, if ``l`` is found among them, in either order)."""
        l = as_array(l)
        memo = self._cached_memo(l)
        l0 = None if memo else self._preimage(np.maximum(l, self.floor))
        if memo is None:
            memo = {}
        return (self._tail_from(l, l0, dist, upper, strict, memo),
                self._tail_from(l, l0, dist, not upper, not strict, memo))

    def _cached_memo(self, l: np.ndarray) -> dict | None:
        """For a Gaussian base and losses ``l`` (increasing or decreasing) found among the
        edges :meth:`split_bin_masses` kept: the base tails at their preimages, keyed as
        :meth:`_tail_from` asks for them (the same floats a fresh evaluation gives: each is
        a function of its edge alone; edges not kept are evaluated fresh), else None.
        (issue 28: the add direction's grid ``j 4h`` negated is inside the remove
        direction's ``j 2h``.)"""
        if (not isinstance(self.base, GaussianPair) or l.ndim != 1
                or len(l) < _LOOKUP_POINTS):
            return None
        last = self.__dict__.get("_memo_last")
        if last is not None and len(last[0]) == len(l) and np.array_equal(last[0], l):
            return last[1]  # (the P and Q calls of a swapped pair's bin_masses)
        rev = bool(l[0] > l[-1])
        found = self._edge_lookup(l[::-1] if rev else l)
        if found is None:
            return None
        memo = {}
        for d, up, lo in (("P", found[0], found[1]), ("Q", found[2], found[3])):
            if rev:
                up, lo = up[::-1], lo[::-1]
            for strict in (True, False):  # (a Gaussian pair's tails ignore strictness)
                memo[(d, True, strict)], memo[(d, False, strict)] = up, lo
        # (memo arrays are never handed out: _tail_from copies or combines them)
        self.__dict__["_memo_last"] = (l.copy(), memo)
        return memo

    def support(self) -> tuple[float, float] | None:
        """The base's support mapped by l -> log(1 - w + w e^l), widened by a relative 1e-9
        (its rounding), or None."""
        base = self.base.support()
        if base is None:
            return None
        lo, hi = (math.log1p(self.w * math.expm1(x)) for x in base)
        return lo - 1e-9 * abs(lo) - 1e-300, hi + 1e-9 * abs(hi) + 1e-300

    def range_starts(self, tail: float
                     ) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """For a Gaussian base (shift s): in base losses x, Q(L' < l) = Phi(x / s + s / 2)
        (solved exactly: a bracket of relative width 1e-6 around it), and the P-tail
        ``w Phi(s/2 - x/s) + (1 - w) Phi(-s/2 - x/s)`` lies between ``w Phi(s/2 - x/s)``
        and ``Phi(s/2 - x/s)`` (the solutions of those two bracket it); mapped by
        x -> log(1 - w + w e^x).  A heuristic: :meth:`LossPair.loss_range` checks the
        result."""
        if not isinstance(self.base, GaussianPair) or not 0.0 < tail < 0.5 * self.w:
            return None
        s, w = self.base.s, self.w
        x_lo = s * (float(special.ndtri(tail)) - s / 2)
        x_a = s * (s / 2 - float(special.ndtri(tail / w)))
        # (tighter: the ratio R(x) = Phi(-s/2 - x/s) / Phi(s/2 - x/s) decreases, so above
        # x_a the P-tail is at most Phi(s/2 - x/s) (w + (1 - w) R(x_a)))
        with np.errstate(all="ignore"):
            r = float(special.ndtr(-s / 2 - x_a / s) / special.ndtr(s / 2 - x_a / s))
        c = w + (1.0 - w) * r if math.isfinite(r) else 1.0
        x_b = s * (s / 2 - float(special.ndtri(min(tail / c, tail / w, 0.5)
                                               if c < 1.0 else tail)))
        d = 1e-6 * (1.0 + abs(x_lo))
        xs = np.array([x_lo - d, x_lo + d, x_a - 1e-6 * (1.0 + abs(x_a)),
                       x_b + 1e-6 * (1.0 + abs(x_b))])
        if not np.all(np.isfinite(xs)) or xs.max() > 700.0:
            return None
        l = np.log1p(w * np.expm1(xs))
        return (float(l[0]), float(l[1])), (float(l[2]), float(l[3]))

    def bin_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`LossPair.bin_masses`, with the preimages and the base tails computed
        once for both distributions."""
        edges = np.asarray(edges, dtype=float)
        l0 = self._preimage(np.maximum(edges, self.floor))
        memo: dict = {}
        out = []
        for dist in ("P", "Q"):
            up = self._tail_from(edges, l0, dist, True, True, memo)
            lo = self._tail_from(edges, l0, dist, False, False, memo)
            out.append(cell_masses(up, lo))
        return out[0], out[1]

    def split_bin_masses(self, edges: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                    np.ndarray] | None:
        """(P-masses, Q-masses, base P-masses) of the cells of :meth:`LossPair.bin_masses`,
        the P-masses formed per cell as ``(1 - w) Q_cell + w P_base_cell`` from the base
        pair's masses on the preimage cells (each a difference of the smaller base tails).

        The profile of the grid pair, ``P(L > l_k) - a_k Q(L > l_k)``, then errs by
        ``(a_k - 1 + w) eta^Q_k + w eta^P_k`` (eta: the base tails' errors) plus the
        rounding of the combination -- a bound that scales with w like the profile itself
        (``w H_{alpha'}(P || Q)``, alpha' = 1 + (a_k - 1) / w), where tails computed for
        the mixture err by ~u against a profile of size ~w
        (:func:`privamp.pld.binning.split_tail_errors`).  Fourth array: per edge, a bound on
        the relative error of the base tails there (:func:`_tail_accuracy`).  Fifth:
        ``Q(L' > e)`` per edge, the value of ``tail(edges, "Q", True, True)`` (the base's
        Q-tail at the preimage, computed here anyway; at and below the floor both are 1, the
        base having no atom at -inf).  None when the base has an atom at loss -inf (the
        cells at the mixture's floor need :meth:`bin_masses`)."""
        if self.base.q_minf != 0.0:
            return None
        edges = np.asarray(edges, dtype=float)
        up_p, lo_p, up_q, lo_q, acc = self._edge_tails(edges)
        pb = cell_masses(up_p, lo_p)
        del up_p, lo_p  # (issue 28: grid-length arrays released as they die)
        qm = cell_masses(up_q, lo_q)
        del lo_q
        pm = qm * (1.0 - self.w)  # (1 - w) qm + w pb, the second term in chunks
        for i in range(0, len(pm), _CHUNK):
            pm[i : i + _CHUNK] += pb[i : i + _CHUNK] * self.w
        return pm, qm, pb, acc, up_q

    def _edge_tails(self, edges: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per edge: the base's P- and Q-tails (upper strict, lower) at the preimage and
        their accuracy -- each a function of that edge alone.  The last edges' values are
        kept: edges found among them (the same floats, e.g. the grid j 2h inside the grid
        j h, where (2j) h and j (2h) round alike) reuse them (issue 28: the optimistic side
        of the leading direction is discretised on twice the pessimistic side's step)."""
        n = len(edges)
        vals = self._edge_lookup(edges, fresh_if_none=True)
        assert vals is not None  # (fresh_if_none)
        # (kept only for grids up to _EDGE_CACHE_POINTS: six arrays live as long as the pair)
        self.__dict__["_edge_cache"] = (edges, *vals) if n <= _EDGE_CACHE_POINTS else None
        return vals

    def _edge_lookup(self, edges: np.ndarray, fresh_if_none: bool = False
                     ) -> tuple[np.ndarray, ...] | None:
        """The values of :meth:`_fresh_tails` at ``edges``, those of the kept edges reused
        (at least half must be found among them), the others evaluated; None if too few are
        found (or, with ``fresh_if_none``, all evaluated)."""
        n = len(edges)
        cache = self.__dict__.get("_edge_cache")
        found = None if cache is None else _grid_slice(cache[0], edges)
        if found is None:
            return self._fresh_tails(edges) if fresh_if_none else None
        assert cache is not None  # (found only in a cache)
        i0, i1, kept, same = found  # edges[i0:i1] == cache[0][kept] where ``same``
        vals = tuple(np.empty(n) for _ in range(5))
        for v, c in zip(vals, cache[1:], strict=True):
            v[i0:i1] = c[kept]
        if same is not None:  # (session 12) some edges of the pattern differ by rounding:
            # those evaluated fresh, each value a function of its own edge
            miss = np.ones(n, dtype=bool)
            miss[i0:i1] = ~same
            at = np.flatnonzero(miss)
            for v, f in zip(vals, self._fresh_tails(edges[at]), strict=True):
                v[at] = f
        elif i0 > 0 or i1 < n:
            rest = np.concatenate((edges[:i0], edges[i1:]))
            for v, f in zip(vals, self._fresh_tails(rest), strict=True):
                v[:i0], v[i1:] = f[:i0], f[i0:]
        return vals

    def _fresh_tails(self, edges: np.ndarray) -> tuple[np.ndarray, ...]:
        l0 = self._preimage(np.maximum(edges, self.floor))
        up_p, lo_p = self.base.tail_and_complement(l0, "P", True, True)
        up_q, lo_q = self.base.tail_and_complement(l0, "Q", True, True)
        return up_p, lo_p, up_q, lo_q, _tail_accuracy(self.base, l0)

    def _tail_from(self, l: np.ndarray, l0: np.ndarray | None, dist: str, upper: bool,
                   strict: bool, memo: dict | None) -> np.ndarray:
        """The tail at losses ``l`` (preimages ``l0``) from the base's tails; ``memo``
        holds (and receives) base tails and their complements, None: the tails alone
        (``tail`` gives the values of ``tail_and_complement``)."""
        w, b = self.w, self.base

        def base_tail(d: str) -> np.ndarray:
            key = (d, upper, strict)
            if memo is not None and key in memo:
                return memo[key]
            assert l0 is not None, "the preimages are needed for a tail not yet kept"
            if memo is None:
                return b.tail(l0, d, upper, strict)
            # (the complement comes with it: L > x and L <= x, ...)
            memo[key], memo[(d, not upper, not strict)] = b.tail_and_complement(
                l0, d, upper, strict)
            return memo[key]

        qb = base_tail("Q")
        val = qb if dist == "Q" else w * base_tail("P") + (1.0 - w) * qb
        if l.ndim and not (l <= self.floor).any():  # (nothing to fix below)
            return val.copy() if val is qb and memo is not None else val
        # At and below the floor the base loss is -inf; fix the tails there exactly.
        qmi = b.q_minf
        total = 1.0
        at_floor_mass = qmi if dist == "Q" else (1.0 - w) * qmi
        if upper:
            at = total if not strict else total - at_floor_mass
            below_val = total
        else:
            at = at_floor_mass if not strict else 0.0
            below_val = 0.0
        val = np.where(l == self.floor, at, val)
        return np.where(l < self.floor, below_val, val)


def _grid_slice(ce: np.ndarray, edges: np.ndarray
                ) -> tuple[int, int, slice, np.ndarray | None] | None:
    """``(i0, i1, kept, same)`` with ``edges[i0:i1]`` equal (as floats) to ``ce[kept]``, a
    strided slice, where ``same`` (a mask over ``edges[i0:i1]``; None: everywhere), and at
    least half of the edges so found, if ``edges`` continue an arithmetic pattern of the
    kept edges ``ce`` (``edges[i] = ce[j0 + k i]`` up to rounding), else None.  (Session 12:
    the grid ``j (k h)`` inside ``j h`` for k not a power of 2 -- the optimistic side's
    ``optimistic_factor`` 3 -- rounds like ``(k j) h`` at most points, not all: q 0.01,
    sigma 1, h 6e-5, k 3: 75%; those are reused, the rest evaluated.)"""
    n, m = len(edges), len(ce)
    if n < 2 or m < 2:
        return None
    d = float(ce[1] - ce[0])
    if not (d > 0 and math.isfinite(d)):
        return None
    r0 = float(edges[0] - ce[0]) / d
    r1 = float(edges[1] - edges[0]) / d
    # (inf, NaN or huge ratios fail these tests: round() would raise on them)
    if not (abs(r0) < 2 * m and 0.0 < r1 < 2 * m + 1):
        return None
    k, j0 = round(r1), round(r0)
    if k < 1:
        return None
    i0 = max(0, -(j0 // k))  # first i with j0 + k i >= 0
    i1 = min(n, max(0, -(-(m - j0) // k)))  # first i with j0 + k i >= m
    if (i1 - i0) * 2 < n:
        return None
    kept = slice(j0 + k * i0, j0 + k * (i1 - 1) + 1, k)
    same = ce[kept] == edges[i0:i1]
    if same.all():
        return i0, i1, kept, None
    return (i0, i1, kept, same) if int(np.count_nonzero(same)) * 2 >= n else None


#: :meth:`MixturePair.tail_and_complement` looks among the kept edges for this many losses
#: and more (shorter arrays: the search costs about what it saves)
_LOOKUP_POINTS = 1024


#: :meth:`MixturePair.split_bin_masses` keeps its edge tails for grids up to this size
_EDGE_CACHE_POINTS = 1 << 18

#: elements per chunk of the elementwise passes of :meth:`MixturePair.split_bin_masses`
_CHUNK = 1 << 16


#: relative accuracy assumed of a pair's tail evaluations (scipy's ndtr: a few ulp)
_TAIL_ULPS = 4.0


def _tail_accuracy(base: LossPair, x: np.ndarray) -> np.ndarray:
    """Per loss x, a bound on the relative error of ``base.tail`` at x.  For a Gaussian pair
    the standardised argument z = x / s -+ s / 2 is rounded (|dz| <= u (2 |x| / s + |z| +
    s)), and a tail Phi(-z) moves by at most (|z| + 1) |dz| relatively (Mills ratio
    phi(z) / Phi(-z) <= z + 1 for z >= 0; below 1 otherwise): at z ~ 7 that is ~200 u, far
    above the ulps of ndtr itself.  Other pairs: ``_TAIL_ULPS`` ulp."""
    u = float(np.finfo(float).eps) / 2.0
    if not isinstance(base, GaussianPair):
        return np.full(np.shape(x), _TAIL_ULPS * u)
    s = base.s
    x = np.asarray(x, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        xs = np.abs(x).reshape(-1)
        xs /= s  # (inf for infinite x, NaN for NaN: both fail z < 64 below)
        z = xs + s / 2.0  # >= |x / s -+ s / 2|
        # beyond |z| = 64 (|x| / s may overflow for a tiny shift s) the tail is exactly 0
        # or 1 in double precision (Phi(-60) < 1e-780), so only ndtr's own ulps remain
        term = z + 1.0
        xs *= 2.0
        xs += z
        xs += s
        term *= xs  # (z + 1) (2 |x| / s + z + s)
        term *= u * (1.0 + 1e-6)
        term += _TAIL_ULPS * u
    np.copyto(term, _TAIL_ULPS * u, where=~(z < 64.0))
    return term.reshape(x.shape)


def mixture_pair(base: LossPair, w: float) -> LossPair:
    """(w P + (1-w) Q, Q), with the trivial cases w = 1 (the base pair) handled."""
    if w >= 1.0:
        return base
    return MixturePair(base, w)

