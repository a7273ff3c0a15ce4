"""The lower-bound witness of shuffled batches and its eq. (7) sets (Chua et al. 2024, Sec. 3
and 4.3), for every batch layout.

*The witness.*  Zero-out neighbours x = (-1, ..., -1, 1) and x' = (-1, ..., -1, ⊥), linear
query psi(x) = x (⊥ contributes 0), Gaussian noise sigma, s = 1 / sigma (times the
sensitivity).  Batch t of size |B_t| sums to -|B_t| unless it holds the differing record: then
-|B_t| + 2 under x and -|B_t| + 1 under x'.  The batch sizes are public, so after adding |B_t|
to release t one epoch's output is, given that the record sits in batch t, N(2 s e_t, I) under
x and N(s e_t, I) under x'; if the record is out of the epoch, N(0, I) under both.  A uniform
permutation puts the record in batch t with probability |B_t| / n, so

    P = p_0 N(0, I_T) + sum_t p_t N(2 s e_t, I_T),   Q = p_0 N(0, I_T) + sum_t p_t N(s e_t, I_T)

with p_t = b / n for a full batch, r / n for the short batch (``drop_last=False``,
r = n mod b) and p_0 = r / n the chance of sitting out (``drop_last=True``; else 0).  With
b | n this is the pair (P_S, Q_S) of eqs. (1)-(2) (p_t = 1 / T, p_0 = 0).

*Persistent shuffle and partial epochs.*  When the record's batch t is released c_t times
(c_t = E with one permutation kept for E epochs; one more for the first m batches of a
partial epoch), given t the outputs of batch t are c_t i.i.d. N(mu e_t, 1) (mu = 2s or s);
their density relative to the noise alone is exp(mu sqrt(c_t) Z_t - c_t mu^2 / 2) with
Z_t = (sum of the c_t outputs of batch t) / sqrt(c_t), so (Neyman factorisation) Z in R^T
is sufficient for the pair and the run is *exactly* the pair above with shift
s sqrt(c_t) on coordinate t (batches never released join p_0).

A :class:`Witness` holds (p_0, classes of coordinates (count, p_t, shift)); every statistic
of its output below is a post-processing, so its divergence is a certified lower bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from ...numerics.logspace import log1mexp
from .deterministic import gauss_epsilon

__all__ = [
    "Witness",
    "uniform_witness",
    "log_cdf_max",
    "log_sf_max",
    "eq7_log_masses",
    "hockey",
    "log_sub",
    "c_grid",
    "optimise_c",
    "count_log_pmfs",
    "eq7_delta",
    "eq7_epsilon",
    "SAFE",
]


@dataclass(frozen=True)
class Witness:
    """One epoch's (or a persistent run's) witness pair.

    ``sitout``: probability p_0 that the record is in no released batch; ``classes``:
    ``(count, p, shift)`` for ``count`` coordinates, each holding the record with
    probability ``p`` and shifted by ``shift`` (noise units) under x' (twice that under x).
    """

    sitout: float
    classes: tuple[tuple[int, float, float], ...]

    def __post_init__(self) -> None:
        cls = tuple((int(k), float(p), float(mu)) for k, p, mu in self.classes
                    if k > 0 and p > 0 and mu > 0)
        lost = sum(k * p for k, p, mu in self.classes if k > 0 and not (p > 0 and mu > 0))
        object.__setattr__(self, "classes", cls)
        object.__setattr__(self, "sitout", float(self.sitout) + float(lost))
        if not cls:
            raise ValueError("a witness needs at least one released batch holding the record")

    @property
    def T(self) -> int:  # noqa: N802 - the paper's name
        """Number of coordinates (released batches)."""
        return sum(k for k, _, _ in self.classes)

    @property
    def smax(self) -> float:
        """Largest shift (noise units)."""
        return max(mu for _, _, mu in self.classes)

    @property
    def uniform(self) -> bool:
        """True for the pair (P_S, Q_S) of eqs. (1)-(2): no sit-out, one class (p = 1/T)."""
        return self.sitout == 0.0 and len(self.classes) == 1

    def key(self) -> tuple:
        """A hashable summary (for caches)."""
        return (round(self.sitout, 15),
                tuple((k, round(p, 15), round(mu, 14)) for k, p, mu in self.classes))


def uniform_witness(s: float, T: int) -> Witness:
    """The pair (P_S, Q_S) of Chua et al. 2024, eqs. (1)-(2): T batches of probability 1/T."""
    return Witness(0.0, ((int(T), 1.0 / T, float(s)),))


def _log_terms(x: np.ndarray, w: Witness, factor: int, tail: bool) -> np.ndarray:
    """log of sum_t p_t g_t(x) (plus p_0 g_0(x)), g_t = Phi(x - factor mu_t) Phi(x)^{T-1}
    (``tail=False``) or 1 - that (``tail=True``, each term from log space: no cancellation
    when the max is far in its upper tail)."""
    base = (w.T - 1) * special.log_ndtr(x)
    comps = [(k * p, x - factor * mu) for k, p, mu in w.classes]
    if w.sitout > 0:
        comps.append((w.sitout, x))
    terms = []
    for weight, arg in comps:
        lg = special.log_ndtr(arg) + base
        terms.append(math.log(weight) + (log1mexp(np.minimum(lg, 0.0)) if tail else lg))
    with np.errstate(divide="ignore"):
        return special.logsumexp(np.stack(np.broadcast_arrays(*terms)), axis=0)


_LOG_HALF = math.log(0.5)


def log_sf_max(x: np.ndarray, w: Witness, factor: int) -> np.ndarray:
    """log P(max_t Z_t >= x) under the witness's P (``factor=2``) or Q (``factor=1``),
    accurate in the upper tail (a weighted sum of per-component tails)."""
    return _log_terms(np.asarray(x, dtype=float), w, factor, True)


def log_cdf_max(x: np.ndarray, w: Witness, factor: int) -> np.ndarray:
    """log P(max_t Z_t < x) when Z follows the witness's P (``factor=2``) or Q (``factor=1``):
    p_0 Phi(x)^T + sum_t p_t Phi(x - factor mu_t) Phi(x)^{T-1}.  Beyond the median of the
    max it is log(1 - tail) from :func:`log_sf_max` (a direct sum near 1 would round the
    tail away)."""
    x = np.asarray(x, dtype=float)
    if w.uniform:
        base = (w.T - 1) * special.log_ndtr(x)
        return special.log_ndtr(x - factor * w.classes[0][2]) + base
    direct = _log_terms(x, w, factor, False)
    return np.where(direct < _LOG_HALF, direct,
                    log1mexp(np.minimum(log_sf_max(x, w, factor), _LOG_HALF)))


def eq7_log_masses(c: np.ndarray, w: Witness) -> tuple[np.ndarray, ...]:
    """log P(E_c), log(1 - P(E_c)), log Q(E_c), log(1 - Q(E_c)) for
    E_c = {max_t w_t >= c} (Chua et al. 2024, Sec. 4.3), in noise units; for (P_S, Q_S):
    P_S(E_c) = 1 - Phi(c - 2s) Phi(c)^{T-1}, Q_S(E_c) = 1 - Phi(c - s) Phi(c)^{T-1}."""
    lp_c = np.minimum(log_cdf_max(c, w, 2), 0.0)
    lq_c = np.minimum(log_cdf_max(c, w, 1), 0.0)
    if w.uniform:
        return log1mexp(lp_c), lp_c, log1mexp(lq_c), lq_c
    lp = np.where(lp_c < _LOG_HALF, log1mexp(lp_c), log_sf_max(c, w, 2))
    lq = np.where(lq_c < _LOG_HALF, log1mexp(lq_c), log_sf_max(c, w, 1))
    return lp, lp_c, lq, lq_c


def hockey(la: np.ndarray, lb: np.ndarray) -> np.ndarray:
    """max(exp(la) - exp(lb), 0) computed from logs."""
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.where(la > lb, np.exp(la + log1mexp(np.minimum(lb - la, 0.0))), 0.0)
    return np.nan_to_num(d, nan=0.0, posinf=0.0)


def log_sub(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log(exp(a) - exp(b)) for a > b."""
    return a + log1mexp(np.minimum(b - a, 0.0))


