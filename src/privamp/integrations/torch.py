"""PyTorch batch samplers that know which privamp scheme they realise.

Each sampler is a ``torch.utils.data.Sampler`` yielding lists of dataset indices, one list per
training step, to be passed as ``DataLoader(dataset, batch_sampler=sampler)``.  They behave
like PyTorch's samplers:

* one ``iter()`` (one ``for x, y in loader``) is ONE epoch; ``len(sampler)`` is the number of
  batches in it (``steps_per_epoch``).  For the samplers whose steps are independent
  (Poisson, truncated Poisson, fixed-size without replacement) an "epoch" is
  ``round(1 / rate)`` steps (``round(n / b)``) unless ``steps_per_epoch=`` says otherwise;
* ``set_epoch(e)`` as in ``DistributedSampler``: epoch ``e``'s batches are a function of
  ``(seed, e)`` only, so a resumed run continues the same law.  Without ``set_epoch`` every
  ``iter()`` draws the next epoch (fresh batches: no need to call it);
* the planned run length is ``epochs=`` (optional) and lives in the accounting:
  ``sampler.training(mechanism)`` accounts for ``max(planned epochs, epochs drawn)``.  Drawing
  more epochs than planned is counted in ``sampler.epochs_drawn`` and logged as a warning
  (logger ``"privamp"``); an epoch index drawn twice by a sampler with fresh randomness per
  epoch (the same batches again) makes ``training()`` refuse;
* ``state_dict()`` / ``load_state_dict()`` save and restore seed and epoch counters.

Each sampler exposes ``.scheme`` (the :class:`privamp.Scheme` of the GLOBAL batches),
``.steps_per_epoch`` and ``.expected_batch_size``.

Distributed data parallel: ``rank=r, world_size=W`` (and the same ``seed`` on every rank)
makes every rank draw the same global batch and yield its share ``batch[r::W]``, so that the
union of the ranks' t-th batches is the accounted global batch (``batch_size`` is the global
batch size).  See :mod:`privamp.integrations.loaders` for ``DistributedSampler``.

Memory: Poisson and without-replacement batches cost O(batch) per step; shuffle one
permutation, O(n), per epoch; balanced iteration and balls-in-bins O(n) per epoch.

This module needs PyTorch (``pip install "privamp[torch]"``); ``import privamp`` does not
import it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, cast

import numpy as np

from .._validation import check_int, check_rate
from ..accounting.training import Training
from ..mechanisms.base import Mechanism
from ..sampling.relations import Relation
from ..sampling.schemes import (
    BalancedIteration,
    BallsInBins,
    Deterministic,
    PersistentBallsInBins,
    Poisson,
    Scheme,
    Shuffle,
    TruncatedPoisson,
    WithoutReplacement,
)
from .loaders import accumulated, scheme_of

__all__ = [
    "scheme_of",
    "accumulated",
    "PrivampBatchSampler",
    "PoissonBatchSampler",
    "TruncatedPoissonBatchSampler",
    "WithoutReplacementBatchSampler",
    "ShuffleBatchSampler",
    "DeterministicBatchSampler",
    "BalancedIterationSampler",
    "BallsInBinsSampler",
    "PersistentBallsInBinsSampler",
]

try:
    import torch  # noqa: F401
    from torch.utils.data import Sampler
except ImportError as exc:  # pragma: no cover - exercised only without torch
    raise ImportError(
        "privamp.integrations.torch needs PyTorch; install it with "
        "`pip install \"privamp[torch]\"` (or `pip install torch`)"
    ) from exc

logger = logging.getLogger("privamp")


def _base_seed(seed: int | None, generator: np.random.Generator | None) -> int:
    """The sampler's base seed: ``seed``, one drawn from ``generator``, or OS entropy."""
    if generator is not None:
        if seed is not None:
            raise ValueError("give at most one of seed and generator")
        if not isinstance(generator, np.random.Generator):
            raise ValueError(
                f"generator must be a numpy.random.Generator, got {type(generator).__name__}"
            )
        return int(generator.integers(0, 2**63))
    if seed is not None:
        return check_int("seed", seed, minimum=0)
    return int(cast(int, np.random.SeedSequence().entropy) % 2**63)


