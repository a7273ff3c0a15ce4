"""The jax_privacy bridge for truncated amplified BandMF: BandMFExecutionPlanConfig and
CyclicPoissonSampling with truncated_batch_size map onto CyclicPoisson(p, k, "equal-split",
B, n), whose reduction has the parameters of jax_privacy's own
truncated_amplified_bandmf_event (group size, rounds, noise); dp-accounting on that event is a
peer value."""

from __future__ import annotations

import numpy as np
import pytest

import privamp as pa
from privamp.integrations import jax_privacy as J
from privamp.theorems.choquette2023 import amplified_runs

bs = pytest.importorskip("jax_privacy.batch_selection")
jp_plan = pytest.importorskip("jax_privacy.experimental.execution_plan")
jp_accounting = pytest.importorskip("jax_privacy.experimental.accounting")
dpa = pytest.importorskip("dp_accounting")

DELTA = 1e-5
COEF = [1.0, 0.5, 0.3, 0.2]


def _config(nm=1.0, T=100, p=0.2, B=18, n=402):
    return jp_plan.BandMFExecutionPlanConfig(
        iterations=T, strategy=COEF, epsilon=None, delta=None, noise_multiplier=nm,
        sampling_prob=p, truncated_batch_size=B, num_examples=n)


def test_config_maps_to_truncated_cyclic_poisson():
    run = J.run_from_jax_privacy(_config())
    assert run.scheme == pa.CyclicPoisson(0.2, 4, "equal-split", 18, 402)
    assert isinstance(run.relation, pa.ZeroOut)  # jax_privacy's REPLACE_SPECIAL default


def test_reduction_has_jax_privacy_event_parameters():
    nm, T, p, B, n = 1.3, 98, 0.2, 18, 402
    run = J.run_from_jax_privacy(_config(nm, T, p, B, n))
    event = jp_accounting.truncated_amplified_bandmf_event(
        noise_multiplier=nm, iterations=T, num_bands=4, sampling_prob=p,
        largest_group_size=n // 4, truncated_batch_size=B)
    assert isinstance(event, dpa.SelfComposedDpEvent)
    inner = event.event
    up, lo, _ = amplified_runs(run)
    assert lo is None  # the group is secret (equal-split)
    assert up.steps == event.count == 25
    assert up.scheme.dataset_size == inner.dataset_size == 100
    assert up.scheme.max_batch_size == inner.truncated_batch_size
    assert up.scheme.rate == inner.sampling_probability
    # the reduced run's noise multiplier (sigma / max column norm) is jax_privacy's
    assert up.mechanism.sigma / up.mechanism.sensitivity == pytest.approx(
        inner.noise_multiplier, rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("B", [18, 25])
def test_epsilon_against_peer_and_untruncated(B):
    run = J.run_from_jax_privacy(_config(B=B, n=400))
    g = run.epsilon(DELTA)
    acc = dpa.pld.PLDAccountant(dpa.NeighboringRelation.REPLACE_SPECIAL)
    acc.compose(jp_accounting.amplified_bandmf_event(noise_multiplier=1.0, iterations=100,
                                                     num_bands=4, sampling_prob=0.2))
    untruncated = acc.get_epsilon(DELTA)
    acc = dpa.pld.PLDAccountant(dpa.NeighboringRelation.REPLACE_SPECIAL)
    acc.compose(jp_accounting.truncated_amplified_bandmf_event(
        noise_multiplier=1.0, iterations=100, num_bands=4, sampling_prob=0.2,
        largest_group_size=100, truncated_batch_size=B))
    peer = acc.get_epsilon(DELTA)
    # both are upper bounds of the same reduction (different one-step truncation pairs,
    # docs/truncated_poisson.md): both at or above the untruncated value
    assert peer >= untruncated and float(g.upper) >= untruncated * (1 - 1e-4)
    # the realised lower side (any partition, sum statistic) stays below both
    assert g.lower is None or float(g.lower) <= min(peer, float(g.upper))


def test_strategy_with_truncation_and_dataset_size():
    s = bs.CyclicPoissonSampling(0.3, 12, cycle_length=3, truncated_batch_size=4)
    assert J.scheme_of_strategy(s, dataset_size=30) == pa.CyclicPoisson(
        0.3, 3, "equal-split", 4, 30)
    run = J.run_from_jax_privacy(s, noise_multiplier=2.0, relation=pa.ZeroOut(),
                                 dataset_size=30)
    g = run.epsilon(DELTA, accountant="amplified-bandmf")
    ref = pa.Training(pa.Gaussian(2.0), pa.TruncatedPoisson(0.3, 4, 10), steps=4,
                      relation=pa.ZeroOut()).epsilon(DELTA)
    assert float(g.upper) == pytest.approx(float(ref.upper), rel=1e-12)
    assert np.isfinite(float(g.upper))