def c_grid(s: float, T: int, eps_max: np.ndarray, num: int = 160) -> np.ndarray:
    """Thresholds c (noise units), one row per target: from T Phi(-c) = 100 up to beyond both
    T Phi(-c) = 1e-12 (plus 2s) and the Neyman-Pearson threshold (eps + 3 s^2 / 2) / s of a
    single coordinate."""
    lo = min(-special.ndtri(min(100.0 / T, 0.5)), 2 * s - 3.0)
    hi = np.maximum(-special.ndtri(1e-12 / T) + 2 * s, (eps_max + 1.5 * s * s) / s + 3.0)
    return lo + (hi - lo)[:, None] * np.linspace(0.0, 1.0, num)[None, :]


def optimise_c(objective, targets: np.ndarray, s: float, T: int, width_n: int,
               eps_max: np.ndarray, refine: int = 3) -> np.ndarray:
    """max over thresholds c of ``objective(c, targets)`` (both (m, k) arrays, one row per
    target), by a shared grid then ``refine`` rounds of local grids.  Every c gives a valid
    lower bound, so the optimisation needs no guarantee of its own."""
    targets = np.atleast_1d(np.asarray(targets, dtype=float))
    c0 = c_grid(s, T, np.broadcast_to(eps_max, targets.shape))
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


