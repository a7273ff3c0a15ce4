"""Epsilon over training as an inline SVG drawn on the server (no JavaScript): the certified
interval shaded between the lower and upper curves."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

__all__ = ["curve_svg"]

W, H, LEFT, RIGHT, TOP, BOTTOM = 640, 300, 64, 16, 16, 44


def _ticks(hi: float, n: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``hi``."""
    if hi <= 0:
        return [0.0, 1.0]
    raw = hi / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(math.ceil(hi / step)) + 1)]


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if x >= 1000 else f"{x:g}"


def curve_svg(steps: Sequence[int], upper: Sequence[float | None],
              lower: Sequence[float | None], title: str) -> str:
    """The SVG of epsilon against steps: the upper curve, the lower curve and the interval
    between them shaded (a missing lower side is drawn at 0, a missing upper side leaves the
    point out).

    Args:
        steps: the steps of the points (increasing).
        upper: epsilon upper bounds (``None`` where absent).
        lower: epsilon lower bounds (``None`` where absent).
        title: the accessible title.

    Returns:
        An ``<svg>`` element as text.
    """
    pts = [(s, u, 0.0 if lo is None else lo)
           for s, u, lo in zip(steps, upper, lower, strict=True) if u is not None]
    body = [f'<svg class="plot" viewBox="0 0 {W} {H}" role="img" '
            f'xmlns="http://www.w3.org/2000/svg" aria-label="{escape(title)}">',
            f"<title>{escape(title)}</title>"]
    if not pts:
        body.append(f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle">no upper bound to '
                    "plot</text></svg>")
        return "".join(body)
    xmax = max(p[0] for p in pts) or 1
    yt = _ticks(max(p[1] for p in pts))
    ymax = yt[-1]

    def x(s: float) -> float:
        return LEFT + (W - LEFT - RIGHT) * s / xmax

    def y(e: float) -> float:
        return H - BOTTOM - (H - TOP - BOTTOM) * e / ymax

    for t in yt:
        body.append(f'<line class="grid" x1="{LEFT}" x2="{W - RIGHT}" y1="{y(t):.1f}" '
                    f'y2="{y(t):.1f}"/><text class="tick" x="{LEFT - 6}" y="{y(t) + 4:.1f}" '
                    f'text-anchor="end">{_fmt(t)}</text>')
    for t in _ticks(xmax, 4):
        if t <= xmax:
            body.append(f'<text class="tick" x="{x(t):.1f}" y="{H - BOTTOM + 16}" '
                        f'text-anchor="middle">{_fmt(t)}</text>')
    band = [f"{x(s):.1f},{y(u):.1f}" for s, u, _ in pts] + \
           [f"{x(s):.1f},{y(lo):.1f}" for s, _, lo in reversed(pts)]
    if len(pts) == 1:
        s, u, lo = pts[0]
        body.append(f'<line class="band-line" x1="{x(s):.1f}" x2="{x(s):.1f}" '
                    f'y1="{y(u):.1f}" y2="{y(lo):.1f}"/>')
    body.append(f'<polygon class="band" points="{" ".join(band)}"/>')
    up = " ".join(f"{x(s):.1f},{y(u):.1f}" for s, u, _ in pts)
    lo_line = " ".join(f"{x(s):.1f},{y(lo):.1f}" for s, _, lo in pts)
    body.append(f'<polyline class="upper" points="{up}"/>')
    body.append(f'<polyline class="lower" points="{lo_line}"/>')
    for s, u, lo in pts:
        body.append(f'<circle class="upper" cx="{x(s):.1f}" cy="{y(u):.1f}" r="3">'
                    f"<title>step {s}: epsilon in [{lo:.4g}, {u:.4g}]</title></circle>")
    body.append(f'<text class="axis" x="{(LEFT + W - RIGHT) / 2}" y="{H - 6}" '
                'text-anchor="middle">training steps</text>')
    body.append(f'<text class="axis" x="14" y="{(TOP + H - BOTTOM) / 2}" text-anchor="middle" '
                f'transform="rotate(-90 14 {(TOP + H - BOTTOM) / 2})">epsilon</text>')
    body.append("</svg>")
    return "".join(body)
