"""Mixture pairs with many components: disjoint mixtures, the symmetrised pair, and the
Gaussian shift mixtures of fixed-size batches (used by Balle et al. 2018's pairs).
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import special

from ..numerics.roots import bisect_monotone
from .loss_pair import LossPair

__all__ = [
    "DisjointMixturePair",
    "SymmetrisedPair",
    "GaussianShiftMixturePair",
]


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


@functools.lru_cache(maxsize=4)
def _hermite(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite nodes and weights for the standard normal (weights summing to 1)."""
    z, w = np.polynomial.hermite_e.hermegauss(nodes)
    return z, w / w.sum()


class DisjointMixturePair(LossPair):
    """(+)_j w_j (P_j, Q_j): an index j ~ w, then a sample of P_j (resp. Q_j), index shown.

    Its loss on component j is that component's loss, so every tail is the w-mixture of the
    components' tails, and H_a = sum_j w_j H_a(P_j || Q_j) for every a >= 0.
    """

    def __init__(self, components: list[tuple[float, LossPair]]) -> None:
        comps = [(float(w), p) for w, p in components if w > 0]
        total = sum(w for w, _ in comps)
        if not comps or abs(total - 1.0) > 1e-9:
            raise ValueError(f"DisjointMixturePair weights must be > 0 and sum to 1, got {total}")
        self.components = [(w / total, p) for w, p in comps]
        self.p_inf = sum(w * p.p_inf for w, p in self.components)
        self.q_minf = sum(w * p.q_minf for w, p in self.components)

    def tail(self, l, dist, upper, strict):
        l = _arr(l)
        out = np.zeros_like(l)
        for w, p in self.components:
            out = out + w * p.tail(l, dist, upper, strict)
        return out

    def delta(self, epsilon):
        eps = _arr(epsilon)
        out = np.zeros_like(eps)
        for w, p in self.components:
            out = out + w * p.delta(eps)
        return out


class SymmetrisedPair(LossPair):
    """The pair whose profile is H_a(base) for a >= 1 and H_a(swap base) for a <= 1.

    Its loss L* has, for l > 0, the base tails P(L > l), Q(L > l); for l < 0 those of the
    swapped base, P*(L* > l) = Q(L < -l), Q*(L* > l) = P(L < -l); and an atom at 0 of mass
    Q(L <= 0) - P(L > 0) (under both P* and Q*), which must be >= 0: the condition that the
    profile is convex at a = 1, P(L > 0) + Q(L > 0) <= 1, true for mixtures of symmetric pairs
    (Gaussian, Laplace, randomized response).  It dominates every pair (A, B) with
    H_a(A||B) <= H_a(base) and H_a(B||A) <= H_a(base) for all a >= 1.
    """

    def __init__(self, base: LossPair) -> None:
        self.base = base
        atom = float(base.tail(np.array([0.0]), "Q", False, False)[0]) - float(
            base.tail(np.array([0.0]), "P", True, True)[0])
        if atom < -1e-12:
            raise ValueError(
                "SymmetrisedPair needs P(L > 0) + Q(L > 0) <= 1 for its base pair "
                f"(got an atom of {atom:.3g} at loss 0)"
            )
        self.p_inf = base.p_inf
        self.q_minf = base.p_inf

    def tail(self, l, dist, upper, strict):
        l = _arr(l)
        other = "Q" if dist == "P" else "P"
        direct = self.base.tail(l, dist, upper, strict)
        swapped = self.base.tail(-l, other, not upper, strict)
        # at l = 0: {L* > 0} and {L* <= 0} split right of the atom (base side);
        # {L* >= 0} and {L* < 0} split left of it (swapped side)
        at_zero_direct = (upper and strict) or (not upper and not strict)
        use_direct = (l > 0) | ((l == 0) & at_zero_direct)
        return np.where(use_direct, direct, swapped)

    def delta(self, epsilon):
        eps = _arr(epsilon)
        d_pos = self.base.delta(np.abs(eps))
        with np.errstate(over="ignore", invalid="ignore"):
            e = np.exp(np.minimum(eps, 0.0))
            neg = -np.expm1(np.minimum(eps, 0.0)) + e * d_pos
        return np.where(eps < 0, neg, d_pos)


