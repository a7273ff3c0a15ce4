"""Matrix mechanisms under Poisson sampling: a certified interval for
``Training(MatrixMechanism(C, sigma), Poisson(q), steps=T)`` (issue 32).

The release is ``y = C x + sigma clip z`` (C lower-triangular T x T, z ~ N(0, I), x_t the sum
of the clipped gradients of the records Poisson-sampled at step t, chosen adaptively from the
previous outputs).  This module gives

* **Upper bound (always applies): noise dominance.**  With ``n >= ||C||_2`` and
  ``sigma' = sigma / n``, ``y`` is a post-processing of DP-SGD at noise multiplier ``sigma'``,
  ``u = x + sigma' clip z'``: ``y = C u + e`` with ``e ~ N(0, clip^2 (sigma^2 I - sigma'^2 C
  C^T))``, independent of the data, a covariance that is positive semi-definite because
  ``sigma' ||C||_2 <= sigma``.  Adaptivity survives the reduction: C is lower-triangular, so
  ``y_{<t}`` is a function of ``u_{<t}`` and ``e_{<t}`` (whose law is the leading principal
  block of e's covariance, also PSD), and the post-processor samples ``e_t`` given ``e_{<t}``
  as it goes; the query of step t is then a randomised function of ``u_{<t}``, which the
  DP-SGD accountants allow (their dominating pairs hold for every adaptive adversary).  So
  privamp's Poisson PLD accountant (:class:`privamp.accountants.poisson.PLDAnalysis`,
  add/remove and zero-out) or Balle et al.'s Poisson-substitution PLD
  (:class:`privamp.theorems.balle2018.pld.FixedBatchPLDAnalysis`, substitution) at
  ``Gaussian(sigma' clip, clip)`` (``2 clip`` under substitution: the two records'
  gradients differ by up to ``2 clip``), rate q and T steps bounds the run; only its *upper*
  side is used (its lower side belongs to DP-SGD at sigma', not to the matrix mechanism).
  ``n``: for a diagonal C (C = I, any 1-band strategy, T = 1) exactly ``max |C_tt|`` (the
  spectral norm of a diagonal matrix, no rounding), so C = I gives privamp's Poisson answer
  exactly; otherwise :meth:`MatrixMechanism.operator_norm_bound` (certified).
* **Lower bound: realised pairs.**  D holds a record whose clipped gradient is ``clip u``
  (u a fixed unit vector) at every step it is sampled, the other records contribute 0 (or
  anything fixed); D' lacks it (add/remove), has it nulled (zero-out) or replaced by a record
  of gradient 0 (substitution: a valid but weaker witness than gradient ``-clip u``, whose
  pair is not of the sum statistic's mixture-vs-Gaussian form).  With theta_t ~ Bernoulli(q)
  i.i.d. the sampling of the record, the projection of y on u is
  ``clip C theta + sigma clip z`` under D and ``sigma clip z`` under D'.

  - *Sum statistic.*  For any fixed vector w, ``S = w^T y_u`` is a post-processing, so any
    threshold test on it lower-bounds the run's hockey-stick divergence.  With
    ``w ~= C^{-T} 1`` (a triangular solve) and ``a = C^T w`` (~= 1),
    ``S / (sigma clip ||w||) = N(sum_t a_t theta_t / (sigma ||w||), 1)``.  A threshold test
    ``P(Y > x) - e^eps Q(Y > x)`` only grows when the components' means grow, so replacing
    ``sum_t a_t theta_t`` by ``a_lo n`` with ``n = sum_t theta_t ~ Binom(T, q)`` and
    ``0 < a_lo <= min_t a_t`` (certified with the standard dot-product error bound
    ``gamma_k |C|^T |w|``), and ``||w||`` by an upper bound (relative ``(T + 4) 2^-53``), keeps
    it a lower bound: this is the binomial-mixture-vs-Gaussian pair of
    :func:`privamp.theorems.poisson_groups.sum_statistic_delta` (k = 1) at shift
    ``s = sqrt(T) a_lo / (sigma ||w||_up)``, certified numerics there.
  - *Alternating witness.*  With gradient ``(-1)^t clip u`` (a fixed function of the step)
    and ``D = diag((-1)^t)``, ``D y_u = clip (D C D) theta + sigma clip D z`` with
    ``D z ~ z``: the sum statistic of the strategy ``D C D`` (Toeplitz coefficients
    ``(-1)^k c_k``), which helps strategies with alternating signs (e.g. ``[1, -0.9]``).
    The larger of the two shifts is used (the pair at a larger shift dominates: rescale and
    add noise).
  - *Diagonal C.*  The run is DP-SGD with step t at noise multiplier ``sigma / |C_tt|``;
    keeping only the steps with ``|C_tt| >= v`` and adding noise to bring each to
    ``sigma / v`` (post-processing) leaves the realised pair of ``k_v`` steps of DP-SGD at
    ``sigma / v``, whose lower side privamp's Poisson accountant computes (realised by the
    same record).  v = max |C_tt| and v = min |C_tt| (k = T) are tried; when the diagonal
    is constant this is the Poisson accountant's own lower side.  Under substitution with
    q < 1 the witness is the zero-out pair (replacement gradient 0, shift ``clip``): the
    Poisson-substitution pair at ``2 clip`` (a mixture vs N(0)) needs a record at 0 and one at
    distance 2 clip, which clipped gradients cannot realise.

  The largest certified lower value is kept.

**MMCC (Choquette-Choo, Ganesh, Steinke, Thakurta, "Privacy amplification for matrix
mechanisms", ICLR 2024, arXiv:2310.15526) is not implemented here**: its near-tight upper
bound (conditional composition of mixture-of-Gaussians PLDs with high-probability caps on the
posterior sampling probabilities) could not be stated and certified from a source within
this task; docs/mmcc.md lists what is missing.  Noise dominance is far from tight for
strategies with ``||C||_2 > 1`` (the factor sigma/||C||_2 discards amplification's benefit
from correlation), the interval is wide there.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from scipy import linalg

from ..accountants.poisson import PLDAnalysis, check_steps
from ..errors import NotApplicable
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.matrix import MatrixMechanism
from ..numerics.arrays import shaped
from ..pld.grid import PLD
from ..pld.two_sided import TwoSidedPLD
from ..results import Bound
from ..sampling.relations import AddRemove, Substitution, ZeroOut
from ..sampling.schemes import Poisson
from .balle2018.pld import FixedBatchPLDAnalysis
from .poisson_groups import sum_statistic_delta, sum_statistic_epsilon
from .registry import BoundPair, RunAnalysis, run_accountant

__all__ = [
    "MatrixPoissonAnalysis",
    "strategy_norm",
    "sum_statistic_shift",
    "SRC_DOMINANCE",
    "SRC_SUM_STAT",
    "SRC_DIAGONAL",
    "SRC_ALTERNATE",
    "MAX_SUM_STEPS",
]

SRC_DOMINANCE = ("noise dominance: the matrix mechanism C x + sigma z is a post-processing of "
                 "DP-SGD at noise multiplier sigma/n, n = {norm:.6g} >= ||C||_2 (certified); "
                 "upper side of ")
SRC_SUM_STAT = ("realised pair (gradient +clip u at every sampled step vs absent): threshold "
                "test on the statistic (C^-T 1)^T y = Binom(T, q) + N(0, sigma^2 "
                "||C^-T 1||^2), certified in log space (privamp.theorems.poisson_groups)")
SRC_ALTERNATE = ("; witness gradient (-1)^t clip u (the sum statistic of D C D, "
                 "D = diag((-1)^t))")
SRC_DIAGONAL = ("realised pair of a diagonal strategy: {k} steps of DP-SGD at noise multiplier "
                "{sigma:.6g} (post-processing of the run); lower side of ")

#: above this many steps the sum statistic is not computed (a length-T triangular solve)
MAX_SUM_STEPS = 20_000_000

_U = 2.0 ** -53


def _gamma(n: int) -> float:
    """gamma_n = n u / (1 - n u): the relative error bound of an n-term dot product."""
    return n * _U / (1.0 - n * _U)


def strategy_norm(mech: MatrixMechanism, steps: int) -> tuple[float, np.ndarray | None]:
    """A certified upper bound on ``||C||_2`` for the T x T strategy, and its diagonal when
    C is diagonal (else None).

    Args:
        mech: the matrix mechanism.
        steps: T >= 1.

    Returns:
        (norm bound, diagonal or None): for a diagonal C exactly ``max |C_tt|``; else
        :meth:`MatrixMechanism.operator_norm_bound`.
    """
    steps = mech.check_steps(steps)
    if mech.toeplitz and (mech.bands == 1 or steps == 1):
        diag = np.full(steps, abs(float(mech.strategy[0])))
        return float(diag[0]), diag
    if not mech.toeplitz and not np.any(np.tril(mech.strategy, -1)):
        diag = np.abs(np.diag(mech.strategy)).astype(float)
        return float(diag.max()), diag
    return float(mech.operator_norm_bound(steps)), None


def _toeplitz_solve(c: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(w ~= C^-T 1, C^T w computed, |C|^T |w| computed) for a banded Toeplitz strategy."""
    b = min(c.size, steps)
    if b == 1:
        w = np.full(steps, 1.0 / c[0])
    else:
        ab = np.zeros((b, steps))
        for k in range(b):
            ab[b - 1 - k, k:] = c[k]  # row b-1-k holds the k-th upper diagonal of C^T
        w = linalg.solve_banded((0, b - 1), ab, np.ones(steps), check_finite=False)
    a = np.zeros(steps)
    m = np.zeros(steps)
    for k in range(b):  # (C^T w)_i = sum_k c_k w_{i+k}
        a[: steps - k] += c[k] * w[k:]
        m[: steps - k] += abs(c[k]) * np.abs(w[k:])
    return w, a, m


