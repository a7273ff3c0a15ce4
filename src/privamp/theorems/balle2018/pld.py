"""Tight composition of fixed-size subsampling (without / with replacement) with PLDs, and
of Poisson subsampling under substitution (the same construction from Balle et al.'s
Poisson-substitution weights, :func:`.profiles.profile_terms`).

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

* Without / with replacement, and Poisson, under **substitution**: the relation is symmetric and the
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
  recipe gives the certified *lower* bound below; docs/findings.md).
* With replacement under **add/remove** (Thm 11): with x = x' + {v} the laws are
  A = (1-eta) B + eta A1 (the "remove" order) and, by Thm 7's coupling, D dominates it for
  all eps; the "add" order (B, A) is then dominated by swap D.  Each pair of neighbours keeps
  its order over the T steps, so composing D and swap D separately and taking the max is
  sound (as dp_accounting does for Poisson).

Lower bounds come from pairs of neighbouring datasets that realise the worst case of one
step: for the Gaussian sum, all records equal to v' except v with f(v) - f(v') = Delta; a
batch then holds J copies / members of v, J ~ Binom(m, K/n) (with replacement),
Hypergeom(n, K, m) (without) or Binom(K, q) (Poisson at rate q), and the output pair is
(sum_j P(J=j) N(j Delta, s^2), N(0, s^2))
(:class:`GaussianShiftMixturePair`, whose privacy loss is increasing in the output).  Its
composition (and its swap's) is a certified lower bound on the worst case; the truncated
weights' mass rho is subtracted (T rho of total variation).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import cast

import numpy as np

from ...accountants.grid import auto_grid, lead_direction, secondary_direction
from ...accountants.poisson import check_steps
from ...accountants.registry import BoundPair, RunAnalysis, run_accountant
from ...errors import NotApplicable
from ...mechanisms.base import Mechanism
from ...mechanisms.gaussian import Gaussian
from ...mechanisms.laplace import Laplace
from ...mechanisms.randomized_response import RandomizedResponse
from ...numerics.arrays import shaped
from ...numerics.special import HypergeomLaw
from ...pairs.combinators import MixturePair, SwappedPair, mixture_pair
from ...pairs.loss_pair import LossPair
from ...pairs.mechanism_pairs import GaussianPair
from ...pairs.mixtures import DisjointMixturePair, GaussianShiftMixturePair, SymmetrisedPair
from ...pld.compose import compose_two_level
from ...pld.discretise import discretise
from ...pld.grid import OPTIMISTIC_SOURCE, PESSIMISTIC_SOURCE, PLD
from ...pld.moments import renyi_floor
from ...pld.two_sided import TwoSidedPLD
from ...results import Bound
from ...sampling.relations import AddRemove, Substitution
from ...sampling.schemes import Poisson, WithoutReplacement, WithReplacement
from .profiles import PAPER, covers_fixed_batch, profile_terms
from .triangle import TriangleUpper
from .wr_substitution import SRC_WR_SUBSTITUTION, profile_pld

__all__ = [
    "fixed_batch_pairs",
    "FixedBatchPLDAnalysis",
]


# ------------------------------------------------------------------------------------------
# the pairs of one fixed-size-batch step
# ------------------------------------------------------------------------------------------
_LOWER_TRUNC = 1e-18


def _count_law(scheme, relation):
    from scipy import stats  # heavy: on first use, not at import
    K = relation.group
    if isinstance(scheme, Poisson):  # the K substituted pairs' coins
        return stats.binom(K, scheme.rate), K
    m, n = scheme.batch_size, scheme.dataset_size
    if isinstance(scheme, WithoutReplacement):
        return HypergeomLaw(n, K, m), min(K, m)
    return stats.binom(m, K / n), m


_UPPER_TRUNC = 1e-30


SRC_WR_ADDREMOVE = (
    "with replacement, add/remove: exact one-step dominating pair "
    "(sum_j Bin(j; m, K/n) N(2jC, sigma^2), N(0, sigma^2)) and its swap, attained by "
    "neighbouring datasets (privamp, docs/findings.md: Schuchardt et al. 2024 App. H.2 "
    "collinearity argument extended to hockey-stick divergences, arXiv:2403.04867)"
)


SRC_TRIANGLE = (
    "with replacement, substitution = removal then addition over the whole run "
    "(hockey-stick triangle inequality through M(x minus the record), privamp, "
    "docs/findings.md), each composed from the exact add/remove one-step pair"
)


def _count_weights(mechanism: Gaussian, scheme, relation, trunc: float
                   ) -> tuple[np.ndarray, float, float]:
    """(b_j = P(J = j) for j = 0..J, rho = P(J > J), shift u of one copy): J the first count
    whose tail is <= ``trunc`` (see :func:`_gaussian_count_pair`)."""
    unit = mechanism.shift(1) * (2 if type(relation) is AddRemove else 1)
    dist, jmax = _count_law(scheme, relation)
    sf = dist.sf(np.arange(0, jmax + 1))
    big = np.nonzero(sf > trunc)[0]
    J = min(int(big[-1]) + 1 if big.size else 1, jmax)
    return dist.pmf(np.arange(0, J + 1)), float(dist.sf(J)), unit


def _gaussian_count_pair(mechanism: Gaussian, scheme, relation, trunc: float
                         ) -> tuple[LossPair, float]:
    """(sum_{j<=J} b_j N(j u), N(0, 1)) with b the law of the number of copies / members of
    the differing records in a batch (renormalised after truncation at the first J whose
    tail is <= ``trunc``) and u the shift of one copy; and the dropped tail mass rho.

    u = Delta / sigma under substitution (others equal to v', the differing record at
    distance Delta) and 2 C / sigma under add/remove (a drawn copy of the added record
    replaces a draw of another record: distance 2C)."""
    b, rho, unit = _count_weights(mechanism, scheme, relation, trunc)
    J = len(b) - 1
    b = b / b.sum()
    if J == 1 and 0 < b[1] < 1:
        return MixturePair(GaussianPair(unit), float(b[1])), rho
    return GaussianShiftMixturePair(b, unit), rho


def _grid_pair(pair: LossPair) -> LossPair:
    """The pair whose automatic grid a pair is composed on: for the symmetrised mixture
    (eta N(u) + (1 - eta) N(0), N(0)) of one record at a small rate eta, that mixture (the
    Poisson accountant's leading direction; its profile is the symmetrised pair's for
    eps >= 0): the generic rule (loss IQR / 120) asked ~12x finer grids for the same pair
    (T = 1e4, eta = 1e-3, sigma 1.5: 341k points, upper bound 0.30996 against 0.31002 on
    the lead grid in two levels; issue 28).  A heuristic: any grid is sound."""
    if isinstance(pair, SymmetrisedPair) and lead_direction(pair.base):
        return pair.base
    return pair


class _TopAtomPair(LossPair):
    """(P', Q) with P' = (1 - rho) P + rho * (an atom where Q has no mass): dominates, in both
    orders, the pair whose P is (1 - rho) P + rho * (anything), i.e. a mixture truncated to
    its first components with the dropped mass rho: for every a >= 0 and event E,
    P'(E + atom) - a Q(E) >= (1 - rho) P(E) + rho * (anything)(E) - a Q(E), and
    Q(E) - a P'(E) = Q(E) - a (1 - rho) P(E) >= Q(E) - a * (untruncated)(E)."""

    def __init__(self, base: LossPair, rho: float) -> None:
        self.base, self.rho = base, float(rho)
        self.p_inf = self.rho + (1.0 - self.rho) * base.p_inf
        self.q_minf = base.q_minf

    def tail(self, l, dist, upper, strict):
        t = self.base.tail(l, dist, upper, strict)
        if dist == "Q":
            return t
        return (1.0 - self.rho) * t + (self.rho if upper else 0.0)

    def loss_range(self, tail: float) -> tuple[float, float]:
        return self.base.loss_range(tail)


def fixed_batch_pairs(mechanism: Mechanism, scheme, relation
                      ) -> tuple[list[LossPair], list[LossPair], float, str, str,
                                 list[LossPair]]:
    """(upper pairs, lower pairs, rho, upper source, lower source, triangle pairs) of one step.

    Upper: the run's profile after T steps is <= the max over the upper pairs of their
    T-fold compositions.  Lower: >= the max over the lower pairs of theirs, minus T rho.
    Triangle (with replacement, substitution, Gaussian): the removal and addition pairs whose
    T-fold compositions give a second upper bound through :mod:`.triangle`.
    """
    terms = profile_terms(mechanism, scheme, relation)
    eta = terms.eta
    comps = [(w / eta, mixture_pair(mechanism.pair(int(k)), eta))
             for k, w in zip(terms.distances, terms.weights, strict=True) if w > 0]
    D = comps[0][1] if len(comps) == 1 else DisjointMixturePair(comps)
    if type(relation) is Substitution:
        upper: list[LossPair] = [SymmetrisedPair(D)]
        up_src = f"{terms.source}; symmetrised dominating pair (both orders of neighbours)"
    else:
        upper = [D, SwappedPair(D)]
        up_src = f"{terms.source}; dominating pairs of the remove and add orders"
    up_src += f"; {PESSIMISTIC_SOURCE}"

    lower: list[LossPair] = []
    triangle: list[LossPair] = []
    rho = 0.0
    realised = "worst-case neighbouring datasets of one step"
    if isinstance(mechanism, RandomizedResponse):
        mix = mixture_pair(mechanism.pair(1), eta)
        lower = [mix, SwappedPair(mix)]
    elif isinstance(mechanism, Gaussian):
        # Poisson under substitution: the pair (count mix of N(j u), N(0)) needs the
        # replacement to contribute 0 and the record Delta = 2C away, which gradients clipped
        # to C cannot do; a record at Delta/2 replaced by one at 0 can (and does for any
        # query of sensitivity Delta), so the lower side uses half the shift (review, issue 32)
        low_mech = (replace(mechanism, sensitivity=mechanism.sensitivity / 2)
                    if isinstance(scheme, Poisson) else mechanism)
        pair, rho = _gaussian_count_pair(low_mech, scheme, relation, _LOWER_TRUNC)
        if (isinstance(scheme, WithoutReplacement) and relation.group == 1
                and isinstance(D, MixturePair) and isinstance(pair, MixturePair)
                and isinstance(D.base, GaussianPair) and isinstance(pair.base, GaussianPair)
                and D.base.s == pair.base.s and abs(D.w - pair.w) <= 1e-15):
            # one record without replacement: the realised pair is D itself (J ~ Bernoulli(m/n),
            # the same shift; its weight m/n within 1e-15 of D's, a total variation the
            # 1e-15 added to rho below covers), so D's instance serves: its grid and loss
            # range are computed once (issue 28: they were a fifth of a short run's cost)
            pair = D
        lower = [pair, SwappedPair(pair)]
        if isinstance(scheme, Poisson):
            realised = ("a record contributing Delta/2 replaced by one contributing 0 "
                        "(reachable by gradients clipped to Delta/2)")
        rho += 1e-15  # float error of the renormalised weights
        if isinstance(scheme, WithReplacement) and type(relation) is AddRemove:
            top = _TopAtomPair(*_gaussian_count_pair(mechanism, scheme, relation, _UPPER_TRUNC))
            upper = [top, SwappedPair(top)]
            up_src = f"{SRC_WR_ADDREMOVE}; {PESSIMISTIC_SOURCE}"
        elif isinstance(scheme, WithReplacement) and type(relation) is Substitution:
            top = _TopAtomPair(*_gaussian_count_pair(mechanism, scheme, relation, _UPPER_TRUNC))
            triangle = [top, SwappedPair(top)]
    elif isinstance(mechanism, Laplace) and relation.group == 1 and isinstance(
            scheme, (WithoutReplacement, Poisson)):
        half = replace(mechanism, sensitivity=mechanism.sensitivity / 2) if isinstance(
            scheme, Poisson) else mechanism  # as for the Gaussian: reachable by clipping
        mix = mixture_pair(half.pair(1), eta)
        lower = [mix, SwappedPair(mix)]
    lo_src = f"{realised} ({PAPER}, Thms 9-11 attained); {OPTIMISTIC_SOURCE}"
    return upper, lower, rho, up_src, lo_src, triangle


#: the Rényi floor's optimistic PLDs are coarsened to about this many points: on 27 runs
#: without replacement (sigma 0.8-3, T 1e2-1e6, rates 1e-3-0.05) the screening decided the
#: same way as on 4096 points at a third of its cost (issue 28; a heuristic: any
#: coarsening is a certified floor)
_FLOOR_POINTS = 256


#: the symmetrised floor's one-step grid: the upper pair's own where it has at most
#: _SYM_SHARED_POINTS points, else about _SYM_POINTS points over the loss range (heuristics of
#: cost: any grid gives a certified floor; 512 points were too coarse for 60/60000, sigma 1.5,
#: T 1e4 to rule the RDP accountant out; issue 28)
_SYM_POINTS = 2048
_SYM_SHARED_POINTS = 16384


class FixedBatchPLDAnalysis(RunAnalysis):
    """PLD accounting of T steps of sampling without / with replacement (module docstring)."""

    def __init__(self, mechanism: Mechanism, scheme, relation, steps: int,
                 h: float | None = None) -> None:
        check_steps(steps)  # the FFT composition's step limit (NotApplicable above)
        self.mechanism, self.scheme, self.relation = mechanism, scheme, relation
        self.steps = int(steps)
        up, lo, rho, self.up_src, self.lo_src, tri = fixed_batch_pairs(mechanism, scheme,
                                                                        relation)
        self.upper_pairs, self.lower_pairs, self.rho, self.triangle_pairs = up, lo, rho, tri
        self._triangle: TriangleUpper | None = None
        # with replacement, substitution: composed one-step profile
        self._profile: PLD | None = None
        self.h = h
        self._plds: tuple[list, list] | None = None

    @property
    def plds(self) -> tuple[list, list]:
        if self._plds is None:
            T = self.steps
            tail = min(1e-16, 1e-13 / T)

            shared = None
            if self.h is None and isinstance(self.scheme, WithReplacement):
                # with replacement: every pair on the grid of the leading one (the swapped
                # pairs, far from the maximum, would ask for much finer and slower grids;
                # any grid is sound, a coarser one only widens their side)
                shared = auto_grid(self.upper_pairs[0], T)

            steps: dict[int, float] = {}

            def step(p):  # each pair is composed on its own grid
                if self.h is not None:
                    return self.h
                if shared is not None:
                    return shared
                g = _grid_pair(p)  # (the same grid pair twice: its step computed once)
                if id(g) not in steps:
                    steps[id(g)] = auto_grid(g, T)
                return steps[id(g)]

            # one small-rate Gaussian mixture (one record): in two levels, as the Poisson
            # accountant composes the same pairs (compose_two_level keeps each side's kind)
            two = self.h is None and _grid_pair(self.upper_pairs[0]) is not self.upper_pairs[0]

            def compose(x):
                return compose_two_level(x, T) if two else x.self_compose(T)

            sym = self._sym_floor_applies()
            ups = []
            for p in self.upper_pairs:
                # where the symmetrised floor applies, the one-step optimistic side of the
                # upper pair comes from the same discretisation if its grid is short (the
                # tails shared: a separate one cost ~2.8 ms), else from a coarse one of its
                # own when first asked (on 1e5 points it cost 30 ms; issue 28)
                hp = step(p)
                lo, hi = p.loss_range(tail)  # (kept by the pair: discretise reads it again)
                share = sym and (hi - lo) / hp <= _SYM_SHARED_POINTS
                pess, opt = discretise(p, hp, tail, optimistic=share)
                if share:
                    self._sym_floor_pld = opt
                ups.append(compose(pess))
            # there the swapped lower pair (the add direction) is left out: the lower bound
            # stays that of a realised pair, as the Poisson accountant's (no lower side from
            # the add direction).  On 27 runs (sigma 0.8-3, T 1e2-1e6, rates 1e-3-0.05, delta
            # 1e-3..1e-8, eps 0.1..3) it was above the remove direction only where epsilon
            # exceeds 50 and delta(eps) 0.9998 (by <= 4e-5 there; issue 28)
            los = [compose(discretise(p, step(p), tail, pessimistic=False)[1])
                   for p in self.lower_pairs
                   if not (two and secondary_direction(p))]
            if self.triangle_pairs:
                h = self.h if self.h is not None else auto_grid(self.triangle_pairs[0], T)
                rem, add = (discretise(p, h, tail, optimistic=False)[0].self_compose(T)
                            for p in self.triangle_pairs)
                self._triangle = TriangleUpper(rem, add)
                b, rho, unit = _count_weights(cast(Gaussian, self.mechanism), self.scheme,
                                              self.relation, _UPPER_TRUNC)
                # the two triangle pairs (remove, add), unpacked from their list
                self._profile = profile_pld(*self.triangle_pairs, b, rho, unit, h,  # type: ignore[call-arg, arg-type]
                                            tail).self_compose(T)
            self._plds = (ups, los)
        return self._plds

    # -- capabilities (privamp.accountants.registry) -----------------------------------------
    def grid_step(self) -> float:
        """The automatic step of the leading upper pair for this run (:func:`auto_grid`)."""
        return self.h if self.h is not None else auto_grid(_grid_pair(self.upper_pairs[0]),
                                                           self.steps)

    def pld(self, h: float | None = None) -> TwoSidedPLD:
        """The run's PLD on step ``h`` (None: :meth:`grid_step`; a finer ``h`` than that is
        rounded up to ``h 2^k`` just below it): the T-fold compositions of
        the upper pairs (pessimistic; one symmetrised pair under substitution serves both
        directions) and of the lower pairs (optimistic, realised by one pair of neighbouring
        datasets; the truncated weights' T rho of total variation added to their slack, or
        the zero PLD where there is no lower pair).  The with-replacement triangle and
        profile bounds (not PLDs) are left out: still sound, perhaps wider.

        Raises:
            ValueError: ``h`` not positive.
        """
        own = self.grid_step()
        h = own if h is None else float(h)
        if not h > 0:
            raise ValueError(f"h must be > 0, got {h}")
        # on its own step rounded down to h 2^k: a grid finer than the one it picks only
        # costs time here (the count mixtures' tails are slow to evaluate: 9x finer cost a
        # with-replacement run 50 s), and h 2^k is a multiple a composition can meet
        h *= 2.0 ** max(0, math.floor(math.log2(own / h) + 1e-9))
        memo = self.__dict__.setdefault("_pld_at", {})
        if h not in memo:
            T = self.steps
            tail = min(1e-16, 1e-13 / T)
            ups = [discretise(p, h, tail, optimistic=False)[0].self_compose(T)
                   for p in self.upper_pairs]
            los = []
            for p in self.lower_pairs:
                o = discretise(p, h, tail, pessimistic=False)[1].self_compose(T)
                los.append(PLD(o.h, o.offset, o.masses, o.inf_mass, o.kind,
                               o.slack + T * self.rho))
            n = max(len(ups), len(los))
            if not los:
                los = [PLD(h, 0, np.zeros(1), 0.0, "optimistic")] * n  # profile 0
            memo[h] = TwoSidedPLD([(ups[i if len(ups) == n else 0], los[i if len(los) == n
                                                                          else 0])
                                   for i in range(n)])
        return memo[h]

    def renyi_floor(self, alpha: np.ndarray) -> np.ndarray:
        """Certified lower bounds on the run's Rényi DP at orders ``alpha``
        (:func:`privamp.pld.moments.two_sided_renyi_floor` of the lower pairs' optimistic
        PLDs: each belongs to one pair of neighbouring datasets, within total variation
        ``T rho`` of its truncated weights, added to its slack; data processing puts their
        Rényi divergences below the run's), so the screening of
        :mod:`privamp.accounting.screening` can skip the RDP accountant where it cannot win.

        Raises:
            NotApplicable: no lower pair (no realised pair of neighbours known here).
        """
        ups, los = self.plds
        if not los:
            raise NotApplicable("no realised pair of neighbours: no Rényi floor")
        realised = self._realised_floor(ups, los, alpha)
        sym = self._symmetrised_floor(alpha)
        return realised if sym is None else np.maximum(realised, sym)

    def _symmetrised_floor(self, alpha: np.ndarray) -> np.ndarray | None:
        """T D_alpha of the one-step symmetrised upper pair's optimistic PLD, where that is a
        floor of the only RDP curve privamp offers for the run (None elsewhere).

        Why a floor (issue 28): for the Gaussian without replacement under substitution,
        one record, the RDP accountant's only method is Thm 6 of the paper applied to the Thm
        9 profile ("balle-profile", :mod:`.thm6`): per step, with s = alpha - 1,
        exp(s R) >= 1 + s (s+1) int_0^inf (e^{s eps} + e^{-(s+1) eps}) delta(eps) d eps, the
        integral's upper Riemann sum plus an upper bound on its tail, and delta = the
        mixture profile >= H_{e^eps}(D) (module docstring: the bound is exactly D's profile,
        rounded up; clipped at 1 >= H).  The symmetrised pair S = SymmetrisedPair(D) has, for
        eps >= 0, H_{e^eps}(S) = H_{e^eps}(D) in both orders (its definition, and
        H_a(Q*||P*) = 1 - a + a H_{1/a}(P*||Q*) = H_a(D) for a >= 1), so by Thm 6 (an
        identity for a pair's exact profiles) D_alpha(S) is that integral with delta =
        H(D): R >= D_alpha(S).  The optimistic PLD of S is dominated by S (a
        post-processing), so its Rényi divergence is lower still (data processing;
        :func:`privamp.pld.moments.renyi_floor` rounds down and drops its slack from the top);
        T steps compose RDP additively.  Unlike the realised pair's floor this one converts
        above the PLD's upper bound in runs such as 60/60000, sigma 3, T 1e4 (0.1204; the
        realised pair's exact RDP converts to 0.1188 there), so the RDP accountant (0.134) is
        skipped.  On the upper pair's own grid (:attr:`plds`) if it is short, else on about
        _SYM_POINTS points over the one-step loss range: any grid gives a certified floor."""
        if not self._sym_floor_applies():
            return None
        _ = self.plds  # (its discretisation may keep the one-step optimistic side)
        if "_sym_floor_pld" not in self.__dict__:
            pair = self.upper_pairs[0]
            tail = 1e-16
            lo, hi = pair.loss_range(tail)
            h = max(hi - lo, 1e-12) / _SYM_POINTS
            self._sym_floor_pld = discretise(pair, h, tail, pessimistic=False)[1]
        one = renyi_floor(self._sym_floor_pld, np.asarray(alpha, dtype=float))
        return self.steps * one

    def _sym_floor_applies(self) -> bool:
        """The settings where "balle-profile" is the RDP accountant's only method and the one
        upper pair is SymmetrisedPair(D) (see :meth:`_symmetrised_floor`)."""
        return (isinstance(self.mechanism, Gaussian)
                and isinstance(self.scheme, WithoutReplacement)
                and type(self.relation) is Substitution and self.relation.group == 1
                and len(self.upper_pairs) == 1
                and isinstance(self.upper_pairs[0], SymmetrisedPair))

    def _realised_floor(self, ups: list, los: list, alpha: np.ndarray) -> np.ndarray:
        """two_sided_renyi_floor of the realised lower pairs (see :meth:`renyi_floor`), its
        TV term computed once (session 12: 60/60000, sigma 3: ~0.5 ms a query)."""
        if "_floor_pld" not in self.__dict__:
            # on at most ~_FLOOR_POINTS points (optimistic coarsening merges atoms: a
            # post-processing, still dominated), built once: screening asks many times
            extra = self.steps * self.rho
            sides = []
            for o in los:
                c = o.coarsen(max(1, math.ceil(len(o.masses) / _FLOOR_POINTS)))
                sides.append((ups[0], PLD(c.h, c.offset, c.masses, c.inf_mass, c.kind,
                                          c.slack + extra)))
            self._floor_pld = TwoSidedPLD(sides)
            # (two_sided_renyi_floor's Pinsker term, alpha-free: once, not every round)
            self._floor_tv = float(np.max(self._floor_pld.delta(np.zeros(1))[1]))
        floors = [renyi_floor(o, alpha) for _, o in self._floor_pld.directions]
        return np.maximum(np.max(floors, axis=0), 2.0 * max(self._floor_tv, 0.0) ** 2)

    def _upper_delta(self, e: np.ndarray) -> tuple[np.ndarray, str]:
        up = np.max([p.delta(e) for p in self.plds[0]], axis=0)
        if self._triangle is None:
            return up, self.up_src
        # _profile is set together with _triangle
        return self._smallest(up, self._triangle.delta(e), cast(PLD, self._profile).delta(e))

    def _upper_epsilon(self, d: np.ndarray) -> tuple[np.ndarray, str]:
        up = np.max([p.epsilon(d) for p in self.plds[0]], axis=0)
        if self._triangle is None:
            return up, self.up_src
        return self._smallest(up, self._triangle.epsilon(d, up),
                              cast(PLD, self._profile).epsilon(d))

    def _smallest(self, up: np.ndarray, tri: np.ndarray, prof: np.ndarray
                  ) -> tuple[np.ndarray, str]:
        """The smallest of three upper bounds (each valid) and the sources of the winners."""
        best = np.minimum(np.minimum(up, tri), prof)
        won = [prof <= best, (tri <= best) & (tri < prof), (up <= best) & (up < tri) & (up < prof)]
        srcs = [f"{SRC_WR_SUBSTITUTION}; {PESSIMISTIC_SOURCE}",
                f"{SRC_TRIANGLE}; {PESSIMISTIC_SOURCE}", self.up_src]
        names = [s for s, w in zip(srcs, won, strict=True) if np.any(w)]
        if len(names) == 1:
            return best, names[0]
        return best, "the smallest of: " + " | ".join(names)

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        e = np.asarray(epsilon, dtype=float)
        ups, los = self.plds
        up, src = self._upper_delta(e)
        upper = Bound(shaped(up, e), "upper", src)
        if not los:
            return upper, None
        lo = np.max([p.delta(e) for p in los], axis=0) - self.steps * self.rho
        lo = np.minimum(np.maximum(lo, 0.0), up)
        return upper, Bound(shaped(lo, e), "lower", self.lo_src)

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        d = np.asarray(delta, dtype=float)
        ups, los = self.plds
        up, src = self._upper_epsilon(d)
        upper = Bound(shaped(up, d), "upper", src)
        if not los:
            return upper, None
        dd = d + self.steps * self.rho
        ok = dd < 1
        lo = np.max([p.epsilon(np.where(ok, dd, 0.5)) for p in los], axis=0)
        lo = np.where(ok, lo, 0.0)
        lo = np.minimum(lo, up)
        return upper, Bound(shaped(lo, d), "lower", self.lo_src)


def _applies(run) -> bool:
    if not isinstance(run.mechanism, (Gaussian, Laplace, RandomizedResponse)):
        return False
    if isinstance(run.scheme, Poisson):
        return type(run.relation) is Substitution and 0.0 < run.scheme.rate
    return covers_fixed_batch(run.scheme, run.relation)


@run_accountant(
    "pld",
    applies=_applies,
    description="fixed-size batches without / with replacement, Poisson under substitution: "
    "Balle et al. 2018 profiles as dominating pairs, composed with two-sided PLDs",
    capabilities=("pld", "grid_step", "renyi_floor"),
)
def _build(run) -> FixedBatchPLDAnalysis:
    return FixedBatchPLDAnalysis(run.mechanism, run.scheme, run.relation, run.steps)

