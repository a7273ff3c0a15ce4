"""Redraw the figures of the four papers: ``privamp reproduce PAPER [--figure N] [--out DIR]``.

Each paper has a module here exposing ``FIGURES``: a dict from figure name (e.g. ``"1"``,
``"1a"``, ``"A"``) to a function ``draw(out_dir: pathlib.Path, fast: bool) -> list[Path]`` that
writes image files (and, where useful, a CSV of the numbers) and returns their paths.
``fast=True`` uses coarser grids so that tests can run every figure in seconds.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

__all__ = ["PAPERS", "figures", "reproduce"]

PAPERS = {
    "balle2018": "Balle, Barthe, Gaboardi 2018 (privacy amplification by subsampling)",
    "schuchardt2024": "Schuchardt et al. 2024 (group privacy amplification, Rényi DP)",
    "dong2025": "Dong, Chen, Ozgur 2025 (model and data partitioning)",
    "chua2024": "Chua et al. 2024 (how private are DP-SGD implementations?)",
    "choquette2023": "Choquette-Choo et al. 2023 (amplified BandMF; jax_privacy's accountant "
                     "value reproduced)",
}


def figures(paper: str) -> dict[str, Callable[[Path, bool], list[Path]]]:
    if paper not in PAPERS:
        raise ValueError(f"paper must be one of {', '.join(PAPERS)}, got {paper!r}")
    module = importlib.import_module(f"{__name__}.{paper}")
    return dict(getattr(module, "FIGURES", {}))


def reproduce(paper: str, figure: str | None = None, out: str | Path = "figures",
              fast: bool = False) -> list[Path]:
    """Draw one figure (or all of them) of ``paper`` into ``out``; returns the files written."""
    figs = figures(paper)
    if not figs:
        raise ValueError(f"no figures of {paper} can be reproduced yet")
    if figure is not None and str(figure) not in figs:
        raise ValueError(f"figure must be one of {', '.join(figs)} for {paper}, got {figure!r}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    names = [str(figure)] if figure is not None else list(figs)
    written: list[Path] = []
    for name in names:
        written.extend(figs[name](out, fast))
    return written
