"""The Rényi floor of the fixed-batch PLD analysis (screening of the RDP accountant, issue 28).

References: the exact Rényi divergence of the realised randomized-response pair of one step
without replacement (eta P + (1 - eta) Q vs Q, two atoms: a closed form, mpmath), times T;
the RDP accountant's own curve (an independent upper route: Balle et al.'s profile turned
into RDP), which every floor must stay below; and each accountant run on its own, whose
smallest upper bound "best" must reach."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

import privamp as pa

ORDERS = np.array([1.5, 2.0, 4.0, 10.0, 32.0])


def _pld(run):
    return dict(run.analysis("pld"))["pld"]


def test_floor_below_exact_rdp_of_realised_rr_pair():
    mp.mp.dps = 40
    theta, m, n, T = 0.8, 10, 1000, 200
    eta = mp.mpf(m) / n
    run = pa.Training(pa.RandomizedResponse(theta), pa.WithoutReplacement(m, n), steps=T,
                      relation=pa.Substitution())
    fl = _pld(run).renyi_floor(ORDERS)
    t = mp.mpf(theta)
    p = [eta * t + (1 - eta) * (1 - t), eta * (1 - t) + (1 - eta) * t]
    q = [1 - t, t]
    for a, f in zip(ORDERS, fl, strict=True):
        a = mp.mpf(float(a))
        pq = list(zip(p, q, strict=True))
        one = max(mp.log(sum(pi ** a * qi ** (1 - a) for pi, qi in pq)),
                  mp.log(sum(qi ** a * pi ** (1 - a) for pi, qi in pq))) / (a - 1)
        exact = T * float(one)
        assert f <= exact * (1 + 1e-12)
        assert f >= 0.5 * exact  # useful, not vacuous


@pytest.mark.parametrize("sigma,m,T", [(3.0, 256, 10**4), (1.5, 60, 100), (0.8, 60, 300)])
def test_floor_below_rdp_accountant_curve(sigma, m, T):
    run = pa.Training(pa.Gaussian(sigma), pa.WithoutReplacement(m, 60000), steps=T,
                      relation=pa.Substitution())
    fl = _pld(run).renyi_floor(ORDERS)
    rdp = dict(run.analysis("rdp"))["rdp"].rdp_accountant().rdp(ORDERS)
    assert np.all(fl <= rdp)
    assert np.all(fl > 0)


@pytest.mark.parametrize("sigma,m,T", [(3.0, 256, 10**4), (1.5, 60, 100), (0.8, 60, 10**3)])
def test_best_reaches_every_accountants_upper(sigma, m, T):
    def run():
        return pa.Training(pa.Gaussian(sigma), pa.WithoutReplacement(m, 60000), steps=T,
                           relation=pa.Substitution())

    best = float(run().epsilon(1e-5).upper.value)
    each = [float(run().epsilon(1e-5, accountant=a).upper.value) for a in ("pld", "rdp")]
    assert best <= min(each) * (1 + 1e-12)


def _thm6_rdp_of_symmetrised(sigma: float, eta: float, alpha: float) -> float:
    """D_alpha of the symmetrised Thm 9 pair, one step, by Thm 6 of Balle et al. 2018 (an
    identity for exact profiles; both orders' profiles are H(D) for eps >= 0) with H(D) in
    closed form (advanced joint convexity: eta delta_G(eps) at e^eps' = 1 + eta (e^eps - 1),
    delta_G the Gaussian profile, Balle & Wang 2018), integrated with mpmath."""
    mp.mp.dps = 30
    mu, eta, s = mp.mpf(1) / sigma, mp.mpf(eta), mp.mpf(alpha) - 1

    def h_d(ep):
        e = mp.log(1 + (mp.exp(ep) - 1) / eta)
        return eta * (mp.ncdf(mu / 2 - e / mu) - mp.exp(e) * mp.ncdf(-mu / 2 - e / mu))

    integral = mp.quad(lambda ep: (mp.exp(s * ep) + mp.exp(-(s + 1) * ep)) * h_d(ep),
                       [0, 0.01, 0.1, 1, 5, 20, 60])
    return float(mp.log(1 + s * (s + 1) * integral) / s)


@pytest.mark.parametrize("sigma,m,T", [(3.0, 60, 10**4), (1.5, 60, 100)])
def test_symmetrised_floor_below_exact_thm6_value(sigma, m, T):
    """The floor of the symmetrised pair (issue 28) is below T D_alpha(Sym(D)) computed
    independently, and within 10 % of it (useful)."""
    an = _pld(pa.Training(pa.Gaussian(sigma), pa.WithoutReplacement(m, 60000), steps=T,
                          relation=pa.Substitution()))
    orders = np.array([1.5, 2.0, 4.0, 10.0])
    fl = an.renyi_floor(orders)
    for a, f in zip(orders, fl, strict=True):
        exact = T * _thm6_rdp_of_symmetrised(sigma, m / 60000, float(a))
        assert f <= exact * (1 + 1e-9)
        assert f >= 0.9 * exact


def test_symmetrised_floor_rests_on_balle_profile_only():
    """The floor is a floor of the RDP accountant because its only method for this setting
    is Thm 6 of the Thm 9 profile: if another method joins, the floor must be revisited."""
    run = pa.Training(pa.Gaussian(3.0), pa.WithoutReplacement(60, 60000), steps=100,
                      relation=pa.Substitution())
    src = run.epsilon(1e-5, accountant="rdp").upper.source
    assert "methods: balle-profile)" in src


@pytest.mark.parametrize("sigma,m,T", [(3.0, 60, 10**4), (3.0, 256, 100), (1.5, 60, 10**4),
                                       (0.8, 256, 100)])
def test_floor_below_rdp_curve_all_orders(sigma, m, T):
    run = pa.Training(pa.Gaussian(sigma), pa.WithoutReplacement(m, 60000), steps=T,
                      relation=pa.Substitution())
    orders = 1.0 + np.geomspace(1e-6, 1e4, 61)
    fl = _pld(run).renyi_floor(orders)
    rdp = dict(run.analysis("rdp"))["rdp"].rdp_accountant().rdp(orders)
    assert np.all(fl <= rdp)


@pytest.mark.parametrize("sigma,m,T", [(3.0, 60, 10**4), (3.0, 60, 100), (1.5, 60, 10**4),
                                       (3.0, 256, 10**4)])
def test_screening_skips_rdp_where_it_loses(sigma, m, T):
    """Issue 28: there the RDP accountant's answer is above the PLD's and the screening of
    "best" rules it out with the floor (before: it ran, 60-75 % of the call's time)."""
    from privamp.accounting.screening import rdp_ruled_out

    run = pa.Training(pa.Gaussian(sigma), pa.WithoutReplacement(m, 60000), steps=T,
                      relation=pa.Substitution())
    an = _pld(run)
    d = np.array([1e-5])
    up = an.epsilon(d)[0].value
    rdp = float(run.epsilon(1e-5, accountant="rdp").upper.value)
    assert float(np.ravel(up)[0]) < rdp
    assert rdp_ruled_out(run, [an], "epsilon", d, np.atleast_1d(up))
