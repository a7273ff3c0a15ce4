"""The matrix-bins interval against Monte Carlo of the realised pair's hockey-stick divergence
(Hoeffding confidence intervals), and lower <= upper on a grid."""

import itertools
from math import comb

import numpy as np
import pytest
from scipy.special import logsumexp

import privamp as pa

SQRT4 = [comb(2 * k, k) / 4 ** k for k in range(4)]


def realised_delta(c, sigma, patterns, eps, n, seed):
    """Monte Carlo of max over directions of H_{e^eps} for the realised pair
    (1/|patterns|) sum_pi N(C 1_pi, sigma^2 I) vs N(0, sigma^2 I): each direction's
    divergence as the mean of a [0, 1]-valued variable (sampling from the first
    distribution), with its Hoeffding interval at level 1 - 1e-6."""
    rng = np.random.default_rng(seed)
    mus = np.array([c[:, list(p)].sum(axis=1) for p in patterns])  # (patterns, T)
    half = np.sqrt(np.log(2 / 1e-6) / (2 * n))

    def loss(y):
        z = (y @ mus.T - 0.5 * np.sum(mus ** 2, axis=1)) / sigma ** 2
        return logsumexp(z, axis=1) - np.log(len(patterns))

    pick = rng.integers(len(patterns), size=n)
    y_p = mus[pick] + sigma * rng.standard_normal((n, c.shape[0]))
    y_q = sigma * rng.standard_normal((n, c.shape[0]))
    remove = np.mean(np.maximum(0.0, 1 - np.exp(eps - loss(y_p))))
    add = np.mean(np.maximum(0.0, 1 - np.exp(eps + loss(y_q))))
    best = max(remove, add)
    return best - half, best + half


def patterns_of(scheme, steps):
    if isinstance(scheme, pa.PersistentBallsInBins):
        return [tuple(range(j, steps, scheme.batches)) for j in range(scheme.batches)]
    per, k = scheme.steps, scheme.participations
    epochs = [list(itertools.combinations(range(e * per, (e + 1) * per), k))
              for e in range(steps // per)]
    return [sum(choice, ()) for choice in itertools.product(*epochs)]


SLOW = pytest.mark.slow


@pytest.mark.parametrize("scheme, steps, coef", [
    (pa.PersistentBallsInBins(2), 2, SQRT4),
    (pa.BallsInBins(2), 2, SQRT4),
    pytest.param(pa.PersistentBallsInBins(2), 3, SQRT4, marks=SLOW),
    pytest.param(pa.PersistentBallsInBins(2), 3, [1.0, 0.6, 0.3], marks=SLOW),
    pytest.param(pa.BallsInBins(2), 4, SQRT4, marks=SLOW),
    pytest.param(pa.BallsInBins(2), 4, [1.0, -0.6, 0.3], marks=SLOW),
    pytest.param(pa.BalancedIteration(3, 2), 3, SQRT4, marks=SLOW),
    pytest.param(pa.BalancedIteration(3, 2), 3, [1.0, 0.6, 0.3], marks=SLOW),
])
def test_interval_brackets_monte_carlo_of_the_realised_pair(scheme, steps, coef):
    sigma, eps = 1.0, 0.5
    mech = pa.MatrixMechanism.banded(coef, sigma)
    g = pa.Training(mech, scheme, steps=steps).delta(eps)
    lo, hi = realised_delta(mech.matrix(steps), sigma, patterns_of(scheme, steps), eps,
                            n=100_000, seed=steps)
    assert g.lower is not None and g.upper is not None
    assert float(g.lower) <= hi
    assert lo <= float(g.upper)
    assert float(g.lower) <= float(g.upper)


@pytest.mark.slow
@pytest.mark.parametrize("scheme, steps", [
    (pa.PersistentBallsInBins(5), 10),
    (pa.PersistentBallsInBins(3), 7),
    (pa.BallsInBins(5), 10),
    (pa.BalancedIteration(5, 2), 10),
])
@pytest.mark.parametrize("coef", [SQRT4, [1.0, -0.5, 0.2]])
def test_lower_below_upper_on_a_grid(scheme, steps, coef):
    for sigma in (0.7, 2.0, 5.0):
        run = pa.Training(pa.MatrixMechanism.banded(coef, sigma), scheme, steps=steps)
        for g in (run.epsilon(np.array([1e-3, 1e-6])), run.delta(np.array([0.1, 1.0, 3.0]))):
            assert g.upper is not None and g.lower is not None
            assert np.all(np.asarray(g.lower.value) <= np.asarray(g.upper.value))
            assert np.all(np.asarray(g.lower.value) >= 0)
