"""Adversarial review (session 9) of the antipodal dominating pair for the Poisson-subsampled
Gaussian under hybrid substitution (docs/findings.md, "Poisson under substitution: the
antipodal pair"; src/privamp/theorems/poisson_substitution.py).

Every reference here is computed independently of privamp:

* one step, any pair of shifts (a, b) in any dimension: ``H_gamma(P_a || P_b)`` depends only on
  the Gram matrix of (a, b); conditioning on ``U = a.X`` the inner expectation over
  ``V = b.X`` is a closed-form "put price" ``E[(A - B e^V)_+]`` and the outer one is a scipy
  quadrature (validated against a brute-force 2-D quadrature);
* the antipodal pair: mpmath, with the threshold found by ``mpmath.findroot`` on the privacy
  loss (not privamp's closed-form preimage);
* two adaptive steps: ``H_gamma`` of the composition is ``E_{y1 ~ P1}[H_{gamma q1/p1}(step 2)]``
  and the best adaptive second step is the pointwise maximum over a finite family;
* dp-accounting's ``NeighboringRelation.REPLACE_ONE``.
"""

from __future__ import annotations

import math
import warnings

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate, optimize, special

import privamp as pa
from privamp.theorems.poisson_substitution import (
    PoissonSubstitutionAnalysis,
    SubstitutionLowerAnalysis,
)


# -- independent references -----------------------------------------------------------------
def put(A: np.ndarray, B: float, m: np.ndarray, tau: float) -> np.ndarray:
    """E[(A - B e^V)_+], V ~ N(m, tau^2) (elementwise in A, m)."""
    A = np.asarray(A, dtype=float)
    m = np.asarray(m, dtype=float) + np.zeros_like(A)
    out = np.zeros_like(A)
    pos = A > 0
    if B == 0.0:
        return np.where(pos, A, 0.0)
    if tau == 0.0:
        return np.maximum(A - B * np.exp(m), 0.0)
    Ap, mp_ = A[pos], m[pos]
    d = (np.log(Ap / B) - mp_) / tau
    out[pos] = Ap * special.ndtr(d) - B * np.exp(mp_ + tau * tau / 2.0) * special.ndtr(d - tau)
    return np.maximum(out, 0.0)


def hockey_gram(q: float, gamma: float, aa: float, bb: float, ab: float) -> float:
    """H_gamma((1-q)N(0,I)+qN(a,I) || (1-q)N(0,I)+qN(b,I)) from |a|^2, |b|^2, a.b."""
    na = math.sqrt(aa)
    B = gamma * q * math.exp(-bb / 2.0)
    if na == 0.0:  # U = 0: outer trivial, V ~ N(0, bb)
        A = (1 - q) * (1 - gamma) + q
        return float(put(np.array([A]), B, np.zeros(1), math.sqrt(bb))[0])
    rho = ab / aa
    tau = math.sqrt(max(bb - ab * ab / aa, 0.0))

    def f(z: float) -> float:
        u = na * z
        A = (1 - q) * (1 - gamma) + q * math.exp(u - aa / 2.0)
        return float(put(np.array([A]), B, np.array([rho * u]), tau)[0]) * math.exp(
            -z * z / 2.0) / math.sqrt(2 * math.pi)

    val, _ = integrate.quad(f, -14.0, 14.0 + na, limit=400, epsabs=1e-14, epsrel=1e-11,
                            points=[0.0, na / 2.0, na])
    return val


