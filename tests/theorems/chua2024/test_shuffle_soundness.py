"""Soundness of the shuffled-batch accountant (Chua et al. 2024) at small sigma, with sit-out,
short batches, partial epochs and persistent permutations, against an independent mpmath
reference: conditioning on the number k of releases of the differing record (independent of
the data under zero-out neighbours), joint convexity of the hockey-stick divergence gives
delta(eps) <= sum_k P(k) delta_Gauss(s sqrt(k)) -- a certified upper bound on the truth, so
every lower bound must lie below it."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import privamp as pa

mp.mp.dps = 60


def _gauss_delta(eps, mu):
    """Balle & Wang's Gaussian profile at shift mu (mpmath), 0 for mu = 0."""
    if mu == 0:
        return mp.mpf(0)
    eps, mu = mp.mpf(eps), mp.mpf(mu)
    return mp.ncdf(mu / 2 - eps / mu) - mp.exp(eps) * mp.ncdf(-mu / 2 - eps / mu)


def _binom(n, p):
    p = mp.mpf(p)
    return {k: mp.binomial(n, k) * p ** k * (1 - p) ** (n - k) for k in range(n + 1)}


def _convolve(a, b):
    out: dict = {}
    for i, x in a.items():
        for j, y in b.items():
            out[i + j] = out.get(i + j, 0) + x * y
    return out


def ref_delta(eps, s, counts):
    """sum_k P(k) delta_Gauss(s sqrt(k)) (mpmath)."""
    return sum(w * _gauss_delta(eps, s * mp.sqrt(k)) for k, w in counts.items())


def ref_epsilon(delta, s, counts):
    """The eps at which :func:`ref_delta` equals ``delta`` (bisection in mpmath)."""
    lo, hi = mp.mpf(0), mp.mpf(10)
    if ref_delta(0, s, counts) <= delta:
        return 0.0
    while ref_delta(hi, s, counts) > delta:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ref_delta(mid, s, counts) > delta else (lo, mid)
    return float(hi)


# (scheme, steps, law of the number of releases k of one record as a dict k -> P(k))
CASES = {
    "drop_last T=1": (pa.Shuffle(5, 6, drop_last=True), 3, _binom(3, mp.mpf(5) / 6)),
    "partial b=1": (pa.Shuffle(1, 2), 5, _convolve({2: 1}, _binom(1, mp.mpf(1) / 2))),
    "short batch partial": (pa.Shuffle(5, 6), 5, _convolve({2: 1}, _binom(1, mp.mpf(5) / 6))),
    "mnist drop_last partial": (
        pa.Shuffle(256, 60000, drop_last=True), 585,
        _convolve(_binom(2, mp.mpf(234 * 256) / 60000), _binom(1, mp.mpf(117 * 256) / 60000))),
    "persistent partial": (pa.Shuffle(2, 6, persistent=True), 4,
                           {2: mp.mpf(2) / 6, 1: mp.mpf(4) / 6}),
    "persistent drop_last": (pa.Shuffle(4, 6, drop_last=True, persistent=True), 3,
                             {3: mp.mpf(4) / 6, 0: mp.mpf(2) / 6}),
}


def _run(scheme, steps, sigma):
    return pa.Training(pa.Gaussian(sigma), scheme, steps=steps, relation=pa.ZeroOut())


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("sigma", [0.05, 0.08, 0.12, 0.5])
def test_lower_below_count_mixture(name, sigma):
    scheme, steps, counts = CASES[name]
    g = _run(scheme, steps, sigma).epsilon(1e-10)
    ref = ref_epsilon(mp.mpf("1e-10"), 1 / mp.mpf(sigma), counts)
    assert g.lower is not None
    assert g.lower.value <= ref * (1 + 1e-9)
    # the upper side is the count mixture itself (sound: rounded up; tight: to 1e-6)
    assert ref * (1 - 1e-9) <= g.upper.value <= ref * (1 + 1e-6)


@pytest.mark.parametrize("delta", [1e-10, 1e-5])
def test_reproducer_drop_last(delta):
    # the review's reproducer: lower = upper = 819.4454 (resp. 746.797) above the truth
    scheme, steps, counts = CASES["drop_last T=1"]
    g = _run(scheme, steps, 0.05).epsilon(delta)
    ref = ref_epsilon(mp.mpf(delta), mp.mpf(20), counts)
    assert ref == pytest.approx({1e-10: 816.5161, 1e-5: 742.509}[delta], abs=1e-3)
    assert g.lower.value <= ref
    assert g.lower.value < g.upper.value


@pytest.mark.parametrize("name", ["drop_last T=1", "partial b=1", "persistent partial"])
@pytest.mark.parametrize("eps", [1.0, 50.0, 190.0])
def test_delta_lower_below_count_mixture(name, eps):
    scheme, steps, counts = CASES[name]
    for sigma in (0.05, 0.12):
        g = _run(scheme, steps, sigma).delta(eps)
        ref = float(ref_delta(eps, 1 / mp.mpf(sigma), counts))
        assert g.lower.value <= ref * (1 + 1e-9) + 1e-300
        assert ref * (1 - 1e-9) <= g.upper.value <= ref * (1 + 1e-8) + 1e-300


