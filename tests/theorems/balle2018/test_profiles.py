"""Balle, Barthe, Gaboardi 2018 privacy profiles and their PLD composition, against
independent evaluations: hockey-stick divergences of the actual subsampled output laws on
small explicit datasets (enumerating every batch, integrated on a fine grid), dp_accounting's
exact Poisson-subsampled Gaussian / Laplace profiles, Monte Carlo of the with-replacement
sampler, closed-form Rényi divergences."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import privamp as pa
from privamp.pairs.combinators import MixturePair, SwappedPair
from privamp.pairs.mechanism_pairs import GaussianPair
from privamp.pairs.mixtures import DisjointMixturePair, GaussianShiftMixturePair, SymmetrisedPair
from privamp.theorems.balle2018.pld import FixedBatchPLDAnalysis
from privamp.theorems.balle2018.profiles import (
    group_delta,
    profile,
    profile_bound,
)
from privamp.theorems.balle2018.thm6 import profile_rdp, rdp_from_profile

X_GAUSS = np.linspace(-20.0, 20.0, 400_001)
X_LAPLACE = np.linspace(-40.0, 40.0, 800_001)
EPS = np.array([0.0, 0.02, 0.1, 0.3, 0.7, 1.5])


# ------------------------------------------------------------------------------------------
# brute force: output laws of sum queries on explicit datasets
# ------------------------------------------------------------------------------------------
def _noise_pdf(kind: str, scale: float):
    if kind == "gauss":
        return lambda x, mu: stats.norm.pdf(x, mu, scale)
    return lambda x, mu: stats.laplace.pdf(x, mu, scale)


def _law(batches: list[tuple[float, float]], kind: str, scale: float) -> np.ndarray:
    """Density on X of sum(batch) + noise, for a list of (probability, batch sum)."""
    sums: dict[float, float] = {}
    for p, s in batches:
        sums[round(s, 12)] = sums.get(round(s, 12), 0.0) + p
    pdf = _noise_pdf(kind, scale)
    x = X_GAUSS if kind == "gauss" else X_LAPLACE
    return sum(p * pdf(x, s) for s, p in sums.items())


def _wor(data, m):
    c = list(itertools.combinations(range(len(data)), m))
    return [(1.0 / len(c), sum(data[i] for i in idx)) for idx in c]


def _wr(data, m):
    n = len(data)
    return [(n ** -m, sum(data[i] for i in idx)) for idx in itertools.product(range(n), repeat=m)]


def _poisson(data, g):
    out = []
    for mask in itertools.product([0, 1], repeat=len(data)):
        k = sum(mask)
        total = sum(d for d, b in zip(data, mask, strict=True) if b)
        out.append((g**k * (1 - g) ** (len(data) - k), total))
    return out


def _hockey(a: np.ndarray, b: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """H_{e^eps}(A||B) = int (a - e^eps b)_+ dx on the grid (both orders: max)."""
    X = X_GAUSS if len(a) == len(X_GAUSS) else X_LAPLACE
    out = []
    for e in np.atleast_1d(eps):
        f1 = np.maximum(a - math.exp(e) * b, 0.0)
        f2 = np.maximum(b - math.exp(e) * a, 0.0)
        out.append(max(np.trapezoid(f1, X), np.trapezoid(f2, X)))
    return np.array(out)


# ------------------------------------------------------------------------------------------
# Thm 9 (without replacement, substitution): >= truth, tight on the worst-case datasets
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["gauss", "laplace"])
def test_wor_substitution_brute_force(kind):
    sigma = 1.3
    mech = pa.Gaussian(sigma, 2.0) if kind == "gauss" else pa.Laplace(sigma, 2.0)
    scheme = pa.WithoutReplacement(2, 5)
    bound = profile(mech, scheme, EPS)
    # worst case: all records equal to v' = -1 except v = +1 (values clipped to [-1, 1])
    x = [1.0, -1, -1, -1, -1]
    xp = [-1.0, -1, -1, -1, -1]
    tight = _hockey(_law(_wor(x, 2), kind, sigma), _law(_wor(xp, 2), kind, sigma), EPS)
    np.testing.assert_allclose(bound, tight, rtol=2e-6, atol=1e-9)
    assert profile_bound(mech, scheme, 0.3).kind == "exact"
    rng = np.random.default_rng(1)
    for _ in range(3):
        base = list(rng.uniform(-1, 1, 4))
        v, vp = rng.uniform(-1, 1, 2)
        true = _hockey(_law(_wor([v] + base, 2), kind, sigma),
                       _law(_wor([vp] + base, 2), kind, sigma), EPS)
        assert np.all(bound >= true * (1 - 1e-6) - 1e-10)


def test_wor_group_brute_force_white_and_black_box():
    sigma = 1.5
    mech = pa.Gaussian(sigma, 2.0)
    scheme = pa.WithoutReplacement(2, 5)
    rel = pa.Substitution(group=2)
    white = profile(mech, scheme, EPS, rel)
    black = profile(mech, scheme, EPS, rel, group="black-box")
    x = [1.0, 1.0, -1, -1, -1]
    xp = [-1.0, -1, -1, -1, -1]
    true = _hockey(_law(_wor(x, 2), "gauss", sigma), _law(_wor(xp, 2), "gauss", sigma), EPS)
    assert np.all(white >= true * (1 - 1e-6) - 1e-10)
    assert np.all(black >= white * (1 - 1e-12))


# ------------------------------------------------------------------------------------------
# Thms 10 / 11 (with replacement)
# ------------------------------------------------------------------------------------------
def test_wr_substitution_brute_force():
    sigma = 1.2
    mech = pa.Gaussian(sigma, 2.0)
    scheme = pa.WithReplacement(3, 4)
    bound = profile(mech, scheme, EPS)
    for x, xp in [([1.0, -1, -1, -1], [-1.0, -1, -1, -1]),
                  ([1.0, 0.3, -0.2, 0.9], [-1.0, 0.3, -0.2, 0.9])]:
        true = _hockey(_law(_wr(x, 3), "gauss", sigma), _law(_wr(xp, 3), "gauss", sigma), EPS)
        assert np.all(bound >= true * (1 - 1e-6) - 1e-10)
    # the worst-case pair is the Gaussian shift mixture sum_k Binom(k; 3, 1/4) N(2k, s^2)
    # vs N(0, s^2), which the lower-bound pair of the accountant reproduces
    b = stats.binom(3, 0.25).pmf(np.arange(4))
    G = GaussianShiftMixturePair(b, 2.0 / sigma)
    true = _hockey(_law(_wr([1.0, -1, -1, -1], 3), "gauss", sigma),
                   _law(_wr([-1.0, -1, -1, -1], 3), "gauss", sigma), EPS)
    np.testing.assert_allclose(np.maximum(G.delta(EPS), SwappedPair(G).delta(EPS)), true,
                               rtol=2e-6, atol=1e-9)


def test_wr_removal_brute_force():
    sigma = 1.2
    mech = pa.Gaussian(sigma, 1.0)  # add/remove sensitivity: records in [-1, 1]
    scheme = pa.WithReplacement(3, 4)
    bound = profile(mech, scheme, EPS, pa.AddRemove())
    for x in ([1.0, -1, -1, -1], [0.5, 0.1, -0.7, 1.0]):
        a = _law(_wr(x, 3), "gauss", sigma)  # n = 4 records
        b = _law(_wr(x[1:], 3), "gauss", sigma)  # v removed: n - 1 records
        true = _hockey(a, b, EPS)
        assert np.all(bound >= true * (1 - 1e-6) - 1e-10)


def test_wr_randomized_response_is_tight():
    """RR on the query "is v in the batch": enumerate with-replacement batches exactly."""
    theta, m, n = 0.8, 3, 5
    mech = pa.RandomizedResponse(theta)
    p_in = 1 - sum(1 for t in itertools.product(range(n), repeat=m) if 0 not in t) / n**m
    pa_ = np.array([p_in * theta + (1 - p_in) * (1 - theta),
                    p_in * (1 - theta) + (1 - p_in) * theta])
    pb = np.array([1 - theta, theta])
    true = np.array([max(np.maximum(pa_ - math.exp(e) * pb, 0).sum(),
                         np.maximum(pb - math.exp(e) * pa_, 0).sum()) for e in EPS])
    bnd = profile_bound(mech, pa.WithReplacement(m, n), EPS)
    assert bnd.kind == "exact"
    np.testing.assert_allclose(bnd.value, true, rtol=1e-10, atol=1e-14)


def test_wr_monte_carlo():
    """Simulate the with-replacement sampler (m = 20 of n = 50) and the Gaussian sum; the
    privacy loss is evaluated from the output density written here; 95%+ CI."""
    rng = np.random.default_rng(7)
    sigma, m, n, N = 0.8, 20, 50, 200_000
    data = np.full(n, -1.0)
    data[0] = 1.0  # v; its neighbour has -1 there
    idx = rng.integers(0, n, size=(N, m))
    z = data[idx].sum(axis=1) + sigma * rng.standard_normal(N)
    k = np.arange(m + 1)
    w = stats.binom(m, 1 / n).pmf(k)
    log_a = np.log((w[None, :] * stats.norm.pdf(z[:, None], -m + 2 * k[None, :], sigma)).sum(1))
    log_b = stats.norm.logpdf(z, -m, sigma)
    loss = log_a - log_b
    mech = pa.Gaussian(sigma, 2.0)
    bound = profile(mech, pa.WithReplacement(m, n), EPS)
    G = GaussianShiftMixturePair(w, 2.0 / sigma)
    for e, bd, gd in zip(EPS, bound, G.delta(EPS), strict=True):
        samples = np.maximum(1.0 - np.exp(e - loss), 0.0)
        mean, se = samples.mean(), samples.std() / math.sqrt(N)
        assert bd >= mean - 5 * se
        assert abs(gd - mean) <= 5 * se + 1e-12


# ------------------------------------------------------------------------------------------
# Thm 8 against dp_accounting's exact Poisson-subsampled profiles (REMOVE direction)
# ------------------------------------------------------------------------------------------
def test_poisson_add_remove_matches_dp_accounting():
    from dp_accounting.pld import privacy_loss_mechanism as plm

    eps = np.array([0.0, 0.05, 0.3, 1.0, 2.0])
    for sigma, q in [(1.0, 0.01), (0.7, 0.2), (2.0, 0.5)]:
        ref = plm.GaussianPrivacyLoss(sigma, 1.0, sampling_prob=q,
                                      adjacency_type=plm.AdjacencyType.REMOVE)
        want = np.array([ref.get_delta_for_epsilon(e) for e in eps])
        got = profile_bound(pa.Gaussian(sigma), pa.Poisson(q), eps, pa.AddRemove())
        assert got.kind == "exact"
        np.testing.assert_allclose(got.value, want, rtol=1e-8, atol=1e-15)
    ref = plm.LaplacePrivacyLoss(1.5, 1.0, sampling_prob=0.3,
                                 adjacency_type=plm.AdjacencyType.REMOVE)
    want = np.array([ref.get_delta_for_epsilon(e) for e in eps])
    got = profile(pa.Laplace(1.5), pa.Poisson(0.3), eps, pa.AddRemove())
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-15)


def test_poisson_substitution_thm14_brute_force():
    sigma, g = 1.1, 0.3
    mech = pa.Gaussian(sigma, 2.0)
    bound = profile(mech, pa.Poisson(g), EPS, pa.Substitution(), dataset_size=4)
    for x, xp in [([1.0, -1, -1, -1], [-1.0, -1, -1, -1]), ([1.0, 0, 0, 0], [-1.0, 0, 0, 0]),
                  ([0.4, -0.3, 0.9, 0.2], [-0.8, -0.3, 0.9, 0.2])]:
        true = _hockey(_law(_poisson(x, g), "gauss", sigma), _law(_poisson(xp, g), "gauss", sigma),
                       EPS)
        assert np.all(bound >= true * (1 - 1e-6) - 1e-10)


def test_poisson_group_add_remove_brute_force():
    sigma, g = 1.0, 0.25
    mech = pa.Gaussian(sigma, 1.0)
    bound = profile(mech, pa.Poisson(g), EPS, pa.AddRemove(group=2))
    x = [1.0, 1.0, 0.5, -0.2]
    true = _hockey(_law(_poisson(x, g), "gauss", sigma), _law(_poisson(x[2:], g), "gauss", sigma),
                   EPS)
    assert np.all(bound >= true * (1 - 1e-6) - 1e-10)
    # the Poisson group-2 removal pair is exactly (sum_j Binom(j; 2, g) N(j), N(0)) here
    x = [1.0, 1.0, 0.0, 0.0]
    true = _hockey(_law(_poisson(x, g), "gauss", sigma), _law(_poisson(x[2:], g), "gauss", sigma),
                   EPS)
    assert np.all(bound >= true * (1 - 1e-6) - 1e-10)


# ------------------------------------------------------------------------------------------
# group privacy, Theorem 6
# ------------------------------------------------------------------------------------------
def test_black_box_group_lemma():
    g = pa.Gaussian(1.0)
    eps = np.array([0.0, 0.5, 1.0, 3.0])
    for k in (2, 3):
        white = group_delta(g, eps, k)  # exact: N(k, 1) vs N(0, 1)
        s = float(k)
        exact = stats.norm.cdf(s / 2 - eps / s) - np.exp(eps) * stats.norm.cdf(-s / 2 - eps / s)
        np.testing.assert_allclose(white, exact, rtol=1e-9, atol=1e-15)
        black = group_delta(g, eps, k, "black-box")
        d1 = stats.norm.cdf(0.5 - eps / k) - np.exp(eps / k) * stats.norm.cdf(-0.5 - eps / k)
        chain = np.minimum(d1 * sum(np.exp(i * eps / k) for i in range(k)), 1.0)
        np.testing.assert_allclose(black, chain, rtol=1e-9)
        assert np.all(black >= white)


def test_theorem6_recovers_known_rdp():
    alpha = np.array([1.5, 2.0, 4.0, 8.0])
    sigma = 1.3
    g = pa.Gaussian(sigma)

    def gauss_tail(s, E):  # delta(eps) <= exp(lam (lam+1)/(2 sigma^2) - lam eps), lam = 4s+4
        lam = 4 * s + 4
        return 2 * math.exp(lam * (lam + 1) / (2 * sigma**2) - (lam - s) * E) / (lam - s)

    got = rdp_from_profile(lambda e: g.delta_kernel(e, 1), alpha, 40.0, tail=gauss_tail)
    want = alpha / (2 * sigma**2)
    assert np.all(got >= want * (1 - 1e-12))
    np.testing.assert_allclose(got, want, rtol=3e-3)
    # Laplace, no subsampling (m = n): Mironov 2017, Table 2, written out here
    b = 1.2
    lap = pa.Laplace(b)
    got = profile_rdp(lap, pa.WithoutReplacement(4, 4), alpha)
    want = np.log(alpha / (2 * alpha - 1) * np.exp((alpha - 1) / b)
                  + (alpha - 1) / (2 * alpha - 1) * np.exp(-alpha / b)) / (alpha - 1)
    assert np.all(got >= want * (1 - 1e-12))
    np.testing.assert_allclose(got, want, rtol=3e-3)


def test_theorem6_poisson_above_exact_poisson_rdp():
    """Thm 6 of Thm 8 upper-bounds the Poisson subsampled Gaussian RDP, here integrated
    directly: D_a = log E_Q[((1-q) + q e^{x - 1/2})^a] / (a - 1), sigma = 1."""
    q, alpha = 0.05, np.array([2.0, 3.0, 6.0])
    x = np.linspace(-30, 30, 600_001)
    phi = stats.norm.pdf(x)
    ratio = (1 - q) + q * np.exp(x - 0.5)
    exact = np.array([math.log(np.trapezoid(phi * ratio**a, x)) / (a - 1) for a in alpha])
    got = profile_rdp(pa.Gaussian(1.0), pa.Poisson(q), alpha, pa.AddRemove())
    assert np.all(got >= exact)
    assert np.all(got <= 3 * exact)


# ------------------------------------------------------------------------------------------
# dominating pairs and PLD composition
# ------------------------------------------------------------------------------------------
def test_symmetrised_and_disjoint_pairs():
    mix = MixturePair(GaussianPair(1.5), 0.1)
    S = SymmetrisedPair(mix)
    eps = np.array([-2.0, -0.5, -0.01, 0.0, 0.01, 0.5, 2.0])
    want = np.maximum(mix.delta(eps), SwappedPair(mix).delta(eps))
    np.testing.assert_allclose(S.delta(eps), want, rtol=1e-9, atol=1e-15)
    tails = S.tail(eps, "P", True, True) - np.exp(eps) * S.tail(eps, "Q", True, True)
    np.testing.assert_allclose(tails, want, rtol=1e-8, atol=1e-14)
    # P* and Q* are probability laws with an atom at 0 of equal mass under both
    for dist in "PQ":
        up = S.tail(np.array([0.0]), dist, True, True)[0]
        lo = S.tail(np.array([0.0]), dist, False, True)[0]
        atom = 1 - up - lo
        assert atom >= 0
    z = np.array([0.0])
    at_p = 1 - S.tail(z, "P", True, True)[0] - S.tail(z, "P", False, True)[0]
    at_q = 1 - S.tail(z, "Q", True, True)[0] - S.tail(z, "Q", False, True)[0]
    assert abs(at_p - at_q) < 1e-12
    D = DisjointMixturePair([(0.7, MixturePair(GaussianPair(1.0), 0.1)),
                             (0.3, MixturePair(GaussianPair(2.0), 0.1))])
    comp = 0.7 * MixturePair(GaussianPair(1.0), 0.1).delta(eps) + 0.3 * MixturePair(
        GaussianPair(2.0), 0.1).delta(eps)
    np.testing.assert_allclose(D.delta(eps), comp, rtol=1e-12)


def test_pld_wor_brackets_dp_accounting():
    """The worst-case WOR pair of one step is the Poisson-subsampled Gaussian pair at rate
    m/n, so dp_accounting's composed PLD (max of REMOVE and ADD) lies inside our interval."""
    from dp_accounting.pld import privacy_loss_distribution as dpl

    sigma, m, n, T = 1.0, 50, 1000, 60
    q = m / n
    an = FixedBatchPLDAnalysis(pa.Gaussian(sigma, 1.0), pa.WithoutReplacement(m, n),
                               pa.Substitution(), T)
    eps = np.array([0.5, 1.0, 2.0])
    up, lo = an.delta(eps)
    ref = dpl.from_gaussian_mechanism(sigma, 1.0, sampling_prob=q,
                                      value_discretization_interval=1e-4).self_compose(T)
    ref_opt = dpl.from_gaussian_mechanism(sigma, 1.0, sampling_prob=q, pessimistic_estimate=False,
                                          value_discretization_interval=1e-4).self_compose(T)
    want_hi = np.array([ref.get_delta_for_epsilon(e) for e in eps])
    want_lo = np.array([ref_opt.get_delta_for_epsilon(e) for e in eps])
    assert np.all(lo.value <= want_hi * (1 + 1e-6))
    assert np.all(up.value >= want_lo * (1 - 1e-6))
    np.testing.assert_allclose(lo.value, want_hi, rtol=2e-3)


