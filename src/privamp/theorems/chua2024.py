"""Adaptive batch linear queries (ABLQ) under deterministic and shuffled batches
(Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha, Zhang 2024, "How private are DP-SGD
implementations?").

Units: ``s = sensitivity / sigma`` is the mean shift of one Gaussian release in noise units;
``steps_per_epoch = T = n / b`` batches per epoch; ``epochs = E`` passes over the data.

* Deterministic batches (ABLQ_D).  Each record is in exactly one batch per epoch, so E epochs
  are E releases of the Gaussian mechanism: the tightly dominating pair is
  (N(s sqrt(E), 1), N(0, 1)) and ``delta_D(eps)`` is the closed form of Prop 3.1
  (Balle & Wang 2018, Thm 8) -- *exact*.
* Shuffled batches (ABLQ_S), a fresh permutation each epoch.
  - Upper bound: shuffling never hurts (Thm 4.1, Lemma B.1, which holds for every real eps),
    and dominating pairs compose (Zhu et al. 2022), so ``delta_S <= delta_D`` over E epochs.
  - Lower bound: the concrete input of Sec. 3 (x = (-1, ..., -1, 1) vs x' = (-1, ..., -1, ⊥),
    query psi(x) = x) realises the pair (P_S, Q_S) of eqs. (1)-(2),
    P_S = mean_t N(2 s e_t, I_T), Q_S = mean_t N(s e_t, I_T), and E epochs (fresh
    permutations) realise (P_S^{⊗E}, Q_S^{⊗E}).  Any post-processing of the pair gives a lower
    bound (data processing).  privamp uses, and reports the largest of:

    * eq. (7): the sets E_c = {max_t w_t >= c}, in both directions and with their
      complements, c optimised continuously (grid + local refinement: at least as strong as
      the paper's grid); over E epochs, the number K of epochs whose output falls in E_c,
      Bin(E, P_S(E_c)) vs Bin(E, Q_S(E_c)), whose divergence is a finite sum (exact);
    * over E > 1 epochs (``method="auto"``): the max statistic of each epoch, cut into cells,
      composed E times by privamp's PLD accountant (optimistic side: certified lower bound);
    * one epoch, ``method="histogram"``: the histogram of the coordinates, whose divergence
      is E_R[(sum_t a_{k_t})_+] / T for R = N(0, I) (see :func:`_histogram_one`).

    (The count #{t : w_t >= c} was tried as a finer statistic: on every setting of the paper
    its optimum is the event {count >= 1}, i.e. eq. (7), to 8 digits.)

  Every shuffle result is therefore an interval [lower, upper].

All kernels (``_...``) take and return plain float arrays; the public functions validate and
return :class:`~privamp.Bound` / :class:`~privamp.Guarantee` values.  Lower bounds are rounded
down (relative 1e-9) to absorb floating-point error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from .._validation import check_delta, check_epsilon, check_int, check_positive
from ..accountants.grid import auto_grid as _auto_grid
from ..errors import NotApplicable
from ..mechanisms.gaussian import Gaussian
from ..numerics.arrays import shaped
from ..numerics.logspace import log1mexp
from ..numerics.roots import bisect_monotone
from ..pairs.combinators import SwappedPair as _SwappedPair
from ..pld.discretise import discretise as _discretise
from ..pld.two_sided import TwoSidedPLD as _TwoSidedPLD
from ..results import Bound, Guarantee
from ..sampling.relations import AddRemove, ZeroOut
from ..sampling.schemes import Deterministic, Shuffle
from .registry import BoundPair, RunAnalysis, run_accountant

__all__ = [
    "SRC_DET",
    "SRC_EQ7",
    "SRC_EPOCHS",
    "SRC_HIST",
    "SRC_MAXPLD",
    "SRC_THM41",
    "ABLQ",
    "deterministic_delta",
    "deterministic_epsilon",
    "deterministic_shift",
    "shuffle_delta_eq7",
    "shuffle_delta_lower",
    "shuffle_epsilon_lower",
    "shuffle_delta",
    "shuffle_epsilon",
    "calibrate_interval",
]


SRC_DET = "Chua et al. 2024, Prop 3.1 (deterministic batches; Balle & Wang 2018, Thm 8)"


SRC_THM41 = (
    "Chua et al. 2024, Thm 4.1 (shuffle <= deterministic) with Prop 3.1, composed over epochs"
)


SRC_EQ7 = "Chua et al. 2024, eq. (7) (sets E_C for the pair (P_S, Q_S) of eqs. (1)-(2))"


SRC_EPOCHS = (
    "Chua et al. 2024, eq. (7) sets E_C for the pair (P_S, Q_S) of eqs. (1)-(2), "
    "composed over epochs (exact binomial count of epochs hitting E_C)"
)


SRC_HIST = (
    "Chua et al. 2024, pair (P_S, Q_S) of eqs. (1)-(2), histogram of the coordinates "
    "(finer than eq. (7); values rounded down)"
)


SRC_MAXPLD = (
    "Chua et al. 2024, pair (P_S, Q_S) of eqs. (1)-(2) composed over epochs: per-epoch max "
    "statistic (the sets of eq. (7)) and (max, count above a threshold) composed by privamp's "
    "PLD, optimistic side"
)


def _src(E: int, method: str = "auto") -> str:
    if E > 1:
        return SRC_EPOCHS if method != "auto" else SRC_EPOCHS + " and " + SRC_MAXPLD
    return SRC_EQ7 if method != "histogram" else SRC_EQ7 + " and " + SRC_HIST


_SAFE = 1.0 - 1e-9  # rounding lower bounds down


# ------------------------------------------------------------------------------------------
# Deterministic batches: one Gaussian per epoch
# ------------------------------------------------------------------------------------------
def deterministic_shift(sigma: float, epochs: int = 1, sensitivity: float = 1.0,
                        group: int = 1, batch_size: int | None = None) -> float:
    """Mean shift (noise units) of the tightly dominating Gaussian pair of ABLQ_D.

    One record: ``sqrt(E) * sensitivity / sigma`` (Chua et al. 2024, Sec. 3).  A group of K
    records placed adversarially in batches of size b (q = K // b full batches, r = K % b in
    one more) moves the batch sums by a vector of norm ``sqrt(q b^2 + r^2) * sensitivity``
    per epoch, attained when all gradients align; b = None means K fits in one batch.
    """
    k = group
    if batch_size is None or k <= batch_size:
        per_epoch_sq = float(k) ** 2
    else:
        q, r = divmod(k, batch_size)
        per_epoch_sq = q * float(batch_size) ** 2 + float(r) ** 2
    return math.sqrt(epochs * per_epoch_sq) * sensitivity / sigma


def _gauss_delta(eps: np.ndarray, s: float) -> np.ndarray:
    """Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s), in log space (Prop 3.1)."""
    eps = np.asarray(eps, dtype=float)
    la = special.log_ndtr(s / 2 - eps / s)
    lb = eps + special.log_ndtr(-s / 2 - eps / s)
    with np.errstate(invalid="ignore"):
        out = np.exp(la + log1mexp(np.minimum(lb - la, 0.0)))
    return np.maximum(np.nan_to_num(out, nan=0.0), 0.0)


def _gauss_epsilon(delta: np.ndarray, s: float) -> np.ndarray:
    """Smallest eps >= 0 with delta_D(eps) <= delta (bisection, returned on the safe side)."""
    delta = np.asarray(delta, dtype=float)
    hi = np.full(delta.shape, max(1.0, s * s))
    for _ in range(200):
        bad = _gauss_delta(hi, s) > delta
        if not bad.any():
            break
        hi = np.where(bad, hi * 2.0, hi)
    eps = bisect_monotone(lambda e: _gauss_delta(e, s), delta, 0.0, hi, increasing=False)
    return np.where(_gauss_delta(np.zeros_like(delta), s) <= delta, 0.0, eps)


def deterministic_delta(epsilon, sigma: float, epochs: int = 1,
                        sensitivity: float = 1.0) -> Bound:
    """Exact delta_D(eps) of ABLQ_D over ``epochs`` epochs (Chua et al. 2024, Prop 3.1)."""
    e = check_epsilon(epsilon)
    s = deterministic_shift(check_positive("sigma", sigma), check_int("epochs", epochs),
                            check_positive("sensitivity", sensitivity))
    return Bound(shaped(_gauss_delta(e, s), epsilon), "exact", SRC_DET)


def deterministic_epsilon(delta, sigma: float, epochs: int = 1,
                          sensitivity: float = 1.0) -> Bound:
    """Exact eps_D(delta) of ABLQ_D (Prop 3.1 inverted; last bit rounded up)."""
    d = check_delta(delta)
    s = deterministic_shift(check_positive("sigma", sigma), check_int("epochs", epochs),
                            check_positive("sensitivity", sensitivity))
    return Bound(shaped(_gauss_epsilon(d, s), delta), "exact", SRC_DET + " (inverted)")


# ------------------------------------------------------------------------------------------
# Shuffled batches: lower bounds from the pair (P_S, Q_S)
# ------------------------------------------------------------------------------------------
def _eq7_log_masses(c: np.ndarray, s: float, T: int) -> tuple[np.ndarray, ...]:
    """log P_S(E_c), log(1 - P_S(E_c)), log Q_S(E_c), log(1 - Q_S(E_c)) for
    E_c = {max_t w_t >= c} (Chua et al. 2024, Sec. 4.3), in noise units:
    P_S(E_c) = 1 - Phi(c - 2s) Phi(c)^{T-1}, Q_S(E_c) = 1 - Phi(c - s) Phi(c)^{T-1}."""
    base = (T - 1) * special.log_ndtr(c)
    lp_c = np.minimum(special.log_ndtr(c - 2 * s) + base, 0.0)
    lq_c = np.minimum(special.log_ndtr(c - s) + base, 0.0)
    return log1mexp(lp_c), lp_c, log1mexp(lq_c), lq_c


def _hs(la: np.ndarray, lb: np.ndarray) -> np.ndarray:
    """max(exp(la) - exp(lb), 0) computed from logs."""
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.where(la > lb, np.exp(la + log1mexp(np.minimum(lb - la, 0.0))), 0.0)
    return np.nan_to_num(d, nan=0.0, posinf=0.0)


def _logsub(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log(exp(a) - exp(b)) for a > b."""
    return a + log1mexp(np.minimum(b - a, 0.0))


