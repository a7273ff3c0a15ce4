"""Certified trade-off curves (f-DP) of one discretised PLD.

A pair (P, Q) with privacy profile ``delta(eps) = H_{e^eps}(P || Q)`` has the trade-off curve
(Dong, Roth, Su 2022, JRSS-B, arXiv:1905.02383, Prop. 2.12)

    T(Q, P)(alpha) = sup_{eps real} [1 - delta(eps) - e^eps alpha],

the least type-II error ``beta = 1 - P(phi)`` of a test phi of type-I error ``Q(phi) <=
alpha`` (null hypothesis Q: for the remove direction, the world without the record, so
``1 - beta`` is the true-positive rate of a membership attack at false-positive rate alpha).
The reverse test has, with the same profile, ``T(P, Q)(alpha) = sup_eps e^{-eps} [1 -
delta(eps) - alpha]`` (the inverse curve, Prop. 2.4's ``f^{-1}``).

* Lower envelope (the guarantee): each ``eps`` gives an affine constraint valid for every
  test, so the max over any FINITE set of eps of ``1 - delta_up(eps) - e^eps alpha`` (with a
  certified upper bound delta_up on the profile) is a sound lower bound on beta.  Only
  ``eps >= 0`` is used (the pessimistic sides of privamp's accountants are certified there;
  ``eps < 0`` of one order is ``eps > 0`` of the other order, which the caller adds as the
  inverse family).  The eps are picked per alpha at the kinks of the grid pair's curve that
  touch it (and their neighbours, and 0): the choice affects tightness, never soundness.
* Upper envelope (what an attack achieves on the realised pair): needs the sup over ALL eps
  of a certified LOWER bound on the profile; a finite eps grid would under-estimate the sup.
  It is computed exactly instead: the optimistic grid pair's profile D~ satisfies ``D~(a) -
  slack <= D(a)``, the realised pair's profile, at every ``a = e^eps`` in [0, inf) (the
  optimistic sides are certified there: discretisation, composition and truncation only
  lower a profile at every a; lower sides that are a statistic of the realised pair's output
  are post-processings, below it at every a too), which gives ``beta <= 1 + slack -
  inf_a [D~(a) + a alpha]``, and by linear-programming duality ``inf_a [D~(a) + a alpha]`` is
  the Neyman-Pearson power ``pi~(alpha) = max {P~(phi) : Q~(phi) <= alpha}`` of the grid
  measures (atoms p_j, q_j = p_j e^{-l_j}; P~-mass at +inf).  A FEASIBLE test (top atoms by
  loss, the boundary one randomised) gives a certified lower bound on pi~: its vertices are
  bounded outward (Q-sums rounded up, P-sums down) and, pi~ being concave, the chords between
  vertices lying below it stay below it.
"""

from __future__ import annotations

import numpy as np

from .budget import QUERY_REL
from .grid import PLD

__all__ = [
    "beta_lower",
    "beta_upper",
    "inverse_beta_upper",
    "lower_lines",
]


_U = 2.0 ** -53


def _q_masses(p: PLD) -> np.ndarray:
    """Q-masses ``p_j e^{-l_j}`` of the grid pair (no overflow: computed in logs)."""
    m = p.masses
    out = np.zeros_like(m)
    pos = m > 0
    with np.errstate(over="ignore", under="ignore"):
        out[pos] = np.exp(np.log(m[pos]) - p.losses[pos])
    return out


def _candidates(idx: np.ndarray, n: int) -> list[np.ndarray]:
    return [np.clip(idx + d, 0, n - 1) for d in (-1, 0, 1)]


def lower_lines(pess: PLD, alphas: np.ndarray, inverse: bool = False
                ) -> tuple[np.ndarray, np.ndarray]:
    """The best certified affine lower bound ``beta >= c + s alpha`` (valid at EVERY alpha)
    found for each of ``alphas``, from a pessimistic PLD of (P, Q).

    ``inverse=False``: the curve T(Q, P) (type I under Q), lines ``1 - delta_up(eps) - e^eps
    alpha``; ``True``: T(P, Q) (type I under P), lines ``e^{-eps} (1 - delta_up(eps) -
    alpha)``; ``eps >= 0``, ``delta_up`` = :meth:`PLD.delta` (certified upper bound), a float
    allowance taken off.

    Args:
        pess: a pessimistic PLD (its profile bounds the true one from above for eps >= 0).
        alphas: type-I errors in [0, 1].
        inverse: the reverse test's curve.

    Returns:
        (intercepts c, slopes s), flat arrays of the size of ``alphas``.

    Raises:
        ValueError: ``pess`` is not pessimistic.
    """
    if pess.kind != "pessimistic":
        raise ValueError("lower_lines needs a pessimistic PLD")
    flat = np.asarray(alphas, dtype=float).ravel()
    n = len(pess.masses)
    losses = pess.losses
    if inverse:
        # vertex where the curve's beta-coordinate P(L < l) crosses alpha
        idx = np.searchsorted(np.cumsum(pess.masses), flat)
    else:
        # vertex where the type-I error Q(L >= l) crosses alpha (suffix sums decrease)
        tail = np.cumsum(_q_masses(pess)[::-1])  # tail[k] = Q(L >= l_{n-1-k})
        idx = n - 1 - np.searchsorted(tail, flat)
    eps_sets = [np.maximum(losses[c], 0.0) for c in _candidates(idx, n)]
    eps_sets.append(np.zeros_like(flat))
    best = np.full_like(flat, -np.inf)
    c_best = np.zeros_like(flat)
    s_best = np.zeros_like(flat)
    for eps in eps_sets:
        d = pess.delta(eps)
        with np.errstate(over="ignore"):
            if inverse:
                w = np.exp(-eps)
                c, s = w * (1.0 - d) - 8 * _U, -w * (1 + 4 * _U)
            else:
                c, s = 1.0 - d - 8 * _U, -np.exp(eps) * (1 + 8 * _U)
            v = c + s * flat
        v = np.where(np.isfinite(v), v, -np.inf)
        take = v > best
        best = np.where(take, v, best)
        c_best = np.where(take, c, c_best)
        s_best = np.where(take, s, s_best)
    return c_best, s_best


