"""The Poisson PLD accountant's run PLD on a given grid step (``PLDAnalysis.pld(h)``: a
phase of a composition, on the composition's common grid)."""

from __future__ import annotations

from typing import cast

from ..pairs.loss_pair import LossPair
from ..pld.compose import compose_two_level
from ..pld.discretise import discretise
from ..pld.grid import PLD
from ..pld.two_sided import TwoSidedPLD
from .grid import SECONDARY_COST, lead_direction, secondary_direction
from .pld_run import check_slack

__all__ = ["fixed_step_pld"]


def fixed_step_pld(pairs: list[LossPair], steps: int, h: float) -> TwoSidedPLD:
    """Both sides of both directions of ``steps`` Poisson-subsampled steps on step ``h``
    (``SECONDARY_COST h`` for the add direction of small-rate Gaussian), composed in two
    levels for small-rate Gaussian (:func:`compose_two_level`), else by self-composition.

    Args:
        pairs: one step's dominating pairs [remove, add].
        steps: the number of steps.
        h: the grid step.

    Returns:
        The run's two-sided PLD (``PLDAnalysis.pld(h)``).

    Raises:
        NotApplicable: more steps than a direction's numerical allowances permit.
    """
    tail = min(1e-16, 1e-13 / steps)
    rho = 1e-9  # a fine split: the phase may be a small part of a long history
    dirs: list[tuple[PLD, PLD]] = []
    for pair in pairs:
        two = lead_direction(pair) or secondary_direction(pair)
        step = h * (SECONDARY_COST if secondary_direction(pair) else 1.0)
        p, o = discretise(pair, step, tail, rho_max=rho)
        if not two:
            check_slack(p, steps)
        dirs.append(cast("tuple[PLD, PLD]", tuple(
            compose_two_level(x, steps) if two else x.self_compose(steps) for x in (p, o))))
    return TwoSidedPLD(dirs)
