"""Issue 28's tiny-rate paths of the Poisson PLD accountant: the Hellinger bound on the run's
total variation (epsilon 0 without a composition), the add direction on the lead's plan, and
one-level composition of small windows.  References: closed forms (mpmath), a numerical
integral of the two-step product, dp-accounting's optimistic and pessimistic PLDs."""

from __future__ import annotations

import logging
import math

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.accountants.poisson import hellinger_tv_bound, poisson_pairs


def _dpa_eps(q: float, sigma: float, T: int, delta: float, pessimistic: bool,
             h: float = 1e-5) -> float:
    from dp_accounting.pld import privacy_loss_distribution as pld

    logging.disable(logging.WARNING)
    try:
        one = pld.from_gaussian_mechanism(sigma, sampling_prob=q,
                                          pessimistic_estimate=pessimistic,
                                          value_discretization_interval=h)
        return float(one.self_compose(T).get_epsilon_for_delta(delta))
    finally:
        logging.disable(logging.NOTSET)


@pytest.mark.parametrize("q,sigma", [(1e-7, 1.0), (1e-3, 0.5), (0.1, 2.0), (0.5, 1.0)])
def test_hellinger_bound_above_one_step_tv(q, sigma):
    """T = 1: TV(q N(s, 1) + (1 - q) N(0, 1), N(0, 1)) = q (2 Phi(s / 2) - 1) exactly."""
    mp.mp.dps = 40
    s = 1.0 / sigma
    exact = mp.mpf(q) * (2 * mp.ncdf(mp.mpf(s) / 2) - 1)
    bound = hellinger_tv_bound(poisson_pairs(pa.Gaussian(sigma), q), 1)
    assert bound >= float(exact)


@pytest.mark.parametrize("q,sigma", [(0.05, 1.0), (0.2, 0.5), (1e-3, 2.0)])
def test_hellinger_bound_above_two_step_tv(q, sigma):
    """T = 2: TV of the product = E_Q[(l(x) l(y) - 1)_+], l the one-step likelihood ratio,
    integrated on a fine grid (trapezoid on [-14, 14 + s]^2, error far below the margin)."""
    s = 1.0 / sigma
    x = np.linspace(-14.0, 14.0 + s, 3001)
    w = np.exp(-x * x / 2) / math.sqrt(2 * math.pi) * (x[1] - x[0])
    lr = 1.0 - q + q * np.exp(s * x - s * s / 2)
    tv = float(np.sum(w[:, None] * w[None, :] * np.maximum(lr[:, None] * lr[None, :] - 1, 0)))
    bound = hellinger_tv_bound(poisson_pairs(pa.Gaussian(sigma), q), 2)
    assert bound >= tv * (1 + 1e-6)


@pytest.mark.parametrize("q,sigma,T", [(1e-3, 1.0, 100), (1e-2, 2.0, 1000)])
def test_hellinger_bound_above_dp_accounting_tv(q, sigma, T):
    """Longer runs: above dp-accounting's optimistic PLD's delta at eps 0 (below the truth)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    logging.disable(logging.WARNING)
    try:
        opt = pld.from_gaussian_mechanism(sigma, sampling_prob=q, pessimistic_estimate=False,
                                          value_discretization_interval=1e-4)
        tv = float(opt.self_compose(T).get_delta_for_epsilon(0.0))
    finally:
        logging.disable(logging.NOTSET)
    assert 0 < tv <= hellinger_tv_bound(poisson_pairs(pa.Gaussian(sigma), q), T)


def test_hellinger_bound_declines_other_pairs():
    """Rate 1 (the base pair itself) and Laplace: no bound (inf)."""
    assert hellinger_tv_bound(poisson_pairs(pa.Gaussian(1.0), 1.0), 10) == math.inf
    assert hellinger_tv_bound(poisson_pairs(pa.Laplace(1.0), 0.1), 10) == math.inf


@pytest.mark.parametrize("q,sigma,T", [(1e-7, 1.0, 10**4), (1e-6, 1.0, 100),
                                       (1e-5, 2.0, 10), (1e-7, 8.0, 10**6)])
def test_epsilon_zero_by_total_variation(q, sigma, T):
    """q sqrt(T (e^{1/sigma^2} - 1)) / (1 + sqrt(1 - q)) <= 1e-5 (closed form here): epsilon
    is exactly 0 at delta 1e-5; dp-accounting's optimistic estimate agrees (<= 1e-3 at most
    its grid step away from 0), while its pessimistic one is not 0."""
    tv = q * math.sqrt(T * math.expm1(1.0 / sigma**2)) / (1.0 + math.sqrt(1.0 - q))
    assert tv < 1e-5
    g = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T).epsilon(1e-5)
    assert g.upper.value == 0.0 and g.upper.kind == "exact"
    assert _dpa_eps(q, sigma, T, 1e-5, pessimistic=False, h=1e-4) <= 1e-4


@pytest.mark.parametrize("q,sigma,T", [
    (1e-6, 4.0, 10**4),   # the add direction on the lead's plan decides the upper bound
    (1e-5, 4.0, 10**4),   # one-level composition of a small window (SMALL_WINDOW)
    (1e-4, 2.0, 10**4),
    (1e-5, 2.0, 100),
])
def test_tiny_rate_interval_brackets_dp_accounting(q, sigma, T):
    """privamp's interval against dp-accounting's fine-grid PLDs (both directions): the upper
    bound at least dp-accounting's optimistic epsilon, the lower bound at most its
    pessimistic one, and the interval narrow (1% relative)."""
    g = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T).epsilon(1e-5)
    up, lo = float(g.upper.value), float(g.lower.value)
    opt = _dpa_eps(q, sigma, T, 1e-5, pessimistic=False, h=1e-6)
    pess = _dpa_eps(q, sigma, T, 1e-5, pessimistic=True, h=1e-6)
    assert up >= opt - 1e-12
    assert lo <= pess + 1e-12
    assert 0 < lo <= up <= lo * 1.01 + 1e-9 or up < 1e-6
