"""The participation bound: a run in which each record takes part in at most m releases is
at most as private as the unsampled mechanism released m times (run accountant
"participation").

Every scheme that can say how often one record can be used over a run
(:meth:`~privamp.sampling.schemes.Scheme.max_participations`: deterministic and shuffled
batches once per epoch, Balanced Iteration k times per epoch, model splitting and sampling
without replacement once per step, ...) gets this trivial but always valid upper bound; it
is tighter than the amplified analyses when amplification is weak (few steps per epoch,
little noise), e.g. ``BalancedIteration(2, 1)`` at sigma 0.4: delta(0.1) <= 0.7780 against
the Balanced Iteration PLD's 0.9957 (issue 27).

*Why it holds.*  The sampler's randomness (orderings, batch or submodel choices) does not
depend on the data, and is the same under both neighbours D, D' (under zero-out the
other records keep their batches, Chua et al. 2024, Sec. 2, and under add/remove too where
each record's participation is drawn independently of the others; not so for fixed-size
batches without replacement nor for batches cut from an ordering (shuffled, deterministic)
under add/remove, which are refused: there the other records move to other batches).  Conditioned on
it, the releases in which the differing record does not take part have the same law under D
and D'; each of the at most m others is the mechanism at the relation's sensitivity
(adaptively chosen queries), so the conditioned run is dominated by the m-fold product of
the mechanism's dominating pair (Zhu, Dong, Wang 2022, arXiv:2106.08567, Thm 10; fewer
releases only lower the profile).  The run is a mixture of these conditioned runs with the
same weights under D and D', and the hockey-stick divergence is jointly convex, so its
profile is at most the largest conditioned one.

* Gaussian: the m-fold product of N(s, 1) vs N(0, 1) is one Gaussian pair at shift
  s sqrt(m), in closed form (Balle & Wang 2018, arXiv:1805.06530, Thm 8; Chua et al. 2024,
  arXiv:2403.17673, Prop 3.1).  A group of K: c_t <= K members in step t, sum_t c_t <= K m,
  so the squared shift sum_t c_t^2 s^2 <= K^2 m s^2.
* Laplace, randomized response: the mechanism's pair composed m times by the PLD engine
  (pessimistic connect-the-dots discretisation, FFT).  Randomized response's pair does not
  depend on the distance, so a group of K takes part in at most min(steps, K m) releases;
  Laplace groups are refused.
* ``HybridSubstitution``: the mechanism's sensitivity is for one batch element, a
  substituted record changes a release by twice that (distance 2).

The lower side is empty (no realised pair attains this in general; for deterministic
batches it does, and :mod:`privamp.theorems.chua2024` says so).  The analysis offers
``pld`` / ``grid_step`` only for runs no other accountant gives a PLD of, so that
:func:`privamp.compose` keeps the scheme's own (two-sided) PLD where there is one.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, ndtri

from ..errors import NotApplicable
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.laplace import Laplace
from ..mechanisms.randomized_response import RandomizedResponse
from ..numerics.arrays import shaped
from ..numerics.roots import bisect_monotone
from ..pairs.loss_pair import LossPair
from ..pairs.mechanism_pairs import GaussianPair
from ..pld.discretise import discretise
from ..pld.grid import PESSIMISTIC_SOURCE, PLD, zero_pld
from ..pld.two_sided import TwoSidedPLD
from ..results import Bound
from ..sampling.relations import AddRemove, HybridSubstitution, Substitution, ZeroOut
from ..sampling.schemes import WithoutReplacement
from .grid import auto_grid
from .pld_run import check_slack
from .registry import BoundPair, RunAnalysis, run_accountant

__all__ = [
    "ParticipationAnalysis",
    "participation_count",
    "participation_source",
    "gaussian_profile",
    "gaussian_epsilon",
]


#: relative allowance on the closed-form Gaussian profile for its float evaluation (log_ndtr
#: and exp are accurate to a few ulps; 1e-12 covers them with a wide margin)
_REL = 1e-12

#: the most releases the PLD path composes (Laplace, randomized response)
MAX_PLD_RELEASES = 10**6


def participation_source(m: int, what: str) -> str:
    """The label of the bound: "each record takes part in at most m releases: ..."."""
    return (f"each record takes part in at most {m} releases: the unsampled {m}-fold "
            f"composition ({what})")


def participation_count(run) -> int | None:
    """The releases the record (or group) of ``run`` can take part in, at the per-release
    distance of :func:`_distance`; None when the scheme bounds nothing.

    Args:
        run: a :class:`~privamp.Training`.

    Returns:
        m, or None.
    """
    m = run.scheme.max_participations(run.steps)
    if m is None:
        return None
    if isinstance(run.mechanism, RandomizedResponse):
        return min(run.steps, run.relation.group * m)
    return m


def gaussian_profile(eps: np.ndarray, s: float) -> np.ndarray:
    """delta(eps) of N(s, 1) vs N(0, 1), rounded up by a relative 1e-12 (float allowance).

    Args:
        eps: epsilons >= 0 (array).
        s: shift > 0.

    Returns:
        Upper bounds on the Gaussian profile, in [0, 1].
    """
    with np.errstate(all="ignore"):
        d = GaussianPair(s).delta(np.asarray(eps, dtype=float))
    d = np.nan_to_num(d, nan=1.0)
    return np.minimum(d * (1.0 + _REL) + 1e-300, 1.0)


def gaussian_epsilon(delta: np.ndarray, s: float) -> np.ndarray:
    """The smallest eps with :func:`gaussian_profile` <= delta (rounded up).

    The search: Newton's method on log delta(eps), whose slope is -e^eps
    Phi(-eps/s - s/2) / delta(eps) (Balle & Wang 2018, arXiv:1805.06530, Thm 8), from
    s^2/2 + s Phi^-1(1 - delta) (at or right of the root: the profile is below
    Phi(s/2 - eps/s)); then a bracket of relative width ~1e-13 around its answer, widened
    until :func:`gaussian_profile` exceeds delta at its lower end and not at its upper end,
    bisected to float resolution.  The answer is certified as before (the profile evaluated
    at it is <= delta); only the search is faster (the former doubling and bisection from
    [0, max(1, s^2)] took ~3.3 ms, about 60 profile evaluations).

    Args:
        delta: deltas in (0, 1) (array).
        s: shift > 0.

    Returns:
        Epsilons (upper bounds for the exact Gaussian pair).
    """
    delta = np.asarray(delta, dtype=float)
    zero = gaussian_profile(np.zeros_like(delta), s) <= delta
    with np.errstate(all="ignore"):
        x = np.maximum(s * s / 2.0 - s * ndtri(delta), 0.0)
        x = np.where(np.isfinite(x), x, 0.0)
        for _ in range(_NEWTON_STEPS):
            f = gaussian_profile(x, s)
            step = (np.log(f) - np.log(delta)) * f * np.exp(-x - log_ndtr(-x / s - s / 2.0))
            step = np.where(np.isfinite(step) & ~zero & (f > 0), step, 0.0)
            x = np.maximum(x + step, 0.0)
            if not np.any(np.abs(step) > 1e-15 * np.maximum(x, 1.0)):
                break
    x = np.where(zero, 0.0, x)
    width = np.where(zero, 0.0, 1e-13 * x + 1e-300)
    hi = x + width
    for _ in range(1100):
        bad = gaussian_profile(hi, s) > delta
        if not bad.any():
            break
        width = np.where(bad, 2.0 * width, width)
        hi = np.where(bad, x + width, hi)
    else:  # pragma: no cover - delta below the float floor of the profile
        return np.full(delta.shape, np.inf)
    width = np.where(zero, 0.0, 1e-13 * x + 1e-300)
    lo = np.maximum(x - width, 0.0)
    for _ in range(1100):
        low = (gaussian_profile(lo, s) <= delta) & (lo > 0.0)
        if not low.any():
            break
        width = np.where(low, 2.0 * width, width)
        lo = np.where(low, np.maximum(x - width, 0.0), lo)
    eps = bisect_monotone(lambda e: gaussian_profile(e, s), delta, lo, hi, increasing=False)
    return np.where(zero, 0.0, eps)


#: Newton steps of :func:`gaussian_epsilon` at most (the bracket check after them keeps the
#: answer certified whatever the count)
_NEWTON_STEPS = 30


def _distance(relation) -> int:
    """The per-release group distance of one record: 2 under hybrid substitution (the
    sensitivity is one batch element's), else 1."""
    return 2 if isinstance(relation, HybridSubstitution) else 1


class ParticipationAnalysis(RunAnalysis):
    """Upper bound of a run whose records take part in at most ``m`` releases: one Gaussian
    at shift ``s sqrt(m)`` (``gauss_shift``), or ``pair`` composed ``m`` times.

    Args:
        m: the releases (>= 1).
        gauss_shift: the whole run's Gaussian shift (Gaussian mechanisms), or None.
        pair: one release's dominating pair (other mechanisms), or None.
        run: the Training (to see whether another accountant gives its PLD), or None.
        pure: the whole run's pure-DP epsilon (m times one release's), or None: delta is 0
            at and above it, and epsilon never above it.
    """

    def __init__(self, m: int, gauss_shift: float | None = None, pair: LossPair | None = None,
                 run=None, pure: float | None = None) -> None:
        if (gauss_shift is None) == (pair is None):
            raise ValueError("give exactly one of gauss_shift or pair")
        self.m, self.s, self.pair, self.run = int(m), gauss_shift, pair, run
        self.pure = pure if pure is not None and math.isfinite(pure) else None
        what = (f"one Gaussian at shift {gauss_shift:.6g}, Balle & Wang 2018, Thm 8"
                if gauss_shift is not None else
                f"the mechanism's pair composed {m} times; {PESSIMISTIC_SOURCE}")
        self.source = participation_source(self.m, what)
        self._composed: PLD | None = None

    # -- the PLD path ----------------------------------------------------------------------
    def _own_step(self) -> float:
        if self.s is not None:
            return auto_grid(GaussianPair(self.s), 1)
        assert self.pair is not None
        return auto_grid(self.pair, self.m)

    def _composed_pld(self, h: float) -> PLD:
        assert self.pair is not None
        p, _ = discretise(self.pair, h, optimistic=False)
        assert p is not None
        check_slack(p, self.m)
        return p.self_compose(self.m)

    def _run_pld(self) -> PLD:
        if self._composed is None:
            self._composed = self._composed_pld(self._own_step())
        return self._composed

    # -- answers ---------------------------------------------------------------------------
    def epsilon(self, delta: np.ndarray) -> BoundPair:
        d = np.asarray(delta, dtype=float)
        if self.s is not None:
            up = gaussian_epsilon(np.ravel(d), self.s)
            return Bound(shaped(up, d), "upper", self.source + " (inverted)"), None
        up = np.asarray(self._run_pld().epsilon(np.ravel(d)), dtype=float)
        if self.pure is not None:
            up = np.minimum(up, self.pure)
        if np.any(np.isposinf(up)):
            raise NotApplicable("the participation bound's grid cannot certify a finite "
                                "epsilon at this delta")
        return Bound(shaped(up, d), "upper", self.source), None

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        e = np.asarray(epsilon, dtype=float)
        if self.s is not None:
            up = gaussian_profile(np.ravel(e), self.s)
        else:
            up = np.minimum(np.asarray(self._run_pld().delta(np.ravel(e)), dtype=float), 1.0)
            if self.pure is not None:
                up = np.where(np.ravel(e) >= self.pure, 0.0, up)
        return Bound(shaped(up, e), "upper", self.source), None

    # -- capabilities ----------------------------------------------------------------------
    def _defer(self) -> None:
        """NotApplicable when another accountant of the run offers its PLD: that one (with
        its lower side) is the one :func:`privamp.compose` should use."""
        if self.run is None:
            return
        for _, an in self.run.offering("pld"):
            if not isinstance(an, ParticipationAnalysis):
                raise NotApplicable("another accountant gives this run's PLD; the "
                                    "participation bound only joins Training's 'best'")

    def grid_step(self) -> float:
        """The step of the run's own grid (raises NotApplicable when it defers)."""
        self._defer()
        return self._own_step()

    def pld(self, h: float | None = None) -> TwoSidedPLD:
        """The whole run's PLD on step ``h``: pessimistic the participation bound's pair, no
        lower side (the zero PLD).  Raises NotApplicable when another accountant gives the
        run's PLD."""
        self._defer()
        h = self._own_step() if h is None else float(h)
        if self.s is not None:
            p, _ = discretise(GaussianPair(self.s), h, optimistic=False)
            assert p is not None
        else:
            p = self._composed_pld(h)
        return TwoSidedPLD([(p, zero_pld(h))])


_RELATIONS = (AddRemove, ZeroOut, Substitution, HybridSubstitution)


def _applies(run) -> bool:
    mech = run.mechanism
    if not isinstance(mech, (Gaussian, Laplace, RandomizedResponse)):
        return False
    if not isinstance(run.relation, _RELATIONS):
        return False
    if isinstance(mech, Laplace) and run.relation.group > 1:
        return False
    if type(run.relation) is AddRemove and (
            isinstance(run.scheme, WithoutReplacement)
            or not isinstance(run.scheme.default_relation(), AddRemove)):
        # fixed-size batches of a dataset one record larger, or batches cut from an ordering
        # (shuffled, deterministic: Scheme.default_relation is zero-out): the other records'
        # batches change too -- removing the first record shifts every later one
        return False
    return run.scheme.max_participations(run.steps) is not None


@run_accountant(
    "participation",
    applies=_applies,
    description="each record takes part in at most m releases: the unsampled mechanism "
    "composed m times (a trivial upper bound, valid for every scheme that bounds m)",
    capabilities=("pld", "grid_step"),
)
def _build(run) -> ParticipationAnalysis:
    m = participation_count(run)
    assert m is not None
    mech, k = run.mechanism, _distance(run.relation)
    if isinstance(mech, Gaussian):
        s = run.relation.group * k * math.sqrt(m) * mech.sensitivity / mech.sigma
        if not (math.isfinite(s) and s > 0):
            raise NotApplicable(f"the participation bound's Gaussian shift must be finite "
                                f"and > 0, got {s}")
        return ParticipationAnalysis(m, gauss_shift=s, run=run)
    if m > MAX_PLD_RELEASES:
        raise NotApplicable(f"the participation bound composes at most {MAX_PLD_RELEASES} "
                            f"releases of a non-Gaussian mechanism, this run has {m}")
    # pure DP: one release's epsilon (Laplace at distance k; randomized response whatever
    # the distance) times the releases, an upper bound exact for the dominating pair
    one = mech.epsilon0(k) if isinstance(mech, Laplace) else mech.epsilon0()
    pure = math.nextafter(m * one, math.inf) if math.isfinite(one) else None
    return ParticipationAnalysis(m, pair=mech.pair(k), run=run, pure=pure)
