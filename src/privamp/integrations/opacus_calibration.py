"""Noise calibration for Opacus runs: privamp's :func:`make_private_with_epsilon` (for a
privamp sampler), and how Opacus's own ``PrivacyEngine.make_private_with_epsilon`` works with
``PrivacyEngine(accountant="privamp")``.

Opacus's method calibrates with ``opacus.accountants.utils.get_noise_multiplier``: a fresh
accountant created by name, its ``history`` set to ``[(sigma, 1 / len(data_loader), epochs *
len(data_loader))]``, a doubling then a bisection on sigma until the accountant's epsilon is
within ``epsilon_tolerance`` (0.01) *below* the target; it returns the noise of the last
probe that met the target.  The fresh :class:`~privamp.integrations.opacus.PrivampAccountant`
finds the loader ``make_private`` will use (:func:`~privamp.integrations.opacus_checks.
calibration_loader`) and answers with privamp's certified upper bound for that loader's
scheme (Poisson with ``poisson_sampling=True``; the loader's own shuffle or fixed batches
with ``poisson_sampling=False``), so the noise chosen meets the target for the sampler
actually used, and ``engine.get_epsilon(delta)`` after the planned epochs is <= the target.

Needs Opacus and PyTorch.
"""

from __future__ import annotations

from typing import Any

from ..accounting.training import Training
from ..mechanisms.gaussian import Gaussian
from .opacus import PrivampAccountant, make_private

try:
    import torch
    from torch.utils.data import DataLoader
except ImportError as exc:  # pragma: no cover - exercised only without torch
    raise ImportError(
        "privamp.integrations.opacus_calibration needs Opacus and PyTorch; install them with "
        '`pip install "privamp[opacus]"`'
    ) from exc

__all__ = ["make_private_with_epsilon"]


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
    ``accountant.calibration`` (a :class:`~privamp.Calibration`: the value and its guarantee).
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

    scheme = plan.scheme
    assert scheme is not None  # (built from a batch sampler, which has one)

    def run_at(sigma: float) -> Training:
        return Training(Gaussian(sigma, plan.sensitivity), scheme,
                        steps=int(batch_sampler.steps), relation=plan.relation)

    extra = {} if callback is None else {"callback": callback}
    noise = calibrate(target_epsilon, target_delta, run_at, accountant=accountant, **extra)
    out = make_private(
        privacy_engine, module, optimizer, dataset, batch_sampler, float(noise.value),
        max_grad_norm, relation=plan.relation, sensitivity=plan.sensitivity,
        accountant=accountant, **make_private_kwargs,
    )
    out[3].calibration = noise
    return out
