"""Runs made of phases (a warm-up, a noise schedule, a fine-tuning step), composed with
:func:`privamp.compose`."""

from __future__ import annotations

from ..accounting.composition import Composition, compose
from ..accounting.training import Training


def compose_phases(runs: list[Training], what: str) -> Composition:
    """The composition of ``runs`` (``what`` names the history they come from, for errors)."""
    if not runs:
        raise ValueError(f"{what}: no phase to account")
    return compose(*runs)
