"""Shuffle over several epochs: the per-epoch statistic (max, count above a threshold) of the
Chua et al. 2024 pair (P_S, Q_S), composed by the two-sided PLD.

References: the closed-form law of the count K (a binomial mixture), and a Monte Carlo
estimate with a confidence interval of the exact composed divergence of (P_S, Q_S) (the
certified lower bound must not exceed it)."""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

import privamp as pa
from privamp.theorems import chua2024 as B
from privamp.theorems.chua2024 import statistics as ST
from privamp.theorems.chua2024 import witness as W


def test_count_marginal_matches_the_binomial_mixture():
    s, T, kmax = 1.0 / 0.9, 30, 6
    c = float(-special.ndtri(2.5 / (T - 1)))
    for mu in (2 * s, s):
        below, table, cell = ST._maxcount_masses(s, T, c, mu, kmax=kmax)
        m = np.concatenate([below, table.ravel()])
        assert abs(m.sum() - 1.0) < 1e-12
        np.testing.assert_allclose(table.sum(axis=1), cell, rtol=1e-12, atol=1e-300)
        # cells below c hold K = 0; above c each cell holds K = 1..kmax-1 and the rest
        lo = float(special.ndtri(math.exp(-34.5 / T)))
        hi = max(2 * s + 9.5, float(-special.ndtri(1e-19 / T)))
        edges = np.unique(np.concatenate([np.linspace(lo, hi, 401), [c]]))
        n_below = int(np.sum(edges <= c))  # cells (-inf, e0), ..., [., c)
        assert len(below) == n_below
        per_k = table.sum(axis=0)
        p = stats.norm.sf(c)
        g = stats.norm.sf(c - mu)
        for k in range(1, kmax):  # P(K = k): the special coordinate below or above c
            ref = (1 - g) * stats.binom.pmf(k, T - 1, p) + g * stats.binom.pmf(k - 1, T - 1, p)
            assert abs(per_k[k - 1] - ref) <= 1e-12 + 1e-9 * ref
        ref0 = (1 - g) * stats.binom.pmf(0, T - 1, p)
        assert abs(m[:n_below].sum() - ref0) <= 1e-12


def _mc_exact_delta(s: float, T: int, E: int, eps: float, n: int, seed: int):
    """Monte Carlo of H_{e^eps}(P_S^E || Q_S^E) = E_P[(1 - e^{eps - L})_+] (mean, std err)."""
    rng = np.random.default_rng(seed)
    L = np.zeros(n)
    for _ in range(E):
        w = rng.standard_normal((n, T))
        w[:, 0] += 2 * s  # under P_S the record is (by symmetry) in batch 0
        L += (special.logsumexp(2 * s * w - 2 * s * s, axis=1)
              - special.logsumexp(s * w - s * s / 2, axis=1))
    v = np.maximum(-np.expm1(np.minimum(eps - L, 0.0)), 0.0)
    return v.mean(), v.std() / math.sqrt(n)


def test_multi_epoch_lower_bound_below_monte_carlo_of_the_exact_pair():
    sigma, T, E = 0.8, 8, 4
    s = 1.0 / sigma
    for eps in (1.0, 2.5):
        lower = float(B.shuffle_delta_lower(eps, sigma, T, epochs=E).value)
        mc, se = _mc_exact_delta(s, T, E, eps, 400_000, seed=eps.__hash__() % 1000)
        assert lower <= mc + 5 * se
        # the (max, count) statistic refines the max statistic
        pld = ST.maxstat_composed(W.uniform_witness(s, T), E)
        maxonly = float(pld.delta(np.array([eps]))[1][0])
        assert lower >= maxonly
        assert lower >= 0.8 * mc  # and is not vacuous


def test_canonical_run_interval_is_ordered():
    g = pa.Training(pa.Gaussian(1.1), pa.Shuffle(250, 60000), epochs=60,
                    relation=pa.ZeroOut()).epsilon(1e-5)
    s = 1 / 1.1
    pld = ST.maxstat_composed(W.uniform_witness(s, 240), 60)
    maxonly = float(pld.epsilon(np.array([1e-5]))[1][0])
    assert maxonly < g.lower.value < g.upper.value
