"""Sampling schemes: how a training run picks the data (or the model part) each step touches.

Each scheme is a small immutable value, validated on construction.  ``steps_per_epoch`` says
how many steps make one pass over the data, so that ``Training(..., epochs=E)`` knows its
number of steps.

Each public scheme registers itself with ``@register_scheme(...)``
(:mod:`privamp.sampling.registry`): its ``--scheme`` name, a one-line summary, its
command-line flags and an example; the exports, ``privamp support`` and the command line read
the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._validation import check_int, check_rate
from .registry import Flag, register_scheme, scheme_names
from .relations import AddRemove, Relation, ZeroOut

# command-line flags shared by several schemes (see privamp.sampling.registry)
_BATCH = Flag("batch_size", "count", "examples per batch")
_DATASET = Flag("dataset_size", "count", "examples in the dataset")
_RATE = Flag("rate", "real", "sampling rate per step, in (0, 1]")
_DROP_LAST = Flag("drop_last", "switch", "drop the short last batch of each epoch "
                  "(PyTorch's DataLoader(drop_last=True))", required=False)
_PARTS = Flag("parts", "count", "number of submodels")
_BATCHES = Flag("batches", "count", "batches per epoch")



@dataclass(frozen=True)
class Scheme:
    """Base class of sampling schemes."""

    name = "scheme"
    #: True when one epoch is the unit of release that the analyses compose (each record's
    #: participation is fixed within an epoch: deterministic, shuffled, balanced batches)
    per_epoch = False

    @property
    def steps_per_epoch(self) -> float:
        """Steps that make one pass over the data."""
        raise NotImplementedError

    def default_relation(self, group: int = 1) -> Relation:
        """The neighbouring relation a run under this scheme protects when none is given:
        add/remove, except where the batch layout depends on the dataset's size (see
        :class:`Deterministic` and :class:`Shuffle`).

        Args:
            group: number of records in which the datasets differ.

        Returns:
            A relation with that group size.
        """
        return AddRemove(group=group)

    def max_participations(self, steps: int) -> int | None:
        """The most releases, over a run of ``steps`` steps, in which one record can take part
        whatever the sampler's randomness (None: no such bound, e.g. Poisson sampling, where a
        record may be in every batch, or a batch may hold a record several times).  The
        participation bound (:mod:`privamp.accountants.participation`) composes the
        unsampled mechanism that many times.

        Args:
            steps: the run's number of steps (>= 1).

        Returns:
            The largest participation count, or None when it is not bounded below ``steps``
            releases of the record at its own sensitivity.
        """
        return None


def _check_steps(steps: object) -> int:
    return check_int("steps", steps, minimum=1)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _positive_rate(value: object) -> float:
    """A sampling rate in (0, 1] (a scheme that samples nothing has no steps per epoch)."""
    r = check_rate("rate", value)
    if r == 0:
        raise ValueError("rate must be in (0, 1], got 0")
    return r


def _check_batch(
    batch_size: object, dataset_size: object, *, at_most_n: bool = True
) -> tuple[int, int]:
    n = check_int("dataset_size", dataset_size, minimum=1)
    b = check_int("batch_size", batch_size, minimum=1)
    if at_most_n and b > n:
        raise ValueError(f"batch_size must be in [1, dataset_size={n}], got {b}")
    return b, n


def _poisson_from_flags(values: Mapping[str, Any]) -> Poisson:
    """--rate, or --batch-size / --dataset-size (the expected batch over the dataset)."""
    rate, b, n = values.get("rate"), values.get("batch_size"), values.get("dataset_size")
    if rate is not None:
        return Poisson(rate)
    if b is not None and n is not None:
        if b > n:
            raise ValueError(f"--batch-size {b} must be at most --dataset-size {n} for a "
                             "Poisson rate")
        return Poisson(b / n)
    raise ValueError("--rate is required for --scheme poisson (or --batch-size and "
                     "--dataset-size)")


@register_scheme("each example in each batch independently with probability --rate",
                 example=(0.01,), from_flags=_poisson_from_flags,
                 flags=(Flag("rate", "real", "Poisson rate (default --batch-size / "
                             "--dataset-size)", required=False),
                        Flag("batch_size", "count", "expected batch size", required=False),
                        Flag("dataset_size", "count", "examples in the dataset",
                             required=False)))
@dataclass(frozen=True)
class Poisson(Scheme):
    """Each record joins each step's batch independently with probability ``rate``."""

    rate: float

    name = "poisson"

    def __post_init__(self) -> None:
        object.__setattr__(self, "rate", check_rate("rate", self.rate))

    @property
    def steps_per_epoch(self) -> float:
        if self.rate == 0:
            raise ValueError("rate must be in (0, 1] to count steps in epochs, got 0")
        return 1.0 / self.rate


