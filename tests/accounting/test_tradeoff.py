"""Certified trade-off curves against closed forms, exact enumeration and dp-accounting.

References are independent of privamp: the Gaussian trade-off curve G_mu (Dong, Roth, Su
2022, eq. 2.3), randomized response's pure-DP curve, the Laplace location family's
Neyman-Pearson curve (scipy's Laplace law), an exact enumeration of a tiny subsampled
randomized response run, dp-accounting's PLD profile, Clopper-Pearson in closed form.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import laplace, norm

import privamp as pa
from privamp.accounting.audit import AuditViolation, clopper_pearson
from privamp.pld.tradeoff import beta_lower, beta_upper, inverse_beta_upper

ALPHAS = np.concatenate(([0.0, 1e-9, 1e-6, 1e-4, 1e-3], np.linspace(0.01, 0.99, 50),
                         [1 - 1e-6, 1.0]))


def gaussian_curve(mu, a):
    return norm.cdf(norm.isf(a) - mu)


def contains(curve, exact, slack=1e-12):
    lo = np.asarray(curve.lower.value)
    up = np.asarray(curve.upper.value)
    assert np.all(lo <= exact + slack), np.max(lo - exact)
    assert np.all(up >= exact - slack), np.min(up - exact)
    return float(np.max(up - lo))


def nondecreasing_tpr(values):
    return np.all(np.diff(values) >= -1e-12)


# -- closed forms --------------------------------------------------------------------------
def test_gaussian_mechanism_envelopes_contain_and_are_tight():
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(1.0), steps=1)
    tr = run.tradeoff(ALPHAS)
    exact = gaussian_curve(1.0, ALPHAS)
    for name in ("remove", "add", "either", "symmetric"):
        assert contains(getattr(tr, name), exact) < 5e-5
    assert tr.lower.kind == "lower" and tr.upper.kind == "upper"
    assert "Prop. 2.12" in tr.lower.source


@pytest.mark.parametrize("mu", [0.5, 2.0, 4.0])
def test_gaussian_pair_engine(mu):
    p, o = pa.discretise(pa.Gaussian(1.0 / mu).pair(), 1e-3, 1e-16)
    exact = gaussian_curve(mu, ALPHAS)
    lo = np.maximum(beta_lower(p, ALPHAS), beta_lower(p, ALPHAS, inverse=True))
    up = np.minimum(beta_upper(o, ALPHAS), inverse_beta_upper(o, ALPHAS))
    assert np.all(lo <= exact + 1e-12) and np.all(up >= exact - 1e-12)
    assert np.max(up - lo) < 1e-5


def test_composed_gaussians_are_gaussian_dp():
    """16 steps of sigma 2: G_2 exactly (Dong et al. 2022, Cor. 3.3)."""
    run = pa.Training(pa.Gaussian(2.0), pa.Poisson(1.0), steps=16)
    exact = gaussian_curve(2.0, ALPHAS)
    assert contains(run.tradeoff(ALPHAS).either, exact) < 1e-4
    g = run.gdp_mu()
    assert g.upper.kind == "upper" and 2.0 <= float(g.upper) < 2.01


def test_composition_of_two_gaussians():
    one = pa.Training(pa.Gaussian(1.0), pa.Poisson(1.0), steps=1)
    hist = pa.compose(one, one)
    exact = gaussian_curve(math.sqrt(2.0), ALPHAS)
    assert contains(hist.tradeoff(ALPHAS).symmetric, exact) < 1e-4
    t = hist.tpr_at_fpr([1e-3, 1e-2])
    ref = 1 - gaussian_curve(math.sqrt(2.0), np.array([1e-3, 1e-2]))
    assert np.all(np.asarray(t.lower.value) <= ref) and np.all(ref <= np.asarray(t.upper.value))


def rr_curve(theta, a):
    e = math.log(theta / (1 - theta))
    return np.maximum(0.0, np.maximum(1 - math.exp(e) * a, math.exp(-e) * (1 - a)))


def test_randomized_response_pure_dp_curve():
    run = pa.Training(pa.RandomizedResponse(0.8), pa.Poisson(1.0), steps=1)
    tr = run.tradeoff(ALPHAS)
    assert contains(tr.either, rr_curve(0.8, ALPHAS)) < 1e-6
    assert contains(tr.symmetric, rr_curve(0.8, ALPHAS)) < 1e-6


def test_laplace_location_family_curve():
    """Lap(1, b) vs Lap(0, b) has a monotone likelihood ratio: the Neyman-Pearson tests are
    thresholds, beta(alpha) = F(F^{-1}(1 - alpha) - 1/b)."""
    b = 0.7
    run = pa.Training(pa.Laplace(b), pa.Poisson(1.0), steps=1)
    a = ALPHAS[(ALPHAS > 0) & (ALPHAS < 1)]
    exact = laplace.cdf(laplace.isf(a, scale=b) - 1.0, scale=b)
    assert contains(run.tradeoff(a).either, exact) < 1e-3


# -- exact enumeration ---------------------------------------------------------------------
def np_curve(p, q, a):
    """T(Q, P)(alpha) of discrete laws by enumeration: tests by decreasing P/Q."""
    order = sorted(range(len(p)), key=lambda i: -(p[i] / q[i] if q[i] else math.inf))
    qs = np.concatenate(([0.0], np.cumsum([q[i] for i in order])))
    ps = np.concatenate(([0.0], np.cumsum([p[i] for i in order])))
    return 1.0 - np.interp(a, qs, ps)


def test_subsampled_randomized_response_enumeration():
    theta, q, T = 0.75, 0.3, 3
    mix = [q * theta + (1 - q) * (1 - theta), q * (1 - theta) + (1 - q) * theta]  # P(1), P(0)
    base = [1 - theta, theta]
    outs = list(itertools.product([0, 1], repeat=T))
    P = [math.prod(mix[x] for x in o) for o in outs]
    Q = [math.prod(base[x] for x in o) for o in outs]
    run = pa.Training(pa.RandomizedResponse(theta), pa.Poisson(q), steps=T)
    tr = run.tradeoff(ALPHAS)
    ex_remove = np_curve(P, Q, ALPHAS)  # membership test: type I on the world without
    ex_add = np_curve(Q, P, ALPHAS)
    assert contains(tr.remove, ex_remove, 1e-10) < 1e-3
    assert contains(tr.add, ex_add, 1e-10) < 1e-3
    assert contains(tr.either, np.minimum(ex_remove, ex_add), 1e-10) < 1e-3


# -- duality and a peer library ------------------------------------------------------------
def test_duality_with_the_privacy_profile():
    """The curve converted back (delta(eps) = sup_alpha 1 - beta(alpha) - e^eps alpha) stays
    within the run's certified delta interval."""
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=200)
    a = np.unique(np.concatenate((np.logspace(-12, 0, 4000), np.linspace(0, 1, 4001))))
    tr = run.tradeoff(a)
    for eps in (0.25, 0.5, 1.0, 2.0):
        g = run.delta(eps)
        from_lower = np.max(1 - np.asarray(tr.lower.value) - math.exp(eps) * a)
        from_upper = np.max(1 - np.asarray(tr.upper.value) - math.exp(eps) * a)
        assert from_upper <= float(g.upper.value) + 1e-15
        assert from_lower >= float(g.lower.value) * (1 - 1e-3) - 1e-12
        assert from_lower <= float(g.upper.value) + 1e-15


