"""References for the T-fold product of the Gaussian shift-mixture pair, written from scratch
(no privamp import): P = sum_j w_j N(j s, 1) against Q = N(0, 1), the remove direction
(P, Q) and the add direction (Q, P).  With w = Binom(K, q) this is the dominating (and
realised) pair of a group of K records under Poisson sampling at rate q (Schuchardt et al.
2024, arXiv:2403.04867, Sec. 4); K = 1 is the single-record Poisson subsampled Gaussian.

Two independent methods:

* :func:`mc_delta`: plain Monte Carlo of delta(eps) = E_P[(1 - e^{eps - L})_+] (remove) or
  E_Q[(1 - e^{eps + L})_+] (add), L = sum_t log(dP/dQ)(x_t), with the sample mean and its
  standard error (the summand lies in [0, 1]).
* :func:`cf_delta`: the hockey-stick divergence as a call option on e^L under Q (E_Q e^L = 1)
  priced by Lewis's (2001) Fourier formula,
  delta(eps) = 1 - e^{eps/2} / pi * int_0^inf Re[e^{-i u eps} M(1/2 + i u)^T] / (u^2 + 1/4) du,
  M(z) = E_Q[e^{z L_1}] the one-step moment generating function on the line Re z = 1/2
  (the add direction uses e^{+i u eps}: M(1/2 - i u) is the conjugate).  M - 1 is a
  trapezoid sum of expm1(z L_1) against the N(0, 1) density (analytic, Gaussian-decaying
  integrand: the trapezoid rule converges geometrically), log M = log1p(M - 1), and the u
  integral is a trapezoid sum too; :func:`cf_delta` halves both steps and returns the value
  with the change as its numerical error estimate.  No loss discretisation is involved.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats


def binomial_weights(k: int, q: float) -> np.ndarray:
    """Binom(j | k, q) for j = 0..k (the number of group members in a Poisson batch)."""
    return stats.binom.pmf(np.arange(k + 1), k, q)


def step_loss(x: np.ndarray, w: np.ndarray, s: float) -> np.ndarray:
    """log(dP/dQ)(x) = log sum_j w_j exp(j s x - (j s)^2 / 2): by Horner's rule in e^{s x}
    (positive coefficients: relative error a few ulps) where that cannot overflow, else in
    log-sum-exp form."""
    x = np.asarray(x, dtype=float)
    k = len(w) - 1
    if x.size and k * s * max(float(np.max(x)), 0.0) < 600 and k * s * float(np.min(x)) > -600:
        c = w * np.exp(-(np.arange(k + 1) * s) ** 2 / 2)
        v = np.exp(s * x)
        acc = np.full_like(x, c[k])
        for j in range(k - 1, -1, -1):
            acc *= v
            acc += c[j]
        return np.log(acc)
    j = np.arange(len(w), dtype=float)
    with np.errstate(divide="ignore"):
        logw = np.log(w)
    a = logw[:, None] + j[:, None] * s * np.asarray(x, dtype=float).reshape(1, -1) \
        - (j[:, None] * s) ** 2 / 2
    return special.logsumexp(a, axis=0).reshape(np.shape(x))


def mc_delta(k: int, q: float, s: float, steps: int, eps: np.ndarray, n: int, seed: int,
             direction: str = "remove", chunk: int = 10_000) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo estimate of the T-fold product's delta(eps) and its standard error.

    Args:
        k, q: the group size and the Poisson rate (weights Binom(k, q));
        s: the shift Delta / sigma; steps: T.
        eps: the epsilons (1-d array).
        n: number of samples of the T-step run; seed: numpy seed.
        direction: "remove" (samples from P) or "add" (samples from Q).
        chunk: samples per vectorised block.

    Returns:
        (mean, standard error), arrays shaped like eps.
    """
    eps = np.atleast_1d(np.asarray(eps, dtype=float))
    rng = np.random.default_rng(seed)
    w = binomial_weights(k, q)
    total = np.zeros_like(eps)
    total2 = np.zeros_like(eps)
    done = 0
    while done < n:
        m = min(chunk, n - done)
        x = rng.standard_normal((m, steps))
        if direction == "remove":
            x += s * rng.binomial(len(w) - 1, q, size=(m, steps))
            big_l = step_loss(x, w, s).sum(axis=1)
        elif direction == "add":
            big_l = -step_loss(x, w, s).sum(axis=1)
        else:
            raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")
        f = -np.expm1(np.minimum(eps[None, :] - big_l[:, None], 0.0))
        total += f.sum(axis=0)
        total2 += (f * f).sum(axis=0)
        done += m
    mean = total / n
    var = np.maximum(total2 / n - mean ** 2, 0.0) * n / (n - 1)
    return mean, np.sqrt(var / n)