def hockey_vec(q, gamma, a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return hockey_gram(q, gamma, float(a @ a), float(b @ b), float(a @ b))


def antipodal_mp(q: float, c: float, gamma: float) -> float:
    """H_gamma(P_c || P_{-c}) in 1-D with mpmath (threshold by findroot on the loss)."""
    q, c, gamma = mp.mpf(q), mp.mpf(c), mp.mpf(gamma)
    if gamma == 0:
        return mp.mpf(1)

    def loss(x):
        return (mp.log((1 - q) + q * mp.exp(c * x - c * c / 2))
                - mp.log((1 - q) + q * mp.exp(-c * x - c * c / 2)))

    # loss is increasing; bracket the root of loss(x) = log(gamma)
    lg = mp.log(gamma)
    lo, hi = mp.mpf(-1), mp.mpf(1)
    while loss(lo) > lg:
        lo *= 2
    while loss(hi) < lg:
        hi *= 2
    x = mp.findroot(lambda t: loss(t) - lg, (lo, hi), solver="illinois",
                    tol=mp.mpf(10) ** (10 - mp.mp.dps), verify=False)
    sf = lambda t: mp.ncdf(-t)  # noqa: E731
    return ((1 - q) * sf(x) + q * sf(x - c)) - gamma * ((1 - q) * sf(x) + q * sf(x + c))


def eps_mp(q: float, c: float, delta: float) -> float:
    """The exact epsilon(delta) of one step of the antipodal pair (mpmath, bisection)."""
    if antipodal_mp(q, c, 1.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while antipodal_mp(q, c, math.exp(hi)) > delta:
        lo, hi = hi, 2 * hi
    for _ in range(60):
        mid = (lo + hi) / 2
        if antipodal_mp(q, c, math.exp(mid)) > delta:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def training(s, q, T, C=1.0, relation=None):
    return pa.Training(pa.Gaussian(s, sensitivity=C), pa.Poisson(q), steps=T,
                       relation=relation if relation is not None else pa.HybridSubstitution())


# -- the tool itself ------------------------------------------------------------------------
def test_gram_formula_against_brute_force_2d():
    """The conditional closed form agrees with a plain 2-D quadrature for a non-collinear pair
    of unequal norms, gamma above and below 1."""
    q = 0.3
    a, b = np.array([0.9, 0.0]), np.array([-0.2, 0.7])
    for gamma in (0.5, 2.0):
        def f(y, x, gamma=gamma):
            z = np.array([x, y])
            phi = math.exp(-(x * x + y * y) / 2) / (2 * math.pi)
            pa_ = (1 - q) + q * math.exp(a @ z - a @ a / 2)
            pb_ = (1 - q) + q * math.exp(b @ z - b @ b / 2)
            return max(pa_ - gamma * pb_, 0.0) * phi
        ref, _ = integrate.dblquad(f, -9, 9, -9, 9, epsabs=1e-11)
        assert hockey_vec(q, gamma, a, b) == pytest.approx(ref, rel=1e-7, abs=1e-11)
    # and the antipodal value against mpmath
    assert hockey_vec(0.3, 2.0, [1.0], [-1.0]) == pytest.approx(
        float(antipodal_mp(0.3, 1.0, 2.0)), rel=1e-9)


# -- steps 1-3: no pair of shifts in the 3-D ball beats the antipodal pair ------------------
def ball3(rng, c, n):
    v = rng.normal(size=(n, 3))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    r = c * rng.uniform(size=(n, 1)) ** (1 / 3)
    r[: n // 3] = c  # a third on the sphere
    return v * r


@pytest.mark.slow
@pytest.mark.parametrize("q,c,eps", [(0.05, 1.0, 1.0), (0.05, 1.0, -1.0), (0.5, 0.4, 0.1),
                                     (0.9, 2.0, 0.0), (0.01, 3.0, 3.0), (0.2, 1.5, -0.3),
                                     (1.0, 1.0, 0.5)])
def test_3d_ball_maximisation(q, c, eps):
    """Random pairs in the 3-D ball of radius c, both orders, then Nelder-Mead from the best:
    never above the antipodal value (gamma = e^eps, including gamma < 1 and gamma = 1)."""
    gamma = math.exp(eps)
    ref = float(antipodal_mp(q, c, gamma))
    rng = np.random.default_rng(9)
    A, B = ball3(rng, c, 40), ball3(rng, c, 40)
    vals = [(hockey_vec(q, gamma, a, b), a, b) for a, b in zip(A, B, strict=True)]
    vals += [(hockey_vec(q, gamma, b, a), b, a) for a, b in zip(A, B, strict=True)]
    worst = max(v for v, _, _ in vals)
    assert worst <= ref * (1 + 1e-8) + 1e-13

    def neg(x):
        a, b = x[:3], x[3:]
        a = a * min(1.0, c / max(np.linalg.norm(a), 1e-300))
        b = b * min(1.0, c / max(np.linalg.norm(b), 1e-300))
        return -hockey_vec(q, gamma, a, b)

    best = sorted(vals, key=lambda t: -t[0])[0]
    res = optimize.minimize(neg, np.concatenate([best[1], best[2]]), method="Nelder-Mead",
                            options={"maxfev": 300, "xatol": 1e-6, "fatol": 1e-14})
    assert -res.fun <= ref * (1 + 1e-8) + 1e-13


def test_gamma_zero_and_swap_symmetry():
    """gamma = 0 gives 1 for every pair; the antipodal pair is its own swap."""
    assert hockey_vec(0.3, 0.0, [0.2, 0.1, 0.0], [0.0, -0.5, 0.3]) == pytest.approx(1.0)
    for gamma in (0.3, 1.0, 3.0):
        assert hockey_vec(0.2, gamma, [1.3], [-1.3]) == pytest.approx(
            hockey_vec(0.2, gamma, [-1.3], [1.3]), rel=1e-10)


# -- two adaptive steps -------------------------------------------------------------------
def inner_table(q, pair, gammas):
    """H_{gamma'}(pair) for many gamma' (fixed-grid trapezoid in U, vectorised)."""
    a, b = np.asarray(pair[0], float), np.asarray(pair[1], float)
    aa, bb, ab = a @ a, b @ b, a @ b
    z = np.linspace(-11, 11 + math.sqrt(aa), 4001)
    w = np.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    na = math.sqrt(aa)
    rho = ab / aa if aa > 0 else 0.0
    tau = math.sqrt(max(bb - (ab * ab / aa if aa > 0 else 0.0), 0.0))
    u = na * z
    out = np.empty(len(gammas))
    for i, g in enumerate(gammas):
        A = (1 - q) * (1 - g) + q * np.exp(u - aa / 2)
        vals = put(A, g * q * math.exp(-bb / 2), rho * u, tau) * w
        out[i] = integrate.trapezoid(vals, z)
    return out


def two_step(q, c, first, family, gamma):
    """H_gamma of two adaptive steps: first step the 1-D pair ``first`` = (a1, b1), the second
    step chosen after seeing y1 from ``family`` (the best choice for every y1)."""
    a1, b1 = first
    y = np.linspace(-11 - c, 11 + c, 2001)
    phi = lambda t: np.exp(-t * t / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    p1 = (1 - q) * phi(y) + q * phi(y - a1)
    q1 = (1 - q) * phi(y) + q * phi(y - b1)
    g2 = gamma * q1 / p1
    best = np.max([inner_table(q, pair, g2) for pair in family], axis=0)
    return integrate.trapezoid(p1 * best, y)


@pytest.mark.slow
@pytest.mark.parametrize("q,c,eps", [(0.1, 1.0, 0.5), (0.5, 0.7, 0.0), (0.05, 2.0, 2.0)])
def test_two_adaptive_steps_dominated(q, c, eps):
    """Second-step shifts (norms <= c, 2-D, both orders, insertion-like, orthogonal, 120 deg,
    and the antipodal pair) chosen as the best function of y1; first step antipodal or not.
    The antipodal two-step product dominates every such strategy."""
    gamma = math.exp(eps)
    e1, e2 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    r120 = np.array([math.cos(2 * math.pi / 3), math.sin(2 * math.pi / 3)])
    family = [(c * e1, -c * e1), (c * e1, 0 * e1), (0 * e1, c * e1), (c * e1, c * e2),
              (c * e1, c * r120), (c * r120, c * e1), (0.5 * c * e1, -c * e2),
              (c * e1, 0.3 * c * e1)]
    ref = two_step(q, c, (c, -c), [family[0]], gamma)
    # validate the two-step routine against a direct 2-D integral of the product pair
    def f(y2, y1):
        ph = lambda t: math.exp(-t * t / 2) / math.sqrt(2 * math.pi)  # noqa: E731
        P = lambda t: (1 - q) * ph(t) + q * ph(t - c)  # noqa: E731
        Q = lambda t: (1 - q) * ph(t) + q * ph(t + c)  # noqa: E731
        return max(P(y1) * P(y2) - gamma * Q(y1) * Q(y2), 0.0)
    direct, _ = integrate.dblquad(f, -9 - c, 9 + c, -9 - c, 9 + c, epsabs=1e-10)
    assert ref == pytest.approx(direct, rel=1e-6, abs=1e-10)
    for first in [(c, -c), (c, 0.0), (0.0, c), (c, 0.4 * c), (-c, 0.5 * c)]:
        val = two_step(q, c, first, family, gamma)
        assert val <= ref * (1 + 1e-6) + 1e-10, (first, val, ref)


# -- the implementation ---------------------------------------------------------------------
@pytest.mark.parametrize("q", [1e-4, 1e-2, 0.2, 1.0])
@pytest.mark.parametrize("s", [0.3, 1.0, 3.0, 10.0])
def test_one_step_epsilon_brackets_mpmath(q, s):
    """T = 1: the analysis' interval (and Training's best interval) contains the exact
    epsilon(1e-5) of the antipodal pair at c = C/sigma (C = 1)."""
    d = 1e-5
    exact = eps_mp(q, 1.0 / s, d)
    up, lo = PoissonSubstitutionAnalysis(pa.Gaussian(s, sensitivity=1.0), q, 1).epsilon(
        np.array([d]))
    assert lo.value[0] <= exact + 1e-9 <= up.value[0] + 2e-9
    assert up.value[0] - lo.value[0] <= 1e-3 * max(exact, 1.0)
    g = training(s, q, 1).epsilon(d)
    assert g.lower.value <= exact + 1e-9 <= g.upper.value + 2e-9


@pytest.mark.parametrize("q,s,eps", [(0.05, 1.0, -0.5), (0.3, 0.5, 0.0), (1.0, 2.0, -0.1),
                                     (0.01, 0.3, 2.0)])
def test_one_step_delta_including_negative_epsilon(q, s, eps):
    """delta(epsilon) brackets the exact value, epsilon < 0 (gamma < 1) included."""
    exact = float(antipodal_mp(q, 1.0 / s, math.exp(eps)))
    up, lo = PoissonSubstitutionAnalysis(pa.Gaussian(s, sensitivity=1.0), q, 1).delta(
        np.array([eps]))
    assert lo.value[0] <= exact * (1 + 1e-9) + 1e-15
    assert exact <= up.value[0] * (1 + 1e-9) + 1e-15


def composed_delta(q, c, gamma, T):
    """H_gamma(P^T || Q^T) of the antipodal pair by nested scipy quadrature (T = 2, 3)."""
    def loss(x):
        return (np.logaddexp(math.log1p(-q), math.log(q) + c * x - c * c / 2)
                - np.logaddexp(math.log1p(-q), math.log(q) - c * x - c * c / 2)) \
            if q < 1 else 2 * c * x

    def one(g):
        if g <= 0:
            return 1.0
        x = optimize.brentq(lambda t: loss(t) - math.log(g), -60 / c - 60, 60 / c + 60,
                            xtol=1e-14)
        P = (1 - q) * special.ndtr(-x) + q * special.ndtr(c - x)
        Q = (1 - q) * special.ndtr(-x) + q * special.ndtr(-c - x)
        return max(P - g * Q, 0.0)

    def h(g, t):
        if t == 1:
            return one(g)
        ph = lambda y: math.exp(-y * y / 2) / math.sqrt(2 * math.pi)  # noqa: E731

        def f(y):
            return ((1 - q) * ph(y) + q * ph(y - c)) * h(g * math.exp(-loss(y)), t - 1)
        v, _ = integrate.quad(f, -12, 12 + c, points=[0.0, c], limit=200, epsabs=1e-13,
                              epsrel=1e-10)
        return v

    return h(gamma, T)


@pytest.mark.slow
@pytest.mark.parametrize("q,s,eps,T", [(0.05, 1.0, 0.5, 2), (0.3, 0.8, 1.0, 2),
                                       (1.0, 3.0, 0.2, 2), (0.01, 0.5, 1.0, 2),
                                       (0.1, 1.0, 0.7, 3), (0.5, 2.0, 0.1, 3)])
def test_two_and_three_steps_bracket_quadrature(q, s, eps, T):
    c = 1.0 / s
    exact = composed_delta(q, c, math.exp(eps), T)
    up, lo = PoissonSubstitutionAnalysis(pa.Gaussian(s, sensitivity=1.0), q, T).delta(
        np.array([eps]))
    assert lo.value[0] <= exact * (1 + 1e-7) + 1e-13
    assert exact <= up.value[0] * (1 + 1e-7) + 1e-13


@pytest.mark.slow
@pytest.mark.parametrize("q", [1e-3, 0.05, 0.5, 1.0])
@pytest.mark.parametrize("s,T", [(0.5, 1), (1.0, 10), (3.0, 100)])
def test_training_against_dp_accounting_replace_one(q, s, T):
    """Training's best interval under HybridSubstitution (sensitivity C) is consistent with
    dp-accounting REPLACE_ONE at sensitivity C: lower <= dp pessimistic, upper >= dp
    optimistic."""
    dpp = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    from dp_accounting import NeighboringRelation as NR
    C, d = 0.7, 1e-6
    ests = []
    for pess in (True, False):
        p = dpp.from_gaussian_mechanism(standard_deviation=s * C, sensitivity=C,
                                        sampling_prob=q, pessimistic_estimate=pess,
                                        neighboring_relation=NR.REPLACE_ONE,
                                        value_discretization_interval=1e-4)
        ests.append(p.self_compose(T).get_epsilon_for_delta(d))
    g = training(s * C, q, T, C=C).epsilon(d)
    assert g.lower.value <= ests[0] + 1e-6
    assert g.upper.value >= ests[1] - 1e-6
    assert g.upper.value - g.lower.value <= 1e-3 * max(1.0, ests[0])


def test_plain_substitution_lower_is_the_half_sensitivity_pair():
    """Under plain Substitution (sensitivity Delta) the lower side is the antipodal pair at
    Delta/2 (mpmath) and never exceeds the Balle upper bound."""
    q, s, Delta = 0.1, 1.0, 2.0
    exact = eps_mp(q, Delta / 2 / s, 1e-5)
    an = SubstitutionLowerAnalysis(pa.Gaussian(s, sensitivity=Delta), q, 1)
    up, lo = an.epsilon(np.array([1e-5]))
    assert up is None and lo.value[0] <= exact + 1e-9
    assert lo.value[0] >= exact - 1e-3
    g = training(s, q, 1, C=Delta, relation=pa.Substitution()).epsilon(1e-5)
    assert g.lower.value <= g.upper.value


def test_applicability_group_and_relation():
    """Only group 1 hybrid substitution gets the dominating pair (not groups, not add/remove)."""
    from privamp.accountants.registry import applicable
    for rel in (pa.HybridSubstitution(group=2), pa.AddRemove(), pa.Substitution(group=2)):
        names = [a.build.__module__ for a in applicable(training(1.0, 0.1, 3, relation=rel))]
        assert not any("poisson_substitution" in n for n in names), (rel, names)
    names = [a.build.__module__ for a in applicable(training(1.0, 0.1, 3))]
    assert any("poisson_substitution" in n for n in names)


@pytest.mark.parametrize("s,q,T,d", [(1e6, 0.5, 1, 1e-5), (1.0, 1.0, 10, 1e-5),
                                     (1.0, 0.05, 30, 1e-300), (2.0, 0.01, 10**6, 1e-5),
                                     (0.05, 0.5, 3, 1e-5), (0.3, 1e-4, 1, 1e-5)])
def test_extremes_no_nan_no_warning(s, q, T, d):
    """Extreme inputs: finite-or-inf ordered intervals, no NaN, no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        an = PoissonSubstitutionAnalysis(pa.Gaussian(s, sensitivity=1.0), q, T)
        up, lo = an.epsilon(np.array([d]))
        g = training(s, q, T).epsilon(d)
    for v in (up.value[0], lo.value[0], g.upper.value, g.lower.value):
        assert not math.isnan(v)
    assert 0.0 <= lo.value[0] <= up.value[0]
    assert g.lower.value <= g.upper.value


# -- end to end: real mixtures over the other records' batch, a nonlinear query -------------
def proj(v: np.ndarray, R: float) -> np.ndarray:
    n = np.linalg.norm(v)
    return v if n <= R else v * (R / n)


def mixture_density(q, recs, extra, R, grid):
    """Density on ``grid`` (2-D points) of f(batch) + N(0, I), f = projection of the sum of
    the batch onto the disc of radius R (1-Lipschitz, so inserting a vector of norm <= C
    moves it by <= C), each of ``recs`` sampled with prob. q and ``extra`` with prob. q."""
    import itertools
    dens = np.zeros(grid.shape[0])
    allr = list(recs) + [extra]
    for bits in itertools.product((0, 1), repeat=len(allr)):
        w = np.prod([q if b else 1 - q for b in bits])
        s = sum((r for r, b in zip(allr, bits, strict=True) if b), np.zeros(2))
        m = proj(s, R)
        dens += w * np.exp(-((grid - m) ** 2).sum(axis=1) / 2) / (2 * math.pi)
    return dens


@pytest.mark.slow
@pytest.mark.parametrize("q,c,eps,R", [(0.2, 1.0, 0.5, 1.5), (0.5, 0.8, 0.0, 0.7),
                                       (0.1, 1.5, 1.0, 10.0)])
def test_whole_mechanism_with_other_records_and_projection(q, c, eps, R):
    """Random datasets of 3 shared records + x vs x' (vectors of norm <= c in noise units),
    query = projection of the batch sum onto a disc (nonlinear): H_gamma of the real
    mixtures (2-D grid quadrature) never exceeds the antipodal value."""
    gamma = math.exp(eps)
    ref = float(antipodal_mp(q, c, gamma))
    t = np.linspace(-11, 11, 701)
    X, Y = np.meshgrid(t, t)
    grid = np.column_stack([X.ravel(), Y.ravel()])
    dA = (t[1] - t[0]) ** 2
    rng = np.random.default_rng(99)
    worst = 0.0
    for _ in range(6):
        v = rng.normal(size=(5, 2))
        v *= (c * rng.uniform(0.5, 1.0, size=(5, 1))) / np.linalg.norm(v, axis=1, keepdims=True)
        recs, x, x2 = v[:3], v[3], -v[3] if rng.uniform() < 0.5 else v[4]
        p = mixture_density(q, recs, x, R, grid)
        qq = mixture_density(q, recs, x2, R, grid)
        worst = max(worst, float(np.maximum(p - gamma * qq, 0).sum() * dA))
    # sanity: the same quadrature reproduces the antipodal value with no other records
    p = mixture_density(q, [], np.array([c, 0.0]), 1e9, grid)
    qq = mixture_density(q, [], np.array([-c, 0.0]), 1e9, grid)
    err = abs(float(np.maximum(p - gamma * qq, 0).sum() * dA) - ref)
    assert err <= 1e-3 * ref
    assert worst <= ref + 3 * err + 1e-12