class PrivampBatchSampler(Sampler[list[int]]):
    """Base class: a batch sampler with a privamp ``scheme``; one ``iter()`` is one epoch.

    Subclasses define ``_epoch(rng)`` (the global batches of one epoch) and set ``scheme``,
    ``dataset_size``, ``steps_per_epoch``; ``fresh`` says whether each epoch draws new
    randomness (then an epoch index must not be drawn twice)."""

    scheme: Scheme
    dataset_size: int
    steps_per_epoch: int
    fresh = True

    def __init__(self, epochs: int | None, seed: int | None,
                 generator: np.random.Generator | None, rank: int, world_size: int) -> None:
        super().__init__()
        self.epochs = None if epochs is None else check_int("epochs", epochs, minimum=1)
        self.world_size = check_int("world_size", world_size, minimum=1)
        self.rank = check_int("rank", rank, minimum=0, maximum=self.world_size - 1)
        if self.world_size > 1 and seed is None and self.fresh:
            raise ValueError(
                "seed must be given (the same on every rank) when world_size > 1: the ranks "
                "must draw the same global batches"
            )
        self.seed = _base_seed(seed, generator)
        self.epoch = 0
        self.epochs_drawn = 0
        self._drawn: set[int] = set()
        self._repeated: set[int] = set()

    # ---- PyTorch interface --------------------------------------------------------------
    def __len__(self) -> int:
        return self.steps_per_epoch

    def __iter__(self) -> Iterator[list[int]]:
        e = self.epoch
        self.epoch = e + 1
        self.epochs_drawn += 1
        if self.fresh and e in self._drawn:
            self._repeated.add(e)
            logger.warning(
                "%s: epoch %d drawn again (the same batches twice); the run is no longer %s "
                "and training() will refuse it; call set_epoch with a new epoch",
                type(self).__name__, e, self.scheme,
            )
        self._drawn.add(e)
        if self.epochs is not None and self.epochs_drawn > self.epochs:
            logger.warning(
                "%s: %d epochs drawn, %d planned; the accounting (training()) follows the "
                "%d epochs drawn", type(self).__name__, self.epochs_drawn, self.epochs,
                self.epochs_drawn,
            )
        rng = np.random.default_rng([self.seed, e] if self.fresh else [self.seed])
        r, w = self.rank, self.world_size
        for batch in self._epoch(rng):
            yield batch[r::w].tolist() if w > 1 else batch.tolist()

    def _epoch(self, rng: np.random.Generator) -> Iterator[np.ndarray]:  # pragma: no cover
        raise NotImplementedError

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter()`` draw epoch ``epoch`` (as ``DistributedSampler.set_epoch``):
        its batches are a function of ``(seed, epoch)``.  Raises ``ValueError`` for a
        negative epoch."""
        self.epoch = check_int("epoch", epoch, minimum=0)

    def state_dict(self) -> dict[str, Any]:
        """Seed, next epoch, epochs drawn (and which), and the scheme's repr (checked on
        load); plain Python values."""
        return {"scheme": repr(self.scheme), "seed": self.seed, "epoch": self.epoch,
                "epochs_drawn": self.epochs_drawn, "drawn": sorted(self._drawn),
                "repeated": sorted(self._repeated), "rank": self.rank,
                "world_size": self.world_size}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict` saved by a sampler of the same scheme and world
        size.  Raises ``ValueError`` naming the field that differs."""
        for key in ("scheme", "world_size"):
            mine = repr(self.scheme) if key == "scheme" else self.world_size
            if state.get(key) != mine:
                raise ValueError(f"state_dict {key} is {state.get(key)!r} but this sampler "
                                 f"has {mine!r}")
        self.seed = int(state["seed"])
        self.epoch = int(state["epoch"])
        self.epochs_drawn = int(state["epochs_drawn"])
        self._drawn = {int(e) for e in state["drawn"]}
        self._repeated = {int(e) for e in state["repeated"]}

    # ---- privamp ------------------------------------------------------------------------
    @property
    def steps(self) -> int:
        """Steps of the planned run: ``epochs * steps_per_epoch`` (one epoch if no plan)."""
        return (self.epochs or 1) * self.steps_per_epoch

    @property
    def expected_batch_size(self) -> float:
        """Mean number of examples in a global batch."""
        return self.scheme.rate * self.dataset_size  # type: ignore[attr-defined]  # all samplers' schemes have a rate

    def training(self, mechanism: Mechanism, relation: Relation | None = None,
                 epochs: int | None = None) -> Training:
        """The privamp run this sampler realises: ``Training(mechanism, self.scheme, steps=
        E * steps_per_epoch, relation)`` (add/remove by default) for ``E`` = the largest of
        ``epochs`` (default: the planned ``epochs``) and ``epochs_drawn``.

        Raises:
            ValueError: no epoch planned, asked or drawn; or an epoch index was drawn twice by
                a sampler with fresh randomness per epoch (its batches repeated).
        """
        if self._repeated:
            raise ValueError(
                f"epochs {sorted(self._repeated)} were drawn twice with the same batches, "
                f"which is not {self.scheme}; give every epoch a new set_epoch value"
            )
        asked = self.epochs if epochs is None else check_int("epochs", epochs, minimum=1)
        e = max(asked or 0, self.epochs_drawn)
        if e == 0:
            raise ValueError("epochs must be given (no epoch planned or drawn yet)")
        # relation None: Training takes the scheme's default
        return Training(mechanism, self.scheme, steps=e * self.steps_per_epoch,
                        relation=cast(Relation, relation))

    def __repr__(self) -> str:
        ddp = f", rank={self.rank}, world_size={self.world_size}" if self.world_size > 1 else ""
        return f"{type(self).__name__}(scheme={self.scheme}, epochs={self.epochs}{ddp})"


