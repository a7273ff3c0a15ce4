"""Issue 17, items 2, 4 and 5: every query answers in bounded time and memory, or refuses with
NotApplicable / ValueError saying why; never a silent inf.

References are independent of privamp: closed forms (pure-DP losses, the Laplace profile) and
the exact binomial enumeration of Poisson-subsampled randomized response (mpmath, 50 digits).
Memory is checked with tracemalloc (numpy reports its buffers to it); no timed tests.
"""

from __future__ import annotations

import math
import tracemalloc
import warnings

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.accountants.rdp import RdpAccountant
from privamp.errors import NotApplicable
from privamp.pld.compose import _power_or_squaring
from privamp.pld.grid import PLD, PowerMethodUnavailable
from privamp.renyi.conversion import optimal_epsilon

MB = 1 << 20


def _peak(fn):
    """(result, peak traced bytes) of fn(), RuntimeWarnings (overflow, invalid) as errors."""
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _pure(L: float, q: float, T: int) -> float:
    """Closed form: T * max(log(1 - q + q e^L), -log(1 - q + q e^-L))."""
    return T * max(math.log1p(q * math.expm1(L)), -math.log1p(q * math.expm1(-L)))


# ------------------------------------------------------------------------------------------
# exact reference: Poisson-subsampled randomized response, T-fold, binomial statistic
# ------------------------------------------------------------------------------------------
mp.mp.dps = 50


def _rr_laws(theta, q):
    """(P(1), Q(1)) of the remove pair (q Bern(theta) + (1-q) Bern(1-theta), Bern(1-theta))."""
    t, q = mp.mpf(theta), mp.mpf(q)
    return q * t + (1 - q) * (1 - t), 1 - t


def _rr_delta(theta, q, T, eps) -> float:
    """max over both directions of sum_k [P(k) - e^eps Q(k)]_+, k ~ Bin(T, .) the count."""
    p1, q1 = _rr_laws(theta, q)
    e = mp.e ** mp.mpf(eps)
    best = mp.mpf(0)
    for a1, b1 in ((p1, q1), (q1, p1)):
        tot = mp.mpf(0)
        for k in range(T + 1):
            c = mp.binomial(T, k)
            pk = c * a1**k * (1 - a1) ** (T - k)
            qk = c * b1**k * (1 - b1) ** (T - k)
            tot += max(pk - e * qk, 0)
        best = max(best, tot)
    return float(best)


def _rr_epsilon(theta, q, T, delta) -> float:
    lo, hi = 0.0, 60.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if _rr_delta(theta, q, T, mid) <= delta else (mid, hi)
    return hi


# ------------------------------------------------------------------------------------------
# pure DP: delta = 0 exactly at and above the total max loss; no order search to 1e8
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "mech, q, T, eps, L",
    [
        (pa.Laplace(1.0), 0.1, 1, 0.5, 1.0),
        (pa.RandomizedResponse(0.567), 0.0041, 10, 0.84, math.log(0.567 / 0.433)),
        (pa.Laplace(2.0, sensitivity=0.5), 1.0, 3, 0.76, 0.25),
    ],
)
def test_delta_is_exactly_zero_above_the_max_loss(mech, q, T, eps, L):
    run = pa.Training(mech, pa.Poisson(q), steps=T)
    assert eps >= _pure(L, q, T)
    g, peak = _peak(lambda: run.delta(eps))
    assert g.upper.value == 0.0 and g.upper.kind == "exact"
    assert peak < 200 * MB
    g = run.delta(eps, accountant="rdp")
    assert g.upper.value == 0.0 and g.upper.kind == "exact"


def test_rdp_accountant_pure_epsilon_matches_closed_form_and_caps_epsilon():
    L, q, T = 1.0, 0.1, 4
    acc = RdpAccountant().compose((pa.Laplace(1.0), pa.Poisson(q)), T)
    E = _pure(L, q, T)
    assert acc.pure_epsilon == pytest.approx(E, rel=1e-11) and acc.pure_epsilon >= E
    eps, peak = _peak(lambda: acc.get_epsilon(1e-300))
    assert eps <= acc.pure_epsilon and peak < 200 * MB
    # delta just below E: positive (the atoms at +-L make the max loss attained), bounded
    d = acc.get_delta(E * 0.999)
    assert 0.0 < d < 1.0
    # the order search stays below the cap for privamp's curves (every order it evaluated)
    assert acc._values and max(acc._values) <= 1e5


