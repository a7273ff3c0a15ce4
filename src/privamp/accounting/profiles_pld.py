"""Tight composition of fixed-size subsampling (without / with replacement) with PLDs.

One subsampled step has, by Balle, Barthe, Gaboardi 2018 (Thms 9-11, groups via Thm 7), the
privacy profile bound

    delta'(eps') <= sum_j w_j delta_{M, k_j}(eps),   eps' = log(1 + eta (e^eps - 1)),

with weights w_j summing to eta.  By advanced joint convexity (their Thm 2),
eta delta_{M,k}(eps) is exactly the profile (eps' >= 0) of the mixture pair
(eta P_k + (1 - eta) Q_k, Q_k), (P_k, Q_k) the dominating pair of M at distance k, so the
bound is exactly the profile of the *disjoint mixture*

    D = (+)_j (w_j / eta) (eta P_{k_j} + (1 - eta) Q_{k_j},  Q_{k_j})

(draw the index j with probability w_j/eta, then sample the j-th pair; hockey-stick
divergences of a disjoint mixture are the mixtures of the components').

Which pair dominates *every* ordered pair of neighbours, for *all* eps (eps < 0 included),
as PLD composition requires (Zhu, Dong, Wang 2022, Def. 7 and Thm 10)?

* Without / with replacement under **substitution**: the relation is symmetric and the
  actual output laws are A = (1-eta) C + eta A1, B = (1-eta) C + eta B1, neither of the form
  "mixture vs one component".  For a > 1, H_a(A||B) <= H_a(D) (the theorem); for a < 1,
  H_a(A||B) = 1 - a + a H_{1/a}(B||A) <= 1 - a + a H_{1/a}(D) = H_a(swap D) since (B, A) is
  a neighbouring pair too.  So the dominating pair must have the profile
  max(H_a(D), H_a(swap D)) -- equal to H_a(D) for a >= 1 and to H_a(swap D) for a <= 1 for
  the symmetric base pairs used here -- which is :class:`SymmetrisedPair` ``(D)``.  Composing
  D and swap D *separately* and taking the max (as for Poisson add/remove) would need every
  pair of neighbours to be dominated, for all eps, by D or by swap D, which fails (the
  Gaussian sum with v = +C, v' = -C, other records 0, is dominated by neither), and we know
  no other proof, so privamp does not do it (without
  replacement, one record, D and swap D are realised by neighbouring datasets, so that
  recipe gives the certified *lower* bound below; docs/balle2018.md).
* With replacement under **add/remove** (Thm 11): with x = x' + {v} the laws are
  A = (1-eta) B + eta A1 (the "remove" order) and, by Thm 7's coupling, D dominates it for
  all eps; the "add" order (B, A) is then dominated by swap D.  Each pair of neighbours keeps
  its order over the T steps, so composing D and swap D separately and taking the max is
  sound (as dp_accounting does for Poisson).

Lower bounds come from pairs of neighbouring datasets that realise the worst case of one
step: for the Gaussian sum, all records equal to v' except v with f(v) - f(v') = Delta; a
batch then holds J copies / members of v, J ~ Binom(m, K/n) (with replacement) or
Hypergeom(n, K, m) (without), and the output pair is (sum_j P(J=j) N(j Delta, s^2), N(0, s^2))
(:class:`GaussianShiftMixturePair`, whose privacy loss is increasing in the output).  Its
composition (and its swap's) is a certified lower bound on the worst case; the truncated
weights' mass rho is subtracted (T rho of total variation).
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from ..amplification.profiles import PAPER, profile_terms
from ..mechanisms import Gaussian, Laplace, Mechanism, RandomizedResponse
from ..mechanisms.pairs import GaussianPair, LossPair, MixturePair, SwappedPair, mixture_pair
from ..numerics import bisect_monotone
from ..results import Bound
from ..sampling import AddRemove, Substitution, WithoutReplacement, WithReplacement
from .pld import OPTIMISTIC_SOURCE, PESSIMISTIC_SOURCE, auto_grid, discretise
from .registry import BoundPair, RunAnalysis, run_accountant

__all__ = [
    "DisjointMixturePair",
    "SymmetrisedPair",
    "GaussianShiftMixturePair",
    "fixed_batch_pairs",
    "FixedBatchPLDAnalysis",
]


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


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
        flat = x.reshape(1, -1)
        with np.errstate(invalid="ignore"):
            prod = np.where(self._slope[:, None] == 0, 0.0, self._slope[:, None] * flat)
        terms = self._c[:, None] + prod
        top = terms.max(axis=0)
        with np.errstate(invalid="ignore"):
            out = top + np.log(np.exp(terms - top).sum(axis=0))
        return np.where(np.isfinite(top), out, top).reshape(x.shape)

    def loss_range(self, tail: float) -> tuple[float, float]:
        """Loss quantiles through the output x: with z = Phi^{-1}(1 - tail),
        P(X < -z), Q(X < -z) <= tail (all shifts are >= 0), and x_hi solves
        P(X > x_hi) = sum_j b_j Phibar(x_hi - j s) <= tail (bisection)."""
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
            # L(x) >= log b_J + J s x - J^2 s^2 / 2, so x(l) <= hi
            hi = (tgt - self.logb[-1]) / (J * self.s) + J * self.s / 2 + 1.0
            # L(x) <= log(sum b) + max_j (j s x - j^2 s^2/2) <= J s max(x, 0): x(l) >= lo
            lo = np.where(tgt > 0, tgt / (J * self.s), -60.0 - 1.0 / self.s) - 1.0
            lo = np.minimum(lo, hi - 1.0)
            # where l is barely above the floor the preimage may lie below lo: widen
            lo = np.where(self.loss(lo) > tgt, -1e4, lo)
            if tgt.size > 4096:
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
        Falls back to bisection where the iteration has not settled."""
        x = hi.astype(float).copy()
        c, slope = self._c[:, None], self._slope[:, None]
        for _ in range(60):
            terms = c + slope * x[None, :]
            top = terms.max(axis=0)
            e = np.exp(terms - top)
            ssum = e.sum(axis=0)
            val = top + np.log(ssum)
            deriv = (e * slope).sum(axis=0) / ssum
            with np.errstate(divide="ignore", invalid="ignore"):
                step = np.where(deriv > 0, (val - tgt) / deriv, 0.0)
            step = np.maximum(step, 0.0)  # rounding can put val a hair below tgt
            new = np.maximum(x - step, lo)
            done = np.abs(new - x) <= 4e-16 * np.maximum(1.0, np.abs(x))
            x = new
            if done.all():
                return x
        # bisection only where the iteration has not settled
        rest = ~done
        x[rest] = bisect_monotone(self.loss, tgt[rest], lo[rest], hi[rest], increasing=True,
                                  iterations=80)
        return x

    def tail(self, l, dist, upper, strict):
        l = _arr(l)
        x = self._preimage(l)
        xs = x.reshape(-1)
        if dist == "Q":
            out = special.ndtr(-xs) if upper else special.ndtr(xs)
        else:
            shifts = self.j * self.s
            if upper:
                out = (self.b[:, None] * special.ndtr(shifts[:, None] - xs[None, :])).sum(axis=0)
            else:
                out = (self.b[:, None] * special.ndtr(xs[None, :] - shifts[:, None])).sum(axis=0)
        return out.reshape(l.shape)


