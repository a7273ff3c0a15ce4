"""Adversarial soundness review of session 12's speed changes (helper review1).

Attacked: the two-level composition's new factors (32x light, 16x heavy pessimistic side,
T / 128 blocks, the remainder on 8 h then coarsened; pld/compose.py), the partial reuse of
a coarser grid's edge tails (pairs/combinators.py), the swapped add direction in short
two-level runs and Poisson Laplace and its omission from the query's maximum
(accountants/poisson.py), and the FFT constants (numerics/fft.py).  Nothing here broke the
certified intervals; these are the strongest of the checks that held.

References, all independent of privamp's engine:

* the closed-form T-fold Gaussian profile (Balle & Wang 2018, Thm 8) in mpmath (40 digits);
* the damped (Carr-Madan) Fourier formula at the saddle point on the one-step moment
  generating function of the Poisson shift-mixture pair (tests/soundness/mixture_refs.py,
  ``tilted_delta``; group pairs with Binom(K, q) weights; Schuchardt et al. 2024,
  arXiv:2403.04867), whose error estimate is ~1e-17 relative here;
* dp-accounting's pessimistic (connect-the-dots) and optimistic (privacy buckets) PLDs as a
  non-certified sandwich for Poisson-subsampled Laplace.
"""

from __future__ import annotations

import itertools
import math
import sys
import warnings
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
import privamp.pld.compose as compose_mod
from privamp.accountants.poisson import poisson_pairs
from privamp.pairs.combinators import MixturePair
from privamp.pairs.mechanism_pairs import GaussianPair
from privamp.pld.compose import compose_two_level
from privamp.pld.discretise import discretise
from privamp.pld.grid import PLD

sys.path.insert(0, str(Path(__file__).parent))
import mixture_refs as R  # noqa: E402


def _gauss_exact(mu: float, eps: float) -> float:
    """delta(eps) of N(mu, 1) vs N(0, 1), 40 digits (Balle & Wang 2018, Thm 8)."""
    with mp.workdps(40):
        e, m = mp.mpf(eps), mp.mpf(mu)
        return float(mp.ncdf(m / 2 - e / m) - mp.e**e * mp.ncdf(-m / 2 - e / m))


def _factors(monkeypatch) -> list[int]:
    seen: list[int] = []
    orig = PLD.coarsen

    def spy(self, k):
        seen.append(int(k))
        return orig(self, k)

    monkeypatch.setattr(PLD, "coarsen", spy)
    return seen


# T around the switches: 64000 (T / 32 = 2000), odd T (remainder on 8 h then 4x),
# 256000 (T / 128 = 2000), 128 * 32000 = 4096000 (the largest blocks) and one above
SWITCH_T = [63_999, 64_000, 65_537, 127_999, 255_999, 256_000, 256_001, 4_096_000, 4_096_001]


@pytest.mark.parametrize("T", SWITCH_T)
def test_two_level_switch_points_bracket_closed_form(T, monkeypatch):
    """Both sides of compose_two_level bracket the exact Gaussian profile (mu = 1) from
    eps 0 to 5 mu (delta down to ~1e-5 of its top), on either side of every switch."""
    s = 1.0 / math.sqrt(T)
    p, o = discretise(GaussianPair(s), 4e-5, rho_max=min(1e-6, 1e-4 / T))
    seen = _factors(monkeypatch)
    up, lo = compose_two_level(p, T), compose_two_level(o, T)
    assert seen  # two levels
    eps = np.linspace(0.0, 5.0, 21)
    exact = np.array([_gauss_exact(1.0, e) for e in eps])
    du, dl = up.delta(eps), lo.delta(eps)
    assert np.all(du >= exact), (T, seen, (du - exact) / exact)
    assert np.all(dl <= exact), (T, seen, (exact - dl) / exact)
    assert np.all(du - dl <= 0.2 * exact)  # not vacuous (T 4e6 on h 4e-5: ~16% at 5 mu)


