"""Matrix mechanisms under balls-in-bins / random allocation (theorems/matrix_bins.py):
C = I against privamp's DP-SGD answers, the Gaussian statistic against mpmath's closed-form
profile, the linear-algebra floors against mpmath, lower <= upper on a grid."""

import itertools
from math import comb

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.theorems.matrix_bins import operator_norm, singular_floor, statistic_shift
from privamp.theorems.registry import ACCOUNTANTS

SQRT4 = [comb(2 * k, k) / 4 ** k for k in range(4)]  # the 4-band sqrt-Toeplitz strategy


def mp_gauss_delta(eps, mu):
    """Closed-form Gaussian profile Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)."""
    eps, mu = mp.mpf(eps), mp.mpf(mu)
    return mp.ncdf(mu / 2 - eps / mu) - mp.exp(eps) * mp.ncdf(-mu / 2 - eps / mu)


@pytest.mark.parametrize("scheme, steps", [
    (pa.PersistentBallsInBins(4), 8),
    (pa.BallsInBins(4), 8),
    (pa.BalancedIteration(4, 2), 8),
])
def test_identity_is_dp_sgd(scheme, steps):
    sig = 2.0
    eps = np.array([0.5, 1.0])
    mat = pa.Training(pa.MatrixMechanism.identity(sig), scheme, steps=steps).delta(eps)
    sgd = pa.Training(pa.Gaussian(sig), scheme, steps=steps).delta(eps)
    np.testing.assert_array_equal(mat.upper.value, sgd.upper.value)
    if sgd.lower is None:
        assert mat.lower is None
    else:
        np.testing.assert_array_equal(mat.lower.value, sgd.lower.value)


def test_dense_identity_keeps_dp_sgd_upper():
    sig, steps, scheme = 2.0, 8, pa.BallsInBins(4)
    mat = pa.Training(pa.MatrixMechanism(np.eye(steps), sig), scheme, steps=steps).delta(1.0)
    sgd = pa.Training(pa.Gaussian(sig), scheme, steps=steps).delta(1.0)
    assert float(mat.upper) == float(sgd.upper)
    assert float(sgd.lower) <= float(mat.lower) <= float(mat.upper)


@pytest.mark.parametrize("coef", [SQRT4, [1.0, 0.6, 0.2]])
def test_one_bin_is_the_exact_gaussian(coef):
    # one persistent bin: every example in every step, a deterministic run whose exact
    # privacy is the Gaussian at |C 1| / sigma (C^T C >= 0 here): both sides pinned to mpmath
    steps, sig = 5, 3.0
    c = mp.matrix(steps, steps)
    for i in range(steps):
        for j in range(i + 1):
            c[i, j] = coef[i - j] if i - j < len(coef) else 0
    mu = mp.norm(c * mp.matrix([1] * steps)) / sig
    run = pa.Training(pa.MatrixMechanism.banded(coef, sig), pa.PersistentBallsInBins(1),
                      steps=steps)
    for eps in (0.2, 1.0, 3.0):
        want = mp_gauss_delta(eps, mu)
        g = run.delta(eps)
        assert float(g.lower) <= want <= float(g.upper)
        assert float(g.lower) == pytest.approx(float(want), rel=1e-8)
        assert float(g.upper) == pytest.approx(float(want), rel=1e-8)


def test_statistic_shift_against_mpmath():
    # fresh bins, one epoch of B = T steps: w = C^{-T} 1 gives every step the total 1, the
    # shift is 1 / (sigma |C^{-T} 1|)
    steps, sig = 6, 1.5
    mech = pa.MatrixMechanism.banded(SQRT4, sig)
    c = mp.matrix(mech.matrix(steps).tolist())
    w = mp.lu_solve(c.T, mp.matrix([1] * steps))
    want = 1 / (sig * mp.norm(w))
    got = statistic_shift(mech, steps, np.array([float(x) for x in w]), np.min)
    assert float(want) * (1 - 1e-12) <= got <= float(want)


@pytest.mark.parametrize("coef", [SQRT4, [1.0, -0.9, 0.4], [2.0, 0.5]])
def test_norm_and_floor_bracket_mpmath_singular_values(coef):
    mech = pa.MatrixMechanism.banded(coef, 1.0)
    for steps in (1, 4, 9):
        sv = mp.svd_r(mp.matrix(mech.matrix(steps).tolist()), compute_uv=False)
        top, low = max(sv), min(sv)
        assert low * (1 - 1e-6) <= singular_floor(mech, steps) <= low
        assert top <= operator_norm(mech, steps) <= top * (1 + 1e-9)


def test_toeplitz_floor_beyond_dense_svd():
    # T = 3000: the inverse-series bound only; below the T = 400 section's sigma_min (C_T^-1
    # is the leading block of C_{T+1}^-1, so sigma_min(C_T) decreases with T), and not
    # vacuous: min |c| = |c(-1)| = 0.5625 on the circle is the limit (c has no zero inside)
    mech = pa.MatrixMechanism.banded(SQRT4, 1.0)
    a = singular_floor(mech, 3000)
    small = np.linalg.svd(mech.matrix(400), compute_uv=False)[-1]
    assert 0.5625 * (1 - 1e-4) < a <= small


def test_diagonal_norms_are_exact():
    mech = pa.MatrixMechanism(np.diag([1.0, -3.0, 2.0]), 1.0)
    assert operator_norm(mech, 3) == 3.0
    assert singular_floor(mech, 3) == 1.0


def test_applies_only_to_matrix_runs_with_bins():
    acc = [a for a in ACCOUNTANTS["matrix-bins"]][0]
    mech = pa.MatrixMechanism.banded(SQRT4, 1.0)
    assert acc.applies(pa.Training(mech, pa.BallsInBins(4), steps=8))
    assert not acc.applies(pa.Training(mech, pa.Poisson(0.1), steps=8))
    assert not acc.applies(pa.Training(pa.Gaussian(1.0), pa.BallsInBins(4), steps=8))


@pytest.mark.parametrize("coef", [SQRT4, [1.0, -0.8, 0.5]])
def test_fresh_bins_unamplified_is_the_worst_pattern(coef):
    # exhaustive: every one-step-per-epoch pattern (3 epochs of 4 and a partial one of 2)
    sig, B, steps = 2.0, 4, 14
    mech = pa.MatrixMechanism.banded(coef, sig)
    c = mech.matrix(steps)
    gram = np.abs(c.T @ c)
    epochs = [range(e * B, min((e + 1) * B, steps)) for e in range(-(-steps // B))]
    epochs[-1] = [None, *epochs[-1]]
    worst = max(gram[np.ix_(p, p)].sum() for pat in itertools.product(*epochs)
                for p in [[s for s in pat if s is not None]])
    run = pa.Training(mech, pa.BallsInBins(B), steps=steps)
    an = run.analysis("matrix-bins")[0][1]
    assert np.sqrt(worst) / sig <= an.unamplified <= np.sqrt(worst) / sig * (1 + 1e-12)
