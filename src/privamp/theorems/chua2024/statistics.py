"""Statistics of the witness's output whose divergence gives certified lower bounds on
shuffled batches (Chua et al. 2024, pair (P_S, Q_S) of eqs. (1)-(2), and its generalisation
:class:`~privamp.theorems.chua2024.witness.Witness`): the histogram of one epoch's
coordinates, the per-epoch max statistic composed by privamp's PLD (optimistic side), and
(max, count above a threshold).  Each statistic is a post-processing of the witness pair, so
its divergence (and that of its products over epochs) lower-bounds the mechanism's.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ...accountants.grid import auto_grid
from ...numerics.logspace import log1mexp
from ...pairs.combinators import SwappedPair
from ...pairs.loss_pair import LossPair
from ...pld.discretise import discretise
from ...pld.two_sided import TwoSidedPLD
from .witness import (
    Witness,
    c_grid,
    eq7_log_masses,
    hockey,
    uniform_witness,
)

__all__ = [
    "histogram_delta",
    "maxstat_pair",
    "max_cell_masses",
    "component_cell_masses",
    "gauss_interval",
    "sorted_pair",
    "maxstat_composed",
    "maxstat_grid",
    "maxcount_composed",
]


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


def histogram_delta(eps: np.ndarray, s: float, T: int) -> np.ndarray:
    """Histogram-statistic lower bound (both directions, a few bulk thresholds), one epoch."""
    eps = np.atleast_1d(np.asarray(eps, dtype=float))
    out = np.zeros(eps.shape)
    for i, e in enumerate(eps):
        grid = c_grid(s, T, np.array([e]), 4000)[0]
        lp, lp_c, lq, lq_c = eq7_log_masses(grid, uniform_witness(s, T))
        cstar = float(grid[np.argmax(hockey(lp, e + lq))])
        best = 0.0
        for lam in (0.5, 2.0, 8.0):
            c0 = float(-special.ndtri(min(lam / T, 0.5)))
            c0 = min(c0, cstar - 0.5)
            for rev in (False, True):
                best = max(best, _histogram_one(float(e), s, T, c0, cstar, rev))
        out[i] = best
    return out


# ---- several epochs: compose the max statistic with a certified (optimistic) PLD ----------
def maxstat_pair(w: Witness, ncells: int = 400) -> LossPair:
    """The law of M = max_t w_t (cut into cells) under the witness's P and Q, as a discrete
    pair (:func:`max_cell_masses`; for (P_S, Q_S):
    P(M < m) = Phi(m - 2s) Phi(m)^{T-1}, Q(M < m) = Phi(m - s) Phi(m)^{T-1}).  A cell index
    is a post-processing of the pair, so its divergence (and that of its E-fold product)
    lower-bounds the shuffled mechanism's."""
    s, T = w.smax, w.T
    lo = float(special.ndtri(math.exp(-34.5 / T)))
    hi = max(2 * s + 9.5, float(-special.ndtri(1e-19 / T)))
    edges = np.linspace(lo, hi, ncells + 1)
    out = []
    for k in (2, 1):
        out.append(max_cell_masses(edges, w, k))
    return sorted_pair(out[0], out[1])


def gauss_interval(lo: np.ndarray, hi: np.ndarray, mu: float | np.ndarray) -> np.ndarray:
    """P(lo <= Z < hi) for Z ~ N(mu, 1), from lower tails when the interval lies below mu and
    upper tails when it lies above (no cancellation of two numbers near 1)."""
    lo, hi = np.asarray(lo, dtype=float) - mu, np.asarray(hi, dtype=float) - mu
    with np.errstate(invalid="ignore"):
        out = np.where(lo >= 0, special.ndtr(-lo) - special.ndtr(-hi),
                       special.ndtr(hi) - special.ndtr(lo))
    return np.maximum(np.nan_to_num(out, nan=0.0), 0.0)


def component_cell_masses(edges: np.ndarray, comps: list[tuple[float, float]],
                          T: int) -> np.ndarray:
    """Masses of the cells (-inf, e_0), [e_0, e_1), ..., [e_K, inf) of M = max of T
    independent unit-variance normals, a mixture over ``comps = [(weight, shift)]`` (the
    first coordinate N(shift, 1), the T - 1 others N(0, 1)), without cancellation.

    Each component's cdf G(x) = Phi(x - shift) Phi(x)^{T-1} is differenced where G < 1/2
    and its survival function 1 - G (from log space) where G >= 1/2, so each component's
    cell mass has a small *relative* error; the mixture adds non-negative terms.  (Differences
    of the mixture's cdf or survival function alone lose cells lying between the
    components' bulks, e.g. under sit-out: a cell of P-mass rounded to 0 where Q has mass
    ~0.5 fakes an infinite privacy loss.)

    Args:
        edges: increasing finite cell edges.
        comps: the mixture's components (weight > 0, shift >= 0).
        T: number of coordinates (>= 1).

    Returns:
        The K + 2 cell masses (non-negative).
    """
    edges = np.asarray(edges, dtype=float)
    total = np.zeros(len(edges) + 1)
    base = (T - 1) * special.log_ndtr(edges)
    for weight, shift in comps:
        lf = np.minimum(special.log_ndtr(edges - shift) + base, 0.0)
        ls = log1mexp(lf)  # log(1 - G), accurate where G is near 1 (log_ndtr is)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            low = np.exp(lf[1:] + log1mexp(np.minimum(lf[:-1] - lf[1:], 0.0)))
            high = np.exp(ls[:-1] + log1mexp(np.minimum(ls[1:] - ls[:-1], 0.0)))
        inner = np.nan_to_num(np.where(lf[1:] < _LOG_HALF, low, high), nan=0.0)
        cells = np.concatenate([[math.exp(lf[0])], inner, [math.exp(ls[-1])]])
        total += weight * np.maximum(cells, 0.0)
    return total


