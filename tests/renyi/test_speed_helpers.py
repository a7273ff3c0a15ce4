"""The helpers issue 14 added for speed, against exact references (mpmath)."""

from __future__ import annotations

import mpmath as mp
import numpy as np

from privamp.pld.tables import discounted_suffix
from privamp.theorems.mironov2019 import _sgm_log_excess_integer, _sgm_log_excess_small


def test_discounted_suffix_matches_mpmath():
    mp.mp.dps = 40
    rng = np.random.default_rng(1)
    for n, h in [(300, 0.05), (2500, 0.02), (40, 3.0)]:
        m = rng.random(n) * np.exp(-40 * rng.random(n))
        got = discounted_suffix(m, h, True)
        for j in (0, n // 3, n - 1):
            ref = mp.fsum(mp.mpf(float(m[i])) * mp.e ** (-(i - j) * mp.mpf(h))
                          for i in range(j, n))
            # well inside the 1e-9 relative allowance the queries add (QUERY_REL)
            assert abs(got[j] - float(ref)) <= 1e-12 * float(ref)


def test_batched_integer_orders_match_mpmath():
    """log(A_n - 1) of the sampled Gaussian (Mironov et al. 2019, Sec. 3.3) at integer
    orders, batched, against mpmath; the batch equals the one-order routine."""
    mp.mp.dps = 50
    s, q = 1 / 1.1, 256 / 60000
    ns = np.array([2.0, 3.0, 7.0, 40.0, 128.0, 300.0, 1500.0])
    got = _sgm_log_excess_small(ns, s, q)
    for n, g in zip(ns.astype(int), got, strict=True):
        ref = mp.log(mp.fsum(mp.binomial(n, k) * mp.mpf(q) ** k * (1 - mp.mpf(q)) ** (n - k)
                             * mp.expm1(mp.mpf(k * (k - 1)) * s * s / 2)
                             for k in range(2, n + 1)))
        assert float(ref) <= g <= float(ref) + 1e-12 * max(1.0, abs(float(ref)))
        assert abs(g - _sgm_log_excess_integer(int(n), s, q)) <= 1e-12 * max(1.0, abs(g))


def test_tangent_floor_below_the_curve():
    """The floor that prunes the order search lies below a convex-CGF curve everywhere
    (the sampled Gaussian's exact RDP at real orders, here privamp's certified curve)."""
    from privamp.renyi.conversion import _CurveCache, _tangent_floor
    from privamp.theorems.mironov2019 import sampled_gaussian_rdp

    for s, q in [(1 / 1.1, 0.004), (1 / 0.3, 1e-5), (0.5, 0.5)]:
        cache = _CurveCache(lambda a, s=s, q=q: sampled_gaussian_rdp(a, s, q))
        cache.add(np.array([2.0, 3.0, 4.0, 6.0, 9.0, 13.0, 20.0]))
        x = np.array([1.05, 1.5, 1.9, 2.5, 3.3, 5.1, 7.7, 11.0, 17.0])
        assert np.all(_tangent_floor(cache, x) <= sampled_gaussian_rdp(x, s, q) * (1 + 1e-9))


def test_batched_integer_orders_match_opacus():
    """The batched sampled-Gaussian RDP at integer orders (2..200, several in one block)
    against Opacus's own binomial sum (compute_rdp, Mironov et al. 2019, Sec. 3.3)."""
    import pytest

    rdp_mod = pytest.importorskip("opacus.accountants.analysis.rdp")
    from privamp.theorems.mironov2019 import sampled_gaussian_rdp

    orders = [2.0, 3.0, 17.0, 63.0, 130.0, 200.0]
    for q, sigma in [(1e-5, 0.3), (1e-3, 1.0), (0.1, 4.0), (0.01, 8.0)]:
        ref = np.asarray(rdp_mod.compute_rdp(q=q, noise_multiplier=sigma, steps=1,
                                             orders=orders))
        got = sampled_gaussian_rdp(np.array(orders), 1.0 / sigma, q)
        ok = np.isfinite(ref)
        assert np.all(got[ok] >= ref[ok] * (1 - 1e-9))
        assert np.all(got[ok] <= ref[ok] * (1 + 1e-8) + 1e-300)
