"""Poisson under substitution: the certified lower side must be reachable by DP-SGD's
clipped gradients (sensitivity Delta = 2C: a record at C replaced by one at -C at most).

Before: the lower pair was (1-q) N(0) + q N(Delta) vs N(0) (a record Delta = 2C from a
replacement contributing 0), above the true worst case of clipped gradients: at q 0.3,
sigma 1, C 1, eps 1 the "lower" delta was 0.1043 while the supremum over every pair of
gradients in the unit ball is 0.01924 (attained at +u vs -u: adversarial review)."""

import mpmath as mp
import pytest

import privamp as pa


def _pm_one_delta(q: float, sigma: float, eps: float) -> mp.mpf:
    """delta of P = (1-q) N(0) + q N(1), Q = (1-q) N(0) + q N(-1) (sigma units), by
    quadrature: the worst pair of unit-ball gradients for one step."""
    mp.mp.dps = 30
    s = mp.mpf(1) / sigma

    def dens(x, m):
        return mp.npdf(x, m, 1)

    def f(x):
        p = (1 - q) * dens(x, 0) + q * dens(x, s)
        qq = (1 - q) * dens(x, 0) + q * dens(x, -s)
        return max(p - mp.e ** eps * qq, 0)

    return mp.quad(f, [-mp.inf, -s, 0, s, mp.inf])


def _half_shift_delta(q: float, sigma: float, eps: float) -> mp.mpf:
    """The new lower pair: P = (1-q) N(0) + q N(s) vs Q = N(0) (a gradient u replaced by 0,
    s = 1/sigma), the larger of its two orders, in closed form: the likelihood ratio is
    monotone in x, so each hockey-stick divergence is a difference of normal tails at the
    threshold where P/Q crosses e^eps (or Q/P does)."""
    mp.mp.dps = 40
    q, s, g = mp.mpf(q), mp.mpf(1) / sigma, mp.e ** eps

    def sf(x):
        return mp.ncdf(-x)

    out = mp.mpf(0)
    if g > 1 - q:  # P/Q = (1-q) + q e^{s x - s^2/2} > g  <=>  x > x0
        x0 = (mp.log((g - (1 - q)) / q) + s * s / 2) / s
        out = max(out, (1 - q) * sf(x0) + q * sf(x0 - s) - g * sf(x0))
    if 1 / g > 1 - q:  # Q/P > g  <=>  x < x1
        x1 = (mp.log((1 / g - (1 - q)) / q) + s * s / 2) / s
        out = max(out, mp.ncdf(x1) - g * ((1 - q) * mp.ncdf(x1) + q * mp.ncdf(x1 - s)))
    return out


@pytest.mark.parametrize("q, sigma, eps", [(0.3, 1.0, 1.0), (0.1, 0.8, 0.5), (0.5, 2.0, 0.2)])
def test_lower_side_is_reachable_by_clipped_gradients(q, sigma, eps):
    run = pa.Training(pa.Gaussian(sigma, sensitivity=2.0), pa.Poisson(q), steps=1,
                      relation=pa.Substitution())
    g = run.delta(eps)
    worst = float(_pm_one_delta(q, sigma, eps))
    reachable = float(_half_shift_delta(q, sigma, eps))
    assert g.lower is not None
    lo = float(g.lower.value)
    assert lo <= worst * (1 + 1e-9)
    assert lo >= reachable * (1 - 1e-2) - 1e-9  # at least the half-shift pair
    # the antipodal pair (+u vs -u, theorems/poisson_substitution.py) is realised: tight
    assert lo >= worst * (1 - 1e-2) - 1e-9
    assert float(g.upper.value) >= worst * (1 - 1e-9)