def test_poisson_against_dp_accounting_profile():
    """dp-accounting 0.6.0 has no get_true_positive_rates: its pessimistic PLD's delta(eps)
    on an eps grid gives, by the same finite-constraint duality, a lower bound on beta that
    must lie below privamp's upper envelope and near its lower one."""
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    sigma, q, T = 1.0, 0.01, 200
    ref = pldlib.from_gaussian_mechanism(sigma, sampling_prob=q,
                                         value_discretization_interval=1e-3).self_compose(T)
    eps = np.linspace(0.0, 3.0, 600)
    d = np.array([ref.get_delta_for_epsilon(e) for e in eps])
    a = np.logspace(-6, -0.01, 60)
    lines = np.maximum(1 - d[None] - np.exp(eps)[None] * a[:, None],
                       np.exp(-eps)[None] * (1 - d[None] - a[:, None])).max(axis=1)
    run = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T)
    tr = run.tradeoff(a)
    assert np.all(lines <= np.asarray(tr.upper.value) + 1e-9)
    assert np.max(np.abs(lines - np.asarray(tr.lower.value))) < 2e-3


# -- shapes, fallback, errors --------------------------------------------------------------
def test_tpr_at_fpr_shapes_and_order():
    run = pa.Training(pa.Gaussian(1.1), pa.Poisson(256 / 60000), epochs=3)
    t = run.tpr_at_fpr(np.array([1e-3, 1e-2, 0.1]))
    up, lo = np.asarray(t.upper.value), np.asarray(t.lower.value)
    assert up.shape == (3,) and np.all(lo <= up) and nondecreasing_tpr(up)
    assert float(run.tpr_at_fpr(0.5, order="remove").upper) >= 0.5
    with pytest.raises(ValueError, match="order"):
        run.tpr_at_fpr(0.1, order="sideways")
    with pytest.raises(ValueError, match="alphas"):
        run.tradeoff([0.1, 1.5])


