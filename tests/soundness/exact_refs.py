"""Exact references for the soundness suite and benchmarks/fuzz.py, written independently of
privamp (no privamp import here): closed forms, binomial sufficient statistics, mpmath
quadrature, and nested 1-D quadrature of explicit Gaussian-mixture pairs.

Conventions: ``delta(eps)`` is the hockey-stick divergence D_{e^eps}(P || Q); a curve of a
neighbouring relation is the max over both orders of the pair.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
from scipy import integrate
from scipy.special import ndtr


# ------------------------------------------------------------------------------------------
# Gaussian and Laplace closed forms
# ------------------------------------------------------------------------------------------
def gaussian_delta(eps: float, mu: float) -> float:
    """D_{e^eps}(N(mu,1) || N(0,1)) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu), in mpmath
    (30 digits) so that tiny values keep their relative accuracy."""
    with mp.workdps(30):
        m, e = mp.mpf(mu), mp.mpf(eps)
        return float(mp.ncdf(m / 2 - e / m) - mp.exp(e) * mp.ncdf(-m / 2 - e / m))


def laplace_delta(eps: float, eps0: float) -> float:
    """One Laplace release with eps0 = sensitivity / scale: delta(eps) = 1 - e^{(eps-eps0)/2}
    for eps < eps0, else 0 (direct integration of (p - e^eps q)_+)."""
    if eps >= eps0:
        return 0.0
    return -math.expm1((eps - eps0) / 2)


# ------------------------------------------------------------------------------------------
# Poisson-subsampled randomized response, T-fold: binomial sufficient statistic
# ------------------------------------------------------------------------------------------
def rr_poisson_delta(eps: float, theta: float, q: float, T: int, dps: int = 0) -> float:
    """Exact delta(eps) of T steps of Poisson(q)-subsampled randomized response under
    add/remove: the per-step pair is P = Bern(q theta + (1-q)(1-theta)) (record present: it
    answers truthfully w.p. theta, else the absent answer Bern(1-theta)) against
    Q = Bern(1-theta), and both orders are taken.  The number of ones is sufficient, so the
    T-fold hockey stick is a sum over k ~ Bin(T, .).  ``dps`` > 0: mpmath at that precision."""
    p1 = q * theta + (1 - q) * (1 - theta)
    q1 = 1 - theta
    if dps:
        with mp.workdps(dps):
            a, b, E = mp.mpf(p1), mp.mpf(q1), mp.exp(mp.mpf(eps))
            best = mp.mpf(0)
            for x, y in ((a, b), (b, a)):
                s = mp.mpf(0)
                for k in range(T + 1):
                    c = mp.binomial(T, k)
                    px = c * x**k * (1 - x) ** (T - k)
                    py = c * y**k * (1 - y) ** (T - k)
                    if px > E * py:
                        s += px - E * py
                best = max(best, s)
            return float(best)
    k = np.arange(T + 1)
    lc = np.array([math.lgamma(T + 1) - math.lgamma(i + 1) - math.lgamma(T - i + 1) for i in k])
    best = 0.0
    for x, y in ((p1, q1), (q1, p1)):
        lp = lc + k * math.log(x) + (T - k) * math.log1p(-x)
        lq = lc + k * math.log(y) + (T - k) * math.log1p(-y)
        d = eps + lq - lp
        m = d < 0
        best = max(best, math.fsum(np.exp(lp[m]) * -np.expm1(d[m])))
    return best


# ------------------------------------------------------------------------------------------
# Sampled Gaussian RDP (removal direction), Mironov et al. 2019 definition
# ------------------------------------------------------------------------------------------
def sgm_rdp_integer(alpha: int, sigma: float, q: float, dps: int = 40) -> float:
    """D_alpha((1-q)N(0,s^2) + q N(1,s^2) || N(0,s^2)) for integer alpha: binomial expansion
    E_Q[(1-q + q L)^a] = sum_k C(a,k) (1-q)^(a-k) q^k e^{k(k-1)/(2 s^2)}, all terms positive."""
    with mp.workdps(dps):
        s2, qq = mp.mpf(sigma) ** 2, mp.mpf(q)
        a = int(alpha)
        tot = mp.fsum(
            mp.binomial(a, k) * (1 - qq) ** (a - k) * qq**k * mp.exp(k * (k - 1) / (2 * s2))
            for k in range(a + 1)
        )
        return float(mp.log(tot) / (a - 1))


def sgm_rdp_mp(alpha: float, sigma: float, q: float, dps: int = 40) -> float:
    """Same divergence at a real order alpha > 1 by mpmath quadrature (``dps`` digits) of
    E_{z~N(0,s^2)}[(1 - q + q e^{(2z-1)/(2s^2)})^alpha].  The integrand has at most two modes
    (z ~ 0 from the N(0) part, z ~ alpha from the q e^{...} part); the integration range is cut
    at sigma-spaced points around both and at the crossing of the two parts.  The working
    precision grows with -log10(q^2): A - 1 is of order q^2 and must keep ``dps`` digits."""
    dps = dps + int(2 * max(0.0, -math.log10(q))) + 5
    with mp.workdps(dps):
        a, s, qq = mp.mpf(alpha), mp.mpf(sigma), mp.mpf(q)
        c = 1 / (2 * s**2)
        lq, l1q = mp.log(qq), mp.log1p(-qq)

        def f(z):
            u = lq + (2 * z - 1) * c - l1q  # log of q e^{...} / (1-q)
            return mp.exp(a * (l1q + mp.log1p(mp.exp(u))) - z**2 * c) / (s * mp.sqrt(2 * mp.pi))

        cross = mp.mpf(0.5) + (l1q - lq) * s**2
        pts = set()
        for centre in (mp.mpf(0), a, cross, mp.mpf(1)):
            for j in range(-12, 13):
                pts.add(centre + j * s)
        pts = sorted(pts)
        val = mp.quad(f, [-mp.inf, *pts, mp.inf])
        return float(mp.log(val) / (a - 1))


# ------------------------------------------------------------------------------------------
# Explicit 1-D Gaussian-mixture pairs, composed T times by nested quadrature
# ------------------------------------------------------------------------------------------
class MixturePair:
    """P = sum_i w_i N(m_i, s^2), Q = sum_j v_j N(u_j, s^2) on the line, with a privacy loss
    log p/q that increases in y (true for every pair built below: Q's means are <= P's)."""

    def __init__(self, wp, mp_, wq, mq, s):
        self.wp, self.mp = np.asarray(wp, float), np.asarray(mp_, float)
        self.wq, self.mq = np.asarray(wq, float), np.asarray(mq, float)
        self.s = float(s)
        lo = min(self.mp.min(), self.mq.min()) - 40 * self.s
        hi = max(self.mp.max(), self.mq.max()) + 40 * self.s
        self.lo, self.hi = lo, hi

    def _logmix(self, y, w, m):
        y = np.asarray(y, float)[..., None]
        with np.errstate(divide="ignore"):  # a zero weight is a -inf log weight
            z = -((y - m) ** 2) / (2 * self.s**2) + np.log(w)
        zm = z.max(axis=-1)
        return zm + np.log(np.exp(z - zm[..., None]).sum(axis=-1))

    def loss(self, y):
        return self._logmix(y, self.wp, self.mp) - self._logmix(y, self.wq, self.mq)

    def pdf_p(self, y):
        return np.exp(self._logmix(y, self.wp, self.mp)) / (self.s * math.sqrt(2 * math.pi))

    def tail(self, y, which, upper):
        w, m = (self.wp, self.mp) if which == "P" else (self.wq, self.mq)
        z = (np.asarray(y, float)[..., None] - m) / self.s
        return (w * (ndtr(-z) if upper else ndtr(z))).sum(axis=-1)

    def inverse_loss(self, c):
        """y with loss(y) = c, vectorised bisection (loss increasing)."""
        c = np.asarray(c, float)
        a = np.full(c.shape, self.lo)
        b = np.full(c.shape, self.hi)
        for _ in range(80):
            mid = 0.5 * (a + b)
            big = self.loss(mid) > c
            b = np.where(big, mid, b)
            a = np.where(big, a, mid)
        return 0.5 * (a + b)

    def delta1(self, c, order="PQ"):
        """One-step hockey stick at a real exponent c (may be negative):
        PQ: P(l > c) - e^c Q(l > c);  QP: Q(l < -c) - e^c P(l < -c)."""
        c = np.asarray(c, float)
        if order == "PQ":
            y = self.inverse_loss(c)
            v = self.tail(y, "P", True) - np.exp(c) * self.tail(y, "Q", True)
        else:
            y = self.inverse_loss(-c)
            v = self.tail(y, "Q", False) - np.exp(c) * self.tail(y, "P", False)
        return np.maximum(v, 0.0)

    def delta(self, eps: float, T: int, order: str = "PQ") -> float:
        """D_{e^eps}(first^T || second^T) via delta_T(c) = E_{Y~first}[delta_{T-1}(c - l(Y))]
        (l the loss of the first against the second), adaptive quadrature (T <= 3)."""
        if T == 1:
            return float(self.delta1(eps, order))
        if order == "PQ":
            dens, sign = self.pdf_p, 1.0
        else:
            def dens(y):
                return np.exp(self._logmix(y, self.wq, self.mq)) / (self.s * math.sqrt(2 * math.pi))
            sign = -1.0

        def inner(y, c, t):
            lv = sign * float(self.loss(y))
            return float(dens(y)) * self.delta(c - lv, t - 1, order)

        pts = sorted(set(np.concatenate([self.mp, self.mq]).tolist()))
        lo = min(pts) - 12 * self.s
        hi = max(pts) + 12 * self.s
        val, _ = integrate.quad(inner, lo, hi, args=(eps, T), points=pts, limit=200,
                                epsabs=1e-13, epsrel=1e-10)
        return float(val)

    def curve(self, eps: float, T: int) -> float:
        return max(self.delta(eps, T, "PQ"), self.delta(eps, T, "QP"))


def mixture_remove(weights, means, s) -> MixturePair:
    """(sum_j w_j N(m_j), N(0)) with m_j >= 0."""
    return MixturePair(weights, means, [1.0], [0.0], s)


def binom_weights(b: int, p: float) -> np.ndarray:
    return np.array([math.comb(b, j) * p**j * (1 - p) ** (b - j) for j in range(b + 1)])


# ------------------------------------------------------------------------------------------
# Balanced iteration k = 1 and Chua's shuffle pair: T-dimensional mixtures
# ------------------------------------------------------------------------------------------
def balanced_k1_delta(eps: float, sigma: float, T: int) -> float:
    """Exact delta of one epoch of balanced iteration with k = 1 (T steps, Gaussian noise sigma,
    sensitivity 1, add/remove): P = (1/T) sum_t N(e_t, s^2 I), Q = N(0, s^2 I), both orders.

    With x_t = exp((y_t - 1/2)/s^2), dP/dQ = mean_t x_t.  Condition on y_1..y_{T-1}
    (integrated numerically under Q, T <= 3) and integrate y_T in closed form:
    E_Q[(L - g)_+] and E_Q[(g' - L)_+] for L = A + x_T/T with x_T log-normal."""
    s = sigma
    g = math.exp(eps)

    # under Q: y_T ~ N(0, s^2), x_T = exp((y - 1/2)/s^2), E_Q[x_T 1{y > y*}] = Phi((1 - y*)/s)
    def remove_inner(A):
        # E_Q[(A + x/T - g)_+]
        if A >= g:
            return A - g + 1.0 / T  # E[x] = 1
        ystar = s**2 * math.log(T * (g - A)) + 0.5
        return ndtr(1 / s - ystar / s) / T - (g - A) * ndtr(-ystar / s)

    def add_inner(A):
        # E_P[(1 - g/L)_+] = E_Q[(L - g L)... ] -> D(Q || P) = E_Q[(1 - g L)_+]
        # (1 - g (A + x/T))_+ > 0  iff  x < T (1/g - A)
        r = 1.0 / g - A
        if r <= 0:
            return 0.0
        ystar = s**2 * math.log(T * r) + 0.5
        return ndtr(ystar / s) * (1 - g * A) - g / T * ndtr(ystar / s - 1 / s)

    def expect(fun):
        if T == 1:
            return fun(0.0)
        dens = lambda y: math.exp(-y * y / (2 * s * s)) / (s * math.sqrt(2 * math.pi))  # noqa: E731
        xs = lambda y: math.exp((y - 0.5) / s**2)  # noqa: E731
        lo, hi = -12 * s, 1 + 12 * s
        if T == 2:
            v, _ = integrate.quad(lambda y: dens(y) * fun(xs(y) / 2), lo, hi,
                                  points=[0.0, 0.5, 1.0], limit=400, epsabs=1e-13, epsrel=1e-10)
            return v
        if T == 3:
            v, _ = integrate.dblquad(
                lambda y2, y1: dens(y1) * dens(y2) * fun((xs(y1) + xs(y2)) / 3),
                lo, hi, lo, hi, epsabs=1e-12, epsrel=1e-9)
            return v
        raise ValueError("T must be 1, 2 or 3")

    return max(expect(remove_inner), expect(add_inner))


def chua_eq7(eps: float, sigma: float, T: int, grid: np.ndarray | None = None) -> float:
    """Chua et al. 2024 eq. (7) for one epoch of shuffled batches (T steps): max over C of
    P_S(E_C) - e^eps Q_S(E_C), P_S(E_C) = 1 - Phi((C-2)/s) Phi(C/s)^(T-1),
    Q_S(E_C) = 1 - Phi((C-1)/s) Phi(C/s)^(T-1).  Any C gives a valid lower bound (if the pair
    is realised), so a finite grid is fine; computed in mpmath for accuracy."""
    if grid is None:
        grid = np.linspace(-2.0, 2.0 + 40 * sigma + eps * sigma**2 + 5, 4001)
    best = 0.0
    with mp.workdps(30):
        s = mp.mpf(sigma)
        E = mp.exp(mp.mpf(eps))
        for C in grid:
            C = mp.mpf(float(C))
            base = mp.ncdf(C / s) ** (T - 1)
            p = 1 - mp.ncdf((C - 2) / s) * base
            qv = 1 - mp.ncdf((C - 1) / s) * base
            best = max(best, float(p - E * qv))
    return best


def chua_eq7_fast(eps: float, sigma: float, T: int, points: int = 2001) -> float:
    """chua_eq7 in float (log-space products), vectorised over the grid of C; each grid value
    is a valid lower bound, computed to ~1e-15 relative error of the two masses."""
    from scipy.special import log_ndtr

    C = np.linspace(-2.0, 2.0 + 40 * sigma + eps * sigma**2 + 5, points)
    base = (T - 1) * log_ndtr(C / sigma)
    p = -np.expm1(log_ndtr((C - 2) / sigma) + base)
    qv = -np.expm1(log_ndtr((C - 1) / sigma) + base)
    return float(max(0.0, np.max(p - math.exp(eps) * qv)))


def sgm_rdp_integer_float(alpha: int, sigma: float, q: float) -> float:
    """sgm_rdp_integer in float: A - 1 = sum_{k>=2} C(a,k) q^k (1-q)^(a-k) (e^{k(k-1)/(2s^2)} - 1)
    (the k <= 1 terms cancel against 1 exactly), log-sum-exp of those positive terms, then
    log1p: relative error ~1e-14 even when A - 1 is far below float epsilon."""
    a = int(alpha)
    k = np.arange(2, a + 1)
    lc = np.array([math.lgamma(a + 1) - math.lgamma(i + 1) - math.lgamma(a - i + 1) for i in k])
    lq = math.log(q)
    l1q = math.log1p(-q) if q < 1 else -np.inf
    with np.errstate(invalid="ignore", divide="ignore"):
        t = lc + k * lq + np.where(a - k > 0, (a - k) * l1q, 0.0)
    x = k * (k - 1) / (2 * sigma**2)
    with np.errstate(over="ignore"):
        t = t + np.where(x > 30, x + np.log1p(-np.exp(-np.minimum(x, 700))),
                         np.log(np.expm1(np.minimum(x, 30))))
    m = t.max()
    lam1 = m + math.log(np.exp(t - m).sum())  # log(A - 1)
    la = math.log1p(math.exp(lam1)) if lam1 < 30 else lam1 + math.log1p(math.exp(-lam1))
    return float(la / (a - 1))
