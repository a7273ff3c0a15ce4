"""Matrix mechanisms under Poisson sampling (privamp.theorems.mmcc2024): the noise-dominance
upper bound and the realised-pair lower bounds against independent references (DP-SGD for
C = I, closed forms and mpmath integration of the realised pair for T = 1, 2, Monte Carlo of
the realised pair's hockey-stick divergence for T = 6)."""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from scipy import optimize
from scipy.special import comb, logsumexp

import privamp as pa
from privamp.errors import NotApplicable
from privamp.theorems.mmcc2024 import (
    MatrixPoissonAnalysis,
    strategy_norm,
    sum_statistic_shift,
)

SQRT_TOEPLITZ = [comb(2 * k, k) / 4.0 ** k for k in range(4)]  # 1, 1/2, 3/8, 5/16


def _run(mech, q, steps, relation=None):
    return pa.Training(mech, pa.Poisson(q), steps=steps, relation=relation)


# -- C = I (and any constant diagonal) is DP-SGD ------------------------------------------
@pytest.mark.parametrize("sigma,q,steps", [(1.0, 0.01, 100), (0.7, 0.2, 10), (2.0, 1.0, 3)])
def test_identity_is_dpsgd_exactly(sigma, q, steps):
    got = _run(pa.MatrixMechanism.identity(sigma), q, steps).epsilon(1e-5)
    want = _run(pa.Gaussian(sigma), q, steps).epsilon(1e-5, accountant="pld")
    assert got.upper.value == want.upper.value
    # DP-SGD's own lower side, raised where the sum statistic beats it (q = 1: a Gaussian)
    assert want.lower.value <= got.lower.value <= got.upper.value


def test_constant_diagonal_is_dpsgd_at_scaled_sigma():
    # C = 2 I: y / 2 = x + (sigma / 2) z exactly
    got = _run(pa.MatrixMechanism.banded([2.0], 1.0), 0.05, 50).delta(1.0)
    want = _run(pa.Gaussian(0.5), 0.05, 50).delta(1.0, accountant="pld")
    assert got.upper.value == want.upper.value
    assert got.lower.value == want.lower.value


def test_identity_under_substitution_is_dpsgd_at_twice_the_clip():
    # privamp's substitution convention: the Gaussian's sensitivity is 2 clip
    got = _run(pa.MatrixMechanism.identity(1.0, clip=0.5), 0.05, 30, pa.Substitution())
    want = _run(pa.Gaussian(0.5, 1.0), 0.05, 30, pa.Substitution())
    g, w = got.epsilon(1e-5), want.epsilon(1e-5, accountant="pld")
    assert g.upper.value == w.upper.value
    # neither lower side is the Poisson-substitution pair at 2 clip (not realised by
    # clipped gradients: it gave 11.7 here, while dp-accounting's REPLACE_ONE epsilon of the
    # antipodal pair +-clip u, the worst clipped pair of one step, is 2.779)
    assert 0.0 < g.lower.value <= 2.779 and 0.0 < w.lower.value <= 2.779


def test_norm_of_diagonal_is_exact_and_dense_norm_certified():
    n, diag = strategy_norm(pa.MatrixMechanism.identity(1.0), 7)
    assert n == 1.0 and diag is not None
    mech = pa.MatrixMechanism.banded(SQRT_TOEPLITZ, 1.0)
    n, diag = strategy_norm(mech, 50)
    assert diag is None
    assert n >= np.linalg.svd(mech.matrix(50), compute_uv=False)[0]


# -- the sum statistic's shift -------------------------------------------------------------
def test_sum_statistic_shift_identity_closed_form():
    # w = 1, a = 1, ||w|| = sqrt(T): s = sqrt(T) / (sigma sqrt(T)) = 1 / sigma
    s = sum_statistic_shift(pa.MatrixMechanism.identity(0.8), 1000)
    assert s == pytest.approx(1.0 / 0.8, rel=1e-11)
    assert s <= 1.0 / 0.8


