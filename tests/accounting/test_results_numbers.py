"""Results behave like the numbers they hold (issue 15, item 6): a Guarantee formats,
compares and converts as its upper bound; pa.rdp and pa.profile return labelled Bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

import privamp as pa

UP = pa.Bound(2.5, "upper", "test")
LO = pa.Bound(1.25, "lower", "test")


def test_a_guarantee_formats_and_compares_as_its_upper_bound():
    g = pa.Guarantee(UP, LO)
    assert f"{g:.2f}" == "2.50" and f"{g:.1e}" == "2.5e+00"
    assert float(g) == 2.5 and g < 3 and g <= 2.5 and not g > 2.5 and g >= 2
    assert "in [1.25, 2.5]" in f"{g}"  # no spec: the full two-sided text
    assert round(float(g), 1) == 2.5 and np.asarray(g) == 2.5


def test_formatting_rounds_in_the_safe_direction():
    up, lo = pa.Bound(2.38163, "upper", "t"), pa.Bound(2.38132, "lower", "t")
    g = pa.Guarantee(up, lo)
    assert f"{g:.2f}" == "2.39" and f"{up:.3f}" == "2.382" and f"{lo:.3f}" == "2.381"
    assert f"{lo:.2f}" == "2.38" and f"{up:>8.3g}" == "    2.39" and f"{up:.1%}" == "238.2%"
    exact = pa.Bound(2.38163, "exact", "t")
    assert f"{exact:.2f}" == "2.38" and f"{pa.Guarantee(exact, exact):.2f}" == "2.39"
    assert f"{pa.Bound(math.inf, 'upper', 't'):.2f}" == "inf"
    for x in (0.1, 1 / 3, 2.675, 1e-7 + 1e-20, 123456.7):
        assert float(f"{pa.Bound(x, 'upper', 't'):.2g}") >= x
        assert float(f"{pa.Bound(x, 'lower', 't'):.2e}") <= x


def test_a_guarantee_without_upper_bound_refuses_to_be_a_number():
    g = pa.Guarantee(None, LO)
    for use in (float, lambda x: f"{x:.2f}", lambda x: x < 3, np.asarray):
        with pytest.raises(ValueError, match="no upper bound .* no number safe to report"):
            use(g)


def test_a_bound_formats_compares_and_converts():
    assert f"{UP:.3f}" == "2.500" and UP < 3 and UP > LO and 2 * UP == 5.0
    arr = pa.Bound(np.array([0.5, 1.5]), "upper", "test")
    assert f"{arr:.1f}" == "[0.5, 1.5]" and list(arr) == [0.5, 1.5] and arr[1] == 1.5
    assert np.array_equal(np.asarray(arr), [0.5, 1.5]) and np.all(arr < 2)
    with pytest.raises(TypeError, match="holds an array"):
        float(arr)
    with pytest.raises(TypeError, match="holds one number"):
        list(UP)
    empty = pa.Bound(np.array([]), "upper", "t")
    assert bool(UP) and bool(pa.Bound(0.0, "exact", "t")) and bool(empty) and len(empty) == 0


def test_rdp_is_an_upper_bound_with_the_closed_form_at_rate_one():
    sigma, alphas = 1.3, np.array([1.5, 2.0, 8.0])
    b = pa.rdp(pa.Gaussian(sigma), pa.Poisson(1.0), alphas)
    assert isinstance(b, pa.Bound) and b.kind == "upper" and b.source
    # Poisson(1) is the Gaussian mechanism: RDP alpha / (2 sigma^2) (Mironov 2017, Prop 7)
    np.testing.assert_allclose(np.asarray(b), alphas / (2 * sigma**2), rtol=1e-9)
    scalar = pa.rdp(pa.Gaussian(sigma), pa.Poisson(1.0), 2.0)
    assert float(scalar) == pytest.approx(1 / sigma**2, rel=1e-9)


def test_profile_is_an_upper_bound_with_the_gaussian_closed_form_at_rate_one():
    sigma, eps = 0.9, np.array([0.0, 0.5, 2.0])
    b = pa.profile(pa.Gaussian(sigma), pa.Poisson(1.0), eps, pa.AddRemove())
    assert isinstance(b, pa.Bound) and b.kind == "upper"
    # Balle & Wang 2018, Thm 8: the Gaussian mechanism's exact privacy profile
    exact = norm.cdf(0.5 / sigma - eps * sigma) - np.exp(eps) * norm.cdf(-0.5 / sigma - eps * sigma)
    assert np.all(np.asarray(b) >= exact - 1e-12)
    np.testing.assert_allclose(np.asarray(b), exact, rtol=1e-6, atol=1e-12)
    assert not math.isnan(float(pa.profile(pa.Gaussian(sigma), pa.Poisson(1.0), 1.0,
                                           pa.AddRemove())))