def max_cell_masses(edges: np.ndarray, w: Witness, factor: int) -> np.ndarray:
    """Masses of the cells (-inf, e_0), ..., [e_K, inf) of M = max_t w_t under the witness's
    P (``factor=2``) or Q (``factor=1``): :func:`component_cell_masses` over the witness's
    components (each batch class, and sitting out).

    Args:
        edges: increasing finite cell edges.
        w: the witness.
        factor: 2 (P) or 1 (Q).

    Returns:
        The K + 2 cell masses (non-negative).
    """
    comps = [(k * p, factor * mu) for k, p, mu in w.classes]
    if w.sitout > 0:
        comps.append((w.sitout, 0.0))
    return component_cell_masses(edges, comps, w.T)


_LOG_HALF = math.log(0.5)


_MAXPLD: dict[tuple, TwoSidedPLD | None] = {}


def _two_sided(pair: LossPair, h: float, tail: float) -> TwoSidedPLD:
    return TwoSidedPLD([discretise(pp, h, tail) for pp in (pair, SwappedPair(pair))])


def maxstat_grid(w: Witness, E: int, extra: Witness | None = None) -> float:
    """The grid step :func:`maxstat_composed` picks by itself."""
    return auto_grid(maxstat_pair(w), E + (extra is not None))


def maxstat_composed(w: Witness, E: int, extra: Witness | None = None,
                     h: float | None = None) -> TwoSidedPLD | None:
    """E-fold composition (both directions) of the max-statistic pair of ``w`` (then composed
    with that of ``extra`` once, e.g. a partial epoch) by privamp's PLD accountant, whose
    optimistic side is a certified lower bound; on grid step ``h`` (None: its own choice).
    None if the grid cannot hold it (the binomial bound is then used alone)."""
    key = (w.key(), E, None if extra is None else extra.key(), h)
    if key not in _MAXPLD:
        if len(_MAXPLD) > 32:
            _MAXPLD.clear()
        pair = maxstat_pair(w)
        n = E + (extra is not None)
        try:
            step = auto_grid(pair, n) if h is None else h
            tail = min(1e-16, 1e-13 / n)
            out = _two_sided(pair, step, tail).self_compose(E)
            if extra is not None:
                out = out.compose(_two_sided(maxstat_pair(extra), step, tail))
            _MAXPLD[key] = out
        except ValueError:  # losses beyond what the PLD grid handles (e.g. sigma -> 0)
            _MAXPLD[key] = None
    return _MAXPLD[key]


def sorted_pair(p: np.ndarray, q: np.ndarray):
    """A finite pair as a LossPair whose tails cost a binary search (cumulative sums)."""
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
        losses: np.ndarray

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
    cell = component_cell_masses(edges, [(1.0, mu)], T)
    a = np.concatenate([[-np.inf], edges])
    a2 = np.concatenate([edges, [np.inf]])
    up = a >= c  # cells above the threshold (c is an edge: none straddles it)
    below = cell[~up]
    a, a2, cup = a[up], a2[up], cell[up]
    sbar = special.ndtr
    x = sbar(-c) - sbar(-a)
    x2 = sbar(-c) - sbar(-a2)
    dx = sbar(-a) - sbar(-a2)
    g = gauss_interval(np.full(a.shape, c), a, mu)
    dg = gauss_interval(a, a2, mu)
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


def maxcount_composed(s: float, T: int, E: int) -> list:
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
            pair = sorted_pair(*_maxcount_pair_masses(s, T, c))
            try:
                h = auto_grid(pair, E)
                tail = min(1e-16, 1e-13 / E)
                dirs = [discretise(pp, h, tail) for pp in (pair, SwappedPair(pair))]
                out.append(TwoSidedPLD(dirs).self_compose(E))
            except ValueError:  # losses beyond what the PLD grid handles
                continue
        _MAXCOUNT[key] = out
    return _MAXCOUNT[key]
