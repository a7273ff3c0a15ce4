"""Which privamp scheme a PyTorch ``DataLoader`` draws its batches from
(:func:`scheme_of`), and the scheme of a run that accumulates micro-batches
(:func:`accumulated`).

Nothing here falls back silently: a loader whose law privamp does not know, or cannot account
(weighted sampling, a custom sampler, a dataset size that differs from the sampler's, a
``DistributedSampler`` that pads), raises ``ValueError`` with one line saying what was seen
and what would work.  Needs PyTorch only when :func:`scheme_of` is called.
"""

from __future__ import annotations

from typing import Any

from .._validation import check_int
from ..errors import NotApplicable
from ..sampling.schemes import (
    BalancedIteration,
    BallsInBins,
    Deterministic,
    PersistentBallsInBins,
    Poisson,
    Scheme,
    Shuffle,
    WithReplacement,
)

__all__ = ["scheme_of", "scheme_of_options", "accumulated"]

#: refuse Opacus's distributed Poisson sampler when a rank's batch may be empty (it then
#: skips the step on that rank only, and the ranks' steps no longer line up) with at least
#: this probability per epoch
EMPTY_LOCAL_BATCH = 1e-12


def _refuse(saw: str, fix: str) -> ValueError:
    return ValueError(f"scheme_of: {saw}; {fix}")


def scheme_of(data_loader: Any, *, set_epoch: bool | None = None) -> Scheme:
    """The privamp scheme of the (global) batches a PyTorch ``DataLoader`` draws.

    Recognised: a privamp batch sampler (its ``.scheme``); Opacus's Poisson loaders
    (``UniformWithReplacementSampler``, ``DistributedUniformWithReplacementSampler``:
    ``Poisson(sample_rate)``), also inside Opacus's ``BatchMemoryManager`` (its physical
    batches split one logical batch: the scheme is the logical one); ``DataLoader(ds, b,
    shuffle=True, drop_last=...)``: ``Shuffle(b, n, drop_last=...)`` (a fresh permutation
    per epoch); ``shuffle=False``: ``Deterministic(b, n, drop_last=...)``;
    ``RandomSampler(replacement=True)`` in batches that all have b draws:
    ``WithReplacement(b, n)``; and a ``DistributedSampler`` on W ranks with local batch b:
    ``Shuffle(W b, n, ...)`` (rank r takes permutation positions r::W, so the ranks' t-th
    batches together are the t-th block of W b positions), when it does not pad.

    Args:
        data_loader: the ``DataLoader`` (one rank's, under DDP).
        set_epoch: for a shuffling ``DistributedSampler`` only: True if the loop calls
            ``sampler.set_epoch(epoch)`` with a new epoch every epoch (a fresh permutation),
            False if not (PyTorch then repeats epoch 0's permutation: a persistent shuffle).

    Returns:
        The scheme.

    Raises:
        ValueError: one line naming what was seen and what would work, for every loader
            whose law privamp does not know or cannot account.
    """
    bs = getattr(data_loader, "batch_sampler", None)
    if bs is None:
        raise _refuse(f"a loader without a batch_sampler ({type(data_loader).__name__})",
                      "give the DataLoader a batch_size or a privamp batch_sampler")
    dataset: Any = getattr(data_loader, "dataset", None)
    n = len(dataset) if hasattr(dataset, "__len__") else None
    return _batch_scheme(bs, n, set_epoch)


def _batch_scheme(bs: Any, n: int | None, set_epoch: bool | None) -> Scheme:
    from torch.utils.data import (
        BatchSampler,
        DistributedSampler,
        RandomSampler,
        SequentialSampler,
    )

    kind = type(bs).__name__
    if kind == "BatchSplittingSampler" and hasattr(bs, "sampler"):  # Opacus BatchMemoryManager
        return _batch_scheme(bs.sampler, n, set_epoch)
    scheme = getattr(bs, "scheme", None)
    if isinstance(scheme, Scheme):
        size = getattr(bs, "dataset_size", n)
        if n is not None and size != n:
            raise _refuse(f"{kind} with dataset_size={size} on a dataset of {n} examples",
                          f"build the sampler with dataset_size={n}")
        return scheme
    if kind in ("UniformWithReplacementSampler", "DistributedUniformWithReplacementSampler"):
        return _opacus_poisson(bs, n)
    if type(bs) is not BatchSampler:
        raise _refuse(f"a batch sampler {kind} whose law privamp does not know",
                      "use a privamp batch sampler (privamp.integrations.torch) or "
                      "DataLoader(batch_size=, shuffle=)")
    inner: Any  # a torch Sampler; which one is checked below
    b, drop, inner = int(bs.batch_size), bool(bs.drop_last), bs.sampler
    n = len(inner) if n is None else n
    if type(inner) in (SequentialSampler, RandomSampler):
        random = type(inner) is RandomSampler
        return scheme_of_options(b, n, shuffle=random, drop_last=drop,
                                 replacement=random and inner.replacement,
                                 num_samples=inner.num_samples if random else None)
    if isinstance(inner, DistributedSampler):
        return _distributed(inner, b, drop, n, set_epoch)
    raise _refuse(f"a {type(inner).__name__} inside the BatchSampler, whose law privamp does "
                  "not know (weighted or custom sampling)",
                  "use shuffle=True/False, a privamp batch sampler, or Opacus's Poisson loader")


