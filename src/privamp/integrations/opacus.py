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
    for epoch in range(5):
        for x, y in loader: ...              # one pass = one epoch
    accountant.get_guarantee(1e-5)           # Guarantee: privamp's [lower, upper] interval
    accountant.get_epsilon(1e-5)             # float: the upper bound (what Opacus reports)

Each optimizer step releases the sum of per-example gradients clipped to ``max_grad_norm`` plus
Gaussian noise of standard deviation ``noise_multiplier * max_grad_norm``: in units of the
clipping norm the base mechanism is ``Gaussian(noise_multiplier, sensitivity)`` with
sensitivity 1 under add/remove and zero-out and 2 under substitution (privamp's convention,
see :mod:`privamp.mechanisms`).

Importing this module (or ``privamp.opacus``) registers the accountant with Opacus under the
name ``"privamp"`` (``opacus.accountants.register_accountant``), so that
``PrivacyEngine(accountant="privamp")`` works: ``make_private`` then tells the accountant its
data loader, and the accountant accounts for that loader's scheme
(:func:`privamp.integrations.loaders.scheme_of`: Opacus's Poisson loader with the default
``poisson_sampling=True``, the loader's own shuffle/deterministic batches with
``poisson_sampling=False``) or refuses it in one line.

Needs Opacus and PyTorch (``pip install "privamp[opacus]"``).
"""

from __future__ import annotations

import inspect
import math
import warnings
from typing import Any, cast

from .._validation import check_delta, check_int
from ..accounting.training import Training
from ..mechanisms.gaussian import Gaussian
from ..results import Bound, Guarantee
from ..sampling.relations import HybridSubstitution, Relation
from ..sampling.schemes import Poisson, Scheme
from ._phases import compose_phases
from .dp_accounting import as_relation, clipped_sensitivity, is_replace_one
from .loaders import accumulated, scheme_of
from .opacus_checks import (
    BatchSizes,
    batch_check,
    calibration_loader,
    empty_safe_collate,
    known_law_conflict,
)
from .opacus_history import from_opacus_history, runs_from_opacus_history

__all__ = [
    "from_opacus_history",
    "runs_from_opacus_history",
    "PrivampAccountant",
    "make_private",
]


try:
    import torch
    from opacus.accountants import register_accountant
    from opacus.accountants.accountant import IAccountant
    from torch.utils.data import DataLoader
except ImportError as exc:  # pragma: no cover - exercised only without opacus
    raise ImportError(
        "privamp.integrations.opacus needs Opacus and PyTorch; install them with "
        '`pip install "privamp[opacus]"`'
    ) from exc


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
        or directly a privamp :class:`~privamp.Scheme`; None (what
        ``PrivacyEngine(accountant="privamp")`` does): the scheme of the data loader that
        ``make_private`` prepares, found when Opacus attaches the accountant (or given with
        :meth:`attach`).
    accumulation_steps:
        micro-batches of ``sampler`` per optimizer step (gradient accumulation without a
        step in between): the accounted scheme is
        :func:`privamp.integrations.loaders.accumulated` of the sampler's, and a step of more
        micro-batches is refused.  Opacus's ``BatchMemoryManager`` (physical batches of one
        logical batch) needs nothing: its logical steps are recognised.
    relation:
        Neighbouring relation protected: a privamp relation or a
        ``dp_accounting.NeighboringRelation`` (default add/remove, as Opacus).
        ``REPLACE_ONE`` (at the default sensitivity) accounts Poisson steps as
        dp-accounting does, under :class:`~privamp.HybridSubstitution` at sensitivity 1
        (gradients clipped to norm C, one replaced: the tight antipodal pair), and other
        schemes under :class:`~privamp.Substitution` at 2.
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
        sampler: Any = None,
        *,
        relation: Relation | None = None,
        sensitivity: float | None = None,
        accountant: str = "best",
        accumulation_steps: int = 1,
    ) -> None:
        super().__init__()
        self.accumulation_steps = check_int("accumulation_steps", accumulation_steps,
                                            minimum=1)
        self.scheme: Scheme | None = None
        if sampler is not None:
            self.scheme = accumulated(_scheme_of(sampler), self.accumulation_steps)
        # None: the scheme's default relation (zero-out for shuffled / fixed-order batches)
        self.relation = None if relation is None else as_relation(relation)
        self.sensitivity = clipped_sensitivity(self.relation, sensitivity)
        # dp-accounting's REPLACE_ONE at the default sensitivity: Poisson steps are tight
        self.hybrid_poisson = is_replace_one(relation) and sensitivity is None
        self.accountant = accountant
        self.dataset_size: int | None = getattr(sampler, "dataset_size", None)
        self.world_size = int(getattr(sampler, "world_size", 1))
        self.history: list[tuple[float, float, int]] = []
        self.split_steps = 0  # logical steps made of BatchMemoryManager's physical batches
        self._sizes = BatchSizes()

    def attach(self, data_loader: Any, **scheme_of_kwargs: Any) -> None:
        """Account for the batches ``data_loader`` draws (the scheme
        :func:`~privamp.integrations.loaders.scheme_of` finds, accumulated
        ``accumulation_steps`` times); for an accountant built without a sampler.  On an
        accountant that has its scheme, check the loader against it instead.

        Raises:
            ValueError: the loader's law is unknown or not this accountant's scheme.
        """
        if self.scheme is not None:
            self.check_data_loader(data_loader, **scheme_of_kwargs)
            return
        self.scheme = accumulated(scheme_of(data_loader, **scheme_of_kwargs),
                                  self.accumulation_steps)
        self.dataset_size = len(data_loader.dataset)
        self.world_size = _ranks(data_loader.batch_sampler)

    def _attach_for_calibration(self) -> None:
        found = calibration_loader()
        if found is None:
            return
        engine, loader = found
        mine = getattr(engine, "accountant", None)
        if isinstance(mine, PrivampAccountant) and mine is not self:
            self.relation, self.sensitivity = mine.relation, mine.sensitivity
            self.accountant, self.accumulation_steps = mine.accountant, mine.accumulation_steps
            if mine.scheme is not None:
                why = known_law_conflict(mine.scheme, lambda: accumulated(
                    scheme_of(loader), mine.accumulation_steps))
                if why:
                    raise ValueError(f"PrivampAccountant: {why}")
                self.scheme, self.dataset_size = mine.scheme, mine.dataset_size
                return
        self.attach(loader)

    def _bound(self) -> Scheme:
        if self.scheme is None:
            raise ValueError(
                "PrivampAccountant has no data loader: build it with a sampler, let "
                "PrivacyEngine.make_private attach it, or call accountant.attach(loader)"
            )
        return self.scheme

    @classmethod
    def for_data_loader(cls, data_loader: DataLoader, **kwargs: Any) -> PrivampAccountant:
        """The accountant for the batches ``data_loader`` actually draws: a privamp batch
        sampler attached with ``batch_sampler=``, Opacus's Poisson loader, or a standard
        ``DataLoader(ds, batch_size=b, shuffle=True | False)`` (see
        :func:`privamp.integrations.torch.scheme_of`); keyword arguments as for the
        constructor.  Raises
        ``ValueError`` for a loader whose sampling law privamp does not know.
        """
        sampler = getattr(data_loader, "batch_sampler", None)
        n = getattr(sampler, "dataset_size", None)
        if n is not None and hasattr(data_loader.dataset, "__len__"):
            if len(data_loader.dataset) != n:
                raise ValueError(
                    f"the sampler's dataset_size={n} differs from len(dataset)="
                    f"{len(data_loader.dataset)}"
                )
        acc = cls(**kwargs)
        acc.attach(data_loader)
        return acc

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

        An accountant without a scheme takes the data loader that Opacus 1.6's
        ``PrivacyEngine.make_private`` is attaching it for (its local ``data_loader``).
        A step made of more micro-batches than ``accumulation_steps`` is refused with a
        ``ValueError``; the logical steps of ``BatchMemoryManager`` (the optimizer skipped the
        physical batches before it) count once, without a batch-size check (the hook sees
        only the last physical batch)."""
        caller = getattr(inspect.currentframe(), "f_back", None)
        loader = caller.f_locals.get("data_loader") if caller is not None else None
        if isinstance(loader, DataLoader):
            if self.scheme is None:
                self.attach(loader)
            elif why := known_law_conflict(self.scheme, lambda: accumulated(
                    scheme_of(loader), self.accumulation_steps)):
                raise ValueError(f"PrivampAccountant: {why}")

        def hook_fn(optim: Any) -> None:
            scheme = self._bound()
            acc = optim.accumulated_iterations
            if acc > self.accumulation_steps:
                raise ValueError(
                    f"PrivampAccountant: the optimizer step accumulated {acc} batches, but "
                    f"the accountant accounts for {self.accumulation_steps} per step; give "
                    f"PrivampAccountant(..., accumulation_steps={acc}) for a shuffle or "
                    "deterministic loader, or use BatchMemoryManager on a Poisson loader"
                )
            split = bool(getattr(optim, "_is_last_step_skipped", False))
            self.split_steps += split
            samples = optim.grad_samples
            if samples and not split and self.world_size == 1:
                self._check_batch(scheme, int(samples[0].shape[0]))
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

        Inside Opacus's ``PrivacyEngine.make_private_with_epsilon`` (which asks a fresh
        accountant built by name for the epsilon of trial noise multipliers), an accountant
        without a scheme takes that of the loader ``make_private`` will use, and the settings
        of the engine's own :class:`PrivampAccountant`: the noise is then calibrated with
        privamp's upper bound for the sampler actually used.

        Raises ``ValueError`` when no sound upper bound is known for this scheme."""
        if self.scheme is None and self.history:
            self._attach_for_calibration()
        g = self.get_guarantee(delta)
        self._bound()
        if g.upper is None:
            lower = "" if g.lower is None else f" (a lower bound is {float(g.lower.value):.6g})"
            raise ValueError(
                f"privamp has no upper bound on epsilon for {self.scheme} under "
                f"{self.relation or cast(Scheme, self.scheme).default_relation()}{lower}; use "
                f"get_guarantee(delta) for what is known"
            )
        return float(g.upper.value)

    def state_dict(self, destination: Any = None) -> dict[str, Any]:
        """Opacus's checkpoint state plus what the history means: the scheme, relation and
        sensitivity (as their reprs, plain strings, so ``torch.load(weights_only=True)``
        reads them), checked by :meth:`load_state_dict`."""
        out = super().state_dict(destination)
        out["mechanism"] = self.mechanism()
        out.update(_identity(self))
        return out

    def load_state_dict(self, state_dict: Any) -> None:
        """Load a checkpoint saved by a :class:`PrivampAccountant` for the same scheme,
        relation and sensitivity; any other state (a mismatch, or another accountant's state
        that does not say what it accounted for) raises ``ValueError`` naming the field."""
        if not state_dict or "history" not in state_dict:
            raise ValueError("state_dict must hold the key `history` (an accountant's state)")
        if state_dict.get("mechanism") != self.mechanism():
            raise ValueError(
                f"state_dict of accountant {state_dict.get('mechanism')!r} cannot be loaded into "
                "a privamp accountant: it does not say which scheme its history was taken under"
            )
        for key, mine in _identity(self).items():
            theirs = state_dict.get(key)
            if theirs != mine:
                raise ValueError(
                    f"state_dict {key} is {theirs!r} but this accountant has {mine!r}; a "
                    f"checkpoint accounted under one {key} cannot be continued under another"
                )
        self.history = [(float(a), float(b), int(c)) for a, b, c in state_dict["history"]]

    # ---- checks on the loader ------------------------------------------------------------
    def check_data_loader(self, data_loader: Any, **scheme_of_kwargs: Any) -> None:
        """Raise ``ValueError`` unless ``data_loader`` draws its batches from this
        accountant's scheme (see :func:`privamp.integrations.loaders.scheme_of`)."""
        try:
            found = accumulated(scheme_of(data_loader, **scheme_of_kwargs),
                                self.accumulation_steps)
        except ValueError as exc:
            raise ValueError(
                f"cannot check the data loader against {self.scheme}: {exc}"
            ) from exc
        if found != self.scheme:
            raise ValueError(
                f"the data loader samples {found} but this accountant accounts for "
                f"{self.scheme}; use PrivampAccountant.for_data_loader(loader)"
            )
        n = getattr(data_loader.dataset, "__len__", None)
        if self.dataset_size is not None and n is not None and n() != self.dataset_size:
            raise ValueError(
                f"the data loader has {n()} examples but the accountant's sampler has "
                f"dataset_size={self.dataset_size}"
            )

    def _check_batch(self, scheme: Scheme, size: int) -> None:
        """Refuse a batch the scheme cannot draw (see :func:`batch_check`)."""
        self._sizes.observe(size)
        why = batch_check(scheme, self.dataset_size, self._sizes)
        if why:
            raise ValueError(
                f"PrivampAccountant: {why}; the data loader is not the accountant's sampler "
                f"({self.scheme}); build the accountant with "
                "PrivampAccountant.for_data_loader(loader)"
            )

    # ---- privamp -------------------------------------------------------------------------
    def phases(self) -> list[tuple[float, int]]:
        """``(noise_multiplier, steps)`` for each stretch of constant noise, in order.

        Raises ``ValueError`` when the sample rate Opacus passed changed (another data loader
        was attached: this accountant's one scheme no longer describes the run)."""
        rates = sorted({rate for _, rate, _ in self.history})
        if len(rates) > 1:
            raise ValueError(
                f"the sample rate changed during the run ({rates}): another data loader was "
                "attached to this accountant; account each loader's phase with its own "
                "accountant and compose their training() runs with privamp.compose"
            )
        out: list[tuple[float, int]] = []
        for nm, _, steps in self.history:
            if not (nm > 0 and math.isfinite(nm)):
                raise ValueError(f"noise_multiplier must be in (0, inf), got {nm}")
            if out and out[-1][0] == nm:
                out[-1] = (nm, out[-1][1] + steps)
            else:
                out.append((nm, steps))
        return out

    def _run(self, noise: float, steps: int) -> Training:
        if self.hybrid_poisson and type(self._bound()) is Poisson:
            return Training(Gaussian(noise, self.sensitivity / 2), self._bound(), steps=steps,
                            relation=HybridSubstitution())
        return Training(
            Gaussian(noise, self.sensitivity), self._bound(), steps=steps,
            relation=cast(Relation, self.relation)  # None: the scheme's default
        )

    def training(self) -> Any:
        """The privamp run accounted for: one :class:`~privamp.Training`, or a composition of
        phases (``privamp.compose``) when the noise multiplier changed.

        Epoch-structured schemes (shuffle, deterministic, balanced iteration) count whole
        epochs: a final partial epoch is accounted as a whole one, and a run whose noise
        changed inside an epoch is accounted as the whole run at its smallest noise (every
        other release is that release plus independent noise: post-processing).  Both give
        upper bounds only (see :meth:`get_guarantee`).
        """
        plan, _ = self._plan()
        return plan

    def _plan(self) -> tuple[Any, str]:
        """(run or composition, note); a non-empty note means only the upper bound holds."""
        self._bound()
        phases = self.phases()
        if not phases:
            raise ValueError("no optimizer step recorded yet (steps must be >= 1)")
        total = sum(s for _, s in phases)
        if not self._bound().per_epoch:  # steps are independent: any count is a run
            if len(phases) == 1:
                return self._run(*phases[0]), ""
            return compose_phases([self._run(nm, s) for nm, s in phases],
                                  "the noise multiplier changed during the run"), ""
        per = int(cast(Scheme, self.scheme).steps_per_epoch)  # set: _bound() passed
        whole = -(-total // per) * per
        note = "" if whole == total else (
            f"partial epoch: {total} steps accounted as {whole} (post-processing)"
        )
        bounds = [sum(s for _, s in phases[: i + 1]) for i in range(len(phases) - 1)]
        if len(phases) == 1:
            return self._run(phases[0][0], whole), note
        if all(b % per == 0 for b in bounds):
            runs = [self._run(nm, s) for nm, s in phases[:-1]]
            runs.append(self._run(phases[-1][0], whole - bounds[-1]))
            return compose_phases(runs, "the noise multiplier changed during the run"), note
        low = min(nm for nm, _ in phases)
        note = (
            f"noise changed inside an epoch: {total} steps accounted as {whole} steps at the "
            f"smallest noise multiplier {low:g} (post-processing)"
        )
        return self._run(low, whole), note

    def get_guarantee(self, delta: float) -> Guarantee:
        """privamp's two-sided :class:`~privamp.Guarantee` on the run's epsilon at ``delta``
        (upper bound only when the run was rounded up, see :meth:`training`)."""
        d = check_delta(delta)
        if len(self) == 0:
            zero = Bound(0.0, "exact", "no step taken: nothing released")
            return Guarantee(zero, zero)
        run, note = self._plan()
        g = run.epsilon(float(d), accountant=self.accountant)
        if not note:
            return g
        if g.upper is None:
            raise ValueError(
                f"privamp has no upper bound on epsilon for {self.scheme} ({note}); the known "
                "lower bound is for a longer run and says nothing about this one"
            )
        return Guarantee(Bound(g.upper.value, "upper", f"{g.upper.source}; {note}"), None)

    def epsilon_per_epoch(self, delta: float, epochs: int | None = None) -> Guarantee:
        """Guarantees on epsilon after each whole epoch of the run so far (or of the first
        ``epochs`` epochs), in one query: ``run.epsilon_curve`` on the run at the current
        noise multiplier.  Values are arrays aligned with epochs 1, 2, ...

        Raises ``ValueError`` when the noise multiplier changed (ask :meth:`get_guarantee`
        after each epoch instead)."""
        phases = self.phases()
        if len(phases) != 1:
            raise ValueError(
                "epsilon_per_epoch needs one noise multiplier over the run; got "
                f"{len(phases)} phases"
            )
        per = int(round(self._bound().steps_per_epoch))
        count = epochs if epochs is not None else max(1, len(self) // per)
        steps = [per * (e + 1) for e in range(check_int("epochs", count, minimum=1))]
        run = self._run(phases[0][0], steps[-1])
        return run.epsilon_curve(float(check_delta(delta)), steps=steps,
                                 accountant=self.accountant)


def _ranks(batch_sampler: Any) -> int:
    """Ranks that share each global batch (1 unless a distributed sampler is found; a rank's
    accountant then sees only its share, so batch sizes are not checked)."""
    for obj in (batch_sampler, getattr(batch_sampler, "sampler", None)):
        for name in ("world_size", "num_replicas"):
            if isinstance(getattr(obj, name, None), int):
                return int(getattr(obj, name))
    return 1


def _identity(acc: PrivampAccountant) -> dict[str, Any]:
    """What a history means: stored in checkpoints and compared on load."""
    return {
        "scheme": repr(acc.scheme),
        "relation": repr(acc.relation),
        "sensitivity": float(acc.sensitivity),
    }


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

    if "accumulation_steps" in make_private_kwargs:
        raise ValueError("make_private steps once per batch of the sampler; for accumulation "
                         "build PrivampAccountant(sampler, accumulation_steps=k) yourself")
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
        collate_fn=empty_safe_collate(dataset, collate_fn),
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
    # (an opacus DPOptimizer: the attribute is opacus's, not torch's Optimizer)
    optimizer.expected_batch_size = max(  # type: ignore[attr-defined]
        1, int(round(batch_sampler.expected_batch_size)))
    return module, optimizer, loader, acc



try:  # PrivacyEngine(accountant="privamp")
    register_accountant("privamp", PrivampAccountant)
except ValueError:  # already registered (a reload of this module): keep the newest class
    register_accountant("privamp", PrivampAccountant, force=True)