def test_heavy_factor_with_remainder_brackets_closed_form(monkeypatch):
    """The 16x pessimistic factor (forced heavy) together with the remainder path (odd T:
    8 h, then 2x to 16 h)."""
    monkeypatch.setattr(compose_mod, "_HEAVY_SD_IQR", 0.0)
    T = 200_001
    s = 1.0 / math.sqrt(T)
    p, _ = discretise(GaussianPair(s), 4e-5, optimistic=False)
    seen = _factors(monkeypatch)
    up = compose_two_level(p, T)
    assert 16 in seen and 2 in seen
    eps = np.linspace(0.0, 5.0, 11)
    exact = np.array([_gauss_exact(1.0, e) for e in eps])
    assert np.all(up.delta(eps) >= exact)


@pytest.mark.parametrize("sigma, q", [(0.7, 0.01), (2.3, 0.003)])
@pytest.mark.parametrize("h, k", [(6e-5, 3), (7.3e-5, 5), (1e-4, 6), (1e-4 / 3, 3)])
def test_edge_tail_reuse_bit_identical_to_fresh(sigma, q, h, k):
    """The optimistic side on k h after the pessimistic side on h (the k h grid partly
    found among the kept h edges, k not a power of 2: only float-equal edges reused) is bit
    for bit the one a fresh pair gives."""
    calls: list[int] = []
    orig = MixturePair._fresh_tails

    def spy(self, edges):
        calls.append(len(edges))
        return orig(self, edges)

    pair = poisson_pairs(pa.Gaussian(sigma), q)[0]
    discretise(pair, h, optimistic=False)
    MixturePair._fresh_tails = spy
    try:
        _, o_reuse = discretise(pair, k * h, pessimistic=False)
    finally:
        MixturePair._fresh_tails = orig
    _, o_fresh = discretise(poisson_pairs(pa.Gaussian(sigma), q)[0], k * h, pessimistic=False)
    assert o_reuse.offset == o_fresh.offset
    assert np.array_equal(o_reuse.masses, o_fresh.masses)
    assert (o_reuse.slack, o_reuse.inf_mass) == (o_fresh.slack, o_fresh.inf_mass)
    assert calls and max(calls) < len(o_fresh.masses)  # some edges were reused


FUZZ = ([("g", s, q, T) for s, q, T in itertools.product([0.2, 1.0, 4.0], [1e-6, 0.1, 0.9],
                                                            [1, 100, 4999])]
        + [("l", b, q, T) for b, q, T in itertools.product([0.05, 3.0], [1e-5, 0.5, 1.0],
                                                           [10, 999])])


@pytest.mark.slow
def test_no_nan_warning_or_crossing_interval():
    """Gaussian and Laplace Poisson runs (T up to 4999: the swapped add direction's new
    regime) at extreme rates and scales: no warning, no NaN, lower <= upper, monotone."""
    for kind, s, q, T in FUZZ:
        m = pa.Gaussian(s) if kind == "g" else pa.Laplace(s)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            run = pa.Training(m, pa.Poisson(q), steps=T)
            try:
                e = run.epsilon(np.array([0.5, 1e-5, 1e-12]), accountant="pld")
                d = run.delta(np.array([0.0, 0.3, 5.0, 40.0]), accountant="pld")
            except pa.NotApplicable:
                continue
        eu, el = np.asarray(e.upper.value), np.asarray(e.lower.value)
        du, dl = np.asarray(d.upper.value), np.asarray(d.lower.value)
        for v in (eu, el, du, dl):
            assert not np.any(np.isnan(v)), (kind, s, q, T)
        assert np.all(el <= eu) and np.all(dl <= du), (kind, s, q, T)
        assert np.all(np.diff(eu) >= 0) and np.all(np.diff(du) <= 0), (kind, s, q, T)


