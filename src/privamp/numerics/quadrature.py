"""Gauss–Legendre nodes and weights on [0, 1].

The certified enclosures of :mod:`privamp.numerics.mixture_divergence` apply this rule on
panels together with a rigorous error bound (Trefethen, ATAP Thm 19.3); the rule itself is
all that is needed here.  (The earlier log-space composite rule, whose error was the estimate
``|T_h - T_2h|``, is gone: issue 17.)
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["gauss_legendre"]


@lru_cache(maxsize=16)
def gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes in (0, 1) and weights (summing to 1) of the n-point Gauss–Legendre rule on [0, 1]."""
    x, w = np.polynomial.legendre.leggauss(n)
    return (x + 1.0) / 2.0, w / 2.0
