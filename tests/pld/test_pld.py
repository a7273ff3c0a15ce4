"""Tests of the two-sided PLD accountant (privamp.pld).

References are independent of privamp's PLD code: closed forms written here with scipy
(Gaussian, Laplace, Poisson-subsampled Gaussian profiles), the exact binomial sum for
Poisson-subsampled randomized response, and Google's dp_accounting PLD.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize
from scipy.stats import binom, norm

import privamp as pa
from privamp.accountants.poisson import PLDAnalysis, poisson_pairs
from privamp.pairs.combinators import MixturePair, SwappedPair
from privamp.pairs.discrete import DiscretePair
from privamp.pairs.mechanism_pairs import GaussianPair, LaplacePair
from privamp.pld.discretise import discretise
from privamp.pld.grid import PLD
from privamp.pld.two_sided import TwoSidedPLD


# ---------------------------------------------------------------------------------------
# independent closed forms
# ---------------------------------------------------------------------------------------
def gauss_delta(s: float, eps: np.ndarray) -> np.ndarray:
    """N(s,1) vs N(0,1): Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s) (Balle & Wang 2018)."""
    return norm.cdf(s / 2 - eps / s) - np.exp(eps) * norm.cdf(-s / 2 - eps / s)


def mix_gauss_delta(s: float, q: float, eps: np.ndarray, swap: bool) -> np.ndarray:
    """P = q N(s,1) + (1-q) N(0,1), Q = N(0,1); the loss is increasing in x, so the
    optimal test is a half-line.  swap=True gives H_{e^eps}(Q || P)."""
    eps = np.asarray(eps, dtype=float)
    c = np.expm1(-eps if swap else eps) + q
    ok = c > 0
    x = (np.log(np.where(ok, c, 1.0) / q) + s * s / 2) / s
    if not swap:
        val = q * norm.sf(x - s) + (1 - q) * norm.sf(x) - np.exp(eps) * norm.sf(x)
        val = np.where(ok, val, -np.expm1(eps))
    else:
        val = norm.cdf(x) - np.exp(eps) * (q * norm.cdf(x - s) + (1 - q) * norm.cdf(x))
        val = np.where(ok, val, 0.0)
    return np.maximum(val, 0.0)


def laplace_delta(e0: float, eps: np.ndarray) -> np.ndarray:
    """Lap(e0,1) vs Lap(0,1): 1 - exp((eps - e0)/2) on [0, e0] (Balle et al. 2018, Thm 3)."""
    eps = np.asarray(eps, dtype=float)
    return np.where(eps >= e0, 0.0, -np.expm1((np.minimum(eps, e0) - e0) / 2))


def discrete_delta(p: np.ndarray, q: np.ndarray, eps: np.ndarray) -> np.ndarray:
    return np.array([np.maximum(p - math.exp(e) * q, 0.0).sum() for e in eps])


def rr_exact_delta(theta: float, rate: float, T: int, eps: np.ndarray) -> np.ndarray:
    """Poisson-subsampled randomized response composed T times: the number of outputs
    equal to the protected bit's 'truthful' answer is binomial under both hypotheses, so
    the exact profile (max over remove/add) is an O(T) sum."""
    p0 = rate * theta + (1 - rate) * (1 - theta)
    q0 = 1 - theta
    k = np.arange(T + 1)
    lp, lq = binom.logpmf(k, T, p0), binom.logpmf(k, T, q0)
    out = []
    for e in eps:
        rem = np.sum(np.where(lp > e + lq, np.exp(lp) - np.exp(e + lq), 0.0))
        add = np.sum(np.where(lq > e + lp, np.exp(lq) - np.exp(e + lp), 0.0))
        out.append(max(rem, add))
    return np.array(out)


EPS = np.concatenate([np.linspace(0.0, 5.0, 3001), np.linspace(0.0, 0.05, 1001)])
DP = np.array([0.7, 0.2, 0.1])
DQ = np.array([0.1, 0.3, 0.6])

SINGLE = {
    "gaussian": (GaussianPair(1.0), lambda e: gauss_delta(1.0, e)),
    "laplace": (LaplacePair(1.0), lambda e: laplace_delta(1.0, e)),
    "discrete": (DiscretePair(DP, DQ), lambda e: discrete_delta(DP, DQ, e)),
    "mixture": (MixturePair(GaussianPair(1 / 1.1), 0.01),
                lambda e: mix_gauss_delta(1 / 1.1, 0.01, e, False)),
    "mixture-swapped": (SwappedPair(MixturePair(GaussianPair(1 / 1.1), 0.01)),
                        lambda e: mix_gauss_delta(1 / 1.1, 0.01, e, True)),
}


# ---------------------------------------------------------------------------------------
# one step
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SINGLE))
def test_single_step_sandwich_and_convergence(name):
    pair, ref = SINGLE[name]
    exact = ref(EPS)
    gaps = []
    for h in (1e-2, 1e-3):
        pess, opt = discretise(pair, h)
        assert pess.kind == "pessimistic" and opt.kind == "optimistic"
        up, lo = pess.delta(EPS), opt.delta(EPS)
        # tolerance: the closed forms themselves are accurate to ~1e-15
        assert np.all(up >= exact - 1e-14), name
        assert np.all(lo <= exact + 1e-14), name
        gaps.append(max(np.max(up - exact), np.max(exact - lo)))
    assert gaps[1] < gaps[0] / 5, (name, gaps)


def test_pessimistic_is_connect_the_dots_at_grid_points():
    """At grid points the pessimistic profile equals the true one (chord interpolation)."""
    pair = GaussianPair(0.7)
    pess, _ = discretise(pair, 0.01)
    grid = pess.losses[(pess.losses > 0) & (pess.losses < 2)]
    # (rtol: the relative safety factors 1e-10 on masses and 1e-9 on queries)
    np.testing.assert_allclose(pess.delta(grid), gauss_delta(0.7, grid), rtol=3e-9, atol=1e-13)


# ---------------------------------------------------------------------------------------
# composition
# ---------------------------------------------------------------------------------------
def test_gaussian_composition_contains_closed_form():
    """T-fold Gaussian with shift s is a Gaussian with shift s sqrt(T) (Dong et al. 2022)."""
    sigma, T = 20.0, 1000
    tp = TwoSidedPLD.from_pairs(poisson_pairs(pa.Gaussian(sigma), 1.0), 1e-3).self_compose(T)
    s_tot = math.sqrt(T) / sigma
    eps = np.linspace(0.0, 6.0, 61)
    up, lo = tp.delta(eps)
    exact = gauss_delta(s_tot, eps)
    assert np.all(lo <= exact + 1e-15) and np.all(exact <= up + 1e-15)
    assert np.max(up - lo) < 1e-4
    for d in (1e-3, 1e-5, 1e-8):
        e_exact = optimize.brentq(lambda e, d=d: gauss_delta(s_tot, e) - d, 0.0, 50.0,
                                  xtol=1e-13)
        e_up, e_lo = tp.epsilon(d)
        assert e_lo <= e_exact <= e_up
        assert e_up - e_lo < 5e-3 * e_exact


@pytest.mark.parametrize("theta,rate,T", [(0.75, 0.05, 200), (0.9, 1.0, 20), (0.6, 0.2, 100)])
def test_randomized_response_binomial_reference(theta, rate, T):
    an = PLDAnalysis(pa.RandomizedResponse(theta), rate, T)
    eps = np.array([0.0, 0.05, 0.2, 0.5, 1.0, 2.0])
    exact = rr_exact_delta(theta, rate, T, eps)
    up, lo = an.delta(eps)
    assert np.all(lo.value <= exact + 1e-14)
    assert np.all(exact <= up.value + 1e-14)
    # tight: relative width 1e-4 where delta is not tiny
    big = exact > 1e-6
    assert np.all((up.value - lo.value)[big] <= 1e-4 * exact[big] + 1e-12)


def test_laplace_poisson_sandwich_against_dp_accounting():
    from dp_accounting.pld import privacy_loss_distribution as pldm

    scale, q, T = 2.0, 0.05, 300
    run = pa.Training(pa.Laplace(scale), pa.Poisson(q), steps=T)
    g = run.epsilon(1e-5, accountant="pld")
    ref = (
        pldm.from_laplace_mechanism(scale, sampling_prob=q, value_discretization_interval=1e-4,
                                    use_connect_dots=True)
        .self_compose(T)
        .get_epsilon_for_delta(1e-5)
    )
    # dp_accounting's connect-dots value is itself pessimistic up to its unaccounted
    # roundoff (relative 1e-6 allowed); it may exceed our upper bound by its own
    # discretisation error (0.5% allowed).
    assert g.lower.value <= ref * (1 + 1e-6)
    assert ref <= g.upper.value * 1.005
    # the grid is aligned with the Laplace atoms, so the interval is very tight
    assert g.width < 5e-4 * g.upper.value


@pytest.mark.parametrize(
    "q,sigma,T,h",
    [
        (0.05, 2.0, 1000, 1e-3),
        (256 / 60000, 1.1, 500, 2e-4),
        (1e-3, 2.0, 10**6, 2e-4),
    ],
)
def test_gaussian_poisson_against_dp_accounting(q, sigma, T, h):
    """dp_accounting (REMOVE and ADD directions, connect-the-dots, h = 1e-4) must land in
    [lower, upper] up to its own discretisation error (0.5% above, 1e-6 below)."""
    from dp_accounting.pld import privacy_loss_distribution as pldm

    ref = (
        pldm.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=1e-4,
                                     use_connect_dots=True)
        .self_compose(T)
        .get_epsilon_for_delta(1e-5)
    )
    up, lo = PLDAnalysis(pa.Gaussian(sigma), q, T, h=h).epsilon(np.array(1e-5))
    assert lo.value <= ref * (1 + 1e-6)
    assert ref <= up.value * 1.005


def test_canonical_case_acceptance():
    """Issue's acceptance case (q = 256/60000, sigma = 1.1, T = 14063, delta = 1e-5): the
    certified interval is < 0.5% wide and its upper end is no looser than dp_accounting's
    connect-the-dots estimate at h = 1e-4 (about 2.3818; true value about 2.38)."""
    from dp_accounting.pld import privacy_loss_distribution as pldm

    q, sigma, T = 256 / 60000, 1.1, 14063
    ref = (
        pldm.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=1e-4,
                                     use_connect_dots=True)
        .self_compose(T)
        .get_epsilon_for_delta(1e-5)
    )
    run = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T)
    g = run.epsilon(1e-5, accountant="pld")
    assert g.upper.kind == "upper" and g.lower.kind == "lower"
    assert "Doroshenko" in g.upper.source
    assert g.lower.value <= ref
    assert g.upper.value <= ref
    assert g.width < 5e-3 * g.upper.value


def test_rate_zero_is_exact_zero():
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.0), steps=100)
    g = run.epsilon(1e-5, accountant="pld")
    assert g.upper.value == 0.0 and g.upper.kind == "exact"


def test_inf_mass_composition():
    """An atom at +inf composes as p_inf = p1 (M2 + p2) + M1 p2."""
    a = PLD(0.1, 0, np.array([0.5, 0.3]), 0.2, "pessimistic")
    b = PLD(0.1, -1, np.array([0.6]), 0.4, "pessimistic")
    c = a.compose(b)
    assert c.inf_mass == pytest.approx(0.2 * 1.0 + 0.8 * 0.4)
    np.testing.assert_allclose(c.masses, [0.3, 0.18], rtol=1e-12)
    assert c.offset == -1


def test_validation_errors():
    pair = GaussianPair(1.0)
    with pytest.raises(ValueError, match="h"):
        discretise(pair, 0.0)
    p, o = discretise(pair, 0.01)
    with pytest.raises(ValueError, match="T"):
        p.self_compose(0)
    with pytest.raises(ValueError, match="kind|compose"):
        p.compose(o)
    with pytest.raises(ValueError, match="rate"):
        poisson_pairs(pa.Gaussian(1.0), 0.0)


# ---------------------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------------------
def _interval(sigma: float, q: float, T: int, delta: float = 1e-5) -> tuple[float, float]:
    up, lo = PLDAnalysis(pa.Gaussian(sigma), q, T, h=4e-3).epsilon(np.array(delta))
    return float(up.value), float(lo.value)


@settings(max_examples=15, deadline=None)
@given(
    sigma=st.floats(1.0, 3.0),
    q=st.floats(0.02, 0.3),
    T=st.integers(1, 30),
    factor=st.floats(1.05, 2.0),
)
def test_monotone_in_sigma_q_T(sigma, q, T, factor):
    """True epsilon decreases in sigma and increases in q and T, so the upper bound of the
    more private run can never fall below the lower bound of the less private one."""
    up, lo = _interval(sigma, q, T)
    assert lo <= up
    up_s, lo_s = _interval(sigma * factor, q, T)
    assert lo_s <= up  # sigma larger: more private
    up_q, lo_q = _interval(sigma, min(q * factor, 1.0), T)
    assert lo <= up_q
    up_t, lo_t = _interval(sigma, q, T + 5)
    assert lo <= up_t


@settings(max_examples=15, deadline=None)
@given(eps=st.floats(0.0, 4.0), s=st.floats(0.3, 2.0))
def test_epsilon_delta_round_trip(eps, s):
    pess, opt = discretise(GaussianPair(s), 1e-2)
    pc, oc = pess.self_compose(3), opt.self_compose(3)
    for pld in (pc, oc):
        d = float(pld.delta(eps))
        if 1e-12 < d < 0.99:
            back = float(pld.epsilon(d))
            assert back == pytest.approx(eps, abs=1e-8)


def _product_delta(p: np.ndarray, q: np.ndarray, T: int, eps: np.ndarray) -> np.ndarray:
    """Exact profile of the T-fold product of a finite pair, by enumerating outcomes."""
    pp, qq = p.copy(), q.copy()
    for _ in range(T - 1):
        pp, qq = np.outer(pp, p).ravel(), np.outer(qq, q).ravel()
    return discrete_delta(pp, qq, eps)


@settings(max_examples=15, deadline=None)
@given(
    w=st.lists(st.tuples(st.floats(0.01, 1.0), st.floats(0.01, 1.0)), min_size=2, max_size=5),
    h=st.floats(1e-3, 0.2),
    T=st.integers(1, 3),
)
def test_random_discrete_pairs_composed_sandwich(w, h, T):
    """Random finite pairs (atoms anywhere relative to the grid), composed up to 3 times:
    pessimistic >= exact enumeration >= optimistic at many eps."""
    p = np.array([a for a, _ in w])
    q = np.array([b for _, b in w])
    p, q = p / p.sum(), q / q.sum()
    pess, opt = discretise(DiscretePair(p, q), h)
    eps = np.linspace(0.0, 3.0, 301)
    exact = _product_delta(p, q, T, eps)
    up = pess.self_compose(T).delta(eps)
    lo = opt.self_compose(T).delta(eps)
    assert np.all(up >= exact - 1e-13)
    assert np.all(lo <= exact + 1e-13)


def test_pld_analysis_explicit_grid_and_scope():
    from dp_accounting.pld import privacy_loss_distribution as pldm

    from privamp.accountants.poisson import pld_analysis

    run = pa.Training(pa.Gaussian(1.1), pa.Poisson(0.01), steps=100)
    up, lo = pld_analysis(run, h=1e-3).epsilon(np.array(1e-5))
    ref = (
        pldm.from_gaussian_mechanism(1.1, sampling_prob=0.01, value_discretization_interval=1e-4,
                                 use_connect_dots=True)
        .self_compose(100)
        .get_epsilon_for_delta(1e-5)
    )
    assert lo.value <= ref * (1 + 1e-6) and ref <= up.value * 1.005
    other = pa.Training(pa.Gaussian(1.1), pa.Poisson(0.01), steps=10,
                        relation=pa.Substitution())
    with pytest.raises(ValueError, match="Poisson"):
        pld_analysis(other)


# ---------------------------------------------------------------------------------------
# Fourier-domain exponentiation (self_compose method="power") vs repeated squaring
# ---------------------------------------------------------------------------------------
def test_power_self_compose_grid_pair_closed_form():
    """A grid pair with masses (0.6, 0.39) at losses (0, h) and 0.01 at +inf: its T-fold has
    binomial masses C(T,k) 0.6^(T-k) 0.39^k at k h and 1 - 0.99^T at +inf (closed form), so
    both kinds must sandwich the closed-form profile within their slack."""
    h, T = 0.1, 300
    k = np.arange(T + 1)
    logm = (math.lgamma(T + 1) - np.array([math.lgamma(i + 1) + math.lgamma(T - i + 1)
                                           for i in k]) + (T - k) * math.log(0.6)
            + k * math.log(0.39))
    mass, inf = np.exp(logm), 1.0 - 0.99**T
    eps = np.linspace(0.0, 20.0, 201)
    exact = np.array([np.sum(mass * np.maximum(1 - np.exp(e - k * h), 0.0)) for e in eps]) + inf
    for kind in ("pessimistic", "optimistic"):
        base = PLD(h, 0, np.array([0.6, 0.39]), 0.01, kind)
        out = base.self_compose(T, method="power")
        assert out.slack < 1e-12
        # the masses themselves: l1 distance to the binomial within slack + truncated tails
        ks = out.offset + np.arange(len(out.masses))
        assert np.sum(np.abs(out.masses - mass[ks])) <= out.slack + 1e-13
        d = out.delta(eps)
        if kind == "pessimistic":
            assert np.all(d >= exact - 1e-15) and np.all(d <= exact * (1 + 1e-8) + 1e-12)
        else:
            assert np.all(d <= exact + 1e-15) and np.all(d >= exact * (1 - 1e-8) - 1e-12)


def _cross_check(pess: PLD, opt: PLD, T: int, eps: np.ndarray,
                 exact: np.ndarray | None) -> None:
    pw = pess.self_compose(T, method="power"), opt.self_compose(T, method="power")
    sq = pess.self_compose(T, method="squaring"), opt.self_compose(T, method="squaring")
    up_pw, lo_pw = pw[0].delta(eps), pw[1].delta(eps)
    up_sq, lo_sq = sq[0].delta(eps), sq[1].delta(eps)
    # every upper bound lies above every lower bound
    assert np.all(up_pw >= lo_sq - 1e-15) and np.all(up_sq >= lo_pw - 1e-15)
    # the two pessimistic (optimistic) results agree within both certified slacks plus the
    # relative rounding factors of the squaring path (<= 1e-6 here)
    for a, b in ((pw[0], sq[0]), (pw[1], sq[1])):
        tol = a.slack + b.slack + 1e-6 * np.maximum(a.delta(eps), b.delta(eps)) + 1e-13
        assert np.all(np.abs(a.delta(eps) - b.delta(eps)) <= tol)
    if exact is not None:
        assert np.all(lo_pw <= exact + 1e-14) and np.all(exact <= up_pw + 1e-14)


def test_power_vs_squaring_gaussian_closed_form():
    """Gaussian pair composed T times is Gaussian with shift s sqrt(T) (Dong et al. 2022)."""
    s, T = 0.05, 1000
    pess, opt = discretise(GaussianPair(s), 1e-3)
    eps = np.linspace(0.0, 5.0, 51)
    _cross_check(pess, opt, T, eps, gauss_delta(s * math.sqrt(T), eps))


@pytest.mark.parametrize("theta,rate,T", [(0.75, 0.05, 200), (0.6, 0.2, 100)])
def test_power_vs_squaring_randomized_response_binomial(theta, rate, T):
    """Poisson-subsampled randomized response (lattice-supported losses), both directions,
    against each other and the exact binomial profile."""
    eps = np.array([0.0, 0.05, 0.2, 0.5, 1.0, 2.0])
    exact = rr_exact_delta(theta, rate, T, eps)
    ups, los = [], []
    for pair in poisson_pairs(pa.RandomizedResponse(theta), rate):
        from privamp.accountants.grid import aligned_step as _aligned_step
        from privamp.accountants.grid import auto_grid

        pess, opt = discretise(pair, _aligned_step(pair, auto_grid(pair, T, points=2e5)))
        _cross_check(pess, opt, T, eps, None)
        ups.append(pess.self_compose(T, method="power").delta(eps))
        los.append(opt.self_compose(T, method="power").delta(eps))
    up, lo = np.max(ups, axis=0), np.max(los, axis=0)
    assert np.all(lo <= exact + 1e-14) and np.all(exact <= up + 1e-14)
    big = exact > 1e-6
    assert np.all((up - lo)[big] <= 1e-4 * exact[big] + 1e-12)


def test_power_vs_squaring_subsampled_gaussian():
    pair = MixturePair(GaussianPair(1 / 1.1), 0.05)
    pess, opt = discretise(pair, 2e-3)
    eps = np.linspace(0.0, 4.0, 41)
    _cross_check(pess, opt, 400, eps, None)
    _cross_check(*discretise(SwappedPair(pair), 2e-3), 400, eps, None)


def test_self_compose_method_validation():
    p, _ = discretise(GaussianPair(1.0), 0.01)
    with pytest.raises(ValueError, match="method"):
        p.self_compose(3, method="fast")


def test_auto_grid_small_rate_directions_against_dp_accounting():
    """Poisson-subsampled Gaussian at a small rate with few expected selections (w T = 2):
    the automatic grid gives the add direction a step no finer than the remove direction's
    (since session 11 it is the remove direction's composed PLD swapped, on its grid:
    poisson_bounds.swapped_pessimistic); the add direction's certified upper bound stays
    below the remove
    direction's certified lower bound (so the coarse grid costs no width), and the run's
    interval contains dp_accounting's connect-the-dots estimate (an upper estimate, so at
    least the lower bound) and is narrow."""
    from dp_accounting.pld import privacy_loss_distribution as pldm

    sigma, q, T, delta = 0.7, 1e-3, 2000, 1e-5
    ref = pldm.from_gaussian_mechanism(
        sigma, sampling_prob=q, value_discretization_interval=1e-4, use_connect_dots=True
    ).self_compose(T).get_epsilon_for_delta(delta)
    a = PLDAnalysis(pa.Gaussian(sigma), q, T)
    up, lo = a.epsilon(delta)
    assert a.grid[1] >= a.grid[0]
    (p_rm, o_rm), (p_add, _) = a.pld().directions
    assert float(p_add.epsilon(delta)) < float(o_rm.epsilon(delta))
    assert lo.value <= ref * (1 + 1e-9)
    assert up.value >= ref * (1 - 2e-3)
    assert (up.value - lo.value) <= 0.01 * up.value


def test_mix_is_the_weighted_profile():
    """pld.compose.mix: the labelled mixture of two Gaussian pairs' PLDs bounds the mixture's
    profile, sum_k w_k delta_k(eps) (Balle & Wang 2018, Thm 8, in closed form), from above
    on the pessimistic side and from below on the optimistic side."""
    from scipy.stats import norm

    from privamp.pairs.mechanism_pairs import GaussianPair
    from privamp.pld.compose import mix

    def gauss(s, e):
        return norm.cdf(s / 2 - e / s) - np.exp(e) * norm.cdf(-s / 2 - e / s)

    h, eps = 1e-3, np.array([0.0, 0.5, 1.0, 2.0])
    sides = [discretise(GaussianPair(s), h) for s in (0.5, 2.0)]
    exact = 0.3 * gauss(0.5, eps) + 0.7 * gauss(2.0, eps)
    up = mix([(0.3, sides[0][0]), (0.7, sides[1][0])], "pessimistic").delta(eps)
    lo = mix([(0.3, sides[0][1]), (0.7, sides[1][1])], "optimistic").delta(eps)
    assert np.all(lo <= exact) and np.all(exact <= up)
    assert np.allclose(up, exact, rtol=1e-2, atol=1e-4)
    with pytest.raises(ValueError, match="grid step"):
        mix([(0.5, sides[0][0]), (0.5, discretise(GaussianPair(1.0), 2e-3)[0])], "pessimistic")