def test_profile_fallback_without_pld():
    run = pa.Training(pa.Gaussian(1.0), pa.SubsampledModelSplit(4, 0.01), steps=100)
    tr = run.tradeoff(ALPHAS)
    assert "profile" in tr.lower.source and "trivial" in tr.upper.source
    assert np.allclose(np.asarray(tr.upper.value), 1 - ALPHAS)
    lo = np.asarray(tr.lower.value)
    assert np.all(lo <= 1 - ALPHAS) and np.all(np.diff(lo) <= 1e-12) and lo[5] > 0


# -- audit ---------------------------------------------------------------------------------
def test_clopper_pearson_closed_forms():
    n, lvl = 1000, 0.975
    assert clopper_pearson(0, n, lvl, "upper") == pytest.approx(1 - (1 - lvl) ** (1 / n))
    assert clopper_pearson(n, n, lvl, "lower") == pytest.approx((1 - lvl) ** (1 / n))
    assert clopper_pearson(0, n, lvl, "lower") == 0.0


def test_audit_check_flags_a_violation():
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(1.0), steps=1)
    bound = 1 - gaussian_curve(1.0, 0.01)  # ~0.0923 at FPR 1 %
    ok = pa.audit_check(run, 0.01, 0.06, 10000)
    assert ok.consistent and ok.message.startswith("consistent")
    assert ok.certified_tpr >= 1 - gaussian_curve(1.0, ok.fpr_upper) - 1e-9
    bad = pa.audit_check(run, 0.01, 0.2, 10000)
    assert not bad.consistent and bad.message.startswith("VIOLATION") and bad.tpr_lower > bound
    with pytest.raises(AuditViolation):
        pa.audit_check(run, 0.01, 0.2, 10000, strict=True)
    with pytest.raises(ValueError, match="fpr"):
        pa.audit_check(run, 0.0101, 0.2, 1000)


def test_gdp_mu_is_below_the_envelope_and_nearly_minimal():
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.05), steps=20)
    g = run.gdp_mu()
    mu, tol = float(g.upper), g.tolerance
    a = np.unique(np.concatenate((np.logspace(-9, 0, 800), np.linspace(0, 1, 801))))
    lo = np.asarray(run.tradeoff(a).lower.value)
    assert np.all(gaussian_curve(mu, a) - tol <= lo + 1e-6)
    assert np.any(gaussian_curve(0.98 * mu, a) - tol > lo)
    assert g.estimate is not None and "NOT a certified bound" in g.estimate_source
    with pytest.raises(ValueError, match="tolerance"):
        run.gdp_mu(tolerance=0.0)


