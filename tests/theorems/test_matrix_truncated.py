"""Truncated cyclic Poisson with amplified BandMF: the reduction to truncated Poisson over one
group of dataset_size // cycle_length examples.  References: mpmath binomial tails (the
truncation probability of a group), dp-accounting (untruncated reduction, and the truncated
Poisson event as a peer), the no-truncation limit, and refusals."""

import math

import mpmath
import numpy as np
import pytest

import privamp as pa
from privamp.theorems.choquette2023 import amplified_runs
from privamp.theorems.truncated_poisson import truncation_probability

DELTA = 1e-5
COEF = [1.0, 0.5, 0.3, 0.2]


def _mech(nm=1.0):
    # jax_privacy's convention: noise multiplier for the column-normalised strategy
    return pa.MatrixMechanism.banded(COEF, sigma=nm * float(np.linalg.norm(COEF)))


def _run(B, n, rate=0.2, k=4, T=100, nm=1.0, relation=None):
    return pa.Training(_mech(nm), pa.CyclicPoisson(rate, k, "equal-split", B, n), steps=T,
                       relation=relation or pa.ZeroOut())


def test_reduction_is_truncated_poisson_over_one_group():
    up, lo, source = amplified_runs(_run(18, 402))
    assert lo is None and "truncated" in source
    assert up.scheme == pa.TruncatedPoisson(0.2, 18, 100)  # 402 // 4 examples per group
    assert up.steps == 25
    assert up.mechanism.shift() == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("g, q, B", [(100, 0.2, 18), (100, 0.2, 25), (500, 0.05, 40)])
def test_group_truncation_probability_against_mpmath(g, q, B):
    # the other g - 1 examples of the group fill the batch: P(Bin(g - 1, q) >= B)
    mpmath.mp.dps = 40
    ref = mpmath.fsum(mpmath.binomial(g - 1, j) * mpmath.mpf(q) ** j
                      * (1 - mpmath.mpf(q)) ** (g - 1 - j) for j in range(B, g))
    assert truncation_probability(q, B, g - 1) == pytest.approx(float(ref), rel=1e-10)


@pytest.mark.parametrize("B", [10, 18, 25])
def test_truncated_upper_at_least_untruncated_peer(B):
    dpa = pytest.importorskip("dp_accounting")
    jpa = pytest.importorskip("jax_privacy.experimental.accounting")
    acc = dpa.pld.PLDAccountant(dpa.NeighboringRelation.REPLACE_SPECIAL)
    acc.compose(jpa.amplified_bandmf_event(noise_multiplier=1.0, iterations=100, num_bands=4,
                                           sampling_prob=0.2))
    untruncated = acc.get_epsilon(DELTA)
    g = _run(B, 400).epsilon(DELTA)
    assert g.lower is not None or g.upper is not None
    assert float(g.upper) >= untruncated * (1 - 1e-4)
    plain = pa.Training(_mech(), pa.CyclicPoisson(0.2, 4), steps=100,
                        relation=pa.ZeroOut()).epsilon(DELTA)
    assert float(g.upper) >= float(plain.upper) * (1 - 1e-9)


def test_no_truncation_possible_is_the_untruncated_reduction():
    # a batch cap above the group's size never truncates
    dpa = pytest.importorskip("dp_accounting")
    jpa = pytest.importorskip("jax_privacy.experimental.accounting")
    acc = dpa.pld.PLDAccountant(dpa.NeighboringRelation.REPLACE_SPECIAL)
    acc.compose(jpa.amplified_bandmf_event(noise_multiplier=1.0, iterations=100, num_bands=4,
                                           sampling_prob=0.2))
    peer = acc.get_epsilon(DELTA)
    g = _run(101, 400).epsilon(DELTA)
    assert float(g.upper) == pytest.approx(peer, rel=1e-4)
    assert float(g.upper) >= peer * (1 - 1e-5)


@pytest.mark.slow
def test_one_group_identity_lower_below_dp_accounting_truncated_event():
    # cycle_length 1, C = I: truncated DP-SGD; its realised lower is below dp-accounting's
    # (independent) upper bound on the same truncated event
    dpa = pytest.importorskip("dp_accounting")
    n, q, B, sigma, T = 200, 0.1, 28, 1.0, 10
    run = pa.Training(pa.MatrixMechanism.identity(sigma), pa.CyclicPoisson(q, 1, "equal-split",
                                                                         B, n),
                      steps=T, relation=pa.ZeroOut())
    g = run.epsilon(DELTA, accountant="amplified-bandmf")
    acc = dpa.pld.PLDAccountant(dpa.NeighboringRelation.REPLACE_SPECIAL)
    acc.compose(dpa.TruncatedSubsampledGaussianDpEvent(n, q, B, sigma), T)
    peer = acc.get_epsilon(DELTA)
    assert g.lower is not None and float(g.lower) <= peer
    assert float(g.lower) <= float(g.upper)


@pytest.mark.parametrize("scheme, relation, match", [
    (pa.CyclicPoisson(0.2, 4, "equal-split", 20), pa.ZeroOut(), "dataset_size"),
    (pa.CyclicPoisson(0.2, 4, "independent", 20, 400), pa.AddRemove(), "INDEPENDENT"),
    (pa.CyclicPoisson(0.2, 4, "fixed", 20, 400), pa.AddRemove(), "partition"),
    (pa.CyclicPoisson(0.2, 4, "equal-split", 20, 400), pa.Substitution(), "substitution"),
    (pa.CyclicPoisson(0.2, 8, "equal-split", 20, 5), pa.ZeroOut(), "empty"),
])
def test_refusals_name_the_reason(scheme, relation, match):
    run = pa.Training(_mech(), scheme, steps=40, relation=relation)
    with pytest.raises(pa.NotApplicable, match=match):
        run.epsilon(DELTA, accountant="amplified-bandmf")


def test_group_with_truncation_by_the_chain_only():
    # the direct K-group run is refused (truncated Poisson covers one example); group privacy
    # by the chain of neighbours answers above the one-example bound, with no lower side
    one = _run(18, 400, nm=3.0).epsilon(DELTA)
    two = _run(18, 400, nm=3.0, relation=pa.ZeroOut(group=2)).epsilon(DELTA)
    assert two.lower is None and "chain" in two.upper.source
    assert float(two.upper) >= 2 * float(one.upper) * (1 - 1e-6)


def test_unamplified_truncated_add_remove_refused():
    run = pa.Training(_mech(), pa.CyclicPoisson(1.0, 4, "fixed", 20, 400), steps=40,
                      relation=pa.AddRemove())
    with pytest.raises(pa.NotApplicable, match="displace"):
        run.epsilon(DELTA, accountant="matrix-gaussian")


def test_truncated_answer_is_finite_and_labelled():
    g = _run(18, 400).epsilon(np.array([1e-5, 1e-7]))
    up = np.asarray(g.upper.value)
    assert up.shape == (2,) and np.all(np.isfinite(up)) and up[1] > up[0]
    assert "truncated" in g.upper.source and math.isfinite(float(up[0]))
