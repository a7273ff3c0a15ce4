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