# ------------------------------------------------------------------------------------------
# the pairs of one fixed-size-batch step
# ------------------------------------------------------------------------------------------
_LOWER_TRUNC = 1e-18


def _count_law(scheme, relation):
    K = relation.group
    m, n = scheme.batch_size, scheme.dataset_size
    if isinstance(scheme, WithoutReplacement):
        return stats.hypergeom(n, K, m), min(K, m)
    return stats.binom(m, K / n), m


def fixed_batch_pairs(mechanism: Mechanism, scheme, relation
                      ) -> tuple[list[LossPair], list[LossPair], float, str, str]:
    """(upper pairs, lower pairs, rho, upper source, lower source) of one step.

    Upper: the run's profile after T steps is <= the max over the upper pairs of their
    T-fold compositions.  Lower: >= the max over the lower pairs of theirs, minus T rho.
    """
    terms = profile_terms(mechanism, scheme, relation)
    eta = terms.eta
    comps = [(w / eta, mixture_pair(mechanism.pair(int(k)), eta))
             for k, w in zip(terms.distances, terms.weights, strict=True) if w > 0]
    D = comps[0][1] if len(comps) == 1 else DisjointMixturePair(comps)
    if type(relation) is Substitution:
        upper = [SymmetrisedPair(D)]
        up_src = f"{terms.source}; symmetrised dominating pair (both orders of neighbours)"
    else:
        upper = [D, SwappedPair(D)]
        up_src = f"{terms.source}; dominating pairs of the remove and add orders"
    up_src += f"; {PESSIMISTIC_SOURCE}"

    lower: list[LossPair] = []
    rho = 0.0
    realised = "worst-case neighbouring datasets of one step"
    if isinstance(mechanism, RandomizedResponse):
        mix = mixture_pair(mechanism.pair(1), eta)
        lower = [mix, SwappedPair(mix)]
    elif isinstance(mechanism, Gaussian):
        unit = mechanism.shift(1) * (2 if type(relation) is AddRemove else 1)
        dist, jmax = _count_law(scheme, relation)
        j = np.arange(0, jmax + 1)
        sf = dist.sf(j)
        big = np.nonzero(sf > _LOWER_TRUNC)[0]
        J = min(int(big[-1]) + 1 if big.size else 1, jmax)
        b = dist.pmf(np.arange(0, J + 1))
        rho = float(dist.sf(J))
        b = b / b.sum()
        if J == 1 and eta < 1:
            pair: LossPair = MixturePair(GaussianPair(unit), float(b[1]))
        else:
            pair = GaussianShiftMixturePair(b, unit)
        lower = [pair, SwappedPair(pair)]
        rho += 1e-15  # float error of the renormalised weights
    elif isinstance(mechanism, Laplace) and relation.group == 1 and isinstance(
            scheme, WithoutReplacement):
        mix = mixture_pair(mechanism.pair(1), eta)
        lower = [mix, SwappedPair(mix)]
    lo_src = f"{realised} ({PAPER}, Thms 9-11 attained); {OPTIMISTIC_SOURCE}"
    return upper, lower, rho, up_src, lo_src


