"""Exact composition of Poisson-subsampled randomized response (issue 28: the grid PLD of
this two-atom pair needed ~1M-point windows and ~1.3 s for T = 1000).

One step of binary randomized response (truthful with probability theta) under Poisson
sampling at rate q, add/remove or zero-out, has the dominating pairs (Zhu, Dong, Wang 2022,
arXiv:2106.08567) remove = (P', Q) and add = (Q, P'), P' = q Bern(theta) + (1 - q)
Bern(1 - theta), Q = Bern(1 - theta); both are realised (the record sets the bit, the other
records do not), so their profiles are the run's profile, not only bounds on it.  A pair
with two outcomes composed T times is again a pair on T + 1 outcomes: k, the number of
steps with outcome 0, is sufficient, with laws Binom(T, P(0)) and Binom(T, Q(0)), so

    delta(eps) = sum_k [P_k - e^eps Q_k]_+,
    P_k = C(T, k) p0^k p1^(T-k),  Q_k = C(T, k) q0^k q1^(T-k).

Each term is P_k (1 - e^{d_k}), d_k = eps - (k a + (T - k) b), a = log(p0 / q0),
b = log(p1 / q1) (the binomial coefficients cancel).  Float error is bounded term by term
and rounded to the safe side: log P_k carries at most 8 u (|lgamma(T+1)| + |lgamma(k+1)| +
|lgamma(T-k+1)| + k (|log p0| + 1) + (T-k) (|log p1| + 1) + 1) (a few ulp per operation,
doubled), d_k at most 8 u (|eps| + k (|a| + |log p0| + |log q0| + 2) + (T - k)(|b| +
|log p1| + |log q1| + 2)); the upper value takes every term at d_k - that and P_k raised,
the lower at d_k + that and P_k lowered, then the sums are rounded by a relative
(T + 4) u.  Only the k within a window around the mode are summed; the mass outside
(log-concave binomial: bounded by a geometric series from the window's ends) is added to the
upper value.  Below the normal range (values under 2^-1022) a float carries an absolute
error rather than a relative one: every term and the outside mass are widened by 4 x 2^-1074
(the smallest subnormal) each, outwards, unless epsilon exceeds every loss of the run (with
its error), where delta is exactly 0.  Epsilon is found on the exact piecewise form and
certified by evaluating these bounds at it (nudged outwards until they certify).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from ..accountants.poisson import PLDAnalysis, check_steps
from ..errors import NotApplicable
from ..mechanisms.randomized_response import RandomizedResponse
from ..numerics.arrays import shaped
from ..pld.two_sided import TwoSidedPLD
from ..results import Bound
from ..sampling.relations import AddRemove, ZeroOut
from ..sampling.schemes import Poisson
from .registry import BoundPair, RunAnalysis, run_accountant

__all__ = ["BinaryExactAnalysis", "binary_delta_bounds", "SRC_EXACT"]

SRC_EXACT = ("exact composition of Poisson-subsampled randomized response: binomial "
             "sufficient statistic of the remove and add pairs (Zhu, Dong, Wang 2022 "
             "dominating pairs, realised), float error bounded term by term")

_U = 2.0 ** -53
_TINY = 2.0 ** -1074  # the smallest subnormal: absolute rounding below 2^-1022


def _log(x: float) -> float:
    """log(x), -inf at 0 (an outcome of probability 0)."""
    return math.log(x) if x > 0 else -math.inf


def _times(k: np.ndarray, x: float) -> np.ndarray:
    """k * x with 0 * (+-inf) = 0 (no outcome of probability 0 drawn)."""
    if math.isinf(x):
        return np.where(k == 0, 0.0, np.where(k > 0, x, -x))
    return k * x


def _finite(x: float) -> float:
    """|x| + 1, or 0 for an infinite x (a probability 0: its terms are exactly 0)."""
    return abs(x) + 1.0 if math.isfinite(x) else 0.0


class _Direction:
    """One ordered pair (P, Q) on two outcomes, composed T times (module docstring)."""

    def __init__(self, lp: tuple[float, float], lq: tuple[float, float], steps: int) -> None:
        self.T = T = int(steps)
        lp0, lp1 = lp
        lq0, lq1 = lq
        p0 = math.exp(lp0)
        # window around the mode of Binom(T, p0): widened until the mass outside is negligible
        mode = min(T, max(0, math.floor((T + 1) * p0)))
        sd = math.sqrt(T * p0 * (1.0 - p0))
        half = int(40.0 * sd + 64)
        while True:
            k = np.arange(max(0, mode - half), min(T, mode + half) + 1, dtype=float)
            Tk = T - k
            glT = float(gammaln(T + 1.0))
            glk, glTk = gammaln(k + 1.0), gammaln(Tk + 1.0)
            lP = glT - glk - glTk + _times(k, lp0) + _times(Tk, lp1)
            top = float(np.max(lP))
            out = self._outside(k, lP, lp0, lp1)
            if out <= math.exp(top - 700.0) or half > T:
                break
            half *= 2
        self.k, self.lP, self.out = k, lP, out
        err = 8.0 * _U * (glT + np.abs(glk) + np.abs(glTk) + k * _finite(lp0)
                          + Tk * _finite(lp1) + 1.0)
        self.errP = np.where(np.isfinite(lP), err, 0.0)  # (P_k = 0 exactly where -inf)
        a, b = lp0 - lq0, lp1 - lq1  # (+-inf where an outcome has Q or P probability 0)
        with np.errstate(invalid="ignore"):  # inf - inf only where P_k = 0: no term there
            L = _times(k, a) + _times(Tk, b)
        self.L = np.where(np.isnan(L), -np.inf, L)
        def size(*vs: float) -> float:  # (an infinite loss is exact: its terms are 0 or P)
            return sum(abs(v) for v in vs if math.isfinite(v)) + 2.0

        self.errL = 8.0 * _U * (k * size(a, lp0, lq0) + Tk * size(b, lp1, lq1))
        self.sum_rel = (len(k) + 4.0) * _U
        # the largest loss of the run (L is linear in k: at k = 0 or k = T) with its error;
        # above it every term, inside the window or not, is exactly 0
        ends = np.array([0.0, float(T)])
        top_l = _times(ends, a) + _times(T - ends, b)
        self.top_loss = float(np.max(top_l + 8.0 * _U * (
            ends * size(a, lp0, lq0) + (T - ends) * size(b, lp1, lq1))))

    def _outside(self, k: np.ndarray, lP: np.ndarray, lp0: float, lp1: float) -> float:
        """A bound on the P-mass of the k outside the window: log-concavity makes the ratio
        P_{k+1} / P_k decrease in k, so beyond each end the masses fall at least
        geometrically with the end's ratio (the ratio is recomputed outside, in closed form)."""
        T, out = self.T, 0.0
        if k[-1] < T:  # above: ratio r = (T - k) / (k + 1) p0 / p1 at the last k
            r = math.exp(math.log(T - k[-1]) - math.log(k[-1] + 1.0) + lp0 - lp1)
            out += math.inf if r >= 1 else math.exp(float(lP[-1])) * r / (1.0 - r) * 1.01
        if k[0] > 0:  # below: ratio P_{k-1} / P_k = k / (T - k + 1) p1 / p0
            r = math.exp(math.log(k[0]) - math.log(T - k[0] + 1.0) + lp1 - lp0)
            out += math.inf if r >= 1 else math.exp(float(lP[0])) * r / (1.0 - r) * 1.01
        # (the products above round below 2^-1022 by an absolute subnormal or two each)
        return out + 8.0 * _TINY if out > 0 or k[0] > 0 or k[-1] < T else out

    def delta(self, eps: float) -> tuple[float, float]:
        """(upper, lower) bounds on delta(eps) of the T-fold pair."""
        with np.errstate(over="ignore", invalid="ignore"):
            d = eps - self.L
            hi_f = np.maximum(-np.expm1(d - (self.errL + 8.0 * _U * abs(eps))), 0.0)
            lo_f = np.maximum(-np.expm1(d + (self.errL + 8.0 * _U * abs(eps))), 0.0)
            hi = float(np.sum(np.exp(self.lP + self.errP) * hi_f * (1.0 + 4.0 * _U)))
            lo = float(np.sum(np.exp(self.lP - self.errP) * lo_f * (1.0 - 4.0 * _U)))
            # terms that may be positive: each rounds by up to ~3 subnormals absolutely
            n_hi = int(np.count_nonzero((hi_f > 0) & np.isfinite(self.lP)))
            n_lo = int(np.count_nonzero((lo_f > 0) & np.isfinite(self.lP)))
        if eps - 8.0 * _U * abs(eps) >= self.top_loss:  # above every loss: exactly 0
            return 0.0, 0.0
        hi = min(hi * (1.0 + self.sum_rel) + self.out + 4.0 * _TINY * (n_hi + 1), 1.0)
        lo = max(lo * (1.0 - self.sum_rel) - 4.0 * _TINY * (n_lo + 1), 0.0)
        return hi, lo

    def epsilon_guess(self, delta: float) -> float:
        """The epsilon at which the nominal profile crosses ``delta`` (exact piecewise form:
        on the segment above the j-th largest loss, delta = S_P - e^eps S_Q)."""
        fin = np.isfinite(self.L)
        p = np.exp(self.lP)
        inf_mass = float(np.sum(p[~fin & (self.L > 0)]))
        if inf_mass >= delta:
            return math.inf
        order = np.argsort(-self.L[fin])
        L = self.L[fin][order]
        if not len(L):
            return 0.0
        SP = np.cumsum(p[fin][order]) + inf_mass
        lSQ = np.logaddexp.accumulate(self.lP[fin][order] - L)  # log of the Q suffix sums
        # delta at eps = L[j] is SP[j] - e^{L[j]} SQ[j] (nondecreasing in j); the first j
        # above delta puts eps in (L[j], L[j - 1]], where the losses above eps are 0 .. j - 1
        with np.errstate(over="ignore"):
            at = SP - np.exp(L + lSQ)
        i = max(int(np.searchsorted(at, delta, side="right")) - 1, 0)
        if not SP[i] > delta:
            return 0.0
        return max(math.log(SP[i] - delta) - float(lSQ[i]), 0.0)