class GaussianShiftMixturePair(LossPair):
    """P = sum_j b_j N(j s, 1), Q = N(0, 1) (weights b_j, j = 0..J, summing to 1, b_J > 0).

    The privacy loss L(x) = log sum_j b_j exp(j s x - j^2 s^2 / 2) is continuous and strictly
    increasing in the output x, from log b_0 (x -> -inf) to +inf, so its tails are normal
    tails at the preimage x(l), found by bisection.
    """

    def __init__(self, weights: np.ndarray, s: float) -> None:
        b = np.asarray(weights, dtype=float)
        if b.ndim != 1 or b.size < 2 or (b < 0).any() or abs(b.sum() - 1.0) > 1e-9 or b[-1] <= 0:
            raise ValueError("weights must be >= 0, sum to 1, and end with a positive weight")
        if not s > 0:
            raise ValueError(f"shift s must be > 0, got {s}")
        self.b = b / b.sum()
        self.s = float(s)
        self.j = np.arange(b.size, dtype=float)
        with np.errstate(divide="ignore"):
            self.logb = np.log(self.b)
        self.floor = float(self.logb[0])
        self._c = self.logb - (self.j * self.s) ** 2 / 2
        self._slope = self.j * self.s
        self._cache: tuple[bytes, np.ndarray] | None = None

    def loss(self, x: np.ndarray) -> np.ndarray:
        """The privacy loss log dP/dQ at output x (vectorised)."""
        x = _arr(x)
        flat = x.reshape(-1)
        terms, top, _ = self._terms(flat)
        with np.errstate(invalid="ignore"):
            out = top + np.log1p(terms.sum(axis=0))
        return np.where(np.isfinite(top), out, top).reshape(x.shape)

    def _terms(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(exp(c_j + j s x - top), top, j_top) but for the top term itself (0 in the array;
        its value is 1) with top = max_j (c_j + j s x) reached at j_top, c_j = log b_j -
        j^2 s^2 / 2, per point of the flat array x (the component j = 0 is c_0 at every x,
        also at x = +-inf); computed in place (issue 28: the temporaries of the
        vectorised form were half of the group PLD's discretisation time)."""
        terms = np.empty((self._c.size, x.size))
        with np.errstate(invalid="ignore"):
            np.multiply(self._slope[1:, None], x[None, :], out=terms[1:])
        terms[0] = 0.0
        terms += self._c[:, None]
        jt = terms.argmax(axis=0)
        cols = np.arange(x.size)
        top = terms[jt, cols]
        with np.errstate(invalid="ignore"):
            terms -= top
            np.exp(terms, out=terms)
        # the top term (exactly 1) left out: L = top + log1p(sum of the rest), so a loss a
        # hair above the floor (the rest far below one ulp of 1) is not rounded onto the
        # floor (session 10 review: tails within 1e-12 of the floor lost their digits)
        terms[jt, cols] = 0.0
        return terms, top, jt

    def loss_range(self, tail: float) -> tuple[float, float]:
        """Loss quantiles through the output x: with z = Phi^{-1}(1 - tail),
        P(X < -z), Q(X < -z) <= tail (all shifts are >= 0), and x_hi solves
        P(X > x_hi) = sum_j b_j Phibar(x_hi - j s) <= tail (bisection).  Cached per tail
        (the group PLD asks for the same one three times)."""
        cache = self.__dict__.setdefault("_range_cache", {})
        if tail not in cache:
            cache[tail] = self._loss_range(tail)
        return cache[tail]

    def range_starts(self, tail: float
                     ) -> tuple[tuple[float, float], tuple[float, float]]:
        """Narrow starting brackets for :meth:`LossPair.loss_range`'s searches around this
        pair's closed-form range (:meth:`loss_range`: Q(L < lo) = tail exactly, and
        P(L > hi) = tail to the bisection's precision), 1e-5 (1 + |value|) either side:
        they serve its swap (:class:`privamp.pairs.combinators.SwappedPair` reflects them;
        issue 28: the wide search's six rounds of mixture tails were 80% of the add
        direction's discretisation).  A heuristic: the search checks that they bracket."""
        lo, hi = self.loss_range(tail)
        dl, dh = 1e-5 * (1.0 + abs(lo)), 1e-5 * (1.0 + abs(hi))
        return (lo - dl, lo + dl), (hi - dh, hi + dh)

    def _loss_range(self, tail: float) -> tuple[float, float]:
        z = -float(special.ndtri(tail))
        shifts = self.j * self.s

        def p_upper(x: np.ndarray) -> np.ndarray:
            return (self.b[:, None] * special.ndtr(shifts[:, None] - np.atleast_1d(x)[None, :])
                    ).sum(axis=0).reshape(np.shape(x))

        x_hi = float(bisect_monotone(p_upper, np.array(tail), -z, shifts[-1] + z,
                                     increasing=False, iterations=100))
        lo = float(self.loss(np.array(-z)))
        hi = float(self.loss(np.array(x_hi)))
        return min(lo, hi), hi

    def loss_quantiles(self, probs: np.ndarray) -> np.ndarray:
        """Quantiles of the loss under P: L is increasing in the output x, so the
        p-quantile of L is L(x_p), x_p the p-quantile of P = sum_j b_j N(j s, 1) (bisection
        on its distribution function, 200 halvings of a bracket [-40, J s + 40]).

        Args:
            probs: probabilities in (0, 1).

        Returns:
            The loss at the P-quantiles of the output, shaped as ``probs``.
        """
        p = _arr(probs)
        shifts = self.j * self.s

        def cdf(x: np.ndarray) -> np.ndarray:
            return (self.b[:, None] * special.ndtr(np.atleast_1d(x)[None, :] - shifts[:, None])
                    ).sum(axis=0).reshape(np.shape(x))

        flat = p.reshape(-1)
        x = bisect_monotone(cdf, flat, np.full(flat.shape, -40.0),
                            np.full(flat.shape, shifts[-1] + 40.0), increasing=True,
                            iterations=200)
        return self.loss(x).reshape(p.shape)

    def loss_sd(self, nodes: int = 96) -> float:
        """Standard deviation of the loss under P, by Gauss-Hermite quadrature per component
        (``nodes`` nodes; an estimate, for grid heuristics only).

        Args:
            nodes: quadrature nodes per component.

        Returns:
            The standard deviation (>= 0).
        """
        z, w = _hermite(int(nodes))
        vals = self.loss((z[None, :] + (self.j * self.s)[:, None]).ravel()).reshape(
            self.j.size, z.size)
        mean = float(self.b @ (vals @ w))
        var = float(self.b @ (((vals - mean) ** 2) @ w))
        return float(np.sqrt(max(var, 0.0)))

    def _preimage(self, l: np.ndarray) -> np.ndarray:
        l = _arr(l)
        key = l.tobytes() + bytes(str(l.shape), "ascii")
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        x = self._solve(l)
        self._cache = (key, x)
        return x

    def _solve(self, l: np.ndarray) -> np.ndarray:
        flat = l.ravel()
        ok = (flat > self.floor) & np.isfinite(flat)
        x = np.where(np.isposinf(flat), np.inf, -np.inf)
        if ok.any():
            tgt = flat[ok]
            J = self.j[-1]
            # L(x) >= c_j + j s x for every j (c_j = log b_j - j^2 s^2 / 2), so
            # x(l) <= min_{j >= 1, b_j > 0} (l - c_j) / (j s): where L(hi) is within log(J + 1)
            # of l (issue 28: the old start, from j = J alone, lay far above the root where
            # b_J is tiny, and small arrays took 15 Newton steps); a hair above, for rounding
            with np.errstate(divide="ignore", invalid="ignore"):
                cand = (tgt[None, :] - self._c[1:, None]) / self._slope[1:, None]
            cand = np.where(np.isfinite(self._c[1:, None]), cand, np.inf)
            hi = cand.min(axis=0)
            hi = hi + 1e-9 * (1.0 + np.abs(hi))
            # L(x) <= log(sum b) + max_j (j s x - j^2 s^2/2) <= J s max(x, 0): x(l) >= lo
            lo = np.where(tgt > 0, tgt / (J * self.s), -60.0 - 1.0 / self.s) - 1.0
            lo = np.minimum(lo, hi - 1.0)
            # where l is barely above the floor the preimage may lie below lo: widen
            lo = np.where(self.loss(lo) > tgt, -1e4, lo)
            if tgt.size > 512:
                # tabulate L on a grid and tighten each bracket to one grid cell, so that
                # Newton starts next to the root (from above: L(grid point) >= tgt)
                xg = np.linspace(max(float(lo.min()), -60.0 - 1.0 / self.s - 1.0),
                                 float(hi.max()), 16385)
                lg = self.loss(xg)
                i = np.searchsorted(lg, tgt, side="left")
                inside = i < len(xg)
                ic = np.minimum(i, len(xg) - 1)
                hi = np.where(inside & (lg[ic] >= tgt), np.minimum(hi, xg[ic]), hi)
                below = np.maximum(i - 1, 0)
                lo = np.where((i > 0) & (lg[below] < tgt), np.maximum(lo, xg[below]), lo)
                lo = np.minimum(lo, hi)
            x[ok] = self._newton(tgt, hi, lo)
        return x.reshape(l.shape)

    def _newton(self, tgt: np.ndarray, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
        """Preimage of the losses ``tgt`` by Newton's method from above: L is convex and
        increasing (a log-sum-exp of affine functions), so Newton steps started where
        L(hi) >= tgt never pass the root and converge monotonically (quadratically near it).
        Each point stops at its first settled iterate (a step below 4e-16 max(1, |x|)) and
        only the unsettled ones are iterated further (issue 28: where L is flat, near its
        floor, rounding noise in L(x) - tgt over a tiny L' made some point take a step above
        that tolerance at almost every iteration, so the whole array ran 60 iterations and
        then bisection; a settled iterate is what the old test accepted too).  Falls back to
        bisection where the iteration has not settled."""
        x = hi.astype(float).copy()
        act = np.arange(x.size)
        for _ in range(60):
            xa = x[act]
            e, top, jt = self._terms(xa)
            rest = e.sum(axis=0)
            logs = np.log1p(rest)
            val = top + logs
            deriv = (self._slope @ e + self._slope[jt]) / (1.0 + rest)
            gap = val - tgt[act]
            with np.errstate(divide="ignore", invalid="ignore"):
                step = np.where(deriv > 0, gap / deriv, 0.0)
            step = np.maximum(step, 0.0)  # rounding can put val a hair below tgt
            # L(xa) within the rounding of its evaluation of the target (top + log1p(rest),
            # each to a few ulps of its own size: no absolute term, so a target a hair above
            # the floor is resolved): xa is kept (an iterate from above, as the bisection's
            # side="hi"); the rest step on
            flat = gap <= 4.0 * np.finfo(float).eps * (np.abs(top) + np.abs(logs))
            new = np.where(flat, xa, np.maximum(xa - step, lo[act]))
            done = flat | (np.abs(new - xa) <= 4e-16 * np.maximum(1.0, np.abs(xa)))
            x[act] = new
            act = act[~done]
            if not act.size:
                return x
        # bisection only where the iteration has not settled
        x[act] = bisect_monotone(self.loss, tgt[act], lo[act], hi[act], increasing=True,
                                 iterations=80)
        return x

    def tail(self, l, dist, upper, strict):
        l = _arr(l)
        x = self._preimage(l)
        xs = x.reshape(-1)
        if dist == "Q":
            out = special.ndtr(-xs) if upper else special.ndtr(xs)
        else:
            # the weighted sum of the components' normal tails, as one matrix product (the
            # same K + 1 positive terms summed as before, without the temporaries)
            d = np.subtract.outer(self._slope, xs)
            if not upper:
                np.negative(d, out=d)
            out = self.b @ special.ndtr(d, out=d)
        return out.reshape(l.shape)