def test_sum_statistic_shift_banded_path_matches_dense():
    mech = pa.MatrixMechanism.banded(SQRT_TOEPLITZ, 1.3)
    dense = pa.MatrixMechanism(mech.matrix(400), 1.3)
    c = mech.matrix(400)
    w = np.linalg.solve(c.T, np.ones(400))  # independent solver (LU)
    want = math.sqrt(400) / (1.3 * np.linalg.norm(w))
    for m in (mech, dense):
        assert sum_statistic_shift(m, 400) == pytest.approx(want, rel=1e-9)


def test_sum_statistic_shift_long_toeplitz():
    s = sum_statistic_shift(pa.MatrixMechanism.banded(SQRT_TOEPLITZ, 1.0), 200_000)
    # in the bulk w ~ 1 / sum(c), so s ~ sum(c) / sigma
    assert s == pytest.approx(sum(SQRT_TOEPLITZ), rel=1e-3)


# -- T = 1: closed form of the realised pair ---------------------------------------------
def _delta_one_step(eps, q, c, sigma):
    """Exact delta(eps) of (1-q) N(0, s^2) + q N(c, s^2) vs N(0, s^2), both orders."""
    mp.mp.dps = 40
    eps, q, c, sigma = map(mp.mpf, (eps, q, c, sigma))
    sf = lambda x: mp.ncdf(-x)  # noqa: E731
    out = []
    e = mp.e ** eps
    if e > 1 - q:  # P vs Q: L(t) = (1 - q) + q exp((c t - c^2/2) / s^2) = e^eps
        t = sigma ** 2 / c * mp.log((e - (1 - q)) / q) + c / 2
        out.append((1 - q) * sf(t / sigma) + q * sf((t - c) / sigma) - e * sf(t / sigma))
    ei = mp.e ** -eps
    if ei > 1 - q:  # Q vs P: region L < e^-eps, i.e. y < t
        t = sigma ** 2 / c * mp.log((ei - (1 - q)) / q) + c / 2
        out.append(mp.ncdf(t / sigma) - e * ((1 - q) * mp.ncdf(t / sigma)
                                             + q * mp.ncdf((t - c) / sigma)))
    return float(out[0]), float(out[1]) if len(out) > 1 else 0.0


@pytest.mark.parametrize("eps", [0.2, 1.0, 3.0])
def test_one_step_brackets_exact(eps):
    q, c, sigma = 0.1, 1.5, 0.8
    g = _run(pa.MatrixMechanism(np.array([[c]]), sigma), q, 1).delta(eps)
    pq, qp = _delta_one_step(eps, q, c, sigma)
    assert g.upper.value >= max(pq, qp) * (1 - 1e-9)
    assert g.lower.value <= pq * (1 + 1e-9) + 1e-15


# -- T = 2: mpmath integration of the realised pair -------------------------------------
def _delta_two_steps(eps, q, c, sigma):
    """Exact delta(eps) (P vs Q) of y = C theta + sigma z, C = [[1, 0], [c, 1]], c > 0, theta
    i.i.d. Bernoulli(q), against y = sigma z: for fixed y1 the likelihood ratio increases in
    y2, so the region {L > e^eps} is {y2 > t(y1)}; inner integral in closed form, outer by
    mpmath quadrature."""
    thetas = list(itertools.product((0, 1), repeat=2))
    w = np.array([q ** sum(t) * (1 - q) ** (2 - sum(t)) for t in thetas])
    m = np.array([[t[0], c * t[0] + t[1]] for t in thetas], dtype=float)
    s2 = sigma * sigma
    e = math.exp(eps)

    def logl(y1, y2):
        return logsumexp(np.log(w) + (m[:, 0] * y1 + m[:, 1] * y2
                                      - 0.5 * (m ** 2).sum(axis=1)) / s2)

    def inner(y1):
        y1 = float(y1)
        f = lambda y2: logl(y1, y2) - eps  # noqa: E731
        lo, hi = -50.0, 50.0
        while f(hi) < 0:
            hi *= 2
        t = optimize.brentq(f, lo, hi, xtol=1e-14, rtol=1e-15, maxiter=500)
        t = mp.mpf(t)
        y1 = mp.mpf(y1)
        sd = mp.mpf(sigma)
        pdf = lambda x: mp.npdf(x, 0, sd)  # noqa: E731
        pp = sum(mp.mpf(wi) * pdf(y1 - mi[0]) * mp.ncdf(-(t - mi[1]) / sd)
                 for wi, mi in zip(w, m, strict=True))
        return pp - e * pdf(y1) * mp.ncdf(-t / sd)

    mp.mp.dps = 20
    return float(mp.quad(inner, [-12 * sigma, -2, 0, 1, 2, 3, 12 * sigma + 3]))