def log_mgf(w: np.ndarray, s: float, re: float, u: np.ndarray, dx: float) -> np.ndarray:
    """log M(re + i u), M(z) = E_{N(0,1)} e^{z L_1(x)}, by the trapezoid rule of step dx
    (M - 1 summed as expm1, then log1p)."""
    k = len(w) - 1
    x = np.arange(-14.0 + min(re, 0.0) * k * s, max(re, 1.0) * k * s + 14.0 + dx, dx)
    lx = step_loss(x, w, s)
    logdens = -x * x / 2 - 0.5 * math.log(2 * math.pi) + math.log(dx)
    dens = np.exp(logdens)
    small = np.abs(re * lx) < 1.0  # expm1 there (accuracy); elsewhere e^{z L + log dens}
    u = np.asarray(u, dtype=float)
    out = np.empty(len(u), dtype=complex)
    for lo in range(0, len(u), 256):  # blocks of u: the (u, x) matrix stays small
        z = re + 1j * u[lo:lo + 256, None]
        zl = z * lx[None, :]
        with np.errstate(over="ignore", invalid="ignore"):
            terms = np.where(small[None, :], np.expm1(zl) * dens[None, :],
                             np.exp(zl + logdens[None, :]) - dens[None, :])
        out[lo:lo + 256] = np.log1p(terms.sum(axis=1))
    return out


def _log_mgf(w, s, u, dx):
    return log_mgf(w, s, 0.5, u, dx)


def cf_delta_tilted(w: np.ndarray, s: float, steps: int, eps: float, a: float,
                    direction: str = "remove", du: float = 0.002, upper: float = 40.0,
                    dx: float = 0.005) -> float:
    """delta(eps) by the damped (Carr-Madan) Fourier formula on the line Re z = a > 1:
    delta = e^{-(a-1) eps} / pi * int_0^inf Re[e^{-i u eps} M_d(a + i u)^T /
    ((a - 1 + i u)(a + i u))] du, M_d the direction's one-step moment generating function
    (remove: M; add: M_add(z) = M(1 - z)).  No 1 - (...) cancellation, so it resolves small
    deltas at large eps; a near the saddle point (T (log M_d)'(a) = eps) is best.

    Returns:
        The value (trapezoid sums of steps du, dx over u in [0, upper]).
    """
    u = np.arange(0.0, upper + du, du)
    if direction == "remove":
        lm = log_mgf(w, s, a, u, dx)
    else:
        lm = np.conj(log_mgf(w, s, 1.0 - a, u, dx))  # M(1 - a - i u) = conj M(1 - a + i u)
    g = (np.exp(steps * lm - 1j * u * eps - (a - 1) * eps)
         / ((a - 1 + 1j * u) * (a + 1j * u))).real
    return float(du * (g.sum() - g[0] / 2 - g[-1] / 2) / math.pi)


def cf_range(w: np.ndarray, s: float, steps: int, tol: float = 1e-14) -> float:
    """The u range of the Fourier integral: the first u of the sequence 4 * 1.5^m with
    |M(1/2 + i u)|^T / u^2 < tol (each probe on an x grid resolving e^{i u L_1})."""
    upper = 4.0
    slope = max((len(w) - 1) * s, 1e-3)  # L_1'(x) <= K s
    while steps * _log_mgf(w, s, np.array([upper]), 0.25 / (upper * slope)).real[0] \
            - 2 * math.log(upper) > math.log(tol):
        upper *= 1.5
        if upper > 1e4:
            raise ValueError("cf_range: |M|^T decays too slowly (small T?)")
    return upper


def _cf_once(w, s, steps, eps, du, dx, upper, direction):
    sign = -1.0 if direction == "remove" else 1.0
    u = np.arange(0.0, upper + du, du)
    a = steps * _log_mgf(w, s, u, dx)
    g = np.exp(a[None, :] + 1j * sign * u[None, :] * eps[:, None]).real / (u * u + 0.25)
    integral = du * (g.sum(axis=1) - g[:, 0] / 2 - g[:, -1] / 2)
    return 1.0 - np.exp(eps / 2) / math.pi * integral


