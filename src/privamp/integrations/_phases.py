"""Runs made of phases (a warm-up, a noise schedule, a fine-tuning step): composed with
``privamp.compose`` (issue 14) once that is in the build."""

from __future__ import annotations

import sys
from typing import Any

from .. import accounting
from ..accounting.training import Training
from ..errors import NotApplicable


def compose_phases(runs: list[Training], what: str) -> Any:
    """The composition of ``runs`` (``privamp.compose``); ``NotApplicable`` naming ``what``
    changed when this build has no composition of runs."""
    compose = getattr(accounting, "compose", None)
    if compose is None:  # exported at the top level only: found at run time, not imported
        compose = getattr(sys.modules.get("privamp"), "compose", None)
    if compose is None:
        raise NotApplicable(
            f"{what}; accounting for phases needs privamp.compose (not in this build)"
        )
    return compose(*runs)