# (sigma, q, T, delta, K): the heavy/light threshold (sd / IQR 3.8-4.9 across the sides at
# sigma 0.65), the heavy remainder path (16 h), the largest blocks (T1 32000), a short
# two-level run (T 4999: the swapped add direction).  Also passed (25-70 s each on the
# loaded machine, left out): (1.0, 1e-3, 256001, 1e-5, 1), (0.6, 1e-3, 64001, 1e-10, 1),
# (2.0, 0.01, 64000, 1e-10, 1), (1.0, 0.01, 4999, 1e-8, 2), (2.0, 0.02, 64000, 1e-6, 3),
# (0.62, 2e-3, 256000, 1e-5, 1), (1.0, 5e-4, 4096000, 1e-5, 1), (0.8, 1e-3, 4096001, 1e-8, 1),
# (1.0, 1e-3, 127999, 1e-10, 1), (0.55, 5e-4, 300007, 1e-6, 1), (0.66, 0.01, 64000, 1e-5, 1),
# (0.6, 1e-3, 64000, 1e-5, 1), (1.0, 0.01, 5000, 1e-8, 2)
TILTED = [
    (0.65, 1e-3, 100_000, 1e-5, 1),
    (0.5, 1e-3, 256_001, 1e-8, 1),
    (0.6, 2e-4, 4_096_000, 1e-6, 1),
    (0.8, 0.05, 4999, 1e-10, 1),
]


@pytest.mark.slow
@pytest.mark.parametrize("sigma, q, T, target, K", TILTED)
def test_epsilon_interval_brackets_damped_fourier(sigma, q, T, target, K):
    """At privamp's epsilon ends the reference max(remove, add) straddles the target:
    delta(upper) <= target <= delta(lower) (about 12 s of reference each)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T,
                          relation=pa.AddRemove(K))
        g = run.epsilon(target, accountant="pld")
    w = R.binomial_weights(K, q)
    for e, side in ((float(g.upper.value), "upper"), (float(g.lower.value), "lower")):
        vr, er = R.tilted_delta(w, 1.0 / sigma, T, e, "remove")
        va, ea = R.tilted_delta(w, 1.0 / sigma, T, e, "add")
        ref, err = max(vr, va), max(er, ea)
        assert err < 1e-6 * target
        if side == "upper":
            assert ref - err <= target, (e, ref)
        else:
            assert ref + err >= target, (e, ref)


@pytest.mark.slow
@pytest.mark.parametrize("b, q, T", [(1.0, 0.2, 50), (2.0, 0.1, 100)])
def test_laplace_swapped_add_direction_against_dp_accounting(b, q, T):
    """Poisson-subsampled Laplace (the add direction now the remove run swapped, composed on
    its own only if it decides): the certified upper at or above dp-accounting's optimistic
    estimate and the lower at or below its pessimistic one (grid 2e-5; non-certified)."""
    from dp_accounting.pld import privacy_loss_distribution as dpl

    deltas, eps = np.array([1e-3, 1e-6, 1e-9]), np.array([0.1, 0.5, 1.0, 2.0])
    run = pa.Training(pa.Laplace(b), pa.Poisson(q), steps=T)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = run.epsilon(deltas, accountant="pld")
        d = run.delta(eps, accountant="pld")
    peer = {}
    for pess in (True, False):
        pl = dpl.from_laplace_mechanism(b, sensitivity=1.0, sampling_prob=q,
                                        value_discretization_interval=2e-5,
                                        pessimistic_estimate=pess, use_connect_dots=pess)
        pl = pl.self_compose(T)
        peer[pess] = (np.array([pl.get_epsilon_for_delta(x) for x in deltas]),
                      np.array([pl.get_delta_for_epsilon(x) for x in eps]))
    assert np.all(np.asarray(e.upper.value) >= peer[False][0])
    assert np.all(np.asarray(e.lower.value) <= peer[True][0])
    assert np.all(np.asarray(d.upper.value) >= peer[False][1])
    assert np.all(np.asarray(d.lower.value) <= peer[True][1])
