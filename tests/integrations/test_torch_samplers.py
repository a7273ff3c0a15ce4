"""Statistical tests of the PyTorch batch samplers in privamp.integrations.torch: each sampler
draws from the law of the privamp scheme it announces (inclusion frequencies inside binomial
confidence intervals, exact batch sizes, exact balance), and is reproducible under a seed."""

from __future__ import annotations

import math
from collections import Counter
from itertools import combinations

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("torch")

import privamp as pa  # noqa: E402
from privamp.integrations.torch import (
    BalancedIterationSampler,
    DeterministicBatchSampler,
    PoissonBatchSampler,
    ShuffleBatchSampler,
    WithoutReplacementBatchSampler,
)

# Each interval below is a two-sided binomial interval at level 1 - ALPHA / (#intervals in the
# test); with the seeds fixed, a failure means the law is wrong, not bad luck.
ALPHA = 1e-6


def _binom_interval(trials: int, p: float, level_alpha: float) -> tuple[float, float]:
    lo = stats.binom.ppf(level_alpha / 2, trials, p)
    hi = stats.binom.isf(level_alpha / 2, trials, p)
    return lo, hi


def _counts(batches: list[list[int]], n: int) -> np.ndarray:
    c = np.zeros(n, dtype=int)
    for b in batches:
        np.add.at(c, np.asarray(b, dtype=int), 1)
    return c


def test_poisson_inclusion_frequencies_and_batch_sizes():
    n, q, steps = 200, 0.1, 3000
    s = PoissonBatchSampler(n, q, steps, seed=1)
    assert s.scheme == pa.Poisson(q) and s.steps == steps and len(s) == steps
    batches = list(s)
    assert len(batches) == steps
    for b in batches:
        assert len(set(b)) == len(b) and all(0 <= i < n for i in b)
    # per-example inclusion counts ~ Binomial(steps, q)
    lo, hi = _binom_interval(steps, q, ALPHA / n)
    c = _counts(batches, n)
    assert c.min() >= lo and c.max() <= hi
    # batch sizes ~ Binomial(n, q): mean inside its CI, variance near n q (1 - q)
    sizes = np.array([len(b) for b in batches])
    lo, hi = _binom_interval(n * steps, q, ALPHA)
    assert lo <= sizes.sum() <= hi
    var = n * q * (1 - q)
    chi_lo = stats.chi2.ppf(ALPHA / 2, steps - 1) / (steps - 1)
    chi_hi = stats.chi2.isf(ALPHA / 2, steps - 1) / (steps - 1)
    # sizes are near-Gaussian (n q = 20): sample variance / var ~ chi2_{steps-1}/(steps-1)
    ratio = sizes.var(ddof=1) / var
    assert chi_lo * 0.9 <= ratio <= chi_hi * 1.1
    # independence of two examples: both in a batch with probability q^2
    both = sum(1 for b in batches if 0 in b and 1 in b)
    lo, hi = _binom_interval(steps, q * q, ALPHA)
    assert lo <= both <= hi


def test_without_replacement_law():
    n, b, steps = 50, 10, 4000
    s = WithoutReplacementBatchSampler(b, n, steps, seed=2)
    assert s.scheme == pa.WithoutReplacement(b, n) and s.steps == steps
    batches = list(s)
    assert all(len(x) == b and len(set(x)) == b for x in batches)
    lo, hi = _binom_interval(steps, b / n, ALPHA / n)
    c = _counts(batches, n)
    assert c.min() >= lo and c.max() <= hi
    # pair co-inclusion probability b (b - 1) / (n (n - 1)) (not q^2 as under Poisson)
    p_pair = b * (b - 1) / (n * (n - 1))
    both = sum(1 for x in batches if 3 in x and 7 in x)
    lo, hi = _binom_interval(steps, p_pair, ALPHA)
    assert lo <= both <= hi


