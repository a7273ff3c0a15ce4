"""The guided RDP order search (issue 28): an estimate of the sampled Gaussian's curve picks
the real order to evaluate; every reported value is the certified curve's own.

References: mpmath at 50 digits (the defining integral of MTZ 2019, Sec. 3.4, and the exact
binomial expansion at integer orders, Sec. 3.3), and Opacus's RDP accountant (independent
code) on the same Balle et al. 2020 conversion."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.accountants.rdp import RdpAccountant
from privamp.renyi.conversion import eps_from_rdp, optimal_epsilon
from privamp.theorems.mironov2019 import sampled_gaussian_rdp, sampled_gaussian_rdp_estimate

mp.mp.dps = 50


def _mp_rdp_integral(alpha: float, sigma: float, q: float) -> float:
    """D_alpha((1-q) N(0, sigma^2) + q N(1, sigma^2) || N(0, sigma^2)) by mpmath quadrature of
    E_{x ~ N(0,1)}[(1 - q + q exp(s x - s^2/2))^alpha] - 1, s = 1/sigma (the excess, so tiny
    rates keep their digits)."""
    s, a, qq = mp.mpf(1) / sigma, mp.mpf(alpha), mp.mpf(q)

    def f(x):
        u = qq * mp.expm1(s * x - s * s / 2)
        return mp.npdf(x) * ((1 + u) ** a - 1 - a * u)

    peak = float(alpha / sigma)
    ex = mp.quad(f, [-mp.inf, -5, 0, 2 / sigma, peak, peak + 8, mp.inf])
    return float(mp.log1p(ex) / (a - 1))


def _mp_rdp_binomial(n: int, sigma: float, q: float) -> float:
    """Exact integer-order RDP: log sum_k C(n,k) q^k (1-q)^(n-k) exp(k(k-1)/(2 sigma^2)),
    over n - 1, at 50 digits."""
    qq, s2 = mp.mpf(q), mp.mpf(1) / (sigma * sigma)
    tot = mp.fsum(mp.binomial(n, k) * qq**k * (1 - qq) ** (n - k) * mp.exp(k * (k - 1) * s2 / 2)
                  for k in range(n + 1))
    return float(mp.log(tot) / (n - 1))


@pytest.mark.parametrize("alpha, sigma, q", [(3.7, 0.3, 1e-7), (2.36, 0.3, 1e-5),
                                             (1.06, 1.0, 1e-3), (7.3, 4.0, 0.1)])
def test_estimate_matches_the_integral(alpha, sigma, q):
    ref = _mp_rdp_integral(alpha, sigma, q)
    est = float(sampled_gaussian_rdp_estimate(alpha, 1.0 / sigma, q))
    assert est == pytest.approx(ref, rel=1e-6)
    # and the certified curve is an upper bound, tight
    cert = float(sampled_gaussian_rdp(alpha, 1.0 / sigma, q))
    assert ref <= cert <= ref * (1 + 1e-8)


@pytest.mark.parametrize("n, sigma, q", [(2, 0.3, 1e-7), (17, 1.0, 1e-3), (300, 8.0, 1e-5)])
def test_integer_orders_against_binomial_expansion(n, sigma, q):
    ref = _mp_rdp_binomial(n, sigma, q)
    got = float(sampled_gaussian_rdp(float(n), 1.0 / sigma, q))
    assert ref <= got <= ref * (1 + 1e-9)


def test_estimate_refuses_huge_shifts():
    assert np.isnan(sampled_gaussian_rdp_estimate(np.array([2.5]), 50.0, 1e-3)).all()


@pytest.mark.parametrize("q, sigma, T", [(1e-7, 0.3, 10), (1e-5, 0.3, 10**4),
                                         (1e-5, 1.0, 10**4), (1e-3, 1.0, 10**7),
                                         (0.1, 4.0, 10**7), (0.1, 8.0, 10)])
@pytest.mark.filterwarnings("ignore:Optimal order is the")  # (Opacus's notice on its orders)
def test_public_call_never_looser_than_opacus(q, sigma, T):
    rdp = pytest.importorskip("opacus.accountants.analysis.rdp")
    orders = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))
    r = rdp.compute_rdp(q=q, noise_multiplier=sigma, steps=T, orders=orders)
    with np.errstate(all="ignore"):
        ref, _ = rdp.get_privacy_spent(orders=orders, rdp=r, delta=1e-5)
    got = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T).epsilon(
        1e-5, accountant="rdp").upper.value
    assert got <= ref


@pytest.mark.parametrize("sigma, q, T", [(0.3, 1e-7, 10), (1.0, 1e-3, 10**7)])
def test_reported_value_is_the_certified_curve_at_the_reported_order(sigma, q, T):
    """The answer is Balle et al.'s conversion of T times the certified curve at the order the
    search reports (the guide only chose the order), and that order's value agrees with an
    mpmath integral."""
    acc = RdpAccountant().compose((pa.Gaussian(sigma), pa.Poisson(q)), T)
    eps, order = acc.get_epsilon_and_order(1e-5)
    order = float(order)
    curve = T * float(sampled_gaussian_rdp(order, 1.0 / sigma, q))
    again, _ = eps_from_rdp(np.array([order]), np.array([curve]), 1e-5)
    assert float(eps) == pytest.approx(float(again), rel=1e-14)
    ref = T * _mp_rdp_integral(order, sigma, q)
    exact, _ = eps_from_rdp(np.array([order]), np.array([ref]), 1e-5)
    assert float(exact) <= float(eps) <= float(exact) * (1 + 1e-8)


def test_a_wrong_guide_costs_tightness_never_soundness():
    """A guide off by a factor 2 (or NaN) only changes which orders are evaluated: the result
    is still the curve's conversion at an evaluated order, and no tighter than the best order
    of a dense scan of the curve (from mpmath-checked values above)."""
    s, q, T = 1.0 / 0.3, 1e-5, 10**4

    def curve(a):
        return T * sampled_gaussian_rdp(a, s, q)

    dense = np.linspace(1.5, 4.0, 251)
    _, best = eps_from_rdp(dense, curve(dense), 1e-5)
    fine = np.linspace(float(best) - 0.01, float(best) + 0.01, 201)  # step 1e-4 about it
    floor, _ = eps_from_rdp(fine, curve(fine), 1e-5)
    for guide in (lambda a: 2.0 * curve(a), lambda a: np.full(np.shape(a), math.nan), None):
        eps, order = optimal_epsilon(curve, 1e-5, _memo={}, max_order=1e5,
                                     integers_first=True, guide=guide)
        again, _ = eps_from_rdp(np.array([float(order)]), curve(np.array([float(order)])), 1e-5)
        assert float(eps) == pytest.approx(float(again), rel=1e-14)
        assert float(eps) >= float(floor) * (1 - 1e-7)  # no order beats the optimum
        assert float(eps) <= float(floor) * (1 + 1e-4)  # and the fallback search found it
