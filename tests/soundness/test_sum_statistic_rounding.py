"""The sum-statistic lower bounds (theorems/poisson_groups.py, theorems/poisson_sum_test.py)
never exceed what their test can certify, computed independently in mpmath.

Reproducer (review3): with N = 1e9 summed steps, scipy's binom.logpmf loses ~1e-6 absolute
(cancellation of gammaln(N + 1) ~ 2e10), so the kept weights summed to 1 + 3e-7 and
sum_statistic_delta(1.0, 1, 1e9, 1e-6, 31.6) returned 0.12677127 > 0.12677118, the largest
value any threshold test on that statistic can give (the 1 - 1e-9 allowance did not cover it).
"""

from __future__ import annotations

import math

import mpmath as mp
import pytest

from privamp.theorems.poisson_groups import sum_statistic_delta
from privamp.theorems.poisson_sum_test import SumTestAnalysis


def _best_sum_test(eps: float, n_sum: int, q: float, s: float) -> mp.mpf:
    """sup_x P(Y > x) - e^eps N(0,1)(Y > x), Y ~ sum_n Binom(N, q)_n N(n s / sqrt(N), 1),
    the weights from mpmath's loggamma (40 sd around the mean), at the likelihood-ratio
    threshold (the optimum; the dropped weights are below 1e-300)."""
    with mp.workdps(30):
        mean, sd = n_sum * q, math.sqrt(n_sum * q * (1 - q))
        ns = range(max(0, int(mean - 40 * sd)), min(n_sum, int(mean + 40 * sd)) + 1)
        qq, top = mp.mpf(q), mp.loggamma(n_sum + 1)
        w = [mp.e ** (top - mp.loggamma(n + 1) - mp.loggamma(n_sum - n + 1)
                      + n * mp.log(qq) + (n_sum - n) * mp.log1p(-qq)) for n in ns]
        mus = [n * mp.mpf(s) / mp.sqrt(n_sum) for n in ns]

        def loss(x):
            return mp.log(mp.fsum(wi * mp.e ** (m * x - m * m / 2) for wi, m in zip(
                w, mus, strict=True)))

        lo, hi = mp.mpf(-50), mp.mpf(50)
        for _ in range(70):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if loss(mid) > eps else (mid, hi)
        x = (lo + hi) / 2
        return mp.fsum(wi * mp.ncdf(m - x) for wi, m in zip(w, mus, strict=True)) \
            - mp.e ** eps * mp.ncdf(-x)


@pytest.mark.parametrize("n_sum,q,s,eps", [(10 ** 9, 1e-6, 31.6, 1.0)])
def test_long_sums_stay_below_the_statistics_best_test(n_sum, q, s, eps):
    got = sum_statistic_delta(eps, 1, n_sum, q, s)
    best = float(_best_sum_test(eps, n_sum, q, s))
    assert 0.99 * best < got <= best


def _single_step_epsilon(delta: float, q: float, s: float) -> mp.mpf:
    """epsilon(delta) of one Poisson-subsampled Gaussian step, remove direction:
    (1 - q) N(0, 1) + q N(s, 1) vs N(0, 1), by mpmath (a lower bound on the truth's max over
    the two directions)."""
    with mp.workdps(40):
        qq, ss = mp.mpf(q), mp.mpf(s)

        def dlt(e):
            # L(x) = e at x = (log((e^e - 1 + q) / q) + s^2 / 2) / s
            x = (mp.log((mp.e ** e - 1 + qq) / qq) + ss * ss / 2) / ss
            return qq * mp.ncdf(ss - x) + (1 - qq) * mp.ncdf(-x) - mp.e ** e * mp.ncdf(-x)

        lo, hi = mp.mpf(0), mp.mpf(2000)
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if dlt(mid) > delta else (lo, mid)
        return lo


@pytest.mark.parametrize("q,s", [(1e-3, 10.0), (0.3, 30.0), (0.99, 2.0), (1e-3, 1e-5)])
@pytest.mark.parametrize("delta", [1e-300, 1e-100, 1e-12])
def test_sum_test_below_the_single_step_truth_at_tiny_delta(q, s, delta):
    _, lo = SumTestAnalysis(1, q, s).epsilon(delta)
    assert lo is not None and lo.kind == "lower"
    truth = float(_single_step_epsilon(delta, q, s))
    assert float(lo.value) <= truth * (1 + 1e-12)
    if truth > 1e-3:
        assert float(lo.value) >= 0.99 * truth