def scheme_of_options(batch_size: int, dataset_size: int, *, shuffle: bool, drop_last: bool,
                      replacement: bool = False, num_samples: int | None = None) -> Scheme:
    """The scheme of ``DataLoader(dataset, batch_size, shuffle=..., drop_last=...)`` (with
    ``sampler=RandomSampler(dataset, replacement=True, num_samples=...)`` when
    ``replacement``), read from the options alone: the rules :func:`scheme_of` applies to a
    loader built with them (no PyTorch needed).

    Args:
        batch_size: ``batch_size`` (integer >= 1).
        dataset_size: examples in the dataset (integer >= 1).
        shuffle: a ``RandomSampler`` (True) or a ``SequentialSampler`` (False).
        drop_last: the ``DataLoader``'s ``drop_last``.
        replacement: the ``RandomSampler`` draws with replacement (needs ``shuffle``).
        num_samples: draws per epoch of the ``RandomSampler`` (default ``dataset_size``).

    Returns:
        ``Deterministic``, ``Shuffle`` or ``WithReplacement`` of ``(batch_size,
        dataset_size)``.

    Raises:
        ValueError: a law privamp cannot account (named, with what would work).
    """
    b = check_int("batch_size", batch_size, minimum=1)
    n = check_int("dataset_size", dataset_size, minimum=1)
    drawn = n if num_samples is None else check_int("num_samples", num_samples, minimum=1)
    if replacement and not shuffle:
        raise _refuse("replacement=True without shuffling", "a RandomSampler draws with "
                      "replacement: use shuffle=True with it")
    if not shuffle:
        return Deterministic(b, n, drop_last=drop_last)
    if replacement:
        if drawn % b and not drop_last:
            raise _refuse(
                f"RandomSampler(replacement=True) drawing {drawn} per epoch in batches of "
                f"{b} (a last batch of {drawn % b})",
                f"drop_last=True or num_samples a multiple of {b}")
        return WithReplacement(b, n)
    if drawn != n:
        raise _refuse(f"RandomSampler without replacement drawing {drawn} of {n} "
                      "examples per epoch", "draw all of them (num_samples=None)")
    return Shuffle(b, n, drop_last=drop_last)


def _opacus_poisson(bs: Any, n: int | None) -> Poisson:
    q = float(bs.sample_rate)
    if type(bs).__name__ == "DistributedUniformWithReplacementSampler":
        local = int(bs.num_samples)
        empty = bs.num_batches * (1 - q) ** local
        if empty >= EMPTY_LOCAL_BATCH:
            raise _refuse(
                f"Opacus's distributed Poisson sampler skips a rank's empty batch (chance "
                f"{empty:.2g} per epoch at rate {q:g} on {local} local examples), so the "
                "ranks' steps stop lining up", "use PoissonBatchSampler(n, rate, seed=s, "
                "rank=r, world_size=W), which yields empty shares")
        return Poisson(q)
    if n is not None and int(bs.num_samples) != n:
        raise _refuse(f"Opacus's Poisson sampler on {bs.num_samples} examples for a dataset "
                      f"of {n}", "build it on the loader's dataset")
    return Poisson(q)


