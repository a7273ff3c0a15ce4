"""Heat maps of a sweep: epsilon (or delta, or the calibrated noise) over two grid axes, one
panel per sampler, the certified interval written in the cells where it is wide.
Needs matplotlib (``pip install 'privamp[plot]'``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from ..results import Bound, Kind
from .runs import RESULT_COLUMNS, result_columns
from .table import SweepResult

__all__ = ["heatmap"]

#: an interval is "wide" (both ends written in the cell) when upper / lower exceeds this
WIDE = 1.1


def _label(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _cell_text(up: float | None, lo: float | None, kind: str) -> str:
    """The value (rounded to its safe side: an upper bound up, a lower bound down), with the
    lower bound before it where the interval is wide."""
    if up is None or not math.isfinite(up):
        return "n/a"
    text = format(Bound(up, cast(Kind, kind), "sweep"), ".3g") if kind != "exact" else f"{up:.3g}"
    if lo is not None and lo > 0 and up / lo > WIDE:
        return f"{format(Bound(lo, 'lower', 'sweep'), '.3g')}–\n{text}"
    return text


def heatmap(
    result: SweepResult,
    x: str,
    y: str,
    *,
    value: str | None = None,
    panel: str = "sampler",
    where: Mapping[str, Any] | None = None,
    path: str | Path | None = None,
    title: str | None = None,
) -> Any:
    """Heat map of ``value`` over the grid keys ``x`` and ``y``, one panel per ``panel``.

    Args:
        result: a sweep's result.
        x, y: two grid keys (columns) varying in the sweep.
        value: the column shown (default: the epsilon or delta upper bound, or the calibrated
            knob); its certified lower bound, where the row has one and the interval is wide,
            is written with it in the cell.
        panel: the key with one panel per value (default the sampler).
        where: fixed values of the other keys that vary, e.g. ``{"delta": 1e-5}``.
        path: where to save the figure (png, pdf, svg); None: not saved.
        title: the figure's title.

    Returns:
        The matplotlib Figure.

    Raises:
        ValueError: ``x``, ``y``, ``panel`` or ``value`` is not a column, or another key still
            varies (name it in ``where``).
        ImportError: matplotlib is missing.
    """
    try:
        import matplotlib

        if path is not None:
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
        from matplotlib.colors import LogNorm, Normalize
    except ImportError as exc:
        raise ImportError("heat maps need matplotlib: pip install 'privamp[plot]'") from exc
    knob = result.meta.get("knob", "noise")
    results = set(result_columns(result.task, knob)) | set(RESULT_COLUMNS)
    if value is None:
        value = knob if result.task == "calibrate" else f"{result.task}_upper"
    lower = f"{result.task}_lower" if value == f"{result.task}_upper" else None
    for name, key in (("x", x), ("y", y), ("panel", panel), ("value", value)):
        if key not in result.columns:
            raise ValueError(f"{name}={key!r} is not a column of this sweep "
                             f"({', '.join(result.columns)})")
    rows = [r for r in result.rows
            if all(r.get(k) == v for k, v in (where or {}).items())]
    if not rows:
        raise ValueError(f"no row matches where={dict(where or {})}")
    config_cols = [c for c in result.columns if c not in results and c not in (x, y, panel)]
    varying = [c for c in config_cols if len({repr(r.get(c)) for r in rows}) > 1]
    if varying:
        raise ValueError(f"{', '.join(varying)} still vary: fix them with where={{...}} "
                         f"(e.g. where={{{varying[0]!r}: {rows[0].get(varying[0])!r}}})")
    panels = list(dict.fromkeys(r.get(panel) for r in rows))
    xs = sorted({r.get(x) for r in rows}, key=_order)
    ys = sorted({r.get(y) for r in rows}, key=_order)
    vals = [float(r[value]) for r in rows
            if r.get(value) is not None and math.isfinite(float(r[value])) and r[value] > 0]
    if vals and max(vals) / min(vals) > 10:
        norm: Any = LogNorm(min(vals), max(vals))
    else:
        norm = Normalize(min(vals, default=0.0), max(vals, default=1.0))
    fig, axes = plt.subplots(1, len(panels), figsize=(1.2 + 0.9 * len(xs) * len(panels)
                                                      + 0.8 * len(panels), 1.0 + 0.6 * len(ys)),
                             squeeze=False, constrained_layout=True)
    image = None
    for ax, p in zip(axes[0], panels, strict=True):
        grid = [[math.nan] * len(xs) for _ in ys]
        text = [[""] * len(xs) for _ in ys]
        for r in rows:
            if r.get(panel) != p:
                continue
            i, j = ys.index(r.get(y)), xs.index(r.get(x))
            v = r.get(value)
            lo = r.get(lower) if lower else None
            grid[i][j] = math.nan if v is None else float(v)
            kind = "upper" if lower else str(r.get("kind") or "exact")
            text[i][j] = _cell_text(v, lo, kind) if r["status"] == "answered" else r["status"]
        image = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis", norm=norm)
        for i in range(len(ys)):
            for j in range(len(xs)):
                dark = math.isfinite(grid[i][j]) and float(norm(grid[i][j])) < 0.5
                ax.text(j, i, text[i][j], ha="center", va="center", fontsize=7,
                        color="white" if dark else "black")
        ax.set_xticks(range(len(xs)), [_label(v) for v in xs])
        ax.set_yticks(range(len(ys)), [_label(v) for v in ys])
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.set_title(f"{panel} = {p}", fontsize=9)
    if image is not None:
        fig.colorbar(image, ax=list(axes[0]), label=value)
    if title:
        fig.suptitle(title, fontsize=10)
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def _order(v: Any) -> tuple[int, Any]:
    return (0, v) if isinstance(v, (int, float)) else (1, str(v))