@pytest.mark.parametrize("eps", [0.5, 1.5])
def test_two_steps_brackets_exact(eps):
    q, c, sigma = 0.2, 0.5, 0.9
    mech = pa.MatrixMechanism(np.array([[1.0, 0.0], [c, 1.0]]), sigma)
    g = _run(mech, q, 2).delta(eps)
    exact = _delta_two_steps(eps, q, c, sigma)
    assert exact > 1e-4  # a meaningful comparison
    assert g.upper.value >= exact * (1 - 1e-7)
    assert g.lower.value <= exact * (1 + 1e-7)
    assert g.lower.value > 0.0


# -- T = 6: Monte Carlo of the realised pair ----------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("coef,sigma,alternate", [
    (SQRT_TOEPLITZ, 0.7, False),  # witness gradient +clip u
    ([1.0, -0.9], 0.6, True),     # witness gradient (-1)^t clip u (its statistic is the best)
])
def test_lower_bound_below_monte_carlo_of_realised_pair(coef, sigma, alternate):
    T, q, n = 6, 0.2, 100_000
    mech = pa.MatrixMechanism.banded(coef, sigma)
    signs = (-1.0) ** np.arange(T) if alternate else np.ones(T)
    c = mech.matrix(T) * signs[None, :]  # the witness's gradient at step t is signs[t] clip u
    thetas = np.array(list(itertools.product((0, 1), repeat=T)), dtype=float)
    means = thetas @ c.T  # (64, T)
    logw = thetas.sum(1) * math.log(q) + (T - thetas.sum(1)) * math.log1p(-q)
    rng = np.random.default_rng(20240)
    th = (rng.random((n, T)) < q).astype(float)
    y = th @ c.T + sigma * rng.standard_normal((n, T))
    expo = (y @ means.T - 0.5 * (means ** 2).sum(1)) / sigma ** 2
    logl = logsumexp(logw + expo, axis=1)  # log p(y) / q(y), y ~ P
    g = _run(mech, q, T)
    for eps in (0.5, 1.0, 2.0):
        vals = np.maximum(0.0, -np.expm1(eps - logl))  # delta = E_P[(1 - e^(eps - L))_+]
        mean, se = vals.mean(), vals.std() / math.sqrt(n)
        d = g.delta(eps)
        assert d.lower.value <= mean + 5 * se
        assert d.upper.value >= mean - 5 * se
        assert d.lower.value > 0.2 * mean  # and not vacuous


def test_alternating_witness_helps_alternating_strategies():
    mech = pa.MatrixMechanism.banded([1.0, -0.9], 1.0)
    plain, alt = sum_statistic_shift(mech, 200), sum_statistic_shift(mech, 200, alternate=True)
    flipped = sum_statistic_shift(pa.MatrixMechanism.banded([1.0, 0.9], 1.0), 200)
    assert alt == flipped  # D C D of [1, -0.9] is [1, 0.9]
    assert alt > 10 * plain


# -- the banded sqrt-Toeplitz strategy: a consistent interval ---------------------------
def test_banded_interval_is_ordered_and_wider_than_dpsgd():
    g = _run(pa.MatrixMechanism.banded(SQRT_TOEPLITZ, 1.0), 0.01, 100).epsilon(1e-5)
    dpsgd = _run(pa.Gaussian(1.0), pa.Poisson(0.01).rate, 100).epsilon(1e-5, accountant="pld")
    assert 0 < g.lower.value <= g.upper.value
    # noise dominance at sigma / ||C|| (||C|| <= sum c = 2.1875) sits above DP-SGD at sigma
    slow = _run(pa.Gaussian(1.0 / 2.1875), 0.01, 100).epsilon(1e-5, accountant="pld")
    assert dpsgd.upper.value < g.upper.value <= slow.upper.value