def test_shuffle_epochs_are_fresh_uniform_partitions():
    n, b, epochs = 12, 3, 3000
    s = ShuffleBatchSampler(b, n, epochs, seed=3)
    nb = n // b
    assert s.scheme == pa.Shuffle(b, n) and s.steps == epochs * nb and len(s) == nb
    batches = [x for _ in range(epochs) for x in s]  # one iter() is one epoch
    assert len(batches) == epochs * nb
    position = np.zeros((epochs, n), dtype=int)  # batch index of each example in each epoch
    for e in range(epochs):
        ep = batches[e * nb : (e + 1) * nb]
        assert sorted(i for x in ep for i in x) == list(range(n))  # a partition of the data
        assert all(len(x) == b for x in ep)
        for j, x in enumerate(ep):
            position[e, x] = j
    # example 0 lands in each batch position with probability 1 / nb
    lo, hi = _binom_interval(epochs, 1 / nb, ALPHA / nb)
    for j in range(nb):
        assert lo <= np.sum(position[:, 0] == j) <= hi
    # a fresh permutation each epoch: same position in consecutive epochs w.p. 1 / nb
    same = int(np.sum(position[1:, 0] == position[:-1, 0]))
    lo, hi = _binom_interval(epochs - 1, 1 / nb, ALPHA)
    assert lo <= same <= hi
    # examples 0 and 1 share a batch with probability (b - 1) / (n - 1)
    together = int(np.sum(position[:, 0] == position[:, 1]))
    lo, hi = _binom_interval(epochs, (b - 1) / (n - 1), ALPHA)
    assert lo <= together <= hi


def test_deterministic_batches_are_fixed():
    s = DeterministicBatchSampler(4, 12, epochs=2)
    assert s.scheme == pa.Deterministic(4, 12) and s.steps == 6
    expected = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert list(s) == expected
    assert list(s) == expected  # same again


