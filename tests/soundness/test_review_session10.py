"""Adversarial review of session 10's shortcuts (independent references only)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from privamp.accountants.poisson import PLDAnalysis, hellinger_tv_bound, poisson_pairs
from privamp.mechanisms.gaussian import Gaussian
from privamp.pairs.combinators import MixturePair
from privamp.pairs.mechanism_pairs import GaussianPair


@pytest.mark.parametrize("second", [
    np.concatenate([[-np.inf], np.linspace(0.0, 1.0, 10)]),  # an infinite edge
    np.array([0.0, 1e300, 2e300]),  # a spacing too large for an integer ratio
    np.array([np.nan, 0.0, 1.0]),
])
def test_edge_cache_odd_grids_match_fresh(second: np.ndarray) -> None:
    """split_bin_masses after a cached call: the same values as on a fresh pair (it raised
    OverflowError / ValueError from round(inf | nan) before the fix)."""
    cached = MixturePair(GaussianPair(1.0), 0.01)
    cached.split_bin_masses(np.linspace(-0.01, 1.0, 50))
    got = cached.split_bin_masses(second)
    ref = MixturePair(GaussianPair(1.0), 0.01).split_bin_masses(second)
    assert got is not None and ref is not None
    for a, b in zip(got, ref, strict=True):
        assert np.array_equal(a, b, equal_nan=True)


def test_edge_cache_near_grid_matches_fresh() -> None:
    """Edges off the cached ones by an ulp-level amount, reversed, or every other one: reuse
    only where the floats are equal (bit-identical to a fresh pair)."""
    base = np.linspace(-0.01, 1.0, 51)
    for second in (base + 1e-17, base[::-1], base[::2], np.nextafter(base, 2.0)):
        cached = MixturePair(GaussianPair(0.7), 0.3)
        cached.split_bin_masses(base)
        got = cached.split_bin_masses(second)
        ref = MixturePair(GaussianPair(0.7), 0.3).split_bin_masses(second)
        assert got is not None and ref is not None
        for a, b in zip(got, ref, strict=True):
            assert np.array_equal(a, b)


def _tv_one_step(q: float, s: float) -> float:
    """TV((1-q) N(0) + q N(s), N(0)) = q (2 Phi(s/2) - 1), exactly (mpmath)."""
    return float(q * (2 * mp.ncdf(mp.mpf(s) / 2) - 1))


@pytest.mark.parametrize(("q", "sigma", "steps"), [
    (0.999, 0.3, 1), (0.5, 1.0, 1), (0.3, 0.05, 1), (0.2, 1.0, 1), (1e-3, 0.5, 1)])
def test_tv_bound_above_exact_one_step(q: float, sigma: float, steps: int) -> None:
    """The run's TV bound is above the exact one-step total variation distance."""
    pairs = poisson_pairs(Gaussian(sigma), q)
    assert hellinger_tv_bound(pairs, steps) >= _tv_one_step(q, 1 / sigma)
    assert PLDAnalysis(Gaussian(sigma), q, steps).tv_bound() >= _tv_one_step(q, 1 / sigma)


def test_tv_bound_above_two_step_integral() -> None:
    """T = 2: TV(M x M, Q x Q) by a 2-d quadrature (scipy, error estimate) stays below the
    Hellinger bound."""
    from scipy import integrate

    q, s = 0.4, 1.5

    def lr(x: float) -> float:  # likelihood ratio of one step
        return 1 - q + q * math.exp(s * x - s * s / 2)

    def integrand(y: float, x: float) -> float:
        return max(lr(x) * lr(y) - 1.0, 0.0) * math.exp(-(x * x + y * y) / 2) / (2 * math.pi)

    tv, err = integrate.dblquad(integrand, -12, 12, -12, 12, epsabs=1e-8)
    bound = hellinger_tv_bound(poisson_pairs(Gaussian(1 / s), q), 2)
    assert bound >= tv + err
    assert tv > 0.1  # (the integral is not degenerate)
