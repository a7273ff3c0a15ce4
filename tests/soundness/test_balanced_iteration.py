"""Balanced Iteration Subsampling at small noise and tiny T against an independent reference.

The epoch's pair (Dong, Chen, Ozgur 2025, Thm 3.8) for T steps, k participations, shift
s = 1/sigma is P = mean over k-subsets A of N(s 1_A, I_T) vs Q = N(0, I_T).  With
u = (x_1 + ... + x_T)/sqrt(T) and w the projection of x on the complement of the all-ones
vector, the likelihood ratio is e^{r u + c(w)}:
  k = 1:            r = s / sqrt(T),  c(w) = log mean_i e^{s w_i} - s^2 / 2;
  k = T - 1 (T=3):  r = 2 s / sqrt(3), c(w) = log mean_j e^{-s w_j} - s^2.
Under Q, u ~ N(0, 1) is independent of w, so the inner expectations over u are closed forms
(Black-Scholes): remove  E_Q[(e^L - A)_+] = e^{c + r^2/2} Phi(r - t) - A Phi(-t), t = (log A - c)/r;
add  E_P[(e^{-L} - A)_+] = E_Q[(1 - A e^L)_+] = Phi(t') - A e^{c + r^2/2} Phi(t' - r),
t' = (-log A - c)/r.  The outer integral over w (1-D for T = 2, 2-D for T = 3) is a trapezoid
rule on a window that leaves < 1e-20 of the integrand's mass (see :func:`reference_delta`);
the test margins (1e-9) are far above its error.  Nothing here uses privamp's numbers.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import special

import privamp as pa
from privamp.theorems.dong2025 import bis_pld as bp


def _inner(r: float, c: np.ndarray, eps: float, direction: str) -> np.ndarray:
    if direction == "remove":
        t = (eps - c) / r
        return np.exp(c + r * r / 2 + special.log_ndtr(r - t)) - np.exp(eps + special.log_ndtr(-t))
    t = (-eps - c) / r
    return special.ndtr(t) - np.exp(eps + c + r * r / 2 + special.log_ndtr(t - r))


def _outer(T: int, step: float, f) -> float:
    """Trapezoid rule over the (T-1)-dim complement, window [-16, 16]^(T-1)."""
    v = np.arange(-16.0, 16.0 + step / 2, step)
    wv = np.exp(-v * v / 2) / math.sqrt(2 * math.pi) * step
    if T == 2:
        w = v[:, None] * (np.array([1.0, -1.0]) / math.sqrt(2))[None, :]
        return float(np.sum(wv * f(w)))
    b1 = np.array([1.0, -1.0, 0.0]) / math.sqrt(2)
    b2 = np.array([1.0, 1.0, -2.0]) / math.sqrt(6)
    total = 0.0
    for v1, w1 in zip(v, wv, strict=True):  # rows, to bound memory
        w = v1 * b1[None, :] + v[:, None] * b2[None, :]
        total += w1 * float(np.sum(wv * f(w)))
    return total


def reference_delta(sigma: float, T: int, k: int, eps: float, direction: str) -> float:
    """Exact hockey-stick divergence of one epoch (k = 1, T in {2, 3}; or k = 2, T = 3).

    The integrand over the complement w is analytic in a strip and Gaussian-decaying, where
    the trapezoid rule's error is exponentially small in 1/step (about e^{-2 pi a / step}, a
    the strip's half-width, here >= 0.3 for s <= 3.4): step 0.03 makes it < 1e-25; the two
    steps below agree to 1e-12 (checked), far inside the test margin 1e-9."""
    s = 1.0 / sigma
    if k == 1:
        r = s / math.sqrt(T)

        def f(w: np.ndarray) -> np.ndarray:
            c = special.logsumexp(s * w, axis=-1) - math.log(T) - s * s / 2
            return _inner(r, c, eps, direction)
    else:
        assert (T, k) == (3, 2)
        r = 2 * s / math.sqrt(3)

        def f(w: np.ndarray) -> np.ndarray:
            c = special.logsumexp(-s * w, axis=-1) - math.log(3) - s * s
            return _inner(r, c, eps, direction)

    fine = _outer(T, 0.03 if T == 3 else 0.005, f)
    coarse = _outer(T, 0.045 if T == 3 else 0.01, f)
    assert abs(fine - coarse) < 1e-12
    return fine


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_reference_matches_t1_gaussian_limit(direction):
    # sanity of the reference itself: T = 2 with a huge eps has delta ~ 0, and the remove
    # direction at eps = 0 equals the total variation, which for sigma -> large is tiny
    assert abs(reference_delta(0.5, 2, 1, 40.0, direction)) < 1e-12
    assert 0.0 <= reference_delta(5.0, 2, 1, 0.0, direction) < 0.1


@pytest.mark.parametrize("sigma,T,k", [(0.3, 2, 1), (0.5, 2, 1), (0.5, 3, 1), (0.5, 3, 2)])
def test_small_sigma_best_brackets_reference(sigma, T, k):
    run = pa.Training(pa.Gaussian(sigma), pa.BalancedIteration(T, k), epochs=1)
    deltas = np.array([1e-2, 1e-5])
    g = run.epsilon(deltas)
    assert g.upper is not None and g.upper.kind == "upper"
    for delta, e_up in zip(deltas, np.asarray(g.upper.value), strict=True):
        # epsilon(delta) <= e_up  <=>  the exact profile at e_up is <= delta (both directions)
        for direction in ("remove", "add"):
            assert reference_delta(sigma, T, k, float(e_up), direction) <= delta + 1e-9
    if g.lower is not None:
        for delta, e_lo in zip(deltas, np.asarray(g.lower.value), strict=True):
            assert max(reference_delta(sigma, T, k, float(e_lo), d)
                       for d in ("remove", "add")) >= delta - 1e-9
    # the PLD accountant either answers on a coarser lattice (issue 27), bracketing the
    # reference, or refuses, naming the parameter and the range it covers, and "best"
    # records why it declined
    try:
        p = run.epsilon(deltas, accountant="pld")
    except pa.NotApplicable as exc:
        assert re.search(r"sigma=.* covers sigma >= ", str(exc))
        assert any(name == "pld" and "sigma" in why for name, why in g.declined)
        return
    for delta, e_up in zip(deltas, np.asarray(p.upper.value), strict=True):
        for direction in ("remove", "add"):
            assert reference_delta(sigma, T, k, float(e_up), direction) <= delta + 1e-9


@pytest.mark.parametrize("T", [2, 3])
def test_pld_both_directions_bracket_reference_at_edge_of_lattice(T):
    sigma = 0.9  # close to the smallest sigma the lattice covers at these T, still fast
    out = bp.bis_epoch_two_sided(sigma, T)
    for eps in (0.5, 2.0, 4.0):
        for direction in ("remove", "add"):
            ref = reference_delta(sigma, T, 1, eps, direction)
            up = float(out[direction].delta(eps))
            lo = float(out[direction + "_opt"].delta(eps))
            assert lo - 1e-9 <= ref <= up + 1e-9, (eps, direction, lo, ref, up)
            if eps <= 2.0:  # informative, not just valid (the add side loosens at tiny delta)
                assert up - lo <= 0.15 * ref + 1e-6
