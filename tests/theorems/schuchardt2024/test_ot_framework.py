"""Tests of the optimal-transport framework (Schuchardt et al. 2024, Thms 3.3/3.4):
privamp.theorems.schuchardt2024.ot_framework.

The built-in instances must come out of the framework (checked against the existing
functions and against closed forms); a scheme privamp has no built-in for (Poisson sampling
with a per-client quota) is checked by exact enumeration of every batch of a small dataset
and 40-digit mpmath quadrature of the resulting Gaussian mixtures.
"""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from scipy.stats import hypergeom

import privamp as pa
from privamp.theorems.daigavane2022 import daigavane_rdp
from privamp.theorems.mironov2019 import poisson_exact_rdp
from privamp.theorems.schuchardt2024 import (
    ChainEvents,
    ot_coupling_rdp,
    ot_pairwise_rdp,
    ot_rdp,
    poisson_group_gaussian_rdp,
    poisson_group_rr_rdp,
    wor_addremove_rdp,
    wor_substitution_rr_rdp,
)

ALPHA = np.array([1.5, 2.0, 3.0, 7.5, 20.0])


def _close(x, y, rel=1e-9):
    np.testing.assert_allclose(np.asarray(x, float), np.asarray(y, float), rtol=rel, atol=1e-13)


# ------------------------------------------------------------------------------------------
# built-in instances as special cases
# ------------------------------------------------------------------------------------------
def test_poisson_group_gaussian_is_thm_42():
    g = pa.Gaussian(1.3)
    _close(ot_rdp(g, ChainEvents.poisson(0.05, 3), ALPHA).value,
           poisson_group_gaussian_rdp(g, 0.05, 3, ALPHA))


def test_poisson_gaussian_integer_orders_match_binomial_closed_form():
    """Mironov et al. 2019, integer alpha: Psi = sum_k C(a,k) (1-q)^(a-k) q^k e^{k(k-1)/(2s^2)}
    (the removal direction, which dominates for the Gaussian)."""
    sigma, q = 1.1, 0.02
    a = np.array([2.0, 3.0, 8.0, 16.0])
    got = ot_rdp(pa.Gaussian(sigma), ChainEvents.poisson(q), a).value
    for al, v in zip(a, got, strict=True):
        n = int(al)
        psi = mp.fsum(mp.binomial(n, k) * (1 - mp.mpf(q)) ** (n - k) * mp.mpf(q) ** k
                      * mp.e ** (k * (k - 1) / (2 * mp.mpf(sigma) ** 2)) for k in range(n + 1))
        ref = float(mp.log(psi) / (n - 1))
        assert ref <= v <= ref * (1 + 1e-8)


def test_poisson_group_rr_is_thm_g1():
    m = pa.RandomizedResponse(0.8)
    _close(ot_rdp(m, ChainEvents.poisson(0.05, 3), ALPHA).value,
           poisson_group_rr_rdp(m, 0.05, 3, ALPHA))


def test_wor_substitution_rr_is_thm_37():
    m = pa.RandomizedResponse(0.7)
    e = ChainEvents.without_replacement(10, 200, "substitution")
    _close(ot_rdp(m, e, ALPHA, other=e).value,
           wor_substitution_rr_rdp(m, pa.WithoutReplacement(10, 200), ALPHA))


def test_wor_addremove_gaussian_is_thm_f3():
    g = pa.Gaussian(2.0)
    e = ChainEvents.without_replacement(16, 1000, "add/remove")
    _close(ot_rdp(g, e, ALPHA).value, wor_addremove_rdp(g, pa.WithoutReplacement(16, 1000), ALPHA))


def test_poisson_laplace_one_record_is_exact_poisson():
    lap = pa.Laplace(0.8)
    _close(ot_rdp(lap, ChainEvents.poisson(0.1), ALPHA).value, poisson_exact_rdp(lap, 0.1, ALPHA))


def test_daigavane_is_thm_33_with_hypergeometric_coupling():
    g, n, q, K = pa.Gaussian(5.0), 100, 10, 3
    k = np.arange(K + 1)
    _close(ot_pairwise_rdp(g, hypergeom.pmf(k, n, K, q), k, ALPHA).value,
           daigavane_rdp(g, pa.WithoutReplacement(q, n), K, ALPHA), rel=1e-8)


def test_laplace_groups_fall_back_to_a_sound_bound():
    """K = 2 Laplace: no worst-case placement proof, joint convexity; must still bound the
    exact divergence of the collinear configuration (mpmath)."""
    lap, r = pa.Laplace(1.0), 0.1
    got = ot_rdp(lap, ChainEvents.poisson(r, 2), np.array([2.0, 4.0])).value
    w = [(1 - r) ** 2, 2 * r * (1 - r), r * r]

    def lp(z, mu):
        return mp.e ** (-abs(z - mu)) / 2

    for a, v in zip((2, 4), got, strict=True):
        for fwd in (True, False):
            def f(z, a=a, fwd=fwd):
                mix = sum(wi * lp(z, k) for k, wi in enumerate(w))
                p, q = (mix, lp(z, 0)) if fwd else (lp(z, 0), mix)
                return p ** a * q ** (1 - a)
            psi = mp.quad(f, [-mp.inf, 0, 1, 2, mp.inf])
            assert float(mp.log(psi) / (a - 1)) <= v


# ------------------------------------------------------------------------------------------
# Thm 3.3 with the coupling searched by LP over finitely many batches
# ------------------------------------------------------------------------------------------
def _poisson_law(records, r):
    out = []
    for mask in itertools.product((0, 1), repeat=len(records)):
        p = math.prod(r if b else 1 - r for b in mask)
        out.append((frozenset(x for x, b in zip(records, mask, strict=True) if b), p))
    return [b for b, _ in out], [p for _, p in out]


