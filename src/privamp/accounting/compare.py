"""Side-by-side comparison of one run under several schemes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from ..errors import NotApplicable
from ..results import Bound, Guarantee
from ..sampling.schemes import Scheme
from .training import Training

__all__ = ["Comparison", "compare"]


@dataclass(frozen=True)
class Comparison:
    """Guarantees of one run under several schemes, printable as a table."""

    quantity: str  # "epsilon" or "delta"
    at: float
    rows: tuple[tuple[str, Guarantee | None, str], ...]  # (scheme name, guarantee, note)

    def __str__(self) -> str:
        other = "delta" if self.quantity == "epsilon" else "epsilon"
        head = f"{self.quantity} at {other} = {self.at:g}"
        lines = [head, f"{'scheme':<22}{'lower':>12}{'upper':>12}  source"]
        for name, g, note in self.rows:
            if g is None:
                lines.append(f"{name:<22}{'-':>12}{'-':>12}  {note}")
                continue
            lo = "-" if g.lower is None else f"{float(g.lower.value):.4g}"
            hi = "-" if g.upper is None else f"{float(g.upper.value):.4g}"
            src = g.upper.source if g.upper is not None else cast(Bound, g.lower).source
            src = f"({note}) {src}" if note else src
            lines.append(f"{name:<22}{lo:>12}{hi:>12}  {src}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "quantity": self.quantity,
            "at": self.at,
            "rows": [
                {"scheme": n, "guarantee": None if g is None else g.to_dict(), "note": note}
                for n, g, note in self.rows
            ],
        }


def compare(
    run: Training,
    schemes: Sequence[Scheme],
    *,
    delta: float | None = None,
    epsilon: float | None = None,
    scheme_relations: bool = False,
) -> Comparison:
    """The same run (mechanism, steps, relation) under each scheme: epsilon at ``delta`` (or
    delta at ``epsilon``).  A scheme no accountant handles gets a row saying so.

    ``scheme_relations=True``: each scheme under its own default relation
    (:meth:`~privamp.Scheme.default_relation`, with the run's group size), named in the row's
    note where it differs from the run's (e.g. zero-out for shuffled batches, which no
    analysis covers under add/remove)."""
    if (delta is None) == (epsilon is None):
        raise ValueError("give exactly one of delta or epsilon")
    rows: list[tuple[str, Guarantee | None, str]] = []
    for scheme in schemes:
        rel = (scheme.default_relation(run.resolved_relation.group) if scheme_relations
               else run.relation)
        r = Training(run.mechanism, scheme, steps=run.steps, relation=rel)
        note = "" if rel == run.relation else f"under {rel}"
        try:
            g = r.epsilon(delta) if delta is not None else r.delta(cast(float, epsilon))
            rows.append((scheme.name, g, note))
        except NotApplicable as exc:
            rows.append((scheme.name, None, f"not available: {exc}"))
    quantity = "epsilon" if delta is not None else "delta"
    return Comparison(quantity, float(delta if delta is not None else cast(float, epsilon)),
                      tuple(rows))

