"""numerics.logspace.logsumexp against mpmath at 50 digits (the accurate excess of a sum
dominated by one term, every axis, -inf / +inf / NaN entries)."""

import mpmath
import numpy as np
import pytest

from privamp.numerics.logspace import logsumexp


def _exact(row) -> float:
    with mpmath.workdps(50):
        terms = [mpmath.exp(mpmath.mpf(float(v))) for v in row if np.isfinite(v)]
        return float(mpmath.log(mpmath.fsum(terms))) if terms else -np.inf


@pytest.mark.parametrize("seed", range(5))
def test_matches_mpmath_on_every_axis(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, 4, 5)) * 40.0
    x[x < -50.0] = -np.inf
    for axis in (0, 1, 2, -1):
        got = logsumexp(x, axis=axis)
        moved = np.moveaxis(x, axis, -1)
        want = np.array([_exact(r) for r in moved.reshape(-1, moved.shape[-1])])
        np.testing.assert_allclose(got.reshape(-1), want, rtol=4e-15, atol=0)
    assert logsumexp(x) == pytest.approx(_exact(x.reshape(-1)), rel=4e-15)


def test_a_dominant_term_keeps_its_tiny_excess():
    # log(1 + e^-40) = 4.248e-18: a plain log(sum) rounds it to 0 (an under-report where
    # the value is a privacy loss)
    for x in ([0.0, -40.0], [[0.0, -40.0]]):
        got = np.ravel(logsumexp(np.asarray(x), axis=-1))[0]
        assert got == pytest.approx(_exact([0.0, -40.0]), rel=1e-14)
        assert got > 0.0


def test_infinite_and_nan_entries():
    assert logsumexp([-np.inf, -np.inf]) == -np.inf
    np.testing.assert_array_equal(logsumexp(np.full((2, 3), -np.inf), axis=1), [-np.inf] * 2)
    assert logsumexp([np.inf, 1.0]) == np.inf
    assert np.isnan(logsumexp([np.nan, 1.0]))
    assert logsumexp(np.array([])) == -np.inf
