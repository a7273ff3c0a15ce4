"""MatrixMechanism: structure, column norms and sensitivities against dense linear algebra."""

import itertools

import numpy as np
import pytest

import privamp as pa


def test_toeplitz_matrix_entries():
    m = pa.MatrixMechanism.banded([2.0, -0.5, 0.25, 0.0], sigma=1.0)
    c = m.matrix(6)
    assert m.bands == 3  # the trailing zero band is dropped
    for i, j in itertools.product(range(6), repeat=2):
        want = {0: 2.0, 1: -0.5, 2: 0.25}.get(i - j, 0.0)
        assert c[i, j] == want


@pytest.mark.parametrize("coef", [[1.0], [1.0, 0.5, 0.25], [1.0, -0.7, 0.3, 0.1]])
def test_column_norms_and_sensitivity_match_dense(coef):
    steps = 7
    m = pa.MatrixMechanism.banded(coef, sigma=1.0, clip=1.5)
    c = m.matrix(steps)
    np.testing.assert_allclose(m.column_norms(steps), np.linalg.norm(c, axis=0), rtol=1e-14)
    dense = pa.MatrixMechanism(c, sigma=1.0, clip=1.5)
    for pi in [(0,), (3,), (0, 2), (1, 2, 6), tuple(range(steps))]:
        gram = c[:, pi].T @ c[:, pi]
        want = 1.5 * np.sqrt(np.abs(gram).sum())
        assert m.sensitivity(pi, steps) == pytest.approx(want, rel=1e-13)
        assert dense.sensitivity(pi, steps) == pytest.approx(want, rel=1e-13)


def test_sensitivity_is_attained_for_nonnegative_gram():
    # aligned gradients g_t = clip * u realise the bound when C^T C >= 0
    m = pa.MatrixMechanism.banded([1.0, 0.6, 0.2], sigma=1.0)
    c = m.matrix(5)
    pi = [0, 1, 3]
    realised = np.linalg.norm(c[:, pi].sum(axis=1))
    assert m.sensitivity(pi, 5) == pytest.approx(realised, rel=1e-13)


def test_identity_is_dp_sgd():
    m = pa.MatrixMechanism.identity(1.3)
    assert m.bands == 1
    np.testing.assert_array_equal(m.matrix(4), np.eye(4))
    assert m.sensitivity([0, 2, 3], 4) == pytest.approx(np.sqrt(3.0))


@pytest.mark.parametrize("strategy, match", [
    (np.triu(np.ones((3, 3))), "lower-triangular"),
    (np.ones((2, 3)), "square"),
    (np.diag([1.0, 0.0, 1.0]), "invertible"),
    ([0.0, 1.0], "diagonal"),
    ([1.0, np.nan], "finite"),
    ([], "non-empty"),
])
def test_bad_strategies_are_refused(strategy, match):
    with pytest.raises(ValueError, match=match):
        pa.MatrixMechanism(strategy, sigma=1.0)


def test_steps_checked_in_training():
    dense = pa.MatrixMechanism(np.eye(4), sigma=1.0)
    with pytest.raises(ValueError, match="dense strategy's size 4"):
        pa.Training(dense, pa.Poisson(0.1), steps=5)
    with pytest.raises(ValueError, match="sigma"):
        pa.MatrixMechanism.identity(0.0)
    with pytest.raises(ValueError, match="participations"):
        dense.sensitivity([0, 0], 4)


@pytest.mark.parametrize("coef", [[1.0], [1.0, 0.5, 0.25], [1.0, -0.9, 0.4]])
def test_operator_norm_bound(coef):
    m = pa.MatrixMechanism.banded(coef, sigma=1.0)
    for steps in (1, 8, 200):
        want = np.linalg.svd(m.matrix(steps), compute_uv=False)[0]  # independent: full SVD
        got = m.operator_norm_bound(steps)
        assert want <= got <= want * (1 + 1e-9)
    # beyond the dense size: the symbol bound, above every finite section, below sum |c_k|
    big = m.operator_norm_bound(6000)
    assert want <= big <= np.abs(coef).sum() * (1 + 1e-12)
    w = np.linspace(0, 2 * np.pi, 100001)
    symbol = np.abs(np.polyval(np.array(coef)[::-1], np.exp(1j * w))).max()
    assert symbol <= big <= symbol * (1 + 1e-3)


def test_sqrt_toeplitz_squares_to_prefix_sum():
    from math import comb

    m = pa.MatrixMechanism.sqrt_toeplitz(1.0, steps=12)
    c = m.matrix(12)
    np.testing.assert_allclose(c @ c, np.tril(np.ones((12, 12))), atol=1e-13)
    np.testing.assert_allclose(m.strategy, [comb(2 * k, k) / 4 ** k for k in range(12)],
                               rtol=1e-14)
    assert pa.MatrixMechanism.sqrt_toeplitz(1.0, bands=3).bands == 3
    with pytest.raises(ValueError, match="bands"):
        pa.MatrixMechanism.sqrt_toeplitz(1.0)


def test_aligned_norm_and_vectorised_gram_against_dense():
    rng = np.random.default_rng(0)
    coef = rng.normal(size=6)
    coef[0] = 1.0
    m = pa.MatrixMechanism.banded(coef, sigma=1.0, clip=0.7)
    T = 15
    c = m.matrix(T)
    for _ in range(20):
        pi = sorted(rng.choice(T, size=rng.integers(1, T), replace=False).tolist())
        cols = c[:, pi]
        assert m.sensitivity(pi, T) == pytest.approx(0.7 * np.sqrt(np.abs(cols.T @ cols).sum()),
                                                     rel=1e-12)
        assert m.aligned_norm(pi, T) == pytest.approx(0.7 * np.linalg.norm(cols.sum(axis=1)),
                                                      rel=1e-12)