def test_lp_coupling_finds_the_closed_form_optimum():
    """Poisson, x = {1, 2}, x' = x + {3}: the best coupling pairs y with y + 3 when 3 is
    sampled: Psi = (1 - r) + r e^{a(a-1)/(2 sigma^2)} (closed form)."""
    sigma, r = 1.3, 0.2
    b1, p1 = _poisson_law([1, 2], r)
    b2, p2 = _poisson_law([1, 2, 3], r)
    got = ot_coupling_rdp(pa.Gaussian(sigma), b1, p1, b2, p2, lambda y, z: len(y ^ z), ALPHA)
    ref = np.log((1 - r) + r * np.exp(ALPHA * (ALPHA - 1) / (2 * sigma**2))) / (ALPHA - 1)
    assert np.all(got.value >= ref) and np.allclose(got.value, ref, rtol=1e-8)


def test_lp_coupling_rejects_bad_laws():
    with pytest.raises(ValueError, match="probs"):
        ot_coupling_rdp(pa.Gaussian(1.0), [1, 2], [0.5, 0.6], [1], [1.0], lambda y, z: 1, 2.0)
    with pytest.raises(ValueError, match="weights"):
        ChainEvents((0.5, 0.6), (0, 1))


# ------------------------------------------------------------------------------------------
# worked example: Poisson with a per-client quota (no built-in), checked by enumeration
# ------------------------------------------------------------------------------------------
def _quota_mixture(values, others, r, quota):
    """Exact law of the sum query over the batch: every subset of sampled records (others
    and the client's), the client keeping a uniformly random ``quota`` of its sampled
    records; returns {mean: probability}."""
    law: dict[float, float] = {}
    m = len(values)
    for om in itertools.product((0, 1), repeat=len(others)):
        po = math.prod(r if b else 1 - r for b in om)
        base = sum(v for v, b in zip(others, om, strict=True) if b)
        for cm in itertools.product((0, 1), repeat=m):
            pc = math.prod(r if b else 1 - r for b in cm)
            chosen = [v for v, b in zip(values, cm, strict=True) if b]
            subsets = list(itertools.combinations(chosen, min(len(chosen), quota)))
            for s in subsets:
                mean = round(base + sum(s), 12)
                law[mean] = law.get(mean, 0.0) + po * pc / len(subsets)
    return law


def _mp_psi(a, p_law, q_law, sigma):
    def dens(z, law):
        return mp.fsum(w * mp.npdf(z, mu, sigma) for mu, w in law.items())
    pts = sorted({*p_law, *q_law})
    return mp.quad(lambda z: dens(z, p_law) ** a * dens(z, q_law) ** (1 - a),
                   [-mp.inf, *pts, mp.inf])


@pytest.mark.parametrize("values, others", [((1.0, 1.0, 1.0), (0.0, 0.0)),
                                            ((0.7, -0.4, 1.0), (0.25,))])
def test_quota_example_bounds_enumerated_divergence(values, others):
    """Client records contribute values in [-1, 1] to a sum query (sensitivity 1 per
    record); other records anything.  All ones, others zero: the worst case, attained."""
    mp.mp.dps = 20
    sigma, r, quota = 1.5, 0.3, 2
    bound = ot_rdp(pa.Gaussian(sigma), ChainEvents.poisson_with_quota(r, 3, quota),
                   np.array([2.0, 5.0])).value
    with_client = _quota_mixture(values, others, r, quota)
    without = _quota_mixture((), others, r, quota)
    for a, v in zip((2, 5), bound, strict=True):
        ref = max(_mp_psi(a, with_client, without, sigma), _mp_psi(a, without, with_client, sigma))
        exact = float(mp.log(ref) / (a - 1))
        assert exact <= v
        if values == (1.0, 1.0, 1.0):  # the worst case: the bound is attained
            assert v <= exact * (1 + 1e-7) + 1e-12


# ------------------------------------------------------------------------------------------
# CustomSampler: the framework in pa.rdp and Training
# ------------------------------------------------------------------------------------------
def test_custom_sampler_with_poisson_events_is_the_poisson_run():
    g, r = pa.Gaussian(1.1), 0.02
    ev = ChainEvents.poisson(r)
    s = pa.CustomSampler(ev.weights, ev.positions, steps_per_epoch_=50)
    got = pa.rdp(g, s, ALPHA, method="schuchardt-ot")
    ref = pa.rdp(g, pa.Poisson(r), ALPHA, method="mironov-sgm")
    np.testing.assert_allclose(got, ref, rtol=1e-8)
    e1 = pa.Training(g, s, epochs=4).epsilon(1e-5, accountant="rdp").upper.value
    e2 = pa.Training(g, pa.Poisson(r), steps=200).epsilon(1e-5, accountant="rdp").upper.value
    assert e1 == pytest.approx(e2, rel=1e-6)


def test_custom_sampler_groups_only_by_group_privacy_and_bad_events():
    s = pa.CustomSampler((0.9, 0.1), (0, 1))
    with pytest.raises(pa.NotApplicable):
        pa.rdp(pa.Gaussian(1.0), s, 2.0, pa.AddRemove(group=2), method="schuchardt-ot")
    curve = pa.rdp_curve(pa.Gaussian(1.0), s, ALPHA, pa.AddRemove(group=2))
    assert set(curve.methods) == {"mironov-group"}
    assert np.all(curve.epsilon > pa.rdp(pa.Gaussian(1.0), s, ALPHA))
    with pytest.raises(ValueError, match="weights"):
        pa.CustomSampler((0.9, 0.2), (0, 1))
