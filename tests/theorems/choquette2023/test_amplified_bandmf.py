"""Amplified BandMF under cyclic Poisson (Choquette-Choo et al. 2023) and the unamplified
matrix mechanism: independent references (privamp's Poisson DP-SGD run for C = I, brute-force
enumeration of participation patterns, dense linear algebra, closed-form Gaussians,
dp-accounting through jax_privacy's own event)."""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import norm

import privamp as pa
from privamp.theorems.choquette2023 import amplified_runs

DELTA = 1e-5


def _gauss_delta(eps, s):
    return norm.cdf(s / 2 - eps / s) - math.exp(eps) * norm.cdf(-s / 2 - eps / s)


@pytest.mark.parametrize("partition", ["fixed", "equal-split", "independent"])
def test_identity_one_group_is_poisson_exactly(partition):
    sigma, rate, T = 1.1, 0.05, 40
    run = pa.Training(pa.MatrixMechanism.identity(sigma), pa.CyclicPoisson(rate, 1, partition),
                      steps=T)
    ref = pa.Training(pa.Gaussian(sigma), pa.Poisson(rate), steps=T,
                      relation=run.relation).epsilon(DELTA)
    got = run.epsilon(DELTA, accountant="amplified-bandmf")
    assert float(got.upper) == float(ref.upper)
    assert float(got.lower) == float(ref.lower)


def _brute_force_max_participations(T, k, b):
    """Enumerate every 0/1 participation pattern of T steps allowed by cyclic sampling with k
    groups (steps of one residue class) and count the most steps of a pattern whose columns of
    a b-banded C have pairwise disjoint row supports."""
    best = 0
    for j in range(k):
        for bits in itertools.product([0, 1], repeat=T):
            steps = [t for t in range(T) if bits[t]]
            if any(t % k != j for t in steps):
                continue
            rows = [set(range(t, min(t + b, T))) for t in steps]
            assert all(not (r & s) for r, s in itertools.combinations(rows, 2))
            best = max(best, len(steps))
    return best


@pytest.mark.parametrize("T, k", [(7, 3), (8, 4), (5, 5), (6, 2)])
def test_rounds_against_brute_force(T, k):
    m = pa.MatrixMechanism.banded([1.0, 0.4][: min(k, 2)], sigma=2.0)
    up, lo, _ = amplified_runs(pa.Training(m, pa.CyclicPoisson(0.1, k, "fixed"), steps=T))
    assert up.steps == _brute_force_max_participations(T, k, m.bands)
    assert lo is not None and lo.steps == up.steps


def test_shift_is_max_column_norm_and_exact_when_aligned():
    coef = np.array([1.0, 0.6, 0.3])
    m = pa.MatrixMechanism.banded(coef, sigma=3.0, clip=2.0)
    run = pa.Training(m, pa.CyclicPoisson(0.2, 3, "fixed"), steps=30)  # T a multiple of k
    up, lo, _ = amplified_runs(run)
    assert up.mechanism.shift() == pytest.approx(np.linalg.norm(coef) / 3.0, rel=1e-14)
    assert lo is up  # every column of group 0 is whole: exact


def test_random_partition_lower_is_the_sum_statistic_and_below_the_fixed_upper():
    # under a random partition the only lower side is the sum statistic (a realised pair
    # whatever the groups); the public-partition run's upper bound dominates the mixture
    m = pa.MatrixMechanism.banded([1.0, 0.5], sigma=1.0)
    fixed = pa.Training(m, pa.CyclicPoisson(0.2, 2, "fixed"), steps=20).epsilon(DELTA)
    for part in ("equal-split", "independent"):
        g = pa.Training(m, pa.CyclicPoisson(0.2, 2, part), steps=20).epsilon(DELTA)
        assert g.upper is not None and g.lower is not None
        assert "any partition" in g.lower.source
        assert float(g.lower) <= float(fixed.upper)


def test_equal_split_refuses_add_remove():
    m = pa.MatrixMechanism.banded([1.0, 0.5], sigma=1.0)
    with pytest.raises(pa.NotApplicable):
        pa.Training(m, pa.CyclicPoisson(0.2, 2), steps=20, relation=pa.AddRemove()).epsilon(
            DELTA)


def test_truncation_refused_with_reason():
    m = pa.MatrixMechanism.banded([1.0, 0.5], sigma=1.0)
    run = pa.Training(m, pa.CyclicPoisson(0.2, 2, truncated_batch_size=5), steps=20)
    with pytest.raises(pa.NotApplicable, match="truncated"):
        run.epsilon(DELTA, accountant="amplified-bandmf")


