"""Substitution as removal then addition, at the level of the whole run.

For substitution neighbours x = x'' + {v}, x' = x'' + {v'} and any mechanism M (adaptive
composition included), M(x'') is a legitimate run, so for every split eps = eps1 + eps2

    H_{e^eps}(M(x) || M(x')) <= H_{e^eps1}(M(x) || M(x'')) + e^eps1 H_{e^eps2}(M(x'') || M(x'))

(write A(E) - e^eps B(E) = [A(E) - e^eps1 C(E)] + e^eps1 [C(E) - e^eps2 B(E)]).  The two
terms are a removal and an addition: each is bounded by composing the add/remove dominating
pair (remove order and add order) over the run.  Every split gives an upper bound, so the
minimum over a grid of splits is one.  privamp applies it to sampling with replacement
(docs/findings.md), where it is much tighter than Balle, Barthe, Gaboardi 2018, Thm 10.
"""

from __future__ import annotations

import numpy as np

from ...numerics.roots import bisect_monotone

__all__ = ["TriangleUpper"]


class TriangleUpper:
    """Upper bounds on delta(eps) / eps(delta) of substitution neighbours from the composed
    removal curve ``remove`` (M(x) vs M(x'')) and addition curve ``add`` (M(x'') vs M(x')),
    two objects with a vectorised upper-bound ``delta(eps)`` for any real eps."""

    def __init__(self, remove, add, splits: int = 161) -> None:
        self.remove, self.add, self.splits = remove, add, int(splits)

    def _one(self, eps: float) -> float:
        span = max(abs(eps), 1.0)
        e1 = np.linspace(eps - 0.5 * span, eps + 0.5 * span, self.splits)
        for _ in range(3):  # zoom on the best split; every split is a valid bound
            val = self.remove.delta(e1) + np.exp(e1) * self.add.delta(eps - e1)
            i = int(np.argmin(val))
            width = e1[1] - e1[0]
            best = float(val[i])
            e1 = e1[i] + width * np.linspace(-1.0, 1.0, 21)
        return min(best, 1.0)

    def delta(self, epsilon: np.ndarray) -> np.ndarray:
        e = np.asarray(epsilon, dtype=float)
        return np.array([self._one(float(x)) for x in e.ravel()]).reshape(e.shape)

    def epsilon(self, delta: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Smallest eps in [0, hi] (hi: an eps known to meet delta) with delta(eps) <= delta,
        returned on the safe (upper) side of the bisection."""
        d = np.asarray(delta, dtype=float)
        hi = np.broadcast_to(np.asarray(hi, dtype=float), d.shape)
        ok0 = self.delta(np.zeros(d.shape)) <= d
        eps = bisect_monotone(self.delta, d, np.zeros(d.shape), hi, increasing=False,
                              iterations=36, side="hi")
        return np.where(ok0, 0.0, np.minimum(eps, hi))