@pytest.mark.parametrize("steps,k", [(5, 2), (4, 1)])
def test_balanced_iteration_exact_balance_and_uniform_subsets(steps, k):
    n, epochs = 300, 20
    s = BalancedIterationSampler(n, steps, k, epochs, seed=4)
    assert s.scheme == pa.BalancedIteration(steps, k)
    assert s.steps == steps * epochs and len(s) == steps
    batches = [x for _ in range(epochs) for x in s]
    assert len(batches) == steps * epochs
    subsets: Counter[tuple[int, ...]] = Counter()
    same_pairs = 0  # disjoint pairs (2j, 2j+1) with the same k-subset in an epoch
    for e in range(epochs):
        ep = batches[e * steps : (e + 1) * steps]
        member = np.zeros((steps, n), dtype=bool)  # fine in a test: the sampler never does this
        for t, x in enumerate(ep):
            assert len(set(x)) == len(x)
            member[t, x] = True
        assert np.all(member.sum(axis=0) == k)  # every example exactly k times per epoch
        for i in range(n):
            subsets[tuple(np.flatnonzero(member[:, i]))] += 1
        same_pairs += int(np.sum(np.all(member[:, 0::2] == member[:, 1::2], axis=0)))
    # the k-subset of each example is uniform over the C(steps, k) subsets
    all_subsets = list(combinations(range(steps), k))
    observed = np.array([subsets[a] for a in all_subsets])
    assert observed.sum() == n * epochs
    expected = np.full(len(all_subsets), n * epochs / math.comb(steps, k))
    p = stats.chisquare(observed, expected).pvalue
    assert p > ALPHA
    # examples choose independently: two share their subset w.p. 1 / C(steps, k)
    lo, hi = _binom_interval(epochs * n // 2, 1 / math.comb(steps, k), ALPHA)
    assert lo <= same_pairs <= hi
    # mean batch size n k / steps
    sizes = np.array([len(x) for x in batches])
    assert sizes.sum() == n * k * epochs
    assert s.expected_batch_size == pytest.approx(n * k / steps)


@pytest.mark.parametrize(
    "make",
    [
        lambda seed: PoissonBatchSampler(30, 0.2, 7, seed=seed),
        lambda seed: WithoutReplacementBatchSampler(5, 30, 7, seed=seed),
        lambda seed: ShuffleBatchSampler(5, 30, 2, seed=seed),
        lambda seed: ShuffleBatchSampler(7, 30, drop_last=True, seed=seed),
        lambda seed: BalancedIterationSampler(30, 6, 2, 2, seed=seed),
    ],
)
def test_reproducible_under_a_seed(make):
    a, b, c = make(11), make(11), make(12)
    first = list(a)
    assert first == list(b)
    assert first != list(c)
    assert list(a) != first  # iterating again draws the next epoch
    g = make(None)  # OS entropy: still a valid run
    assert len(list(g)) == g.steps_per_epoch


def test_generator_argument_and_errors():
    rng = np.random.default_rng(5)
    s = PoissonBatchSampler(10, 0.5, 3, generator=rng)
    assert len(list(s)) == 3
    with pytest.raises(ValueError, match="seed and generator"):
        PoissonBatchSampler(10, 0.5, 3, seed=1, generator=np.random.default_rng(1))
    with pytest.raises(ValueError, match="rate"):
        PoissonBatchSampler(10, 1.5, 3)
    with pytest.raises(ValueError, match="batch_size must be in"):
        ShuffleBatchSampler(11, 10)
    with pytest.raises(ValueError, match="participations"):
        BalancedIterationSampler(10, 3, 4)
    with pytest.raises(ValueError, match="steps"):
        WithoutReplacementBatchSampler(3, 10, 0)
    with pytest.raises(ValueError, match="seed must be given"):
        ShuffleBatchSampler(3, 10, rank=0, world_size=2)
    with pytest.raises(ValueError, match="rank"):
        PoissonBatchSampler(10, 0.5, seed=0, rank=2, world_size=2)


def test_training_uses_the_sampler_scheme():
    s = ShuffleBatchSampler(10, 100, epochs=3, seed=0)
    run = s.training(pa.Gaussian(1.0))
    assert run.scheme == pa.Shuffle(10, 100) and run.steps == 30
    assert run.relation == pa.ZeroOut()  # the scheme's default: layouts shift under add/remove
    assert s.training(pa.Gaussian(1.0), epochs=5).steps == 50


def test_scheme_of_standard_and_opacus_loaders():
    import torch
    from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

    from privamp.integrations.torch import scheme_of

    ds = TensorDataset(torch.arange(24.0))
    assert scheme_of(DataLoader(ds, batch_size=6, shuffle=True)) == pa.Shuffle(6, 24)
    assert scheme_of(DataLoader(ds, batch_size=6)) == pa.Deterministic(6, 24)
    with_repl = BatchSampler(RandomSampler(ds, replacement=True), 4, drop_last=False)
    assert scheme_of(DataLoader(ds, batch_sampler=with_repl)) == pa.WithReplacement(4, 24)
    own = ShuffleBatchSampler(4, 24, seed=0)
    assert scheme_of(DataLoader(ds, batch_sampler=own)) == pa.Shuffle(4, 24)
    assert scheme_of(DataLoader(ds, batch_size=5, shuffle=True)) == pa.Shuffle(5, 24)
    assert scheme_of(DataLoader(ds, batch_size=5, shuffle=True, drop_last=True)) == \
        pa.Shuffle(5, 24, drop_last=True)
    with pytest.raises(ValueError, match="batch_sampler"):
        scheme_of(DataLoader(ds, batch_size=None))
    opacus_dl = pytest.importorskip("opacus.data_loader")
    dp = opacus_dl.DPDataLoader.from_data_loader(DataLoader(ds, batch_size=6))
    assert scheme_of(dp) == pa.Poisson(0.25)
