"""The optimal-transport amplification bound of Schuchardt et al. 2024
(NeurIPS 2024), Thms 3.3 and 3.4, as an API: describe a sampling scheme by its conditioning
events and get a sound Rényi-DP bound for any base mechanism privamp knows.

Two ways to describe a scheme, for one pair of neighbouring datasets ``x ~ x'``:

* **Conditioning events on a chain** (Thm 3.4 with Prop 3.5): :class:`ChainEvents` lists the
  events ``A_k`` of one dataset's batch law (``weights[k] = P(A_k)``) and, for each, its
  *position*: the batches of ``A_k`` are coupled so that they differ from a common anchor
  batch by ``positions[k]`` steps of the batch relation, and from each other by
  ``|positions[k] - positions[l]|``.  Conditioning on "how many of the modified records are
  in the batch" is the paper's recipe for every built-in scheme: Poisson with a group of K
  (weights Binomial(k | K, r) at positions k, Thm 4.1), sampling without replacement under
  insertion/removal (positions 0 and 2, Thm F.3) or substitution (both sides
  ``{0: 1 - w, 1: w}``, Thm 3.6).  The user's proof obligation is the coupling: conditioned
  on each event, the rest of the batch can be drawn as in the anchor's law (e.g. the records
  outside the group are sampled independently of the group, as in Poisson sampling).
* **A coupling of whole batches** (Thm 3.3): weights ``gamma_i`` on pairs of batches at
  distances ``d_i`` (:func:`ot_pairwise_rdp`), or, for finitely many batches, the two batch
  laws and a distance, and privamp searches the cheapest coupling by linear programming
  (:func:`ot_coupling_rdp`).

Cost of one tuple of batches (Prop 3.5: the worst case over base-mechanism inputs that keep
the pairwise distances), evaluated soundly:

* Gaussian, one side the anchor alone: collinear, equidistant means are the worst case
  (App. H, Thm H.4, any mixture weights), i.e. ``Psi_a(sum_k w_k N(p_k s, 1) || N(0, 1))`` and
  its reverse, with certified quadrature (:mod:`privamp.numerics.mixture_divergence`).
* randomized response: ``Psi_a`` of two Bernoulli laws is jointly convex in their parameters,
  every batch at positive distance may answer either way, so the maximum is at one of eight
  extreme points (exact; this is how Thms 3.7 and G.1 are proved).
* Laplace, one side the anchor and one other position: by Blackwell's theorem the pair
  (Lap(0), Lap(mu)) is a garbling of (Lap(0), Lap(p Delta)) for |mu| <= p Delta, so the
  extreme shift is the worst case: the exact Poisson-subsampled Laplace divergence.
* anything else (Laplace with several positions, Gaussian with two non-trivial sides): joint
  convexity once more (Lemma 3.1, i.e. Thm 3.3 inside the tuple): the cheapest coupling of
  the two weight vectors with cost ``exp((a - 1) eps_M(a, p_k + p_l))`` (triangle inequality
  through the anchor).  Sound, not tight.

Every value is rounded up; orders are real, ``alpha > 1``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..._validation import check_int, check_orders, check_rate
from ...mechanisms.base import Mechanism
from ...mechanisms.gaussian import Gaussian
from ...mechanisms.laplace import Laplace
from ...mechanisms.randomized_response import RandomizedResponse
from ...numerics.logspace import logsumexp
from ...results import Bound
from ...sampling.schemes import CustomSampler
from ..mironov2019 import poisson_exact_rdp
from ..registry import rdp_method
from .core import bern_log_psi, gaussian_mixture_log_moments

__all__ = [
    "ChainEvents",
    "ot_rdp",
    "ot_pairwise_rdp",
    "ot_coupling_rdp",
    "SRC_OT",
]


SRC_OT = "Schuchardt et al. 2024 (NeurIPS 2024), Thm 3.4 + Prop 3.5"
SRC_OT33 = "Schuchardt et al. 2024 (NeurIPS 2024), Thm 3.3"
_UP = 1e-12  # relative upward rounding of log Psi


@dataclass(frozen=True)
class ChainEvents:
    """Conditioning events of one dataset's batch law (Thm 3.4): ``weights[k] = P(A_k)``
    (non-negative, summing to 1) and ``positions[k]`` (integer >= 0): the batches of ``A_k``
    differ from the common anchor batch by ``positions[k]`` steps of the batch relation and
    from those of ``A_l`` by ``|positions[k] - positions[l]|``.  Position 0 is the anchor."""

    weights: tuple[float, ...]
    positions: tuple[int, ...]

    def __post_init__(self) -> None:
        w = np.asarray(self.weights, dtype=float).ravel()
        if w.size == 0 or len(self.positions) != w.size:
            raise ValueError("weights and positions must be non-empty and of the same length, "
                             f"got {len(self.weights)} and {len(self.positions)}")
        if not np.all(np.isfinite(w)) or (w < 0).any() or abs(w.sum() - 1.0) > 1e-9:
            raise ValueError(f"weights must be in [0, 1] and sum to 1, got {self.weights}")
        pos = tuple(check_int("positions", p, minimum=0) for p in self.positions)
        object.__setattr__(self, "weights", tuple(float(x) for x in w / w.sum()))
        object.__setattr__(self, "positions", pos)

    @property
    def trivial(self) -> bool:
        """True when all the mass sits on the anchor."""
        return all(p == 0 or w == 0 for w, p in zip(self.weights, self.positions, strict=True))

    def merged(self) -> tuple[np.ndarray, np.ndarray]:
        """(positions, weights): positions sorted, equal positions merged, zero weights gone."""
        pos = np.asarray(self.positions)
        w = np.asarray(self.weights)
        ps = np.unique(pos[w > 0])
        return ps, np.array([w[(pos == p)].sum() for p in ps])

    @classmethod
    def anchor(cls) -> ChainEvents:
        """The batch law of a dataset that contains none of the modified records."""
        return cls((1.0,), (0,))

    @classmethod
    def poisson(cls, rate: float, group: int = 1) -> ChainEvents:
        """Poisson sampling at ``rate`` of the larger dataset, conditioned on how many of the
        ``group`` inserted records it sampled (Thm 4.1's events)."""
        from scipy import stats  # heavy: on first use, not at import
        r = check_rate("rate", rate)
        k = np.arange(check_int("group", group, minimum=1) + 1)
        return cls(tuple(stats.binom.pmf(k, group, r)), tuple(int(x) for x in k))

    @classmethod
    def poisson_with_quota(cls, rate: float, records: int, quota: int) -> ChainEvents:
        """Client-level insertion/removal under Poisson sampling with a per-client quota: each
        record joins the batch independently with probability ``rate``, and a client with more
        than ``quota`` sampled records keeps ``quota`` of them.  The inserted client (with
        ``records`` records) has ``min(Binomial(records, rate), quota)`` records in the batch,
        independently of the other clients' records (the coupling of Thm 4.1 applies)."""
        from scipy import stats  # heavy: on first use, not at import
        r = check_rate("rate", rate)
        m = check_int("records", records, minimum=1)
        qu = check_int("quota", quota, minimum=1)
        k = np.arange(min(m, qu) + 1)
        w = stats.binom.pmf(k, m, r)
        if qu < m:
            w[-1] = stats.binom.sf(qu - 1, m, r)  # P(B >= quota)
        return cls(tuple(w / w.sum()), tuple(int(x) for x in k))

    @classmethod
    def without_replacement(cls, batch_size: int, dataset_size: int, relation: str
                            ) -> ChainEvents:
        """Sampling ``batch_size`` of ``dataset_size`` without replacement, conditioned on
        whether the modified record is sampled: under ``relation="substitution"`` its batches
        are one substitution away (Thm 3.6's events, both datasets); under
        ``"add/remove"`` one substitution is one removal and one insertion, position 2
        (Thm F.3's events, larger dataset of size ``dataset_size``)."""
        w = check_int("batch_size", batch_size, minimum=1) / check_int(
            "dataset_size", dataset_size, minimum=1)
        if w > 1:
            raise ValueError("batch_size must be <= dataset_size")
        if relation not in ("substitution", "add/remove"):
            raise ValueError(f"relation must be 'substitution' or 'add/remove', got {relation!r}")
        return cls((1.0 - w, w), (0, 1 if relation == "substitution" else 2))


# ------------------------------------------------------------------------------------------
# costs of one tuple (log Psi, rounded up), vectorised over orders
# ------------------------------------------------------------------------------------------
def _log_pair_cost(mech: Mechanism, a: np.ndarray, d: int) -> np.ndarray:
    """log max_{d(y,y') <= d} Psi_a(b_y || b_y') = (a - 1) eps_M(a, d) (white-box group)."""
    if d == 0:
        return np.zeros_like(a)
    return (a - 1.0) * np.asarray(mech.rdp_kernel(a, int(d)), dtype=float)


def _one_sided(mech: Mechanism, a: np.ndarray, ps: np.ndarray, ws: np.ndarray
               ) -> tuple[np.ndarray, str] | None:
    """(max(log Psi(mix || anchor), log Psi(anchor || mix)), how) when evaluated exactly."""
    if isinstance(mech, Gaussian):
        g = math.gcd(*[int(p) for p in ps if p > 0])
        logw = np.full(int(ps.max()) // g + 1, -np.inf)
        logw[(ps // g).astype(int)] = np.log(ws)
        fwd, rev = gaussian_mixture_log_moments(a, logw, g * mech.shift(1))  # -inf ok
        return np.maximum(fwd, rev), "Gaussian: collinear equidistant worst case (App. H)"
    if isinstance(mech, RandomizedResponse):
        u = float(ws[ps > 0].sum())
        t = mech.theta
        dlt = u * (1 - 2 * t)
        val = np.maximum(bern_log_psi(a, t, dlt), bern_log_psi(a, t + dlt, -dlt))
        return val, "randomized response: extreme points (exact)"
    if isinstance(mech, Laplace) and (ps > 0).sum() == 1:
        p = int(ps[ps > 0][0])
        lap = Laplace(mech.scale, mech.sensitivity * p)
        eps = poisson_exact_rdp(lap, float(ws[ps > 0][0]), a)
        return (a - 1.0) * eps, "Laplace, one position: extreme shift (Blackwell), exact"
    return None


def _lp_coupling(p: np.ndarray, q: np.ndarray, cost: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A coupling of (p, q) close to the cheapest one for ``cost`` (finite, >= 0), returned
    as (g, rp, rq): the LP solution scaled below its marginals, and the leftover masses, to
    be coupled independently (so g + outer(rp, rq) / sum(rp) is an exactly valid coupling)."""
    from scipy import optimize  # heavy: on first use, not at import
    n, m = cost.shape
    a_eq = np.zeros((n + m, n * m))
    for i in range(n):
        a_eq[i, i * m:(i + 1) * m] = 1.0
    for j in range(m):
        a_eq[n + j, j::m] = 1.0
    res = optimize.linprog(cost.ravel(), A_eq=a_eq, b_eq=np.concatenate([p, q]),
                           bounds=(0, None), method="highs")
    g = np.maximum(res.x.reshape(n, m), 0.0) if res.status == 0 else np.zeros((n, m))
    rows, cols = g.sum(1), g.sum(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        fr = np.where(rows > p, p / rows, 1.0)
        fc = np.where(cols > q, q / cols, 1.0)
    g = g * np.minimum(fr[:, None], fc[None, :])
    return g, np.maximum(p - g.sum(1), 0.0), np.maximum(q - g.sum(0), 0.0)


def _log_value(g: np.ndarray, rp: np.ndarray, rq: np.ndarray, log_cost: np.ndarray) -> float:
    """log of the cost of the coupling g + outer(rp, rq) / sum(rp), rounded up; a float
    mismatch between sum(rp) and sum(rq) is charged at the largest cost."""
    left = min(rp.sum(), rq.sum())
    with np.errstate(divide="ignore"):
        terms = [np.log(g) + log_cost]
        if left > 0:
            terms.append(np.log(np.outer(rp, rq) / left) + log_cost)
        gap = abs(rp.sum() - rq.sum())
        if gap > 0:
            terms.append(np.array([math.log(gap) + float(log_cost.max())]))
    val = float(logsumexp(np.concatenate([t.ravel() for t in terms])))
    return val + 1e-12 * max(1.0, abs(val))


def _log_min_cost(p: np.ndarray, q: np.ndarray, log_cost: np.ndarray) -> float:
    """log of the cost of the cheapest coupling of (p, q) found, costs given by their logs.
    Two LPs (costs exp(log_cost) scaled into floating range, and costs log_cost, which rank
    the pairs the same way when the scaled ones underflow); each yields a valid coupling
    whose exact cost is evaluated in log space; the smaller is returned (Thm 3.3 holds for
    every coupling, so both are sound)."""
    if log_cost.shape[0] == 1 or log_cost.shape[1] == 1:
        g = np.outer(p, q)
        return _log_value(g, np.zeros_like(p), np.zeros_like(q), log_cost)
    shift = max(float(log_cost.max()) - 600.0, 0.0)
    best = math.inf
    for cost in (np.exp(log_cost - shift), log_cost - log_cost.min()):
        best = min(best, _log_value(*_lp_coupling(p, q, cost), log_cost))
    return best


def _two_sided(mech: Mechanism, a: np.ndarray, left: ChainEvents, right: ChainEvents
               ) -> tuple[np.ndarray, str]:
    pl, wl = left.merged()
    pr, wr = right.merged()
    if isinstance(mech, RandomizedResponse):
        t = mech.theta
        ul, ur = float(wl[pl > 0].sum()), float(wr[pr > 0].sum())
        best = np.full(a.shape, -np.inf)
        for t0 in (t, 1 - t):
            for t1 in (t, 1 - t):
                for t2 in (t, 1 - t):
                    p = (1 - ul) * t0 + ul * t1  # P(z = 0), left
                    q = (1 - ur) * t0 + ur * t2
                    best = np.maximum(best, bern_log_psi(a, q, p - q))
        return best, "randomized response: extreme points (exact)"
    out = np.empty_like(a)
    for i, al in enumerate(a):
        logc = np.array([[float(_log_pair_cost(mech, np.array([al]), int(x + y))[0])
                          for y in pr] for x in pl])
        out[i] = _log_min_cost(wl, wr, logc)
    return out, "joint convexity inside the tuple (Thm 3.3), cheapest coupling by LP"


# ------------------------------------------------------------------------------------------
# public API
# ------------------------------------------------------------------------------------------
def ot_rdp(mechanism: Mechanism, events: ChainEvents, alpha: float | np.ndarray,
           other: ChainEvents | None = None) -> Bound:
    """Rényi-DP upper bound of one subsampled step from Thm 3.4 of Schuchardt et al. 2024
    (NeurIPS 2024) with the coupling described by chain events (module docstring).

    Args:
        mechanism: a privamp base mechanism; its sensitivity is one step of the batch relation.
        events: the conditioning events of one dataset's batch law.
        alpha: order(s) > 1, real.
        other: the events of the other dataset (default: the anchor alone, as under
            insertion/removal, where the smaller dataset never samples the inserted records).

    Returns:
        Bound (kind "upper") on ``max(D_a(m_x || m_x'), D_a(m_x' || m_x))`` at each order
        (both orders of the neighbours).

    Raises:
        ValueError: invalid orders or events.
    """
    if not isinstance(mechanism, Mechanism):
        raise ValueError(f"mechanism must be a privamp mechanism, got {mechanism!r}")
    other = ChainEvents.anchor() if other is None else other
    a0 = check_orders(alpha)
    a = np.atleast_1d(a0).astype(float).ravel()
    if events.trivial and other.trivial:
        return Bound(np.zeros(np.shape(a0)), "upper", SRC_OT + ": identical batch laws")
    if other.trivial or events.trivial:
        ps, ws = (events if other.trivial else other).merged()
        got = _one_sided(mechanism, a, ps, ws)
        if got is None:
            anchor = ChainEvents.anchor()
            v1, how = _two_sided(mechanism, a, ChainEvents(tuple(ws), tuple(ps)), anchor)
            v2, _ = _two_sided(mechanism, a, anchor, ChainEvents(tuple(ws), tuple(ps)))
            val = np.maximum(v1, v2)
        else:
            val, how = got
    else:
        v1, how = _two_sided(mechanism, a, events, other)
        v2, _ = _two_sided(mechanism, a, other, events)
        val = np.maximum(v1, v2)
    eps = np.maximum(val, 0.0) * (1 + _UP) / (a - 1.0)
    if not np.all(np.isfinite(eps)):
        raise ValueError("alpha is too large for these parameters (the bound overflows); "
                         "use smaller orders")
    return Bound(eps.reshape(np.shape(a0)), "upper", f"{SRC_OT} ({how})")


def ot_pairwise_rdp(mechanism: Mechanism, weights: Sequence[float],
                    distances: Sequence[int], alpha: float | np.ndarray) -> Bound:
    """Thm 3.3 of Schuchardt et al. 2024 (NeurIPS 2024): a coupling that puts mass
    ``weights[i]`` on pairs of batches at distance ``distances[i]`` (batch relation) gives
    ``Psi_a <= sum_i weights[i] exp((a - 1) eps_M(a, distances[i]))``.  The relation must be
    symmetric (both orders of the neighbours share the coupling's distances)."""
    w = np.asarray(weights, dtype=float).ravel()
    d = [check_int("distances", x, minimum=0) for x in distances]
    if w.size != len(d) or w.size == 0 or (w < 0).any() or abs(w.sum() - 1) > 1e-9:
        raise ValueError("weights must be a probability vector as long as distances")
    a0 = check_orders(alpha)
    a = np.atleast_1d(a0).astype(float).ravel()
    with np.errstate(divide="ignore"):
        terms = np.stack([math.log(x) + _log_pair_cost(mechanism, a, k) if x > 0
                          else np.full(a.shape, -np.inf) for x, k in zip(w, d, strict=True)])
    val = logsumexp(terms, axis=0)
    eps = np.maximum(val, 0.0) * (1 + _UP) / (a - 1.0)
    return Bound(eps.reshape(np.shape(a0)), "upper", f"{SRC_OT33} (given coupling)")


def ot_coupling_rdp(mechanism: Mechanism, batches: Sequence, probs: Sequence[float],
                    other_batches: Sequence, other_probs: Sequence[float],
                    distance: Callable[[object, object], int], alpha: float | np.ndarray,
                    max_batches: int = 400) -> Bound:
    """Thm 3.3 of Schuchardt et al. 2024 (NeurIPS 2024) for finitely many batches:
    privamp searches the coupling of the two batch laws that minimises
    ``sum gamma(y, y') exp((a - 1) eps_M(a, distance(y, y')))`` (a linear programme, one per
    order), in both orders of the neighbours.  ``distance(y, y')``: the number of steps of
    the batch relation between two batches (e.g. ``len(set(y) ^ set(y'))`` for
    insertion/removal).  At most ``max_batches`` batches per side."""
    p = np.asarray(probs, dtype=float).ravel()
    q = np.asarray(other_probs, dtype=float).ravel()
    for name, b, v in (("probs", batches, p), ("other_probs", other_batches, q)):
        if len(b) != v.size or v.size == 0 or (v < 0).any() or abs(v.sum() - 1) > 1e-9:
            raise ValueError(f"{name} must be a probability vector, one entry per batch")
        if v.size > max_batches:
            raise ValueError(f"at most max_batches={max_batches} batches per side, got {v.size}")
    dist = np.array([[check_int("distance", distance(y, z), minimum=0) for z in other_batches]
                     for y in batches])
    a0 = check_orders(alpha)
    a = np.atleast_1d(a0).astype(float).ravel()
    levels = np.unique(dist)
    out = np.empty_like(a)
    for i, al in enumerate(a):
        lc = {int(k): float(_log_pair_cost(mechanism, np.array([al]), int(k))[0])
              for k in levels}
        logc = np.vectorize(lc.get)(dist).astype(float)
        out[i] = max(_log_min_cost(p, q, logc), _log_min_cost(q, p, logc.T))
    eps = np.maximum(out, 0.0) * (1 + _UP) / (a - 1.0)
    if not np.all(np.isfinite(eps)):
        raise ValueError("alpha is too large for these parameters (the bound overflows)")
    return Bound(eps.reshape(np.shape(a0)), "upper", f"{SRC_OT33} (coupling found by LP)")


@rdp_method(
    "schuchardt-ot",
    SRC_OT + " for a user-described sampler (CustomSampler)",
    mechanisms=(Gaussian, Laplace, RandomizedResponse),
    schemes=(CustomSampler,),
    when=lambda m, s, r: r.group == 1,
)
def _custom_sampler_rdp(mech, scheme: CustomSampler, relation, alpha: np.ndarray) -> np.ndarray:
    """The events describe the neighbouring pair (groups included), so only group = 1 of the
    relation is accepted: the relation is the user's label for it."""
    events = ChainEvents(scheme.weights, scheme.positions)
    other = ChainEvents(scheme.other_weights, scheme.other_positions)
    return np.asarray(ot_rdp(mech, events, alpha, other).value, dtype=float)
