"""Certified quadrature for the quadrature-based Rényi-DP values (issue 17, item 1).

References are independent: mpmath (40 digits) quadrature of the defining integrals on split
intervals, written here from the definitions (not from privamp's code), and the exact value
printed in dp-accounting's own test suite.  Every privamp value labelled an upper bound must be
>= the reference, and within a small relative tolerance of it (the results are tight).
"""

from __future__ import annotations

import itertools
import math
from functools import cache

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.numerics.mixture_divergence import gaussian_mixture_log_excess
from privamp.theorems.mironov2019 import sampled_gaussian_rdp
from privamp.theorems.schuchardt2024 import poisson_group_gaussian_rdp

mp.mp.dps = 40
TOL = 1e-9  # relative tightness expected of the certified values


def _mp_quad(f, pts):
    with mp.workdps(40):
        return mp.quad(f, sorted(set(pts)))


@cache
def mp_mixture_excess(beta: float, weights: tuple, s: float) -> mp.mpf:
    """E_{x~N(0,1)}[M^beta - 1 - beta (M - 1)], M = sum_k w_k exp(k s x - k^2 s^2/2)."""
    with mp.workdps(40):
        b, s_ = mp.mpf(beta), mp.mpf(s)
        w = [mp.mpf(x) for x in weights]
        K = len(w) - 1

        def f(x):
            m = mp.fsum(w[k] * mp.exp(k * s_ * x - (k * s_) ** 2 / 2) for k in range(K + 1))
            return mp.npdf(x) * (m**b - 1 - b * (m - 1))

        mode = beta * K * s if beta > 0 else 0.0
        hi = max(mode, K * s) + 40.0
        pts = [-40.0, 0.0, K * s / 2, hi] + [
            mode + d for d in (-6, 0, 6) if -40 < mode + d < hi
        ]
        return _mp_quad(f, pts)


def mp_rdp_from_excess(excess, alpha: float) -> float:
    with mp.workdps(40):
        return float(mp.log1p(excess) / (mp.mpf(alpha) - 1))


def _weights_poisson(q: float) -> tuple:
    with mp.workdps(40):
        return (str(1 - mp.mpf(q)), str(mp.mpf(q)))


def _binom_weights(K: int, r: float) -> tuple:
    with mp.workdps(40):
        rr = mp.mpf(r)
        return tuple(str(mp.binomial(K, k) * rr**k * (1 - rr) ** (K - k)) for k in range(K + 1))


SIGMAS = [0.05, 0.1, 0.15, 0.3, 0.4, 0.7, 1.0, 2.0]
RATES = [1e-10, 1e-8, 1e-6, 1e-3, 0.1, 0.5]
ALPHAS = [1.001, 1.01, 1.1, 1.25, 1.5, 2.5, 3.5, 10.5, 100.5]
# half of the sigma x rate pairs (a checkerboard: every sigma and every rate occurs), the
# orders rotating through the list (24 references, each sigma/rate/order at least twice)
GRID = [
    (sig, q, ALPHAS[(i + 2 * j) % len(ALPHAS)])
    for (i, sig), (j, q) in itertools.product(enumerate(SIGMAS), enumerate(RATES))
    if (i + j) % 2 == 0
]


@pytest.mark.parametrize("sigma,q,alpha", GRID)
def test_sampled_gaussian_fractional_orders_never_below_mpmath(sigma, q, alpha):
    ref = mp_rdp_from_excess(mp_mixture_excess(alpha, _weights_poisson(q), 1 / sigma), alpha)
    got = float(sampled_gaussian_rdp(alpha, 1 / sigma, q))
    assert got >= ref
    assert got <= ref * (1 + TOL)
    best = float(pa.rdp(pa.Gaussian(sigma), pa.Poisson(q), [alpha])[0])
    assert best >= ref


@pytest.mark.parametrize(
    "sigma,q,alpha",
    [(0.15, 1e-3, 1.1), (0.15, 1e-8, 1.25), (1.0, 1e-10, 1.001), (0.05, 1e-10, 1000.5)],
)
def test_issue_cases(sigma, q, alpha):
    ref = mp_rdp_from_excess(mp_mixture_excess(alpha, _weights_poisson(q), 1 / sigma), alpha)
    for method in ("best", "mironov-sgm", "schuchardt-tight"):
        got = float(pa.rdp(pa.Gaussian(sigma), pa.Poisson(q), [alpha], method=method)[0])
        assert ref <= got <= ref * (1 + TOL), method
    if (sigma, q, alpha) == (0.15, 1e-3, 1.1):
        assert ref == pytest.approx(0.046700, rel=1e-4)  # the value quoted in issue 17