def test_user_curve_order_search_is_bounded():
    # optimum order ~ 8e6 for c = 1e-11, delta = 1e-300: the search stops at 1e6 (sound)
    calls = []

    def curve(a):
        calls.append(a.size)
        return 1e-11 * a

    eps, order = optimal_epsilon(curve, 1e-300)
    assert order <= 1e6 and np.isfinite(eps)
    assert sum(calls) <= 100 + 60 * 11
    # sound: above the closed-form optimum of c a + log(1/delta)/(a-1) (Mironov's looser form
    # is >= the exact minimum over all orders of the Balle et al. form, which is >= this)
    c, ld = 1e-11, 300 * math.log(10)
    assert eps >= 2 * math.sqrt(c * ld) * (1 - 1e-3) - 1e-12


# ------------------------------------------------------------------------------------------
# randomized response: exact enumeration, bounded cost
# ------------------------------------------------------------------------------------------
def test_rr_poisson_hang_cases_match_exact_enumeration():
    theta, q, T = 0.567, 0.0041, 10
    run = pa.Training(pa.RandomizedResponse(theta), pa.Poisson(q), steps=T)
    eps = np.array([0.002, 0.006, 0.0126])
    g, peak = _peak(lambda: run.delta(eps))
    exact = np.array([_rr_delta(theta, q, T, e) for e in eps])
    assert np.all(g.upper.value >= exact) and np.all(g.lower.value <= exact)
    np.testing.assert_allclose(g.upper.value, exact, rtol=0.05, atol=1e-12)
    assert peak < 400 * MB

    theta, q, T = 0.999, 0.153, 1
    run = pa.Training(pa.RandomizedResponse(theta), pa.Poisson(q), steps=T)
    g, peak = _peak(lambda: run.epsilon(1e-5))
    exact = _rr_epsilon(theta, q, T, 1e-5)
    assert g.lower.value <= exact * (1 + 1e-9) and g.upper.value >= exact * (1 - 1e-9)
    assert g.upper.value <= _pure(math.log(999), q, 1) * (1 + 1e-9)
    assert peak < 400 * MB


