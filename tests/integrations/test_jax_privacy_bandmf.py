"""The jax_privacy bridge for amplified BandMF: BandMFExecutionPlanConfig with several bands
and CyclicPoissonSampling(p < 1, cycle_length > 1), against jax_privacy's own epsilon
(dp-accounting's PLD accountant on jax_privacy's amplified_bandmf_event)."""

from __future__ import annotations

import numpy as np
import pytest

import privamp as pa
from privamp.integrations import jax_privacy as J

bs = pytest.importorskip("jax_privacy.batch_selection")
jp_plan = pytest.importorskip("jax_privacy.experimental.execution_plan")
jp_accounting = pytest.importorskip("jax_privacy.experimental.accounting")
dpa = pytest.importorskip("dp_accounting")

DELTA = 1e-5
COEF = [1.0, 0.5, 0.3, 0.2]


def _peer(nm, iterations, bands, p, relation):
    acc = dpa.pld.PLDAccountant(relation)
    acc.compose(jp_accounting.amplified_bandmf_event(
        noise_multiplier=nm, iterations=iterations, num_bands=bands, sampling_prob=p))
    return acc.get_epsilon(DELTA)


@pytest.mark.parametrize("partition, relation", [
    ("INDEPENDENT", "ADD_OR_REMOVE_ONE"),
    ("EQUAL_SPLIT", "REPLACE_SPECIAL"),
])
def test_bandmf_config_matches_jax_privacy(partition, relation):
    rel = getattr(dpa.NeighboringRelation, relation)
    nm, T, p = 1.0, 100, 0.2
    config = jp_plan.BandMFExecutionPlanConfig(
        iterations=T, strategy=COEF, epsilon=None, delta=None, noise_multiplier=nm,
        sampling_prob=p, partition_type=getattr(bs.PartitionType, partition),
        accountant=dpa.pld.PLDAccountant(rel))
    run = J.run_from_jax_privacy(config)
    assert isinstance(run.mechanism, pa.MatrixMechanism)
    np.testing.assert_array_equal(run.mechanism.strategy, COEF)
    assert run.mechanism.sigma == pytest.approx(nm * np.linalg.norm(COEF), rel=1e-15)
    assert run.scheme == pa.CyclicPoisson(p, 4, partition.lower().replace("_", "-"))
    g = run.epsilon(DELTA)
    # the example's group is secret under a random partition: only the sum statistic's
    # realised pair (valid for every partition) gives a lower side
    assert g.lower is not None and "any partition" in g.lower.source
    peer = _peer(nm, T, 4, p, rel)
    # the same public-partition run gives the realised lower bound
    fixed = pa.Training(run.mechanism, pa.CyclicPoisson(p, 4, "fixed"), steps=T,
                        relation=run.relation).epsilon(DELTA)
    assert float(fixed.lower) <= peer
    assert float(fixed.lower) <= float(g.upper) <= peer * (1 + 1e-4)
    assert float(g.lower) <= peer


def test_cyclic_strategy_maps_to_cyclic_poisson():
    s = bs.CyclicPoissonSampling(0.5, 8, cycle_length=4,
                                 partition_type=bs.PartitionType.INDEPENDENT)
    assert J.scheme_of_strategy(s) == pa.CyclicPoisson(0.5, 4, "independent")
    run = J.run_from_jax_privacy(s, noise_multiplier=2.0)
    g = run.epsilon(DELTA)
    # DP-SGD under cyclic Poisson: Poisson over ceil(8 / 4) = 2 rounds
    ref = pa.Training(pa.Gaussian(2.0), pa.Poisson(0.5), steps=2).epsilon(DELTA)
    assert float(g.upper) <= float(ref.upper) and g.lower is None


def test_truncated_cyclic_refused_by_the_accountant():
    s = bs.CyclicPoissonSampling(0.5, 8, cycle_length=4, truncated_batch_size=3)
    run = J.run_from_jax_privacy(s, noise_multiplier=1.0, relation=pa.ZeroOut())
    with pytest.raises(pa.NotApplicable, match="truncated"):
        run.epsilon(DELTA, accountant="amplified-bandmf")
