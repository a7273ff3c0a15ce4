"""The loops people write with PyTorch (issue 25): one iter() is one epoch, set_epoch and
state_dict, drop_last, persistent shuffle and bins, truncated Poisson, rank shares, what
scheme_of says about standard loaders and DistributedSampler, and accumulation."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("torch")

import torch  # noqa: E402
from torch.utils.data import (  # noqa: E402
    BatchSampler,
    DataLoader,
    DistributedSampler,
    TensorDataset,
    WeightedRandomSampler,
)

import privamp as pa  # noqa: E402
from privamp.integrations.torch import (  # noqa: E402
    BallsInBinsSampler,
    DeterministicBatchSampler,
    PersistentBallsInBinsSampler,
    PoissonBatchSampler,
    ShuffleBatchSampler,
    TruncatedPoissonBatchSampler,
    WithoutReplacementBatchSampler,
    accumulated,
    scheme_of,
)

ALPHA = 1e-6


def _ds(n: int) -> TensorDataset:
    return TensorDataset(torch.arange(float(n)))


def test_the_issue_loop_trains_the_planned_steps():
    # issue 25: for epoch in range(3): for x in loader -- 3 epochs of 60 steps, not 180 x 3
    n, b = 600, 10
    sampler = ShuffleBatchSampler(b, n, epochs=3, seed=0)
    loader = DataLoader(_ds(n), batch_sampler=sampler)
    steps = sum(1 for _ in range(3) for _x in loader)
    assert steps == 180 and len(loader) == 60 and sampler.epochs_drawn == 3
    assert sampler.training(pa.Gaussian(1.0)).steps == 180


def test_extra_epochs_are_counted_warned_and_accounted(caplog):
    s = PoissonBatchSampler(100, 0.1, epochs=2, seed=0)
    assert len(s) == 10  # one epoch = round(1 / rate) steps
    with caplog.at_level(logging.WARNING, logger="privamp"):
        for _ in range(3):
            list(s)
    assert s.epochs_drawn == 3
    assert any("3 epochs drawn, 2 planned" in r.getMessage() for r in caplog.records)
    assert s.training(pa.Gaussian(1.0)).steps == 30  # follows what was drawn


def test_set_epoch_makes_batches_a_function_of_seed_and_epoch():
    a = ShuffleBatchSampler(4, 10, seed=7)
    b = ShuffleBatchSampler(4, 10, seed=7)
    first = [list(a) for _ in range(3)]
    b.set_epoch(2)
    assert list(b) == first[2]
    assert first[0] != first[1]
    # a resumed run continues the same law
    c = ShuffleBatchSampler(4, 10, seed=0)
    c.load_state_dict(a.state_dict())
    d = ShuffleBatchSampler(4, 10, seed=7)
    for _ in range(3):
        list(d)
    assert list(c) == list(d) and c.epochs_drawn == 4
    with pytest.raises(ValueError, match="scheme"):
        ShuffleBatchSampler(5, 10, seed=0).load_state_dict(a.state_dict())


def test_a_repeated_epoch_is_refused(caplog):
    s = ShuffleBatchSampler(4, 12, seed=1)
    list(s)
    s.set_epoch(0)
    with caplog.at_level(logging.WARNING, logger="privamp"):
        list(s)
    assert any("drawn again" in r.getMessage() for r in caplog.records)
    with pytest.raises(ValueError, match="drawn twice"):
        s.training(pa.Gaussian(1.0))
    # a persistent shuffle repeats by design
    p = ShuffleBatchSampler(4, 12, persistent=True, seed=1)
    e0, e1 = list(p), list(p)
    assert e0 == e1 and p.training(pa.Gaussian(1.0)).scheme.persistent


@pytest.mark.parametrize("drop_last", [False, True])
def test_shuffle_drop_last_partitions_and_uniform_batch_position(drop_last):
    n, b, epochs = 10, 4, 3000
    s = ShuffleBatchSampler(b, n, drop_last=drop_last, seed=3)
    assert s.scheme == pa.Shuffle(b, n, drop_last=drop_last)
    nb = 2 if drop_last else 3
    assert len(s) == nb
    last = np.zeros(epochs, dtype=int)  # batch of example 0 (nb = sat out)
    for e in range(epochs):
        ep = list(s)
        sizes = [len(x) for x in ep]
        assert sizes == ([4, 4] if drop_last else [4, 4, 2])
        flat = [i for x in ep for i in x]
        assert len(set(flat)) == len(flat)
        last[e] = next((j for j, x in enumerate(ep) if 0 in x), nb)
    # example 0 sits at a uniform position of the permutation: batch j w.p. |batch j| / n
    probs = [4 / n, 4 / n, 2 / n]
    for j, p in enumerate(probs):
        lo = stats.binom.ppf(ALPHA / 6, epochs, p)
        hi = stats.binom.isf(ALPHA / 6, epochs, p)
        assert lo <= np.sum(last == j) <= hi


def test_deterministic_drop_last():
    assert list(DeterministicBatchSampler(4, 10)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert list(DeterministicBatchSampler(4, 10, drop_last=True)) == [[0, 1, 2, 3],
                                                                       [4, 5, 6, 7]]


def test_persistent_balls_in_bins_keeps_bins_and_they_are_uniform():
    n, m = 300, 3
    s = PersistentBallsInBinsSampler(n, m, seed=0)
    assert s.scheme == pa.PersistentBallsInBins(m) and len(s) == m
    e0 = list(s)
    s.set_epoch(5)
    assert list(s) == e0 and sorted(i for x in e0 for i in x) == list(range(n))
    sizes = [len(x) for x in e0]  # Multinomial(n, 1/m): chi-square goodness of fit
    assert stats.chisquare(sizes).pvalue > ALPHA
    fresh = BallsInBinsSampler(n, m, seed=0)
    assert list(fresh) != list(fresh)  # a fresh bin every epoch


def test_truncated_poisson_sizes_and_mean():
    n, q, cap, steps = 50, 0.2, 10, 4000
    s = TruncatedPoissonBatchSampler(n, q, cap, steps_per_epoch=steps, seed=4)
    assert s.scheme == pa.TruncatedPoisson(q, cap, n)
    sizes = np.array([len(x) for x in s])
    assert sizes.max() == cap
    # independent reference: E[min(K, cap)] for K ~ Binomial(n, q), by direct summation
    k = np.arange(n + 1)
    pmf = stats.binom.pmf(k, n, q)
    mean = float(np.sum(np.minimum(k, cap) * pmf))
    sd = float(np.sqrt(np.sum((np.minimum(k, cap) - mean) ** 2 * pmf)))
    assert s.expected_batch_size == pytest.approx(mean, rel=1e-9)
    assert abs(sizes.mean() - mean) < 5.5 * sd / np.sqrt(steps)


@pytest.mark.parametrize("make", [
    lambda r, w: PoissonBatchSampler(40, 0.2, seed=3, rank=r, world_size=w),
    lambda r, w: ShuffleBatchSampler(6, 40, seed=3, rank=r, world_size=w),
    lambda r, w: BallsInBinsSampler(40, 4, seed=3, rank=r, world_size=w),
    lambda r, w: WithoutReplacementBatchSampler(6, 40, seed=3, rank=r, world_size=w),
])
def test_rank_shares_union_to_the_global_batch(make):
    whole = [sorted(x) for x in make(0, 1)]
    shares = [list(make(r, 3)) for r in range(3)]
    assert all(len(s) == len(whole) for s in shares)
    for t, batch in enumerate(whole):
        union = [i for s in shares for i in s[t]]
        assert sorted(union) == batch and len(set(union)) == len(union)


def test_scheme_of_standard_loaders_any_batch_size():
    ds = _ds(60000)
    for drop in (False, True):
        dl = DataLoader(ds, 256, shuffle=True, drop_last=drop)
        assert scheme_of(dl) == pa.Shuffle(256, 60000, drop_last=drop)
        assert scheme_of(DataLoader(ds, 256, drop_last=drop)) == \
            pa.Deterministic(256, 60000, drop_last=drop)


def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("scheme_of: ")
    return msg


def test_scheme_of_refuses_in_one_line():
    ds = _ds(20)
    weighted = WeightedRandomSampler(torch.ones(20), 20)
    with pytest.raises(ValueError) as exc:
        scheme_of(DataLoader(ds, batch_sampler=BatchSampler(weighted, 4, False)))
    assert "WeightedRandomSampler" in _one_line(exc)
    with pytest.raises(ValueError) as exc:
        scheme_of(DataLoader(ds, batch_sampler=ShuffleBatchSampler(4, 30, seed=0)))
    assert "dataset_size=30" in _one_line(exc)

    class Custom(torch.utils.data.Sampler):
        def __iter__(self):
            yield [0, 1]

        def __len__(self):
            return 1

    with pytest.raises(ValueError) as exc:
        scheme_of(DataLoader(ds, batch_sampler=Custom()))
    assert "Custom" in _one_line(exc)


def _local_batches(n, w, b, shuffle, ddrop, bdrop, epoch=0):
    ds = _ds(n)
    out = []
    for r in range(w):
        ss = DistributedSampler(ds, num_replicas=w, rank=r, shuffle=shuffle, seed=5,
                                drop_last=ddrop)
        ss.set_epoch(epoch)
        out.append(list(BatchSampler(ss, b, bdrop)))
    return out


def _permutation(n, epoch):
    g = torch.Generator()
    g.manual_seed(5 + epoch)
    return torch.randperm(n, generator=g).tolist()


@pytest.mark.parametrize("n,w,b,ddrop,bdrop", [
    (24, 2, 5, False, False), (24, 2, 5, False, True), (25, 2, 4, True, True),
    (25, 2, 6, True, False),
])
def test_distributed_sampler_union_is_a_shuffle_batch(n, w, b, ddrop, bdrop):
    # checked against torch's own DistributedSampler: the ranks' t-th batches together are
    # the t-th block of w * b positions of the epoch's permutation
    locals_ = _local_batches(n, w, b, True, ddrop, bdrop, epoch=3)
    perm = _permutation(n, 3)
    ds = _ds(n)
    ss = DistributedSampler(ds, num_replicas=w, rank=0, shuffle=True, seed=5, drop_last=ddrop)
    scheme = scheme_of(DataLoader(ds, batch_sampler=BatchSampler(ss, b, bdrop)),
                       set_epoch=True)
    assert scheme == pa.Shuffle(w * b, n, drop_last=scheme.drop_last)
    big = w * b
    stop = n - n % big if scheme.drop_last else n
    blocks = [sorted(perm[i : min(i + big, stop)]) for i in range(0, stop, big)]
    unions = [sorted(i for r in range(w) for i in locals_[r][t])
              for t in range(len(locals_[0]))]
    assert unions == blocks and len(blocks) == scheme.steps_per_epoch


def test_distributed_sampler_padding_and_set_epoch():
    ds = _ds(25)
    pad = DistributedSampler(ds, num_replicas=2, rank=0, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_sampler=BatchSampler(pad, 4, False))
    with pytest.raises(ValueError) as exc:
        scheme_of(loader, set_epoch=True)
    assert "repeating 1" in _one_line(exc)
    locals_ = _local_batches(25, 2, 4, True, False, False)
    flat = [i for r in locals_ for x in r for i in x]
    assert len(flat) == 26 and len(set(flat)) == 25  # one example twice: what is refused
    even = DistributedSampler(_ds(24), num_replicas=2, rank=1, shuffle=True, seed=0)
    loader = DataLoader(_ds(24), batch_sampler=BatchSampler(even, 4, False))
    with pytest.raises(ValueError) as exc:
        scheme_of(loader)
    assert "set_epoch" in _one_line(exc)
    assert scheme_of(loader, set_epoch=False) == pa.Shuffle(8, 24, persistent=True)
    # without set_epoch torch repeats the permutation: a persistent shuffle indeed
    assert list(even) == list(even)


def test_accumulated_schemes():
    assert accumulated(pa.Shuffle(4, 10), 2) == pa.Shuffle(8, 10)
    assert accumulated(pa.Deterministic(3, 10, drop_last=True), 2) == \
        pa.Deterministic(6, 10, drop_last=True)
    assert accumulated(pa.BallsInBins(6), 3) == pa.BallsInBins(2)
    assert accumulated(pa.PersistentBallsInBins(6), 2) == pa.PersistentBallsInBins(3)
    assert accumulated(pa.WithReplacement(3, 10), 4) == pa.WithReplacement(12, 10)
    for s in (pa.Poisson(0.1), pa.WithoutReplacement(2, 10), pa.TruncatedPoisson(0.1, 3, 10)):
        with pytest.raises(pa.NotApplicable, match="not"):
            accumulated(s, 2)
    with pytest.raises(ValueError, match="k must divide"):
        accumulated(pa.BallsInBins(5), 2)


def test_accumulated_shuffle_is_consecutive_micro_batches():
    # k consecutive micro-batches of a shuffle epoch (the loop steps at the epoch's end)
    # are exactly the Shuffle(k b, n) batches of the same permutation
    n, b, k = 23, 3, 2
    micro = list(ShuffleBatchSampler(b, n, seed=9))
    logical = [sum(micro[i : i + k], []) for i in range(0, len(micro), k)]
    perm = [i for x in micro for i in x]
    big = accumulated(pa.Shuffle(b, n), k)
    assert logical == [perm[i : i + k * b] for i in range(0, n, k * b)]
    assert len(logical) == big.steps_per_epoch


def test_sampler_epsilon_matches_the_scheme_run():
    s = ShuffleBatchSampler(25, 100, epochs=2, seed=0)
    g = s.training(pa.Gaussian(1.0)).epsilon(1e-5)
    ref = pa.Training(pa.Gaussian(1.0), pa.Shuffle(25, 100), epochs=2).epsilon(1e-5)
    assert g.upper.value == ref.upper.value
    t = ShuffleBatchSampler(30, 100, epochs=2, seed=0)
    ref = pa.Training(pa.Gaussian(1.0), pa.Shuffle(30, 100), epochs=2).epsilon(1e-5)
    assert t.training(pa.Gaussian(1.0)).epsilon(1e-5).upper.value == ref.upper.value
