"""Balle, Barthe, Gaboardi 2018 under Poisson sampling and substitution without a dataset
size, and black-box group privacy as an RDP method and a run accountant (issue 16, item 4).

References: brute-force hockey-stick divergences of every Poisson batch of small datasets
(Gaussian mixtures integrated on a fine grid), and Thm 6 integrated by scipy.quad over a
profile written out here from the analytic Gaussian (Balle & Wang 2018, Thm 8)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

import privamp as pa

EPS = np.array([0.0, 0.1, 0.5, 1.0, 2.0])
Z = np.linspace(-25.0, 25.0, 200001)


def _poisson_density(values, r, sigma):
    dens = np.zeros_like(Z)
    for mask in itertools.product((0, 1), repeat=len(values)):
        p = math.prod(r if b else 1 - r for b in mask)
        mu = sum(v for v, b in zip(values, mask, strict=True) if b)
        dens += p * stats.norm.pdf(Z, mu, sigma)
    return dens


def _hockey(p, q, eps):
    dz = Z[1] - Z[0]
    return np.array([np.sum(np.maximum(p - math.exp(e) * q, 0.0)) * dz for e in eps])


@pytest.mark.parametrize("group", [1, 2])
def test_poisson_substitution_without_dataset_size_bounds_brute_force(group):
    sigma, r = 1.0, 0.3
    mech = pa.Gaussian(sigma, 2.0)  # substitution sensitivity 2: values in [-1, 1]
    bound = pa.profile(mech, pa.Poisson(r), EPS, pa.Substitution(group))
    for x in ([1.0, 1.0, -1.0, -1.0], [0.9, 1.0, 0.3, -0.5], [1.0, 1.0, 0.0]):
        xp = [-v for v in x[:group]] + x[group:]
        p, q = _poisson_density(x, r, sigma), _poisson_density(xp, r, sigma)
        for a, b in ((p, q), (q, p)):
            assert np.all(bound >= _hockey(a, b, EPS) * (1 - 1e-6) - 1e-9)


def test_poisson_substitution_is_registered_for_rdp_and_training():
    mech, s = pa.Gaussian(2.0, 2.0), pa.Poisson(0.01)
    assert "balle-profile" in [n for n, _ in pa.rdp_methods(mech, s, pa.Substitution())]
    g = pa.Training(mech, s, steps=100, relation=pa.Substitution()).epsilon(1e-5)
    # a substitution is at most a removal and an insertion: never better than add/remove
    # of the same sensitivity (exact PLD), and finite
    ar = pa.Training(pa.Gaussian(2.0, 2.0), s, steps=100).epsilon(1e-5)
    assert ar.lower.value <= g.upper.value < 50


def _bb_profile(eps, sigma, r, K):
    """Black-box group profile of Poisson(r) + Gaussian(sigma) under add/remove of K."""
    def gauss_delta(e, k=1):
        d = k / sigma
        return stats.norm.cdf(d / 2 - e / d) - math.exp(e) * stats.norm.cdf(-d / 2 - e / d)

    eta = 1 - (1 - r) ** K
    e_in = math.log1p((math.exp(eps) - 1) / eta)
    tot = 0.0
    for j in range(1, K + 1):
        w = stats.binom.pmf(j, K, r)
        dj = gauss_delta(e_in) if j == 1 else gauss_delta(e_in / j) * math.expm1(e_in) / \
            math.expm1(e_in / j)
        tot += w * min(dj, 1.0)
    return min(tot, 1.0)


def test_black_box_rdp_matches_thm6_quadrature():
    sigma, r, K = 1.0, 0.05, 3
    a = np.array([2.0, 5.0])
    got = pa.rdp(pa.Gaussian(sigma), pa.Poisson(r), a, pa.AddRemove(K),
                 method="balle-profile-black-box")
    for al, v in zip(a, got, strict=True):
        s = al - 1
        def f(e, s=s):
            return ((math.exp(s * e) + math.exp(-(s + 1) * e))
                     * _bb_profile(e, sigma, r, K))
        val = sum(integrate.quad(f, lo, hi, limit=200, epsabs=0, epsrel=1e-11)[0]
                  for lo, hi in ((0, 1), (1, 5), (5, 20), (20, 60)))
        ref = math.log1p(s * (s + 1) * val) / s
        assert ref <= v <= ref * (1 + 2e-3)


def test_black_box_group_accountant_in_training():
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=200,
                      relation=pa.AddRemove(group=2))
    bb = run.epsilon(1e-5, accountant="black-box-group")
    wb = run.epsilon(1e-5)
    assert "black-box" in bb.upper.source
    assert wb.upper.value <= bb.upper.value < 100
    with pytest.raises(pa.NotApplicable):
        pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=10).epsilon(
            1e-5, accountant="black-box-group")