def binary_delta_bounds(lp: tuple[float, float], lq: tuple[float, float], steps: int,
                        eps: float) -> tuple[float, float]:
    """(upper, lower) bounds on delta(eps) of the T-fold composition of the pair with
    log-probabilities ``lp`` (under P) and ``lq`` (under Q) of its two outcomes.

    Args:
        lp: (log P(0), log P(1)), may be -inf.
        lq: (log Q(0), log Q(1)), may be -inf.
        steps: T >= 1.
        eps: epsilon.

    Returns:
        (upper, lower), certified (module docstring).
    """
    return _Direction(lp, lq, steps).delta(float(eps))


def _certify(d: _Direction, delta: float, guess: float, upper: bool) -> float:
    """The guess nudged outwards until the bounds certify it: upper, delta_hi(e) <= delta
    (then the run's epsilon is <= e); lower, delta_lo(e) > delta (then it is > e)."""
    if math.isinf(guess):
        return guess if upper or d.delta(1e300)[1] > delta else 0.0
    step = 1e-12 * max(guess, 1e-6)
    e = guess
    for _ in range(80):
        if upper:
            if d.delta(e)[0] <= delta:
                return e
            e += step
        else:
            if e <= 0.0:
                return 0.0
            if d.delta(e)[1] > delta:
                return e
            e = max(e - step, 0.0)
        step *= 4.0
    return math.inf if upper else 0.0