@pytest.mark.parametrize("sigma", [0.05, 0.12])
def test_pld_capability_lower_finite_and_sound(sigma):
    scheme, steps, counts = CASES["partial b=1"]
    from privamp.accountants.registry import ACCOUNTANTS

    run = _run(scheme, steps, sigma)
    acc = [a for a in ACCOUNTANTS["ablq-shuffle"] if a.applies(run)][0]
    up, lo = acc.build(run).pld().epsilon([0.1])
    ref = ref_epsilon(mp.mpf("0.1"), 1 / mp.mpf(sigma), counts)
    assert math.isfinite(lo[0]) and lo[0] <= ref
    assert ref * (1 - 1e-9) <= up[0] <= ref * 1.01 + 0.05  # pessimistic mixture PLD


def test_count_mixture_tighter_than_the_gaussian_mnist():
    # 60000 / 256 with drop_last, 585 steps (2.5 epochs), sigma = 1: k ~ Bin(2, q) + Bern(q')
    scheme, steps, counts = CASES["mnist drop_last partial"]
    g = _run(scheme, steps, 1.0).epsilon(1e-10)
    ref = ref_epsilon(mp.mpf("1e-10"), mp.mpf(1), counts)
    gauss = ref_epsilon(mp.mpf("1e-10"), mp.mpf(1), {3: 1})  # Thm 4.1 at ceil(steps/T) = 3
    assert ref == pytest.approx(11.909, abs=1e-3) and gauss == pytest.approx(12.099, abs=1e-3)
    assert ref * (1 - 1e-9) <= g.upper.value <= ref * (1 + 1e-6)
    assert "number k of releases" in g.upper.source


@pytest.mark.parametrize("name", sorted(CASES))
def test_release_counts_law(name):
    from privamp.theorems.chua2024.mixture import release_counts

    scheme, steps, counts = CASES[name]
    got = release_counts(scheme, steps)
    ref = {k: float(v) for k, v in counts.items() if v > 0}
    assert set(got) == set(ref)
    for k, v in ref.items():
        assert got[k] == pytest.approx(v, rel=1e-12)


def test_gauss_delta_log_space_matches_mpmath_in_the_tail():
    from privamp.theorems.chua2024.deterministic import gauss_delta

    for mu in (0.05, 0.5, 1.0, 2.0, 2.02, 5.0, 20.0):
        for eps in (0.0, 1.0, 5.0, 20.0, 60.0, 200.0, 800.0):
            ref = _gauss_delta(eps, mu)
            got = float(gauss_delta(np.array([eps]), mu)[0])
            if ref > mp.mpf("1e-300"):
                assert got == pytest.approx(float(ref), rel=1e-10), (mu, eps)
    # the review's case: persistent Shuffle(5, 9), 4 steps (k = 2), eps = 60: upper >= lower
    for sigma in (0.85, 0.87, 0.88):
        g = _run(pa.Shuffle(5, 9, persistent=True), 4, sigma).delta(60.0)
        assert g.upper.value >= g.lower.value
        ref = float(_gauss_delta(60, mp.sqrt(2) / sigma))
        assert g.upper.value == pytest.approx(ref, rel=1e-9)


def test_lower_above_upper_is_an_internal_error():
    from privamp.theorems.chua2024.shuffle import checked_lower

    np.testing.assert_array_equal(checked_lower(np.array([1.0]), np.array([1.0]), "delta"), [1.0])
    with pytest.raises(RuntimeError, match="internal error.*please report"):
        checked_lower(np.array([819.4454]), np.array([816.5161]), "epsilon")


def test_add_remove_counterexample_is_far_from_the_zero_out_curve():
    # Deterministic(10, 100), 10 steps, sigma = 1: removing record 0 moves the releases by a
    # vector of norm sqrt(37) (batch-leading records alternating +-1), so at the zero-out
    # curve's eps(1e-5) = 4.377 the realised pair has delta ~ 0.98: hence NotApplicable
    assert float(_gauss_delta(mp.mpf("4.3772"), mp.sqrt(37))) > 0.98
    run = pa.Training(pa.Gaussian(1.0), pa.Deterministic(10, 100), steps=10,
                      relation=pa.AddRemove())
    with pytest.raises(pa.NotApplicable, match="zero-out"):
        run.epsilon(1e-5, accountant="ablq-deterministic")
    g = _run(pa.Deterministic(10, 100), 10, 1.0).epsilon(1e-5)
    assert g.upper.value == pytest.approx(ref_epsilon(mp.mpf("1e-5"), 1, {1: 1}), rel=1e-6)