def _per_epoch(value: int | None, default: float) -> int:
    if value is None:
        return max(1, int(round(default)))
    return check_int("steps_per_epoch", value, minimum=1)


class PoissonBatchSampler(PrivampBatchSampler):
    """Poisson sampling: at each step every example joins the batch independently with
    probability ``rate`` (Abadi et al. 2016; privamp scheme :class:`privamp.Poisson`).

    One epoch is ``steps_per_epoch`` steps (default ``round(1 / rate)``).  The batch size is
    drawn from Binomial(n, rate), then a uniform subset of that size: the law of n
    independent coin flips at O(batch) memory.  Batches may be empty."""

    scheme: Poisson | TruncatedPoisson  # (TruncatedPoisson: the subclass below)

    def __init__(self, dataset_size: int, rate: float, steps_per_epoch: int | None = None, *,
                 epochs: int | None = None, seed: int | None = None,
                 generator: np.random.Generator | None = None, rank: int = 0,
                 world_size: int = 1) -> None:
        self.dataset_size = check_int("dataset_size", dataset_size, minimum=1)
        q = check_rate("rate", rate)
        if q == 0:
            raise ValueError("rate must be in (0, 1], got 0")
        self.scheme = Poisson(q)
        self.steps_per_epoch = _per_epoch(steps_per_epoch, 1 / q)
        super().__init__(epochs, seed, generator, rank, world_size)

    def _size(self, rng: np.random.Generator) -> int:
        return int(rng.binomial(self.dataset_size, self.scheme.rate))

    def _epoch(self, rng: np.random.Generator) -> Iterator[np.ndarray]:
        for _ in range(self.steps_per_epoch):
            yield rng.choice(self.dataset_size, size=self._size(rng), replace=False)


class TruncatedPoissonBatchSampler(PoissonBatchSampler):
    """Truncated Poisson sampling (privamp scheme :class:`privamp.TruncatedPoisson`): a
    Poisson batch at ``rate`` cut to a uniformly random ``max_batch_size`` of its examples
    when larger (dp-accounting's ``TruncatedSubsampledGaussianDpEvent``).  One epoch is
    ``steps_per_epoch`` steps (default ``round(1 / rate)``)."""

    scheme: TruncatedPoisson

    def __init__(self, dataset_size: int, rate: float, max_batch_size: int,
                 steps_per_epoch: int | None = None, **kwargs: Any) -> None:
        super().__init__(dataset_size, rate, steps_per_epoch, **kwargs)
        self.scheme = TruncatedPoisson(rate, max_batch_size, self.dataset_size)

    def _size(self, rng: np.random.Generator) -> int:
        # a uniform subset of a Poisson batch is a uniform subset of the data of that size
        return min(super()._size(rng), self.scheme.max_batch_size)

    @property
    def expected_batch_size(self) -> float:
        """Mean batch size E[min(Binomial(n, rate), max_batch_size)]."""
        from scipy.stats import binom

        n, q, m = self.dataset_size, self.scheme.rate, self.scheme.max_batch_size
        k = np.arange(m)
        return float(m - np.sum(binom.cdf(k, n, q)))


