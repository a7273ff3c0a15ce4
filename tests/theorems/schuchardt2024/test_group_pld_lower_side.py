"""The group PLD's lower (optimistic) side where the loss has a near-atom at its floor
(session 11 review: sigma 0.5, q 1e-4, add/remove of 4 records, K s = 8).

The remove pair (B_4, N(0, 1)), B_4 = sum_k Binom(k | 4, q) N(2 k, 1), has its loss
L(x) = log sum_k b_k e^{2 k x - 2 k^2} >= log b_0 = -4.0002e-4, and more than half of P
lies within 1e-4 of that floor: on a step above |log b_0| one grid bin holds O(1) mass, and
the optimistic construction loses O(h) there (the lowered chords' tents are h A B / (A + B), first
order when the bin's Q-mass A + B is O(1), and the convex minorant carried one collapsed
vertex over the profile).  The automatic step is now at most 0.85 |log b_0|
(``FLOOR_STEP``).  These tests pin what is true: both sides bracket mpmath's exact profile
at T = 1 and dp-accounting's PLDs at T = 10 and 1000, the automatic interval is at most 1e-3
relative at T = 1..1e4; the pessimistic side keeps the loss's mean (KL) to second order, the
optimistic one does not exceed it.
References are independent: mpmath / scipy quadrature of the pair, dp-accounting 0.4
``from_mixture_gaussian_mechanism`` (value_discretization_interval 1e-4) run offline.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
from scipy import integrate, stats

from privamp.mechanisms.gaussian import Gaussian
from privamp.pld.discretise import discretise
from privamp.theorems.schuchardt2024.group_pld import GroupPLDAnalysis, group_mixture_pairs

K, Q, SIGMA = 4, 1e-4, 0.5
S = 1.0 / SIGMA


def _weights() -> list[mp.mpf]:
    return [mp.mpf(float(v)) for v in stats.binom.pmf(np.arange(K + 1), K, Q)]


def _exact_remove_delta(eps: float) -> mp.mpf:
    """H_{e^eps}(B_K || N(0, 1)) by mpmath: P(X > x*) - e^eps Q(X > x*), L(x*) = eps."""
    mp.mp.dps = 40
    b = _weights()

    def loss(x):
        return mp.log(sum(b[k] * mp.e ** (k * S * x - (k * S) ** 2 / 2) for k in range(K + 1)))

    xs = mp.findroot(lambda x: loss(x) - eps, (-40, 60), solver="bisect")
    return (sum(b[k] * mp.ncdf(k * S - xs) for k in range(K + 1))
            - mp.e ** eps * mp.ncdf(-xs))


def test_floor_near_atom_holds_most_of_p():
    # the cause of the O(h) optimistic loss: P(L <= floor + 1e-4) > 1/2 (scipy, closed form:
    # L(x) <= floor + d  iff  sum_{k >= 1} b_k e^{2 k x - 2 k^2} <= b_0 (e^d - 1))
    b = stats.binom.pmf(np.arange(K + 1), K, Q)
    floor = float(np.log(b[0]))
    assert abs(floor - K * np.log1p(-Q)) < 1e-15
    d = 1e-4
    # bisect for the x where the sum reaches b_0 (e^d - 1)
    f = lambda x: sum(b[k] * np.exp(k * S * x - (k * S) ** 2 / 2)  # noqa: E731
                      for k in range(1, K + 1)) - b[0] * np.expm1(d)
    lo, hi = -20.0, 20.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    p_mass = sum(b[k] * stats.norm.cdf(lo - k * S) for k in range(K + 1))
    assert p_mass > 0.5


def test_one_step_sides_bracket_mpmath():
    pair = group_mixture_pairs(K, Q, S)[0]
    for h in (1.6974720103794905e-3, 1e-4):  # the automatic step at T <= 100, and finer
        p, o = discretise(pair, h, 1e-16, rho_max=1e-6)
        for eps in (0.0, 0.001, 0.01, 0.05, 0.1, 0.5, 2.0):
            ex = float(_exact_remove_delta(eps))
            assert float(o.delta(eps)) <= ex <= float(p.delta(eps)) * (1 + 1e-12)
            if eps >= 0.01:  # the pessimistic side is tight away from the bulk
                assert float(p.delta(eps)) <= ex * (1 + 2e-3)


def test_one_step_mean_loss_pessimistic_second_order_optimistic_below():
    # E_P[L] = KL(P || Q) by scipy quadrature; a lower profile has a lower KL (every
    # f-divergence is a mixture of hockey-stick divergences)
    pair = group_mixture_pairs(K, Q, S)[0]
    b = pair.b

    def dens_loss(x):
        return sum(b[k] * stats.norm.pdf(x - k * S) for k in range(K + 1)) * float(
            pair.loss(np.array(x)))

    kl = integrate.quad(dens_loss, -30, 40, points=[0, 2, 4, 8], limit=500,
                        epsabs=1e-16)[0]
    h = 1e-4
    p, o = discretise(pair, h, 1e-16, rho_max=1e-6)
    means = []
    for d in (p, o):
        l = (np.arange(len(d.masses)) + d.offset) * h
        means.append(float((d.masses * l).sum() / d.masses.sum()))
    assert abs(means[0] - kl) < 1e-3 * h
    assert means[1] <= kl


def test_composed_sides_bracket_dp_accounting():
    # dp-accounting 0.4, from_mixture_gaussian_mechanism(0.5, [0..4], Binom(k | 4, 1e-4)),
    # value_discretization_interval 1e-4 (offline, 17 s / 120 s a run):
    # T 10: epsilon(1e-5) pessimistic 0.3659576, optimistic 0.3640835;
    #       delta(0) pessimistic 1.6135305e-3, optimistic 1.5194966e-3.
    # T 1000: epsilon(1e-5) pessimistic 2.0134807.
    an = GroupPLDAnalysis(Gaussian(SIGMA, 1.0), Q, 10, K)
    up, lo = an.epsilon(np.array(1e-5))
    assert float(lo.value) <= 0.3659576 and float(up.value) >= 0.3640835
    assert float(up.value) <= 0.3659576 * (1 + 1e-3)
    du, dl = an.delta(np.array(0.0))
    assert float(dl.value) <= 1.6135305e-3 and float(du.value) >= 1.5194966e-3
    an = GroupPLDAnalysis(Gaussian(SIGMA, 1.0), Q, 1000, K)
    up, lo = an.epsilon(np.array(1e-5))
    assert float(lo.value) <= 2.0134807
    assert abs(float(up.value) - 2.0134807) <= 1e-3 * 2.0134807


def test_one_step_epsilon_brackets_mpmath_and_is_tight():
    # T = 1: the add direction's loss is at most -log b_0 = 4e-4, so its profile is 0 above
    # that and the remove direction decides epsilon(1e-5); its root by mpmath
    exact = float(mp.findroot(lambda e: _exact_remove_delta(e) - mp.mpf(1e-5), (0.05, 0.1),
                              solver="bisect"))
    up, lo = GroupPLDAnalysis(Gaussian(SIGMA, 1.0), Q, 1, K).epsilon(np.array(1e-5))
    assert float(lo.value) <= exact <= float(up.value)
    assert float(up.value) - float(lo.value) <= 1e-3 * exact


def test_automatic_interval_at_most_1e3_relative():
    # (before the floor step: 3% at T 10, 22% at T 1000, lower 0 at T 1e4)
    for steps in (10, 1000, 10_000):
        up, lo = GroupPLDAnalysis(Gaussian(SIGMA, 1.0), Q, steps, K).epsilon(np.array(1e-5))
        assert 0 < float(lo.value) <= float(up.value) <= float(lo.value) * (1 + 1e-3)
