"""CyclicPoisson: validation, relations, participation counts against jax_privacy's own batch
iterator, DP-SGD under it equal to Poisson over ceil(T / k) rounds."""

import numpy as np
import pytest

import privamp as pa
from privamp.sampling.registry import scheme_entry


def test_validation_and_defaults():
    s = pa.CyclicPoisson(0.2, 4)
    assert s.default_relation() == pa.ZeroOut() and s.steps_per_epoch == 20.0
    assert pa.CyclicPoisson(0.2, 4, "independent").default_relation() == pa.AddRemove()
    assert s.refusal(pa.AddRemove()) is not None and s.refusal(pa.ZeroOut()) is None
    assert pa.CyclicPoisson(0.2, 1).refusal(pa.AddRemove()) is None
    assert list(s.eligible_steps(10, 2)) == [2, 6] and s.rounds(10) == 3
    for bad, match in [((0.0, 2), "rate"), ((0.1, 0), "cycle_length"),
                       ((0.1, 2, "random"), "partition"), ((0.1, 2, "fixed", 0), "truncated")]:
        with pytest.raises(ValueError, match=match):
            pa.CyclicPoisson(*bad)


def test_flags_build_the_scheme():
    entry = scheme_entry("cyclic-poisson")
    assert entry.build({"rate": 0.1, "cycle_length": 3, "independent_partition": True}) == \
        pa.CyclicPoisson(0.1, 3, "independent")
    with pytest.raises(ValueError, match="--rate"):
        entry.build({})


def test_participations_against_jax_privacy_iterator():
    bs = pytest.importorskip("jax_privacy.batch_selection")
    T, k, n = 23, 4, 40
    strategy = bs.CyclicPoissonSampling(sampling_prob=1.0, iterations=T, cycle_length=k,
                                        partition_type=bs.PartitionType.INDEPENDENT)
    counts = np.zeros(n, dtype=int)
    steps_of = {i: [] for i in range(n)}
    for t, batch in enumerate(strategy.batch_iterator(n, rng=0)):
        counts[batch] += 1
        for i in batch:
            steps_of[int(i)].append(t)
    scheme = pa.CyclicPoisson(1.0, k, "independent")
    assert counts.max() == scheme.max_participations(T) == 6
    for steps in steps_of.values():  # every example's steps are one group's eligible steps
        if steps:
            assert steps == list(scheme.eligible_steps(T, steps[0] % k))


def test_dp_sgd_under_fixed_groups_is_poisson_over_rounds():
    T, k = 30, 4
    run = pa.Training(pa.Gaussian(1.3), pa.CyclicPoisson(0.1, k, "fixed"), steps=T)
    ref = pa.Training(pa.Gaussian(1.3), pa.Poisson(0.1), steps=8).epsilon(1e-6)
    got = run.epsilon(1e-6, accountant="amplified-bandmf")
    assert float(got.upper) == float(ref.upper) and float(got.lower) == float(ref.lower)