def count_log_pmfs(c: np.ndarray, w: Witness, E: int, extra: Witness | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """log pmfs of K = #{epochs whose max coordinate >= c} under P^{⊗E} and Q^{⊗E}:
    Bin(E, P(E_c)) and Bin(E, Q(E_c)), k = 0..E on the last axis; with ``extra`` (one more
    epoch, e.g. a partial one, with its own witness) K also counts it (k = 0..E+1)."""
    lp, lp_c, lq, lq_c = eq7_log_masses(np.asarray(c, dtype=float)[..., None], w)
    k = np.arange(E + 1, dtype=float)
    lcomb = special.gammaln(E + 1) - special.gammaln(k + 1) - special.gammaln(E - k + 1)

    def term(n: np.ndarray, logp: np.ndarray) -> np.ndarray:  # n log p with 0 log 0 = 0
        with np.errstate(invalid="ignore"):
            return np.where(n == 0, 0.0, n * logp)
    lP = lcomb + term(k, lp) + term(E - k, lp_c)
    lQ = lcomb + term(k, lq) + term(E - k, lq_c)
    if extra is None:
        return lP, lQ
    xp, xp_c, xq, xq_c = eq7_log_masses(np.asarray(c, dtype=float)[..., None], extra)
    pad = np.full(lP.shape[:-1] + (1,), -np.inf)

    def conv(lk: np.ndarray, hit: np.ndarray, miss: np.ndarray) -> np.ndarray:
        a = np.concatenate([lk, pad], axis=-1) + miss
        b = np.concatenate([pad, lk], axis=-1) + hit
        return np.logaddexp(a, b)
    return conv(lP, xp, xp_c), conv(lQ, xq, xq_c)


SAFE = 1.0 - 1e-9  # rounding lower bounds down


def _count_delta(lP: np.ndarray, lQ: np.ndarray, e: np.ndarray) -> np.ndarray:
    e = e[..., None]
    return np.maximum(hockey(lP, e + lQ).sum(-1), hockey(lQ, e + lP).sum(-1))


def eq7_delta(eps: np.ndarray, w: Witness, E: int = 1, extra: Witness | None = None
              ) -> np.ndarray:
    """Lower bound on delta(eps) over E epochs of the witness ``w`` (and ``extra`` once): max
    over c of the exact hockey-stick divergence (both directions) of the count of epochs in
    which E_c occurs.  For E = 1 this is eq. (7) (plus the complement of E_c and the reverse
    direction)."""
    def obj(c, e):
        lP, lQ = count_log_pmfs(c, w, E, extra)
        return _count_delta(lP, lQ, e)
    width = E + 1 + (extra is not None)
    return optimise_c(obj, eps, w.smax, w.T, width, np.asarray(eps, dtype=float)) * SAFE


def eq7_epsilon(delta: np.ndarray, w: Witness, E: int, s_up: float,
                extra: Witness | None = None, iterations: int = 46) -> np.ndarray:
    """Lower bound on eps(delta): max over c of sup{eps : delta_c(eps) > delta}.

    One epoch: closed form eps_c = log(A(E) - delta) - log B(E) over E in {E_c, complement}
    and (A, B) in {(P, Q), (Q, P)}.  Several: bisection per c on the count's pair, kept on the
    witness side (delta_c(eps) > delta at the returned eps), below eps_D(delta) at the
    Gaussian shift ``s_up`` of the run's upper bound (which dominates the witness)."""
    delta = np.atleast_1d(np.asarray(delta, dtype=float))
    if E == 1 and extra is None:
        def obj(c, d):
            lp, lp_c, lq, lq_c = eq7_log_masses(c, w)
            ld = np.log(d)
            best = np.zeros(np.broadcast_shapes(c.shape, d.shape))
            with np.errstate(invalid="ignore", divide="ignore"):
                for la, lb in ((lp, lq), (lp_c, lq_c), (lq, lp), (lq_c, lp_c)):
                    cand = np.where(la > ld, log_sub(la, ld) - lb, 0.0)
                    best = np.maximum(best, np.nan_to_num(cand, nan=0.0, posinf=0.0))
            return best
        val = optimise_c(obj, delta, w.smax, w.T, 1, gauss_epsilon(delta, s_up))
        return np.maximum(val - 1e-9 * (1.0 + val), 0.0)

    order = np.argsort(delta)
    d_sorted = delta[order]
    hi_sorted = gauss_epsilon(d_sorted, s_up) + 1e-6  # eps <= eps_D (upper bound)
    n_ep = E + (extra is not None)

    def obj(c, d):  # type: ignore[no-redef]  # (the one-epoch objective returned above)
        lP, lQ = count_log_pmfs(c, w, E, extra)
        hi = np.broadcast_to(np.interp(d[:, 0], d_sorted, hi_sorted)[:, None], c.shape).copy()
        lo = np.zeros(c.shape)
        ok = _count_delta(lP, lQ, lo) * SAFE > d
        for _ in range(iterations):
            mid = 0.5 * (lo + hi)
            above = _count_delta(lP, lQ, mid) * SAFE > d
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
        return np.where(ok, lo, 0.0)
    out = np.empty_like(delta)
    out[order] = optimise_c(obj, d_sorted, w.smax, w.T, (n_ep + 1) * 8, hi_sorted / n_ep,
                            refine=2)
    return out