@dataclass(frozen=True)
class _FixedBatch(Scheme):
    batch_size: int
    dataset_size: int

    def __post_init__(self) -> None:
        b, n = _check_batch(self.batch_size, self.dataset_size,
                            at_most_n=not isinstance(self, WithReplacement))
        object.__setattr__(self, "batch_size", b)
        object.__setattr__(self, "dataset_size", n)

    @property
    def rate(self) -> float:
        return self.batch_size / self.dataset_size

    @property
    def steps_per_epoch(self) -> float:
        return self.dataset_size / self.batch_size


@register_scheme("a fresh batch of --batch-size distinct examples each step",
                 example=(10, 1000), flags=(_BATCH, _DATASET))
@dataclass(frozen=True)
class WithoutReplacement(_FixedBatch):
    """Each step draws a uniformly random batch of ``batch_size`` distinct records, independently
    of the other steps."""

    name = "without-replacement"

    def max_participations(self, steps: int) -> int | None:
        """At most once per step (the batch's records are distinct): ``steps``.  (Under
        add/remove the other records' batches also change with the dataset's size; the
        participation bound refuses that relation.)"""
        return _check_steps(steps)


@register_scheme("--batch-size draws with replacement each step", example=(10, 1000),
                 flags=(_BATCH, _DATASET))
@dataclass(frozen=True)
class WithReplacement(_FixedBatch):
    """Each step draws ``batch_size`` records uniformly with replacement (a multiset),
    independently of the other steps; ``batch_size`` may exceed ``dataset_size``."""

    name = "with-replacement"


def _check_flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


@dataclass(frozen=True)
class _Partitioned(_FixedBatch):
    """Batches cut from an ordering of the ``dataset_size`` records, PyTorch's conventions:
    ``drop_last=False`` (PyTorch's default) ends each epoch with a short batch of
    ``dataset_size mod batch_size`` records; ``drop_last=True`` leaves those records out of
    the epoch (``floor(n / b)`` full batches)."""

    drop_last: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "drop_last", _check_flag("drop_last", self.drop_last))

    @property
    def divisible(self) -> bool:
        """True when ``batch_size`` divides ``dataset_size`` (no short batch, no sit-outs)."""
        return self.dataset_size % self.batch_size == 0

    @property
    def remainder(self) -> int:
        """``dataset_size mod batch_size``: the short batch's size (``drop_last=False``) or
        the number of records left out of each epoch (``drop_last=True``)."""
        return self.dataset_size % self.batch_size

    @property
    def steps_per_epoch(self) -> int:
        n, b = self.dataset_size, self.batch_size
        return n // b if self.drop_last else -(-n // b)

    def default_relation(self, group: int = 1) -> Relation:
        """Zero-out: batches cut from an ordering of the records are analysed under zero-out
        neighbours (one record replaced by one that contributes nothing; Chua et al. 2024,
        Sec. 2).  Under add/remove, adding or removing a record shifts every later record to
        another batch, and no accountant here applies."""
        return ZeroOut(group=group)

    def max_participations(self, steps: int) -> int | None:
        """At most one batch per epoch (whatever the ordering): ``ceil(steps /
        steps_per_epoch)``."""
        return _ceil_div(_check_steps(steps), self.steps_per_epoch)


@register_scheme("the same consecutive batches every epoch (--drop-last: no short batch)",
                 example=(10, 1000), flags=(_BATCH, _DATASET, _DROP_LAST))
@dataclass(frozen=True)
class Deterministic(_Partitioned):
    """The data are cut into fixed consecutive batches, the same order every epoch
    (Chua et al. 2024, ABLQ_D); ``drop_last`` as in PyTorch's ``DataLoader``.  Accountant
    ``ablq-deterministic``: exact for one record for every (n, b) and any number of steps (the
    first batch is released ceil(steps / steps_per_epoch) times)."""

    name = "deterministic"
    per_epoch = True


@register_scheme("a fresh random permutation every epoch (--persistent: one for the whole "
                 "run; --drop-last: no short batch)", example=(10, 1000),
                 flags=(_BATCH, _DATASET, _DROP_LAST,
                        Flag("persistent", "switch", "one permutation kept for the "
                             "whole run", required=False)))
