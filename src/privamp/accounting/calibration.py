"""Calibration (noise for a target) and side-by-side comparison of schemes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .._validation import check_delta, check_positive
from ..errors import NotApplicable
from ..results import Bound, Guarantee
from ..sampling.schemes import Scheme
from .training import Training

__all__ = [
    "calibrate",
    "compare",
    "Comparison",
]


def calibrate(
    target_epsilon: float,
    delta: float,
    make_run: Callable[[float], Training],
    *,
    accountant: str = "best",
    lo: float = 1e-2,
    hi: float = 1e3,
    rtol: float = 1e-3,
) -> Bound:
    """Smallest noise multiplier sigma (within ``rtol``) for which ``make_run(sigma)`` has an
    epsilon *upper bound* at ``delta`` no larger than ``target_epsilon``.

    Returns a Bound of kind ``"upper"``: the returned sigma meets the target (it is an upper
    bound on the smallest sigma that does), with the accountant's source.
    """
    target = check_positive("target_epsilon", target_epsilon)
    d = float(check_delta(delta))
    lo = check_positive("lo", lo)
    hi = check_positive("hi", hi)

    def eps_at(sigma: float, probe: bool = True) -> tuple[float, str]:
        run = make_run(sigma)
        try:
            g = run.epsilon(d, accountant=accountant)
        except NotApplicable:
            if not probe:
                raise
            # the accountant declines this noise level (e.g. losses too large to discretise
            # at tiny sigma): count it as not meeting the target, never as meeting it
            return float("inf"), ""
        if g.upper is None:
            raise ValueError("the accountant gives no upper bound for this run; cannot calibrate")
        return float(g.upper.value), g.upper.source

    e_hi, src = eps_at(hi, probe=False)
    if e_hi > target:
        raise ValueError(
            f"even sigma={hi} gives epsilon {e_hi:.4g} > target_epsilon={target}; raise hi"
        )
    e_lo, _ = eps_at(lo)
    if e_lo <= target:
        return Bound(lo, "upper", f"calibrated (target met already at the search floor); {src}")
    a, b = np.log(lo), np.log(hi)
    while b - a > np.log1p(rtol):
        m = 0.5 * (a + b)
        e, s = eps_at(float(np.exp(m)))
        if e <= target:
            b, src = m, s
        else:
            a = m
    return Bound(float(np.exp(b)), "upper", f"calibrated sigma; epsilon by {src}")


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
            src = g.upper.source if g.upper is not None else g.lower.source
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
) -> Comparison:
    """The same run (mechanism, steps, relation) under each scheme: epsilon at ``delta`` (or
    delta at ``epsilon``).  A scheme no accountant handles gets a row saying so."""
    if (delta is None) == (epsilon is None):
        raise ValueError("give exactly one of delta or epsilon")
    rows = []
    for scheme in schemes:
        r = Training(run.mechanism, scheme, steps=run.steps, relation=run.relation)
        try:
            g = r.epsilon(delta) if delta is not None else r.delta(epsilon)
            rows.append((scheme.name, g, ""))
        except NotApplicable as exc:
            rows.append((scheme.name, None, f"not available: {exc}"))
    quantity = "epsilon" if delta is not None else "delta"
    return Comparison(quantity, float(delta if delta is not None else epsilon), tuple(rows))

