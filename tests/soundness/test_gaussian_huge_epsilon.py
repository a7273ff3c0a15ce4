"""The Gaussian profile at huge epsilon and shift (fuzz, session 8): the log-space form
eps + log Phi(-s/2 - eps/s) cancelled two numbers of size ~eps (absolute error ~40 at
eps = 3.5e17), so the participation bound of
``Training(Gaussian(0.3419), Deterministic(1, 100), steps=8277269313181728768)`` reported
epsilon 3.5408035335e17 at delta 9.29e-8, below the truth 3.5408035451e17 (mpmath
bisection at 80 digits) -- found because the deterministic accountant's exact (lower)
answer exceeded it.  Now e^eps phi(a - s) = phi(a) is used there."""

import math

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.pairs.mechanism_pairs import GaussianPair


def _mp_delta(s: float, eps: float) -> mp.mpf:
    mp.mp.dps = 60
    S, E = mp.mpf(s), mp.mpf(eps)
    a = S / 2 - E / S
    return mp.ncdf(a) - mp.e ** E * mp.ncdf(a - S)


@pytest.mark.parametrize("s, z", [(1e3, 0.0), (5e4, 2.0), (8.4e8, 5.0), (3e7, -3.0),
                                  (1e9, 1.0)])
def test_profile_at_huge_epsilon_matches_mpmath(s, z):
    eps = s * s / 2 + z * s  # the profile's interesting range: a = -z
    got = float(GaussianPair(s).delta(np.array([eps]))[0])
    want = _mp_delta(s, eps)
    assert abs(got - want) <= 1e-12 * want


def test_fuzz_case_is_no_longer_under_reported():
    steps = 8277269313181728768
    run = pa.Training(pa.Gaussian(0.341883099084092), pa.Deterministic(1, 100), steps=steps)
    g = run.epsilon(9.287812024109614e-08)
    truth = 354080354512561905.658  # mpmath, 80 digits (module docstring)
    assert float(g.upper.value) >= truth * (1 - 1e-15)
    assert float(g.lower.value) <= truth * (1 + 1e-15)
    m = -(-steps // 100)
    assert math.isclose(float(g.upper.value), truth, rel_tol=1e-9)
    assert m == 82772693131817288
