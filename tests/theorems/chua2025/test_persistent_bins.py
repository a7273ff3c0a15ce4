"""PersistentBallsInBins (jax_privacy's BallsInBinsSampling: the bin kept for the run).

Independent references: the exact Gaussian closed form (one batch) in mpmath; a Monte Carlo
estimate, with a confidence interval, of the hockey-stick divergence of the full E*T-step
worst-case pair (not the rotated one the accountant uses); BallsInBins at one cycle.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import privamp as pa


def _mp_gauss(eps: float, s: float) -> float:
    return float(mp.ncdf(s / 2 - eps / s) - mp.e ** eps * mp.ncdf(-s / 2 - eps / s))


def test_one_batch_is_the_gaussian():
    run = pa.Training(pa.Gaussian(2.0), pa.PersistentBallsInBins(1), steps=4)
    g = run.delta(0.3)
    assert g.exact
    assert float(g.upper.value) == pytest.approx(_mp_gauss(0.3, 1.0), rel=1e-9)


def test_one_cycle_is_balls_in_bins():
    a = pa.Training(pa.Gaussian(1.5), pa.PersistentBallsInBins(4), steps=4).epsilon(1e-4)
    b = pa.Training(pa.Gaussian(1.5), pa.BallsInBins(4), steps=4).epsilon(1e-4)
    assert float(a.upper.value) == float(b.upper.value)
    assert float(a.lower.value) == float(b.lower.value)
    assert "arXiv:2412.16802" in a.upper.source


@pytest.mark.parametrize("T,E,sigma,eps", [(3, 2, 1.5, 0.3), (2, 3, 2.0, 0.2)])
def test_reduction_monte_carlo(T, E, sigma, eps):
    """The run's worst-case pair over E T steps: record in bin t (uniform), releases at the
    steps j = t mod T shifted by s; remove direction P = mean_t N(s 1_{S_t}), Q = N(0)."""
    s = 1 / sigma
    rng = np.random.default_rng(3)
    N = 1_000_000
    y = rng.standard_normal((N, E * T))
    bins = np.arange(E * T) % T
    lr = np.mean([np.exp(s * y[:, bins == t].sum(axis=1) - E * s * s / 2) for t in range(T)],
                 axis=0)  # dP/dQ at y ~ Q
    a = np.maximum(lr - math.exp(eps), 0.0)  # H_{e^eps}(P || Q) = E_Q[(L - e^eps)_+]
    b = np.maximum(1.0 - math.exp(eps) * lr, 0.0)  # H_{e^eps}(Q || P) = E_Q[(1 - e^eps L)_+]
    mc = max(a.mean(), b.mean())
    se = max(a.std(), b.std()) / math.sqrt(N)
    g = pa.Training(pa.Gaussian(sigma), pa.PersistentBallsInBins(T), steps=E * T).delta(eps)
    lo, up = float(g.lower.value), float(g.upper.value)
    assert lo <= mc + 5 * se and mc - 5 * se <= up
    assert up - lo < 5 * se  # the interval is tight: the MC pins the reduction down


def test_partial_cycle_ceil_floor():
    T, sigma = 3, 1.5
    part = pa.Training(pa.Gaussian(sigma), pa.PersistentBallsInBins(T), steps=2 * T + 1)
    g = part.epsilon(1e-4)
    lo2 = pa.Training(pa.Gaussian(sigma), pa.PersistentBallsInBins(T), steps=2 * T).epsilon(1e-4)
    up3 = pa.Training(pa.Gaussian(sigma), pa.PersistentBallsInBins(T), steps=3 * T).epsilon(1e-4)
    assert float(g.upper.value) == float(up3.upper.value)
    assert float(g.lower.value) == float(lo2.lower.value)
    assert "partial cycle" in g.upper.source
    # less than one cycle: an upper bound only
    short = pa.Training(pa.Gaussian(sigma), pa.PersistentBallsInBins(T), steps=2).epsilon(1e-4)
    assert short.lower is None or float(short.lower.value) == 0.0


def test_pld_capability():
    """pld(h): the pessimistic side bounds the run's upper curve, the optimistic side lies
    below its lower one (both from the same Balanced Iteration construction)."""
    run = pa.Training(pa.Gaussian(1.5), pa.PersistentBallsInBins(3), steps=7)
    (_, an), = run.analysis("persistent-bins")
    pld = an.pld(an.grid_step())
    assert len(pld.directions) == 2
    eps = np.array([0.2, 1.0])
    up, lo = pld.delta(eps)
    g = run.delta(eps)
    assert np.all(lo <= up) and np.all(lo > 0)
    assert np.all(up >= np.asarray(g.lower.value))  # lower at 2 cycles, upper at 3
    assert np.all(lo <= np.asarray(g.upper.value))
    # against the exact Gaussian of the 3 releases of a record always sampled (no amplification)
    assert np.all(up <= [_mp_gauss(e, math.sqrt(3) / 1.5) for e in eps])


def test_never_looser_than_one_release_per_cycle():
    """Each record takes part in one step per cycle, so the Gaussian at shift sqrt(E)/sigma
    (Balle & Wang 2018, Thm 8, in mpmath) bounds every persistent balls-in-bins run; at
    sigma 1.1 over 60 cycles of 235 bins the random-allocation accountants alone were looser
    (54.25 against 54.05)."""
    import mpmath

    s = mpmath.sqrt(60) / mpmath.mpf("1.1")

    def delta(eps):
        return mpmath.ncdf(s / 2 - eps / s) - mpmath.exp(eps) * mpmath.ncdf(-s / 2 - eps / s)

    g = pa.Training(pa.Gaussian(1.1), pa.PersistentBallsInBins(235), epochs=60).epsilon(1e-5)
    up = float(g.upper.value)
    assert float(delta(mpmath.mpf(up))) <= 1e-5 * (1 + 1e-9)  # valid (to float rounding of s)
    assert float(delta(mpmath.mpf(up) * (1 - 1e-6))) > 1e-5  # and no looser than it


def test_sum_statistic_lower_bound_where_the_lattice_gives_none():
    """sigma / sqrt(E) = 0.22 at T = 100: no lattice, so the lower bound is the Gaussian pair
    of the sum of all outputs, shift sqrt(E / T) / sigma; checked against mpmath's profile
    Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s) (Balle & Wang 2018, Thm 8)."""
    import mpmath as mp

    import privamp as pa

    mp.mp.dps = 40
    s = mp.sqrt(mp.mpf(20) / 100)

    def prof(eps):
        eps = mp.mpf(eps)
        return mp.ncdf(s / 2 - eps / s) - mp.e**eps * mp.ncdf(-s / 2 - eps / s)

    run = pa.Training(pa.Gaussian(1.0), pa.PersistentBallsInBins(100), steps=2000)
    d = run.delta(1.0)
    # the sum-of-outputs pair (chua2025's sum statistic or dong2025's split-sum-test: the
    # same Gaussian pair; whichever is reported first)
    assert d.lower is not None and ("sum statistic" in d.lower.source
                                    or "the sum over the blocks" in d.lower.source)
    ref = float(prof(1.0))
    assert 0.999 * ref <= d.lower.value <= ref <= d.upper.value
    e = run.epsilon(1e-5)
    assert e.lower is not None
    assert prof(e.lower.value) >= 1e-5  # the pair's true epsilon is at least the lower bound
    assert prof(e.lower.value * 1.001) < 1e-5  # and it is tight
