"""PyTorch batch samplers that know which privamp scheme they realise.

Each sampler is a ``torch.utils.data.Sampler`` yielding lists of dataset indices, one list per
training step, to be passed as ``DataLoader(dataset, batch_sampler=sampler)``.  Each exposes

* ``.scheme`` — the :class:`privamp.Scheme` whose law it draws from, so that the accounting
  is computed for the sampler that is actually used (``sampler.training(mechanism)``);
* ``.steps`` — the number of batches one pass over the sampler yields (the planned run:
  ``epochs`` epochs for the epoch-based samplers); ``len(sampler) == sampler.steps``;
* ``.expected_batch_size`` — the mean batch size (for averaging clipped gradients).

Randomness comes from a NumPy ``Generator`` (``seed=`` or ``generator=``): two samplers built
with the same seed yield the same batches; iterating one sampler again continues its stream
(fresh batches, fresh permutations).

Memory: Poisson and without-replacement batches cost O(batch) per step (the batch size is
drawn first, then a uniform subset of that size; NumPy draws small subsets with Floyd's
hash-set method); shuffle costs one permutation, O(n), per epoch; balanced iteration keeps
one counter per example, O(n), and never a T x n participation mask.

This module needs PyTorch (``pip install "privamp[torch]"``); ``import privamp`` does not
import it.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .._validation import check_int, check_rate
from ..accounting.training import Training
from ..mechanisms.base import Mechanism
from ..sampling.relations import AddRemove, Relation
from ..sampling.schemes import (
    BalancedIteration,
    BallsInBins,
    Deterministic,
    Poisson,
    Scheme,
    Shuffle,
    WithoutReplacement,
    WithReplacement,
)

__all__ = [
    "scheme_of",
    "PrivampBatchSampler",
    "PoissonBatchSampler",
    "WithoutReplacementBatchSampler",
    "ShuffleBatchSampler",
    "DeterministicBatchSampler",
    "BalancedIterationSampler",
    "BallsInBinsSampler",
]


try:
    import torch  # noqa: F401
    from torch.utils.data import Sampler
except ImportError as exc:  # pragma: no cover - exercised only without torch
    raise ImportError(
        "privamp.integrations.torch needs PyTorch; install it with "
        "`pip install \"privamp[torch]\"` "
        "(or `pip install torch`)"
    ) from exc


def _rng(seed: int | None, generator: np.random.Generator | None) -> np.random.Generator:
    if generator is not None:
        if seed is not None:
            raise ValueError("give at most one of seed and generator")
        if not isinstance(generator, np.random.Generator):
            raise ValueError(
                f"generator must be a numpy.random.Generator, got {type(generator).__name__}"
            )
        return generator
    if seed is not None:
        check_int("seed", seed, minimum=0)
    return np.random.default_rng(seed)


class PrivampBatchSampler(Sampler[list[int]]):
    """Base class: a batch sampler with a privamp ``scheme`` and a planned number of ``steps``."""

    scheme: Scheme
    steps: int
    dataset_size: int

    def __init__(self) -> None:  # torch's Sampler takes no data source here
        super().__init__()

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[list[int]]:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def expected_batch_size(self) -> float:
        """Mean number of examples in a batch: ``scheme.rate * dataset_size``."""
        return self.scheme.rate * self.dataset_size

    def training(self, mechanism: Mechanism, relation: Relation | None = None) -> Training:
        """The privamp run this sampler realises: ``Training(mechanism, self.scheme,
        steps=self.steps, relation)`` (add/remove by default)."""
        return Training(
            mechanism, self.scheme, steps=self.steps, relation=relation or AddRemove()
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(scheme={self.scheme}, steps={self.steps})"


class PoissonBatchSampler(PrivampBatchSampler):
    """Poisson sampling: at each of ``steps`` steps every example joins the batch independently
    with probability ``rate`` (the sampler assumed by DP-SGD's moments accountant, Abadi et al.
    2016; privamp scheme :class:`privamp.Poisson`).

    The batch size is drawn from Binomial(n, rate), then a uniform subset of that size: the same
    law as n independent coin flips, at O(batch) memory.  Batches may be empty.
    """

    def __init__(
        self,
        dataset_size: int,
        rate: float,
        steps: int,
        *,
        seed: int | None = None,
        generator: np.random.Generator | None = None,
    ) -> None:
        super().__init__()
        self.dataset_size = check_int("dataset_size", dataset_size, minimum=1)
        self.scheme = Poisson(check_rate("rate", rate))
        self.steps = check_int("steps", steps, minimum=1)
        self._rng = _rng(seed, generator)

    def __iter__(self) -> Iterator[list[int]]:
        n, q, rng = self.dataset_size, self.scheme.rate, self._rng
        for _ in range(self.steps):
            m = int(rng.binomial(n, q))
            yield rng.choice(n, size=m, replace=False).tolist()


class WithoutReplacementBatchSampler(PrivampBatchSampler):
    """Fixed-size sampling without replacement: each of ``steps`` steps draws a uniformly random
    set of ``batch_size`` distinct examples, independently of the other steps (privamp scheme
    :class:`privamp.WithoutReplacement`; Balle et al. 2018 Thm 9)."""

    def __init__(
        self,
        batch_size: int,
        dataset_size: int,
        steps: int,
        *,
        seed: int | None = None,
        generator: np.random.Generator | None = None,
    ) -> None:
        super().__init__()
        self.scheme = WithoutReplacement(batch_size, dataset_size)
        self.dataset_size = self.scheme.dataset_size
        self.steps = check_int("steps", steps, minimum=1)
        self._rng = _rng(seed, generator)

    def __iter__(self) -> Iterator[list[int]]:
        b, n, rng = self.scheme.batch_size, self.dataset_size, self._rng
        for _ in range(self.steps):
            yield rng.choice(n, size=b, replace=False).tolist()


class _EpochSampler(PrivampBatchSampler):
    def _setup_epochs(self, epochs: int, steps_per_epoch: int) -> None:
        self.epochs = check_int("epochs", epochs, minimum=1)
        self.steps_per_epoch = int(steps_per_epoch)
        self.steps = self.epochs * self.steps_per_epoch


class ShuffleBatchSampler(_EpochSampler):
    """Shuffling: every epoch a fresh uniformly random permutation of the ``dataset_size``
    examples is cut into consecutive batches of ``batch_size`` (Chua et al. 2024, ABLQ_S;
    privamp scheme :class:`privamp.Shuffle`).  ``batch_size`` must divide ``dataset_size``."""

    def __init__(
        self,
        batch_size: int,
        dataset_size: int,
        epochs: int = 1,
        *,
        seed: int | None = None,
        generator: np.random.Generator | None = None,
    ) -> None:
        super().__init__()
        self.scheme = Shuffle(batch_size, dataset_size)
        self.dataset_size = self.scheme.dataset_size
        self._setup_epochs(epochs, self.scheme.steps_per_epoch)
        self._rng = _rng(seed, generator)

    def __iter__(self) -> Iterator[list[int]]:
        b, n = self.scheme.batch_size, self.dataset_size
        for _ in range(self.epochs):
            perm = self._rng.permutation(n)
            for start in range(0, n, b):
                yield perm[start : start + b].tolist()


class DeterministicBatchSampler(_EpochSampler):
    """Deterministic batches: the examples are cut into the consecutive batches
    ``[0, b), [b, 2b), ...``, in the same order every epoch (Chua et al. 2024, ABLQ_D; privamp
    scheme :class:`privamp.Deterministic`).  ``batch_size`` must divide ``dataset_size``.

    Shuffle the dataset once beforehand if its order carries information; the order must not
    depend on the data."""

    def __init__(self, batch_size: int, dataset_size: int, epochs: int = 1) -> None:
        super().__init__()
        self.scheme = Deterministic(batch_size, dataset_size)
        self.dataset_size = self.scheme.dataset_size
        self._setup_epochs(epochs, self.scheme.steps_per_epoch)

    def __iter__(self) -> Iterator[list[int]]:
        b, n = self.scheme.batch_size, self.dataset_size
        for _ in range(self.epochs):
            for start in range(0, n, b):
                yield list(range(start, start + b))


class BalancedIterationSampler(_EpochSampler):
    """Balanced Iteration Subsampling (Dong, Chen, Ozgur 2025, Sec. 3.3, Thm 3.8): in each
    epoch of ``steps`` steps every example takes part in exactly ``participations`` steps, the
    set of its steps drawn uniformly among the C(steps, participations) subsets, independently
    across examples and epochs (privamp scheme :class:`privamp.BalancedIteration`).

    The subsets are drawn sequentially (selection sampling): at step t an example that still
    needs r participations joins with probability r / (steps - t).  This gives exactly the
    uniform law on k-subsets, with one small counter per example (O(n) memory, never a
    steps x n mask); each step costs O(n) time.
    """

    def __init__(
        self,
        dataset_size: int,
        steps: int,
        participations: int = 1,
        epochs: int = 1,
        *,
        seed: int | None = None,
        generator: np.random.Generator | None = None,
    ) -> None:
        super().__init__()
        self.dataset_size = check_int("dataset_size", dataset_size, minimum=1)
        self.scheme = BalancedIteration(steps, participations)
        self._setup_epochs(epochs, self.scheme.steps)
        self._rng = _rng(seed, generator)

    def __iter__(self) -> Iterator[list[int]]:
        n, rng = self.dataset_size, self._rng
        t_total, k = self.scheme.steps, self.scheme.participations
        dtype = np.int32 if k > np.iinfo(np.int16).max else np.int16
        for _ in range(self.epochs):
            remaining = np.full(n, k, dtype=dtype)
            for t in range(t_total):
                left = t_total - t
                # join with probability remaining / left (certain once remaining == left)
                chosen = np.flatnonzero(rng.integers(0, left, size=n) < remaining)
                remaining[chosen] -= 1
                yield chosen.tolist()


def scheme_of(data_loader: object) -> Scheme:
    """The privamp scheme that a PyTorch ``DataLoader`` samples its batches from.

    Recognises a privamp batch sampler (its ``.scheme``); Opacus's Poisson loader
    (``UniformWithReplacementSampler``: ``Poisson(sample_rate)``); and the standard loaders
    ``DataLoader(ds, batch_size=b, shuffle=True)`` (``Shuffle(b, n)``, a fresh permutation per
    epoch, Chua et al. 2024 ABLQ_S), ``shuffle=False`` (``Deterministic(b, n)``, ABLQ_D) and a
    ``RandomSampler(replacement=True)`` (``WithReplacement(b, n)``: b independent uniform
    draws per batch).  For the standard loaders ``b`` must divide the number of examples drawn
    per epoch (otherwise the last batch is smaller, or dropped, and the run is none of these
    schemes).  Anything else raises ``ValueError`` naming the sampler.
    """
    from torch.utils.data import BatchSampler, RandomSampler, SequentialSampler

    bs = getattr(data_loader, "batch_sampler", None)
    if bs is None:
        raise ValueError(
            "data_loader must batch its data (a batch_sampler); got a loader without one "
            f"({type(data_loader).__name__})"
        )
    scheme = getattr(bs, "scheme", None)
    if isinstance(scheme, Scheme):
        return scheme
    kind = type(bs).__name__
    if kind == "UniformWithReplacementSampler" and hasattr(bs, "sample_rate"):
        return Poisson(float(bs.sample_rate))
    if type(bs) is not BatchSampler:
        raise ValueError(f"privamp does not know the law of the batch sampler {kind}")
    b, inner = int(bs.batch_size), bs.sampler
    n = len(data_loader.dataset)
    if type(inner) is SequentialSampler:
        if n % b:
            raise ValueError(
                f"sequential batches of {b} from {n} examples leave a partial batch; "
                "privamp's Deterministic scheme needs batch_size to divide the dataset size"
            )
        return Deterministic(b, n)
    if type(inner) is RandomSampler:
        drawn = inner.num_samples
        if drawn % b:
            raise ValueError(
                f"{drawn} draws per epoch in batches of {b} leave a partial batch "
                f"(drop_last={bs.drop_last}; dropping drops a random {drawn % b} examples "
                f"each epoch, which is not pa.Shuffle); choose a batch size that divides {drawn}"
            )
        if inner.replacement:
            return WithReplacement(b, n)
        if drawn != n:
            raise ValueError(
                f"RandomSampler without replacement drawing {drawn} of {n} examples per "
                "epoch is not a privamp scheme"
            )
        return Shuffle(b, n)
    raise ValueError(
        f"privamp does not know the law of the sampler {type(inner).__name__} inside the "
        "BatchSampler"
    )



class BallsInBinsSampler(_EpochSampler):
    """Balls-in-bins batching (Chua et al. 2025, arXiv:2412.16802; privamp scheme
    :class:`privamp.BallsInBins`): every epoch each of the ``dataset_size`` examples is put
    in one of the ``batches`` batches uniformly at random, independently of the others, so
    batch sizes are binomial(dataset_size, 1 / batches).  For the accounting this is random
    allocation 1-of-``batches`` per epoch (Balanced Iteration with one participation).
    Each epoch costs O(dataset_size) time and memory (one bin index per example)."""

    def __init__(
        self,
        dataset_size: int,
        batches: int,
        epochs: int = 1,
        *,
        seed: int | None = None,
        generator: np.random.Generator | None = None,
    ) -> None:
        super().__init__()
        self.dataset_size = check_int("dataset_size", dataset_size, minimum=1)
        self.scheme = BallsInBins(batches)
        self._setup_epochs(epochs, self.scheme.steps)
        self._rng = _rng(seed, generator)

    def __iter__(self) -> Iterator[list[int]]:
        n, m = self.dataset_size, self.scheme.steps
        for _ in range(self.epochs):
            bins = self._rng.integers(0, m, size=n)
            order = np.argsort(bins, kind="stable")
            cuts = np.searchsorted(bins[order], np.arange(1, m))
            for part in np.split(order, cuts):
                yield part.tolist()