def sum_statistic_shift(mech: MatrixMechanism, steps: int,
                        alternate: bool = False) -> float | None:
    """The certified shift ``s = sqrt(T) a_lo / (sigma ||w||_up)`` of the sum statistic
    (module docstring) for ``w ~= C^-T 1``: the binomial mixture it defines lower-bounds the
    realised pair's profile through :func:`~privamp.theorems.poisson_groups.sum_statistic_delta`
    with k = 1.

    Args:
        mech: the matrix mechanism.
        steps: T >= 1.
        alternate: the witness's gradient is ``(-1)^t clip u`` instead of ``clip u``: with
            ``D = diag((-1)^t)``, ``D y = (D C D) theta + sigma clip D z`` (D z ~ z), the sum
            statistic of the strategy ``D C D`` (Toeplitz coefficients ``(-1)^k c_k``).

    Returns:
        s > 0, or None when no certified positive shift was found (``C^T w`` not certified
        positive, ``w`` not finite, or T above :data:`MAX_SUM_STEPS`).
    """
    steps = mech.check_steps(steps)
    if steps > MAX_SUM_STEPS:
        return None
    # w need not be accurate: any w defines a statistic; a_lo and ||w||_up are certified for
    # the w actually computed
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if mech.toeplitz:
                c = np.asarray(mech.strategy, dtype=float)
                if alternate:
                    c = c * (-1.0) ** np.arange(c.size)
                w, a, m = _toeplitz_solve(c, steps)
                terms = min(mech.bands, steps)
            else:
                c = np.asarray(mech.strategy, dtype=float)
                if alternate:
                    sign = (-1.0) ** np.arange(steps)
                    c = sign[:, None] * c * sign[None, :]  # exact: sign flips
                w = linalg.solve_triangular(c, np.ones(steps), trans="T", lower=True,
                                            check_finite=False)
                a, m = c.T @ w, np.abs(c).T @ np.abs(w)
                terms = steps
        except (linalg.LinAlgError, ValueError):
            return None
        if not (np.all(np.isfinite(w)) and np.all(np.isfinite(m))):
            return None
        # |fl(C^T w) - C^T w| <= gamma_k |C|^T |w|; fl(|C|^T |w|) itself within gamma_k
        err = _gamma(terms + 2) * m * (1.0 + _gamma(terms + 2))
        a_lo = float(np.min(a - err)) * (1.0 - 4 * _U)
        norm_up = float(np.sqrt(np.dot(w, w))) * (1.0 + _gamma(steps + 4))
    if not (a_lo > 0.0 and math.isfinite(norm_up) and norm_up > 0.0):
        return None
    s = math.sqrt(steps) * a_lo / (mech.sigma * norm_up) * (1.0 - 1e-12)
    return s if math.isfinite(s) and s > 0.0 else None


