"""Floors of the RDP -> (eps, delta) conversion (Balle et al. 2020, Thm 21): what it can give
at best over an interval of orders, from a lower bound of the curve there (used to screen
orders and settings without evaluating them).
"""

from __future__ import annotations

import numpy as np

__all__ = ["eps_floor", "log_delta_floor"]


def eps_floor(a: np.ndarray, b: np.ndarray, rdp_a: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """floor[d, k] <= the Balle et al. 2020 (Thm 21) epsilon at delta[d] from any RDP curve
    r with r(alpha) >= rdp_a[k] for every order alpha in [a[k], b[k]] (a nondecreasing lower
    bound of the curve), the total-variation shortcut included.

    Term by term on [a, b]: r >= r(a), log(1 - 1/alpha) >= log(1 - 1/a), and
    (log(1/delta) - log alpha) / (alpha - 1) >= its numerator at b over (b - 1) (numerator
    >= 0) or over (a - 1) (numerator < 0)."""
    a, b, r = a[None, :], b[None, :], rdp_a[None, :]
    num = -np.log(delta)[:, None] - np.log(b)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tail = np.where(num >= 0, num / (b - 1.0), num / (a - 1.0))
        eps = r + np.log1p(-1.0 / a) + tail
        tv = -np.expm1(-r) <= (delta**2)[:, None]
    eps = np.where(np.isnan(eps), np.inf, eps)
    return np.where(tv, 0.0, np.maximum(eps, 0.0))


def log_delta_floor(a: np.ndarray, b: np.ndarray, rdp_a: np.ndarray,
                    epsilon: np.ndarray) -> np.ndarray:
    """floor[e, k] <= log of the Balle et al. 2020 (Thm 21) delta at epsilon[e] from any RDP
    curve r >= rdp_a[k] on [a[k], b[k]] (see :func:`eps_floor`), TV cap and 1 included."""
    a, b, r = a[None, :], b[None, :], rdp_a[None, :]
    x = r - epsilon[:, None] + np.log1p(-1.0 / a)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ld = np.where(x >= 0, (a - 1.0) * x, (b - 1.0) * x) - np.log(b)
        tv = 0.5 * np.log(-np.expm1(-r))
    ld = np.where(np.isnan(ld), np.inf, ld)
    return np.minimum(np.minimum(ld, tv), 0.0)
