"""Certified Chernoff bounds on the tails of T-fold sums of nonnegative measures: the
windows outside which :mod:`privamp.numerics.fft`'s Fourier-domain powers and running
products may truncate (mass{S >= x} <= e^{-lam x} M(lam)^T for every lam > 0), with the
float error of the log-MGFs bounded.

Split from :mod:`privamp.numerics.fft` (issue 26).
"""

from __future__ import annotations

import math

import numpy as np

UNIT_ROUNDOFF = float(np.finfo(float).eps) / 2.0
_U_LD = float(np.finfo(np.longdouble).eps) / 2.0

__all__ = [
    "CHERNOFF_POINTS",
    "LAMBDAS",
    "PRODUCT_CHERNOFF_POINTS",
    "blocked_log_masses",
    "blocked_log_masses_both",
    "chernoff_k",
    "chernoff_lambda",
    "chernoff_tops",
    "chernoff_x",
    "log_mgf_bounds",
]


def chernoff_k(logp: np.ndarray, idx: np.ndarray, T: int, c: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """Three lambdas around the one picked for T, and certified upper bounds on K at them
    (valid for every T); :func:`chernoff_x` turns them into the bound: an integer x with
    mass{S >= x} <= tau (c = -log tau) for the T-fold sum S of the (nonnegative) measure
    with masses e^logp at the integer positions idx >= 0.

    Chernoff: mass{S >= x} <= e^{-lam x} M(lam)^T for every lam > 0, M(lam) = sum p_i
    e^{lam i} (for any nonnegative measure).  lam is picked on the masses merged into
    <= _SCAN_POINTS groups, each at its top position (:func:`_merged`): a geometric scan,
    then Newton steps on the stationarity condition of x(lam) = (T K(lam) - log tau) / lam,
    K = log M (from the moment guess alone Newton can stall far from the optimum for
    heavy-tailed p, e.g. PLDs at tiny sampling rates).  Any lam is valid: x is then
    certified on the full masses at that lam and two neighbours (:func:`log_mgf_bounds`,
    K inflated by a bound on its float error).
    """
    mlp, mix = _merged(logp, idx)
    lam = chernoff_lambda(mlp, mix, T, c)
    lams = lam * np.array([1.0 / 1.05, 1.0, 1.05])
    return lams, log_mgf_bounds(logp, idx, lams)


def chernoff_x(lams: np.ndarray, kb: np.ndarray, T: int, c: float) -> int | None:
    """The Chernoff bound min over ``lams`` of (T K(lam) + c) / lam, from upper bounds ``kb``
    on K, rounded up to an integer (None if not finite or huge)."""
    xs = (T * kb + c) / lams
    best = float(np.min(np.where(np.isfinite(xs), xs, np.inf)))
    if not math.isfinite(best) or abs(best) > 1e15:
        return None
    # (+1 and the factor cover the rounding of the quotient, also for negative best)
    return int(math.ceil(best * (1.0 + 8.0 * UNIT_ROUNDOFF))) + 1


def chernoff_lambda(logp: np.ndarray, idx: np.ndarray, T: int, c: float) -> float:
    """A lambda near the minimiser of x(lam) = (T K(lam) + c) / lam for the measure e^logp at
    idx (a geometric scan around a moment guess, over all scales if the best is at its
    edge, then a finer scan and Newton steps; a heuristic: any lambda gives a valid bound in
    :func:`chernoff_k`)."""
    top = float(idx[-1])
    w0 = np.exp(logp - logp.max())
    s0 = np.sum(w0)
    mean = float(np.sum(w0 * idx) / s0)
    var = float(np.sum(w0 * (idx - mean) ** 2) / s0)
    lam = math.sqrt(2.0 * c / (T * max(var, 1e-12)))
    lam = min(max(lam, 1e-12), 50.0)

    def scan(lams: np.ndarray) -> int | None:
        xs = (T * log_mgf_bounds(logp, idx, lams) + c) / lams
        fin = np.isfinite(xs)
        # (no NaN left after the where: argmin is nanargmin's first minimum, without its copy)
        return int(np.argmin(np.where(fin, xs, np.inf))) if fin.any() else None

    near = lam * _NEAR
    i = scan(near)  # the moment guess is good unless the tail is heavy (tiny rates)
    if i is None or i in (0, len(near) - 1):
        wide = _WIDE
        i = scan(wide)
        lam = lam if i is None else float(wide[i])
    else:
        lam = float(near[i])
    fine = lam * _FINE
    i = scan(fine)
    lam = lam if i is None else float(fine[i])
    best, best_lam = math.inf, lam
    shift = idx - top
    w, dev = np.empty(len(logp)), np.empty(len(logp))  # (float64, as the products were)
    for _ in range(8):
        # (in place, the same floats as w = exp(logp + lam (idx - top) - max), issue 28)
        np.multiply(shift, lam, out=w)
        w += logp
        mx = float(w.max())
        w -= mx
        np.exp(w, out=w)
        sw = float(w.sum())
        k = mx + math.log(sw) + lam * top  # K(lam)
        x = (T * k + c) / lam
        if not math.isfinite(x) or (best < math.inf and not x < best - 1e-6 * abs(best)):
            break  # no longer improving
        best, best_lam = x, lam
        np.multiply(w, idx, out=dev)
        m1 = float(dev.sum()) / sw
        np.subtract(idx, m1, out=dev)
        dev *= dev  # ((idx - m1) ** 2: numpy squares by one multiplication)
        dev *= w
        m2 = float(dev.sum()) / sw
        g = lam * T * m1 - T * k - c  # sign of x'(lam)
        gp = lam * T * max(m2, 1e-300)
        lam = min(max(lam - g / gp, lam / 4.0), 4.0 * lam, 50.0)
    return best_lam


CHERNOFF_POINTS = 4096


#: the scans of :func:`chernoff_lambda` (relative to its guess; wide: absolute), made once
_NEAR = np.geomspace(1.0 / 8.0, 8.0, 9)
_WIDE = np.geomspace(1e-12, 50.0, 48)
_FINE = np.geomspace(1.0 / 1.7, 1.7, 17)


#: the wide lambda scan of :func:`chernoff_k` runs on at most this many merged masses
_SCAN_POINTS = 1024


def _merged(logp: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log masses, positions) merged in consecutive groups (log-sum-exp, at the position
    of the group's heaviest entry) down to <= ``_SCAN_POINTS`` entries.  Only the lambda
    scan sees these (any lambda is valid): at the group's last position, a bulk at 0
    followed by zeros and a sparse tail (an optimistic PLD at a tiny sampling rate) was
    moved far up, and the scan picked a lambda whose window was 14 times too long (q 1e-6,
    sigma 0.05: 27.5M points, 2.1 GB)."""
    n = len(logp)
    g = -(-n // _SCAN_POINTS)
    if g <= 1:
        return logp, idx
    nb = -(-n // g)
    buf: np.ndarray = np.full(nb * g, -np.inf)
    buf[:n] = logp
    buf = buf.reshape(nb, g)
    am = np.argmax(buf, axis=1)
    rows = np.arange(nb)
    mx = buf[rows, am]  # (each row's max: buf.max(axis=1) is 3x slower on short rows)
    at = np.minimum(rows * g + am, n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        buf -= mx[:, None]  # (in place: the same values as exp(buf - mx))
        lse = mx + np.log(np.exp(buf, out=buf).sum(axis=1))
    return lse, idx[at]


def blocked_log_masses(p: np.ndarray, end: str, points: int = CHERNOFF_POINTS,
                        reverse: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(log masses, positions) of p's nonzero entries, or -- for long p -- of blocks of
    consecutive entries, each block's mass put at its last (``end="max"``) or first
    (``"min"``) index.  Moving mass up can only raise the moment generating function
    M(lam) = sum p_i e^{lam i} for lam > 0 (down: for the reversed positions), so a Chernoff
    bound for the blocked measure holds for p (:func:`chernoff_k`).  A block of mass m
    moved by up to b - 1 places raises a T-fold bound by about T m (b - 1) places, so the
    ``2 points / b`` heaviest blocks keep their entries (positions sorted): for a
    concentrated p (a PLD at a tiny sampling rate, nearly all mass within a few blocks) a
    blocked bulk would cost T block lengths.  ``reverse``: as the measure of the
    reflected positions n - 1 - i (increasing)."""
    logs, at_max, at_min = _blocks(p, points)
    if reverse:
        pos = at_max if end == "max" else at_min
        return logs[::-1], (len(p) - 1) - pos[::-1]
    return logs, at_max if end == "max" else at_min


def blocked_log_masses_both(p: np.ndarray, points: int = CHERNOFF_POINTS
                             ) -> tuple[tuple[np.ndarray, np.ndarray],
                                        tuple[np.ndarray, np.ndarray]]:
    """``(blocked_log_masses(p, "max"), blocked_log_masses(p, "min", reverse=True))`` from
    one blocking (the same blocks, sums and order; only the positions differ).

    Args:
        p: nonnegative masses with a positive entry.
        points: as :func:`blocked_log_masses`.

    Returns:
        The upper tail's and the reflected lower tail's (log masses, positions).
    """
    logs, at_max, at_min = _blocks(p, points)
    return (logs, at_max), (logs[::-1], (len(p) - 1) - at_min[::-1])


def _blocks(p: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For :func:`blocked_log_masses`: (log masses, positions at the blocks' last index,
    positions at their first), sorted by position (the same order for both: a block's
    positions lie inside its own range, disjoint from the other blocks' and entries')."""
    n = len(p)
    if n <= 2 * points:
        nz = np.nonzero(p > 0)[0]
        at = nz.astype(float)
        return np.log(p[nz]), at, at
    b = -(-n // points)
    nb = -(-n // b)
    buf = np.zeros(nb * b)
    buf[:n] = p
    sums = buf.reshape(nb, b).sum(axis=1) * (1.0 + (b + 2) * UNIT_ROUNDOFF)
    first = np.arange(nb) * b
    last = np.minimum(first + (b - 1), n - 1)
    k = min(max(1, (2 * points) // b), nb)
    exact = np.zeros(nb, dtype=bool)
    exact[np.argpartition(-sums, k - 1)[:k]] = True
    keep = (sums > 0) & ~exact
    # (issue 28, session 12: the kept blocks' last indices and the exact blocks' positive
    # entries are distinct positions, so their merged order is that of a mask over the
    # positions -- no argsort; the same values in the same order)
    in_exact = np.repeat(exact, b)[:n]
    sel = in_exact & (p > 0)
    tops = last[keep]
    sel[tops] = True
    pos = np.flatnonzero(sel)
    val = np.array(p, dtype=float)
    val[tops] = sums[keep]
    with np.errstate(divide="ignore"):
        logs = np.log(val[pos])
    at_max = pos.astype(float)
    at_min = at_max.copy()
    blk = ~in_exact[pos]
    at_min[blk] = first[pos[blk] // b]
    return logs, at_max, at_min


#: the Chernoff bounds of :func:`product_windows` minimise over this fixed grid of lambdas
#: (any lambda > 0 gives a valid bound; the grid only sets how close to the best)
LAMBDAS = np.geomspace(1e-7, 50.0, 64)


#: ... over masses summed in at most this many blocks (each costs one block's length)
PRODUCT_CHERNOFF_POINTS = 256


def log_mgf_bounds(logp: np.ndarray, idx: np.ndarray,
                    lambdas: np.ndarray = LAMBDAS) -> np.ndarray:
    """Upper bounds on K(lam) = log sum_i p_i e^{lam idx_i} at every lam of ``lambdas``
    (inflated by the float-error bound of :func:`chernoff_k`)."""
    top = float(idx[-1])
    lam = lambdas[:, None]
    a = lam * (idx[None, :] - top)
    a += logp[None, :]
    mx = a.max(axis=1)
    amax = np.maximum(mx, -a.min(axis=1))  # max |a| per row (the same value, one pass less)
    a -= mx[:, None]
    np.exp(a, out=a)  # (in place: the same values as exp(a - mx), issue 28)
    k = mx + np.log(a.sum(axis=1)) + lambdas * top
    err = 4.0 * _U_LD + 8.0 * UNIT_ROUNDOFF * (len(logp) + 8.0 + amax
                                               + lambdas * top + np.abs(k))
    return k + err


def chernoff_tops(terms: list[np.ndarray], log_tau: float) -> np.ndarray | None:
    """Per k, an integer x_k with mass{S_k >= x_k} <= tau for the sum S_k of the first k of
    independent nonnegative measures whose log-MGF bounds on ``LAMBDAS`` are ``terms``:
    mass{S_k >= x} <= e^{-lam x} prod_j M_j(lam) for every lam > 0 (Chernoff), so
    x_k = min over lam of (sum_j K_j(lam) - log tau) / lam.  The running sums are inflated
    by their float error (k + 2) u sum |K_j| (Higham 2002, eq. (4.4)), the quotient as in
    :func:`chernoff_k`."""
    rows = np.asarray(terms)
    cum = np.cumsum(rows, axis=0)
    kk = np.arange(1, len(rows) + 1)[:, None]
    cum = cum + 4.0 * (kk + 2) * UNIT_ROUNDOFF * np.cumsum(np.abs(rows), axis=0)
    best = ((cum - log_tau) / LAMBDAS[None, :]).min(axis=1)
    if not np.all(np.isfinite(best)) or np.any(np.abs(best) > 1e15):
        return None
    return np.ceil(best * (1.0 + 8.0 * UNIT_ROUNDOFF)).astype(np.int64) + 1