def test_subsampled_gaussian_symmetrisation_closed_form():
    """One Poisson-subsampled Gaussian step: the membership curve is f_p = q G_mu + (1 - q)
    (1 - alpha) and the symmetrised one C_p(G_mu) = f_p up to x* = Phi(-mu/2), the line
    x* + f_p(x*) - x, then f_p^{-1} (Dong, Roth, Su 2022, Thm 4.2 and its symmetrisation);
    f_p^{-1} by root finding."""
    from scipy.optimize import brentq

    q, mu = 0.2, 1.0
    a = ALPHAS[(ALPHAS > 0) & (ALPHAS < 1)]

    def fp(x):
        return q * gaussian_curve(mu, x) + (1 - q) * (1 - x)

    def fp_inv(y):
        return brentq(lambda t: fp(t) - y, 0.0, 1.0, xtol=1e-15)

    xs = norm.cdf(-mu / 2)
    ys = fp(xs)
    inv = np.array([fp_inv(y) for y in a])
    sym = np.where(a <= xs, fp(a), np.where(a <= ys, xs + ys - a, inv))
    run = pa.Training(pa.Gaussian(1 / mu), pa.Poisson(q), steps=1)
    tr = run.tradeoff(a)
    assert contains(tr.remove, fp(a), 1e-10) < 1e-4
    assert contains(tr.add, inv, 1e-10) < 1e-4
    lo = np.asarray(tr.symmetric.lower.value)
    assert np.all(lo <= sym + 1e-10) and np.max(sym - lo) < 1e-4


@pytest.mark.slow
def test_composition_without_pld_uses_its_profile():
    run = pa.Training(pa.Gaussian(1.0), pa.SubsampledModelSplit(4, 0.01), steps=50)
    tr = pa.compose(run, run).tradeoff([1e-3, 0.5])
    assert "profile" in tr.lower.source
    one = np.asarray(run.tradeoff([1e-3, 0.5]).lower.value)
    assert np.all(np.asarray(tr.lower.value) <= one + 1e-12)  # two phases leak more


@pytest.mark.slow
def test_gdp_mu_without_pld_is_certified_on_the_profile():
    run = pa.Training(pa.Gaussian(1.0), pa.SubsampledModelSplit(4, 0.01), steps=100)
    g = run.gdp_mu()
    mu, tol = float(g.upper), g.tolerance
    eps = np.linspace(0.0, 8.0, 41)
    # the GDP profile (Dong et al. 2022, Cor. 2.13) at mu, plus the tolerance, lies above the
    # run's certified delta(eps)
    dm = norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * norm.cdf(-mu / 2 - eps / mu)
    assert np.all(np.asarray(run.delta(eps).upper.value) <= dm + tol + 1e-12)
    assert g.estimate is None and "profile" in g.upper.source


def test_optimistic_side_is_below_the_profile_at_negative_eps():
    """The upper envelope uses the optimistic profile at every eps, negative ones included:
    for a composed Gaussian it stays below the analytic profile there (valid for real eps)."""
    mu, T = 0.5, 16
    p, o = pa.discretise(pa.Gaussian(1 / mu).pair(), 1e-3, 1e-16)
    o = o.self_compose(T)
    m = mu * math.sqrt(T)
    eps = np.linspace(-6.0, 3.0, 91)
    exact = norm.cdf(m / 2 - eps / m) - np.exp(eps) * norm.cdf(-m / 2 - eps / m)
    assert np.all(o.delta(eps) <= exact + 1e-15)
    assert np.max(exact - o.delta(eps)) < 1e-4
