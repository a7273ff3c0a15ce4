"""Balle, Barthe, Gaboardi 2018 Thm 6 (profile -> Rényi DP, privamp.theorems.balle2018.thm6)
and the fixed-batch accountant after the issue-28 speed work, against independent
evaluations: mpmath integration of the subsampled Gaussian profile (written out here from
its closed form), the upper Riemann sum of the documented grid summed in mpmath, and
dp-accounting's PLD under REPLACE_ONE (an upper-side sanity bound)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.theorems.balle2018.thm6 import profile_rdp, rdp_from_profile


def _gauss_delta(eps, mu):
    """Hockey-stick profile of (N(mu, 1), N(0, 1)) at eps (Balle & Wang 2018, Thm 8)."""
    return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


def _wor_delta(eps_prime, mu, eta):
    """Thm 9 (without replacement, one record): eta delta(eps),
    eps = log(1 + (e^eps' - 1) / eta)."""
    eps = mp.log(1 + mp.expm1(eps_prime) / eta)
    return eta * _gauss_delta(eps, mu)


def _thm6_reference(alpha: float, mu: float, eta: float) -> float:
    s = mp.mpf(alpha) - 1

    def f(e):
        return (mp.exp(s * e) + mp.exp(-(s + 1) * e)) * _wor_delta(e, mu, eta)

    # the integrand's bulk lies below eps' ~ a few units; split for quadrature accuracy
    with mp.workdps(20):
        I = mp.quad(f, [0, 0.5, 2, 5, 10, 20, 40])
        return float(mp.log1p(s * (s + 1) * I) / s)


@pytest.mark.parametrize("sigma, m, n", [
    (1.5, 60, 60000), pytest.param(1.0, 5, 50, marks=pytest.mark.slow)])
def test_profile_rdp_against_mpmath_integral(sigma, m, n):
    """One step (T = 1): the Thm 6 integral of the Thm 9 profile, integrated by mpmath."""
    alpha = np.array([1.5, 32.0])
    got = profile_rdp(pa.Gaussian(sigma), pa.WithoutReplacement(m, n), alpha)
    want = np.array([_thm6_reference(a, 1.0 / sigma, m / n) for a in alpha])
    assert np.all(got >= want * (1 - 1e-9))  # upper bounds (quadrature error ~1e-20)
    # the excess of the grid's upper Riemann sum (the same sum before and after issue 28):
    # 0.2% at order 1.5, 1% at order 32 on these settings
    np.testing.assert_allclose(got, want, rtol=2e-2)
    again = profile_rdp(pa.Gaussian(sigma), pa.WithoutReplacement(m, n), alpha[::-1])
    np.testing.assert_array_equal(again, got[::-1])  # the kept grid, any order of alphas


def _riemann_reference(b: float, alpha: float, E: float, grid_size: int) -> float:
    """The upper Riemann sum of the documented grid, in mpmath, for the Laplace profile
    delta(eps) = max(0, 1 - e^{(eps - e0)/2}) (e0 = 1/b; Balle et al. 2018, Sec. 5)."""
    e0 = 1.0 / b
    n0 = max(grid_size // 4, 10)
    grid = np.unique(np.concatenate([[0.0], np.geomspace(1e-8, min(1.0, E), n0),
                                     np.linspace(0.0, E, grid_size)]))
    s = mp.mpf(alpha) - 1
    total = mp.mpf(0)
    for a, c in zip(grid[:-1], grid[1:], strict=True):
        d = max(mp.mpf(0), 1 - mp.exp((mp.mpf(a) - e0) / 2))
        if d == 0:
            continue
        w1 = (mp.exp(s * mp.mpf(c)) - mp.exp(s * mp.mpf(a))) / s
        w2 = (mp.exp(-(s + 1) * mp.mpf(a)) - mp.exp(-(s + 1) * mp.mpf(c))) / (s + 1)
        total += d * (w1 + w2)
    return float(mp.log1p(s * (s + 1) * total) / s)


def test_summation_by_parts_equals_cell_sum():
    """rdp_from_profile is the upper Riemann sum of its grid rounded up by <= 1e-10."""
    b = 0.8
    e0 = 1.0 / b

    def delta(e):
        return np.maximum(0.0, -np.expm1((np.asarray(e) - e0) / 2))

    alpha = np.array([1.0 + 1e-6, 1.7, 3.0, 40.0, 400.0])  # 400: the log-space branch
    E = e0 * 1.01
    got = rdp_from_profile(delta, alpha, E, grid_size=1200)
    want = np.array([_riemann_reference(b, a, E, 1200) for a in alpha])
    assert np.all(got >= want)
    np.testing.assert_allclose(got, want, rtol=1e-9)


def test_rdp_from_profile_checks():
    with pytest.raises(ValueError, match="eps_max"):
        rdp_from_profile(lambda e: np.zeros_like(e), 2.0, -1.0)
    with pytest.raises(ValueError, match="tail"):
        rdp_from_profile(lambda e: np.full_like(e, 0.1), 2.0, 1.0)
    assert rdp_from_profile(lambda e: np.zeros_like(e), 3.0, 1.0) == 0.0


ROWS = [(60, 60000, 1.5, 100), (60, 60000, 1.5, 10_000), (256, 60000, 3.0, 10_000)]


@pytest.mark.parametrize("m, n, sigma, T", ROWS)
def test_without_replacement_below_dp_accounting(m, n, sigma, T):
    """The issue-28 rows: privamp's interval lies at or below dp-accounting's PLD under
    REPLACE_ONE at rate m/n (its Poisson-substitution bound, an upper-side sanity bound)."""
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution as pld

    ref = pld.from_gaussian_mechanism(sigma, sampling_prob=m / n,
                                      neighboring_relation=NeighboringRelation.REPLACE_ONE)
    want = ref.self_compose(T).get_epsilon_for_delta(1e-5)
    g = pa.Training(pa.Gaussian(sigma), pa.WithoutReplacement(m, n), steps=T,
                    relation=pa.Substitution()).epsilon(1e-5)
    assert 0 < g.lower.value <= g.upper.value <= want


def test_one_step_interval_contains_exact_epsilon():
    """T = 1: the exact epsilon of the Thm 9 profile (one record, attained by neighbouring
    datasets), solved in mpmath, lies inside privamp's interval, which is narrow."""
    sigma, m, n, d = 1.0, 5, 50, 1e-3
    mu, eta = 1.0 / sigma, m / n
    exact = float(mp.findroot(lambda e: _wor_delta(e, mu, eta) - d, 0.5))
    g = pa.Training(pa.Gaussian(sigma), pa.WithoutReplacement(m, n), steps=1,
                    relation=pa.Substitution()).epsilon(d)
    assert g.lower.value <= exact <= g.upper.value
    assert g.upper.value - g.lower.value < 1e-3 * (1 + exact)
    assert math.isfinite(g.upper.value)
