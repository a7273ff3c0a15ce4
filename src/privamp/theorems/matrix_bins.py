"""Matrix mechanisms (BandMF, DP-FTRL) under balls-in-bins and random allocation: certified
upper bounds by noise dominance, certified lower bounds from realised pairs.

The run: ``Training(MatrixMechanism(C, sigma, clip), S, steps=T)`` with ``S`` one of
:class:`~privamp.BallsInBins` (a fresh bin every epoch), :class:`~privamp.PersistentBallsInBins`
(jax_privacy's ``BallsInBinsSampling``: one bin for the whole run) or
:class:`~privamp.BalancedIteration` (random allocation, k of B steps per epoch).  The release
is ``Y = C X + sigma clip Z`` (X: T x d, row t the sum of the clipped gradients of step t's
batch; Z standard Gaussian).  Balls-in-bins with BandMF was accounted only by Monte Carlo
(Choquette-Choo et al., ICLR 2025, arXiv 2410.06266; b-min-sep, arXiv 2602.09338); privamp
issue 32.  Everything below is in units of ``clip`` (one example moves a row of X by <= clip).

**Upper bound (noise dominance).**  Let ``L >= ||C||_2`` (certified:
:meth:`~privamp.MatrixMechanism.operator_norm_bound`; exactly ``max_t |C_tt|`` for a diagonal
C).  Let ``R = X + (sigma / L) clip Z'`` be DP-SGD's release at noise multiplier ``sigma / L``
and ``W ~ N(0, sigma^2 clip^2 (I - C C^T / L^2))`` (PSD), independent of everything.  Then
``C R + W`` has the law of ``Y``: the same mean ``C X`` and covariance
``sigma^2 clip^2 (C C^T / L^2 + I - C C^T / L^2)``.  Adaptivity: C is lower-triangular, so
``(C R + W)_{<t}`` is a function of ``R_{<t}`` and W; an adversary choosing ``x_t`` from
``Y_{<t}`` is an adversary of DP-SGD choosing ``x_t`` from ``R_{<t}`` with the shared random
seed W (independent of the data).  Conditionally on W the pair of runs of the matrix
mechanism is a post-processing of the pair of DP-SGD runs on the same neighbouring datasets
under the same sampling, and averaging over W preserves the bound (joint convexity of the
hockey-stick divergence).  So every certified upper bound privamp has for DP-SGD with
``Gaussian(sigma clip / L, clip)`` under the same scheme, steps and relation (any group) is
an upper bound for the run: the registered accountants are asked (:func:`dominating_run`).
For ``C = c I`` this is DP-SGD itself at ``sigma / |c|``: the answer is privamp's DP-SGD
answer, both sides.

Balls-in-bins also get the unamplified bound: conditionally on the participation pattern pi
(the bin j, steps ``S_j = {j, j + B, ...}``, for persistent bins; one step per epoch for fresh
ones) the release is a Gaussian mechanism whose shift has norm at most
``Delta_pi = sqrt(sum_{s,t in pi} |(C^T C)_{st}|)`` for every adaptive strategy (Denisov et al.
2022, arXiv 2202.08312, Thm 2.1); the pattern is independent of the data, so joint convexity
gives the Gaussian at ``max_pi Delta_pi / sigma`` (fresh bins: B >= b, where only adjacent
epochs interact and a dynamic programme over the epochs finds the maximum).

**Why not random allocation at the column norm.**  With ``B >= b`` bins and b bands the
columns of one bin's steps are orthogonal, but the non-adaptive pair
``(1/B) sum_j N(mu_j, sigma^2 I)`` vs ``N(0, sigma^2 I)``, ``mu_j = C 1_{S_j}``, has
``<mu_j, mu_j'> != 0`` for neighbouring bins (``c_s`` and ``c_{s+1}`` share b - 1 rows).  Its
privacy depends on the Gram matrix ``G = M^T M`` (``M = [mu_1 ... mu_B]``); positively
correlated means amplify *less* than orthogonal ones, so random allocation at the largest
column norm is not an upper bound.  A contraction gives the non-adaptive pair between random
allocation 1-of-B at shifts ``sqrt(lambda_min(G))`` and ``sqrt(lambda_max(G))``, but the upper
half needs the adaptive adversary reduced to that pair, which the per-row rotation argument
(Dong, Chen, Ozgur 2025, App. A.12) does not give when a row's shift depends on the unknown bin:
it is *not* shipped as a bound.  Only the lower half is (below).

**Lower bounds (realised pair).**  The pair: the target example's gradient is ``clip u`` (u a
fixed unit vector) at each of its steps, the other examples contribute 0 (zero-out), or it is
absent (add/remove; its bin is independent of the others').  Projecting on u, the release is
``sum_{s in pi} c_s + sigma z`` (in clip units, ``c_s = C e_s``, pi the random steps) vs
``sigma z``.  Each bound is a post-processing of this pair (so a lower bound on the run's
epsilon over all adversaries):

1. *Whitening* (any scheme): with ``0 < a <= sigma_min(C)`` (certified),
   ``(a C^{-1}) Y + N(0, sigma^2 (I - a^2 C^{-1} C^{-T}))`` is DP-SGD's release at noise
   ``sigma / a`` on the same datasets and the same steps.  Adaptive queries of that DP-SGD run
   are matrix-mechanism queries with a shared independent seed (the added noise, drawn up
   front; ``(C^{-1} Y)_{<t}`` depends on ``Y_{<t}`` only), so the matrix mechanism's epsilon,
   a supremum over adversaries, is at least some seed's, hence at least the average over
   seeds, which is at least DP-SGD's: every certified lower bound privamp has for
   ``Gaussian(sigma clip / a, clip)`` under the scheme is one for the run (:func:`dominated_run`).
2. *Gram whitening* (persistent bins, group 1): ``Y_u`` projected on the span of M is
   sufficient; in coordinates ``G^{1/2}`` e_j are the means, and the contraction
   ``F = sqrt(l) U G^{-1/2}`` (``l <= lambda_min(G)`` certified, U any orthogonal map; ``||F||
   <= 1``, complete the covariance with independent noise) maps the pair onto
   ``(1/B) sum_j N(sqrt(l) e_j, sigma^2 I_B)`` vs ``N(0, sigma^2 I_B)``: one epoch of random
   allocation 1-of-B (Balanced Iteration, one participation) at noise ``sigma / sqrt(l)``,
   whose privamp lower sides are lower bounds of that pair (it is also DP-SGD's worst case,
   realised: Dong et al. App. A.12).  ``C = I``: ``G = E I``, Chua et al. 2025's reduction.
3. *A Gaussian statistic* (group 1): ``S = <w, Y_u>`` with ``C^T w`` giving every possible
   participation pattern the same total ``m_pi >= m > 0`` (``w = M G^{-1} 1`` for persistent
   bins; ``w = C^{-T} V H^{-1} 1`` with V the whole epochs' indicators for fresh bins and
   Balanced Iteration): ``S ~ mixture of N(m_pi, sigma^2 |w|^2)`` vs ``N(0, sigma^2 |w|^2)``.
   Threshold sets ``{S > t}`` (remove) and ``{S < t}`` (add) give at least the Gaussian
   profile at shift ``m / (sigma |w|)``, whose optimal sets they are.  The realised float w
   is certified: ``m`` from ``C^T w`` with its rounding bounded, ``|w|`` rounded up.

All floating-point slacks are bounded explicitly (``gamma_n = n u / (1 - n u)``) or, for
LAPACK's SVD and symmetric eigenvalues, by the backward-error bound ``n 2^-50 ||A||`` used by
:meth:`~privamp.MatrixMechanism.operator_norm_bound`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from scipy import linalg, signal

from ..errors import NotApplicable
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.matrix import MatrixMechanism
from ..numerics.arrays import shaped
from ..results import Bound
from ..sampling.relations import AddRemove, Relation, ZeroOut
from ..sampling.schemes import BalancedIteration, BallsInBins, PersistentBallsInBins, Scheme
from .chua2024.deterministic import gauss_delta, gauss_epsilon
from .registry import ACCOUNTANTS, BoundPair, RunAnalysis, run_accountant

__all__ = [
    "SRC_DOMINANCE",
    "GaussianRun",
    "MatrixBinsAnalysis",
    "operator_norm",
    "singular_floor",
    "bin_gram",
    "statistic_shift",
    "dominating_run",
    "dominated_run",
]

SRC_DOMINANCE = ("noise dominance: the matrix mechanism is a post-processing of DP-SGD at "
                 "sigma/||C||_2 under the same sampling (privamp issue 32)")
_SRC_WHITEN = ("whitening: DP-SGD at sigma/sigma_min(C) under the same sampling is a "
               "post-processing of the matrix mechanism")
_SRC_GRAM = ("Gram whitening: random allocation 1-of-B at sigma/sqrt(lambda_min(G)) is a "
             "post-processing of the realised persistent balls-in-bins pair")
_SRC_STAT = "a Gaussian statistic <w, Y> of the realised pair (threshold tests)"
_SRC_UNAMP = ("unamplified: the Gaussian at the worst bin's sensitivity (Denisov et al. 2022, "
              "arXiv 2202.08312, Thm 2.1; joint convexity over the bin)")

_NAME = "matrix-bins"
_U = 2.0 ** -53
_SVD_STEPS = 2000        # dense SVDs up to this size
_GRAM_ENTRIES = 4_000_000  # T x B (persistent) or T x epochs (fresh) dense arrays


def _gamma(n: int) -> float:
    return n * _U / (1.0 - n * _U)


@dataclass(frozen=True)
class GaussianRun:
    """The DP-SGD run ``Training(mechanism, scheme, steps=steps, relation=relation)``, as the
    registered accountants read it (the theorems layer sits below ``Training``)."""

    mechanism: Gaussian
    scheme: Scheme
    steps: int
    relation: Relation
    epochs: float | None = None


def operator_norm(mech: MatrixMechanism, steps: int) -> float:
    """A certified upper bound on ``||C||_2``: exactly ``max_t |C_tt|`` for a diagonal C,
    else :meth:`~privamp.MatrixMechanism.operator_norm_bound`."""
    if mech.bands == 1:
        return float(np.max(np.abs(np.diag(mech.matrix(steps)) if not mech.toeplitz
                                    else mech.strategy)))
    return mech.operator_norm_bound(steps)


def _toeplitz_floor(c: np.ndarray, steps: int) -> float:
    """sigma_min of the T x T lower-triangular Toeplitz section, from below: D ~ C^{-1} (the
    inverse series), R = I - C D (Toeplitz, computed with its rounding bounded), then
    ||C^{-1}|| <= ||D|| / (1 - ||R||), ||R||_2 <= the l1 norm of its first column, ||D||_2 <=
    that l1 norm and <= the supremum of its symbol (a finite section of a Toeplitz operator)."""
    e0 = np.zeros(steps)
    e0[0] = 1.0
    with np.errstate(all="ignore"):
        d = signal.lfilter([1.0], c, e0)
        if not np.all(np.isfinite(d)):
            return 0.0
        r = signal.lfilter(c, [1.0], d) - e0
        err = 2.0 * _gamma(c.size + 2) * (signal.lfilter(np.abs(c), [1.0], np.abs(d)) + e0)
        rn = float(np.sum(np.abs(r) + err)) * (1.0 + _gamma(steps + 1))
        l1 = float(np.sum(np.abs(d))) * (1.0 + _gamma(steps + 1))
        # the section of the polynomial symbol p(w) = sum_k d_k e^{ikw} has norm <= sup |p|:
        # on 2^18 (or more) points, plus (pi / N) sum_k k |d_k| between them, plus the FFT's
        # rounding (well below 1e-10 sum |d_k|)
        grid = max(1 << 18, 1 << (steps - 1).bit_length())
        top = float(np.abs(np.fft.fft(d, grid)).max())
        lip = math.pi / grid * float(np.sum(np.arange(steps) * np.abs(d)))
        dn = min(l1, (top + lip + 1e-10 * l1) * (1 + 1e-12))
    if not (math.isfinite(rn) and math.isfinite(dn) and rn < 1.0 and dn > 0.0):
        return 0.0
    return (1.0 - rn) / dn * (1.0 - 8 * _U)


def singular_floor(mech: MatrixMechanism, steps: int) -> float:
    """A certified lower bound on the smallest singular value of the T x T strategy (0 when
    none is certified).

    Diagonal C: ``min_t |C_tt|`` exactly.  Toeplitz: the inverse-series bound (any T).  Dense
    sections up to 2000 steps: LAPACK's smallest singular value minus ``T 2^-50 ||C||_2``
    (backward stability and Weyl's inequality); the larger of the two.

    Args:
        mech: the strategy.
        steps: T.

    Returns:
        ``a`` with ``0 <= a <= sigma_min(C)``.
    """
    steps = mech.check_steps(steps)
    if mech.bands == 1:
        diag = mech.strategy if mech.toeplitz else np.diag(mech.matrix(steps))
        return float(np.min(np.abs(diag)))
    best = _toeplitz_floor(mech.strategy, steps) if mech.toeplitz else 0.0
    if steps <= _SVD_STEPS:
        s = np.linalg.svd(mech.matrix(steps), compute_uv=False)
        best = max(best, float(s[-1]) - steps * 2.0 ** -50 * operator_norm(mech, steps))
    return max(best, 0.0)


def _apply(mech: MatrixMechanism, x: np.ndarray, transpose: bool = False
           ) -> tuple[np.ndarray, np.ndarray]:
    """``C x`` (or ``C^T x``) along axis 0 and an entrywise bound on its rounding error."""
    if mech.toeplitz:
        c, n = mech.strategy, mech.strategy.size
        if transpose:  # C^T = J C J for a Toeplitz C (J the reversal)
            y, a = _apply(mech, x[::-1])
            return y[::-1], a[::-1]
        y = signal.lfilter(c, [1.0], x, axis=0)
        bound = signal.lfilter(np.abs(c), [1.0], np.abs(x), axis=0)
    else:
        cm = mech.strategy.T if transpose else mech.strategy
        y, bound = cm @ x, np.abs(cm) @ np.abs(x)
        n = cm.shape[0]
    return y, 2.0 * _gamma(n + 1) * bound


def _solve_transpose(mech: MatrixMechanism, v: np.ndarray) -> np.ndarray:
    """An approximation of ``C^{-T} v`` (any float answer will do: it is certified later)."""
    if mech.toeplitz:
        return signal.lfilter([1.0], mech.strategy, v[::-1], axis=0)[::-1]
    return linalg.solve_triangular(mech.strategy, v, trans="T", lower=True)


def bin_gram(mech: MatrixMechanism, steps: int, bins: int
             ) -> tuple[np.ndarray, np.ndarray, float]:
    """The persistent bins' means ``M = C P`` (``P[s, s mod B] = 1``), their Gram matrix
    ``G = M^T M`` as computed, and a certified bound on ``||G_computed - G||_2`` (rounding of
    M and of the product, plus the backward error of a symmetric eigensolver).

    Raises:
        NotApplicable: T x B over the dense size limit.
    """
    if steps * bins > _GRAM_ENTRIES:
        raise NotApplicable(f"the bins' Gram matrix needs T x B <= {_GRAM_ENTRIES} entries, "
                            f"got {steps} x {bins}")
    p = np.zeros((steps, bins))
    p[np.arange(steps), np.arange(steps) % bins] = 1.0
    m, err = _apply(mech, p)
    g = m.T @ m
    fm, fe = float(np.linalg.norm(m)), float(np.linalg.norm(err))
    slack = (_gamma(steps + 1) * fm * fm + 2 * fm * fe + fe * fe
             + bins * 2.0 ** -50 * float(np.linalg.norm(g)))
    return m, g, slack * (1 + 1e-9)


def statistic_shift(mech: MatrixMechanism, steps: int, w: np.ndarray, pattern_min) -> float:
    """The certified Gaussian shift ``m / (sigma |w|)`` of the statistic ``<w, Y_u>``.

    Args:
        mech: the strategy.
        steps: T.
        w: the realised statistic (a float T-vector).
        pattern_min: maps a T-vector ``v`` (a certified lower bound on ``C^T w`` entrywise) to
            the smallest total ``sum_{s in pi} v_s`` over the possible participation patterns.

    Returns:
        The shift (0 when the smallest total is not positive).
    """
    u, err = _apply(mech, w, transpose=True)
    m = float(pattern_min(u - err))
    norm = float(np.sqrt(np.sum(w * w))) * (1 + _gamma(steps + 2))
    if not (m > 0 and norm > 0 and math.isfinite(m)):
        return 0.0
    return m / (mech.sigma * norm) * (1 - 4 * _U)


def _epoch_min(per: int, k: int):
    """Smallest total of a Balanced Iteration pattern (k of ``per`` steps each whole epoch,
    0..min(k, r) of the r steps of a partial one)."""
    def f(v: np.ndarray) -> float:
        full = v.size // per
        tot = float(np.sum(np.sort(v[: full * per].reshape(full, per), axis=1)[:, :k]))
        rest = np.sort(v[full * per:])[:k]
        return tot + float(np.sum(np.minimum(rest, 0.0)))
    return f


def _bin_min(bins: int):
    def f(v: np.ndarray) -> float:
        pad = np.zeros(-(-v.size // bins) * bins)
        pad[: v.size] = v
        return float(np.min(pad.reshape(-1, bins).sum(axis=0)))
    return f


def dominating_run(run) -> GaussianRun:
    """DP-SGD at noise multiplier ``sigma / ||C||_2`` (certified norm), same scheme, steps and
    relation: its upper bounds hold for ``run`` (noise dominance, module docstring)."""
    m = run.mechanism
    return GaussianRun(Gaussian(m.sigma * m.clip / operator_norm(m, run.steps), m.clip),
                       run.scheme, run.steps, run.relation)


def dominated_run(run) -> GaussianRun | None:
    """DP-SGD at ``sigma / a`` with ``a <= sigma_min(C)`` certified (None when a = 0): its
    lower bounds hold for ``run`` (whitening, module docstring)."""
    m = run.mechanism
    a = singular_floor(m, run.steps)
    if not a > 0:
        return None
    return GaussianRun(Gaussian(m.sigma * m.clip / a, m.clip), run.scheme, run.steps,
                       run.relation)


class _Answers:
    """The registered accountants applying to a Gaussian run, built once (for a lower side
    only, those whose answers are Rényi-DP conversions are left out: they bound above)."""

    def __init__(self, run: GaussianRun, lower_only: bool = False) -> None:
        self.analyses: list[RunAnalysis] = []
        for accs in ACCOUNTANTS.values():
            for acc in accs:
                if lower_only and "rdp_accountant" in acc.capabilities:
                    continue
                if acc.name != _NAME and acc.applies(cast(Any, run)):
                    try:
                        self.analyses.append(acc.build(cast(Any, run)))
                    except NotApplicable:
                        continue

    def ask(self, x: np.ndarray, which: str) -> tuple[list[Bound], list[Bound]]:
        ups: list[Bound] = []
        los: list[Bound] = []
        for an in self.analyses:
            try:
                up, lo = getattr(an, which)(x)
            except NotApplicable:
                continue
            ups += [up] if up is not None else []
            los += [lo] if lo is not None else []
        return ups, los


def _pick(bounds: list[Bound], upper: bool, notes: list[str]
          ) -> tuple[np.ndarray, str, set[str]] | None:
    """Elementwise smallest (upper) or largest (lower) value, the winners' sources (each
    prefixed by its note) and kinds."""
    if not bounds:
        return None
    vals = np.array([np.ravel(np.asarray(b.value, dtype=float)) for b in bounds])
    idx = np.argmin(vals, axis=0) if upper else np.argmax(vals, axis=0)
    best = vals[idx, np.arange(vals.shape[1])]
    won = [int(i) for i in np.unique(idx)]
    src = "; ".join(dict.fromkeys(
        f"{notes[i]} [{bounds[i].source}]" if notes[i] else bounds[i].source for i in won))
    return best, src, {bounds[i].kind for i in won}


class MatrixBinsAnalysis(RunAnalysis):
    """Upper bound: the dominating DP-SGD run's upper sides (and, persistent bins, the
    unamplified Gaussian); lower bound: the largest of the dominated DP-SGD run's lower sides,
    the Gram-whitened random allocation's and the Gaussian statistics' (module docstring).

    Args:
        upper: the dominating DP-SGD run (:func:`dominating_run`).
        lower: the dominated one (:func:`dominated_run`; ``upper`` itself for ``C = c I``).
        gram: the random allocation run of the Gram whitening, or None.
        shifts: (shift, note) of certified Gaussian statistics.
        unamplified: the unamplified Gaussian shift, or None.
    """

    def __init__(self, upper: GaussianRun, lower: GaussianRun | None,
                 gram: GaussianRun | None = None, shifts: tuple[float, ...] = (),
                 unamplified: float | None = None) -> None:
        self.upper_run, self.lower_run, self.gram_run = upper, lower, gram
        self.shifts, self.unamplified = shifts, unamplified
        self.identity = lower is upper
        self._up = _Answers(upper)
        self._lo = self._up if self.identity else (
            None if lower is None else _Answers(lower, lower_only=True))
        self._gram = None if gram is None else _Answers(gram, lower_only=True)

    def _ask(self, x: np.ndarray, which: str) -> BoundPair:
        f = gauss_epsilon if which == "epsilon" else gauss_delta
        flat = np.ravel(x)
        ups = self._up.ask(x, which)[0]
        if self.unamplified is not None:
            ups.append(Bound(shaped(f(flat, self.unamplified), x), "upper", _SRC_UNAMP))
        notes = [SRC_DOMINANCE if i < len(ups) - (self.unamplified is not None) else ""
                 for i in range(len(ups))]
        los: list[Bound] = []
        lo_notes: list[str] = []
        for answers, note in ((self._lo, _SRC_WHITEN), (self._gram, _SRC_GRAM)):
            if answers is not None:
                got = answers.ask(x, which)[1]
                los += got
                lo_notes += [note] * len(got)
        for s in self.shifts:
            los.append(Bound(shaped(f(flat, s * (1 - 1e-12), "lower"), x), "lower", _SRC_STAT))
            lo_notes.append("")
        up = lo = None
        best_up = _pick(ups, True, notes)
        if best_up is not None:
            vals, src, kinds = best_up
            exact = self.identity and kinds == {"exact"}
            up = Bound(shaped(vals, x), "exact" if exact else "upper", src)
            if exact:
                return up, up
        best_lo = _pick(los, False, lo_notes)
        if best_lo is not None:
            vals = best_lo[0] if best_up is None else np.minimum(best_lo[0], best_up[0])
            lo = Bound(shaped(vals, x), "lower", best_lo[1])
        if up is None and lo is None:
            raise NotApplicable(f"no accountant answers the DP-SGD runs bounding {self}")
        return up, lo

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._ask(delta, "epsilon")

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._ask(epsilon, "delta")

    def __repr__(self) -> str:
        return f"MatrixBinsAnalysis(upper={self.upper_run}, lower={self.lower_run})"


def _persistent_lower(run) -> tuple[GaussianRun | None, tuple[float, ...], float | None]:
    mech, T, B = run.mechanism, run.steps, run.scheme.batches
    gram_run, shifts, unamp = None, (), None
    K = -(-T // B)
    if B * K * K <= 200_000:
        worst = max(mech.sensitivity(range(j, T, B), T) for j in range(min(B, T)))
        unamp = worst / (mech.clip * mech.sigma) * (1 + _gamma(K * K + mech.bands + 8))
    try:
        m, g, slack = bin_gram(mech, T, B)
    except NotApplicable:
        return gram_run, shifts, unamp
    lam = float(np.linalg.eigvalsh(g)[0]) - slack
    if lam > 0:
        gram_run = GaussianRun(Gaussian(mech.sigma * mech.clip / math.sqrt(lam), mech.clip),
                               BalancedIteration(B, 1), B, run.relation)
    a = np.linalg.lstsq(g, np.ones(B), rcond=None)[0]
    s = statistic_shift(mech, T, m @ a, _bin_min(B))
    return gram_run, (s,) if s > 0 else (), unamp


def _epoch_shifts(run) -> tuple[float, ...]:
    mech, T = run.mechanism, run.steps
    per, k = run.scheme.steps, run.scheme.participations
    full = T // per
    if full == 0 or T * full > _GRAM_ENTRIES:
        return ()
    v = np.zeros((T, full))
    for e in range(full):
        v[e * per:(e + 1) * per, e] = 1.0
    with np.errstate(all="ignore"):
        x = _solve_transpose(mech, v)
        if not np.all(np.isfinite(x)):
            return ()
        a = np.linalg.lstsq(x.T @ x, np.ones(full), rcond=None)[0]
    s = statistic_shift(mech, T, x @ a, _epoch_min(per, k))
    return (s,) if s > 0 else ()


def _abs_gram_band(mech: MatrixMechanism, steps: int) -> np.ndarray:
    """``A[l, s] >= |<c_s, c_{s+l}>|`` for lags ``l < b`` (sums of ``|C| |C|`` products)."""
    b = min(mech.bands, steps)
    out = np.zeros((b, steps))
    if mech.toeplitz:
        c = np.abs(mech.strategy)
        for lag in range(b):
            pre = np.concatenate(([0.0], np.cumsum(c[: c.size - lag] * c[lag:])))
            s = np.arange(steps - lag)
            out[lag, : steps - lag] = pre[np.minimum(c.size - lag, steps - s - lag)]
    else:
        a = np.abs(mech.strategy)
        for lag in range(b):
            out[lag, : steps - lag] = np.sum(a[:, : steps - lag] * a[:, lag:], axis=0)
    return out


def _fresh_unamplified(run) -> float | None:
    """Balls-in-bins with B >= b bins: the largest ``sum_{s,t in pi} |G_st|`` over the
    patterns (one step per whole epoch, at most one in a partial one), by dynamic programming
    over the epochs (only adjacent epochs' steps are fewer than b apart); the Gaussian shift
    (Denisov et al. 2022, Thm 2.1, joint convexity over the pattern), or None."""
    mech, T, B = run.mechanism, run.steps, run.scheme.steps
    if B < mech.bands or T > 1_000_000:
        return None
    g = _abs_gram_band(mech, T)
    best = np.zeros(B)  # best total of a pattern ending at each step of the previous epoch
    prev: np.ndarray | None = None
    for start in range(0, T, B):
        idx = np.arange(start, min(start + B, T))
        cur = g[0, idx].copy()
        if prev is not None:  # add the best predecessor, with its cross term
            pidx = np.arange(start - B, start)
            gap = idx[:, None] - pidx[None, :]
            cross = np.where(gap < g.shape[0], g[np.minimum(gap, g.shape[0] - 1), pidx], 0.0)
            cur = cur + np.max(best[None, :] + 2.0 * cross, axis=1)
        if idx.size < B:  # a partial epoch may hold no step
            return math.sqrt(max(float(np.max(cur)), float(np.max(best)))) / mech.sigma * (
                1 + _gamma(T + mech.bands + 8))
        best, prev = cur, idx
    return math.sqrt(float(np.max(best))) / mech.sigma * (1 + _gamma(T + mech.bands + 8))


_SCHEMES = (BallsInBins, PersistentBallsInBins, BalancedIteration)


def _applies(run) -> bool:
    return (
        isinstance(run.mechanism, MatrixMechanism)
        and type(run.scheme) in _SCHEMES
        and isinstance(run.relation, (AddRemove, ZeroOut))
    )


@run_accountant(
    _NAME,
    applies=_applies,
    description="matrix mechanism (BandMF) under balls-in-bins / random allocation: upper "
    "bound by noise dominance (DP-SGD at sigma/||C||), lower bounds from the realised pair "
    "(whitening, Gram whitening, Gaussian statistics)",
)
def _build(run) -> RunAnalysis:
    mech = run.mechanism
    up = dominating_run(run)
    if mech.toeplitz and mech.bands == 1:  # C = c I: DP-SGD at sigma / |c|
        return MatrixBinsAnalysis(up, up)
    shifts: tuple[float, ...] = ()
    gram, unamp = None, None
    if run.relation.group == 1:
        if type(run.scheme) is PersistentBallsInBins:
            gram, shifts, unamp = _persistent_lower(run)
        else:
            shifts = _epoch_shifts(run)
            if type(run.scheme) is BallsInBins:
                unamp = _fresh_unamplified(run)
    # the Gram whitening dominates the plain one for persistent bins: lambda_min(G) >=
    # sigma_min(C)^2 lambda_min(P^T P) >= sigma_min(C)^2 floor(T / B), and the DP-SGD run at
    # sigma / sigma_min(C) is answered as random allocation at that many cycles
    lo = None if gram is not None else dominated_run(run)
    return MatrixBinsAnalysis(up, lo, gram, shifts, unamp)
