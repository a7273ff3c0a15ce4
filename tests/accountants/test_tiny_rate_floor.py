"""Issue 28: the Poisson PLD accountant's Rényi floor (T times one step's optimistic floor,
:func:`privamp.accountants.poisson_bounds.product_renyi_floor`) against the exact Rényi DP of
the Poisson-subsampled Gaussian at integer orders (closed form, mpmath; Mironov, Talwar,
Zhang 2019, arXiv:1908.10530, Sec. 3.3: the remove direction's binomial sum, which bounds
the add direction's at integer orders)."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.accountants.poisson import pld_analysis
from privamp.accountants.poisson_bounds import product_renyi_floor
from privamp.pairs.mechanism_pairs import GaussianPair
from privamp.pld.discretise import discretise
from privamp.pld.moments import two_sided_renyi_floor


def _exact_rdp(q: float, sigma: float, alpha: int) -> float:
    """D_alpha(q N(1, s^2) + (1 - q) N(0, s^2) || N(0, s^2)), integer alpha >= 2."""
    mp.mp.dps = 50
    q_ = mp.mpf(q)
    tot = mp.fsum(mp.binomial(alpha, k) * (1 - q_) ** (alpha - k) * q_**k
                  * mp.exp(mp.mpf(k * k - k) / (2 * mp.mpf(sigma) ** 2))
                  for k in range(alpha + 1))
    return float(mp.log(tot) / (alpha - 1))


@pytest.mark.parametrize("q,sigma,T", [(1e-5, 4.0, 10**4), (1e-4, 2.0, 100), (1e-6, 8.0, 10),
                                       (0.01, 2.0, 1000), (1e-3, 1.0, 1000)])
def test_floor_below_exact_rdp(q, sigma, T):
    """Sound at every setting (one-step floors at tiny rates, composed ones at larger);
    within 1% where the floor is informative (order 2 at q >= 1e-3)."""
    run = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T)
    an = pld_analysis(run)
    alphas = np.array([2.0, 3.0, 8.0, 32.0])
    floor = an.renyi_floor(alphas)
    exact = np.array([T * _exact_rdp(q, sigma, int(a)) for a in alphas])
    assert np.all(floor <= exact)
    if q >= 1e-3:
        assert floor[0] >= 0.99 * exact[0]
    # at least the composed run's floor (the one the screening used before)
    assert np.all(floor >= two_sided_renyi_floor(an.pld(), alphas) * (1 - 1e-9))


def test_product_floor_of_gaussian_pair():
    """q = 1: D_alpha(N(s, 1) || N(0, 1)) = alpha s^2 / 2 exactly; T steps: T times that."""
    s, T = 0.5, 1000
    pair = GaussianPair(s)
    _, o = discretise(pair, 1e-3, 1e-16)
    alphas = np.array([1.5, 2.0, 10.0])
    got = product_renyi_floor([o], T, alphas)
    exact = T * alphas * s * s / 2
    assert np.all(got <= exact)
    assert np.all(got >= 0.99 * exact)
    assert np.all(product_renyi_floor([], T, alphas) == 0.0)
