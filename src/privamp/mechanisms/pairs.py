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
from scipy import special

from ..numerics import log1mexp

__all__ = [
    "LossPair",
    "GaussianPair",
    "LaplacePair",
    "DiscretePair",
    "SwappedPair",
    "MixturePair",
    "mixture_pair",
]


class LossPair(ABC):
    """A pair (P, Q) through its privacy loss L = log dP/dQ (see module docstring)."""

    p_inf: float = 0.0
    q_minf: float = 0.0

    @abstractmethod
    def tail(self, l: np.ndarray, dist: str, upper: bool, strict: bool) -> np.ndarray:
        """dist in {"P", "Q"}; see module docstring."""

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
            up = self.tail(edges, dist, True, True)  # dist(L > e)
            lo = self.tail(edges, dist, False, False)  # dist(L <= e)
            use_up = up[:-1] < lo[1:]
            inner = np.where(use_up, up[:-1] - up[1:], lo[1:] - lo[:-1])
            masses = np.concatenate(([lo[0]], np.maximum(inner, 0.0), [up[-1]]))
            out.append(masses)
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

        def upper_p(x: np.ndarray) -> np.ndarray:
            return self.tail(x, "P", True, True) - self.p_inf

        def lower_q(x: np.ndarray) -> np.ndarray:
            return self.tail(x, "Q", False, True) - self.q_minf

        big = 1e4
        hi = _bracket(upper_p, key, -big, big, increasing=False, side="hi")
        lo = _bracket(lower_q, key, -big, big, increasing=True, side="lo")
        lo = min(lo, hi)
        cache[key] = (lo, hi)
        return lo, hi


def _bracket(f, target: float, lo: float, hi: float, *, increasing: bool, side: str,
             rounds: int = 6, points: int = 32) -> float:
    """Bracket search for monotone scalar f: ``points - 1`` interior points per round; the
    bracket [lo, hi] keeps f(lo) on the "solution to the right" side (f < target for
    increasing f, f > target for decreasing) and f(hi) on the other.  Returns the bracket's
    ``side`` end, like :func:`privamp.numerics.bisect_monotone`."""
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


def _as_array(l: np.ndarray | float) -> np.ndarray:
    return np.asarray(l, dtype=float)


class GaussianPair(LossPair):
    """P = N(s, 1), Q = N(0, 1): L ~ N(s^2/2, s^2) under P and N(-s^2/2, s^2) under Q."""

    def __init__(self, s: float) -> None:
        if not s > 0:
            raise ValueError(f"GaussianPair needs a shift s > 0, got {s}")
        self.s = float(s)

    def tail(self, l, dist, upper, strict):
        l = _as_array(l)
        s = self.s
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            z = l / s + (-s / 2 if dist == "P" else s / 2)  # standardised: (l - mean)/s
        return special.ndtr(-z) if upper else special.ndtr(z)

    def delta(self, epsilon):
        eps = np.asarray(epsilon, dtype=float)
        s = self.s
        # delta = Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s), computed in log space
        # (Balle, Barthe, Gaboardi 2018, Thm 4; Balle & Wang 2018, Thm 8).
        la = special.log_ndtr(s / 2 - eps / s)
        lb = eps + special.log_ndtr(-s / 2 - eps / s)
        out = np.exp(la + log1mexp(np.minimum(lb - la, 0.0)))
        return np.maximum(out, 0.0)