@dataclass(frozen=True)
class Shuffle(_Partitioned):
    """A uniformly random permutation cut into consecutive batches (Chua et al. 2024, ABLQ_S):
    a fresh permutation every epoch (``persistent=False``, PyTorch's
    ``DataLoader(shuffle=True)``) or one permutation drawn once and kept for the whole run
    (``persistent=True``, Chua et al. NeurIPS 2024's "persistent shuffling");
    ``drop_last`` as in PyTorch's ``DataLoader``.  Accountant ``ablq-shuffle``: for every
    (n, b), both modes and any number of steps, an interval [Chua et al.'s witness with batch
    weights |B_t| / n, the Gaussian at ceil(steps / steps_per_epoch) releases]."""

    persistent: bool = False

    name = "shuffle"
    per_epoch = True

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "persistent", _check_flag("persistent", self.persistent))


def _balanced_from_flags(values: Mapping[str, Any]) -> BalancedIteration:
    steps = values.get("balanced_steps") or values.get("steps")
    if steps is None:
        raise ValueError("--balanced-steps (steps per epoch) is required for --scheme "
                         "balanced-iteration")
    participations = values.get("participations")
    return BalancedIteration(steps, 1 if participations is None else participations)


@register_scheme("each example in --participations of the --balanced-steps steps of an epoch "
                 "(Dong et al. 2025)", example=(100, 1), aliases=("balanced",),
                 from_flags=_balanced_from_flags,
                 flags=(Flag("steps", "count", "steps per epoch (default --steps)",
                             dest="balanced_steps"),
                        Flag("participations", "count", "steps per example per epoch "
                             "(default 1)", required=False)))
@dataclass(frozen=True)
class BalancedIteration(Scheme):
    """Balanced Iteration Subsampling (Dong, Chen, Ozgur 2025, Sec. 3.3): each record takes part
    in exactly ``participations`` of the ``steps`` steps of an epoch, chosen uniformly."""

    steps: int
    participations: int = 1

    name = "balanced-iteration"
    per_epoch = True

    def __post_init__(self) -> None:
        t = check_int("steps", self.steps, minimum=1)
        k = check_int("participations", self.participations, minimum=1, maximum=t)
        object.__setattr__(self, "steps", t)
        object.__setattr__(self, "participations", k)

    @property
    def rate(self) -> float:
        return self.participations / self.steps

    @property
    def steps_per_epoch(self) -> int:
        return self.steps

    def max_participations(self, steps: int) -> int | None:
        """``participations`` per whole epoch, and at most ``min(participations, r)`` of the
        ``r`` steps of a partial one."""
        t = _check_steps(steps)
        return (t // self.steps) * self.participations + min(self.participations,
                                                              t % self.steps)


@register_scheme("each example updates --selected of --parts submodels", example=(4,),
                 flags=(_PARTS, Flag("selected", "count", "submodels each example updates "
                                     "(default 1)", required=False)))
@dataclass(frozen=True)
class ModelSplit(Scheme):
    """Each record's gradient updates ``selected`` of ``parts`` disjoint submodels, chosen
    uniformly (Dong, Chen, Ozgur 2025, Thm 3.4)."""

    parts: int
    selected: int = 1

    name = "model-split"

    def __post_init__(self) -> None:
        d = check_int("parts", self.parts, minimum=1)
        k = check_int("selected", self.selected, minimum=1, maximum=d)
        object.__setattr__(self, "parts", d)
        object.__setattr__(self, "selected", k)

    @property
    def rate(self) -> float:
        return self.selected / self.parts

    @property
    def steps_per_epoch(self) -> int:
        return 1

    def max_participations(self, steps: int) -> int | None:
        """Every step releases ``parts`` block sums, a record enters ``selected`` of them,
        each at the mechanism's sensitivity (Dong, Chen, Ozgur 2025, Thm 3.4: one step is an
        epoch of ``BalancedIteration(parts, selected)``): ``steps * selected``."""
        return _check_steps(steps) * self.selected


@register_scheme("dropout with rate 1/2 (model split in 2)", name="dropout")
def Dropout() -> ModelSplit:  # noqa: N802 - a constructor-like factory in the public API
    """Dropout with rate 1/2 as model splitting into two parts (Dong, Chen, Ozgur 2025, Cor 3.7)."""
    return ModelSplit(2, 1)


