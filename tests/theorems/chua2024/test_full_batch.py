"""Poisson sampling at rate 1 (accountant "full-batch"): the attained closed form against an
mpmath evaluation of the T-fold Gaussian profile, and the PLD accountant's certified
interval around it (review session 11: the Poisson PLD gave [113.63, 114.21] at sigma 300,
T 1e7, delta 1e-8)."""

from __future__ import annotations

import mpmath as mp
import pytest

import privamp as pa

mp.mp.dps = 50


def mp_delta(eps: float, mu: float) -> mp.mpf:
    """delta(eps) of N(mu, 1) vs N(0, 1) (Balle & Wang 2018, Thm 8), 50 digits."""
    e, m = mp.mpf(eps), mp.mpf(mu)
    return mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2)


def mp_epsilon(delta: float, mu: float) -> float:
    """epsilon(delta) by bisection on the 50-digit profile."""
    lo, hi = mp.mpf(0), mp.mpf(10) * (1 + mu * mu)
    for _ in range(200):
        mid = (lo + hi) / 2
        if mp_delta(float(mid), mu) > delta:
            lo = mid
        else:
            hi = mid
    return float(hi)


@pytest.mark.parametrize("sigma, steps, group, delta", [
    (300.0, 10**7, 1, 1e-8), (1.0, 10, 1, 1e-5), (2.0, 1000, 3, 1e-6), (0.7, 1, 1, 1e-3)])
def test_epsilon_is_the_closed_form(sigma, steps, group, delta) -> None:
    run = pa.Training(pa.Gaussian(sigma), pa.Poisson(1.0), steps=steps,
                      relation=pa.AddRemove(group))
    got = run.epsilon(delta)
    mu = group * steps ** 0.5 / sigma
    truth = mp_epsilon(delta, mu)
    assert float(got.lower.value) <= truth <= float(got.upper.value)
    assert float(got.upper.value) <= truth * (1 + 1e-9)  # the closed form, not a wide bracket


def test_delta_is_the_closed_form_and_zero_out_agrees() -> None:
    for relation in (None, pa.ZeroOut()):
        kw = {} if relation is None else {"relation": relation}
        run = pa.Training(pa.Gaussian(1.5), pa.Poisson(1.0), steps=50, **kw)
        got = run.delta(2.0)
        truth = mp_delta(2.0, 50 ** 0.5 / 1.5)
        assert mp.mpf(float(got.lower.value)) <= truth <= mp.mpf(float(got.upper.value))
        assert float(got.upper.value) <= float(truth) * (1 + 1e-9)


def test_the_pld_accountant_brackets_the_exact_value() -> None:
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(1.0), steps=100)
    exact = mp_epsilon(1e-5, 10.0)
    est = run.epsilon(1e-5, accountant="pld")
    assert est.lower.value <= exact <= est.upper.value


def test_rates_below_one_are_not_answered() -> None:
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.999), steps=10)
    with pytest.raises(pa.NotApplicable):
        run.epsilon(1e-5, accountant="full-batch")
