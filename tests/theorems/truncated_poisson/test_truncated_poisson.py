"""Truncated Poisson accountant: exact enumeration of the truncated sampler on tiny datasets,
dp-accounting's TruncatedSubsampledGaussianDpEvent and Poisson PLDs as references."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import norm

import privamp as pa
from privamp.errors import NotApplicable
from privamp.integrations.dp_accounting import from_dp_event
from privamp.sampling.schemes import TruncatedPoisson
from privamp.theorems.truncated_poisson import (
    TruncatedPoissonAnalysis,
    inclusion_probability,
    lattice_witness,
    truncated_poisson_components,
    truncated_poisson_witness,
)

dpa = pytest.importorskip("dp_accounting")


# ------------------------------------------------------------------------------------------
# exact enumeration of the truncated sampler
# ------------------------------------------------------------------------------------------
def batch_law(grads: list, q: Fraction, B: int) -> dict:
    """Law of the batch sum (a tuple, one entry per coordinate) of the truncated Poisson
    sampler over records with gradients ``grads``, by enumerating every sample and every
    B-subset of a truncated one (exact rationals)."""
    n = len(grads)
    law: dict = {}
    for mask in itertools.product((0, 1), repeat=n):
        k = sum(mask)
        pr = q**k * (1 - q) ** (n - k)
        chosen = [i for i in range(n) if mask[i]]
        subsets = [chosen] if k <= B else list(itertools.combinations(chosen, B))
        for sub in subsets:
            s = tuple(sum(grads[i][d] for i in sub) for d in range(len(grads[0])))
            law[s] = law.get(s, 0) + pr / len(subsets)
    return law


def hockey_stick(P: dict, Q: dict, sigma: float, eps: np.ndarray) -> np.ndarray:
    """H_{e^eps}(P || Q) of the 1-D Gaussian mixtures with means in P, Q (noise sigma), by
    quadrature on a fine grid."""
    x = np.linspace(-14 * sigma - 6, 14 * sigma + 6, 400001)
    dx = x[1] - x[0]

    def dens(law):
        return sum(float(w) * norm.pdf(x, loc=c[0], scale=sigma) for c, w in law.items())

    p, qd = dens(P), dens(Q)
    return np.array([np.sum(np.maximum(p - np.exp(e) * qd, 0.0)) * dx for e in eps])


def upper_profile(comps, eps: np.ndarray) -> np.ndarray:
    out = np.zeros_like(eps)
    for w, pair in comps:
        out += w * (np.maximum(1 - np.exp(eps), 0.0) if pair is None else pair.delta(eps))
    return out


def test_inclusion_probability_matches_enumeration():
    for m, B, q in [(4, 2, Fraction(2, 5)), (5, 1, Fraction(7, 10)), (5, 3, Fraction(1, 3))]:
        grads = [(0,)] * m + [(1,)]  # the differing record marked by gradient 1
        law = batch_law(grads, q, B)
        exact = float(law.get((1,), 0))
        assert inclusion_probability(float(q), B, m) == pytest.approx(exact, rel=1e-12)


EPS = np.array([-1.0, -0.3, 0.0, 0.2, 0.5, 1.0, 2.0])


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("m,B,q", [(4, 2, Fraction(1, 2)), (5, 1, Fraction(3, 5))])
def test_upper_dominates_exact_pairs_add_remove(sigma, m, B, q):
    # one pair for both neighbours of an (m + 1)-record dataset: m and m + 1 others
    comps = truncated_poisson_components(pa.Gaussian(sigma), float(q), B, m, one_more=True)
    configs = [[(1,)] * k + [(-1,)] for k in (m, m + 1)] + [
        [(0,)] * m + [(1,)], [(1,), (-1,)] * (m // 2) + [(1,)] * (m % 2) + [(-1,)],
        [(1,)] * (m - 1) + [(0,), (1,)], [(1,)] * m + [(0,), (-1,)]]
    for grads in configs:
        with_x = batch_law(grads, q, B)
        without = batch_law(grads[:-1], q, B)
        for i, (P, Q) in enumerate([(with_x, without), (without, with_x)]):
            exact = hockey_stick(P, Q, sigma, EPS)
            assert np.all(exact <= upper_profile(comps[i], EPS) + 1e-8)
    # the realised pair: others 0, x* = 1 (exactly the witness)
    grads = [(0,)] * m + [(1,)]
    P, Q = batch_law(grads, q, B), batch_law(grads[:-1], q, B)
    wit = truncated_poisson_witness(pa.Gaussian(sigma), float(q), B, m)
    np.testing.assert_allclose(wit[0].delta(EPS), hockey_stick(P, Q, sigma, EPS), atol=1e-8)


@pytest.mark.parametrize("sigma,m,B,q", [(0.5, 4, 2, Fraction(1, 2)),
                                         (1.0, 5, 1, Fraction(3, 5)),
                                         (0.7, 5, 3, Fraction(4, 5))])
def test_lattice_witness_below_exact_pair(sigma, m, B, q):
    # others +1, the differing record -1: the binned witness is a post-processing of the
    # exact pair (below it), and loses little
    grads = [(1,)] * m + [(-1,)]
    P = batch_law(grads, q, B)
    for zero_out, Q in [(False, batch_law(grads[:-1], q, B)),
                        (True, batch_law(grads[:-1] + [(0,)], q, B))]:
        wit = lattice_witness(pa.Gaussian(sigma), float(q), B, m, zero_out)
        for pair, (a, b) in zip(wit, [(P, Q), (Q, P)], strict=True):
            exact = hockey_stick(a, b, sigma, EPS)
            got = pair.delta(EPS)
            assert np.all(got <= exact + 1e-9)
            assert np.all(got >= exact - 2e-5)


@pytest.mark.parametrize("sigma", [0.5, 1.5])
def test_upper_dominates_exact_pairs_zero_out(sigma):
    m, B, q = 4, 2, Fraction(1, 2)
    comps = truncated_poisson_components(pa.Gaussian(sigma), float(q), B, m, zero_out=True)
    for others in ([(1,)] * m, [(-1,)] * m, [(1,), (-1,)] * 2, [(1,), (0,)] * 2):
        for x in ((1,), (-1,)):
            P = batch_law(others + [x], q, B)
            Q = batch_law(others + [(0,)], q, B)
            for i, (a, b) in enumerate([(P, Q), (Q, P)]):
                exact = hockey_stick(a, b, sigma, EPS)
                assert np.all(exact <= upper_profile(comps[i], EPS) + 1e-8)


# ------------------------------------------------------------------------------------------
# the run accountant
# ------------------------------------------------------------------------------------------
def _dpa_epsilon(event, T, delta, relation=None):
    from dp_accounting.pld import pld_privacy_accountant as P
    kw = {} if relation is None else {"neighboring_relation": relation}
    acc = P.PLDAccountant(value_discretization_interval=1e-4, **kw)
    acc.compose(event, T)
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("B", [pytest.param(40, marks=pytest.mark.slow), 55,
                               pytest.param(80, marks=pytest.mark.slow)])
def test_upper_at_or_below_dp_accounting(B):
    n, q, sigma, T, delta = 1000, 0.05, 1.0, 50, 1e-5
    # dp-accounting's convention: neighbours of n and n - 1 records
    an = TruncatedPoissonAnalysis(pa.Gaussian(sigma), TruncatedPoisson(q, B, n), T,
                                  both_neighbours=False)
    up, lo = an.epsilon(np.array(delta))
    ref = _dpa_epsilon(dpa.TruncatedSubsampledGaussianDpEvent(n, q, B, sigma), T, delta)
    assert up.kind == "upper" and lo.kind == "lower"
    assert lo.value <= up.value <= ref * (1 + 1e-3)


def test_no_truncation_is_poisson():
    # B >= n + 1: the truncation never happens; the answer is Poisson's
    n, q, sigma, T, delta = 200, 0.02, 0.8, 300, 1e-6
    run = pa.Training(pa.Gaussian(sigma), TruncatedPoisson(q, n + 1, n), steps=T)
    g = run.epsilon(delta)
    ref = _dpa_epsilon(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), T, delta)
    assert g.lower.value <= ref <= g.upper.value * (1 + 1e-4)
    assert g.upper.value - g.lower.value < 2e-3 * ref


def test_near_poisson_when_truncation_rare():
    n, q, sigma, T, delta = 2000, 0.01, 1.0, 200, 1e-5
    run = pa.Training(pa.Gaussian(sigma), TruncatedPoisson(q, 60, n), steps=T)  # mean 20
    g = run.epsilon(delta)
    ref = _dpa_epsilon(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), T, delta)
    assert g.lower.value <= ref * (1 + 1e-3)
    assert abs(g.upper.value - ref) < 2e-3 * ref


@pytest.mark.slow
def test_zero_out_run_and_capabilities():
    n, q, sigma, T = 500, 0.05, 1.0, 20
    run = pa.Training(pa.Gaussian(sigma), TruncatedPoisson(q, 30, n), steps=T,
                      relation=pa.ZeroOut())
    g = run.epsilon(1e-5)
    assert 0 < g.lower.value <= g.upper.value < np.inf
    an = TruncatedPoissonAnalysis(pa.Gaussian(sigma), TruncatedPoisson(q, 30, n), T,
                                  zero_out=True)
    h = an.grid_step()
    assert h > 0 and len(an.pld(h).directions) == 2
    ar = TruncatedPoissonAnalysis(pa.Gaussian(sigma), TruncatedPoisson(q, 30, n), T)
    assert len(ar.pld(2 * h).directions) == 2
    up, lo = ar.delta(np.array([1.0, 2.0]))
    assert np.all(lo.value <= up.value)
    assert np.all(ar.renyi_floor(np.array([2.0, 8.0])) >= 0)


def test_refuses_what_it_does_not_analyse():
    run = pa.Training(pa.Laplace(1.0), TruncatedPoisson(0.1, 5, 100), steps=3)
    with pytest.raises(NotApplicable):
        run.epsilon(1e-5, accountant="pld")
    with pytest.raises(ValueError, match="max_batch_size"):
        inclusion_probability(0.1, 0, 10)
    with pytest.raises(ValueError, match="rate"):
        inclusion_probability(1.5, 2, 10)


def test_from_dp_event():
    event = dpa.SelfComposedDpEvent(dpa.TruncatedSubsampledGaussianDpEvent(1000, 0.05, 40, 1.2),
                                    30)
    run = from_dp_event(event)
    assert run.scheme == TruncatedPoisson(0.05, 40, 1000)
    assert run.steps == 30 and run.mechanism == pa.Gaussian(1.2)
    with pytest.raises(ValueError, match="noise_multiplier"):
        from_dp_event(dpa.TruncatedSubsampledGaussianDpEvent(1000, 0.05, 40, 0.0))
    # a step sampling nothing releases nothing (dp-accounting skips it too)
    empty = dpa.TruncatedSubsampledGaussianDpEvent(1000, 0.0, 40, 1.0)
    run = from_dp_event(dpa.ComposedDpEvent([empty, event]))
    assert run.steps == 30 and run.scheme == TruncatedPoisson(0.05, 40, 1000)
