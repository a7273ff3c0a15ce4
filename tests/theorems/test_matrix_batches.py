"""Matrix mechanisms under shuffled / fixed-size batches: the worst pattern's Gaussian against
exhaustive enumeration of the placements (one step per epoch), the forced pattern's exact
answer, DP-SGD as C = I."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import privamp as pa
from privamp.theorems.chua2024.deterministic import gauss_epsilon
from privamp.theorems.matrix_batches import epoch_row_bound, worst_shift


def _enumerate_fresh(c: np.ndarray, steps: int, per: int) -> float:
    """max over one-step-per-epoch placements of sum |G| (dense, exhaustive)."""
    g = np.abs(c.T @ c)
    epochs = [range(e, min(e + per, steps)) for e in range(0, steps, per)]
    return max(float(g[np.ix_(p, p)].sum()) for p in itertools.product(*epochs))


STRATEGIES = [
    [1.0, 0.5, 0.25],
    [1.0, -0.6, 0.3],
    [1.0, 0.5, 0.375, 0.3125],
]


@pytest.mark.parametrize("coef", STRATEGIES)
@pytest.mark.parametrize("per,steps", [(3, 7), (4, 9), (5, 10), (2, 6), (3, 9)])
def test_fresh_shuffle_worst_pattern_matches_enumeration(coef, per, steps):
    mech = pa.MatrixMechanism.banded(coef, sigma=1.3)
    n = per * 10
    shift, forced = worst_shift(mech, pa.Shuffle(10, n), steps)
    exact = math.sqrt(_enumerate_fresh(np.asarray(mech.matrix(steps)), steps, per)) / 1.3
    assert forced is None
    assert shift >= exact
    if per >= mech.bands:  # the dynamic programme: the maximum itself
        assert shift == pytest.approx(exact, rel=1e-9)
    else:  # the epoch-row bound: an upper bound
        assert shift <= 2 * exact


@pytest.mark.parametrize("coef", STRATEGIES)
def test_epoch_row_bound_dominates_enumeration(coef):
    mech = pa.MatrixMechanism.banded(coef, sigma=1.0)
    for per, steps in [(1, 5), (2, 7), (3, 8)]:
        assert epoch_row_bound(mech, steps, per) >= _enumerate_fresh(
            np.asarray(mech.matrix(steps)), steps, per)


def test_persistent_shuffle_is_the_worst_position():
    mech = pa.MatrixMechanism.banded([1.0, 0.7, 0.2], sigma=2.0)
    c = np.asarray(mech.matrix(11))
    g = np.abs(c.T @ c)
    worst = max(float(g[np.ix_(p, p)].sum()) for p in (list(range(j, 11, 3)) for j in range(3)))
    shift, _ = worst_shift(mech, pa.Shuffle(10, 30, persistent=True), 11)
    assert shift == pytest.approx(math.sqrt(worst) / 2.0, rel=1e-12)
    assert shift >= math.sqrt(worst) / 2.0


def test_forced_pattern_is_exact_and_identity_is_dp_sgd():
    mech = pa.MatrixMechanism.banded([1.0, 0.5, 0.25], sigma=3.0)
    run = pa.Training(mech, pa.Shuffle(50, 50), steps=6)
    g = run.epsilon(1e-5)
    c = np.asarray(mech.matrix(6))
    s = math.sqrt(float((c.T @ c).sum())) / 3.0  # G >= 0: aligned gradients realise it
    assert g.upper.kind == "upper" and g.lower.kind == "lower"  # straddling float rounding
    assert g.upper.value == pytest.approx(float(gauss_epsilon(np.array([1e-5]), s)[0]),
                                          rel=1e-9)
    assert g.lower.value == pytest.approx(g.upper.value, rel=1e-12)
    ident = pa.Training(pa.MatrixMechanism.identity(1.0), pa.Shuffle(100, 1000), steps=30)
    dpsgd = pa.Training(pa.Gaussian(1.0), pa.Shuffle(100, 1000), steps=30)
    a, b = ident.epsilon(1e-5), dpsgd.epsilon(1e-5)
    assert a.upper.value == b.upper.value and a.lower.value == b.lower.value


def test_shuffle_interval_contains_and_refusals():
    mech = pa.MatrixMechanism.sqrt_toeplitz(1.0, bands=4)
    g = pa.Training(mech, pa.Shuffle(100, 1000), steps=40).epsilon(1e-5)
    assert g.lower is not None and 0 < g.lower.value <= g.upper.value
    with pytest.raises(pa.NotApplicable, match="zero-out"):
        pa.Training(mech, pa.Shuffle(100, 1000), steps=40,
                    relation=pa.AddRemove()).epsilon(1e-5, accountant="matrix-batches")
    sub = pa.Training(mech, pa.WithoutReplacement(10, 100), steps=5,
                      relation=pa.Substitution()).epsilon(1e-5, accountant="matrix-batches")
    c = np.asarray(mech.matrix(5))
    s = 2 * math.sqrt(float(np.abs(c.T @ c).sum()))
    assert sub.upper.value == pytest.approx(float(gauss_epsilon(np.array([1e-5]), s)[0]),
                                            rel=1e-9)
