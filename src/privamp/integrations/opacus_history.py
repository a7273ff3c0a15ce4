"""privamp runs for the history an Opacus accountant keeps (Poisson sampling, as Opacus
assumes)."""

from __future__ import annotations

from typing import Any

from .._validation import check_int
from ..accounting.training import Training
from ..mechanisms.gaussian import Gaussian
from ..sampling.relations import HybridSubstitution
from ..sampling.schemes import Poisson
from ._phases import compose_phases
from .dp_accounting import as_relation, clipped_sensitivity, is_replace_one

__all__ = ["runs_from_opacus_history", "from_opacus_history"]


def runs_from_opacus_history(
    history: Any, relation: Any = None, sensitivity: float | None = None
) -> list[Training]:
    """The phases of an Opacus accountant's ``history`` (``(noise_multiplier, sample_rate,
    steps)`` triples, as kept by Opacus's RDP, PRV and GDP accountants, which assume Poisson
    sampling): one ``Training(Gaussian(noise), Poisson(rate), steps)`` per distinct
    (noise, rate), steps summed, in order of first appearance.  ``relation`` and
    ``sensitivity`` as for :class:`PrivampAccountant` (dp-accounting's ``REPLACE_ONE`` at the
    default sensitivity: :class:`~privamp.HybridSubstitution` at 1, as dp-accounting's PLD).
    Pass the phases to ``privamp.compose``, or use :func:`from_opacus_history`."""
    rel = as_relation(relation)
    sens = clipped_sensitivity(rel, sensitivity)
    if is_replace_one(relation) and sensitivity is None:  # dp-accounting's Poisson REPLACE_ONE
        rel, sens = HybridSubstitution(), 1.0
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
