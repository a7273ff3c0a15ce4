"""Exact composition of Poisson-subsampled randomized response (theorems/binary_exact.py).

Reference: the binomial sufficient statistic in mpmath at 30 digits
(tests/soundness/exact_refs.py, no privamp import); dp-accounting has no subsampled RR."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import privamp as pa
from privamp.theorems.binary_exact import BinaryExactAnalysis

sys.path.insert(0, str(Path(__file__).parents[2] / "soundness"))
import exact_refs as R  # noqa: E402


@pytest.mark.parametrize("theta,q,T", [(0.9, 1e-3, 1000), (0.75, 0.1, 300), (0.6, 0.5, 20),
                                       (0.99, 0.05, 30)])
def test_delta_brackets_mpmath(theta, q, T):
    an = BinaryExactAnalysis(pa.RandomizedResponse(theta), q, T)
    for eps in (0.0, 0.1, 0.5, 1.0):
        up, lo = an.delta(eps)
        ref = float(R.rr_poisson_delta(eps, theta, q, T, dps=30))
        assert float(lo.value) <= ref <= float(up.value)
        assert float(up.value) - float(lo.value) <= 1e-9 * ref + 1e-300


@pytest.mark.parametrize("theta,q,T,delta", [(0.9, 1e-3, 1000, 1e-5), (0.75, 0.1, 300, 1e-5),
                                             (0.6, 0.5, 20, 1e-3)])
def test_epsilon_certified_by_mpmath(theta, q, T, delta):
    g = pa.Training(pa.RandomizedResponse(theta), pa.Poisson(q), steps=T).epsilon(delta)
    up, lo = float(g.upper.value), float(g.lower.value)
    assert float(R.rr_poisson_delta(up, theta, q, T, dps=30)) <= delta
    if lo > 0:
        assert float(R.rr_poisson_delta(lo, theta, q, T, dps=30)) > delta
    assert up - lo <= 1e-8 * up


def test_theta_one_is_infinite_and_certified():
    an = BinaryExactAnalysis(pa.RandomizedResponse(1.0), 0.1, 10)
    up, lo = an.epsilon(np.array([1e-5]))
    assert math.isinf(up.value[0]) and math.isinf(lo.value[0])
    d_up, d_lo = an.delta(3.0)  # mass at +inf: 1 - 0.9^10
    assert float(d_lo.value) <= 1 - 0.9**10 <= float(d_up.value)


def test_renyi_floor_below_exact_rdp():
    """Below T x the closed-form Rényi divergence (pa.rdp's exact Poisson method)."""
    m, q, T = pa.RandomizedResponse(0.8), 0.1, 50
    a = np.array([2.0, 3.0, 8.0])
    an = BinaryExactAnalysis(m, q, T)
    exact = T * np.asarray(pa.rdp(m, pa.Poisson(q), a, method="poisson-exact"), dtype=float)
    fl = an.renyi_floor(a)
    assert np.all(fl <= exact * (1 + 1e-12)) and np.all(fl >= 0.99 * exact)
