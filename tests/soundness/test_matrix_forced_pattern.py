"""The matrix mechanism with a forced participation pattern (one batch = the whole dataset):
its interval straddles the true epsilon, the Gaussian at shift ||C 1|| / sigma computed in
mpmath from the strategy's coefficients.

Reproducer (review3): sqrt-Toeplitz, T = 1000, sigma = 300, WithoutReplacement(1000, 1000):
the answer was labelled "exact" at 14.290576875904552 (both sides), the upper side's rounded
up shift; the truth is 14.2905768738828... (1.4e-10 lower), so the "exact" lower side was
above the truth."""

from __future__ import annotations

import mpmath as mp

import privamp as pa


def _true_epsilon(steps: int, sigma: float, delta: float, guess: float) -> mp.mpf:
    with mp.workdps(40):
        c = [mp.binomial(2 * k, k) / mp.mpf(4) ** k for k in range(steps)]
        row, total = mp.mpf(0), mp.mpf(0)
        for i in range(steps):  # (C 1)_i = c_0 + ... + c_i
            row += c[i]
            total += row * row
        s = mp.sqrt(total) / sigma
        return mp.findroot(lambda e: mp.ncdf(-e / s + s / 2) - mp.e ** e * mp.ncdf(-e / s - s / 2)
                           - mp.mpf(delta), guess)


def test_forced_pattern_interval_straddles_the_truth():
    steps, sigma = 1000, 300.0
    mech = pa.MatrixMechanism.sqrt_toeplitz(sigma, bands=steps)
    run = pa.Training(mech, pa.WithoutReplacement(1000, 1000), steps=steps,
                      relation=pa.ZeroOut())
    g = run.epsilon(1e-5, accountant="matrix-batches")
    truth = _true_epsilon(steps, sigma, 1e-5, float(g.upper.value))
    assert g.lower is not None and g.lower.kind == "lower" and g.upper.kind == "upper"
    assert float(g.lower.value) <= truth <= float(g.upper.value)
    assert float(g.upper.value) - float(g.lower.value) <= 1e-8 * float(truth)
