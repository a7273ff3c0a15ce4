"""Opacus integration: an accountant that accounts for the sampler actually used.

Opacus's own accountants (``rdp``, ``prv``, ``gdp``) assume Poisson sampling at rate
``1 / len(data_loader)``.  A run that uses shuffled, fixed-size or balanced batches
(``poisson_sampling=False``) silently gets the Poisson number.  :class:`PrivampAccountant`
implements Opacus's accountant interface (``opacus.accountants.accountant.IAccountant``:
``step``, ``get_epsilon``, ``__len__``, ``mechanism``, ``state_dict``/``load_state_dict``) for
the privamp scheme of the batch sampler attached to the data loader, so the epsilon reported is
privamp's bound for that scheme::

    from privamp.integrations.torch import ShuffleBatchSampler
    from privamp.integrations.opacus import make_private

    sampler = ShuffleBatchSampler(batch_size=64, dataset_size=len(ds), epochs=5, seed=0)
    model, optimizer, loader, accountant = make_private(
        None, model, optimizer, ds, sampler, noise_multiplier=1.0, max_grad_norm=1.0,
        relation=pa.ZeroOut())
    for x, y in loader: ...                  # one pass = the planned 5 epochs
    accountant.get_guarantee(1e-5)           # Guarantee: privamp's [lower, upper] interval
    accountant.get_epsilon(1e-5)             # float: the upper bound (what Opacus reports)

Each optimizer step releases the sum of per-example gradients clipped to ``max_grad_norm`` plus
Gaussian noise of standard deviation ``noise_multiplier * max_grad_norm``: in units of the
clipping norm the base mechanism is ``Gaussian(noise_multiplier, sensitivity)`` with
sensitivity 1 under add/remove and zero-out and 2 under substitution (privamp's convention,
see :mod:`privamp.mechanisms`).

Needs Opacus and PyTorch (``pip install "privamp[opacus]"``).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from .._validation import check_delta, check_positive
from ..accounting.training import Training
from ..mechanisms.gaussian import Gaussian
from ..results import Bound, Guarantee
from ..sampling.relations import AddRemove, Relation, Substitution
from ..sampling.schemes import BalancedIteration, Deterministic, Scheme, Shuffle

__all__ = [
    "PrivampAccountant",
    "make_private",
]


try:
    import torch
    from opacus.accountants.accountant import IAccountant
    from torch.utils.data import DataLoader
except ImportError as exc:  # pragma: no cover - exercised only without opacus
    raise ImportError(
        "privamp.integrations.opacus needs Opacus and PyTorch; install them with "
        '`pip install "privamp[opacus]"`'
    ) from exc


_EPOCH_SCHEMES = (Shuffle, Deterministic, BalancedIteration)


def _scheme_of(sampler_or_scheme: Any) -> Scheme:
    scheme = getattr(sampler_or_scheme, "scheme", sampler_or_scheme)
    if not isinstance(scheme, Scheme):
        raise ValueError(
            "sampler must be a privamp batch sampler (privamp.integrations.torch) or a privamp "
            "scheme, "
            f"got {type(sampler_or_scheme).__name__}"
        )
    return scheme


class PrivampAccountant(IAccountant):
    """Opacus accountant (``IAccountant``) backed by :class:`privamp.Training`.

    Parameters
    ----------
    sampler:
        The privamp batch sampler attached to the data loader (any object with a ``.scheme``)
        or directly a privamp :class:`~privamp.Scheme`.
    relation:
        Neighbouring relation protected (default add/remove, as Opacus).
    sensitivity:
        l2-sensitivity of one step in units of the clipping norm; default 2 under
        substitution and 1 otherwise.
    accountant:
        privamp accountant name passed to :meth:`privamp.Training.epsilon` (``"best"``).

    ``history`` holds ``(noise_multiplier, sample_rate, steps)`` triples like Opacus's RDP
    accountant; the ``sample_rate`` Opacus passes (``1 / len(data_loader)``) is recorded but
    the privacy analysis uses ``scheme`` only.

    Partial epochs: for epoch-structured schemes (shuffle, deterministic, balanced
    iteration), a number of steps that is not a whole number of epochs is accounted as the
    next whole number of epochs.  The first steps of a run are a post-processing of the whole
    run, so this upper bound stays sound; the lower bound is then dropped (it would bound the
    longer run, not the one performed).
    """

    def __init__(
        self,
        sampler: Any,
        *,
        relation: Relation | None = None,
        sensitivity: float | None = None,
        accountant: str = "best",
    ) -> None:
        super().__init__()
        self.scheme = _scheme_of(sampler)
        self.relation = relation if relation is not None else AddRemove()
        if not isinstance(self.relation, Relation):
            raise ValueError(f"relation must be a privamp relation, got {relation!r}")
        if sensitivity is None:
            sensitivity = 2.0 if isinstance(self.relation, Substitution) else 1.0
        self.sensitivity = check_positive("sensitivity", sensitivity)
        self.accountant = accountant
        self.history: list[tuple[float, float, int]] = []

    @classmethod
    def for_data_loader(cls, data_loader: DataLoader, **kwargs: Any) -> PrivampAccountant:
        """The accountant for the batches ``data_loader`` actually draws: a privamp batch
        sampler attached with ``batch_sampler=``, Opacus's Poisson loader, or a standard
        ``DataLoader(ds, batch_size=b, shuffle=True | False)`` (see
        :func:`privamp.integrations.torch.scheme_of`); keyword arguments as for the
        constructor.  Raises
        ``ValueError`` for a loader whose sampling law privamp does not know.
        """
        from .torch import scheme_of

        sampler = getattr(data_loader, "batch_sampler", None)
        n = getattr(sampler, "dataset_size", None)
        if n is not None and hasattr(data_loader.dataset, "__len__"):
            if len(data_loader.dataset) != n:
                raise ValueError(
                    f"the sampler's dataset_size={n} differs from len(dataset)="
                    f"{len(data_loader.dataset)}"
                )
        return cls(scheme_of(data_loader), **kwargs)

    # ---- Opacus interface ----------------------------------------------------------------
    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one optimizer step (called by Opacus's optimizer hook)."""
        nm, rate = float(noise_multiplier), float(sample_rate)
        if self.history and self.history[-1][0] == nm and self.history[-1][1] == rate:
            last = self.history.pop()
            self.history.append((nm, rate, last[2] + 1))
        else:
            self.history.append((nm, rate, 1))

    def get_optimizer_hook_fn(self, sample_rate: float):  # noqa: ANN201 - Opacus signature
        """Hook that Opacus attaches to the ``DPOptimizer``: one call per optimizer step.

        Gradient accumulation over several batches per step (virtual steps) changes the
        sampling scheme, so it is refused with a ``ValueError``."""

        def hook_fn(optim: Any) -> None:
            acc = optim.accumulated_iterations
            if acc != 1:
                raise ValueError(
                    f"PrivampAccountant: the optimizer step used {acc} accumulated batches; "
                    "privamp accounts for one batch of the sampler per step (accumulated "
                    "iterations must be 1)"
                )
            self.step(noise_multiplier=optim.noise_multiplier, sample_rate=sample_rate)

        return hook_fn

    def __len__(self) -> int:
        """Number of optimizer steps taken so far."""
        return sum(s for _, _, s in self.history)

    @classmethod
    def mechanism(cls) -> str:
        return "privamp"

    def get_epsilon(self, delta: float, *args: Any, **kwargs: Any) -> float:
        """privamp's upper bound on the run's epsilon at ``delta`` (what Opacus reports).

        Raises ``ValueError`` when no sound upper bound is known for this scheme."""
        g = self.get_guarantee(delta)
        if g.upper is None:
            lower = "" if g.lower is None else f" (a lower bound is {float(g.lower.value):.6g})"
            raise ValueError(
                f"privamp has no upper bound on epsilon for {self.scheme} under "
                f"{self.relation}{lower}; use get_guarantee(delta) for what is known"
            )
        return float(g.upper.value)

    # ---- privamp -------------------------------------------------------------------------
    def training(self) -> Training:
        """The privamp run accounted for: the steps recorded so far (whole epochs for
        epoch-structured schemes, see the class docstring)."""
        steps = len(self)
        if steps == 0:
            raise ValueError("no optimizer step recorded yet (steps must be >= 1)")
        nms = {nm for nm, _, _ in self.history}
        if len(nms) > 1:
            raise ValueError(
                "noise_multiplier changed during the run "
                f"({sorted(nms)}); privamp's Training composes identical steps only"
            )
        nm = nms.pop()
        if not (nm > 0 and math.isfinite(nm)):
            raise ValueError(f"noise_multiplier must be in (0, inf), got {nm}")
        return Training(
            Gaussian(nm, self.sensitivity),
            self.scheme,
            steps=self._accounted_steps(steps),
            relation=self.relation,
        )

    def _accounted_steps(self, steps: int) -> int:
        if isinstance(self.scheme, _EPOCH_SCHEMES):
            per_epoch = int(self.scheme.steps_per_epoch)
            return -(-steps // per_epoch) * per_epoch
        return steps

    def get_guarantee(self, delta: float) -> Guarantee:
        """privamp's two-sided :class:`~privamp.Guarantee` on the run's epsilon at ``delta``."""
        d = check_delta(delta)
        if len(self) == 0:
            zero = Bound(0.0, "exact", "no step taken: nothing released")
            return Guarantee(zero, zero)
        run = self.training()
        g = run.epsilon(float(d), accountant=self.accountant)
        if run.steps != len(self):
            if g.upper is None:
                return Guarantee(None, None)
            kind = "upper"
            src = (
                f"{g.upper.source}; partial epoch: {len(self)} steps accounted as "
                f"{run.steps} (post-processing)"
            )
            return Guarantee(Bound(g.upper.value, kind, src), None)
        return g


def _empty_safe_collate(dataset: Any, collate_fn: Any) -> Any:
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


def make_private(
    privacy_engine: Any,
    module: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    dataset: Any,
    batch_sampler: Any,
    noise_multiplier: float,
    max_grad_norm: float,
    *,
    relation: Relation | None = None,
    sensitivity: float | None = None,
    accountant: str = "best",
    collate_fn: Any = None,
    num_workers: int = 0,
    **make_private_kwargs: Any,
) -> tuple[Any, Any, DataLoader, PrivampAccountant]:
    """Wire a privamp batch sampler into an Opacus run in one call.

    Builds ``DataLoader(dataset, batch_sampler=batch_sampler)`` (empty batches allowed),
    installs a :class:`PrivampAccountant` for ``batch_sampler.scheme`` as the engine's
    accountant, and calls Opacus's ``PrivacyEngine.make_private(..., poisson_sampling=False)``
    so that Opacus keeps the sampler.  The optimizer averages with the sampler's expected
    batch size.  ``privacy_engine=None`` creates a ``PrivacyEngine()``; afterwards
    ``privacy_engine.get_epsilon(delta)`` and ``accountant.get_epsilon(delta)`` both return
    privamp's upper bound.  Extra keyword arguments go to ``make_private`` (e.g. ``criterion``,
    ``noise_generator``, ``grad_sample_mode``).

    Returns ``(module, optimizer, data_loader, accountant)``.
    """
    from opacus import PrivacyEngine

    if not hasattr(batch_sampler, "scheme") or not hasattr(batch_sampler, "__iter__"):
        raise ValueError(
            "batch_sampler must be a privamp batch sampler from privamp.integrations.torch "
            f"(with .scheme), got {type(batch_sampler).__name__}"
        )
    n = len(dataset)
    if getattr(batch_sampler, "dataset_size", n) != n:
        raise ValueError(
            f"batch_sampler.dataset_size={batch_sampler.dataset_size} must equal "
            f"len(dataset)={n}"
        )
    if "ghost" in str(make_private_kwargs.get("grad_sample_mode", "")):
        raise ValueError("grad_sample_mode 'ghost' is not supported by make_private here")
    if "poisson_sampling" in make_private_kwargs:
        raise ValueError("poisson_sampling is fixed to False: the privamp sampler samples")
    if privacy_engine is None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Secure RNG turned off")
            privacy_engine = PrivacyEngine()
    if getattr(privacy_engine, "secure_mode", False):
        raise ValueError(
            "secure_mode=True is not supported: privamp samplers draw from NumPy's PRNG"
        )
    acc = PrivampAccountant(
        batch_sampler, relation=relation, sensitivity=sensitivity, accountant=accountant
    )
    privacy_engine.accountant = acc
    loader = DataLoader(
        dataset,
        batch_sampler=batch_sampler,
        collate_fn=_empty_safe_collate(dataset, collate_fn),
        num_workers=num_workers,
    )
    out = privacy_engine.make_private(
        module=module,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=noise_multiplier,
        max_grad_norm=max_grad_norm,
        poisson_sampling=False,
        **make_private_kwargs,
    )
    module, optimizer, loader = out
    # Opacus derives the averaging batch size from len(data_loader); use the sampler's.
    optimizer.expected_batch_size = max(1, int(round(batch_sampler.expected_batch_size)))
    return module, optimizer, loader, acc

