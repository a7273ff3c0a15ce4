"""Poisson-subsampled RDP (privamp.theorems.mironov2019) against independent references:
mpmath at 50 digits (binomial sums, quadrature of the defining integrals), closed forms, and
properties (monotonicity) with hypothesis."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privamp as pa
from privamp.theorems.mironov2019 import log_h, poisson_exact_rdp, sampled_gaussian_rdp
from privamp.theorems.zhu_wang2019 import zhu_wang_rdp

mp.mp.dps = 50
REL = 1e-8  # agreement required
BELOW = 1e-12  # never below the reference by more than this (relative)


def _check(value: float, ref: mp.mpf) -> None:
    ref = float(ref)
    assert value == pytest.approx(ref, rel=REL)
    assert value >= ref * (1 - BELOW)


# ------------------------------------------------------------------------------------------
# sampled Gaussian: references
# ------------------------------------------------------------------------------------------
def _mp_sgm_integer(n: int, sigma: float, q: float) -> mp.mpf:
    """MTZ 2019 binomial sum A_n - 1 = sum_{k>=2} C(n,k) q^k (1-q)^(n-k) (e^{k(k-1) s2/2} - 1),
    every term at 50 digits (binomial weights by recurrence)."""
    s2 = 1 / mp.mpf(sigma) ** 2
    q = mp.mpf(q)
    r = q / (1 - q)
    term = (1 - q) ** n * n * r  # C(n,1) q (1-q)^(n-1)
    total = mp.mpf(0)
    for k in range(2, n + 1):
        term = term * (n - k + 1) / k * r
        total += term * (mp.exp(k * (k - 1) * s2 / 2) - 1)
    return mp.log1p(total) / (n - 1)


def _mp_quad(f, pts):
    return mp.quad(f, [-mp.inf, *sorted(set(pts)), mp.inf], method="gauss-legendre", maxdegree=6)


def _mp_sgm_quad(a: float, sigma: float, q: float) -> mp.mpf:
    """(1/(a-1)) log E_{z~N(0,sigma^2)}[(1 - q + q exp((2z - 1)/(2 sigma^2)))^a], the integral
    written as 1 + E[(1+u)^a - 1 - a u] (E[u] = 0) and integrated by mpmath (50 digits) on
    pieces around the two possible modes of the integrand (near 0 and near a)."""
    a, sig, q = mp.mpf(a), mp.mpf(sigma), mp.mpf(q)

    def f(z):
        u = q * mp.expm1((2 * z - 1) / (2 * sig**2))
        return ((1 + u) ** a - 1 - a * u) * mp.npdf(z, 0, sig)

    pts = [-16 * sig, -4 * sig, 0, mp.mpf(1) / 2, 4 * sig, 16 * sig, a + 4 * sig, a + 16 * sig]
    if a > 20 * sig:
        pts += [a - 16 * sig, a - 4 * sig, a]
    return mp.log1p(_mp_quad(f, pts)) / (a - 1)


INTEGER_CASES = [
    (2, 1.1, 256 / 60000),
    (32, 1.1, 256 / 60000),
    (256, 0.3, 1e-5),
    (1000, 10.0, 1e-5),
    (10000, 0.3, 1e-6),
    (10000, 10.0, 1e-5),
    (7, 0.7, 1.0 - 1e-3),
]

FRACTIONAL_CASES = [
    (1.01, 1.0, 0.01),
    (2.5, 1.1, 256 / 60000),
    (1.5, 10.0, 1e-5),
    (10.3, 0.5, 1e-3),
    (7.7, 0.3, 0.5),
    (100.5, 0.8, 0.1),
    (2763.3, 10.0, 1e-6),  # both modes of the integrand matter
    (9999.5, 10.0, 1e-5),
    (13.5, 1.0, 1e-3),  # between two integers where the curve steepens 20-fold
    (1.725, 0.8, 0.01),  # orders the RDP accountant picks on the issue-14 grid
    (8.55, 0.8, 1e-3),
]


@pytest.mark.parametrize(("a", "sigma", "q"), INTEGER_CASES)
def test_sgm_integer_orders_match_mpmath_binomial(a, sigma, q):
    value = float(pa.rdp(pa.Gaussian(sigma), pa.Poisson(q), float(a), method="mironov-sgm"))
    _check(value, _mp_sgm_integer(a, sigma, q))


@pytest.mark.parametrize(("a", "sigma", "q"), FRACTIONAL_CASES)
def test_sgm_fractional_orders_match_mpmath_quadrature(a, sigma, q):
    value = float(sampled_gaussian_rdp(a, 1.0 / sigma, q))
    _check(value, _mp_sgm_quad(a, sigma, q))


def test_sgm_quadrature_agrees_with_binomial_at_integers_through_the_fractional_path():
    # a hair above an integer order the quadrature must agree with the exact binomial value
    for n, sigma, q in [(5, 0.6, 0.02), (64, 2.0, 1e-3), (3000, 5.0, 1e-4)]:
        frac = float(sampled_gaussian_rdp(n + 1e-9, 1.0 / sigma, q))
        _check(frac, _mp_sgm_integer(n, sigma, q))


def test_sgm_rate_one_is_the_gaussian_and_rate_zero_is_zero():
    a = np.array([1.5, 2.0, 37.25, 1e4])
    sigma = 0.7
    got = pa.rdp(pa.Gaussian(sigma), pa.Poisson(1.0), a, method="mironov-sgm")
    np.testing.assert_allclose(got, a / (2 * sigma**2), rtol=1e-14)
    zero = pa.rdp(pa.Gaussian(sigma), pa.Poisson(0.0), a, method="mironov-sgm")
    assert np.all(np.asarray(zero) == 0)


def test_sgm_sensitivity_enters_as_shift():
    # N(0, (2 sigma)^2) with sensitivity 2 is the same pair as sigma with sensitivity 1
    a = np.array([1.7, 4.0, 50.5])
    x = pa.rdp(pa.Gaussian(2.2, sensitivity=2.0), pa.Poisson(0.01), a, method="mironov-sgm")
    y = pa.rdp(pa.Gaussian(1.1), pa.Poisson(0.01), a, method="mironov-sgm")
    np.testing.assert_allclose(x, y, rtol=1e-12)


def test_sgm_zero_out_equals_add_remove():
    a = np.array([2.0, 3.5])
    m, s = pa.Gaussian(1.0), pa.Poisson(0.05)
    np.testing.assert_array_equal(
        pa.rdp(m, s, a, pa.ZeroOut(), method="mironov-sgm"),
        pa.rdp(m, s, a, pa.AddRemove(), method="mironov-sgm"),
    )


def test_sgm_removal_dominates_insertion_mpmath():
    """MTZ 2019, Thm 5: for the Gaussian the removal divergence is the larger one; checked at
    50 digits at a few real orders (this is what justifies returning the removal value)."""
    for a, sigma, q in [(1.5, 1.0, 0.1), (3.7, 0.5, 0.3), (12.0, 2.0, 0.05)]:
        a_, sig, q_ = mp.mpf(a), mp.mpf(sigma), mp.mpf(q)

        def mix(z, q_=q_, sig=sig):
            return 1 - q_ + q_ * mp.exp((2 * z - 1) / (2 * sig**2))

        def rm(z, a_=a_, sig=sig, mix=mix):
            return mix(z) ** a_ * mp.npdf(z, 0, sig)

        def ins(z, a_=a_, sig=sig, mix=mix):
            return mix(z) ** (1 - a_) * mp.npdf(z, 0, sig)

        pts = [-20, -5, 0, 5, 20, 40]
        assert _mp_quad(rm, pts) >= _mp_quad(ins, pts)
        ref = mp.log(_mp_quad(rm, pts)) / (a_ - 1)
        _check(float(sampled_gaussian_rdp(a, 1 / sigma, q)), ref)


# ------------------------------------------------------------------------------------------
# Laplace and randomized response: exact two-direction values
# ------------------------------------------------------------------------------------------
def _mp_laplace_poisson(a: float, b: float, q: float) -> mp.mpf:
    """max over removal / insertion of (1/(a-1)) log E_Q[(1-q+qL)^c], c = a or 1 - a, for
    P = Lap(1/b... ) in units of the scale: e0 = 1/b, Q = Lap(0, 1), brute-force quadrature."""
    a, q, e0 = mp.mpf(a), mp.mpf(q), 1 / mp.mpf(b)
    vals = []
    for c in (a, 1 - a):

        def f(x, c=c):
            loss = abs(x) - abs(x - e0)
            return (1 - q + q * mp.exp(loss)) ** c * mp.exp(-abs(x)) / 2

        vals.append(mp.log(_mp_quad(f, [0, e0 / 2, e0])) / (a - 1))
    return max(vals)


@pytest.mark.parametrize(
    ("a", "scale", "q"),
    [(2.0, 1.0, 0.1), (3.5, 0.5, 0.01), (1.2, 2.0, 0.5), (20.0, 1.0, 0.9), (64.5, 3.0, 1e-3)],
)
def test_laplace_poisson_exact_matches_mpmath(a, scale, q):
    value = float(pa.rdp(pa.Laplace(scale), pa.Poisson(q), a, method="poisson-exact"))
    _check(value, _mp_laplace_poisson(a, scale, q))


def _mp_rr_poisson(a: float, theta: float, q: float) -> mp.mpf:
    a, t, q = mp.mpf(a), mp.mpf(theta), mp.mpf(q)
    p_ = [t, 1 - t]  # P = Bern(theta) on outcomes (1, 0)
    q_ = [1 - t, t]  # Q = Bern(1 - theta)
    mix = [q * pi + (1 - q) * qi for pi, qi in zip(p_, q_, strict=True)]
    rm = mp.fsum(m**a * qi ** (1 - a) for m, qi in zip(mix, q_, strict=True))
    ins = mp.fsum(qi**a * m ** (1 - a) for m, qi in zip(mix, q_, strict=True))
    return max(mp.log(rm), mp.log(ins)) / (a - 1)


@pytest.mark.parametrize(
    ("a", "theta", "q"),
    [(2.0, 0.75, 0.1), (1.05, 0.9, 0.5), (7.3, 0.99, 1e-3), (150.0, 0.6, 0.2), (2.5, 0.999, 0.9)],
)
def test_rr_poisson_exact_matches_mpmath(a, theta, q):
    value = float(pa.rdp(pa.RandomizedResponse(theta), pa.Poisson(q), a, method="poisson-exact"))
    _check(value, _mp_rr_poisson(a, theta, q))


def test_poisson_exact_rate_one_is_the_base_mechanism():
    a = np.array([1.5, 2.0, 10.0])
    lap = pa.Laplace(0.8)
    e0 = 1 / 0.8
    closed = np.log(
        a / (2 * a - 1) * np.exp((a - 1) * e0) + (a - 1) / (2 * a - 1) * np.exp(-a * e0)
    )
    np.testing.assert_allclose(poisson_exact_rdp(lap, 1.0, a), closed / (a - 1), rtol=1e-12)


def test_log_h_matches_mpmath_across_regimes():
    rows = [
        (5.0, 1e-9, 1e-3),
        (1.001, 0.3, 0.5),
        (-0.001, 0.3, 0.5),
        (-500.0, 2.0, 0.01),
        (1e4, 50.0, 1e-6),
        (300.0, -2.0, 0.9),
        (-3.0, -1.0, 0.2),
        (2.5, 800.0, 1e-8),
    ]
    for b, loss, q in rows:
        u = mp.mpf(q) * mp.expm1(mp.mpf(loss))
        ref = mp.log((1 + u) ** mp.mpf(b) - 1 - mp.mpf(b) * u)
        assert float(log_h(b, loss, q)) == pytest.approx(float(ref), rel=1e-10, abs=1e-11)


# ------------------------------------------------------------------------------------------
# Zhu & Wang 2019
# ------------------------------------------------------------------------------------------
def _mp_zw(n: int, base_rdp, q: float, factor: int) -> mp.mpf:
    q = mp.mpf(q)
    total = mp.fsum(
        mp.binomial(n, k)
        * q**k
        * (1 - q) ** (n - k)
        * (mp.e ** ((k - 1) * base_rdp(k)) if k >= 2 else 1)
        for k in range(n + 1)
    )
    return mp.log(factor * total) / (n - 1)


def test_zhu_wang_integer_orders_match_mpmath():
    sigma, q = 2.0, 0.01

    def gauss(k):
        return mp.mpf(k) / (2 * mp.mpf(sigma) ** 2)

    for n in (2, 3, 17, 200):
        v2 = float(pa.rdp(pa.Gaussian(sigma), pa.Poisson(q), float(n), method="zhu-wang"))
        _check(v2, _mp_zw(n, gauss, q, 2))
        v1 = float(pa.rdp(pa.Gaussian(sigma), pa.Poisson(q), float(n), method="zhu-wang-tight"))
        _check(v1, _mp_zw(n, gauss, q, 1))
        # for the Gaussian the tight form is the exact MTZ value
        _check(v1, _mp_sgm_integer(n, sigma, q))


def test_zhu_wang_fractional_is_the_log_convex_interpolation():
    mech, q = pa.RandomizedResponse(0.8), 0.1
    n = 6
    b0 = (n - 1) * zhu_wang_rdp(mech, q, float(n))
    b1 = n * zhu_wang_rdp(mech, q, float(n + 1))
    a = 6.25
    expected = (0.75 * b0 + 0.25 * b1) / (a - 1)
    assert float(zhu_wang_rdp(mech, q, a)) == pytest.approx(float(expected), rel=1e-12)
    # between 1 and 2 the interpolation runs to f(1) = 0
    b2 = zhu_wang_rdp(mech, q, 2.0)
    assert float(zhu_wang_rdp(mech, q, 1.5)) == pytest.approx(float(0.5 * b2 / 0.5), rel=1e-12)


MECHS = [
    pa.Laplace(1.0),
    pa.Laplace(0.2),
    pa.Laplace(5.0),
    pa.RandomizedResponse(0.9),
    pa.RandomizedResponse(0.55),
]


@pytest.mark.parametrize("mech", MECHS, ids=str)
@pytest.mark.parametrize("q", [1e-3, 0.1, 0.5, 0.95])
def test_zhu_wang_forms_never_below_exact(mech, q):
    """The factor-2 bound must be above the exact value; the tight form is checked too (the
    finding documented in poisson.py: no order where it falls below the exact value)."""
    a = np.concatenate([1 + np.logspace(-3, 0, 6), np.arange(2.0, 41.0), [55.5, 300.0]])
    exact = poisson_exact_rdp(mech, q, a)
    assert np.all(zhu_wang_rdp(mech, q, a, factor=2.0) >= exact * (1 - BELOW))
    assert np.all(zhu_wang_rdp(mech, q, a, factor=1.0) >= exact * (1 - 1e-10))


def test_registration_and_best():
    names = {n for n, _ in pa.rdp_methods(pa.Gaussian(1.0), pa.Poisson(0.1))}
    assert {"mironov-sgm", "zhu-wang", "zhu-wang-tight"} <= names
    lap = {n for n, _ in pa.rdp_methods(pa.Laplace(1.0), pa.Poisson(0.1))}
    assert {"poisson-exact", "zhu-wang"} <= lap
    assert "mironov-sgm" not in lap
    # no Poisson result for groups
    grp = {n for n, _ in pa.rdp_methods(pa.Gaussian(1.0), pa.Poisson(0.1), pa.AddRemove(group=2))}
    assert not grp & {"mironov-sgm", "zhu-wang", "zhu-wang-tight", "poisson-exact"}
    # "best" is never above the exact value (mironov-sgm takes part in it)
    a = np.array([1.5, 8.0])
    best = pa.rdp(pa.Gaussian(1.0), pa.Poisson(0.1), a)
    exact = np.array([float(_mp_sgm_quad(x, 1.0, 0.1)) for x in a])
    assert np.all(best <= exact * (1 + 1e-10))


# ------------------------------------------------------------------------------------------
# properties and validation
# ------------------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(
    sigma=st.floats(0.3, 10.0),
    q=st.floats(1e-5, 0.99),
    a=st.floats(1.01, 300.0),
    f=st.floats(1.05, 3.0),
)
def test_sgm_monotone_in_sigma_rate_and_order(sigma, q, a, f):
    s = 1.0 / sigma
    v = float(sampled_gaussian_rdp(a, s, q))
    assert float(sampled_gaussian_rdp(a, 1.0 / (sigma * f), q)) <= v * (1 + 1e-9)
    assert float(sampled_gaussian_rdp(a, s, min(q * f, 1.0))) >= v * (1 - 1e-9)
    assert float(sampled_gaussian_rdp(a * f, s, q)) >= v * (1 - 1e-9)


@pytest.mark.parametrize("bad", [1.0, 0.5, float("nan"), [2.0, 1.0], float("inf")])
def test_bad_orders_raise_naming_alpha(bad):
    for method in ("mironov-sgm", "zhu-wang"):
        with pytest.raises(ValueError, match="alpha"):
            pa.rdp(pa.Gaussian(1.0), pa.Poisson(0.1), bad, method=method)
    with pytest.raises(ValueError, match="alpha"):
        sampled_gaussian_rdp(bad, 1.0, 0.1)
    with pytest.raises(ValueError, match="alpha"):
        poisson_exact_rdp(pa.Laplace(1.0), 0.1, bad)


def test_bad_rate_and_sigma_raise():
    with pytest.raises(ValueError, match="rate"):
        pa.Poisson(float("nan"))
    with pytest.raises(ValueError, match="sigma"):
        pa.Gaussian(float("nan"))


def test_rr_theta_one_is_infinite_not_nan():
    v = pa.rdp(pa.RandomizedResponse(1.0), pa.Poisson(0.5), [2.0, 3.5], method="poisson-exact")
    assert np.all(np.isposinf(v))
    assert math.isinf(float(zhu_wang_rdp(pa.RandomizedResponse(1.0), 0.5, 2.0)))