def _dpsgd(multiplier: float, clip: float, rate: float, steps: int, relation) -> RunAnalysis:
    """privamp's PLD analysis of DP-SGD at noise multiplier ``multiplier`` (noise standard
    deviation ``multiplier * clip``), Poisson(rate), ``steps`` steps: the query's sensitivity
    is ``clip`` under add/remove and zero-out, ``2 clip`` under substitution (privamp's
    convention: the distance between the two records' contributions)."""
    sens = (2.0 if isinstance(relation, Substitution) else 1.0) * clip
    try:
        mech = Gaussian(multiplier * clip, sens)
    except ValueError as exc:
        raise NotApplicable(f"DP-SGD at noise multiplier {multiplier:g}: {exc}") from exc
    if isinstance(relation, Substitution):
        return FixedBatchPLDAnalysis(mech, Poisson(rate), Substitution(), steps)
    if mech.shift(1) > 25.0:
        raise NotApplicable(f"the Poisson PLD needs a Gaussian shift <= 25, got "
                            f"{mech.shift(1):.3g} (clip / (sigma / ||C||_2))")
    return PLDAnalysis(mech, rate, steps)


class MatrixPoissonAnalysis(RunAnalysis):
    """Bounds on a matrix mechanism's run under Poisson sampling (module docstring): upper by
    noise dominance, lower by the sum statistic and, for diagonal C, DP-SGD's realised pair.

    Args:
        mech: the matrix mechanism.
        rate: the Poisson rate q in (0, 1].
        steps: T.
        relation: AddRemove, ZeroOut or Substitution (group 1).

    Raises:
        NotApplicable: more steps than the PLD accountant composes.  (A dominating DP-SGD run
            outside the PLD's range leaves the lower bounds only.)
    """

    def __init__(self, mech: MatrixMechanism, rate: float, steps: int, relation) -> None:
        check_steps(steps)
        self.mech, self.rate, self.steps, self.relation = mech, float(rate), int(steps), relation
        self.norm, diag = strategy_norm(mech, steps)
        #: the dominating DP-SGD analysis, or why there is none (then lower bounds only)
        self.dominating: RunAnalysis | None = None
        self.refusal: NotApplicable | None = None
        try:
            self.dominating = _dpsgd(mech.sigma / self.norm, mech.clip, rate, steps, relation)
        except NotApplicable as exc:
            self.refusal = exc
        self.src_up = SRC_DOMINANCE.format(norm=self.norm)
        #: the diagonal is constant: the run *is* DP-SGD at sigma / |c|, both sides pass --
        #: except under substitution with q < 1, where the Poisson-substitution lower pair at
        #: 2 clip (a mixture vs N(0)) is not realised by gradients of norm <= clip (it needs
        #: one record at 0, the other at distance 2 clip): the witness is then the zero-out
        #: pair at clip (the replacement's gradient is 0)
        sub_low = isinstance(relation, Substitution) and self.rate < 1.0
        lower_rel = ZeroOut() if sub_low else relation
        self.exact = diag is not None and bool(np.all(diag == diag[0])) and not sub_low
        self.diagonal: list[tuple[str, RunAnalysis]] = []
        if diag is not None and not self.exact:
            for v in dict.fromkeys((float(diag.max()), float(diag.min()))):
                k = int(np.sum(diag >= v))
                try:
                    an = _dpsgd(mech.sigma / v, mech.clip, rate, k, lower_rel)
                except NotApplicable:
                    continue
                self.diagonal.append((SRC_DIAGONAL.format(k=k, sigma=mech.sigma / v), an))
        shifts = [(sum_statistic_shift(mech, steps, alt), alt) for alt in (False, True)]
        # the statistic's pair at a larger shift dominates the one at a smaller (rescale and
        # add noise): keep the larger
        best: tuple[float | None, bool] = max(
            ((s, a) for s, a in shifts if s is not None), default=(None, False))
        self.shift, alt = best
        self.src_sum = SRC_SUM_STAT + (SRC_ALTERNATE if alt else "")

    def _lower(self, which: str, x: np.ndarray, lo_dom: Bound | None
               ) -> tuple[np.ndarray | None, str]:
        flat = np.ravel(x)
        best: np.ndarray | None = None
        srcs: list[str] = []

        def take(vals: np.ndarray, src: str) -> None:
            nonlocal best
            if best is None or np.any(vals > best):
                srcs.append(src)
            best = vals if best is None else np.maximum(best, vals)

        if self.exact and lo_dom is not None:
            take(np.ravel(np.asarray(lo_dom.value, dtype=float)),
                 "the run is DP-SGD (diagonal strategy): " + lo_dom.source)
        for src, an in self.diagonal:
            _, lo = getattr(an, which)(x)
            if lo is not None:
                take(np.ravel(np.asarray(lo.value, dtype=float)), src + lo.source)
        if self.shift is not None:
            if which == "epsilon":
                vals = np.array([sum_statistic_epsilon(float(d), 1, self.steps, self.rate,
                                                       self.shift) for d in flat])
            else:
                vals = np.array([sum_statistic_delta(float(e), 1, self.steps, self.rate,
                                                     self.shift) for e in flat])
            take(vals, self.src_sum)
        return best, "; ".join(srcs)

    def _query(self, which: str, x: Any) -> BoundPair:
        x = np.asarray(x, dtype=float)
        up = lo_dom = None
        if self.dominating is not None:
            up, lo_dom = getattr(self.dominating, which)(x)
        upper = None if up is None else Bound(up.value, "upper", self.src_up + up.source)
        lo, src = self._lower(which, x, lo_dom)
        if lo is None:
            return upper, None
        lo = np.maximum(lo, 0.0)
        if upper is not None:
            lo = np.minimum(lo, np.ravel(np.asarray(upper.value, dtype=float)))
        return upper, Bound(shaped(lo, x), "lower", src)

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._query("epsilon", delta)

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._query("delta", epsilon)

    # -- capabilities --------------------------------------------------------------------
    def _dominating(self) -> RunAnalysis:
        if self.dominating is None:
            assert self.refusal is not None
            raise NotApplicable(f"no dominating DP-SGD PLD: {self.refusal}")
        return self.dominating

    def grid_step(self) -> float:
        """The dominating DP-SGD run's grid step."""
        return float(self._dominating().grid_step())

    def pld(self, h: float | None = None) -> TwoSidedPLD:
        """The dominating DP-SGD run's PLD: its pessimistic sides dominate the matrix
        mechanism; its optimistic sides are kept only when the run is DP-SGD (a constant
        diagonal strategy), else replaced by the identity pair's PLD (a unit mass at loss 0,
        P = Q): every pair dominates it (``H_gamma(P || Q) >= max(0, 1 - gamma)``, its
        profile) and domination survives composition, so composed with another phase's
        realised pair on the same datasets it keeps that phase's lower bound (the zero PLD
        would erase it).

        Raises:
            NotApplicable: as the dominating analysis.
        """
        two = self._dominating().pld(h)
        if self.exact:
            return two
        return TwoSidedPLD([(p, PLD(p.h, 0, np.ones(1), 0.0, "optimistic"))
                            for p, _ in two.directions])


def _applies(run) -> bool:
    rel = run.relation
    return (isinstance(run.mechanism, MatrixMechanism) and isinstance(run.scheme, Poisson)
            and run.scheme.rate > 0 and isinstance(rel, (AddRemove, ZeroOut, Substitution))
            and rel.group == 1)


@run_accountant(
    "matrix-poisson",
    applies=_applies,
    description="matrix mechanisms under Poisson sampling: noise dominance (DP-SGD at "
    "sigma/||C||_2, upper) and realised pairs (sum statistic C^-T 1, diagonal strategies: "
    "lower); MMCC (arXiv 2310.15526) not yet",
    capabilities=("pld", "grid_step"),
)
def _build(run) -> MatrixPoissonAnalysis:
    return MatrixPoissonAnalysis(run.mechanism, run.scheme.rate, int(run.steps), run.relation)