def _c_grid(s: float, T: int, eps_max: np.ndarray, num: int = 160) -> np.ndarray:
    """Thresholds c (noise units), one row per target: from T Phi(-c) = 100 up to beyond both
    T Phi(-c) = 1e-12 (plus 2s) and the Neyman-Pearson threshold (eps + 3 s^2 / 2) / s of a
    single coordinate."""
    lo = min(-special.ndtri(min(100.0 / T, 0.5)), 2 * s - 3.0)
    hi = np.maximum(-special.ndtri(1e-12 / T) + 2 * s, (eps_max + 1.5 * s * s) / s + 3.0)
    return lo + (hi - lo)[:, None] * np.linspace(0.0, 1.0, num)[None, :]


def _optimise_c(objective, targets: np.ndarray, s: float, T: int, width_n: int,
                eps_max: np.ndarray, refine: int = 3) -> np.ndarray:
    """max over thresholds c of ``objective(c, targets)`` (both (m, k) arrays, one row per
    target), by a shared grid then ``refine`` rounds of local grids.  Every c gives a valid
    lower bound, so the optimisation needs no guarantee of its own."""
    targets = np.atleast_1d(np.asarray(targets, dtype=float))
    c0 = _c_grid(s, T, np.broadcast_to(eps_max, targets.shape))
    out = np.zeros(targets.shape)
    chunk = max(1, int(2e6 // (c0.shape[1] * width_n)))
    for start in range(0, len(targets), chunk):
        t = targets[start: start + chunk, None]
        rows = np.arange(len(t))
        grid = c0[start: start + chunk]
        width = (grid[:, 1] - grid[:, 0])[:, None]
        best = np.zeros(len(t))
        for it in range(refine + 1):
            val = objective(grid, t)
            idx = np.argmax(val, axis=1)
            best = np.maximum(best, val[rows, idx])
            if it == refine:
                break
            grid = grid[rows, idx][:, None] + width * np.linspace(-1.0, 1.0, 21)[None, :]
            width /= 10.0
        out[start: start + chunk] = best
    return out


def _binom_log_pmfs(c: np.ndarray, s: float, T: int, E: int) -> tuple[np.ndarray, np.ndarray]:
    """log pmfs of K = #{epochs whose max coordinate >= c} under P_S^{⊗E} and Q_S^{⊗E}:
    Bin(E, P_S(E_c)) and Bin(E, Q_S(E_c)), k = 0..E on the last axis."""
    lp, lp_c, lq, lq_c = _eq7_log_masses(np.asarray(c, dtype=float)[..., None], s, T)
    k = np.arange(E + 1, dtype=float)
    lcomb = special.gammaln(E + 1) - special.gammaln(k + 1) - special.gammaln(E - k + 1)

    def term(n: np.ndarray, logp: np.ndarray) -> np.ndarray:  # n log p with 0 log 0 = 0
        with np.errstate(invalid="ignore"):
            return np.where(n == 0, 0.0, n * logp)
    return (lcomb + term(k, lp) + term(E - k, lp_c), lcomb + term(k, lq) + term(E - k, lq_c))


def _eq7_delta(eps: np.ndarray, s: float, T: int, E: int = 1) -> np.ndarray:
    """Lower bound on delta_S(eps) over E epochs: max over c of the exact hockey-stick
    divergence (both directions) of the count of epochs in which E_c occurs.  For E = 1 this
    is eq. (7) (plus the complement of E_c and the reverse direction)."""
    def obj(c, e):
        lP, lQ = _binom_log_pmfs(c, s, T, E)
        e = e[..., None]
        return np.maximum(_hs(lP, e + lQ).sum(-1), _hs(lQ, e + lP).sum(-1))
    return _optimise_c(obj, eps, s, T, E + 1, np.asarray(eps, dtype=float)) * _SAFE


def _eq7_epsilon(delta: np.ndarray, s: float, T: int, E: int = 1,
                 iterations: int = 46) -> np.ndarray:
    """Lower bound on eps_S(delta): max over c of sup{eps : delta_c(eps) > delta}.

    E = 1: closed form eps_c = log(A(E) - delta) - log B(E) over E in {E_c, complement} and
    (A, B) in {(P_S, Q_S), (Q_S, P_S)}.  E > 1: bisection per c on the binomial pair, kept
    on the witness side (delta_c(eps) > delta at the returned eps)."""
    delta = np.atleast_1d(np.asarray(delta, dtype=float))
    if E == 1:
        def obj(c, d):
            lp, lp_c, lq, lq_c = _eq7_log_masses(c, s, T)
            ld = np.log(d)
            best = np.zeros(np.broadcast_shapes(c.shape, d.shape))
            with np.errstate(invalid="ignore", divide="ignore"):
                for la, lb in ((lp, lq), (lp_c, lq_c), (lq, lp), (lq_c, lp_c)):
                    cand = np.where(la > ld, _logsub(la, ld) - lb, 0.0)
                    best = np.maximum(best, np.nan_to_num(cand, nan=0.0, posinf=0.0))
            return best
        val = _optimise_c(obj, delta, s, T, 1, _gauss_epsilon(delta, s))
        return np.maximum(val - 1e-9 * (1.0 + val), 0.0)

    order = np.argsort(delta)
    d_sorted = delta[order]
    hi_sorted = _gauss_epsilon(d_sorted, s * math.sqrt(E)) + 1e-6  # eps_S <= eps_D (Thm 4.1)

    def obj(c, d):
        lP, lQ = _binom_log_pmfs(c, s, T, E)
        hi = np.broadcast_to(np.interp(d[:, 0], d_sorted, hi_sorted)[:, None], c.shape).copy()
        lo = np.zeros(c.shape)

        def dl(e):
            e = e[..., None]
            return np.maximum(_hs(lP, e + lQ).sum(-1), _hs(lQ, e + lP).sum(-1)) * _SAFE
        ok = dl(lo) > d
        for _ in range(iterations):
            mid = 0.5 * (lo + hi)
            above = dl(mid) > d
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
        return np.where(ok, lo, 0.0)
    out = np.empty_like(delta)
    out[order] = _optimise_c(obj, d_sorted, s, T, (E + 1) * 8, hi_sorted / E, refine=2)
    return out


# ---- a finer statistic: the histogram of the coordinates (single epoch) -------------------
def _bin_masses(edges: np.ndarray, mu: float) -> np.ndarray:
    """N(mu, 1) masses of the cells [e_i, e_{i+1}) (edges include -inf and +inf)."""
    a, b = edges[:-1] - mu, edges[1:] - mu
    up = a > 0
    with np.errstate(invalid="ignore"):
        m = np.where(up, special.ndtr(-a) - special.ndtr(-b), special.ndtr(b) - special.ndtr(a))
    return np.maximum(np.nan_to_num(m, nan=0.0), 0.0)


def _histogram_one(eps: float, s: float, T: int, c0: float, cstar: float, reverse: bool,
                   lattice: int = 2000) -> float:
    """Exact-up-to-rounding-down hockey-stick divergence of the histogram statistic.

    Post-process (P_S, Q_S) by the histogram of the T coordinates over the cells
    (-inf, c0), [c_1, c_2), ..., [c_K, inf).  Relative to R = N(0, I_T),
    dP_S/dR = mean_t l_2(w_t) with l_k the likelihood ratio of N(k s, 1) to N(0, 1), so the
    histogram pair has H_{e^eps} = E_R[(sum_t a_{k_t})_+] / T with a_k = (P2(cell k) -
    e^eps P1(cell k)) / R(cell k) (P2 = N(2s, 1), P1 = N(s, 1)).  Under R the number N of
    coordinates above c0 is Bin(T, pi) and, given N, their cells are i.i.d.  Lower-bounding
    steps, each safe: terms with N > N_max are dropped (they are >= 0); cell values are
    rounded down to a lattice of step h (the positive part is increasing); values above a cap
    -- beyond which every configuration is positive -- are capped and their excess added back
    linearly.  The convolution sums non-negative terms; a float allowance is subtracted.
    """
    ztop = max(c0 + 1.0, (eps + 1.5 * s * s) / s + 6.0, cstar + 4.0)
    inner = np.concatenate([np.linspace(c0, ztop, 30),
                            np.linspace(max(c0, cstar - 1.0), cstar + 1.0, 24), [cstar]])
    inner = np.unique(inner[inner >= c0])
    edges = np.concatenate([[-np.inf], inner, [np.inf]])
    r, p1, p2 = _bin_masses(edges, 0.0), _bin_masses(edges, s), _bin_masses(edges, 2 * s)
    ee = math.exp(eps)
    num = (p1 - ee * p2) if reverse else (p2 - ee * p1)
    if r[0] <= 0:
        return 0.0
    a0 = num[0] / r[0]
    pi = float(np.sum(r[1:]))
    m = r[1:] > 0
    if pi <= 0 or not m.any():
        return max(T * a0, 0.0) / T
    q = r[1:][m] / pi
    d = num[1:][m] / r[1:][m] - a0
    x0 = T * a0
    lam = T * pi
    nmax = int(min(T, lam + 10.0 * math.sqrt(lam) + 10.0))
    dmin = min(float(d.min()), 0.0)
    span = max(-x0 - (nmax - 1) * dmin - dmin, 1e-300)
    h = span / lattice
    cap = -x0 - (nmax - 1) * dmin + 2 * nmax * h  # any configuration holding a capped cell is > 0
    k = np.floor(np.minimum(d, cap) / h).astype(np.int64)
    excess = float(np.sum(q * np.maximum(d - k * h, 0.0) * (d > cap)))
    kmin = int(k.min())
    kk = k - kmin
    logw = (special.gammaln(T + 1) - special.gammaln(np.arange(nmax + 1) + 1)
            - special.gammaln(T - np.arange(nmax + 1) + 1)
            + np.arange(nmax + 1) * math.log(pi) + (T - np.arange(nmax + 1)) * math.log1p(-pi))
    w = np.exp(logw)
    total = w[0] * max(x0, 0.0)
    dist = np.ones(1)
    for n in range(1, nmax + 1):
        new = np.zeros(len(dist) + int(kk.max()))
        for j in range(len(q)):
            new[kk[j]: kk[j] + len(dist)] += q[j] * dist
        dist = new
        vals = x0 + (np.arange(len(dist)) + n * kmin) * h
        total += w[n] * (float(np.dot(dist, np.maximum(vals, 0.0))) + n * excess)
    allowance = 1e-14 * (abs(x0) + nmax * span)
    return max(total * (1.0 - 1e-12 * nmax) - allowance, 0.0) / T


def _histogram_delta(eps: np.ndarray, s: float, T: int) -> np.ndarray:
    """Histogram-statistic lower bound (both directions, a few bulk thresholds), one epoch."""
    eps = np.atleast_1d(np.asarray(eps, dtype=float))
    out = np.zeros(eps.shape)
    for i, e in enumerate(eps):
        grid = _c_grid(s, T, np.array([e]), 4000)[0]
        lp, lp_c, lq, lq_c = _eq7_log_masses(grid, s, T)
        cstar = float(grid[np.argmax(_hs(lp, e + lq))])
        best = 0.0
        for lam in (0.5, 2.0, 8.0):
            c0 = float(-special.ndtri(min(lam / T, 0.5)))
            c0 = min(c0, cstar - 0.5)
            for rev in (False, True):
                best = max(best, _histogram_one(float(e), s, T, c0, cstar, rev))
        out[i] = best
    return out


# ---- several epochs: compose the max statistic with a certified (optimistic) PLD ----------
def _maxstat_pair(s: float, T: int, ncells: int = 400):
    """The law of M = max_t w_t (cut into cells) under P_S and Q_S, as a discrete pair:
    P(M < m) = Phi(m - 2s) Phi(m)^{T-1}, Q(M < m) = Phi(m - s) Phi(m)^{T-1}.  A cell index is a
    post-processing of (P_S, Q_S), so the pair's divergence (and that of its E-fold product)
    lower-bounds the shuffled mechanism's."""
    lo = float(special.ndtri(math.exp(-34.5 / T)))
    hi = max(2 * s + 9.5, float(-special.ndtri(1e-19 / T)))
    edges = np.linspace(lo, hi, ncells + 1)
    base = (T - 1) * special.log_ndtr(edges)
    out = []
    for k in (2, 1):
        lf = special.log_ndtr(edges - k * s) + base
        inner = np.exp(lf[1:] + log1mexp(np.minimum(lf[:-1] - lf[1:], 0.0)))
        masses = np.concatenate([[math.exp(lf[0])], inner, [-math.expm1(lf[-1])]])
        out.append(np.maximum(masses, 0.0))
    return _sorted_pair(out[0], out[1])


def _sorted_pair(p: np.ndarray, q: np.ndarray):
    """A finite pair as a LossPair whose tails cost a binary search (cumulative sums)."""
    from ..pairs.loss_pair import LossPair

    keep = (p > 0) | (q > 0)
    p, q = p[keep], q[keep]
    with np.errstate(divide="ignore"):
        loss = np.log(p) - np.log(q)
    order = np.argsort(loss, kind="stable")
    p, q, loss = p[order], q[order], loss[order]
    cums = {"P": np.concatenate([[0.0], np.cumsum(p)]), "Q": np.concatenate([[0.0], np.cumsum(q)])}
    # tails from the top are summed from the top (small tails keep their precision)
    rcums = {"P": np.concatenate([np.cumsum(p[::-1])[::-1], [0.0]]),
             "Q": np.concatenate([np.cumsum(q[::-1])[::-1], [0.0]])}

    class _Sorted(LossPair):
        def tail(self, l, dist, upper, strict):
            x = np.asarray(l, dtype=float)
            if upper:  # dist(L > l) or dist(L >= l)
                i = np.searchsorted(loss, x, side="right" if strict else "left")
                return rcums[dist][i]
            i = np.searchsorted(loss, x, side="left" if strict else "right")
            return cums[dist][i]

    pair = _Sorted()
    pair.p_inf = float(p[np.isposinf(loss)].sum())
    pair.q_minf = float(q[np.isneginf(loss)].sum())
    pair.losses = loss
    return pair


_MAXPLD: dict[tuple, object] = {}


def _maxstat_composed(s: float, T: int, E: int):
    """E-fold composition (both directions) of the max-statistic pair by privamp's PLD
    accountant, whose optimistic side is a certified lower bound; None if unavailable (the
    binomial bound is then used alone)."""
    key = (round(s, 14), T, E)
    if key not in _MAXPLD:
        try:
            from ..accountants.grid import auto_grid
            from ..pairs.combinators import SwappedPair
            from ..pld.discretise import discretise
            from ..pld.two_sided import TwoSidedPLD
        except ImportError:  # pragma: no cover - depends on the PLD module
            return None
        if len(_MAXPLD) > 32:
            _MAXPLD.clear()
        pair = _maxstat_pair(s, T)
        try:
            h = auto_grid(pair, E)
            tail = min(1e-16, 1e-13 / E)
            dirs = [discretise(pp, h, tail) for pp in (pair, SwappedPair(pair))]
            _MAXPLD[key] = TwoSidedPLD(dirs).self_compose(E)
        except ValueError:  # losses beyond what the PLD grid handles (e.g. sigma -> 0)
            _MAXPLD[key] = None
    return _MAXPLD[key]


# ---- several epochs: (max, count above a threshold) of each epoch, composed by PLD ---------
def _maxcount_masses(s: float, T: int, c: float, mu: float, ncells: int = 400,
                     kmax: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # (cells below c, table cells-above-c x counts, cells-above-c masses)
    """Law of (cell of M = max_t w_t, min(K, kmax)), K = #{t : w_t >= c}, when one coordinate
    is N(mu, 1) (mu = 2s under P_S, s under Q_S) and the T - 1 others N(0, 1).

    The max cells are those of :func:`_maxstat_pair` with c added as an edge; a cell below c
    has K = 0.  For a cell [a, a') above c, with H_k(a) = P(all < a, K = k) =
    G(c) C(T-1, k) x^k F(c)^{T-1-k} + (G(a) - G(c)) C(T-1, k-1) x^{k-1} F(c)^{T-k},
    x = F(a) - F(c) (F, G the laws of the others and of the special coordinate), the mass of
    (cell, k) is H_k(a') - H_k(a), written as a sum of non-negative terms
    (x'^k - x^k = (x' - x) sum_j x'^j x^{k-1-j}, x' - x = Fbar(a) - Fbar(a') from upper
    tails), so no cancellation; when T >= kmax the counts k >= kmax take the rest of the
    cell's mass (for T < kmax every count is enumerated: a subtracted "rest" would be pure
    float noise, which can fake a large privacy loss)."""
    lo = float(special.ndtri(math.exp(-34.5 / T)))
    hi = max(2 * s + 9.5, float(-special.ndtri(1e-19 / T)))
    edges = np.unique(np.concatenate([np.linspace(lo, hi, ncells + 1), [c]]))
    lf = special.log_ndtr(edges - mu) + (T - 1) * special.log_ndtr(edges)
    inner = np.exp(lf[1:] + log1mexp(np.minimum(lf[:-1] - lf[1:], 0.0)))
    cell = np.maximum(np.concatenate([[math.exp(lf[0])], inner, [-math.expm1(lf[-1])]]), 0.0)
    a = np.concatenate([[-np.inf], edges])
    a2 = np.concatenate([edges, [np.inf]])
    up = a >= c  # cells above the threshold (c is an edge: none straddles it)
    below = cell[~up]
    a, a2, cup = a[up], a2[up], cell[up]
    sbar = special.ndtr
    x = sbar(-c) - sbar(-a)
    x2 = sbar(-c) - sbar(-a2)
    dx = sbar(-a) - sbar(-a2)
    g = sbar(mu - c) - sbar(mu - a)
    dg = sbar(mu - a) - sbar(mu - a2)
    Fc, Gc = float(special.ndtr(c)), float(special.ndtr(c - mu))

    def powdiff(k: int) -> np.ndarray:  # x2^k - x^k >= 0
        if k == 0:
            return np.zeros_like(x)
        return dx * sum(x2 ** j * x ** (k - 1 - j) for j in range(k))

    cols = []
    for k in range(1, min(kmax, T + 1)):
        t1 = (Gc * math.comb(T - 1, k) * Fc ** (T - 1 - k) * powdiff(k)) if k < T else 0.0
        t2 = math.comb(T - 1, k - 1) * Fc ** (T - k) * (dg * x2 ** (k - 1) + g * powdiff(k - 1))
        cols.append(t1 + t2)
    if T >= kmax:  # counts >= kmax exist: they take the rest of the cell
        cols.append(np.maximum(cup - np.sum(cols, axis=0), 0.0))
    return below, np.stack(cols, axis=1), cup


def _maxcount_pair_masses(s: float, T: int, c: float) -> tuple[np.ndarray, np.ndarray]:
    """Masses under P_S and Q_S of the statistic (max cell, min(K, kmax)), except that a cell
    whose "K >= kmax" rest (a difference) is not at least 1e-6 of the cell under both laws is
    left unsplit (its mass then comes from log-space tails only): a rest at the level of the
    float noise of the subtraction could fake a large privacy loss.  Merging cells is a
    post-processing, so the statistic stays valid."""
    kmax = 10
    (bp, tp, cp), (bq, tq, cq) = (_maxcount_masses(s, T, c, mu, kmax=kmax) for mu in (2 * s, s))
    split = np.ones(len(cp), dtype=bool)
    if T >= kmax:  # the last column is the subtracted rest
        split = (tp[:, -1] >= 1e-6 * cp) & (tq[:, -1] >= 1e-6 * cq)
    out = []
    for below, table, cell in ((bp, tp, cp), (bq, tq, cq)):
        out.append(np.concatenate([below, table[split].ravel(), cell[~split]]))
    return out[0], out[1]


_MAXCOUNT: dict[tuple, list] = {}


def _maxcount_composed(s: float, T: int, E: int) -> list:
    """E-fold compositions (both directions, optimistic side certified) of the per-epoch
    statistic (max cell, count above c) for thresholds c with (T - 1) Phibar(c) in
    {1, 2.5, 3.5, 5}; a refinement of the max statistic (which is a post-processing of it)."""
    key = (round(s, 14), T, E)
    if key not in _MAXCOUNT:
        if len(_MAXCOUNT) > 32:
            _MAXCOUNT.clear()
        out = []
        for lam in (1.0, 2.5, 3.5, 5.0):
            if T - 1 < 2 * lam:  # the threshold must be above the median (c > 0)
                continue
            c = float(-special.ndtri(lam / (T - 1)))
            pair = _sorted_pair(*_maxcount_pair_masses(s, T, c))
            try:
                h = _auto_grid(pair, E)
                tail = min(1e-16, 1e-13 / E)
                dirs = [_discretise(pp, h, tail) for pp in (pair, _SwappedPair(pair))]
                out.append(_TwoSidedPLD(dirs).self_compose(E))
            except ValueError:  # losses beyond what the PLD grid handles
                continue
        _MAXCOUNT[key] = out
    return _MAXCOUNT[key]


def _composed_lower(val: np.ndarray, s: float, T: int, E: int, ask) -> np.ndarray:
    """``val`` raised to the lower bounds of the per-epoch statistics composed over E epochs
    (the max statistic and the (max, count) statistics): ``ask(pld)`` is the two-sided
    PLD's (upper, lower) answer, of which the lower side is kept."""
    pld = _maxstat_composed(s, T, E)
    for p in ([pld] if pld is not None else []) + list(_maxcount_composed(s, T, E)):
        val = np.maximum(val, np.maximum(ask(p)[1], 0.0))
    return val


def _shuffle_lower_delta(eps: np.ndarray, s: float, T: int, E: int,
                         method: str = "auto") -> np.ndarray:
    eps = np.atleast_1d(eps)
    val = _eq7_delta(eps, s, T, E)
    if method == "histogram" and E == 1:
        val = np.maximum(val, _histogram_delta(eps, s, T))
    if method == "auto" and E > 1:
        val = _composed_lower(val, s, T, E, lambda p: p.delta(eps))
    return val


def _shuffle_lower_epsilon(delta: np.ndarray, s: float, T: int, E: int,
                           method: str = "auto") -> np.ndarray:
    delta = np.atleast_1d(delta)
    val = _eq7_epsilon(delta, s, T, E)
    if method == "histogram" and E == 1:
        # bisection above the eq. (7) value, kept on the witness side
        hi = _gauss_epsilon(delta, s)
        lo = val.copy()
        for _ in range(14):
            mid = 0.5 * (lo + hi)
            above = _histogram_delta(mid, s, T) > delta
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
        val = np.maximum(val, lo)
    if method == "auto" and E > 1:
        val = _composed_lower(val, s, T, E, lambda p: p.epsilon(delta))
    return val


_METHODS = ("auto", "eq7", "histogram")


def _check_method(method: str) -> str:
    if method not in _METHODS:
        raise ValueError(f"method must be one of {', '.join(_METHODS)}, got {method!r}")
    return method


def _check_shuffle(sigma, steps_per_epoch, epochs, sensitivity) -> tuple[float, int, int]:
    sigma = check_positive("sigma", sigma)
    T = check_int("steps_per_epoch", steps_per_epoch, minimum=1)
    E = check_int("epochs", epochs, minimum=1)
    s = check_positive("sensitivity", sensitivity) / sigma
    return s, T, E


def shuffle_delta_eq7(epsilon, sigma: float, steps_per_epoch: int,
                      sensitivity: float = 1.0) -> Bound:
    """Lower bound on delta_S(eps) for one epoch by Chua et al. 2024, eq. (7), with the
    threshold C optimised continuously (at least as strong as the paper's grid 0:0.01:100)."""
    e = check_epsilon(epsilon)
    s, T, _ = _check_shuffle(sigma, steps_per_epoch, 1, sensitivity)
    return Bound(shaped(_eq7_delta(e.ravel(), s, T), epsilon), "lower", SRC_EQ7)


def shuffle_delta_lower(epsilon, sigma: float, steps_per_epoch: int, epochs: int = 1,
                        sensitivity: float = 1.0, method: str = "auto") -> Bound:
    """Certified lower bound on delta_S(eps) over ``epochs`` epochs, the largest of:

    * eq. (7) with an optimised threshold (over epochs: the exact binomial composition of the
      event E_C) — always, milliseconds;
    * ``method="auto"`` and epochs > 1: the max statistic of each epoch, composed by privamp's
      PLD (optimistic side; a few seconds, cached per (sigma, T, epochs));
    * ``method="histogram"`` and one epoch: the histogram statistic (about 1 s per eps).
    ``method="eq7"`` keeps only the first."""
    e = check_epsilon(epsilon)
    s, T, E = _check_shuffle(sigma, steps_per_epoch, epochs, sensitivity)
    method = _check_method(method)
    val = _shuffle_lower_delta(e.ravel(), s, T, E, method)
    return Bound(shaped(val, epsilon), "lower", _src(E, method))


def shuffle_epsilon_lower(delta, sigma: float, steps_per_epoch: int, epochs: int = 1,
                          sensitivity: float = 1.0, method: str = "auto") -> Bound:
    """Certified lower bound on eps_S(delta): the largest eps whose lower-bound delta still
    exceeds ``delta`` (closed form for eq. (7); bisection kept on the witness side otherwise).
    ``method="histogram"`` costs about 15 s per delta."""
    d = check_delta(delta)
    s, T, E = _check_shuffle(sigma, steps_per_epoch, epochs, sensitivity)
    method = _check_method(method)
    val = _shuffle_lower_epsilon(d.ravel(), s, T, E, method)
    return Bound(shaped(val, delta), "lower", _src(E, method) + " (inverted)")


def shuffle_delta(epsilon, sigma: float, steps_per_epoch: int, epochs: int = 1,
                  sensitivity: float = 1.0, method: str = "auto") -> Guarantee:
    """Interval for delta_S(eps): [lower bound of :func:`shuffle_delta_lower`, delta_D
    (Thm 4.1)]."""
    e = check_epsilon(epsilon)
    s, T, E = _check_shuffle(sigma, steps_per_epoch, epochs, sensitivity)
    method = _check_method(method)
    up = _gauss_delta(e.ravel(), s * math.sqrt(E))
    lo = np.minimum(_shuffle_lower_delta(e.ravel(), s, T, E, method), up)
    src = _src(E, method)
    return Guarantee(Bound(shaped(up, epsilon), "upper", SRC_THM41),
                     Bound(shaped(lo, epsilon), "lower", src))


def shuffle_epsilon(delta, sigma: float, steps_per_epoch: int, epochs: int = 1,
                    sensitivity: float = 1.0, method: str = "auto") -> Guarantee:
    """Interval for eps_S(delta): [inverted lower bound, eps_D(delta) (Thm 4.1)]."""
    d = check_delta(delta)
    s, T, E = _check_shuffle(sigma, steps_per_epoch, epochs, sensitivity)
    method = _check_method(method)
    up = _gauss_epsilon(d.ravel(), s * math.sqrt(E))
    lo = np.minimum(_shuffle_lower_epsilon(d.ravel(), s, T, E, method), up)
    src = _src(E, method)
    return Guarantee(Bound(shaped(up, delta), "upper", SRC_THM41 + " (inverted)"),
                     Bound(shaped(lo, delta), "lower", src + " (inverted)"))


# ------------------------------------------------------------------------------------------
# Convenience object and calibration
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ABLQ:
    """ABLQ with Gaussian noise ``sigma`` over ``epochs`` epochs of ``steps_per_epoch`` batches,
    under ``sampler`` "deterministic" or "shuffle" (zero-out neighbours, clipping norm
    ``sensitivity``).  ``.delta(eps)`` / ``.epsilon(delta)`` return Guarantees; ``method``
    picks the shuffle lower bound ("eq7", fast, or "histogram", finer and slower)."""

    sampler: str
    sigma: float
    steps_per_epoch: int
    epochs: int = 1
    sensitivity: float = 1.0
    method: str = "auto"

    def __post_init__(self) -> None:
        if self.sampler not in ("deterministic", "shuffle"):
            raise ValueError(f"sampler must be 'deterministic' or 'shuffle', got {self.sampler!r}")
        _check_shuffle(self.sigma, self.steps_per_epoch, self.epochs, self.sensitivity)
        _check_method(self.method)

    def delta(self, epsilon) -> Guarantee:
        if self.sampler == "deterministic":
            b = deterministic_delta(epsilon, self.sigma, self.epochs, self.sensitivity)
            return Guarantee(b, b)
        return shuffle_delta(epsilon, self.sigma, self.steps_per_epoch, self.epochs,
                             self.sensitivity, self.method)

    def epsilon(self, delta) -> Guarantee:
        if self.sampler == "deterministic":
            b = deterministic_epsilon(delta, self.sigma, self.epochs, self.sensitivity)
            return Guarantee(b, b)
        return shuffle_epsilon(delta, self.sigma, self.steps_per_epoch, self.epochs,
                               self.sensitivity, self.method)


def calibrate_interval(target_epsilon: float, delta: float, steps_per_epoch: int,
                       epochs: int = 1, sampler: str = "shuffle", sensitivity: float = 1.0,
                       rtol: float = 1e-3) -> Guarantee:
    """Noise multiplier needed for (target_epsilon, delta)-DP of ABLQ, as an interval.

    ``upper``: a sigma that certainly suffices (the deterministic / Thm 4.1 upper bound meets
    the target; rounded up).  ``lower``: a sigma at which the certified lower bound on
    eps_S(delta) still exceeds the target, so every sigma at or below it violates the target
    (the privacy curve of ABLQ is monotone in sigma: more noise is a post-processing).  For
    "deterministic" both sides come from the exact Prop 3.1 curve.
    """
    target = check_positive("target_epsilon", target_epsilon)
    d = float(check_delta(delta))
    T = check_int("steps_per_epoch", steps_per_epoch)
    E = check_int("epochs", epochs)
    sens = check_positive("sensitivity", sensitivity)
    if sampler not in ("deterministic", "shuffle"):
        raise ValueError(f"sampler must be 'deterministic' or 'shuffle', got {sampler!r}")

    def eps_up(sigma: float) -> float:
        return float(_gauss_epsilon(np.array([d]), math.sqrt(E) * sens / sigma)[0])

    # upper: smallest sigma with eps_D <= target (bisection in log sigma, safe side = larger)
    a, b = math.log(1e-3), math.log(1e4)
    if eps_up(math.exp(b)) > target:
        raise ValueError("target_epsilon too small: even sigma=1e4 does not meet it")
    while b - a > math.log1p(rtol):
        m = 0.5 * (a + b)
        a, b = (m, b) if eps_up(math.exp(m)) > target else (a, m)
    sig_up = math.exp(b)
    if sampler == "deterministic":
        sig_lo = math.exp(a)  # eps_D(exp(a)) > target: exact curve, so this sigma violates it
        return Guarantee(Bound(sig_up, "upper", f"calibrated sigma; {SRC_DET}"),
                         Bound(sig_lo, "lower", f"calibrated sigma; {SRC_DET}"))

    def eps_lo(sigma: float) -> float:
        return float(_shuffle_lower_epsilon(np.array([d]), sens / sigma, T, E, "eq7")[0])

    a, b = math.log(1e-3), math.log(sig_up)
    if eps_lo(math.exp(a)) <= target:
        return Guarantee(Bound(sig_up, "upper", f"calibrated sigma; {SRC_THM41}"), None)
    while b - a > math.log1p(rtol):
        m = 0.5 * (a + b)
        a, b = (m, b) if eps_lo(math.exp(m)) > target else (a, m)
    src = _src(E, "eq7")
    return Guarantee(Bound(sig_up, "upper", f"calibrated sigma; {SRC_THM41}"),
                     Bound(math.exp(a), "lower", f"calibrated sigma (target violated at or "
                           f"below); {src}"))


def _ablq_applies(run, scheme_type: type) -> bool:
    return (
        type(run.scheme) is scheme_type
        and isinstance(run.mechanism, Gaussian)
        and isinstance(run.relation, (ZeroOut, AddRemove))
    )


def _check_partition(run) -> None:
    """Interim: the analysis below assumes batch_size divides dataset_size and a fresh
    permutation per epoch."""
    sch = run.scheme
    if not sch.divisible or getattr(sch, "persistent", False):
        raise NotApplicable(
            f"{sch.name} batching is analysed here only when batch_size divides dataset_size "
            f"and the permutation is fresh every epoch; got {sch}")


def _run_params(run) -> tuple[float, int, int]:
    """(shift of the deterministic pair over the run, steps per epoch, epochs)."""
    _check_partition(run)
    T = int(run.scheme.steps_per_epoch)
    if run.steps % T:
        raise NotApplicable(
            f"steps must be a whole number of epochs for {run.scheme.name} batching "
            f"(a multiple of steps_per_epoch={T}), got steps={run.steps}"
        )
    E = run.steps // T
    m = run.mechanism
    s_all = deterministic_shift(m.sigma, E, m.sensitivity, run.relation.group,
                                run.scheme.batch_size)
    return s_all, T, E


_AS_ZERO_OUT = (
    "; add/remove analysed as zero-out: the added or removed record changes only its own "
    "batch, the other batches are fixed (Chua et al. 2024, Sec. 2)"
)


def _relation_note(run) -> str:
    """What was analysed: Chua et al. 2024 analyse fixed batches under zero-out neighbours; a
    run declared under add/remove gets that analysis, and its sources say so."""
    return _AS_ZERO_OUT if isinstance(run.relation, AddRemove) else ""


class _DeterministicAnalysis(RunAnalysis):
    def __init__(self, s_all: float, note: str = "") -> None:
        self.s_all, self.note = s_all, note

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        b = Bound(shaped(_gauss_epsilon(np.ravel(delta), self.s_all), delta), "exact",
                  SRC_DET + " (inverted)" + self.note)
        return b, b

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        b = Bound(shaped(_gauss_delta(np.ravel(epsilon), self.s_all), epsilon), "exact",
                  SRC_DET + self.note)
        return b, b


class _ShuffleAnalysis(RunAnalysis):
    """Upper: Thm 4.1 (deterministic curve).  Lower (one record, group = 1): eq. (7) sets for
    the pair (P_S, Q_S), composed over epochs."""

    def __init__(self, s_all: float, s_one: float | None, T: int, E: int,
                 note: str = "") -> None:
        self.s_all, self.s_one, self.T, self.E, self.note = s_all, s_one, T, E, note

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        d = np.ravel(delta)
        up = _gauss_epsilon(d, self.s_all)
        upper = Bound(shaped(up, delta), "upper", SRC_THM41 + " (inverted)" + self.note)
        if self.s_one is None:
            return upper, None
        lo = np.minimum(_shuffle_lower_epsilon(d, self.s_one, self.T, self.E), up)
        return upper, Bound(shaped(lo, delta), "lower", _src(self.E) + " (inverted)" + self.note)

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        e = np.ravel(epsilon)
        up = _gauss_delta(e, self.s_all)
        upper = Bound(shaped(up, epsilon), "upper", SRC_THM41 + self.note)
        if self.s_one is None:
            return upper, None
        lo = np.minimum(_shuffle_lower_delta(e, self.s_one, self.T, self.E), up)
        return upper, Bound(shaped(lo, epsilon), "lower", _src(self.E) + self.note)


@run_accountant(
    "ablq-deterministic",
    applies=lambda run: _ablq_applies(run, Deterministic),
    description="deterministic batches, Gaussian noise: exact (Chua et al. 2024, Prop 3.1)",
)
def _build_deterministic(run) -> RunAnalysis:
    s_all, _, _ = _run_params(run)
    return _DeterministicAnalysis(s_all, _relation_note(run))


@run_accountant(
    "ablq-shuffle",
    applies=lambda run: _ablq_applies(run, Shuffle),
    description="shuffled batches, Gaussian noise: [eq. (7) lower, Thm 4.1 upper] "
    "(Chua et al. 2024)",
)
def _build_shuffle(run) -> RunAnalysis:
    s_all, T, E = _run_params(run)
    m = run.mechanism
    s_one = m.sensitivity / m.sigma if run.relation.group == 1 else None
    return _ShuffleAnalysis(s_all, s_one, T, E, _relation_note(run))