def test_randomized_response_without_noise_refuses_by_name():
    m = pa.RandomizedResponse(1.0)
    with pytest.raises(ValueError, match="theta"):
        m.epsilon(1e-5)
    with pytest.raises(ValueError, match="theta"):
        m.rdp(2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert float(m.delta(3.0)) == 1.0  # delta(eps) = 1 for every eps, exactly
    # theta < 1: closed form log((theta - delta) / (1 - theta))
    t, d = 0.75, 1e-3
    assert float(pa.RandomizedResponse(t).epsilon(d)) == pytest.approx(
        math.log((t - d) / (1 - t)), rel=1e-9)


# ------------------------------------------------------------------------------------------
# Laplace PLD: one unsampled step against the closed-form profile, bounded memory
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("q", [1.0, 0.8, 0.2])
def test_laplace_pld_is_small_and_brackets_the_truth(q):
    run = pa.Training(pa.Laplace(1.0), pa.Poisson(q), steps=1)
    eps = np.array([0.0, 0.1, 0.2, 0.25])
    g, peak = _peak(lambda: run.delta(eps, accountant="pld"))
    assert peak < 300 * MB
    if q == 1.0:  # Balle, Barthe, Gaboardi 2018, Thm 3: 1 - exp((eps - 1)/2)
        exact = -np.expm1((eps - 1.0) / 2.0)
    else:  # remove direction of the mixture, by quadrature of the closed-form density
        exact = np.array([_laplace_mixture_delta(q, e) for e in eps])
    assert np.all(g.upper.value >= exact * (1 - 1e-12))
    assert np.all(g.lower.value <= exact * (1 + 1e-12) + 1e-15)
    np.testing.assert_allclose(g.upper.value, exact, rtol=1e-3, atol=1e-9)


def _laplace_mixture_delta(q: float, eps: float) -> float:
    """H_{e^eps}(q Lap(1) + (1 - q) Lap(0) || Lap(0)) and its swap, by mpmath quadrature on
    the pieces where the density ratio is smooth (x < 0, 0 < x < 1, x > 1)."""
    q = mp.mpf(q)
    e = mp.e ** mp.mpf(eps)

    def lap(x, mu):
        return mp.e ** (-abs(x - mu)) / 2

    def f(x):
        p = q * lap(x, 1) + (1 - q) * lap(x, 0)
        return max(p - e * lap(x, 0), 0), max(lap(x, 0) - e * p, 0)

    # kinks of the integrands: on (0, 1) the ratio p / lap0 = q e^{2x - 1} + 1 - q crosses
    # e^eps (remove) or e^-eps (add) at x = (1 + log((e^+-eps - 1 + q) / q)) / 2
    pts = [-mp.inf, 0, 1, mp.inf]
    for r in (e, 1 / e):
        if r - 1 + q > 0:
            x = (1 + mp.log((r - 1 + q) / q)) / 2
            if 0 < x < 1:
                pts.append(x)
    pts = sorted(pts)
    rm = mp.quad(lambda x: f(x)[0], pts)
    ad = mp.quad(lambda x: f(x)[1], pts)
    return float(max(rm, ad))


# ------------------------------------------------------------------------------------------
# numerics hygiene: huge T, slack above delta, power method errors
# ------------------------------------------------------------------------------------------
def test_trillion_steps_answer_finite_without_overflow():
    run = pa.Training(pa.Laplace(1.0), pa.Poisson(0.01), steps=10**12)
    g, peak = _peak(lambda: run.epsilon(1e-5))
    assert np.isfinite(g.upper.value) and g.upper.value <= _pure(1.0, 0.01, 10**12) * (1 + 1e-9)
    assert peak < 300 * MB
    with pytest.raises(NotApplicable, match="steps"):
        run.epsilon(1e-5, accountant="pld")


def test_pld_refuses_rather_than_returning_inf():
    # delta = 1e-16 is below the grid's float-error allowance (~5e-14): no silent inf
    run = pa.Training(pa.Laplace(0.5), pa.Poisson(0.3), steps=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(NotApplicable, match="delta"):
            run.epsilon(1e-16, accountant="pld")
        g = run.epsilon(1e-16)  # another accountant answers, at most the pure-DP epsilon
    assert np.isfinite(g.upper.value) and g.upper.value <= _pure(2.0, 0.3, 10) * (1 + 1e-9)
    assert any(name == "pld" for name, _ in g.declined)


def test_with_replacement_huge_losses_are_clipped_not_refused():
    run = pa.Training(pa.Gaussian(0.05), pa.WithReplacement(1, 2), steps=2,
                      relation=pa.AddRemove())
    g, peak = _peak(lambda: run.epsilon(1e-5))
    assert np.isfinite(g.upper.value) and g.lower.value <= g.upper.value
    # one step already has loss 1/(2 sigma^2) = 200 with probability >= 1/4 (the element drawn)
    assert g.lower.value > 100.0
    assert peak < 600 * MB


def test_power_or_squaring_catches_only_the_power_method_refusal(monkeypatch):
    p = PLD(0.1, 0, np.array([0.25, 0.5, 0.25]), 0.0, "pessimistic")
    assert issubclass(PowerMethodUnavailable, ValueError)
    ref = p.self_compose(4, method="squaring")
    real = PLD.self_compose

    def refuses(self, T, truncation=None, method="auto"):
        if method == "power":
            raise PowerMethodUnavailable("window too long")
        return real(self, T, truncation, method)

    monkeypatch.setattr(PLD, "self_compose", refuses)
    out = _power_or_squaring(p, 4, 1e-20)
    np.testing.assert_allclose(out.masses, ref.masses, rtol=1e-12)

    def buggy(self, T, truncation=None, method="auto"):
        raise ValueError("a bug, not a refusal")

    monkeypatch.setattr(PLD, "self_compose", buggy)
    with pytest.raises(ValueError, match="a bug"):
        _power_or_squaring(p, 4, 1e-20)
