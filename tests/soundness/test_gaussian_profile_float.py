"""Float error of the closed-form Gaussian privacy profile
delta(eps) = Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s) (Balle & Wang 2018, Thm 8), against
mpmath with enough digits for the cancellation (60 + log10(1/s)).

Before the fix, the log-space float forms erred (relative) by up to 1e-5 (gauss_delta,
s = 1e-10), 1e-8 (gauss_delta, s = 1e-6) and 2e-8 (GaussianPair.delta, s = 3.01e-4, z ~ 37)
in both directions, while the upper/lower sides that use them had no (or a 1e-11) allowance.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import privamp as pa
from privamp.numerics.special import GAUSSIAN_PROFILE_RTOL, gaussian_profile
from privamp.pairs.mechanism_pairs import GaussianPair
from privamp.theorems.chua2024.deterministic import gauss_delta, gauss_epsilon, gauss_log_delta
from privamp.theorems.chua2024.mixture import mixture_delta

SHIFTS = [1e-300, 1e-8, 1e-6, 3e-4, 3.01e-4, 1e-2, 0.0299, 0.03, 0.1, 1.0, 10.0, 100.0, 1e4]


def _nc(x):
    return mpmath.mpf(1 if x > 0 else 0) if abs(x) > 1e100 else mpmath.ncdf(x)


def exact(eps: float, s: float) -> mpmath.mpf:
    with mpmath.workdps(60 + int(max(0.0, -math.log10(s))) + 5):
        ms, me = mpmath.mpf(s), mpmath.mpf(eps)
        a = ms / 2 - me / ms
        return +(_nc(a) - mpmath.exp(me) * _nc(a - ms))


def _epsilons(s: float) -> list[float]:
    # through the cancellation region (eps ~ s^2 / 2) into the tail (delta down to ~1e-300)
    zs = [-2.0, 0.0, 0.3, 1.0, 3.0, 8.0, 16.0, 25.0, 33.0, 37.0]
    out = [s * z + s * s / 2 for z in zs] + [-5.0, -0.5, 0.0, 0.5, 5.0]
    return [e for e in out if math.isfinite(e)]


def _rel(x: float, t) -> float:
    return float((mpmath.mpf(float(x)) - t) / t)


@pytest.mark.parametrize("s", SHIFTS)
def test_kernel_and_sides_against_mpmath(s):
    eps = _epsilons(s)
    near = gaussian_profile(np.array(eps), s)
    pair = GaussianPair(s).delta(np.array(eps))
    up = gauss_delta(np.array(eps), s, "upper")
    lo = gauss_delta(np.array(eps), s, "lower")
    for i, e in enumerate(eps):
        t = exact(e, s)
        if t < 1e-300:
            assert 0.0 <= near[i] <= 1e-300 and lo[i] <= float(t) + 1e-320
            continue
        assert abs(_rel(near[i], t)) <= GAUSSIAN_PROFILE_RTOL, (s, e)
        assert abs(_rel(pair[i], t)) <= GAUSSIAN_PROFILE_RTOL, (s, e)
        assert mpmath.mpf(float(up[i])) >= t, (s, e)
        assert mpmath.mpf(float(lo[i])) <= t, (s, e)


def test_reviewer_point():
    # GaussianShiftLower's point: the float form gave 3.5107320609e-289
    s, e = 3.01e-4, 0.010836
    t = exact(e, s)
    assert abs(_rel(GaussianPair(s).delta(np.array([e]))[0], t)) <= 1e-13
    assert mpmath.mpf(float(gauss_delta(np.array([e]), s, "lower")[0])) <= t


@pytest.mark.parametrize("s", [1e-6, 3e-4, 0.1, 3.0])
def test_epsilon_sides(s):
    deltas = np.array([1e-3, 1e-10, 1e-100])
    up = gauss_epsilon(deltas, s, "upper")
    lo = gauss_epsilon(deltas, s, "lower")
    for d, u, low in zip(deltas, up, lo, strict=True):
        assert exact(float(u), s) <= d  # the true epsilon is at most u
        assert low == 0.0 or exact(float(low), s) > d  # ... and above low
        assert low <= u


@pytest.mark.parametrize("sigma,epochs", [(1e6, 1), (3322.259, 1), (1e8, 4), (0.5, 3)])
def test_deterministic_training_exact(sigma, epochs):
    run = pa.Training(pa.Gaussian(sigma), pa.Deterministic(10, 10_000), epochs=epochs)
    s = math.sqrt(epochs) / sigma
    for z in (0.5, 5.0, 20.0, 36.0):
        e = s * z + s * s / 2
        g = run.delta(e)
        assert g.exact
        assert abs(_rel(g.upper.value, exact(e, s))) <= GAUSSIAN_PROFILE_RTOL
        p = pa.Training(pa.Gaussian(sigma), pa.Poisson(1.0), steps=epochs).delta(e)
        assert mpmath.mpf(float(p.upper.value)) >= exact(e, s)
        if p.lower is not None:
            assert mpmath.mpf(float(p.lower.value)) <= exact(e, s)


@pytest.mark.parametrize("s", [1e-10, 1e-6, 1e-4, 0.5])
def test_log_profile_and_count_mixture(s):
    # gauss_log_delta feeds the shuffle count-mixture upper bound (allowance 1e-10); its
    # float form erred by 3.8e-5 relative at s = 1e-10 before the fix
    counts = {1: 0.5, 2: 0.3, 3: 0.2}
    for z in (0.0, 1.0, 5.0, 20.0, 30.0):
        e = s * z + s * s / 2
        t = exact(e, s)
        assert abs(_rel(math.exp(gauss_log_delta(np.array([e]), s)[0]), t)) <= 1e-12
        mix = sum(mpmath.mpf(p) * exact(e, s * math.sqrt(k)) for k, p in counts.items())
        assert mpmath.mpf(float(mixture_delta(np.array([e]), s, counts)[0])) >= mix


def test_participation_upper_profile():
    # accountants.participation rounds GaussianPair.delta up by 1e-12: before the fix the
    # pair erred by -2e-8 relative here (s = 3.01e-4, z ~ 36.6; s = 1e-3, z ~ 36.5)
    from privamp.accountants.participation import gaussian_profile as part_profile
    for s, e in ((3.01e-4, 0.0110037), (1e-3, 0.0365575), (1e-2, 0.355999), (3.01e-4, 0.010836)):
        t = exact(e, s)
        assert mpmath.mpf(float(part_profile(np.array([e]), s)[0])) >= t
