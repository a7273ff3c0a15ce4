"""Edge cases with answers known in closed form: no silent NaN, infinite where the truth is
infinite, zero where there is no privacy loss."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privamp as pa


def test_randomized_response_theta_one_poisson_rdp_is_infinite():
    # removal: (1-q) Bern(0) + q Bern(1) puts mass q where Bern(0) has none -> D_alpha = inf
    for relation in (pa.AddRemove(), pa.AddRemove(group=3)):
        got = pa.rdp(pa.RandomizedResponse(1.0), pa.Poisson(0.1), [2.0, 10.0], relation)
        assert np.isposinf(got).all()


def test_randomized_response_theta_one_run_epsilon_is_infinite():
    # the record is sampled (and revealed) with probability 1 - 0.9^10 = 0.65 > delta
    g = pa.Training(pa.RandomizedResponse(1.0), pa.Poisson(0.1), steps=10).epsilon(1e-5)
    assert math.isinf(float(g.upper.value))
    assert g.lower is None or math.isinf(float(g.lower.value))


def test_rate_zero_is_exactly_private():
    g = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.0), steps=10).epsilon(1e-5)
    assert g.exact and float(g) == 0.0


def test_huge_noise_tiny_rate_is_small_and_below_unsampled_gaussian():
    g = pa.Training(pa.Gaussian(100.0), pa.Poisson(1e-6), steps=10).epsilon(1e-5)
    # without subsampling: 10 releases = one Gaussian with sigma 100 / sqrt(10)
    unsampled = float(pa.Gaussian(100.0 / math.sqrt(10)).epsilon(1e-5).value)
    assert 0.0 <= float(g.lower.value) <= float(g.upper.value) <= unsampled


@pytest.mark.parametrize("theta", [0.6, 0.9])
def test_randomized_response_group_rdp_is_finite_and_monotone(theta):
    a = np.array([1.5, 2.0, 4.0, 16.0, 256.0])
    got = pa.rdp(pa.RandomizedResponse(theta), pa.Poisson(0.1), a, pa.AddRemove(group=3))
    assert np.isfinite(got).all() and (np.diff(got) >= -1e-12).all()
    # never above randomized response without subsampling (closed form, group irrelevant)
    assert (got <= pa.RandomizedResponse(theta).rdp(a).value + 1e-12).all()


def test_empty_order_or_delta_arrays_are_refused_with_the_parameter_name():
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=10)
    with pytest.raises(ValueError, match="delta must hold at least one value"):
        run.epsilon([])
    with pytest.raises(ValueError, match="alpha must hold at least one value"):
        pa.rdp(pa.Gaussian(1.0), pa.Poisson(0.01), [])


def test_messages_show_the_offending_values_not_an_array_repr():
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=10)
    with pytest.raises(ValueError) as info:
        run.epsilon(np.array([1.0]))
    assert "array(" not in str(info.value) and "got 1 (of 1 values)" in str(info.value)


def test_a_with_replacement_batch_may_exceed_the_dataset():
    s = pa.WithReplacement(3, 2)
    assert (s.batch_size, s.dataset_size) == (3, 2)
    with pytest.raises(ValueError, match="batch_size must be in"):
        pa.WithoutReplacement(3, 2)
