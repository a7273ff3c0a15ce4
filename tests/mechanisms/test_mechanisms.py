"""Base mechanisms and loss pairs against independent evaluations (mpmath quadrature at high
precision, closed forms written here from the definitions)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.pairs.combinators import MixturePair, SwappedPair
from privamp.pairs.mechanism_pairs import GaussianPair, LaplacePair

mp.mp.dps = 40


def _gauss_pdf(x, mu, s):
    return mp.exp(-((x - mu) ** 2) / (2 * s**2)) / (s * mp.sqrt(2 * mp.pi))


def _lap_pdf(x, mu, b):
    return mp.exp(-abs(x - mu) / b) / (2 * b)


def _hockey(p, q, eps, points):
    """H_{e^eps}(P||Q) = int (p - e^eps q)_+ by mpmath quadrature over breakpoints."""
    a = mp.e ** mp.mpf(eps)
    return mp.quad(lambda x: max(p(x) - a * q(x), 0), points)


def _renyi(p, q, alpha, points):
    alpha = mp.mpf(alpha)
    psi = mp.quad(lambda x: p(x) ** alpha * q(x) ** (1 - alpha), points)
    return mp.log(psi) / (alpha - 1)


@pytest.mark.parametrize("sigma,eps", [(1.0, 0.0), (1.0, 1.0), (0.5, 3.0), (2.0, 0.1), (3.0, 0.7)])
def test_gaussian_profile_matches_quadrature(sigma, eps):
    p = lambda x: _gauss_pdf(x, 1, sigma)  # noqa: E731
    q = lambda x: _gauss_pdf(x, 0, sigma)  # noqa: E731
    # the integrand's kink is at x = 1/2 + eps sigma^2
    kink = 0.5 + eps * sigma**2
    ref = _hockey(p, q, eps, [-mp.inf, kink, mp.inf])
    got = float(pa.Gaussian(sigma).delta(eps).value)
    assert got == pytest.approx(float(ref), rel=1e-10, abs=1e-300)


def test_gaussian_profile_extreme_tails_are_finite_and_accurate():
    # sigma = 0.05 (shift 20) and eps = 500: the closed form in mpmath
    for sigma, eps in [(0.05, 500.0), (0.05, 150.0), (0.3, 60.0)]:
        s = mp.mpf(1) / sigma
        ref = mp.ncdf(s / 2 - eps / s) - mp.e ** mp.mpf(eps) * mp.ncdf(-s / 2 - eps / s)
        got = float(pa.Gaussian(sigma).delta(eps).value)
        assert math.isfinite(got)
        if ref > 1e-300:
            assert got == pytest.approx(float(ref), rel=1e-6)
        else:
            assert got < 1e-290


@pytest.mark.parametrize("k", [1, 3])
def test_gaussian_group_distance_scales_sensitivity(k):
    m = pa.Gaussian(2.0, sensitivity=0.5)
    assert float(m.rdp(3.0, distance=k).value) == pytest.approx(3.0 * (k * 0.5) ** 2 / (2 * 4.0))
    assert float(m.delta(1.0, distance=k).value) == pytest.approx(
        float(pa.Gaussian(2.0 / (k * 0.5)).delta(1.0).value), rel=1e-12
    )


@pytest.mark.parametrize("alpha", [1.5, 2.0, 7.3])
def test_gaussian_rdp_matches_quadrature(alpha):
    sigma = 0.8
    p = lambda x: _gauss_pdf(x, 1, sigma)  # noqa: E731
    q = lambda x: _gauss_pdf(x, 0, sigma)  # noqa: E731
    ref = _renyi(p, q, alpha, [-mp.inf, 0, 1, mp.inf])
    assert float(pa.Gaussian(sigma).rdp(alpha).value) == pytest.approx(float(ref), rel=1e-10)


@pytest.mark.parametrize("b,alpha", [(1.0, 1.5), (1.0, 4.0), (0.5, 2.5), (3.0, 10.0)])
def test_laplace_rdp_matches_quadrature(b, alpha):
    p = lambda x: _lap_pdf(x, 1, b)  # noqa: E731
    q = lambda x: _lap_pdf(x, 0, b)  # noqa: E731
    ref = _renyi(p, q, alpha, [-mp.inf, 0, 1, mp.inf])
    assert float(pa.Laplace(b).rdp(alpha).value) == pytest.approx(float(ref), rel=1e-10)


@pytest.mark.parametrize("b,eps", [(1.0, 0.0), (1.0, 0.5), (0.5, 1.2), (2.0, 0.3), (1.0, 1.5)])
def test_laplace_profile_matches_quadrature(b, eps):
    p = lambda x: _lap_pdf(x, 1, b)  # noqa: E731
    q = lambda x: _lap_pdf(x, 0, b)  # noqa: E731
    kink = (b * eps + 1) / 2  # where p = e^eps q, inside (0, 1)
    ref = _hockey(p, q, eps, sorted({-mp.inf, 0, mp.mpf(kink), 1, mp.inf}))
    assert float(pa.Laplace(b).delta(eps).value) == pytest.approx(float(ref), rel=1e-10, abs=1e-15)


@pytest.mark.parametrize("theta", [0.6, 0.75, 0.9])
def test_randomized_response_closed_forms(theta):
    m = pa.RandomizedResponse(theta)
    for alpha in [1.5, 2.0, 9.0]:
        a = mp.mpf(alpha)
        t = mp.mpf(theta)
        psi = t**a * (1 - t) ** (1 - a) + (1 - t) ** a * t ** (1 - a)
        assert float(m.rdp(alpha).value) == pytest.approx(float(mp.log(psi) / (a - 1)), rel=1e-12)
    for eps in [0.0, 0.3, 1.0, 5.0]:
        ref = max(theta - math.exp(eps) * (1 - theta), 0.0)
        assert float(m.delta(eps).value) == pytest.approx(ref, abs=1e-15)
    # distance does not change randomized response
    assert float(m.rdp(2.0, distance=4).value) == float(m.rdp(2.0).value)


@pytest.mark.parametrize(
    "mech", [pa.Gaussian(0.7), pa.Gaussian(5.0), pa.Laplace(0.8), pa.RandomizedResponse(0.8)]
)
def test_epsilon_inverts_profile_on_the_safe_side(mech):
    for d in [1e-2, 1e-5, 1e-9]:
        eps = float(mech.epsilon(d).value)
        assert float(mech.delta(eps).value) <= d
        if eps > 0:
            assert float(mech.delta(eps * (1 - 1e-9) - 1e-12).value) > d * (1 - 1e-6)


# -- loss pairs ------------------------------------------------------------------------
def _mixture_pdfs(q, base_p, base_q):
    return (lambda x: q * base_p(x) + (1 - q) * base_q(x)), base_q


@pytest.mark.parametrize("q,eps", [(0.1, 0.05), (0.01, 0.0), (0.3, 1.0), (0.05, -0.02)])
def test_mixture_pair_profiles_both_directions(q, eps):
    sigma = 0.9
    bp = lambda x: _gauss_pdf(x, 1, sigma)  # noqa: E731
    bq = lambda x: _gauss_pdf(x, 0, sigma)  # noqa: E731
    mix, ref_q = _mixture_pdfs(q, bp, bq)
    pair = MixturePair(GaussianPair(1 / sigma), q)
    a = mp.e ** mp.mpf(eps)
    # likelihood ratio of the base pair is exp((x - 1/2)/sigma^2): kinks of (mix - a q)_+ and
    # (q - a mix)_+ are where (1-q) + q*ratio equals a and 1/a
    kinks = []
    for target in (a, 1 / a):
        r = (target - (1 - q)) / q
        if r > 0:
            kinks.append(sigma**2 * mp.log(r) + mp.mpf(1) / 2)
    pts = sorted(set([-mp.inf, -3, 0, 1, 3, 6, mp.inf] + kinks))
    remove = _hockey(mix, ref_q, eps, pts)
    add = _hockey(ref_q, mix, eps, pts)
    assert float(pair.delta(eps)) == pytest.approx(float(remove), rel=1e-8, abs=1e-14)
    assert float(SwappedPair(pair).delta(eps)) == pytest.approx(float(add), rel=1e-8, abs=1e-14)


def test_laplace_mixture_pair_tails_and_atoms():
    q, b = 0.2, 1.0
    pair = MixturePair(LaplacePair(1 / b), q)
    # The loss has atoms at log(1-q+q e^{-1}) and log(1-q+q e), with masses from the closed form
    lo_atom = math.log(1 - q + q * math.exp(-1))
    hi_atom = math.log(1 - q + q * math.e)
    pmass_hi = q * 0.5 + (1 - q) * 0.5 * math.exp(-1)  # P(x >= 1) under the mixture
    tiny = 1e-12  # atoms sit at rounded floats: probe just beside them
    assert float(pair.tail(hi_atom - tiny, "P", True, False)) == pytest.approx(pmass_hi, rel=1e-9)
    assert float(pair.tail(hi_atom + tiny, "P", True, True)) == pytest.approx(0.0, abs=1e-15)
    qmass_lo = 0.5  # Q(x <= 0)
    assert float(pair.tail(lo_atom + tiny, "Q", False, False)) == pytest.approx(qmass_lo, rel=1e-9)
    assert float(pair.tail(lo_atom - tiny, "Q", False, True)) == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize(
    "pair",
    [
        GaussianPair(1.3),
        LaplacePair(0.7),
        MixturePair(GaussianPair(0.9), 0.05),
        SwappedPair(MixturePair(LaplacePair(1.0), 0.3)),
        pa.RandomizedResponse(0.8).pair(),
    ],
)
def test_bin_masses_are_probability_vectors_and_match_profile(pair):
    edges = np.linspace(-3, 3, 61)
    p, q = pair.bin_masses(edges)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert q.sum() == pytest.approx(1.0, abs=1e-12)
    assert (p >= 0).all() and (q >= 0).all()
    # delta at eps = edges[i] equals sum over cells above of (P - e^eps Q) only when the loss is
    # constant within cells; check the weaker sandwich that must always hold
    for i in [10, 30, 45]:
        eps = edges[i]
        upper_cells = slice(i + 1, None)
        ub = p[upper_cells].sum()
        assert float(pair.delta(eps)) <= ub + 1e-12


def test_validation_messages_name_the_parameter():
    with pytest.raises(ValueError, match="sigma"):
        pa.Gaussian(0.0)
    with pytest.raises(ValueError, match="sigma"):
        pa.Gaussian(float("nan"))
    with pytest.raises(ValueError, match="sigma"):
        pa.Gaussian(float("inf"))
    with pytest.raises(ValueError, match="scale"):
        pa.Laplace(-1)
    with pytest.raises(ValueError, match="theta"):
        pa.RandomizedResponse(0.5)
    with pytest.raises(ValueError, match="theta"):
        pa.RandomizedResponse(1.2)
    with pytest.raises(ValueError, match=r"alpha.*\(1, inf\)"):
        pa.Gaussian(1.0).rdp(1.0)
    with pytest.raises(ValueError, match="alpha"):
        pa.Gaussian(1.0).rdp([2.0, float("nan")])
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\)"):
        pa.Gaussian(1.0).epsilon(0.0)
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\)"):
        pa.Gaussian(1.0).epsilon(1.5)
    with pytest.raises(ValueError, match="epsilon"):
        pa.Gaussian(1.0).delta(-1.0)
    with pytest.raises(ValueError, match="distance"):
        pa.Gaussian(1.0).delta(1.0, distance=0)
