"""Groups of K examples for the matrix accountants: the chain factor against mpmath, the
unamplified matrix Gaussian against closed-form Gaussians at K times the pattern's shift
(dense linear algebra), amplified BandMF's group bounds bracketing the exact Gaussian of a
full-participation run, and the chain bound against Poisson group witnesses."""

import math

import mpmath
import numpy as np
import pytest
from scipy import integrate
from scipy.stats import norm

import privamp as pa
from privamp.theorems.matrix_groups import chain_factor

DELTA = 1e-5


def _gauss_delta(eps, s):
    return norm.cdf(s / 2 - eps / s) - math.exp(eps) * norm.cdf(-s / 2 - eps / s)


@pytest.mark.parametrize("k, eps", [(1, 0.3), (2, 0.0), (3, 1.7), (8, 12.0), (5, 1e-9)])
def test_chain_factor_against_mpmath(k, eps):
    mpmath.mp.dps = 40
    ref = mpmath.fsum(mpmath.e ** (i * mpmath.mpf(eps)) for i in range(k))
    got = float(chain_factor(k, np.array([eps]))[0])
    assert got >= float(ref) * (1 - 1e-15)
    assert got == pytest.approx(float(ref), rel=1e-11)


def test_chain_factor_rejects_k0():
    with pytest.raises(ValueError, match="k"):
        chain_factor(0, np.array([1.0]))


def _pattern_shift(C, pattern, sigma):
    # aligned gradients: ||sum_{t in pattern} C e_t|| / sigma (C^T C >= 0 here)
    return float(np.linalg.norm(C[:, pattern].sum(axis=1))) / sigma


@pytest.mark.parametrize("K", [2, 3])
def test_deterministic_group_is_k_times_the_pattern_shift(K):
    coef, sigma, T = [1.0, 0.6, 0.3], 4.0, 12
    mech = pa.MatrixMechanism.banded(coef, sigma=sigma)
    run = pa.Training(mech, pa.Deterministic(5, 20), steps=T, relation=pa.ZeroOut(group=K))
    C = mech.matrix(T)
    E = 4  # 20 / 5 batches per epoch
    s = max(_pattern_shift(C, list(range(t, T, E)), sigma) for t in range(E))
    g = run.delta(1.0, accountant="matrix-gaussian")
    ref = _gauss_delta(1.0, K * s)
    assert float(g.lower) <= ref <= float(g.upper)
    assert float(g.upper) == pytest.approx(ref, rel=1e-8)


def test_deterministic_group_larger_than_a_batch_lower_at_batch_size():
    coef, sigma, T = [1.0, 0.6], 4.0, 8
    mech = pa.MatrixMechanism.banded(coef, sigma=sigma)
    run = pa.Training(mech, pa.Deterministic(2, 8), steps=T, relation=pa.ZeroOut(group=3))
    C = mech.matrix(T)
    s = max(_pattern_shift(C, list(range(t, T, 4)), sigma) for t in range(4))
    g = run.delta(1.0, accountant="matrix-gaussian")
    # upper: 3 s (triangle inequality); lower: only 2 members fit one batch position
    assert float(g.upper) == pytest.approx(_gauss_delta(1.0, 3 * s), rel=1e-8)
    assert float(g.lower) == pytest.approx(_gauss_delta(1.0, 2 * s), rel=1e-8)


def test_full_participation_group_brackets_the_exact_gaussian():
    # rate 1, public partition: K members in group 0 are the Gaussian at K times group 0's
    # sensitivity (exact); the run's upper side must be above it
    coef, sigma, T, k, K = [1.0, 0.5], 6.0, 8, 2, 2
    mech = pa.MatrixMechanism.banded(coef, sigma=sigma)
    run = pa.Training(mech, pa.CyclicPoisson(1.0, k, "fixed"), steps=T,
                      relation=pa.AddRemove(group=K))
    C = mech.matrix(T)
    s = _pattern_shift(C, list(range(0, T, k)), sigma)
    ref = _gauss_delta(0.5, K * s)
    for acc in ("matrix-gaussian", "amplified-bandmf"):
        g = run.delta(0.5, accountant=acc)
        assert float(g.upper) >= ref * (1 - 1e-9)
        if g.lower is not None:
            assert float(g.lower) <= ref * (1 + 1e-9)


def test_amplified_group_interval_and_chain_at_moderate_epsilon():
    mech = pa.MatrixMechanism.sqrt_toeplitz(4.0, bands=4)
    one = pa.Training(mech, pa.CyclicPoisson(0.2, 4, "fixed"), steps=100).epsilon(DELTA)
    two = pa.Training(mech, pa.CyclicPoisson(0.2, 4, "fixed"), steps=100,
                      relation=pa.AddRemove(group=2)).epsilon(DELTA)
    assert float(two.lower) <= float(two.upper)
    # the realised pair of two members is at least one member's
    assert float(two.lower) >= float(one.lower)
    assert "chain" in two.upper.source
    assert float(two.upper) < 3 * float(one.upper)  # the chain, not noise dominance (~13)


def test_amplified_group_lower_is_the_poisson_group_witness():
    # K members in group 0 with aligned gradients, C = I: the Poisson group witness over the
    # group's rounds (Schuchardt et al. 2024's binomial-shift mixture), computed by hand
    sigma, q, T, k, K, eps = 1.5, 0.3, 4, 2, 2, 1.0
    run = pa.Training(pa.MatrixMechanism.identity(sigma), pa.CyclicPoisson(q, k, "fixed"),
                      steps=T, relation=pa.AddRemove(group=K))
    g = run.delta(eps, accountant="amplified-bandmf")
    # two rounds of sum_j Bin(2, q)_j N(j / sigma, 1) vs N(0, 1): the sum over the rounds is
    # sum_n Bin(4, q)_n N(n / sigma, 2) under P; integrate the exact loss with mpmath
    w = [math.comb(4, n) * q ** n * (1 - q) ** (4 - n) for n in range(5)]
    sd = math.sqrt(2.0)

    def gap(x):
        p = sum(w[n] * norm.pdf(x, n / sigma, sd) for n in range(5))
        return max(p - math.exp(eps) * norm.pdf(x, 0.0, sd), 0.0)

    # the sum is a post-processing of the pair: its hockey-stick is a lower bound on the
    # witness's; the witness's own (product) profile must be at least as large
    hs = integrate.quad(gap, -20, 30, points=[0, 2, 5], limit=200, epsabs=1e-13)[0]
    assert float(g.lower) >= float(hs) * (1 - 1e-6)
    assert float(g.lower) <= float(g.upper)
