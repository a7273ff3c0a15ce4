"""CyclicPoisson's dataset_size and group sizes (jax_privacy's EQUAL_SPLIT: n // k examples per
group, counted against jax_privacy's own partition)."""

import numpy as np
import pytest

import privamp as pa


@pytest.mark.parametrize("n, k", [(10, 3), (12, 4), (7, 7), (100, 1)])
def test_group_size_is_n_floordiv_k(n, k):
    assert pa.CyclicPoisson(0.5, k, dataset_size=n).group_size == n // k


def test_group_size_against_jax_privacy_partition():
    bs = pytest.importorskip("jax_privacy.batch_selection")
    n, k = 23, 4
    s = bs.CyclicPoissonSampling(1.0, k, cycle_length=k,
                                 partition_type=bs.PartitionType.EQUAL_SPLIT)
    sizes = [len(np.asarray(batch)) for batch in
             s.batch_iterator(n, rng=np.random.default_rng(0))]
    assert sizes == [pa.CyclicPoisson(1.0, k, dataset_size=n).group_size] * k


def test_group_size_unknown_without_size_or_for_random_groups():
    assert pa.CyclicPoisson(0.5, 3).group_size is None
    assert pa.CyclicPoisson(0.5, 3, "independent", dataset_size=9).group_size is None
    assert pa.CyclicPoisson(0.5, 3, "fixed", dataset_size=9).group_size is None


@pytest.mark.parametrize("bad", [0, -3, 2.5])
def test_dataset_size_validated(bad):
    with pytest.raises(ValueError, match="dataset_size"):
        pa.CyclicPoisson(0.5, 3, dataset_size=bad)
