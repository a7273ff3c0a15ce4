"""Amplified BandMF under a random partition: the sum statistic's realised lower side, against
the exact privacy loss of the whole realised pair (a mixture over the example's group and its
participations, enumerated) estimated by Monte Carlo with a Hoeffding interval; and the upper
side above the same estimate."""

import itertools
import math

import numpy as np
import pytest

import privamp as pa
from privamp.theorems.choquette2023 import partition_sum_lower


def _mc_delta(C, groups, q, sigma, eps, n, seed):
    """E_P[(1 - e^{eps - L})_+] for P: the example (gradient +1) in a uniformly random group,
    each of its steps with probability q; Q: N(0, sigma^2 I); L the exact log-likelihood ratio
    (every component enumerated).  Returns the estimate and a 99.99% Hoeffding half-width."""
    T = C.shape[0]
    means, logw = [], []
    for g in groups:
        for bits in itertools.product((0, 1), repeat=len(g)):
            x = np.zeros(T)
            x[[t for t, b in zip(g, bits, strict=True) if b]] = 1.0
            means.append(C @ x)
            k = sum(bits)
            logw.append(math.log(1.0 / len(groups)) + k * math.log(q)
                        + (len(g) - k) * math.log1p(-q))
    means, logw = np.array(means), np.array(logw)
    rng = np.random.default_rng(seed)
    comp = rng.choice(len(logw), size=n, p=np.exp(logw))
    y = means[comp] + sigma * rng.standard_normal((n, T))
    a = logw[None, :] + (y @ means.T) / sigma ** 2 - 0.5 * np.sum(means ** 2, 1) / sigma ** 2
    m = a.max(axis=1, keepdims=True)
    L = (m + np.log(np.exp(a - m).sum(axis=1, keepdims=True)))[:, 0]
    v = np.maximum(0.0, 1.0 - np.exp(eps - L))
    return float(v.mean()), math.sqrt(math.log(2 / 1e-4) / (2 * n))


@pytest.mark.parametrize("partition", ["equal-split", "independent"])
def test_sum_statistic_lower_inside_monte_carlo_of_the_mixture(partition):
    coef, sigma, q, T, k, eps = [1.0, 0.5], 1.0, 0.4, 9, 2, 0.5
    mech = pa.MatrixMechanism.banded(coef, sigma=sigma)
    run = pa.Training(mech, pa.CyclicPoisson(q, k, partition), steps=T,
                      relation=pa.ZeroOut())
    g = run.delta(eps)
    assert g.lower is not None and g.upper is not None
    groups = [list(range(j, T, k)) for j in range(k)]
    est, half = _mc_delta(mech.matrix(T), groups, q, sigma, eps, 200_000, seed=3)
    assert float(g.lower) <= est + half
    assert est - half <= float(g.upper)
    assert float(g.lower) > 0.3 * est  # the statistic is not a trivial witness here


def test_spec_counts_and_shift():
    # Toeplitz, T = 10, k = 3: the statistic uses the first 9 steps, 3 per group
    mech = pa.MatrixMechanism.banded([1.0, 0.4], sigma=2.0)
    run = pa.Training(mech, pa.CyclicPoisson(0.1, 3, "independent"), steps=10,
                      relation=pa.AddRemove(group=2))
    K, R, q, s = partition_sum_lower(run)
    assert (K, R, q) == (2, 3, 0.1)
    # independent: w = C^-T 1 on 9 steps, the per-count shift (C^T w = 1) is 1 / (sigma ||w||)
    C = mech.matrix(9)
    w = np.linalg.solve(C.T, np.ones(9))
    assert s / math.sqrt(R) == pytest.approx(1.0 / (2.0 * np.linalg.norm(w)), rel=1e-9)
    assert s / math.sqrt(R) <= 1.0 / (2.0 * np.linalg.norm(w))


def test_no_spec_when_examples_sit_out_or_truncated():
    mech = pa.MatrixMechanism.banded([1.0, 0.4], sigma=2.0)
    sit_out = pa.CyclicPoisson(0.1, 3, "equal-split", dataset_size=10)  # 10 mod 3 = 1
    assert partition_sum_lower(pa.Training(mech, sit_out, steps=9)) is None
    even = pa.CyclicPoisson(0.1, 3, "equal-split", dataset_size=12)
    assert partition_sum_lower(pa.Training(mech, even, steps=9)) is not None
    trunc = pa.CyclicPoisson(0.1, 3, "equal-split", truncated_batch_size=2, dataset_size=12)
    assert partition_sum_lower(pa.Training(mech, trunc, steps=9)) is None
    assert partition_sum_lower(pa.Training(mech, pa.CyclicPoisson(0.1, 3), steps=2)) is None
