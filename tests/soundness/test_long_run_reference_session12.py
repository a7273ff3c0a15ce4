"""Soundness review, session 12: long single-record Poisson subsampled Gaussian runs
(T = 5000, 2e4, 1e5; add/remove, ``pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T)``)
against a reference computed without privamp's pld/ or numerics/ code
(tests/soundness/mixture_refs.py): the run's profile is that of the T-fold product of the
tight pair ((1 - q) N(0, 1) + q N(1/sigma, 1), N(0, 1)) and its swap, evaluated

* by Lewis's (2001) Fourier formula on the one-step moment generating function (the line
  Re z = 1/2; absolute error <= max(halving change, 1e-15 T), i.e. <= 1e-10 at T = 1e5),
* for small deltas by the damped Carr-Madan formula at the saddle point (line Re z = a > 1;
  relative error ~1e-11, estimated by moving a and halving the steps),

two formulas that agree with each other (checked here) and with the Gaussian closed form
(q = 1), and, as a non-certified cross-check, by Monte Carlo and dp-accounting.  The
reference intervals are far narrower (< 1e-3 relative) than privamp's (~1e-4..1e-3), so a
privamp interval off by 0.1% would fail.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import privamp as pa

sys.path.insert(0, str(Path(__file__).parent))
import mixture_refs as R  # noqa: E402

LONG = [  # (sigma, q, T)
    (1.0, 0.01, 5000), (2.0, 0.05, 5000), (1.1, 256 / 60000, 20_000), (1.0, 1e-3, 100_000),
    (0.6, 0.002, 100_000),
]


def _run(sigma: float, q: float, T: int) -> pa.Training:
    return pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T)


def _lewis(sigma, q, T, eps):
    """max(remove, add) by the Lewis formula, with its error bound."""
    w = R.binomial_weights(1, q)
    vr, er = R.cf_delta(w, 1.0 / sigma, T, eps, "remove")
    va, ea = R.cf_delta(w, 1.0 / sigma, T, eps, "add")
    return np.maximum(vr, va), np.maximum(er, ea)


def _tilted(sigma, q, T, eps):
    """max(remove, add) by the damped formula at the saddle point, with its error estimate."""
    w = R.binomial_weights(1, q)
    vr, er = R.tilted_delta(w, 1.0 / sigma, T, eps, "remove")
    va, ea = R.tilted_delta(w, 1.0 / sigma, T, eps, "add")
    return max(vr, va), max(er, ea)


@pytest.mark.parametrize("sigma, q, T", LONG)
def test_long_run_intervals_bracket_fourier(sigma, q, T):
    """delta at eps 0.5, 1, 2 and epsilon at delta 1e-2, 1e-3, 1e-5: the reference profile
    lies in privamp's delta interval, and at privamp's epsilon ends it straddles the target."""
    run = _run(sigma, q, T)
    eps = np.array([0.5, 1.0, 2.0])
    g = run.delta(eps)
    deltas = np.array([1e-2, 1e-3, 1e-5])
    ge = run.epsilon(deltas)
    e_up, e_low = np.asarray(ge.upper.value), np.asarray(ge.lower.value)
    ref_all, err_all = _lewis(sigma, q, T, np.concatenate([eps, e_up, e_low]))
    ref, err = ref_all[:3], err_all[:3]
    keep = ref > 1e-6
    assert np.all(err[keep] < 1e-3 * ref[keep]), (ref, err)  # the reference is narrow
    up, low = np.asarray(g.upper.value), np.asarray(g.lower.value)
    assert np.all(up[keep] >= ref[keep] - err[keep]), (up, ref, err)
    assert np.all(low[keep] <= ref[keep] + err[keep]), (low, ref, err)
    r_up, err_up, r_low, err_low = ref_all[3:6], err_all[3:6], ref_all[6:], err_all[6:]
    assert np.all(err_up < 1e-4 * deltas) and np.all(err_low < 1e-4 * deltas)
    assert np.all(r_up - err_up <= deltas), (e_up, r_up, deltas)
    assert np.all(r_low + err_low >= deltas), (e_low, r_low, deltas)


@pytest.mark.slow
@pytest.mark.parametrize("sigma, q, T", [LONG[3], LONG[4]])
def test_long_run_small_delta_brackets_damped_fourier(sigma, q, T):
    """epsilon at delta 1e-8 (large eps, where the Lewis formula's 1 - (...) form
    loses digits: at sigma 0.6, q 0.002, T 1e5 it put delta(privamp's upper eps) at
    1.0086e-8 +- 2.8e-10, the damped formula at 9.97526e-9 +- 1e-19)."""
    run = _run(sigma, q, T)
    for target in (1e-8,):  # (1e-10 and the other LONG settings passed too: 15-30 s CPU each)
        ge = run.epsilon(target)
        e_up, e_low = float(ge.upper.value), float(ge.lower.value)
        r_up, err_up = _tilted(sigma, q, T, e_up)
        r_low, err_low = _tilted(sigma, q, T, e_low)
        assert err_up < 1e-6 * target and err_low < 1e-6 * target
        assert r_up - err_up <= target, (e_up, r_up)
        assert r_low + err_low >= target, (e_low, r_low)


@pytest.mark.slow
def test_lewis_and_damped_formulas_agree():
    """The two Fourier references (different contours, different cancellation) agree at
    delta ~1e-3, T = 2e4, within the Lewis error bound (a check of the references)."""
    sigma, q, T = 1.1, 256 / 60000, 20_000
    lew, err = _lewis(sigma, q, T, np.array([2.0]))
    w = R.binomial_weights(1, q)
    til, terr = R.tilted_delta(w, 1.0 / sigma, T, 2.0, "remove")
    assert abs(lew[0] - til) <= err[0] + terr, (lew, til, err)
    assert err[0] < 1e-6 * til


@pytest.mark.slow
def test_fourier_reference_inside_monte_carlo_at_t5000():
    """Monte Carlo of the 5000-step remove loss (6e4 runs, 3e8 sampled steps): the Fourier
    reference of the remove direction lies in its 4-standard-error interval."""
    sigma, q, T = 1.0, 0.01, 5000
    eps = np.array([0.25, 0.5])
    m, se = R.mc_delta(1, q, 1.0 / sigma, T, eps, 60_000, seed=5000)
    w = R.binomial_weights(1, q)
    ref, err = R.cf_delta(w, 1.0 / sigma, T, eps, "remove")
    assert np.all(np.abs(ref - m) <= 4 * se + err), (m, se, ref)
    assert np.all(4 * se < 0.03 * m)


@pytest.mark.slow
def test_dp_accounting_pessimistic_pld_above_reference():
    """Non-certified cross-check: dp-accounting's pessimistic connect-the-dots PLD (grid 1e-4)
    is >= the Fourier reference and within 1% of it at T = 2e4."""
    dpa = pytest.importorskip("dp_accounting")
    sigma, q, T = 1.1, 256 / 60000, 20_000
    pld = dpa.pld.privacy_loss_distribution.from_gaussian_mechanism(
        standard_deviation=sigma, sensitivity=1.0, sampling_prob=q,
        value_discretization_interval=1e-4, pessimistic_estimate=True,
        use_connect_dots=True).self_compose(T)
    eps = np.array([0.5, 1.0, 2.0])
    ref, err = _lewis(sigma, q, T, eps)
    peer = np.array([pld.get_delta_for_epsilon(float(e)) for e in eps])
    assert np.all(peer >= ref - err), (peer, ref)
    assert np.all(peer <= 1.01 * ref), (peer, ref)
