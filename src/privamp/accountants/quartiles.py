"""The quartile brackets of :func:`privamp.accountants.grid.loss_iqr` for the remove direction
of Poisson-subsampled Gaussian, without its five rounds of tail evaluations (issue 28: the
grid plan's cost).  A heuristic's input: soundness never depends on it."""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from ..pairs.loss_pair import LossPair

__all__ = ["mixture_quantile", "replayed_brackets"]


def mixture_quantile(s: float, w: float, p: float) -> float:
    """The p-quantile of the privacy loss ``log(1 - w + w e^(s x - s^2 / 2))`` under
    ``x ~ w N(s, 1) + (1 - w) N(0, 1)`` (the remove direction ``(w P + (1 - w) Q, Q)`` of
    the Gaussian pair ``P = N(s, 1), Q = N(0, 1)``, Poisson-subsampled at rate w): the loss is
    increasing in x, so it is the loss at x's p-quantile, which lies in
    ``[Phi^-1(p), Phi^-1(p) + s]`` (the mixture's CDF lies between ``Phi(x - s)`` and
    ``Phi(x)``) and is found by Brent's method to a few ulps.

    Args:
        s: the Gaussian pair's shift (> 0).
        w: the rate, in (0, 1).
        p: the level, in (0, 1).

    Returns:
        The quantile of the loss (nan if the bracket fails in floats).
    """
    r2 = math.sqrt(0.5)

    def cdf(x: float) -> float:
        return w * 0.5 * math.erfc((s - x) * r2) + (1.0 - w) * 0.5 * math.erfc(-x * r2) - p

    z = float(special.ndtri(p))
    a, b = z - 1e-9 * (1.0 + abs(z)), z + s + 1e-9 * (1.0 + abs(z) + s)
    if not (cdf(a) < 0.0 < cdf(b)):  # (not bracketed in floats: no quantile from here)
        return math.nan
    x = float(optimize.brentq(cdf, a, b, xtol=1e-15, rtol=8.9e-16, maxiter=200))
    return math.log1p(w * math.expm1(s * x - 0.5 * s * s))


def replayed_brackets(pair: LossPair, quantiles: list[float], targets: tuple[float, ...],
                      lo: float, hi: float, rounds: int = 5, points: int = 32
                      ) -> list[tuple[float, float]] | None:
    """The final brackets of the bracket search of
    :func:`privamp.accountants.grid.loss_iqr` (``rounds`` rounds of ``points - 1`` interior
    points from ``(lo, hi)``, keeping ``P(L <= x) < target`` on the left end), replayed from
    the known quantiles (a point is on the left side iff it lies below its quantile), then
    checked by one evaluation of the pair's tail at the final ends: if every final left end
    has ``P(L <= a) < target`` and every right end ``P(L <= b) >= target`` (ends still at
    ``lo`` or ``hi`` were never evaluated by the search either), the tail being monotone
    puts every point the search would have evaluated on the same side as in the replay, so
    the brackets are the search's, bit for bit.  None when a check fails (the caller then
    searches).

    Args:
        pair: the pair (its tail under P checks the replay).
        quantiles: the loss's quantiles at ``targets``.
        targets: the levels.
        lo, hi: the search's starting bracket.
        rounds, points: as the search.

    Returns:
        The final bracket per target, or None (also for a quantile that is not finite).
    """
    if not all(math.isfinite(q) for q in quantiles):
        return None
    out = []
    for q in quantiles:
        a, b = lo, hi
        for _ in range(rounds):
            x = a + (b - a) * np.arange(1, points) / points
            k = int(np.count_nonzero(x < q))
            a, b = (float(x[k - 1]) if k > 0 else a, float(x[k]) if k < len(x) else b)
        out.append((a, b))
    at = np.array([e for ab in out for e in ab])
    with np.errstate(all="ignore"):
        v = np.asarray(pair.tail(at, "P", False, False), dtype=float)
    for j, ((a, b), t) in enumerate(zip(out, targets, strict=True)):
        if (a != lo and not v[2 * j] < t) or (b != hi and v[2 * j + 1] < t):
            return None
    return out
