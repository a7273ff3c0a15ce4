"""Monte Carlo estimates of matrix-mechanism runs: inside privamp's certified interval, equal
(within confidence) to jax_privacy's experimental Monte Carlo, exact for DP-SGD."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privamp as pa
from privamp.accounting.estimate import kl_interval, mixture_loss, privacy_losses
from privamp.results import Estimate


def _inside(est: Estimate, g) -> None:
    lo = 0.0 if g.lower is None else float(g.lower.value)
    assert est.high >= lo and est.low <= float(g.upper.value)


def test_identity_poisson_matches_privamp_exact_interval():
    run = pa.Training(pa.MatrixMechanism.identity(1.0), pa.Poisson(0.1), steps=20)
    est = pa.estimate_delta(run, 1.0, samples=20_000, seed=3)
    assert est.kind == "estimate" and est.low <= est.value <= est.high
    g = run.delta(1.0)
    assert est.low <= g.lower.value and g.upper.value <= est.high  # a tight interval


@pytest.mark.parametrize("mech,scheme,steps", [
    (pa.MatrixMechanism.banded([1.0, 0.5, 0.25], 1.0), pa.PersistentBallsInBins(4), 12),
    (pa.MatrixMechanism.sqrt_toeplitz(1.5, bands=3), pa.PersistentBallsInBins(3), 9),
    (pa.MatrixMechanism.banded([1.0, 0.5, 0.25], 1.0), pa.Poisson(0.2), 10),
    (pa.MatrixMechanism.banded([1.0, 0.5, 0.25], 1.0), pa.CyclicPoisson(0.3, 2, "fixed"), 12),
])
def test_estimate_inside_certified_interval(mech, scheme, steps):
    run = pa.Training(mech, scheme, steps=steps)
    for eps in (0.5, 1.5):
        _inside(pa.estimate_delta(run, eps, samples=4000, seed=11), run.delta(eps))


@pytest.mark.slow
def test_persistent_bins_agree_with_jax_privacy_monte_carlo():
    mc = pytest.importorskip("jax_privacy.experimental.monte_carlo.sample_generation")
    from jax_privacy import batch_selection

    c = np.array([1.0, 0.5, 0.25])
    for steps, bins, sigma in ((12, 4, 1.0), (10, 5, 0.8)):
        strat = batch_selection.BallsInBinsSampling(iterations=steps, cycle_length=bins)
        theirs, _ = mc.get_privacy_loss_sample(strat, sigma, c, seed=5, num_samples=6000)
        mine = privacy_losses(pa.MatrixMechanism.banded(c, sigma), pa.PersistentBallsInBins(bins),
                              steps, 6000, seed=7)
        for eps in (0.5, 1.0):
            a = np.mean(-np.expm1(np.minimum(eps - np.asarray(theirs), 0)))
            b = np.mean(-np.expm1(np.minimum(eps - mine, 0)))
            ia, ib = kl_interval(float(a), 6000, 1e-3), kl_interval(float(b), 6000, 1e-3)
            assert ia[0] <= ib[1] and ib[0] <= ia[1]  # overlapping 99.9% intervals


def test_loss_is_exact_mixture_against_enumeration():
    # Poisson over T = 4 steps with b = 3: the forward recursion against the 16 patterns
    mech = pa.MatrixMechanism.banded([1.0, -0.4, 0.3], 1.2)
    c = np.asarray(mech.matrix(4))
    rng = np.random.default_rng(0)
    y = rng.standard_normal((5, 4))
    got = mixture_loss(mech, pa.Poisson(0.3), 4, y)
    want = np.zeros(5)
    for i in range(5):
        tot = 0.0
        for bits in range(16):
            x = np.array([(bits >> t) & 1 for t in range(4)], dtype=float)
            p = np.prod(np.where(x == 1, 0.3, 0.7))
            m = c @ x
            tot += p * math.exp((y[i] @ m - 0.5 * m @ m) / 1.44)
        want[i] = math.log(tot)
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_kl_interval_covers_and_refusals():
    lo, hi = kl_interval(0.0, 1000, 1e-3)
    assert lo == 0.0 and 0 < hi < 0.01
    lo, hi = kl_interval(0.5, 1000, 1e-3)
    assert lo < 0.5 < hi
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.1), steps=3)
    with pytest.raises(ValueError, match="MatrixMechanism"):
        pa.estimate_delta(run, 1.0)
    run = pa.Training(pa.MatrixMechanism.identity(1.0), pa.Shuffle(10, 100), steps=3)
    with pytest.raises(ValueError, match="scheme must be"):
        pa.estimate_delta(run, 1.0, samples=100)
    run = pa.Training(pa.MatrixMechanism.identity(1.0), pa.Poisson(0.1), steps=3)
    with pytest.raises(ValueError, match="samples"):
        pa.estimate_delta(run, 1.0, samples=10)
    with pytest.raises(ValueError, match="confidence"):
        pa.estimate_delta(run, 1.0, confidence=1.0)
    with pytest.raises(ValueError, match="kind"):
        Estimate(0.1, 0.0, 0.2, 10, 0.9, "x", kind="upper")
