"""Trade-off curves for every sampler whose accountant offers a PLD: built from the PLD, and
cross-checked against the run's own (eps, delta) interval, which "best" may take from other
accountants (closed forms, RDP): the realised attacks' curve converted back to delta(eps)
never exceeds any certified upper bound on delta, and the guarantee's curve never falls below
any certified lower bound."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privamp as pa

G = pa.Gaussian(1.0)
RUNS = {
    "poisson": lambda: pa.Training(G, pa.Poisson(0.05), steps=20),
    "shuffle": lambda: pa.Training(G, pa.Shuffle(10, 100), epochs=2),
    "deterministic": lambda: pa.Training(G, pa.Deterministic(10, 100), epochs=2),
    "balls-in-bins": lambda: pa.Training(G, pa.BallsInBins(10), epochs=2),
    "persistent-balls-in-bins": lambda: pa.Training(G, pa.PersistentBallsInBins(10), epochs=1),
    "balanced-iteration": lambda: pa.Training(G, pa.BalancedIteration(10, 2), epochs=1),
    "without-replacement-substitution": lambda: pa.Training(
        pa.Gaussian(1.0, 2.0), pa.WithoutReplacement(10, 100), steps=20,
        relation=pa.Substitution()),
    "with-replacement": lambda: pa.Training(G, pa.WithReplacement(10, 1000), steps=20),
    "truncated-poisson": lambda: pa.Training(G, pa.TruncatedPoisson(0.05, 12, 100), steps=20),
}
A = np.unique(np.concatenate(([0.0, 1.0], np.logspace(-9, 0, 600), np.linspace(0, 1, 401))))


@pytest.mark.parametrize("name", sorted(RUNS))
def test_curve_from_pld_is_consistent_with_the_profile(name):
    run = RUNS[name]()
    assert run.offering("pld"), f"{name}: no accountant offers a PLD"
    tr = run.tradeoff(A)
    assert "pessimistic PLD" in tr.lower.source
    for c in (tr.remove, tr.add, tr.either, tr.symmetric):
        lo, up = np.asarray(c.lower.value), np.asarray(c.upper.value)
        assert np.all(lo >= 0) and np.all(lo <= up + 1e-12) and np.all(up <= 1 - A + 1e-15)
        assert np.all(np.diff(lo) <= 1e-12), f"{c.name}: lower envelope not nonincreasing"
    assert np.all(np.asarray(tr.symmetric.lower.value) <= np.asarray(tr.either.lower.value)
                  + 1e-15)
    lo, up = np.asarray(tr.lower.value), np.asarray(tr.upper.value)
    for eps in (0.0, 0.5, 1.0, 2.0):
        g = run.delta(eps)
        from_attack = np.max(1 - up - math.exp(eps) * A)
        from_guarantee = np.max(1 - lo - math.exp(eps) * A)
        assert from_attack <= float(g.upper.value) + 1e-12
        if g.lower is not None:
            # (a sup over a finite alpha grid: below the true conjugate by O(grid step^2))
            assert from_guarantee >= float(g.lower.value) - 1e-4
    t = run.tpr_at_fpr([1e-3, 1e-2])
    assert np.all(np.asarray(t.lower.value) <= np.asarray(t.upper.value))