class FixedBatchPLDAnalysis(RunAnalysis):
    """PLD accounting of T steps of sampling without / with replacement (module docstring)."""

    def __init__(self, mechanism: Mechanism, scheme, relation, steps: int,
                 h: float | None = None) -> None:
        self.mechanism, self.scheme, self.relation = mechanism, scheme, relation
        self.steps = int(steps)
        up, lo, rho, self.up_src, self.lo_src = fixed_batch_pairs(mechanism, scheme, relation)
        self.upper_pairs, self.lower_pairs, self.rho = up, lo, rho
        self.h = h
        self._plds: tuple[list, list] | None = None

    @property
    def plds(self) -> tuple[list, list]:
        if self._plds is None:
            T = self.steps
            tail = min(1e-16, 1e-13 / T)

            def step(p):  # each pair is composed on its own grid
                return self.h if self.h is not None else auto_grid(p, T)

            ups = [discretise(p, step(p), tail, optimistic=False)[0].self_compose(T)
                   for p in self.upper_pairs]
            los = [discretise(p, step(p), tail)[1].self_compose(T) for p in self.lower_pairs]
            self._plds = (ups, los)
        return self._plds

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        e = np.asarray(epsilon, dtype=float)
        ups, los = self.plds
        up = np.max([p.delta(e) for p in ups], axis=0)
        upper = Bound(_shape(up, e), "upper", self.up_src)
        if not los:
            return upper, None
        lo = np.max([p.delta(e) for p in los], axis=0) - self.steps * self.rho
        lo = np.minimum(np.maximum(lo, 0.0), up)
        return upper, Bound(_shape(lo, e), "lower", self.lo_src)

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        d = np.asarray(delta, dtype=float)
        ups, los = self.plds
        up = np.max([p.epsilon(d) for p in ups], axis=0)
        upper = Bound(_shape(up, d), "upper", self.up_src)
        if not los:
            return upper, None
        dd = d + self.steps * self.rho
        ok = dd < 1
        lo = np.max([p.epsilon(np.where(ok, dd, 0.5)) for p in los], axis=0)
        lo = np.where(ok, lo, 0.0)
        lo = np.minimum(lo, up)
        return upper, Bound(_shape(lo, d), "lower", self.lo_src)


def _shape(x: np.ndarray, like: np.ndarray) -> float | np.ndarray:
    x = np.asarray(x, dtype=float).reshape(np.shape(like))
    return float(x) if x.ndim == 0 else x


def _applies(run) -> bool:
    s, r = run.scheme, run.relation
    if not isinstance(run.mechanism, (Gaussian, Laplace, RandomizedResponse)):
        return False
    if isinstance(s, WithoutReplacement):
        return type(r) is Substitution and r.group <= s.batch_size
    if isinstance(s, WithReplacement):
        return type(r) in (Substitution, AddRemove) and r.group <= s.batch_size
    return False


@run_accountant(
    "pld",
    applies=_applies,
    description="fixed-size batches without / with replacement: Balle et al. 2018 profiles as "
    "dominating pairs, composed with two-sided PLDs",
)
def _build(run) -> FixedBatchPLDAnalysis:
    return FixedBatchPLDAnalysis(run.mechanism, run.scheme, run.relation, run.steps)