class WithoutReplacementBatchSampler(PrivampBatchSampler):
    """Fixed-size sampling without replacement: each step draws a uniformly random set of
    ``batch_size`` distinct examples, independently of the other steps (privamp scheme
    :class:`privamp.WithoutReplacement`; Balle et al. 2018 Thm 9).  One epoch is
    ``steps_per_epoch`` steps (default ``round(dataset_size / batch_size)``)."""

    scheme: WithoutReplacement

    def __init__(self, batch_size: int, dataset_size: int, steps_per_epoch: int | None = None,
                 *, epochs: int | None = None, seed: int | None = None,
                 generator: np.random.Generator | None = None, rank: int = 0,
                 world_size: int = 1) -> None:
        self.scheme = WithoutReplacement(batch_size, dataset_size)
        self.dataset_size = self.scheme.dataset_size
        self.steps_per_epoch = _per_epoch(steps_per_epoch, dataset_size / batch_size)
        super().__init__(epochs, seed, generator, rank, world_size)

    def _epoch(self, rng: np.random.Generator) -> Iterator[np.ndarray]:
        for _ in range(self.steps_per_epoch):
            yield rng.choice(self.dataset_size, size=self.scheme.batch_size, replace=False)


def _cut(order: np.ndarray, b: int, drop_last: bool) -> Iterator[np.ndarray]:
    n = len(order)
    stop = n - n % b if drop_last else n
    for start in range(0, stop, b):
        yield order[start : start + b]


class ShuffleBatchSampler(PrivampBatchSampler):
    """Shuffling (Chua et al. 2024, ABLQ_S; privamp scheme :class:`privamp.Shuffle`): a
    uniformly random permutation of the ``dataset_size`` examples cut into consecutive
    batches of ``batch_size``, as ``DataLoader(shuffle=True)``: the last batch is short
    (``drop_last=False``) or dropped (``drop_last=True``) when ``batch_size`` does not divide
    ``dataset_size``.  A fresh permutation every epoch, or (``persistent=True``) one drawn
    from the seed and kept for the whole run (``set_epoch`` then changes nothing)."""

    scheme: Shuffle

    def __init__(self, batch_size: int, dataset_size: int, epochs: int | None = None, *,
                 drop_last: bool = False, persistent: bool = False, seed: int | None = None,
                 generator: np.random.Generator | None = None, rank: int = 0,
                 world_size: int = 1) -> None:
        self.scheme = Shuffle(batch_size, dataset_size, drop_last=drop_last,
                              persistent=persistent)
        self.dataset_size = self.scheme.dataset_size
        self.steps_per_epoch = self.scheme.steps_per_epoch
        self.fresh = not persistent
        if world_size > 1 and seed is None:
            raise ValueError("seed must be given (the same on every rank) when world_size > 1")
        super().__init__(epochs, seed, generator, rank, world_size)

    def _epoch(self, rng: np.random.Generator) -> Iterator[np.ndarray]:
        yield from _cut(rng.permutation(self.dataset_size), self.scheme.batch_size,
                        self.scheme.drop_last)


class DeterministicBatchSampler(PrivampBatchSampler):
    """Deterministic batches (Chua et al. 2024, ABLQ_D; privamp scheme
    :class:`privamp.Deterministic`): ``[0, b), [b, 2b), ...`` in the same order every epoch,
    the short last batch kept (``drop_last=False``) or dropped (``drop_last=True``).  Shuffle
    the dataset once beforehand if its order carries information."""

    fresh = False

    scheme: Deterministic

    def __init__(self, batch_size: int, dataset_size: int, epochs: int | None = None, *,
                 drop_last: bool = False, rank: int = 0, world_size: int = 1) -> None:
        self.scheme = Deterministic(batch_size, dataset_size, drop_last=drop_last)
        self.dataset_size = self.scheme.dataset_size
        self.steps_per_epoch = self.scheme.steps_per_epoch
        super().__init__(epochs, 0, None, rank, world_size)

    def _epoch(self, rng: np.random.Generator) -> Iterator[np.ndarray]:
        yield from _cut(np.arange(self.dataset_size), self.scheme.batch_size,
                        self.scheme.drop_last)