@register_scheme("each example of a Poisson --rate sample updates one of --parts submodels",
                 example=(4, 0.1), flags=(_PARTS, _RATE))
@dataclass(frozen=True)
class SubsampledModelSplit(Scheme):
    """Model splitting into ``parts`` disjoint submodels (each example updates one, Thm 3.4)
    on a Poisson sample of the data with probability ``rate`` per step (Dong, Chen, Ozgur
    2025, Fig. 1 and Table 1)."""

    parts: int
    rate: float

    name = "subsampled-model-split"

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", check_int("parts", self.parts, minimum=1))
        object.__setattr__(self, "rate", _positive_rate(self.rate))

    @property
    def steps_per_epoch(self) -> float:
        return 1.0 / self.rate


@register_scheme("--parts submodels plus a shared part (--shared-norm), Poisson --rate "
                 "(default 1)", example=(3, 0.7, 0.7, 0.1),
                 flags=(_PARTS,
                        Flag("split_norm", "real", "clipping norm of the split part "
                             "(default 1)", required=False),
                        Flag("shared_norm", "real", "clipping norm of the shared part "
                             "(default 0)", required=False),
                        Flag("rate", "real", "sampling rate per step (default 1)",
                             required=False)))
@dataclass(frozen=True)
class PartialModelSplit(Scheme):
    """Partial model splitting (Dong, Chen, Ozgur 2025, Sec. 3.2.2): the "split" part of the
    model is cut into ``parts`` disjoint submodels (each example updates one, Thm 3.4), the
    "shared" part is updated by every example; per-example gradients are clipped to
    ``split_norm`` on the split part and ``shared_norm`` on the shared part (both in units of
    the mechanism's sensitivity; ``shared_norm=0``: no shared part), on a Poisson sample of the
    data with probability ``rate`` per step (1: every example)."""

    parts: int
    split_norm: float = 1.0
    shared_norm: float = 0.0
    rate: float = 1.0

    name = "partial-model-split"

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", check_int("parts", self.parts, minimum=1))
        for field_name in ("split_norm", "shared_norm"):
            v = getattr(self, field_name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v < 1e300):
                raise ValueError(f"{field_name} must be a real number in [0, inf), got {v!r}")
            object.__setattr__(self, field_name, float(v))
        if self.split_norm == 0:
            raise ValueError("split_norm must be in (0, inf), got 0")
        object.__setattr__(self, "rate", _positive_rate(self.rate))

    @property
    def steps_per_epoch(self) -> float:
        return 1.0 / self.rate


@register_scheme("a user-described sampler for Schuchardt et al. 2024's bound (--weights, "
                 "--positions of the conditioning events)", example=((0.9, 0.1), (0, 1)),
                 flags=(Flag("weights", "reals", "the conditioning events' probabilities"),
                        Flag("positions", "wholes", "the events' distances from the anchor "
                             "batch (in steps of the batch relation, >= 0)"),
                        Flag("other_weights", "reals", "the other dataset's event "
                             "probabilities (default 1)", required=False),
                        Flag("other_positions", "wholes", "the other dataset's event "
                             "positions (default 0)", required=False),
                        Flag("steps_per_epoch_", "real", "steps per epoch (default 1)",
                             required=False)))
@dataclass(frozen=True)
class CustomSampler(Scheme):
    """A user-described sampler for Schuchardt et al. 2024's optimal-transport bound
    (Thm 3.4): for one pair of neighbouring datasets, the conditioning events of the first
    dataset's batch law (``weights[k]``, ``positions[k]``: the coupled batches of event k are
    ``positions[k]`` steps of the batch relation from a common anchor batch and
    ``|positions[k] - positions[l]|`` from each other) and those of the other dataset
    (default: the anchor alone, as under insertion/removal).  The mechanism's sensitivity is
    one step of the batch relation.  See ``privamp.ChainEvents`` for constructors."""

    weights: tuple[float, ...]
    positions: tuple[int, ...]
    other_weights: tuple[float, ...] = (1.0,)
    other_positions: tuple[int, ...] = (0,)
    steps_per_epoch_: float = 1.0

    name = "custom"

    def __post_init__(self) -> None:
        for w, p in ((self.weights, self.positions), (self.other_weights, self.other_positions)):
            if len(w) == 0 or len(w) != len(p):
                raise ValueError("weights and positions must be non-empty and of equal length, "
                                 f"got {len(w)} and {len(p)}")
            if any(not (0.0 <= float(x) <= 1.0) for x in w) or abs(sum(map(float, w)) - 1) > 1e-9:
                raise ValueError(f"weights must be in [0, 1] and sum to 1, got {w}")
            for x in p:
                check_int("positions", x, minimum=0)
        for f in ("weights", "other_weights"):
            object.__setattr__(self, f, tuple(float(x) for x in getattr(self, f)))
        for f in ("positions", "other_positions"):
            object.__setattr__(self, f, tuple(int(x) for x in getattr(self, f)))
        if not (self.steps_per_epoch_ > 0):
            raise ValueError(f"steps_per_epoch_ must be > 0, got {self.steps_per_epoch_}")

    @property
    def steps_per_epoch(self) -> float:
        return float(self.steps_per_epoch_)