class BinaryExactAnalysis(RunAnalysis):
    """T steps of Poisson-subsampled randomized response, composed exactly (module
    docstring); its PLD (for :func:`privamp.compose`) is the Poisson PLD accountant's."""

    def __init__(self, mechanism: RandomizedResponse, rate: float, steps: int) -> None:
        check_steps(steps)
        self.mechanism, self.rate, self.steps = mechanism, float(rate), int(steps)
        t, q = mechanism.theta, self.rate
        lt, lu = math.log(t), math.log1p(-t) if t < 1 else -math.inf
        # P' = q Bern(theta) + (1 - q) Bern(1 - theta) on (outcome 0 = truth, outcome 1)
        lp = (_log(q * t + (1 - q) * (1 - t)), _log(q * (1 - t) + (1 - q) * t))
        lq = (lu, lt)
        self.dirs = [_Direction(lp, lq, steps), _Direction(lq, lp, steps)]
        self._pld: PLDAnalysis | None = None

    def _poisson(self) -> PLDAnalysis:
        if self._pld is None:
            self._pld = PLDAnalysis(self.mechanism, self.rate, self.steps)
        return self._pld

    def pld(self, h: float | None = None) -> TwoSidedPLD:
        """The Poisson PLD accountant's two-sided PLD of the run (for composition)."""
        return self._poisson().pld(h)

    def grid_step(self) -> float:
        return self._poisson().grid_step()

    def renyi_floor(self, alpha: np.ndarray) -> np.ndarray:
        """T times the exact Rényi divergence of one step (the larger direction), rounded
        down by a relative 1e-9 and by the float error of the log-sum (absolute, divided by
        alpha - 1: it dominates for tiny rates, where the divergence is ~q^2) (the
        divergences of the realised pairs are the run's)."""
        a = np.atleast_1d(np.asarray(alpha, dtype=float))
        out = np.zeros(a.shape)
        t, q = self.mechanism.theta, self.rate
        p = np.array([q * t + (1 - q) * (1 - t), q * (1 - t) + (1 - q) * t])
        qq = np.array([1 - t, t])
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            for x, y in ((p, qq), (qq, p)):
                keep = x > 0
                if np.any(keep & (y <= 0)):
                    return np.full(a.shape, np.inf)
                lx, ly = np.log(x[keep]), np.log(y[keep])
                terms = a[:, None] * lx[None, :] + (1 - a[:, None]) * ly[None, :]
                top = terms.max(axis=1)
                one = (top + np.log(np.exp(terms - top[:, None]).sum(axis=1))) / (a - 1)
                size = (a[:, None] * (np.abs(lx) + 1.0)[None, :]
                        + np.abs(1 - a)[:, None] * (np.abs(ly) + 1.0)[None, :]).max(axis=1)
                err = 16.0 * _U * (size + np.abs(top) + 1.0) / (a - 1) + 4.0 * _U * np.abs(one)
                out = np.maximum(out, self.steps * (one - err))
        return np.maximum(out * (1.0 - 1e-9) - 1e-300, 0.0)

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        e = np.asarray(epsilon, dtype=float)
        flat = np.ravel(e)
        vals = np.array([[d.delta(float(x)) for d in self.dirs] for x in flat])
        up, lo = vals[:, :, 0].max(axis=1), vals[:, :, 1].max(axis=1)
        if np.all(up == 0.0):  # above every finite loss (with its error): exactly 0
            z = Bound(shaped(up, e), "exact", SRC_EXACT)
            return z, z
        return (Bound(shaped(up, e), "upper", SRC_EXACT),
                Bound(shaped(np.minimum(lo, up), e), "lower", SRC_EXACT))

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        dl = np.asarray(delta, dtype=float)
        ups, los = [], []
        for x in np.ravel(dl):
            u, lo_ = [], []
            for d in self.dirs:
                g = d.epsilon_guess(float(x))
                u.append(_certify(d, float(x), g, True))
                lo_.append(_certify(d, float(x), g, False))
            ups.append(max(u))
            los.append(min(max(lo_), max(u)))
        return (Bound(shaped(np.array(ups), dl), "upper", SRC_EXACT),
                Bound(shaped(np.array(los), dl), "lower", SRC_EXACT))


def _applies(run) -> bool:
    return (isinstance(run.scheme, Poisson) and run.scheme.rate > 0
            and isinstance(run.mechanism, RandomizedResponse)
            and isinstance(run.relation, (AddRemove, ZeroOut)) and run.relation.group == 1)


@run_accountant(
    "pld",
    applies=_applies,
    description="Poisson-subsampled randomized response: exact binomial composition of the "
    "remove and add pairs, two-sided (float error bounded)",
    capabilities=("pld", "grid_step", "renyi_floor"),
)
def _build(run) -> BinaryExactAnalysis:
    if run.steps > 10**9:
        raise NotApplicable("steps above 1e9: the RDP accountant composes any number")
    return BinaryExactAnalysis(run.mechanism, run.scheme.rate, run.steps)