def test_dp_accounting_reference_case():
    # dp-accounting, rdp_privacy_accountant_test.py, test_compute_log_a_equals_mp:
    # sigma = 0.1, q = 1e-7, alpha = 1.01, log-moment-based exact RDP 4.00341e-6 (6 digits)
    for method in ("best", "mironov-sgm", "schuchardt-tight"):
        got = float(pa.rdp(pa.Gaussian(0.1), pa.Poisson(1e-7), [1.01], method=method)[0])
        assert got == pytest.approx(4.00341e-6, rel=2e-6), method
        ref = mp_rdp_from_excess(mp_mixture_excess(1.01, _weights_poisson(1e-7), 10.0), 1.01)
        assert got >= ref


@pytest.mark.parametrize(
    "sigma,q,beta",
    [(0.15, 1e-3, 1 - 1.1), (0.05, 0.5, -99.5), (1.0, 1e-10, -0.001), (0.4, 0.1, -9.5),
     (2.0, 0.5, -0.5)],
)
def test_reverse_direction_enclosure(sigma, q, beta):
    """beta = 1 - alpha < 0: the insertion/reverse moment, enclosed from both sides."""
    ref = mp_mixture_excess(beta, _weights_poisson(q), 1 / sigma)
    lo, hi = gaussian_mixture_log_excess(np.array([beta]), np.log([1 - q, q]), 1 / sigma)
    lref = float(mp.log(ref))
    assert lo[0] <= lref <= hi[0]
    assert hi[0] - lo[0] <= 1e-9 * max(1.0, abs(lref))


@pytest.mark.parametrize(
    "K,sigma,r,alpha",
    [(2, 1.0, 1e-3, 1.5), (2, 0.4, 1e-6, 1.01), (3, 2.0, 0.1, 10.5), (3, 0.7, 1e-8, 2.5),
     (2, 0.15, 0.01, 1.1)],
)
def test_group_mixtures_thm42(K, sigma, r, alpha):
    """Schuchardt et al. 2024, Thm 4.2: max of the forward and reverse mixture divergences."""
    w = _binom_weights(K, r)
    s = 1 / sigma
    ref = max(mp_rdp_from_excess(mp_mixture_excess(alpha, w, s), alpha),
              mp_rdp_from_excess(mp_mixture_excess(1 - alpha, w, s), alpha))
    got = float(poisson_group_gaussian_rdp(pa.Gaussian(sigma), r, K, np.array([alpha]))[0])
    assert ref <= got <= ref * (1 + TOL)
    best = float(pa.rdp(pa.Gaussian(sigma), pa.Poisson(r), [alpha],
                        relation=pa.AddRemove(group=K))[0])
    assert best >= ref


@cache
def mp_laplace_rdp(scale: float, q: float, alpha: float) -> float:
    """Exact Poisson-subsampled Laplace RDP, max over both directions, by mpmath: P = Lap(e0),
    Q = Lap(0) (unit scale after rescaling), L = dP/dQ piecewise."""
    with mp.workdps(40):
        e0 = 1 / mp.mpf(scale)
        q_, a = mp.mpf(q), mp.mpf(alpha)
        out = []
        for b in (a, 1 - a):
            def h(L, b=b):
                return (1 - q_ + q_ * L) ** b - 1 - b * q_ * (L - 1)
            atoms = h(mp.exp(-e0)) / 2 + h(mp.exp(e0)) * mp.exp(-e0) / 2
            inner = mp.quad(lambda x, h=h: h(mp.exp(2 * x - e0)) * mp.exp(-x) / 2,
                            [0, e0 / 4, e0 / 2, 3 * e0 / 4, e0])
            out.append(mp.log1p(atoms + inner) / (a - 1))
        return float(max(out))


@pytest.mark.parametrize(
    "scale,q,alpha",
    [(1.0, 0.01, 1.5), (0.1, 1e-6, 1.01), (5.0, 0.5, 10.5), (0.3, 1e-10, 2.5), (2.0, 0.1, 100.5)],
)
def test_laplace_fractional_orders(scale, q, alpha):
    ref = mp_laplace_rdp(scale, q, alpha)
    got = float(pa.rdp(pa.Laplace(scale), pa.Poisson(q), [alpha], method="poisson-exact")[0])
    assert ref <= got <= ref * (1 + TOL)


def test_many_orders_one_call_is_fast_and_monotone():
    """~100 orders in one call (as inside order searches) stay cheap, and the certified
    curve is nondecreasing in the order (Rényi divergences are)."""
    import time

    al = np.concatenate([np.linspace(1.01, 10.9, 60) + 0.013,
                         np.exp(np.linspace(math.log(11.3), math.log(1e4), 40))])
    t = time.process_time()
    eps = sampled_gaussian_rdp(al, 1.0, 1e-3)
    assert time.process_time() - t < 30.0  # a hang guard (was minutes), not a speed goal
    assert np.all(np.isfinite(eps))
    assert np.all(np.diff(eps) >= -1e-12 * eps[1:])