class BalancedIterationSampler(PrivampBatchSampler):
    """Balanced Iteration Subsampling (Dong, Chen, Ozgur 2025, Sec. 3.3, Thm 3.8): in each
    epoch of ``steps`` steps every example takes part in exactly ``participations`` steps,
    drawn uniformly among the C(steps, participations) subsets, independently across
    examples and epochs (privamp scheme :class:`privamp.BalancedIteration`).

    Drawn sequentially (selection sampling): at step t an example that still needs r
    participations joins with probability r / (steps - t), exactly the uniform law on
    k-subsets, with one counter per example (O(n) memory, never a steps x n mask)."""

    scheme: BalancedIteration

    def __init__(self, dataset_size: int, steps: int, participations: int = 1,
                 epochs: int | None = None, *, seed: int | None = None,
                 generator: np.random.Generator | None = None, rank: int = 0,
                 world_size: int = 1) -> None:
        self.dataset_size = check_int("dataset_size", dataset_size, minimum=1)
        self.scheme = BalancedIteration(steps, participations)
        self.steps_per_epoch = self.scheme.steps
        super().__init__(epochs, seed, generator, rank, world_size)

    def _epoch(self, rng: np.random.Generator) -> Iterator[np.ndarray]:
        n, t_total, k = self.dataset_size, self.scheme.steps, self.scheme.participations
        remaining = np.full(n, k, dtype=np.int32 if k > 32767 else np.int16)
        for t in range(t_total):
            chosen = np.flatnonzero(rng.integers(0, t_total - t, size=n) < remaining)
            remaining[chosen] -= 1
            yield chosen


def _bins(rng: np.random.Generator, n: int, m: int) -> Iterator[np.ndarray]:
    bins = rng.integers(0, m, size=n)
    order = np.argsort(bins, kind="stable")
    yield from np.split(order, np.searchsorted(bins[order], np.arange(1, m)))


class BallsInBinsSampler(PrivampBatchSampler):
    """Balls-in-bins batching (Chua et al. 2025, arXiv:2412.16802; privamp scheme
    :class:`privamp.BallsInBins`): every epoch each example is put in one of the ``batches``
    batches uniformly at random, independently (binomial batch sizes); a fresh bin every
    epoch.  O(dataset_size) time and memory per epoch."""

    scheme: BallsInBins

    def __init__(self, dataset_size: int, batches: int, epochs: int | None = None, *,
                 seed: int | None = None, generator: np.random.Generator | None = None,
                 rank: int = 0, world_size: int = 1) -> None:
        self.dataset_size = check_int("dataset_size", dataset_size, minimum=1)
        self.scheme = BallsInBins(batches)
        self.steps_per_epoch = self.scheme.steps
        super().__init__(epochs, seed, generator, rank, world_size)

    def _epoch(self, rng: np.random.Generator) -> Iterator[np.ndarray]:
        yield from _bins(rng, self.dataset_size, self.scheme.steps)


class PersistentBallsInBinsSampler(PrivampBatchSampler):
    """Balls-in-bins with the bin kept for the run (privamp scheme
    :class:`privamp.PersistentBallsInBins`, jax_privacy's cyclic ``BallsInBinsSampling``):
    each example's batch among ``batches`` is drawn once from the seed, and every epoch yields
    the same batches in the same order."""

    fresh = False

    scheme: PersistentBallsInBins

    def __init__(self, dataset_size: int, batches: int, epochs: int | None = None, *,
                 seed: int | None = None, generator: np.random.Generator | None = None,
                 rank: int = 0, world_size: int = 1) -> None:
        self.dataset_size = check_int("dataset_size", dataset_size, minimum=1)
        self.scheme = PersistentBallsInBins(batches)
        self.steps_per_epoch = self.scheme.batches
        if world_size > 1 and seed is None:
            raise ValueError("seed must be given (the same on every rank) when world_size > 1")
        super().__init__(epochs, seed, generator, rank, world_size)

    def _epoch(self, rng: np.random.Generator) -> Iterator[np.ndarray]:
        yield from _bins(rng, self.dataset_size, self.scheme.batches)
