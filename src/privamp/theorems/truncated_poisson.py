"""Truncated Poisson subsampling (Poisson with a maximum batch size B): certified two-sided PLD
accounting for Gaussian runs under add/remove and zero-out.

The scheme: each record joins a step's batch independently with probability q; a batch of
more than B records is cut to a uniformly random subset of B of them (dp-accounting's
``TruncatedSubsampledGaussianDpEvent``, jax_privacy's truncated DP-SGD; references: Chua et
al. 2024, "Scalable DP-SGD: Shuffling vs. Poisson Subsampling", NeurIPS,
https://arxiv.org/abs/2411.04205, and "Tighter Privacy Analysis for Truncated Poisson
Sampling", https://arxiv.org/abs/2508.15089).

**Theorem (upper bound; privamp's derivation, see docs/truncated_poisson.md).**  Let x* be
the differing record, K ~ Bin(m, q) the number of the m other records sampled, and
``p_t = P(K >= B)``.  Given the set S of sampled others (the same in both worlds):

* K < B: no truncation whatever x* does; the pair is Poisson's, dominated by
  ``(q N(s) + (1-q) N(0), N(0))`` with s = sensitivity / sigma (Zhu, Dong, Wang 2022,
  https://arxiv.org/abs/2106.08567).
* K >= B, add/remove: x* is in the batch with probability ``r_K = q B / (K + 1)`` and then
  takes the place of one of the B records otherwise chosen, so ``P = (1 - r_K) mu_0 + r_K
  mu_1``, ``Q = mu_0``; writing both over a uniform (B-1)-subset T of S and a uniform y in
  S \\ T, joint convexity of hockey-stick divergences bounds the pair by
  ``(r_K N(2 s) + (1 - r_K) N(0), N(0))`` (|f(x*) - f(y)| <= 2 sensitivity), which grows
  with r_K (a smaller weight is a post-processing of a larger one).
* K >= B, zero-out: the special record (x* or the zero record) is kept with the same
  probability r_K in both worlds; revealing whether it was kept bounds the pair by
  ``r_K (N(s), N(0)) (+) (1 - r_K) (identical)``.

Revealing which of these cases occurred (and, for K >= B, which of a few groups of K, at the
group's largest r_K) only helps the adversary, so the disjoint union of the cases' pairs with
their probabilities dominates one step; it is a fixed pair for every history, so its T-fold
composition dominates the run (Zhu et al. 2022, Thm 10).  Under add/remove the m others are
n - 1 (the neighbour with one record less) or n (one more): one pair dominates both (see
:func:`truncated_poisson_components`, ``one_more``).

**Lower bound.**  Realised pairs (the query picks the gradients each step): all other
records' gradients 0 and x*'s of norm 1 (under zero-out: x* against the zero record), which
releases ``(rho N(s) + (1 - rho) N(0), N(0))`` per step with ``rho = P(x* in the batch) =
q P(K < B) + B / (m + 1) P(Bin(m + 1, q) >= B + 1)``; and, where the batch is often cut,
other gradients +1 against x*'s -1 (:func:`lattice_witness`, where x* visibly replaces a
record), binned.  Each direction keeps the larger.

As B -> n, p_t -> 0 and both sides become privamp's Poisson PLD answer.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from ..accountants.grid import auto_grid
from ..accountants.poisson import poisson_pairs
from ..errors import NotApplicable
from ..mechanisms.base import Mechanism
from ..mechanisms.gaussian import Gaussian
from ..numerics.arrays import shaped
from ..pairs.combinators import MixturePair, SwappedPair, mixture_pair
from ..pairs.discrete import DiscretePair
from ..pairs.loss_pair import LossPair
from ..pld.compose import mix
from ..pld.discretise import discretise
from ..pld.grid import OPTIMISTIC_SOURCE, PESSIMISTIC_SOURCE, PLD
from ..pld.moments import two_sided_renyi_floor
from ..pld.two_sided import TwoSidedPLD
from ..results import Bound
from ..sampling.relations import AddRemove, ZeroOut
from ..sampling.schemes import TruncatedPoisson
from .registry import BoundPair, RunAnalysis, run_accountant

__all__ = [
    "truncation_probability",
    "inclusion_probability",
    "truncated_poisson_components",
    "truncated_poisson_witness",
    "lattice_witness",
    "TruncatedPoissonAnalysis",
]

UPPER_SOURCE = (
    "truncated Poisson dominating pair (Poisson pair without truncation (+) replace-one "
    "pairs on the truncation event; joint convexity; privamp, docs/truncated_poisson.md); "
    + PESSIMISTIC_SOURCE
)

LOWER_SOURCE = (
    "truncated Poisson realised pair (other gradients 0, or +1 against the differing "
    "record's -1, binned; exact law of the truncated sampler); " + OPTIMISTIC_SOURCE
)

#: relative safety on the binomial weights (scipy's incomplete beta is accurate to ~1e-14)
_WEIGHT_REL = 1e-9

#: at most this many groups of K on the truncation event
_GROUPS = 8


def _check(rate: float, max_batch_size: int, others: int) -> tuple[float, int, int]:
    q = float(rate)
    if not 0.0 < q <= 1.0:
        raise ValueError(f"rate must be in (0, 1], got {rate}")
    B, m = int(max_batch_size), int(others)
    if B < 1:
        raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
    if m < 0:
        raise ValueError(f"others must be >= 0, got {others}")
    return q, B, m


def truncation_probability(rate: float, max_batch_size: int, others: int) -> float:
    """P(K >= B) for K ~ Bin(others, rate): the probability that the other records alone fill
    the batch, so that the differing record, if sampled, may be cut.

    Args:
        rate: the sampling rate q in (0, 1].
        max_batch_size: B >= 1.
        others: the number m >= 0 of records besides the differing one.

    Returns:
        P(Bin(m, q) >= B) (0 when B > m).

    Raises:
        ValueError: for a parameter out of range.
    """
    q, B, m = _check(rate, max_batch_size, others)
    return 0.0 if B > m else float(stats.binom.sf(B - 1, m, q))


def inclusion_probability(rate: float, max_batch_size: int, others: int) -> float:
    """P(the differing record is in the truncated batch) =
    ``q P(K < B) + B / (m + 1) P(Bin(m + 1, q) >= B + 1)`` (since
    ``E[q B / (K + 1); K >= B] = B / (m + 1) P(Bin(m + 1, q) >= B + 1)``).

    Args:
        rate: the sampling rate q in (0, 1].
        max_batch_size: B >= 1.
        others: the number m >= 0 of records besides the differing one.

    Returns:
        The inclusion probability rho in (0, q].

    Raises:
        ValueError: for a parameter out of range.
    """
    q, B, m = _check(rate, max_batch_size, others)
    if B > m:
        return q
    kept = float(stats.binom.cdf(B - 1, m, q))
    cut = B / (m + 1) * float(stats.binom.sf(B, m + 1, q))
    return min(q * kept + cut, q)


def _groups(q: float, B: int, m: int) -> list[tuple[float, float]]:
    """(weight, r) for groups of K >= B: weight at least P(K in the group), r = q B / (k + 1)
    at the group's smallest k.  Weights are bounded in the safe direction: by Abel summation
    the profile is ``S_0 D_0 + sum_j S_j (D_j - D_{j-1})`` with S_j = P(K >= k_j) and
    D_j nonincreasing in j, so S_0 is rounded up and the other S_j down."""
    pt = truncation_probability(q, B, m)
    if pt <= 0.0:
        return []
    starts = [B]
    for j in range(1, _GROUPS):
        k = int(stats.binom.isf(pt * (_GROUPS - j) / _GROUPS, m, q))
        if starts[-1] < k <= m:
            starts.append(k)
    tails = [pt * (1 + _WEIGHT_REL)]
    tails += [float(stats.binom.sf(k - 1, m, q)) * (1 - _WEIGHT_REL) for k in starts[1:]]
    tails.append(0.0)
    return [(max(tails[j] - tails[j + 1], 0.0), q * B / (k + 1))
            for j, k in enumerate(starts)]


def truncated_poisson_components(mechanism: Gaussian, rate: float, max_batch_size: int,
                                 others: int, zero_out: bool = False, one_more: bool = False
                                 ) -> list[list[tuple[float, LossPair | None]]]:
    """The dominating pair of one step as a disjoint union, per direction: ``[remove, add]``,
    each a list of ``(weight, pair)`` (``pair`` None: identical distributions, loss 0); its
    profile is ``sum weight * pair.delta(eps)`` (plus ``weight * (1 - e^eps)_+`` for None).

    Args:
        mechanism: the Gaussian mechanism.
        rate: the sampling rate q in (0, 1].
        max_batch_size: B >= 1.
        others: the number m of records besides the differing one.
        zero_out: the zero-out relation (else add/remove).
        one_more: dominate also the pair with ``others + 1`` other records (add/remove:
            a dataset of n records has neighbours with n - 1 and n + 1 records).  With
            K' = K + Bernoulli(q), the case K = B - 1 may become K' = B; its weight
            ``P(K = B - 1)`` goes to ``(q N(2 s) + (1 - q) N(0), N(0))``, which dominates both
            the Poisson pair and the truncation pair at ``r_B < q``; every other case K
            dominates K + 1 (``r_K`` decreases), so the union dominates both sizes.

    Returns:
        ``[remove components, add components]``.

    Raises:
        ValueError: for a parameter out of range.
    """
    q, B, m = _check(rate, max_batch_size, others)
    pt = truncation_probability(q, B, m)
    if one_more and B <= m + 1:  # K = B - 1 may become B with one more record
        edge = float(stats.binom.pmf(B - 1, m, q)) * (1 + _WEIGHT_REL)
        keep = float(stats.binom.cdf(B - 2, m, q)) * (1 + _WEIGHT_REL) if B >= 2 else 0.0
    else:
        # 1 - pt is accurate to ~1e-14 relative for pt < 0.5; the cdf to scipy's accuracy else
        edge = 0.0
        keep = 1.0 if pt <= 0.0 else (1.0 - pt) * (1 + 1e-13) if pt < 0.5 else float(
            stats.binom.cdf(B - 1, m, q)) * (1 + _WEIGHT_REL)
    rem, add = poisson_pairs(mechanism, q)
    dirs: list[list[tuple[float, LossPair | None]]] = [[(keep, rem)], [(keep, add)]] \
        if keep > 0.0 else [[], []]
    if edge > 0.0:
        mix = mixture_pair(mechanism.pair(2), q)
        dirs[0].append((edge, mix))
        dirs[1].append((edge, SwappedPair(mix)))
    if pt <= 0.0:
        return dirs
    if zero_out:
        w = B / (m + 1) * float(stats.binom.sf(B, m + 1, q)) * (1 + _WEIGHT_REL)
        null = (pt - w / (1 + _WEIGHT_REL)) * (1 + _WEIGHT_REL + 1e-13 * (B + 1))
        base = mechanism.pair(1)
        dirs[0] += [(w, base), (null, None)]
        dirs[1] += [(w, SwappedPair(base)), (null, None)]
        return dirs
    base = mechanism.pair(2)
    for w, r in _groups(q, B, m):
        if w > 0.0:
            mix = MixturePair(base, r)
            dirs[0].append((w, mix))
            dirs[1].append((w, SwappedPair(mix)))
    return dirs


def truncated_poisson_witness(mechanism: Gaussian, rate: float, max_batch_size: int,
                              others: int) -> list[LossPair]:
    """The realised pair of one step, ``[remove, add]``: other gradients 0, the differing
    record's of norm 1, so the output is ``rho N(s) + (1 - rho) N(0)`` against ``N(0)`` with
    rho = :func:`inclusion_probability` (rounded down: a smaller weight is a post-processing
    of a larger one, so the bound stays a lower bound).

    Args:
        mechanism: the Gaussian mechanism.
        rate: the sampling rate q in (0, 1].
        max_batch_size: B >= 1.
        others: the number m of records besides the differing one.

    Returns:
        ``[remove pair, add pair]``.

    Raises:
        ValueError: for a parameter out of range.
    """
    rho = inclusion_probability(rate, max_batch_size, others) * (1 - _WEIGHT_REL)
    return poisson_pairs(mechanism, min(rho, 1.0)) if rho < 1.0 else poisson_pairs(
        mechanism, 1.0)


class _SortedAtoms(DiscretePair):
    """A DiscretePair whose tails are suffix / prefix sums (many atoms)."""

    def __init__(self, p: np.ndarray, q: np.ndarray) -> None:
        super().__init__(p, q)
        self._cum = {d: np.concatenate(([0.0], np.cumsum(w)))
                     for d, w in (("P", self.p), ("Q", self.q))}

    def tail(self, l, dist, upper, strict):
        l = np.asarray(l, dtype=float)
        cum = self._cum[dist]
        side = "right" if upper == strict else "left"
        i = np.searchsorted(self.losses, l, side=side)
        return np.maximum(cum[-1] - cum[i] if upper else cum[i], 0.0)


#: the lattice witness is tried where the batch is cut with at least this probability
_LATTICE_FROM = 1e-4

#: lattice witness: bin width of the released value (noise units) and at most this many bins
_BIN_WIDTH = 0.02
_MAX_BINS = 20000

#: lattice witness: relative safety on its bin masses (P rounded down, Q up) and the absolute
#: mass added to every Q bin (covers the binomial masses below 1e-30 left out)
_ATOM_REL = 1e-9
_ATOM_ABS = 1e-29


def lattice_witness(mechanism: Gaussian, rate: float, max_batch_size: int,
                    others: int, zero_out: bool = False) -> list[LossPair]:
    """The realised pair of one step, ``[remove, add]``, where the m other records' gradients
    are +1 and the differing record's -1 (times the sensitivity, in one coordinate): the
    released sum is ``c s + N(0, 1)`` with c = min(K, B) without x*, and with x* also K - 1
    (sampled, K < B) or B - 2 (kept on the truncation event); under zero-out the other
    dataset holds a zero record in x*'s place, which takes a slot like x* (c = K, or B - 1
    when kept on the truncation event).  When the batch is often cut,
    x* *replaces* a record (shift 2 s), which the zero-gradient witness cannot show.  The
    release is binned (a post-processing, so still a lower bound) and the bin masses are
    rounded in the safe direction (P down, Q up).

    Args:
        mechanism: the Gaussian mechanism.
        rate: the sampling rate q in (0, 1].
        max_batch_size: B >= 1.
        others: the number m of records besides the differing one.
        zero_out: the zero-out relation (else add/remove).

    Returns:
        ``[remove pair, add pair]``.

    Raises:
        ValueError: for a parameter out of range.
    """
    q, B, m = _check(rate, max_batch_size, others)
    s = mechanism.shift(1)
    k_lo = int(stats.binom.ppf(1e-31, m, q)) if m else 0
    k_hi = int(stats.binom.isf(1e-31, m, q)) if m else 0
    ks = np.arange(max(k_lo - 1, 0), min(k_hi + 1, m) + 1)
    pik = stats.binom.pmf(ks, m, q)
    c = np.arange(-1, B + 1)
    Q = np.zeros(len(c))
    idx = np.minimum(ks, B) + 1
    np.add.at(Q, idx, np.where(ks < B, pik, 0.0))
    pt = truncation_probability(q, B, m)
    Q[B + 1] += pt
    P = (1 - q) * Q
    low = ks < B
    np.add.at(P, ks[low], q * pik[low])  # x* in, no cut: c = K - 1 (index K)
    kept = B / (m + 1) * float(stats.binom.sf(B, m + 1, q)) if pt > 0 else 0.0
    if pt > 0:
        P[B - 1] += kept
        P[B + 1] += max(q * pt - kept, 0.0)
    if zero_out:  # the zero record sampled: c = K (no cut), B - 1 (kept) or B (cut)
        Q = (1 - q) * Q
        np.add.at(Q, ks[low] + 1, q * pik[low])
        Q[B] += kept
        Q[B + 1] += max(q * pt - kept, 0.0)
    live = (P > 0) | (Q > 0)
    c, P, Q = c[live], P[live], Q[live]
    lo, hi = float(c.min()) * s - 12.0, float(c.max()) * s + 12.0
    edges = np.linspace(lo, hi, int(min(math.ceil((hi - lo) / _BIN_WIDTH), _MAX_BINS)) + 1)
    pb = np.zeros(len(edges) + 1)
    qb = np.zeros(len(edges) + 1)
    for cj, pj, qj in zip(c, P, Q, strict=True):
        z = edges - cj * s
        left, right = special.ndtr(z), special.ndtr(-z)
        mass = np.concatenate(([left[0]], np.where(
            z[1:] <= 0, left[1:] - left[:-1], np.where(z[:-1] >= 0, right[:-1] - right[1:],
                                                       1.0 - left[:-1] - right[1:])),
            [right[-1]]))
        mass = np.maximum(mass, 0.0)
        pb += pj * mass
        qb += qj * mass
    # each direction: its first distribution rounded down, its second up
    return [_SortedAtoms(pb * (1 - _ATOM_REL), qb * (1 + _ATOM_REL) + _ATOM_ABS),
            _SortedAtoms(qb * (1 - _ATOM_REL), pb * (1 + _ATOM_REL) + _ATOM_ABS)]


def _null(weight: float, h: float, kind: str) -> PLD:
    return PLD(h, 0, np.array([weight]), 0.0, kind)


class TruncatedPoissonAnalysis(RunAnalysis):
    """Two-sided PLD analysis of a Gaussian run under :class:`TruncatedPoisson` (add/remove or
    zero-out, group 1): pessimistic side from :func:`truncated_poisson_components`, optimistic
    side from :func:`truncated_poisson_witness`, each composed T times.

    Args:
        mechanism: the Gaussian mechanism.
        scheme: the truncated Poisson scheme.
        steps: the number of steps T.
        zero_out: the zero-out relation (else add/remove).
        h: grid step (None: :meth:`grid_step`).
        both_neighbours: add/remove: protect the neighbours with n - 1 and n + 1 records
            (default); False: only pairs of n and n - 1 records (dp-accounting's
            ``TruncatedSubsampledGaussianDpEvent`` convention).
    """

    def __init__(self, mechanism: Gaussian, scheme: TruncatedPoisson, steps: int,
                 zero_out: bool = False, h: float | None = None,
                 both_neighbours: bool = True) -> None:
        self.mechanism, self.scheme, self.steps = mechanism, scheme, int(steps)
        self.zero_out = bool(zero_out)
        self.both = bool(both_neighbours) and not self.zero_out
        self.h = h
        self._cache: dict[float, TwoSidedPLD] = {}

    def grid_step(self) -> float:
        """The automatic step: that of privamp's Poisson PLD for the untruncated pair."""
        return auto_grid(poisson_pairs(self.mechanism, self.scheme.rate)[0], self.steps)

    def pld(self, h: float | None = None) -> TwoSidedPLD:
        """The whole run's two-sided PLD on grid step ``h`` (None: the analysis's own), as
        directions [remove, add]: pessimistic sides from :func:`truncated_poisson_components`
        (m = n - 1 others; under add/remove dominating m = n too), optimistic sides from
        :func:`truncated_poisson_witness` (m = n - 1), each composed T times."""
        h = float(h if h is not None else (self.h or self.grid_step()))
        if h in self._cache:
            return self._cache[h]
        T = self.steps
        tail = min(1e-16, 1e-13 / T)
        q, B, n = self.scheme.rate, self.scheme.max_batch_size, self.scheme.dataset_size
        comps = truncated_poisson_components(self.mechanism, q, B, n - 1, self.zero_out,
                                             one_more=self.both)
        wits = [truncated_poisson_witness(self.mechanism, q, B, n - 1)]
        if truncation_probability(q, B, n - 1) >= _LATTICE_FROM:
            wits.append(lattice_witness(self.mechanism, q, B, n - 1, self.zero_out))
        dirs = []
        for i, parts in enumerate(comps):
            pess = [(w, _null(1.0, h, "pessimistic") if pair is None else
                     discretise(pair, h, tail, optimistic=False)[0]) for w, pair in parts]
            p = mix(pess, "pessimistic").self_compose(T)
            opts = [discretise(w[i], h, tail, pessimistic=False)[1].self_compose(T)
                    for w in wits]
            # both are lower sides; keep the one larger where the upper side has delta 1e-5
            # (a heuristic: soundness does not depend on the choice)
            ref = float(np.minimum(p.epsilon(np.array([1e-5]))[0], 50.0))
            o = max(opts, key=lambda x: float(x.delta(np.array([ref]))[0]))
            dirs.append((p, o))
        out = TwoSidedPLD(dirs)
        self._cache[h] = out
        return out

    def renyi_floor(self, alpha: np.ndarray) -> np.ndarray:
        """Lower bounds on the run's Rényi DP from the optimistic sides."""
        return two_sided_renyi_floor(self.pld(), alpha)

    def _query(self, x: np.ndarray, which: str) -> BoundPair:
        x = np.asarray(x, dtype=float)
        pld = self.pld()
        up, lo = getattr(pld, which)(x)
        if which == "epsilon" and np.any(np.isposinf(up) & ~np.isposinf(lo)):
            raise NotApplicable(
                "the truncated Poisson PLD cannot certify a finite epsilon at this delta "
                "(grid mass at infinite loss plus numerical allowance exceed it)")
        return (Bound(shaped(up, x), "upper", UPPER_SOURCE),
                Bound(shaped(lo, x), "lower", LOWER_SOURCE))

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._query(delta, "epsilon")

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._query(epsilon, "delta")


def _applies(run) -> bool:
    mech: Mechanism = run.mechanism
    return (isinstance(run.scheme, TruncatedPoisson) and isinstance(mech, Gaussian)
            and isinstance(run.relation, (AddRemove, ZeroOut)) and run.relation.group == 1
            and mech.shift(2) <= 25.0 and math.isfinite(mech.shift(2)))


@run_accountant(
    "pld",
    applies=_applies,
    description="truncated Poisson: dominating pair on the truncation event, realised "
    "no-truncation pair below; two-sided PLD",
    capabilities=("pld", "grid_step", "renyi_floor"),
)
def _build(run) -> TruncatedPoissonAnalysis:
    return TruncatedPoissonAnalysis(run.mechanism, run.scheme, run.steps,
                                    zero_out=isinstance(run.relation, ZeroOut))
