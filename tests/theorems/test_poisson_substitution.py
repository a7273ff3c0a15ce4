"""The antipodal-pair accountant (theorems/poisson_substitution.py): Poisson-subsampled Gaussian
under hybrid substitution (gradients clipped to C, sensitivity C).

References, all independent of privamp's code: mpmath quadrature of the pair's densities
(T = 1) and of the two-fold product (T = 2, nested: inner tails at an mpmath-bisected root);
dp-accounting's REPLACE_ONE Poisson Gaussian PLD (the same pair); the previous interval
[2.24, 12.08] of the example run."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import optimize

import privamp as pa
from privamp.errors import NotApplicable
from privamp.theorems.poisson_substitution import (
    AntipodalGaussianPair,
    PoissonSubstitutionAnalysis,
    SubstitutionLowerAnalysis,
)


def _mp_pair(c: float, q: float):
    c, q = mp.mpf(c), mp.mpf(q)

    def p(x):
        return (1 - q) * mp.npdf(x) + q * mp.npdf(x, c)

    def r(x):
        return (1 - q) * mp.npdf(x) + q * mp.npdf(x, -c)

    return p, r


def _mp_root(f, lo=-80, hi=80):
    """The root of an increasing function by bisection (mpmath)."""
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    for _ in range(120):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if f(mid) > 0 else (mid, hi)
    return (lo + hi) / 2


def _mp_delta1(c: float, q: float, eps: float) -> float:
    mp.mp.dps = 30
    p, r = _mp_pair(c, q)
    g = mp.e ** eps
    x0 = _mp_root(lambda x: mp.log(p(x)) - mp.log(r(x)) - eps)
    return float(mp.quad(lambda x: p(x) - g * r(x), [x0, x0 + 2, x0 + 6, mp.inf]))


def _mp_delta2(c: float, q: float, eps: float) -> float:
    """H_{e^eps}(P x P || Q x Q) = int p(x) P(L(Y) > eps - L(x)) - e^eps r(x) Q(...) dx, the
    inner tails at the root y* of L(y) = eps - L(x) (L increasing; y* by scipy's brentq on
    the float log-densities, then refined by mpmath's secant; tails and the outer integral in
    mpmath)."""
    mp.mp.dps = 20
    p, r = _mp_pair(c, q)
    cm, qm = mp.mpf(c), mp.mpf(q)
    g = mp.e ** eps

    def loss(x):
        return mp.log(p(x)) - mp.log(r(x))

    def floss(y: float) -> float:
        return float(np.logaddexp(math.log1p(-q) - y * y / 2, math.log(q) - (y - c) ** 2 / 2)
                     - np.logaddexp(math.log1p(-q) - y * y / 2, math.log(q) - (y + c) ** 2 / 2))

    def outer(x):
        target = eps - loss(x)
        y0 = optimize.brentq(lambda y: floss(y) - float(target), -60.0, 60.0, xtol=1e-14)
        y = mp.findroot(lambda y: loss(y) - target, mp.mpf(y0))
        pt = (1 - qm) * mp.ncdf(-y) + qm * mp.ncdf(cm - y)
        rt = (1 - qm) * mp.ncdf(-y) + qm * mp.ncdf(-cm - y)
        return max(p(x) * pt - g * r(x) * rt, 0)

    return float(mp.quad(outer, [-12, -c, 0, c, 12]))


@pytest.mark.parametrize("q,c", [(0.05, 1.0), (0.3, 0.4), (1.0, 0.7), (0.001, 3.0)])
def test_loss_and_tails_against_mpmath(q, c):
    pair = AntipodalGaussianPair(q, c)
    mp.mp.dps = 30
    p, r = _mp_pair(c, q)
    for x in (-7.0, -1.3, 0.0, 0.4, 2.5, 9.0):
        want = mp.log(p(x)) - mp.log(r(x))
        assert float(pair.loss(np.array(x))) == pytest.approx(float(want), rel=1e-12, abs=1e-13)
    for lv in (-30.0, -2.0, -0.05, 0.0, 0.3, 4.0, 25.0):
        x0 = _mp_root(lambda x, lv=lv: mp.log(p(x)) - mp.log(r(x)) - lv)
        assert float(pair.preimage(np.array(lv))) == pytest.approx(float(x0), rel=1e-11,
                                                                    abs=1e-11)
        ptail = (1 - q) * mp.ncdf(-x0) + q * mp.ncdf(c - x0)
        qlow = (1 - q) * mp.ncdf(x0) + q * mp.ncdf(x0 + c)
        assert float(pair.tail(np.array([lv]), "P", True, True)[0]) == pytest.approx(
            float(ptail), rel=1e-9)
        assert float(pair.tail(np.array([lv]), "Q", False, True)[0]) == pytest.approx(
            float(qlow), rel=1e-9)
    # extreme losses stay finite and ordered (log-space inversion)
    xs = pair.preimage(np.array([-2000.0, -700.0, 700.0, 2000.0, np.inf]))
    assert np.all(np.diff(xs) > 0) and xs[-1] == np.inf


@pytest.mark.parametrize("q,c,eps", [(0.05, 1.0, 0.5), (0.05, 1.0, 2.0), (0.3, 0.5, 0.1),
                                     (0.3, 0.5, -0.5)])
def test_one_step_brackets_mpmath(q, c, eps):
    exact = _mp_delta1(c, q, eps)
    a = PoissonSubstitutionAnalysis(pa.Gaussian(1.0, sensitivity=c), q, 1)
    up, lo = a.delta(np.array([eps]))
    assert float(lo.value[0]) <= exact <= float(up.value[0])
    assert float(up.value[0]) - float(lo.value[0]) <= 2e-3 * exact + 1e-12
    # the pair's own profile (no discretisation) is the exact one
    assert float(a.pair.delta(np.array([eps]))[0]) == pytest.approx(exact, rel=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.5, 1.5])
def test_two_steps_bracket_mpmath(eps):
    q, c = 0.2, 1.0
    exact = _mp_delta2(c, q, eps)
    a = PoissonSubstitutionAnalysis(pa.Gaussian(1.0, sensitivity=c), q, 2)
    up, lo = a.delta(np.array([eps]))
    assert float(lo.value[0]) <= exact * (1 + 1e-9) and exact <= float(up.value[0])
    assert float(up.value[0]) - float(lo.value[0]) <= 5e-3 * exact


def test_matches_dp_accounting_replace_one():
    pld_mod = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    from dp_accounting import NeighboringRelation

    ref = pld_mod.from_gaussian_mechanism(
        1.0, sensitivity=1.0, sampling_prob=0.05, value_discretization_interval=1e-4,
        neighboring_relation=NeighboringRelation.REPLACE_ONE).self_compose(30)
    ref_opt = pld_mod.from_gaussian_mechanism(
        1.0, sensitivity=1.0, sampling_prob=0.05, value_discretization_interval=1e-4,
        pessimistic_estimate=False, use_connect_dots=False,
        neighboring_relation=NeighboringRelation.REPLACE_ONE).self_compose(30)
    run = pa.Training(pa.Gaussian(1.0, sensitivity=1.0), pa.Poisson(0.05), steps=30,
                      relation=pa.HybridSubstitution())
    g = run.epsilon(1e-5)
    e_pess = ref.get_epsilon_for_delta(1e-5)
    e_opt = ref_opt.get_epsilon_for_delta(1e-5)
    assert g.lower.value <= e_pess + 1e-3 and e_opt - 1e-3 <= g.upper.value
    assert g.upper.value == pytest.approx(e_pess, abs=2e-3)
    assert g.upper.value - g.lower.value < 1e-3
    # old interval [2.24, 12.08] (Balle et al.'s coupling at twice the sensitivity)
    assert 2.24 <= g.lower.value and g.upper.value < 12.08
    assert "antipodal" in g.upper.source
    for eps in (0.5, 2.0, 4.0):
        up, lo = run.delta(eps).upper.value, run.delta(eps).lower.value
        ref_d = ref.get_delta_for_epsilon(eps)
        assert lo <= ref_d * (1 + 1e-3) and ref_opt.get_delta_for_epsilon(eps) <= up * (1 + 1e-3)


def test_pld_capability_composes_like_one_run():
    mech = pa.Gaussian(1.2, sensitivity=1.0)
    whole = PoissonSubstitutionAnalysis(mech, 0.1, 30)
    h = whole.grid_step()
    a, b = (PoissonSubstitutionAnalysis(mech, 0.1, t) for t in (10, 20))
    (up_a, lo_a), = a.pld(h).directions
    (up_b, lo_b), = b.pld(h).directions
    (up_w, lo_w), = whole.pld(h).directions
    e = np.array([0.5, 1.0, 2.0])
    assert np.allclose(up_a.compose(up_b).delta(e), up_w.delta(e), rtol=1e-6, atol=1e-14)
    assert np.all(lo_a.compose(lo_b).delta(e) <= up_w.delta(e))
    with pytest.raises(ValueError, match="h must be > 0"):
        whole.pld(-1.0)


def test_applies_only_where_proven():
    def bounds(mech, rel):
        return pa.Training(mech, pa.Poisson(0.05), steps=5, relation=rel).epsilon(1e-5)

    # plain substitution: sensitivity bounds only ||f(B+x) - f(B+x')||, the pair at Delta/2 is
    # not dominating (tests/soundness/test_substitution_antipodal.py), only realised
    plain = bounds(pa.Gaussian(1.0, 2.0), pa.Substitution())
    hybrid = bounds(pa.Gaussian(1.0, 1.0), pa.HybridSubstitution())
    assert "antipodal" not in plain.upper.source and "antipodal" in plain.lower.source
    assert "antipodal" in hybrid.upper.source
    assert plain.lower.value == pytest.approx(hybrid.lower.value, rel=1e-9)
    assert plain.upper.value > 1.5 * hybrid.upper.value
    assert "antipodal" not in bounds(pa.Gaussian(1.0, 1.0),
                                     pa.HybridSubstitution(group=2)).upper.source
    assert "antipodal" not in bounds(pa.Laplace(1.0, 1.0), pa.HybridSubstitution()).upper.source
    with pytest.raises(NotApplicable):
        PoissonSubstitutionAnalysis(pa.Gaussian(1.0, 1.0), 0.05, 10**9 + 1)
    lower_only = SubstitutionLowerAnalysis(pa.Gaussian(1.0, 2.0), 0.05, 5)
    with pytest.raises(NotApplicable):
        lower_only.pld()
    assert lower_only.delta(np.array([1.0]))[0] is None


def test_renyi_floor_below_the_exact_renyi_divergence():
    """D_alpha of one step of the antipodal pair by mpmath; the floor (lower-only analysis
    under plain substitution, the pair at Delta/2 = 1) must not exceed it."""
    mp.mp.dps = 30
    q, c, alpha = 0.2, 1.0, 4.0
    p, r = _mp_pair(c, q)
    e = mp.quad(lambda x: p(x) ** alpha * r(x) ** (1 - alpha), [-mp.inf, -c, 0, c, mp.inf])
    exact = float(mp.log(e) / (alpha - 1))
    floor = SubstitutionLowerAnalysis(pa.Gaussian(1.0, 2.0 * c), q, 1).renyi_floor(
        np.array([alpha]))
    assert 0.5 * exact < float(floor[0]) <= exact


def test_bad_input():
    with pytest.raises(ValueError, match="q must be in"):
        AntipodalGaussianPair(0.0, 1.0)
    with pytest.raises(ValueError, match="c must be"):
        AntipodalGaussianPair(0.5, math.inf)