def test_pld_never_looser_than_rdp_route():
    sigma, m, n, T, delta = 1.0, 100, 5000, 200, 1e-5
    mech, scheme = pa.Gaussian(sigma, 2.0), pa.WithoutReplacement(m, n)
    run = pa.Training(mech, scheme, steps=T, relation=pa.Substitution())
    g = run.epsilon(delta, accountant="pld")
    alpha = np.concatenate([np.linspace(1.1, 10, 90), np.linspace(11, 200, 190)])
    for method in ("balle-profile", "wang2019"):
        try:
            r = pa.rdp(mech, scheme, alpha, pa.Substitution(), method=method)
        except ValueError:
            continue
        # RDP -> (eps, delta) (Mironov 2017, Prop 3), written out here
        rdp_eps = float(np.min(T * r + math.log(1 / delta) / (alpha - 1)))
        assert g.upper.value <= rdp_eps
    assert 0 < g.lower.value <= g.upper.value


def test_pld_wr_accountants_run_and_order():
    for rel, sens in ((pa.Substitution(), 2.0), (pa.AddRemove(), 1.0)):
        an = FixedBatchPLDAnalysis(pa.Gaussian(2.0, sens), pa.WithReplacement(20, 1000), rel, 30,
                                   h=2e-3)
        up, lo = an.epsilon(np.array([1e-5, 1e-3]))
        assert np.all(lo.value <= up.value)
        assert np.all(lo.value > 0)
    # one step: the PLD upper bound is at most the single-step profile bound (Thm 10; the
    # removal-then-addition bound of theorems/balle2018/triangle.py may beat it) and at
    # least the realised lower bound
    mech = pa.Gaussian(2.0, 2.0)
    an = FixedBatchPLDAnalysis(mech, pa.WithReplacement(20, 1000), pa.Substitution(), 1, h=1e-3)
    eps = np.array([0.1, 0.5])
    up, lo = an.delta(eps)
    prof = profile(mech, pa.WithReplacement(20, 1000), eps)
    assert np.all(up.value <= prof * 1.01 + 1e-12)
    assert np.all(up.value >= lo.value)


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------
def test_bad_input():
    g = pa.Gaussian(1.0)
    with pytest.raises(ValueError, match="batch_size"):
        pa.WithoutReplacement(11, 10)
    with pytest.raises(ValueError, match="batch_size"):
        pa.WithReplacement(0, 10)  # a with-replacement batch may exceed n, not be empty
    with pytest.raises(ValueError, match="group"):
        profile(g, pa.WithoutReplacement(3, 10), 1.0, pa.Substitution(group=4))
    with pytest.raises(ValueError, match="group"):
        profile(g, pa.WithReplacement(3, 10), 1.0, pa.AddRemove(group=4))
    with pytest.raises(ValueError, match="epsilon"):
        profile(g, pa.WithoutReplacement(3, 10), -0.1)
    with pytest.raises(ValueError, match="epsilon"):
        profile(g, pa.WithoutReplacement(3, 10), [0.1, -1.0])
    with pytest.raises(ValueError, match="group must be one of"):
        profile(g, pa.WithoutReplacement(3, 10), 1.0, group="grey-box")
    with pytest.raises(ValueError, match="dataset_size"):  # issue 16: size-free without it
        profile(g, pa.Poisson(0.1), 1.0, pa.Substitution(), dataset_size=1)
    with pytest.raises(ValueError, match="WithoutReplacement"):
        profile(g, pa.WithoutReplacement(3, 10), 1.0, pa.AddRemove())
