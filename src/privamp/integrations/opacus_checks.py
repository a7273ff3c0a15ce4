"""Checks that the batches an Opacus run feeds its accountant can come from the accountant's
scheme (batch sizes), Opacus's collate wrapper for empty Poisson batches, and the data loader
of an Opacus ``PrivacyEngine.make_private_with_epsilon`` call in progress."""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable
from typing import Any, cast

from ..sampling.schemes import Deterministic, Poisson, Scheme, Shuffle

__all__ = ["BatchSizes", "FALSE_ALARM", "batch_check", "calibration_loader",
           "known_law_conflict", "poisson_check", "empty_safe_collate"]


class BatchSizes:
    """The batch sizes seen so far: first value and whether they all agreed."""

    def __init__(self) -> None:
        self.count = 0
        self.total = 0
        self.first: int | None = None
        self.constant = True
        self.last = 0

    def observe(self, size: int) -> None:
        self.count += 1
        self.total += size
        self.last = size
        if self.first is None:
            self.first = size
        elif size != self.first:
            self.constant = False


#: a Poisson accountant refuses a loader once constant batch sizes have probability below this
FALSE_ALARM = 1e-9


def batch_check(scheme: Scheme, n: int | None, seen: BatchSizes) -> str:
    """Why the batch sizes ``seen`` cannot come from ``scheme`` on ``n`` examples ("" if they
    can).  Fixed-size schemes must see their batch size at every step; a Poisson scheme on a
    known ``n`` refuses batch sizes that stay constant for so long that the chance of that
    under Binomial(n, rate) is below ``FALSE_ALARM`` (a fixed-size loader, e.g. shuffle)."""
    size = seen.last
    fixed = getattr(scheme, "batch_size", None)
    allowed = {fixed}
    if isinstance(scheme, (Shuffle, Deterministic)) and scheme.remainder and \
            not scheme.drop_last:
        allowed.add(scheme.remainder)  # the epoch's short last batch
    if fixed is not None and size not in allowed:
        sizes = " or ".join(str(a) for a in sorted(cast("set[int]", allowed)))
        return f"a batch of {size} examples, but {scheme} draws batches of exactly {sizes}"
    if n is not None and size > n:
        return f"a batch of {size} examples from a dataset of {n}"
    if isinstance(scheme, Poisson) and n is not None:
        return poisson_check(scheme.rate, n, seen)
    return ""


def poisson_check(q: float, n: int, seen: BatchSizes) -> str:
    """Batch sizes that Poisson sampling at rate ``q`` from ``n`` examples gives with
    probability below ``FALSE_ALARM`` over the whole run: the same size every step, or a
    total off its Binomial(n * steps, q) law (tested at level ``FALSE_ALARM / (m (m + 1))``
    after step m, so that all the tests of a run together stay below ``FALSE_ALARM``)."""
    from scipy.stats import binom

    m = seen.count
    tail = min(binom.cdf(seen.total, n * m, q), binom.sf(seen.total - 1, n * m, q))
    if 2 * tail < FALSE_ALARM / (m * (m + 1)):
        return (
            f"{m} batches of {seen.total / m:.1f} examples on average, where Poisson sampling "
            f"at rate {q:g} from {n} examples averages {n * q:.1f} (probability below "
            f"{FALSE_ALARM:g}: another rate or dataset size?)"
        )
    if seen.constant and m > 1:
        mode = math.floor((n + 1) * q)
        top = float(binom.pmf(min(mode, n), n, q))
        # P(count equal sizes) = sum_k p_k^count <= max_k p_k^(count - 1)
        if top < 1 and (m - 1) * math.log(top) < math.log(FALSE_ALARM):
            return (
                f"{m} batches of exactly {seen.first} examples in a row, which Poisson "
                f"sampling at rate {q:g} from {n} examples gives with probability below "
                f"{FALSE_ALARM:g} (a fixed-size loader, e.g. shuffle=True?)"
            )
    return ""


def empty_safe_collate(dataset: Any, collate_fn: Any) -> Any:
    """Opacus's collate wrapper that turns an empty batch (possible under Poisson sampling)
    into tensors with a zero-length batch dimension."""
    from opacus.data_loader import wrap_collate_with_empty
    from torch.utils.data._utils.collate import default_collate

    first = dataset[0]
    items = first if isinstance(first, (tuple, list)) else (first,)
    shapes = [(0, *tuple(getattr(x, "shape", ()))) for x in items]
    dtypes = [getattr(x, "dtype", type(x)) for x in items]
    return wrap_collate_with_empty(
        collate_fn=collate_fn or default_collate, sample_empty_shapes=shapes, dtypes=dtypes
    )


def calibration_loader(max_depth: int = 12) -> tuple[Any, Any] | None:
    """The Opacus ``PrivacyEngine.make_private_with_epsilon`` call on the stack, if any.

    Opacus calibrates the noise with ``opacus.accountants.utils.get_noise_multiplier``,
    which builds a *fresh* accountant by name (``create_accountant("privamp")``: no data
    loader), sets its ``history`` to ``[(sigma, 1 / len(data_loader), steps)]`` and asks
    its epsilon.  That accountant finds here the loader ``make_private`` will use: Opacus's
    Poisson ``DPDataLoader`` of the caller's loader with ``poisson_sampling=True`` (the
    default), else the caller's loader itself.

    Args:
        max_depth: frames to look up the stack.

    Returns:
        ``(privacy_engine, data_loader)``, or None outside such a call.
    """
    frame = inspect.currentframe()
    for _ in range(max_depth):
        frame = None if frame is None else frame.f_back
        if frame is None:
            return None
        if (frame.f_code.co_name != "make_private_with_epsilon"
                or not str(frame.f_globals.get("__name__", "")).startswith("opacus")):
            continue
        local = frame.f_locals
        engine, loader = local.get("self"), local.get("data_loader")
        if engine is None or loader is None or not hasattr(engine, "accountant"):
            return None
        if local.get("poisson_sampling", True):
            from opacus.data_loader import DPDataLoader

            with warnings.catch_warnings():  # Opacus repeats them in make_private
                warnings.simplefilter("ignore")
                loader = DPDataLoader.from_data_loader(
                    loader, distributed=_distributed(local.get("module")))
        return engine, loader
    return None


def _distributed(module: Any) -> bool:
    """Whether Opacus's ``make_private`` treats ``module`` as distributed (DDP wrappers)."""
    names = {"DifferentiallyPrivateDistributedDataParallel", "DistributedDataParallel"}
    return any(c.__name__ in names or c.__name__ == "FSDPModule"
               for c in type(module).__mro__)


def known_law_conflict(scheme: Scheme | None, found: Callable[[], Scheme]) -> str | None:
    """Why a data loader cannot run under an accountant already bound to ``scheme``: the
    loader's law ``found()`` is known and differs (e.g. a PrivacyEngine reused with another
    loader: calibrating or reporting with the first loader's scheme would under-report);
    None where ``scheme`` is unset, the laws agree, or privamp cannot read the loader (then
    the accountant's declared scheme stands).

    Args:
        scheme: the accountant's scheme, or None.
        found: returns the loader's law (raises ``ValueError`` when unknown).

    Returns:
        The reason, or None.
    """
    if scheme is None:
        return None
    try:
        law = found()
    except ValueError:
        return None
    if law == scheme:
        return None
    return (f"the data loader samples {law} but the accountant is bound to {scheme} (an "
            "engine or accountant reused with another loader); use a fresh PrivacyEngine "
            "or PrivampAccountant.for_data_loader(loader)")