@register_scheme("each example in one random batch of --batches, a fresh one every epoch",
                 example=(10,), flags=(_BATCHES,))
@dataclass(frozen=True, init=False, repr=False)
class BallsInBins(BalancedIteration):
    """Balls-in-bins batching (Chua et al. 2025, "Balls-and-bins sampling for DP-SGD",
    arXiv:2412.16802): every epoch each record is put in one uniformly random batch of the
    ``batches`` batches, independently of the other records and epochs.  Batch sizes are
    random (binomial).  For one record this is random allocation 1-of-``batches`` per epoch,
    i.e. :class:`BalancedIteration` with ``steps=batches`` and one participation, so every
    Balanced Iteration accountant answers for it."""

    name = "balls-in-bins"

    def __init__(self, batches: int) -> None:
        object.__setattr__(self, "steps", check_int("batches", batches, minimum=1))
        object.__setattr__(self, "participations", 1)
        super().__post_init__()

    @property
    def batches(self) -> int:
        """Number of batches (= steps) per epoch."""
        return self.steps

    def __repr__(self) -> str:
        return f"BallsInBins(batches={self.steps})"


@register_scheme("each example in one random batch of --batches, kept for the whole run "
                 "(jax_privacy)", example=(10,), flags=(_BATCHES,))
@dataclass(frozen=True)
class PersistentBallsInBins(Scheme):
    """Balls-in-bins with the bin kept for the whole run: each record is put once in one
    uniformly random batch of the ``batches`` batches of a cycle, independently of the other
    records, and takes part in that batch of every cycle (epoch).  This is jax_privacy's
    ``BallsInBinsSampling`` (cyclic); privamp's :class:`BallsInBins` draws a fresh bin every
    epoch instead.  Over E epochs one record's E releases sit in the same batch position."""

    batches: int

    name = "balls-in-bins-persistent"
    per_epoch = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "batches", check_int("batches", self.batches, minimum=1))

    @property
    def rate(self) -> float:
        return 1.0 / self.batches

    @property
    def steps_per_epoch(self) -> int:
        return self.batches

    def max_participations(self, steps: int) -> int | None:
        """One batch per cycle: ``ceil(steps / batches)``."""
        return _ceil_div(_check_steps(steps), self.batches)


@register_scheme("Poisson --rate sampling with batches cut to --max-batch-size",
                 example=(0.01, 20, 1000),
                 flags=(_RATE, Flag("max_batch_size", "count", "largest batch kept"),
                        _DATASET))
@dataclass(frozen=True)
class TruncatedPoisson(Scheme):
    """Poisson subsampling with a cap: each of the ``dataset_size`` records joins a step's
    batch independently with probability ``rate``; a batch larger than ``max_batch_size`` is
    cut to a uniformly random subset of ``max_batch_size`` of its records
    (dp-accounting's ``TruncatedSubsampledGaussianDpEvent``; jax_privacy's truncated Poisson
    batch selection)."""

    rate: float
    max_batch_size: int
    dataset_size: int

    name = "truncated-poisson"

    def __post_init__(self) -> None:
        object.__setattr__(self, "rate", _positive_rate(self.rate))
        n = check_int("dataset_size", self.dataset_size, minimum=1)
        object.__setattr__(self, "dataset_size", n)
        object.__setattr__(self, "max_batch_size",
                           check_int("max_batch_size", self.max_batch_size, minimum=1))

    @property
    def steps_per_epoch(self) -> float:
        return 1.0 / self.rate


#: the registered schemes (privamp.sampling.registry) and their base class
__all__ = ["Scheme", *scheme_names()]