def test_noise_dominance_when_cycle_shorter_than_bands():
    m = pa.MatrixMechanism.banded([1.0, 0.5, 0.25], sigma=2.0)
    T, k, rate = 12, 2, 0.1
    up, lo, source = amplified_runs(pa.Training(m, pa.CyclicPoisson(rate, k, "fixed"), steps=T))
    assert lo is None and "noise dominance" in source
    two_norm = np.linalg.svd(m.matrix(T), compute_uv=False)[0]  # independent: full SVD
    assert up.mechanism.shift() == pytest.approx(two_norm / 2.0, rel=1e-9)
    assert up.mechanism.shift() >= two_norm / 2.0
    assert up.steps == 6


def test_peer_dp_accounting_through_jax_privacy_event():
    acc_mod = pytest.importorskip("jax_privacy.experimental.accounting")
    dpa = pytest.importorskip("dp_accounting")
    nm, T, bands, p = 1.0, 100, 4, 0.2
    event = acc_mod.amplified_bandmf_event(noise_multiplier=nm, iterations=T, num_bands=bands,
                                           sampling_prob=p)
    acc = dpa.pld.PLDAccountant(dpa.NeighboringRelation.ADD_OR_REMOVE_ONE)
    acc.compose(event)
    peer = acc.get_epsilon(DELTA)
    coef = np.array([1.0, 0.5, 0.3, 0.2])
    # jax_privacy's noise multiplier is for the column-normalised strategy
    m = pa.MatrixMechanism.banded(coef, sigma=nm * np.linalg.norm(coef))
    g = pa.Training(m, pa.CyclicPoisson(p, bands, "fixed"), steps=T).epsilon(DELTA)
    assert float(g.lower) <= peer <= float(g.upper) * (1 + 1e-9)
    assert float(g.upper) <= peer * (1 + 1e-4)


# -- unamplified --------------------------------------------------------------------------
def test_deterministic_batches_gaussian_at_pattern_sensitivity():
    coef = [1.0, 0.7, 0.2]
    m = pa.MatrixMechanism.banded(coef, sigma=2.0)
    T, b, n = 11, 10, 30  # E = 3 steps per epoch = bands: orthogonal columns
    c = m.matrix(T)
    E = 3
    sens = max(math.sqrt(np.abs(c[:, list(range(t, T, E))].T @ c[:, list(range(t, T, E))]).sum())
               for t in range(E))
    s = sens / 2.0
    g = pa.Training(m, pa.Deterministic(b, n), steps=T).delta(1.0)
    # two-sided to the float error of the Gram sums (upper rounded up, lower down)
    assert float(g.lower) <= _gauss_delta(1.0, s) <= float(g.upper)
    assert float(g.upper) == pytest.approx(_gauss_delta(1.0, s), rel=1e-9)
    assert float(g.lower) == pytest.approx(_gauss_delta(1.0, s), rel=1e-9)


def test_deterministic_overlapping_columns_negative_gram_is_upper_only():
    m = pa.MatrixMechanism.banded([1.0, 0.5, -0.4], sigma=1.5)
    T, E = 9, 2  # 2 < 3 bands: the columns of a pattern overlap, the Gram has a negative entry
    c = m.matrix(T)
    sens = []
    for t in range(E):
        cols = c[:, list(range(t, T, E))]
        sens.append((np.sqrt(np.abs(cols.T @ cols).sum()), np.linalg.norm(cols.sum(axis=1)),
                     np.linalg.norm(cols)))
    worst = max(range(E), key=lambda i: sens[i][0])
    g = pa.Training(m, pa.Deterministic(5, 10), steps=T).delta(0.5)
    assert float(g.upper) == pytest.approx(_gauss_delta(0.5, sens[worst][0] / 1.5), rel=1e-9)
    lo_shift = max(sens[worst][1], sens[worst][2]) / 1.5
    assert g.lower is not None and g.lower.kind == "lower"
    assert float(g.lower) == pytest.approx(_gauss_delta(0.5, lo_shift), rel=1e-9)


def test_min_sep_full_participation_sums_squared_column_norms():
    # rate 1: every step of the group; k = 3 >= bands: orthogonal columns
    coef = np.array([1.0, 0.5, 0.25])
    m = pa.MatrixMechanism.banded(coef, sigma=1.0)
    T = 10
    norms = np.linalg.norm(m.matrix(T), axis=0)
    want = max(math.sqrt(np.sum(norms[j::3] ** 2)) for j in range(3))
    g = pa.Training(m, pa.CyclicPoisson(1.0, 3, "fixed"), steps=T).delta(1.0,
                                                                        accountant="matrix-gaussian")
    assert float(g.upper) == pytest.approx(_gauss_delta(1.0, want), rel=1e-9)
    assert float(g.lower) <= _gauss_delta(1.0, want) <= float(g.upper)