def test_substitution_and_zero_out_answer():
    mech = pa.MatrixMechanism.banded(SQRT_TOEPLITZ[:2], 1.0)
    for rel in (pa.Substitution(), pa.ZeroOut()):
        g = _run(mech, 0.05, 20, rel).epsilon(1e-6)
        assert 0 < g.lower.value <= g.upper.value


def test_pld_capability_keeps_no_lower_side_unless_dpsgd():
    an = MatrixPoissonAnalysis(pa.MatrixMechanism.banded(SQRT_TOEPLITZ, 1.0), 0.05, 20,
                               pa.AddRemove())
    two = an.pld(an.grid_step())
    for p, o in two.directions:  # the identity pair: delta(eps) = 0 for eps >= 0
        assert float(np.asarray(o.delta(np.array([0.0, 1.0])))[0]) == 0.0
        assert float(np.asarray(p.delta(np.array([0.0])))[0]) > 0.0
    exact = MatrixPoissonAnalysis(pa.MatrixMechanism.identity(1.0), 0.05, 20, pa.AddRemove())
    assert any(float(np.asarray(o.delta(np.array([0.0])))[0]) > 0
               for _, o in exact.pld(exact.grid_step()).directions)


def test_compose_with_dpsgd_phase():
    a = _run(pa.MatrixMechanism.banded(SQRT_TOEPLITZ, 1.0), 0.01, 50)
    b = _run(pa.Gaussian(1.0), 0.01, 50)
    g = pa.compose(a, b).epsilon(1e-5)
    ga, gb = a.epsilon(1e-5), b.epsilon(1e-5, accountant="pld")
    # both phases' upper sides compose; the DP-SGD phase's lower side survives the composition
    assert g.upper.value >= max(ga.upper.value, gb.upper.value)
    assert gb.lower.value * (1 - 1e-3) <= g.lower.value <= g.upper.value


def test_refusals():
    mech = pa.MatrixMechanism.banded(SQRT_TOEPLITZ, 1.0)
    with pytest.raises(NotApplicable):
        _run(mech, 0.05, 20, pa.AddRemove(group=2)).epsilon(1e-5)
    # the dominating DP-SGD shift is above the Poisson PLD's 25: lower bound only
    run = _run(pa.MatrixMechanism.banded(SQRT_TOEPLITZ, 0.01), 0.05, 20)
    g = run.epsilon(1e-5)
    assert g.upper is None and g.lower.value > 100
    an = MatrixPoissonAnalysis(run.mechanism, 0.05, 20, pa.AddRemove())
    with pytest.raises(NotApplicable):
        an.pld()


def test_sum_statistic_lower_matches_exact_profile_of_the_statistic():
    """The statistic's pair sum_n Binom(T, q)_n N(n mu, 1) vs N(0, 1), mu = 1 / (sigma ||w||),
    w = C^-T 1 (dense LU), has a monotone likelihood ratio: its exact delta (mpmath) is the
    threshold test the lower bound evaluates, so the two agree closely (and the bound is
    below)."""
    T, q, sigma, eps = 100, 0.01, 1.0, 2.0
    mech = pa.MatrixMechanism.banded(SQRT_TOEPLITZ, sigma)
    w = np.linalg.solve(mech.matrix(T).T, np.ones(T))
    mp.mp.dps = 40
    mu = 1 / (mp.mpf(sigma) * mp.sqrt(mp.fsum(mp.mpf(x) ** 2 for x in w)))
    pmf = [mp.binomial(T, n) * mp.mpf(q) ** n * (1 - mp.mpf(q)) ** (T - n) for n in range(T + 1)]
    loss = lambda x: mp.log(mp.fsum(p * mp.e ** (n * mu * x - (n * mu) ** 2 / 2)  # noqa: E731
                                    for n, p in enumerate(pmf)))
    x = mp.findroot(lambda x: loss(x) - eps, (mp.mpf(-50), mp.mpf(200)), solver="bisect")
    exact = (mp.fsum(p * mp.ncdf(n * mu - x) for n, p in enumerate(pmf))
             - mp.e ** eps * mp.ncdf(-x))
    lower = _run(mech, q, T).delta(eps).lower.value
    assert lower <= float(exact) * (1 + 1e-9)
    assert lower >= float(exact) * (1 - 1e-5)