def _distributed(ds: Any, b: int, drop: bool, n: int, set_epoch: bool | None) -> Scheme:
    """``DistributedSampler`` on W ranks in local batches of b: rank r gets positions r::W of
    a permutation (or of 0..n-1), so the ranks' t-th batches together are positions
    [t W b, (t + 1) W b).  Without padding this is Shuffle/Deterministic(W b, n)."""
    w = int(ds.num_replicas)
    extra = n % w
    if extra and not ds.drop_last:
        pad = ds.total_size - n
        raise _refuse(
            f"DistributedSampler pads {n} examples to {ds.total_size} by repeating {pad} of "
            f"them every epoch (they take part twice)",
            "use DistributedSampler(drop_last=True), a dataset size divisible by "
            f"world_size={w}, or ShuffleBatchSampler(b, n, seed=s, rank=r, world_size=W)")
    last = drop
    if extra:  # its drop_last cut the permutation's last n mod W positions
        if not drop and (n // w) % b:
            raise _refuse(
                f"DistributedSampler(drop_last=True) leaves {extra} examples out while the "
                f"local batches of {b} end with a short one", "use BatchSampler drop_last=True")
        last = True
    if not ds.shuffle:
        return Deterministic(w * b, n, drop_last=last)
    if set_epoch is None:
        raise _refuse(
            "a shuffling DistributedSampler, whose permutation changes only when "
            "sampler.set_epoch(epoch) is called", "say scheme_of(loader, set_epoch=True) if "
            "the loop calls it every epoch, set_epoch=False if not (a persistent shuffle)")
    return Shuffle(w * b, n, drop_last=last, persistent=not set_epoch)


def accumulated(scheme: Scheme, k: int) -> Scheme:
    """The scheme of the logical steps of a loop that accumulates ``k`` consecutive
    micro-batches of ``scheme`` into one noisy step (virtual steps).

    ``Shuffle(b, n)`` / ``Deterministic(b, n)`` give the same scheme with batch ``k b``
    (the micro-batches are consecutive blocks of one ordering), provided the loop steps after
    every ``k`` micro-batches of an epoch and, at the epoch's end, steps on the leftover
    micro-batches (``drop_last=False``) or discards them (``drop_last=True``).
    ``WithReplacement(b, n)`` gives ``WithReplacement(k b, n)``; ``BallsInBins(m)``,
    ``PersistentBallsInBins(m)`` and ``BalancedIteration(m, 1)`` give ``m / k`` batches
    when ``k`` divides ``m``.  Opacus's ``BatchMemoryManager`` is not accumulation in this
    sense (its physical batches split one logical batch): account the logical sampler.

    Args:
        scheme: the scheme of the micro-batches.
        k: micro-batches per logical step (integer >= 1).

    Returns:
        The scheme of the logical batches.

    Raises:
        NotApplicable: the logical batches follow no privamp scheme (Poisson, truncated
            Poisson or without-replacement micro-batches: an example can join several
            micro-batches of one step, which is not sampling at the same rate).
        ValueError: ``k`` out of range (not dividing the number of bins, or ``k b > n``).
    """
    k = check_int("k", k, minimum=1)
    if k == 1:
        return scheme
    if isinstance(scheme, (Shuffle, Deterministic)):
        b, n = scheme.batch_size, scheme.dataset_size
        if k * b > n:
            raise ValueError(f"k must be in [1, {n // b}] (k * batch_size <= dataset_size), "
                             f"got {k}")
        extra = {"persistent": scheme.persistent} if isinstance(scheme, Shuffle) else {}
        return type(scheme)(k * b, n, drop_last=scheme.drop_last, **extra)
    if isinstance(scheme, WithReplacement):
        return WithReplacement(k * scheme.batch_size, scheme.dataset_size)
    if isinstance(scheme, (PersistentBallsInBins, BalancedIteration)):
        m = scheme.batches if isinstance(scheme, PersistentBallsInBins) else scheme.steps
        if getattr(scheme, "participations", 1) != 1:
            raise NotApplicable(f"accumulated: {scheme} with k={k} lets an example join "
                                "several micro-batches of one step; no privamp scheme")
        if m % k:
            raise ValueError(f"k must divide the {m} batches of {scheme}, got {k}")
        if isinstance(scheme, BallsInBins):
            return BallsInBins(m // k)
        return type(scheme)(m // k) if isinstance(scheme, PersistentBallsInBins) else \
            BalancedIteration(m // k, 1)
    raise NotApplicable(
        f"accumulated: {k} micro-batches of {scheme} per step are not {scheme} at the "
        "logical rate (an example can join several of them, and the step's batch is not "
        "drawn by that law); sample the logical batch (e.g. Poisson at the logical rate) and "
        "split it into physical batches with Opacus's BatchMemoryManager instead")
