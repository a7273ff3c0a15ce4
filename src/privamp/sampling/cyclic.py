"""Cyclic Poisson sampling (b-min-separation sampling): jax_privacy's ``CyclicPoissonSampling``.

The examples are split into ``cycle_length`` groups; step t draws from group ``t mod
cycle_length`` only, each of its examples independently with probability ``rate``
(Choquette-Choo et al. 2023, "(Amplified) Banded Matrix Factorization", arXiv 2306.08153,
Sec. 4, "b-min-sep sampling"; jax_privacy ``batch_selection.CyclicPoissonSampling``).  One
example can only take part in the steps of its group, ``cycle_length`` apart: at most
``ceil(T / cycle_length)`` of a run of T steps.  ``cycle_length = 1`` is Poisson sampling.

How the groups are formed (jax_privacy's ``PartitionType``):

* ``"equal-split"`` (jax_privacy's default ``EQUAL_SPLIT``): a uniformly random permutation
  cut into ``cycle_length`` groups of ``n // cycle_length`` (``n mod cycle_length`` examples
  never used).  The groups depend on the dataset's size, so this is a zero-out (or
  replace-one) sampler only: its :meth:`~CyclicPoisson.default_relation` is zero-out and
  add/remove is refused when ``cycle_length > 1`` (jax_privacy's rule).
* ``"independent"`` (``INDEPENDENT``): each example in a uniformly random group,
  independently of the others (a multinomial split): an add/remove sampler.
* ``"fixed"``: a partition fixed in advance and public (e.g. by a hash of the example, as in
  the paper's analysis): add/remove.  Only under it is the example's group known to the
  adversary, so only under it (or ``cycle_length = 1``) is the worst group's analysis a
  realised pair (a certified lower bound); under a random partition the group is a secret
  mixture and the only lower side is the sum statistic's realised pair (valid for every
  partition; :mod:`privamp.theorems.choquette2023`).

Truncation (``truncated_batch_size``, jax_privacy's field): a batch of more than that many
examples is cut to a uniformly random subset of that size.  It is accounted (amplified BandMF,
jax_privacy's ``truncated_amplified_bandmf_event``) for ``"equal-split"`` groups when
``dataset_size`` is given (each group then holds ``dataset_size // cycle_length`` examples);
the other partitions refuse it (an example's group size is secret or unknown).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._validation import check_int, check_rate
from .registry import Flag, register_scheme
from .relations import AddRemove, Relation, ZeroOut
from .schemes import Scheme

__all__ = [
    "CyclicPoisson",
    "PARTITIONS",
]

#: the accepted ``partition`` values (jax_privacy's EQUAL_SPLIT, INDEPENDENT, and a fixed one)
PARTITIONS = ("equal-split", "independent", "fixed")


def _cyclic_from_flags(values: Mapping[str, Any]) -> CyclicPoisson:
    rate, k = values.get("rate"), values.get("cycle_length")
    if rate is None:
        raise ValueError("--rate is required for --scheme cyclic-poisson")
    if values.get("independent_partition") and values.get("fixed_partition"):
        raise ValueError("give at most one of --independent-partition and --fixed-partition")
    partition = ("independent" if values.get("independent_partition")
                 else "fixed" if values.get("fixed_partition") else "equal-split")
    return CyclicPoisson(rate, 1 if k is None else k, partition,
                         values.get("truncated_batch_size"), values.get("dataset_size"))


@register_scheme("--cycle-length groups in turn, each example of the step's group with "
                 "probability --rate (b-min-sep; jax_privacy's CyclicPoissonSampling)",
                 example=(0.1, 4), from_flags=_cyclic_from_flags,
                 flags=(Flag("rate", "real", "sampling rate per step, in (0, 1]"),
                        Flag("cycle_length", "count", "number of groups (default 1: Poisson)",
                             required=False),
                        Flag("independent_partition", "switch", "each example in a random "
                             "group, independently (jax_privacy INDEPENDENT; add/remove)",
                             required=False),
                        Flag("fixed_partition", "switch", "a public fixed partition into "
                             "groups (add/remove)", required=False),
                        Flag("truncated_batch_size", "count", "cut larger batches to this "
                             "size (accounted for equal-split groups with --dataset-size)",
                             required=False),
                        Flag("dataset_size", "count", "number of examples (needed with "
                             "--truncated-batch-size)", required=False)))
@dataclass(frozen=True)
class CyclicPoisson(Scheme):
    """Cyclic Poisson sampling: ``cycle_length`` groups used in turn (step t: group
    ``t mod cycle_length``), each example of the step's group joining independently with
    probability ``rate`` (jax_privacy ``CyclicPoissonSampling``; Choquette-Choo et al. 2023,
    arXiv 2306.08153, b-min-sep sampling).

    Args:
        rate: the probability that an eligible example joins a step's batch, in (0, 1].
        cycle_length: the number of groups (>= 1; 1 is Poisson sampling).
        partition: ``"equal-split"`` (default, jax_privacy's: zero-out / replace-one only),
            ``"independent"`` or ``"fixed"`` (add/remove); see the module docstring.
        truncated_batch_size: jax_privacy's cap on a batch's size (None: no cap).
        dataset_size: the number of examples n (public; None: unknown).  Needed to account
            truncation (the groups of ``"equal-split"`` hold ``n // cycle_length`` examples).

    Raises:
        ValueError: a rate outside (0, 1], cycle_length < 1, an unknown partition, a cap < 1,
            a dataset_size < 1.
    """

    rate: float
    cycle_length: int = 1
    partition: str = "equal-split"
    truncated_batch_size: int | None = None
    dataset_size: int | None = None

    name = "cyclic-poisson"

    def __post_init__(self) -> None:
        r = check_rate("rate", self.rate)
        if r == 0:
            raise ValueError("rate must be in (0, 1], got 0")
        object.__setattr__(self, "rate", r)
        object.__setattr__(self, "cycle_length",
                           check_int("cycle_length", self.cycle_length, minimum=1))
        if self.partition not in PARTITIONS:
            raise ValueError(f"partition must be one of {', '.join(PARTITIONS)}, got "
                             f"{self.partition!r}")
        if self.truncated_batch_size is not None:
            object.__setattr__(self, "truncated_batch_size",
                               check_int("truncated_batch_size", self.truncated_batch_size,
                                         minimum=1))
        if self.dataset_size is not None:
            object.__setattr__(self, "dataset_size",
                               check_int("dataset_size", self.dataset_size, minimum=1))

    @property
    def group_size(self) -> int | None:
        """The examples in each group of ``"equal-split"`` (``dataset_size // cycle_length``;
        the ``dataset_size mod cycle_length`` left over are never used); None for the other
        partitions (their group sizes are random or not described) or an unknown size."""
        if self.dataset_size is None or self.partition != "equal-split":
            return None
        return self.dataset_size // self.cycle_length

    @property
    def steps_per_epoch(self) -> float:
        """``cycle_length / rate``: an example is eligible once per cycle and sampled with
        probability ``rate``, so it is seen once per that many steps on average."""
        return self.cycle_length / self.rate

    def default_relation(self, group: int = 1) -> Relation:
        """Zero-out for ``"equal-split"`` groups (their sizes depend on the dataset's size;
        jax_privacy: zero-out or replace-one only), add/remove otherwise."""
        if self.partition == "equal-split":
            return ZeroOut(group=group)
        return AddRemove(group=group)

    def refusal(self, relation: Relation) -> str | None:
        """Why this sampler does not protect ``relation`` (None: it does): add/remove under
        ``"equal-split"`` groups with ``cycle_length > 1`` (jax_privacy's rule)."""
        if (type(relation) is AddRemove and self.partition == "equal-split"
                and self.cycle_length > 1):
            return ("CyclicPoisson with partition='equal-split' and cycle_length > 1 is not "
                    "an add/remove sampler (the groups depend on the dataset's size; "
                    "jax_privacy: zero-out or replace-one only); use relation=ZeroOut() or "
                    "partition='independent'")
        return None

    @property
    def group_known(self) -> bool:
        """Whether an example's group is public (a fixed partition, or a single group): only
        then is the worst group's pair realised by the sampler."""
        return self.partition == "fixed" or self.cycle_length == 1

    def eligible_steps(self, steps: int, group: int = 0) -> range:
        """The steps of a run of ``steps`` steps in which an example of ``group`` may take
        part: ``group, group + cycle_length, ...`` (group 0 has the most)."""
        t = check_int("steps", steps, minimum=1)
        g = check_int("group", group, minimum=0, maximum=self.cycle_length - 1)
        return range(g, t, self.cycle_length)

    def rounds(self, steps: int) -> int:
        """The most steps one example can take part in: ``ceil(steps / cycle_length)``."""
        return -(-check_int("steps", steps, minimum=1) // self.cycle_length)

    def max_participations(self, steps: int) -> int | None:
        """At most one step per cycle: ``ceil(steps / cycle_length)`` (with ``rate = 1`` an
        example takes part in every step of its group)."""
        return self.rounds(steps)