def beta_lower(pess: PLD, alphas: np.ndarray, inverse: bool = False) -> np.ndarray:
    """Certified lower bounds on beta at ``alphas`` from a pessimistic PLD of (P, Q): the
    lines of :func:`lower_lines` at their alphas, clipped to ``[0, 1 - alpha]`` (the true
    curve lies there).

    Args:
        pess: a pessimistic PLD.
        alphas: type-I errors in [0, 1].
        inverse: the reverse test's curve T(P, Q).

    Returns:
        Array of lower bounds on beta, the shape of ``alphas``.

    Raises:
        ValueError: ``pess`` is not pessimistic.
    """
    a = np.asarray(alphas, dtype=float)
    c, s = lower_lines(pess, a, inverse)
    flat = a.ravel()
    v = np.clip(c + s * flat, 0.0, None)
    return np.minimum(v, np.maximum(1.0 - flat, 0.0)).reshape(a.shape)


def _power_vertices(opt: PLD) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (Q-size upper bound, power lower bound) of the feasible Neyman-Pearson tests
    of the optimistic grid pair, starting at the atom at +inf, in decreasing loss."""
    p = opt.masses[::-1]
    q = _q_masses(opt)[::-1]
    n = len(p)
    gamma = (n + 16) * _U * 1.01  # recursive summation of nonnegative terms, exp/log ulps
    qc = np.concatenate(([0.0], np.cumsum(q) * (1 + gamma) + 1e-300 * np.arange(1, n + 1)))
    pc = np.concatenate(([0.0], np.cumsum(p) * (1 - gamma)))
    pc = (pc + opt.inf_mass * (1 - 4 * _U)) * (1 - QUERY_REL)
    return qc, pc


def beta_upper(opt: PLD, alphas: np.ndarray) -> np.ndarray:
    """Certified upper bounds on beta of T(Q0, P0) at ``alphas`` for the realised pair (P0,
    Q0) whose profile the optimistic PLD ``opt`` bounds from below (minus its slack) at every
    ``eps`` real: ``min(1 - alpha, 1 + slack - pi_lo(alpha))`` (module docstring).

    Args:
        opt: an optimistic PLD.
        alphas: type-I errors in [0, 1].

    Returns:
        Array of upper bounds on beta, the shape of ``alphas``.

    Raises:
        ValueError: ``opt`` is not optimistic.
    """
    if opt.kind != "optimistic":
        raise ValueError("beta_upper needs an optimistic PLD")
    a = np.asarray(alphas, dtype=float)
    qc, pc = _power_vertices(opt)
    power = np.interp(a, qc, pc) * (1 - 8 * _U) - 8 * _U
    up = 1.0 + opt.slack * (1 + 4 * _U) - np.maximum(power, 0.0)
    return np.clip(np.minimum(up, 1.0 - a), 0.0, 1.0)


def inverse_beta_upper(opt: PLD, alphas: np.ndarray) -> np.ndarray:
    """Certified upper bounds on beta of the reverse test T(P0, Q0) = T(Q0, P0)^{-1} at
    ``alphas``: the generalised inverse of the upper bound u of :func:`beta_upper` (the inverse
    of an upper bound of a nonincreasing curve is an upper bound of its inverse),
    ``u^{-1}(alpha) = min(1 - alpha, smallest t with pi_lo(t) >= 1 + slack - alpha)``, the
    interpolation rounded up.

    Args:
        opt: an optimistic PLD.
        alphas: type-I errors (of the reverse test) in [0, 1].

    Returns:
        Array of upper bounds on beta, the shape of ``alphas``.

    Raises:
        ValueError: ``opt`` is not optimistic.
    """
    if opt.kind != "optimistic":
        raise ValueError("inverse_beta_upper needs an optimistic PLD")
    a = np.asarray(alphas, dtype=float)
    qc, pc = _power_vertices(opt)
    pc = pc * (1 - 8 * _U) - 8 * _U  # the same lower bound on the power as beta_upper
    target = 1.0 + opt.slack * (1 + 4 * _U) - a
    t = np.interp(target, pc, qc)
    t = np.where(target > pc[-1], np.inf, t * (1 + 8 * _U) + 8 * _U)
    return np.clip(np.minimum(t, 1.0 - a), 0.0, 1.0)
