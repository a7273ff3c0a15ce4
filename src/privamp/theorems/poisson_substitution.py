"""Poisson-subsampled Gaussian under (hybrid) substitution: the antipodal dominating pair.

Setting: datasets of the same size differ in one record (substitution); each step samples
every record independently with probability q and releases ``f(batch) + N(0, sigma^2 I)``,
where ``f`` moves by at most ``C`` in l2 norm when one element is inserted into or removed
from a batch -- e.g. a sum of per-example gradients clipped to norm C.  In privamp this is
``relation=HybridSubstitution()`` with ``Gaussian(sigma, sensitivity=C)`` (Schuchardt et al.
2024, App. F.2).  In noise units ``c = C / sigma`` this module uses the 1-D pair

    P = (1-q) N(0, 1) + q N(c, 1),      Q = (1-q) N(0, 1) + q N(-c, 1)

(the pair dp-accounting builds for ``NeighboringRelation.REPLACE_ONE`` with
``sensitivity = C``).  **Theorem** (docs/findings.md, "Poisson under substitution: the
antipodal pair"): for all such neighbours D, D', every such query and every gamma >= 0,
``H_gamma(M(D) || M(D')) <= H_gamma(P || Q)``: (P, Q) is a dominating pair in the sense of
Zhu, Dong, Wang 2022 (arXiv:2106.08567, Def. 7), so its T-fold product dominates T adaptive
steps (their Thm 10).  Proof: (i) the other records' batch B is drawn alike on both sides, so
joint convexity of H_gamma leaves ``P_a = (1-q)N(0,I) + qN(a,I)`` vs ``P_b`` with
``a = f(B+x) - f(B)``, ``b = f(B+x') - f(B)``, ``||a||, ||b|| <= c``; (ii) ``P_a`` is a
marginal of ``P_{a'}`` in two more dimensions, ``a' = (a, sqrt(c^2-|a|^2), 0)``,
``b' = (b, 0, sqrt(c^2-|b|^2))``, both of norm c, so by data processing we may take
``||a|| = ||b|| = c``; (iii) ``H_gamma(P_a||P_b) = E[(s(U) + t(W))_+]`` with ``U = a.X``,
``W = -b.X`` (X ~ N(0, I), both ~ N(0, c^2)) and s, t nondecreasing, and a rearrangement
argument bounds it by its value at ``W = U``, i.e. ``b = -a``.

The pair is its own swap (reflection x -> -x), so one direction serves both orders.  It is
*realised*: a record with gradient ``C u`` replaced by one with ``-C u``, other gradients 0,
gives exactly (P, Q) at every step, so the optimistic discretisation of the same pair is a
certified lower bound and the interval is tight up to discretisation.

Plain :class:`~privamp.Substitution` gets only the LOWER side (accountant
"antipodal-lower", :class:`SubstitutionLowerAnalysis`, the pair at ``C = Delta/2``: gradients
clipped to Delta/2, a record at ``+C u`` replaced by one at ``-C u``, is a query of
substitution sensitivity Delta).  It is not an upper bound there: ``sensitivity = Delta``
only bounds ``||f(B+x) - f(B+x')||``, and privamp's Poisson-substitution upper bound (Balle et
al. 2018's coupling) allows ``||a||, ||b||, ||a - b|| <= Delta``, under which the pair at
``Delta/2`` is NOT dominating (a = Delta e_1, b = Delta e_60deg, or a histogram's ``e_i`` vs
``e_j`` with Delta = sqrt 2: docs/findings.md, the same section).  For DP-SGD with gradients
clipped to C, state the run as ``HybridSubstitution`` with ``sensitivity=C`` for the tight
interval.

Public names: :class:`AntipodalGaussianPair`, :func:`antipodal_pair`,
:class:`PoissonSubstitutionAnalysis`, :class:`SubstitutionLowerAnalysis`.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy import special

from ..accountants.grid import auto_grid
from ..accountants.poisson import check_steps
from ..accountants.registry import BoundPair, RunAnalysis, run_accountant
from ..errors import NotApplicable
from ..mechanisms.gaussian import Gaussian
from ..numerics.arrays import shaped
from ..pairs.loss_pair import LossPair, as_array
from ..pld.discretise import discretise
from ..pld.grid import OPTIMISTIC_SOURCE, PESSIMISTIC_SOURCE, PLD
from ..pld.moments import renyi_floor
from ..pld.two_sided import TwoSidedPLD
from ..results import Bound
from ..sampling.relations import HybridSubstitution, Relation, Substitution
from ..sampling.schemes import Poisson

__all__ = [
    "AntipodalGaussianPair",
    "antipodal_pair",
    "PoissonSubstitutionAnalysis",
    "SubstitutionLowerAnalysis",
]

SOURCE = ("Poisson-subsampled Gaussian under hybrid substitution: antipodal dominating pair "
          "(1-q)N(0)+qN(C) vs (1-q)N(0)+qN(-C), C = insertion/removal sensitivity (privamp "
          "docs/findings.md, "
          "'Poisson under substitution: the antipodal pair'; composition: Zhu, Dong, Wang "
          "2022, arXiv:2106.08567, Thm 10)")
LOWER_SOURCE = ("realised by a record with clipped gradient C u replaced by one with -C u, "
                "other gradients 0 (the same antipodal pair)")
LOWER_SOURCE_PLAIN = ("antipodal pair at C = Delta/2, realised under substitution by gradients "
                      "clipped to Delta/2: a record at +C u replaced by one at -C u, other "
                      "gradients 0 (privamp docs/findings.md, 'Poisson under substitution: "
                      "the antipodal pair')")


class AntipodalGaussianPair(LossPair):
    """P = (1-q) N(0,1) + q N(c,1), Q = (1-q) N(0,1) + q N(-c,1) (q in (0, 1], c > 0).

    The privacy loss ``L(x) = log((1-q) + k e^{cx}) - log((1-q) + k e^{-cx})``,
    ``k = q e^{-c^2/2}``, is continuous, odd and strictly increasing from -inf to +inf; its
    inverse is closed-form: with ``u = e^{cx}``, ``k u^2 + (1-q)(1 - e^l) u - k e^l = 0``,
    whose positive root is ``x(l) = (l/2 + asinh((1-q) sinh(l/2) / k)) / c``.  Tails are
    normal tails at ``x(l)``; the pair is its own swap.

    Args:
        q: the sampling rate, in (0, 1].
        c: the clipping norm in noise units (C / sigma), > 0.

    Raises:
        ValueError: q or c out of range.
    """

    def __init__(self, q: float, c: float) -> None:
        q, c = float(q), float(c)
        if not 0.0 < q <= 1.0:
            raise ValueError(f"q must be in (0, 1], got {q}")
        if not (c > 0.0 and math.isfinite(c)):
            raise ValueError(f"c must be a positive finite number, got {c}")
        self.q, self.c = q, c
        self.log_k = math.log(q) - c * c / 2.0  # log of k = q e^{-c^2/2}

    def loss(self, x: np.ndarray | float) -> np.ndarray:
        """The privacy loss log dP/dQ at the output x (vectorised)."""
        x = as_array(x)
        lk = self.log_k
        if self.q == 1.0:
            return 2.0 * self.c * x
        l1q = math.log1p(-self.q)
        return (np.logaddexp(l1q, lk + self.c * x) - np.logaddexp(l1q, lk - self.c * x))

    def preimage(self, l: np.ndarray | float) -> np.ndarray:
        """The output x with L(x) = l (closed form; +-inf at l = +-inf)."""
        l = as_array(l)
        a = np.abs(l)
        if self.q == 1.0:
            return l / (2.0 * self.c)
        # asinh(z), z = (1-q) sinh(|l|/2) / k >= 0, from log z (k may underflow):
        # log z = log(1-q) + |l|/2 + log(1 - e^{-|l|}) - log 2 - log k
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            logz = (math.log1p(-self.q) + a / 2.0 + np.log(-np.expm1(-a)) - math.log(2.0)
                    - self.log_k)
            big = logz > 20.0  # asinh(z) = log(2z) + log1p(1/(4 z^2)) + O(z^-4)
            ash = np.where(big, logz + math.log(2.0) + np.log1p(np.exp(-2.0 * logz) / 4.0),
                           np.arcsinh(np.exp(np.minimum(logz, 20.0))))
            x = (a / 2.0 + ash) / self.c
        x = np.where(np.isinf(a), np.inf, x)
        return np.where(l < 0, -x, x)

    def tail(self, l, dist, upper, strict):
        l = as_array(l)
        x = self.preimage(l)
        shift = self.c if dist == "P" else -self.c
        q = self.q
        if upper:  # dist(X > x)
            out = (1.0 - q) * special.ndtr(-x) + q * special.ndtr(shift - x)
        else:  # dist(X < x)
            out = (1.0 - q) * special.ndtr(x) + q * special.ndtr(x - shift)
        return out

    def loss_range(self, tail: float) -> tuple[float, float]:
        """(-L(c + z), L(c + z)), z = Phi^{-1}(1 - tail): P(X > c + z) <= tail, and
        Q(X < -c - z) <= tail, P(X < -c - z) <= Q(X < -c - z)."""
        z = -float(special.ndtri(tail))
        hi = float(self.loss(np.array(self.c + z)))
        return -hi, hi


def antipodal_pair(mechanism: Gaussian, rate: float) -> AntipodalGaussianPair:
    """The antipodal pair of one Poisson-subsampled step of ``mechanism`` under hybrid
    substitution (module docstring).

    Args:
        mechanism: ``Gaussian(sigma, sensitivity=C)``, C the sensitivity to inserting or
            removing one batch element (C for gradients clipped to C).
        rate: the Poisson sampling rate q, in (0, 1].

    Returns:
        :class:`AntipodalGaussianPair` with ``c = C / sigma``.

    Raises:
        ValueError: rate outside (0, 1].
    """
    return AntipodalGaussianPair(rate, mechanism.sensitivity / mechanism.sigma)


class PoissonSubstitutionAnalysis(RunAnalysis):
    """T steps of the Poisson-subsampled Gaussian under hybrid substitution (module docstring):
    upper bound from the pessimistic PLD of the antipodal pair composed T times, lower bound
    from its optimistic PLD (the pair is realised by neighbouring datasets).

    Args:
        mechanism: the Gaussian mechanism (insertion/removal sensitivity C).
        rate: Poisson rate q in (0, 1].
        steps: number of steps T.
        h: the PLD grid step (None: :func:`auto_grid`).

    Raises:
        NotApplicable: more steps than the FFT composition supports.
        ValueError: bad rate or h.
    """

    def __init__(self, mechanism: Gaussian, rate: float, steps: int,
                 h: float | None = None) -> None:
        check_steps(steps)
        self.mechanism, self.rate, self.steps = mechanism, float(rate), int(steps)
        self.pair = antipodal_pair(mechanism, rate)
        if h is not None and not h > 0:
            raise ValueError(f"h must be > 0, got {h}")
        self.h = h
        self.up_src = f"{SOURCE}; {PESSIMISTIC_SOURCE}"
        self.lo_src = f"{LOWER_SOURCE}; {OPTIMISTIC_SOURCE}"

    #: whether the pair dominates the run (False: only its lower side is certified)
    dominating = True

    def sides(self, h: float | None = None) -> tuple[PLD | None, PLD]:
        """(pessimistic or None, optimistic) T-fold compositions of the pair on step ``h``
        (None: :meth:`grid_step`); the pessimistic side only where :attr:`dominating`.

        Raises:
            ValueError: ``h`` not positive.
        """
        h = self.auto_step() if h is None else float(h)
        if not h > 0:
            raise ValueError(f"h must be > 0, got {h}")
        memo = self.__dict__.setdefault("_sides_at", {})
        if h not in memo:
            T = self.steps
            tail = min(1e-16, 1e-13 / T)
            up, lo = discretise(self.pair, h, tail, pessimistic=self.dominating)
            assert lo is not None  # discretise returns the optimistic side by default
            memo[h] = (None if up is None else up.self_compose(T), lo.self_compose(T))
        return memo[h]

    def auto_step(self) -> float:
        """The grid step for this run (``h``, else :func:`auto_grid` of the pair)."""
        return self.h if self.h is not None else auto_grid(self.pair, self.steps)

    # -- capabilities (privamp.accountants.registry) -----------------------------------------
    def grid_step(self) -> float:
        """The automatic grid step for this run (:meth:`auto_step`)."""
        return self.auto_step()

    def pld(self, h: float | None = None) -> TwoSidedPLD:
        """The run's PLD on step ``h`` (None: :meth:`grid_step`): one symmetric direction,
        (pessimistic, optimistic) T-fold compositions of the antipodal pair.

        Raises:
            NotApplicable: the pair is not known to dominate (lower-only analysis).
            ValueError: ``h`` not positive.
        """
        up, lo = self.sides(h)
        if up is None:
            raise NotApplicable("the antipodal pair at Delta/2 is only a lower side under "
                                "plain substitution (no dominating PLD to compose)")
        return TwoSidedPLD([(up, lo)])

    def renyi_floor(self, alpha: np.ndarray) -> np.ndarray:
        """Certified lower bounds on the run's Rényi DP at orders ``alpha``: the optimistic
        side belongs to a realised pair of neighbours (:func:`renyi_floor`), and
        ``2 TV^2 <= KL <= D_alpha`` (Pinsker) with TV >= its delta(0)."""
        lo = self.sides()[1]
        tv = float(lo.delta(np.zeros(1))[0])
        return np.maximum(renyi_floor(lo, np.asarray(alpha, dtype=float)),
                          2.0 * max(tv, 0.0) ** 2)

    def _query(self, name: str, values: np.ndarray) -> BoundPair:
        """Both sides' ``name`` ("delta" or "epsilon") at ``values``; the lower never above
        the upper."""
        x = np.asarray(values, dtype=float)
        up, lo = self.sides()
        low = getattr(lo, name)(x)
        if up is None:
            return None, Bound(shaped(low, x), "lower", self.lo_src)
        u = getattr(up, name)(x)
        return (Bound(shaped(u, x), "upper", self.up_src),
                Bound(shaped(np.minimum(low, u), x), "lower", self.lo_src))

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._query("delta", epsilon)

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._query("epsilon", delta)


class SubstitutionLowerAnalysis(PoissonSubstitutionAnalysis):
    """Plain :class:`~privamp.Substitution`, sensitivity Delta: only the certified *lower*
    side of the antipodal pair at ``C = Delta/2`` (gradients clipped to Delta/2, a record at
    ``+C u`` replaced by one at ``-C u``: substitution sensitivity Delta, realised).  Not an
    upper bound there (module docstring).

    Args:
        mechanism: ``Gaussian(sigma, sensitivity=Delta)``.
        rate: Poisson rate q in (0, 1].
        steps: number of steps T.
        h: the PLD grid step (None: :func:`auto_grid`).

    Raises:
        NotApplicable: more steps than the FFT composition supports.
        ValueError: bad rate or h.
    """

    dominating = False
    # no dominating PLD: neither offered to compositions (privamp.accountants.registry.offers)
    pld = RunAnalysis.pld
    grid_step = RunAnalysis.grid_step

    def __init__(self, mechanism: Gaussian, rate: float, steps: int,
                 h: float | None = None) -> None:
        super().__init__(replace(mechanism, sensitivity=mechanism.sensitivity / 2.0), rate,
                         steps, h)
        self.mechanism = mechanism
        self.lo_src = f"{LOWER_SOURCE_PLAIN}; {OPTIMISTIC_SOURCE}"


def _gaussian_poisson_one_record(run, relation: type[Relation]) -> bool:
    return (isinstance(run.mechanism, Gaussian) and isinstance(run.scheme, Poisson)
            and type(run.relation) is relation and run.relation.group == 1
            and run.scheme.rate > 0.0)


def _applies(run) -> bool:
    return _gaussian_poisson_one_record(run, HybridSubstitution)


@run_accountant(
    "pld",
    applies=_applies,
    description="Poisson-subsampled Gaussian under hybrid substitution: the antipodal "
    "dominating pair (1-q)N(0)+qN(+-C), composed with PLDs (tight: the pair is realised)",
    capabilities=("pld", "grid_step", "renyi_floor"),
)
def _build(run) -> PoissonSubstitutionAnalysis:
    if not _applies(run):
        raise NotApplicable("antipodal pair: Gaussian, Poisson, hybrid substitution of one "
                            "record")
    return PoissonSubstitutionAnalysis(run.mechanism, run.scheme.rate, run.steps)


def _plain_applies(run) -> bool:
    return _gaussian_poisson_one_record(run, Substitution)


@run_accountant(
    "antipodal-lower",
    applies=_plain_applies,
    description="lower bounds for Poisson-subsampled Gaussian under plain substitution: the "
    "antipodal pair at Delta/2, realised by gradients clipped to Delta/2 (no upper bound)",
    capabilities=("renyi_floor",),
)
def _build_plain(run) -> SubstitutionLowerAnalysis:
    if not _plain_applies(run):
        raise NotApplicable("antipodal lower side: Gaussian, Poisson, substitution of one "
                            "record")
    return SubstitutionLowerAnalysis(run.mechanism, run.scheme.rate, run.steps)
