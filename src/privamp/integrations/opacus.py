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

from .._validation import check_delta, check_int
from ..accounting.training import Training
from ..mechanisms.gaussian import Gaussian
from ..results import Bound, Guarantee
from ..sampling.relations import Relation
from ..sampling.schemes import Poisson, Scheme
from ._phases import compose_phases
from .dp_accounting import as_relation, clipped_sensitivity

__all__ = [
    "from_opacus_history",
    "runs_from_opacus_history",
    "PrivampAccountant",
    "make_private",
    "make_private_with_epsilon",
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
        Neighbouring relation protected: a privamp relation or a
        ``dp_accounting.NeighboringRelation`` (default add/remove, as Opacus).
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
        self.relation = as_relation(relation)
        self.sensitivity = clipped_sensitivity(self.relation, sensitivity)
        self.accountant = accountant
        self.dataset_size: int | None = getattr(sampler, "dataset_size", None)
        self.history: list[tuple[float, float, int]] = []
        self._sizes = _BatchSizes()

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
        acc = cls(scheme_of(data_loader), **kwargs)
        acc.dataset_size = len(data_loader.dataset)
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
            samples = optim.grad_samples
            if samples:
                self._check_batch(int(samples[0].shape[0]))
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
    def check_data_loader(self, data_loader: Any) -> None:
        """Raise ``ValueError`` unless ``data_loader`` draws its batches from this
        accountant's scheme (see :func:`privamp.integrations.torch.scheme_of`)."""
        from .torch import scheme_of

        try:
            found = scheme_of(data_loader)
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

    def _check_batch(self, size: int) -> None:
        """Refuse a batch the scheme cannot draw (see :func:`_batch_check`)."""
        self._sizes.observe(size)
        why = _batch_check(self.scheme, self.dataset_size, self._sizes)
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
        return Training(
            Gaussian(noise, self.sensitivity), self.scheme, steps=steps, relation=self.relation
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
        phases = self.phases()
        if not phases:
            raise ValueError("no optimizer step recorded yet (steps must be >= 1)")
        total = sum(s for _, s in phases)
        if not self.scheme.per_epoch:  # steps are independent: any count is a run
            if len(phases) == 1:
                return self._run(*phases[0]), ""
            return compose_phases([self._run(nm, s) for nm, s in phases],
                                  "the noise multiplier changed during the run"), ""
        per = int(self.scheme.steps_per_epoch)
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
        per = int(round(self.scheme.steps_per_epoch))
        count = epochs if epochs is not None else max(1, len(self) // per)
        steps = [per * (e + 1) for e in range(check_int("epochs", count, minimum=1))]
        run = self._run(phases[0][0], steps[-1])
        return run.epsilon_curve(float(check_delta(delta)), steps=steps,
                                 accountant=self.accountant)


def runs_from_opacus_history(
    history: Any, relation: Any = None, sensitivity: float | None = None
) -> list[Training]:
    """The phases of an Opacus accountant's ``history`` (``(noise_multiplier, sample_rate,
    steps)`` triples, as kept by Opacus's RDP, PRV and GDP accountants, which assume Poisson
    sampling): one ``Training(Gaussian(noise), Poisson(rate), steps)`` per distinct
    (noise, rate), steps summed, in order of first appearance.  ``relation`` and
    ``sensitivity`` as for :class:`PrivampAccountant`.  Pass the phases to
    ``privamp.compose``, or use :func:`from_opacus_history`."""
    rel = as_relation(relation)
    sens = clipped_sensitivity(rel, sensitivity)
    counts: dict[tuple[float, float], int] = {}
    for noise, rate, steps in history:
        key = (float(noise), float(rate))
        counts[key] = counts.get(key, 0) + check_int("steps", steps, minimum=0)
    runs = [Training(Gaussian(nm, sens), Poisson(q), steps=c, relation=rel)
            for (nm, q), c in counts.items() if c > 0]
    if not runs:
        raise ValueError("the history holds no step (steps must add up to >= 1)")
    return runs


def from_opacus_history(history: Any, relation: Any = None,
                        sensitivity: float | None = None) -> Any:
    """privamp's run for an Opacus accountant's ``history`` (Poisson sampling, as Opacus
    assumes): a :class:`~privamp.Training`, or the composition of its phases
    (``privamp.compose``) when the noise or the rate changed.  E.g.
    ``from_opacus_history(engine.accountant.history).epsilon(1e-5)``."""
    runs = runs_from_opacus_history(history, relation, sensitivity)
    if len(runs) == 1:
        return runs[0]
    return compose_phases(runs, "the noise multiplier or the sample rate changed")


def _identity(acc: PrivampAccountant) -> dict[str, Any]:
    """What a history means: stored in checkpoints and compared on load."""
    return {
        "scheme": repr(acc.scheme),
        "relation": repr(acc.relation),
        "sensitivity": float(acc.sensitivity),
    }


class _BatchSizes:
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
_FALSE_ALARM = 1e-9


def _batch_check(scheme: Scheme, n: int | None, seen: _BatchSizes) -> str:
    """Why the batch sizes ``seen`` cannot come from ``scheme`` on ``n`` examples ("" if they
    can).  Fixed-size schemes must see their batch size at every step; a Poisson scheme on a
    known ``n`` refuses batch sizes that stay constant for so long that the chance of that
    under Binomial(n, rate) is below ``_FALSE_ALARM`` (a fixed-size loader, e.g. shuffle)."""
    size = seen.last
    fixed = getattr(scheme, "batch_size", None)
    if fixed is not None and size != fixed:
        return f"a batch of {size} examples, but {scheme} draws batches of exactly {fixed}"
    if n is not None and size > n:
        return f"a batch of {size} examples from a dataset of {n}"
    if isinstance(scheme, Poisson) and n is not None:
        return _poisson_check(scheme.rate, n, seen)
    return ""


def _poisson_check(q: float, n: int, seen: _BatchSizes) -> str:
    """Batch sizes that Poisson sampling at rate ``q`` from ``n`` examples gives with
    probability below ``_FALSE_ALARM`` over the whole run: the same size every step, or a
    total off its Binomial(n * steps, q) law (tested at level ``_FALSE_ALARM / (m (m + 1))``
    after step m, so that all the tests of a run together stay below ``_FALSE_ALARM``)."""
    from scipy.stats import binom

    m = seen.count
    tail = min(binom.cdf(seen.total, n * m, q), binom.sf(seen.total - 1, n * m, q))
    if 2 * tail < _FALSE_ALARM / (m * (m + 1)):
        return (
            f"{m} batches of {seen.total / m:.1f} examples on average, where Poisson sampling "
            f"at rate {q:g} from {n} examples averages {n * q:.1f} (probability below "
            f"{_FALSE_ALARM:g}: another rate or dataset size?)"
        )
    if seen.constant and m > 1:
        mode = math.floor((n + 1) * q)
        top = float(binom.pmf(min(mode, n), n, q))
        # P(count equal sizes) = sum_k p_k^count <= max_k p_k^(count - 1)
        if top < 1 and (m - 1) * math.log(top) < math.log(_FALSE_ALARM):
            return (
                f"{m} batches of exactly {seen.first} examples in a row, which Poisson "
                f"sampling at rate {q:g} from {n} examples gives with probability below "
                f"{_FALSE_ALARM:g} (a fixed-size loader, e.g. shuffle=True?)"
            )
    return ""


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



def make_private_with_epsilon(
    privacy_engine: Any,
    module: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    dataset: Any,
    batch_sampler: Any,
    target_epsilon: float,
    target_delta: float,
    max_grad_norm: float,
    *,
    relation: Any = None,
    sensitivity: float | None = None,
    accountant: str = "best",
    callback: Any = None,
    **make_private_kwargs: Any,
) -> tuple[Any, Any, DataLoader, PrivampAccountant]:
    """:func:`make_private` with the noise multiplier calibrated so that the planned run (one
    pass over ``batch_sampler``: its ``steps``) has an epsilon upper bound at
    ``target_delta`` of at most ``target_epsilon``, for the sampler's own scheme (Opacus's
    version assumes Poisson sampling).  The noise is the smallest found by
    :func:`privamp.calibrate` (relative precision 1e-3); it is kept as
    ``accountant.calibration`` (a :class:`~privamp.Bound` with its source).
    ``callback(sigma, guarantee)`` is called after each probe of the search (e.g. to show
    progress; needs a build of ``privamp.calibrate`` with ``callback``).

    Returns ``(module, optimizer, data_loader, accountant)``; raises ``ValueError`` when no
    noise multiplier in the search range meets the target.
    """
    from ..accounting.calibration import calibrate

    if not hasattr(batch_sampler, "scheme") or not hasattr(batch_sampler, "steps"):
        raise ValueError(
            "batch_sampler must be a privamp batch sampler from privamp.integrations.torch "
            f"(with .scheme and .steps), got {type(batch_sampler).__name__}"
        )
    plan = PrivampAccountant(batch_sampler, relation=relation, sensitivity=sensitivity,
                             accountant=accountant)

    def run_at(sigma: float) -> Training:
        return plan._run(sigma, int(batch_sampler.steps))

    extra = {} if callback is None else {"callback": callback}
    noise = calibrate(target_epsilon, target_delta, run_at, accountant=accountant, **extra)
    out = make_private(
        privacy_engine, module, optimizer, dataset, batch_sampler, float(noise.value),
        max_grad_norm, relation=plan.relation, sensitivity=plan.sensitivity,
        accountant=accountant, **make_private_kwargs,
    )
    out[3].calibration = noise
    return out