class LaplacePair(LossPair):
    """P = Lap(e0, 1), Q = Lap(0, 1) (units of the scale b, e0 = Delta/b).

    L = |x| - |x - e0|: an atom at -e0 (x <= 0), an atom at +e0 (x >= e0), and
    L = 2x - e0 in between.
    """

    def __init__(self, e0: float) -> None:
        if not e0 > 0:
            raise ValueError(f"LaplacePair needs e0 > 0, got {e0}")
        self.e0 = float(e0)

    def tail(self, l, dist, upper, strict):
        l = _as_array(l)
        e0 = self.e0
        t = np.clip((l + e0) / 2.0, 0.0, e0)
        if dist == "P":
            mid_up = 1.0 - 0.5 * np.exp(t - e0)
            mid_lo = 0.5 * np.exp(t - e0)
        else:
            mid_up = 0.5 * np.exp(-t)
            mid_lo = 1.0 - 0.5 * np.exp(-t)
        if upper:
            below, above = (l < -e0, l >= e0) if strict else (l <= -e0, l > e0)
            return np.where(below, 1.0, np.where(above, 0.0, mid_up))
        below, above = (l <= -e0, l > e0) if strict else (l < -e0, l >= e0)
        return np.where(below, 0.0, np.where(above, 1.0, mid_lo))

    def delta(self, epsilon):
        eps = np.asarray(epsilon, dtype=float)
        e0 = self.e0
        # Balle, Barthe, Gaboardi 2018, Thm 3: 1 - exp((eps - e0)/2) on [-e0, e0].
        mid = -np.expm1((np.minimum(eps, e0) - e0) / 2.0)
        low = -np.expm1(np.minimum(eps, 0.0))
        return np.where(eps >= e0, 0.0, np.where(eps < -e0, low, mid))


class DiscretePair(LossPair):
    """Finitely many outcomes with probabilities p (under P) and q (under Q)."""

    def __init__(self, p: np.ndarray, q: np.ndarray) -> None:
        p = np.asarray(p, dtype=float)
        q = np.asarray(q, dtype=float)
        keep = (p > 0) | (q > 0)
        p, q = p[keep], q[keep]
        with np.errstate(divide="ignore"):
            loss = np.log(p) - np.log(q)
        order = np.argsort(loss)
        self.p, self.q, self.losses = p[order], q[order], loss[order]
        self.p_inf = float(p[np.isposinf(loss)].sum())
        self.q_minf = float(q[np.isneginf(loss)].sum())

    def tail(self, l, dist, upper, strict):
        l = _as_array(l)
        w = self.p if dist == "P" else self.q
        L = self.losses[:, None]
        flat = l.reshape(1, -1)
        if upper:
            mask = L > flat if strict else L >= flat
        else:
            mask = L < flat if strict else L <= flat
        return (w[:, None] * mask).sum(axis=0).reshape(l.shape)


class SwappedPair(LossPair):
    """The pair (Q, P) of a pair (P, Q): its loss is -L."""

    def __init__(self, base: LossPair) -> None:
        self.base = base
        self.p_inf = base.q_minf
        self.q_minf = base.p_inf

    def tail(self, l, dist, upper, strict):
        other = "Q" if dist == "P" else "P"
        return self.base.tail(-_as_array(l), other, not upper, strict)


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
            x = np.expm1(l) + self.w
            out = np.log(np.where(x > 0, x, 1.0)) - math.log(self.w)
        return np.where(x > 0, out, -np.inf)

    def tail(self, l, dist, upper, strict):
        l = _as_array(l)
        return self._tail_from(l, self._preimage(np.maximum(l, self.floor)), dist, upper,
                               strict, {})

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
            use_up = up[:-1] < lo[1:]
            inner = np.where(use_up, up[:-1] - up[1:], lo[1:] - lo[:-1])
            out.append(np.concatenate(([lo[0]], np.maximum(inner, 0.0), [up[-1]])))
        return out[0], out[1]

    def _tail_from(self, l: np.ndarray, l0: np.ndarray, dist: str, upper: bool,
                   strict: bool, memo: dict) -> np.ndarray:
        w, b = self.w, self.base

        def base_tail(d: str) -> np.ndarray:
            key = (d, upper, strict)
            if key not in memo:
                memo[key] = b.tail(l0, d, upper, strict)
            return memo[key]

        qb = base_tail("Q")
        val = qb if dist == "Q" else w * base_tail("P") + (1.0 - w) * qb
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


def mixture_pair(base: LossPair, w: float) -> LossPair:
    """(w P + (1-w) Q, Q), with the trivial cases w = 1 (the base pair) handled."""
    if w >= 1.0:
        return base
    return MixturePair(base, w)
