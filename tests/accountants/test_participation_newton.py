"""The participation bound's Gaussian inversion (accountants/participation.py,
:func:`gaussian_epsilon`, Newton search then a checked bracket): the answer satisfies the
certified profile and agrees with an independent root of the closed form (Balle & Wang 2018,
arXiv:1805.06530, Thm 8) found by scipy's brentq, to ~1e-12 relative."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from privamp.accountants.participation import gaussian_epsilon, gaussian_profile


def closed_form(eps: float, s: float) -> float:
    return float(norm.cdf(s / 2 - eps / s) - math.exp(eps) * norm.cdf(-s / 2 - eps / s))


@pytest.mark.parametrize("s", [1e-3, 0.05, 0.3, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-8, 1e-5, 1e-2, 0.2])
def test_against_brentq(s: float, delta: float) -> None:
    e = float(gaussian_epsilon(np.array([delta]), s)[0])
    if closed_form(0.0, s) <= delta:
        assert e == 0.0
        return
    root = brentq(lambda x: closed_form(x, s) - delta, 0.0, s * s / 2 + 10 * s + 10,
                  xtol=1e-300, rtol=1e-15, maxiter=500)
    assert float(gaussian_profile(np.array([e]), s)[0]) <= delta
    assert e >= root * (1 - 1e-9)
    assert e == pytest.approx(root, rel=1e-9, abs=1e-15)


def test_vector_and_zero() -> None:
    """Several deltas at once, including ones at which epsilon is 0; each the least float
    (up to a few ulps) with the certified profile <= delta."""
    s = 0.5
    d = np.array([0.9, 1e-5, 0.05, 1e-10])
    e = gaussian_epsilon(d, s)
    assert e[0] == 0.0
    assert np.all(gaussian_profile(e, s) <= d)
    below = np.nextafter(np.nextafter(e[1:], -np.inf), -np.inf)
    assert np.all(gaussian_profile(below, s) > d[1:])