def cf_delta(w: np.ndarray, s: float, steps: int, eps: np.ndarray, direction: str = "remove",
             du: float | None = None, dx: float | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
    """delta(eps) of the T-fold product by Lewis's Fourier formula (see the module docstring).

    Args:
        w, s, steps: as :func:`mc_delta`; eps: the epsilons (1-d array).
        direction: "remove" or "add".
        du: the u step (default: a tenth of the scale 1 / (1 + sd + |mean - eps|) of the
            composed loss); dx: the x step of the one-step quadrature (default: resolves
            e^{i u L_1} up to the u range of :func:`cf_range`).

    Returns:
        (value, error estimate): the value at steps (du, dx), and the larger of its change
        from (2 du, 2 dx) and 1e-15 T (the one-step quadrature's rounding, about 1e-17 to
        1e-16 in M - 1, is raised to the power T: at T = 1e5 the value moved by ~1e-11 under
        changes of dx that the halving estimate missed; :func:`tilted_delta` has no such
        floor, use it for small deltas).
    """
    eps = np.atleast_1d(np.asarray(eps, dtype=float))
    if du is None:
        # the composed loss under Q: mean and sd from one-step moments (quadrature)
        x = np.arange(-14.0, (len(w) - 1) * s + 14.0, 0.01)
        dens = np.exp(-x * x / 2) / math.sqrt(2 * math.pi) * 0.01
        lx = step_loss(x, w, s)
        mean = steps * float(lx @ dens)
        sd = math.sqrt(steps * max(float(lx * lx @ dens) - (mean / steps) ** 2, 0.0))
        du = 0.1 / (1.0 + sd + float(np.max(np.abs(mean - eps))) + float(np.max(eps)))
    upper = cf_range(w, s, steps)
    if dx is None:
        dx = min(0.02, 0.125 / (upper * max((len(w) - 1) * s, 1e-3)))
    fine = _cf_once(w, s, steps, eps, du, dx, upper, direction)
    coarse = _cf_once(w, s, steps, eps, 2 * du, 2 * dx, upper, direction)
    return fine, np.maximum(np.abs(fine - coarse), 1e-15 * steps)
def saddle(w: np.ndarray, s: float, steps: int, eps: float, direction: str = "remove"
           ) -> float:
    """The a > 1 with T (d/da) log M_d(a) = eps (bisection; central differences at u = 0),
    clipped to [1.2, 8]: the line Re z = a where the damped integrand is flattest."""
    def slope(a: float) -> float:
        with np.errstate(over="ignore", invalid="ignore"):
            return raw_slope(a)

    def raw_slope(a: float) -> float:
        h = 1e-4
        if direction == "remove":
            lm = log_mgf(w, s, a + h, np.zeros(1), 0.002).real[0] \
                - log_mgf(w, s, a - h, np.zeros(1), 0.002).real[0]
        else:
            lm = log_mgf(w, s, 1 - a - h, np.zeros(1), 0.002).real[0] \
                - log_mgf(w, s, 1 - a + h, np.zeros(1), 0.002).real[0]
        value = steps * lm / (2 * h) - eps
        return value if np.isfinite(value) else math.inf  # e^{a L} overflowed: a too large
    lo, hi = 1.2, 8.0
    if slope(lo) >= 0:
        return lo
    if slope(hi) <= 0:
        return hi
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if slope(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


def tilted_delta(w: np.ndarray, s: float, steps: int, eps: float, direction: str = "remove"
                 ) -> tuple[float, float]:
    """delta(eps) by :func:`cf_delta_tilted` at the saddle point a, with an error estimate:
    the spread over (a, du, dx), (a + 0.1, du, dx) and (a, du / 2, dx / 2).  The u range is
    where |M_d(a + i u)|^T has fallen by e^-40 from u = 0.

    Returns:
        (value, error estimate).
    """
    a = saddle(w, s, steps, eps, direction)
    re = a if direction == "remove" else 1.0 - a
    dx = 0.005
    base = steps * log_mgf(w, s, re, np.zeros(1), dx).real[0]
    upper = 1.0
    while steps * log_mgf(w, s, re, np.array([upper]), dx).real[0] - base > -40:
        upper *= 1.5
        if upper > 200:
            raise ValueError("tilted_delta: |M|^T decays too slowly (small T?)")
    du = upper / 1000
    vals = [cf_delta_tilted(w, s, steps, eps, a, direction, du, upper, dx),
            cf_delta_tilted(w, s, steps, eps, a + 0.1, direction, du, upper, dx),
            cf_delta_tilted(w, s, steps, eps, a, direction, du / 2, upper, dx / 2)]
    return vals[0], max(vals) - min(vals)
