"""Independent soundness review of the PLD accountant's discretisation, coarsening, two-level
composition, Fourier-power convolution, Poisson accountant and Balanced Iteration lower bounds.

Every reference here is computed without privamp: exact profiles of finite pairs by direct
summation, the closed form of the T-fold Gaussian pair, exact binomial laws (mpmath), Monte
Carlo with confidence intervals, and dp_accounting.  A *pessimistic* value must be >= the
truth and an *optimistic* one <= the truth; the tolerance ``_FLOAT`` (1e-13 absolute) is the
float noise of the references (direct sums of < 10 terms, mpmath at 40 digits rounded to
double), far below the PLD's own error allowances.
"""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest

from privamp.accountants.poisson import PLDAnalysis
from privamp.mechanisms.gaussian import Gaussian
from privamp.numerics.fft import self_convolve_power
from privamp.pairs.discrete import DiscretePair
from privamp.pairs.mechanism_pairs import GaussianPair
from privamp.pld.binning import vertex_lowering
from privamp.pld.compose import compose_two_level
from privamp.pld.discretise import discretise
from privamp.theorems.dong2025.bis_pld import bis_statistic_lower_plds

_FLOAT = 1e-13


def _exact_profile(p: np.ndarray, q: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """H_{e^eps}(P || Q) = sum_x (p_x - e^eps q_x)_+ by direct summation."""
    a = np.exp(eps)[:, None]
    return np.maximum(p[None, :] - a * q[None, :], 0.0).sum(axis=1)


def _random_discrete_pair(rng: np.random.Generator, h: float) -> tuple[np.ndarray, np.ndarray]:
    """A finite pair with 1..5 finite atoms placed adversarially against the grid j h, plus
    one atom at loss +inf or -inf carrying the rest of the mass."""
    n = int(rng.integers(1, 6))
    kind = int(rng.integers(0, 4))
    if kind == 0:
        l = rng.uniform(-3.0, 3.0, n)
    elif kind == 1:  # exactly on grid points or one ulp off
        l = rng.integers(-50, 50, n) * h
        l = l + rng.choice([-1.0, 0.0, 1.0], n) * np.spacing(np.abs(l) + 1e-300)
    elif kind == 2:  # relative position in the bin t ~ 0 or 1
        l = (rng.integers(-50, 50, n) + rng.choice([1e-9, 1 - 1e-9, 1e-5, 1 - 1e-5], n)) * h
    else:  # very concentrated or spread
        l = rng.normal(0.0, float(rng.choice([1e-3, 0.1, 5.0])), n)
    q = rng.dirichlet(np.ones(n))
    p = q * np.exp(l)
    if p.sum() > 1.0:
        p = p / p.sum()
        q = p * np.exp(-l)
        return np.append(p, 0.0), np.append(q, 1.0 - q.sum())
    return np.append(p, 1.0 - p.sum()), np.append(q, 0.0)


def test_discretise_brackets_exact_profile_of_adversarial_discrete_pairs() -> None:
    # Claim 1: optimistic profile <= D <= pessimistic profile at every eps, including at the
    # atoms' losses, 1e-12 beside them and at the grid points.
    rng = np.random.default_rng(20261123)
    checked = 0
    for _ in range(250):
        h = float(10 ** rng.uniform(-3.0, 0.0))
        p, q = _random_discrete_pair(rng, h)
        pair = DiscretePair(p, q)
        try:
            pess, opt = discretise(pair, h)
        except ValueError:  # loss range outside [-700, 700]: refused, not wrong
            continue
        lf = pair.losses[np.isfinite(pair.losses)]
        eps = np.concatenate((np.linspace(-4, 4, 161), lf, lf + 1e-12, lf - 1e-12,
                              np.arange(-40, 41) * h))
        ex = _exact_profile(p, q, eps)
        assert np.all(opt.delta(eps) <= ex + _FLOAT)
        assert np.all(pess.delta(eps) >= ex - _FLOAT)
        checked += 1
    assert checked > 200


def test_vertex_lowering_satisfies_tent_constraints() -> None:
    # Claim 1: mu >= 0 and (1 - t_i) mu_i + t_i mu_{i+1} >= g_i on every segment, for tents
    # peaked at t = 0, 1, within 1e-12 of them, and caps that force the left/both branches.
    rng = np.random.default_rng(7)
    for trial in range(60):
        K = int(rng.integers(1, 300))
        g = 10 ** rng.uniform(-30, 0, K) * (rng.random(K) > 0.1)
        t = rng.choice([0.0, 1.0, 1e-12, 1 - 1e-12, 1e-4, 0.5], K) if trial % 2 else rng.random(K)
        cap = None if trial % 3 == 0 else 10 ** rng.uniform(-32, 0, K + 1)
        mu = vertex_lowering(g, t, cap=cap)
        assert mu.shape == (K + 1,)
        assert np.all(mu >= 0.0)
        # exact check of the constraint in rationals would be overkill: the function
        # inflates g by 1e-9 relative, far above the 2 ulp error of this left-hand side
        lhs = (1.0 - t) * mu[:-1] + t * mu[1:]
        assert np.all(lhs >= g)


def _rr_profile_mp(T: int, theta: float, eps: np.ndarray) -> np.ndarray:
    """T-fold pair P = (theta, 1 - theta), Q = (1 - theta, theta): the loss is (2K - T) l0
    with K ~ Binomial(T, theta) under P; exact profile summed in mpmath."""
    mp.mp.dps = 40
    th = mp.mpf(theta)
    l0 = mp.log(th / (1 - th))
    pk = [mp.binomial(T, k) * th**k * (1 - th) ** (T - k) for k in range(T + 1)]
    out = []
    for e in eps:
        tot = mp.mpf(0)
        for k in range(T + 1):
            lk = (2 * k - T) * l0
            if lk > e:
                tot += pk[k] * (1 - mp.e ** (mp.mpf(float(e)) - lk))
        out.append(float(tot))
    return np.array(out)


@pytest.mark.parametrize("placement", ["on_grid", "ulp_above", "ulp_below", "mid_bin"])
def test_composed_discrete_pair_self_compose_and_coarsen(placement: str) -> None:
    # Claims 1 and 3: composition, pessimistic coarsening (connect-the-dots of atoms) and
    # optimistic coarsening (merged atoms + chained chords) keep the bracket, with the atom
    # loss exactly on a grid point, one ulp off it, or in the middle of a bin.
    theta = 0.6
    l0 = math.log(theta / (1 - theta))
    m = 37
    h = {"on_grid": l0 / m, "ulp_above": np.nextafter(l0 / m, 1.0),
         "ulp_below": np.nextafter(l0 / m, 0.0), "mid_bin": l0 / (m + 0.5)}[placement]
    pair = DiscretePair(np.array([theta, 1 - theta]), np.array([1 - theta, theta]))
    pess, opt = discretise(pair, float(h))
    T = 40
    eps = np.concatenate((np.linspace(0.0, 6.0, 13), np.arange(0, 12) * l0,
                          np.arange(0, 12) * l0 + 1e-9))
    ex = _rr_profile_mp(T, theta, eps)
    for k in (1, 2, 3, 8):
        pc = pess.self_compose(T).coarsen(k)
        oc = opt.self_compose(T).coarsen(k)
        assert np.all(pc.delta(eps) >= ex - _FLOAT), k
        assert np.all(oc.delta(eps) <= ex + _FLOAT), k
        # coarsening the single step first, then composing
        pc1 = pess.coarsen(k).self_compose(T)
        oc1 = opt.coarsen(k).self_compose(T)
        assert np.all(pc1.delta(eps) >= ex - _FLOAT), k
        assert np.all(oc1.delta(eps) <= ex + _FLOAT), k
    # non-vacuous: on the aligned grid the optimistic bound is close to the truth
    if placement == "on_grid":
        j = ex > 1e-3
        assert np.all(opt.self_compose(T).delta(eps)[j] >= 0.99 * ex[j])


def test_two_level_composition_discrete_pair_exact() -> None:
    # Claim 3: compose_two_level (T >= 5000 takes the two-level path: T1 fine steps,
    # coarsened 8x, composed, times r coarsened single steps) against the exact binomial law.
    theta, T = 0.51, 6007
    l0 = math.log(theta / (1 - theta))
    pair = DiscretePair(np.array([theta, 1 - theta]), np.array([1 - theta, theta]))
    pess, opt = discretise(pair, l0 / 3.0)
    eps = np.array([0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0])
    ex = _rr_profile_mp(T, theta, eps)
    up = compose_two_level(pess, T).delta(eps)
    lo = compose_two_level(opt, T).delta(eps)
    assert np.all(up >= ex - _FLOAT)
    assert np.all(lo <= ex + _FLOAT)
    # non-vacuous: the pessimistic side is tight; the optimistic side is first-order loose
    # here (the 8x coarser grid misaligns the atoms), so only a weak check
    assert np.all(up <= 1.01 * ex + 1e-9)
    assert np.all(lo >= 0.3 * ex)


def _gauss_T(s: float, eps: float) -> float:
    """Profile of N(s, 1) vs N(0, 1): Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s)."""
    mp.mp.dps = 40
    s_, e_ = mp.mpf(s), mp.mpf(eps)
    return float(mp.ncdf(s_ / 2 - e_ / s_) - mp.e**e_ * mp.ncdf(-s_ / 2 - e_ / s_))


@pytest.mark.parametrize("sigma,T,h", [(0.2, 3, 0.05), (0.5, 1, 0.01), (1.0, 2, 0.05),
                                       (5.0, 1000, 1e-3), (20.0, 5000, 1e-3),
                                       (20.0, 100000, 1e-3), (10.0, 1000000, 2e-3)])
def test_gaussian_composition_closed_form(sigma: float, T: int, h: float) -> None:
    # Claims 1-4: T-fold Gaussian pair is the Gaussian pair of shift sqrt(T) s; the grid
    # pair is composed by compose_two_level (power method and/or two-level for large T).
    s = 1.0 / sigma
    pess, opt = discretise(GaussianPair(s), h, tail=min(1e-16, 1e-13 / T))
    up = compose_two_level(pess, T)
    lo = compose_two_level(opt, T)
    S = s * math.sqrt(T)
    eps = np.linspace(0.0, 4.0 * S + S * S / 2.0, 21)
    ex = np.array([_gauss_T(S, e) for e in eps])
    assert np.all(up.delta(eps) >= ex - _FLOAT)
    assert np.all(lo.delta(eps) <= ex + _FLOAT)
    big = ex > 1e-6
    assert np.all(up.delta(eps)[big] <= 1.1 * ex[big])  # non-vacuous
    assert np.all(lo.delta(eps)[big] >= 0.9 * ex[big])


def _binom_pmf_mp(n: int, q: float, ks: np.ndarray) -> np.ndarray:
    mp.mp.dps = 40
    qq = mp.mpf(q)
    return np.array([float(mp.binomial(n, int(k)) * qq ** int(k) * (1 - qq) ** (n - int(k)))
                     for k in ks])


@pytest.mark.parametrize("q,T,tau", [(0.3, 50, 1e-14), (1e-3, 2000, 1e-15),
                                     (0.5, 20000, 1e-14)])
def test_self_convolve_power_binomial(q: float, T: int, tau: float) -> None:
    # Claim 4: the window entries are within err (l1) plus aliased mass <= tau_lo + tau_hi
    # of the exact Binomial(T, q) law, and the tails outside are within tau_lo / tau_hi.
    res = self_convolve_power(np.array([1.0 - q, q]), T, tau, max_kept_fraction=1.0)
    assert res is not None
    start, z, err, tau_lo, tau_hi = res
    ks = np.arange(start, start + len(z))
    ex = _binom_pmf_mp(T, q, ks)
    assert float(np.abs(z - ex).sum()) <= err + tau_lo + tau_hi
    from scipy.stats import binom
    assert binom.cdf(start - 1, T, q) <= max(tau_lo, 1e-300) * (1 + 1e-6)
    assert binom.sf(start + len(z) - 1, T, q) <= max(tau_hi, 1e-300) * (1 + 1e-6)


def test_self_convolve_power_blocked_chernoff_window() -> None:
    # Claim 4 (_blocked_log_masses): p longer than 8192 entries is blocked for the
    # Chernoff windows; p = Binomial(n0, q) pmf makes the T-fold law Binomial(T n0, q),
    # whose tails outside the window must be <= tau (scipy's binomial tails are accurate
    # to ~1e-15 relative; tau = 1e-12 leaves the test meaningful).
    from scipy.stats import binom
    n0, q, T, tau = 20000, 0.3, 30, 1e-12
    p = binom.pmf(np.arange(n0 + 1), n0, q)
    res = self_convolve_power(p, T, tau)
    assert res is not None
    start, z, err, tau_lo, tau_hi = res
    assert binom.cdf(start - 1, T * n0, q) <= tau_lo * (1 + 1e-6)
    assert binom.sf(start + len(z) - 1, T * n0, q) <= tau_hi * (1 + 1e-6)
    assert err < 1e-9


def _mix_rem(s: float, w: float, eps: float) -> float:
    """delta of (w N(s,1) + (1-w) N(0,1), N(0,1)) (closed form, mpmath)."""
    mp.mp.dps = 40
    s_, w_, e_ = mp.mpf(s), mp.mpf(w), mp.mpf(eps)
    x0 = (mp.log((mp.e**e_ - 1 + w_) / w_) + s_ * s_ / 2) / s_
    return float(w_ * mp.ncdf(s_ - x0) + (1 - w_ - mp.e**e_) * mp.ncdf(-x0))


def _mix_add(s: float, w: float, eps: float) -> float:
    """delta of (N(0,1), w N(s,1) + (1-w) N(0,1)) (closed form, mpmath)."""
    mp.mp.dps = 40
    s_, w_, e_ = mp.mpf(s), mp.mpf(w), mp.mpf(eps)
    c = mp.e ** (-e_) - (1 - w_)
    if c <= 0:
        return 0.0
    x1 = (mp.log(c / w_) + s_ * s_ / 2) / s_
    return float(mp.ncdf(x1) - mp.e**e_ * (w_ * mp.ncdf(x1 - s_) + (1 - w_) * mp.ncdf(x1)))


@pytest.mark.parametrize("sigma,w", [(0.5, 0.3), (1.0, 0.01), (2.0, 1e-4), (0.3, 0.9),
                                     (5.0, 0.05)])
def test_pld_analysis_single_step_closed_form(sigma: float, w: float) -> None:
    # Claim 5 (T = 1): the run's profile is the max over the two directions.
    an = PLDAnalysis(Gaussian(sigma), w, 1)
    eps = np.array([0.0, 0.001, 0.01, 0.1, 0.5, 1.0, 3.0])
    up, lo = an.delta(eps)
    ex = np.array([max(_mix_rem(1 / sigma, w, e), _mix_add(1 / sigma, w, e)) for e in eps])
    assert np.all(up.value >= ex - _FLOAT)
    assert np.all(lo.value <= ex + _FLOAT)


@pytest.mark.parametrize("sigma,w,T", [(1.0, 0.01, 1000), (2.0, 0.1, 200),
                                       (1.0, 0.005, 6000)])
def test_pld_analysis_composed_monte_carlo_and_dp_accounting(sigma: float, w: float,
                                                              T: int) -> None:
    # Claim 5: the add direction is composed pessimistic-only on a coarse grid.  Its true
    # profile (and the remove direction's) is estimated by Monte Carlo of the T-fold loss;
    # the upper bound must exceed mean - 6 standard errors of each (false-failure
    # probability < 1e-8 per point).  The lower bound must not exceed dp_accounting's
    # pessimistic (connect-the-dots) upper estimate.
    rng = np.random.default_rng(11)
    s = 1.0 / sigma
    an = PLDAnalysis(Gaussian(sigma), w, T)
    eps = np.array([0.0, 0.1, 0.5, 1.0])
    up, lo = an.delta(eps)
    N = 4000
    x = rng.standard_normal((N, T))
    bern = rng.random((N, T)) < w

    def loss(y: np.ndarray) -> np.ndarray:  # log of (w p + (1-w) q)/q at y
        return np.log1p(w * np.expm1(s * y - s * s / 2))

    L_rem = loss(x + s * bern).sum(axis=1)  # under w P + (1 - w) Q
    L_add = -loss(x).sum(axis=1)  # under Q, loss of (Q, w P + (1 - w) Q)
    for L in (L_rem, L_add):
        v = np.maximum(-np.expm1(eps[:, None] - L[None, :]), 0.0)
        m, se = v.mean(axis=1), v.std(axis=1) / math.sqrt(N)
        assert np.all(up.value >= m - 6.0 * se)
    from dp_accounting.pld import privacy_loss_distribution as pldm
    ref = pldm.from_gaussian_mechanism(sigma, sampling_prob=w,
                                       value_discretization_interval=1e-3,
                                       pessimistic_estimate=True, use_connect_dots=True)
    ref = ref.self_compose(T)
    d_ref = np.array([ref.get_delta_for_epsilon(float(e)) for e in eps])
    # dp_accounting's float error and truncation: 1e-12 absolute is generous
    assert np.all(lo.value <= d_ref * (1 + 1e-9) + 1e-12)


def test_bis_statistic_lower_bounds_monte_carlo() -> None:
    # Claim 6: one epoch of Balanced Iteration, T = 4 steps, k = 2 participations:
    # P = mean over 2-subsets S of N(s 1_S, I), Q = N(0, I).  The exact likelihood ratio is
    # enumerable; delta(eps) = E_P[(1 - e^{eps - L})_+] (remove) and E_Q[(1 - e^{eps + L})_+]
    # (add) by Monte Carlo.  A lower bound must be <= mean + 6 standard errors.
    sigma, T, k = 1.0, 4, 2
    res = bis_statistic_lower_plds(sigma, T, k)
    assert res is not None
    rem, add = res
    s = 1.0 / sigma
    subs = np.array([[1.0 if i in S else 0.0 for i in range(T)]
                     for S in itertools.combinations(range(T), k)])
    rng = np.random.default_rng(5)
    N = 200000

    def L(y: np.ndarray) -> np.ndarray:
        z = s * y @ subs.T - k * s * s / 2
        mx = z.max(axis=1)
        return mx + np.log(np.mean(np.exp(z - mx[:, None]), axis=1))

    yp = rng.standard_normal((N, T)) + s * subs[rng.integers(0, len(subs), N)]
    lp = L(yp)
    lq = L(rng.standard_normal((N, T)))
    for eps in (0.0, 0.5, 1.0, 2.0):
        v = np.maximum(-np.expm1(eps - lp), 0.0)
        assert float(rem.delta(eps)) <= v.mean() + 6 * v.std() / math.sqrt(N)
        v = np.maximum(-np.expm1(eps + lq), 0.0)
        assert float(add.delta(eps)) <= v.mean() + 6 * v.std() / math.sqrt(N)
    # non-vacuous: the lower bound is informative at eps = 0
    assert float(rem.delta(0.0)) > 0.3


@pytest.mark.parametrize("sigma,w,h", [(0.2, 1e-8, 3e-3), (0.2, 0.99, 0.2), (20.0, 1e-5, 2e-5),
                                       (20.0, 0.5, 1e-4), (1.0, 1e-3, 6e-5), (5.0, 0.1, 0.2)])
def test_discretise_subsampled_gaussian_both_directions_closed_form(sigma: float, w: float,
                                                                    h: float) -> None:
    # Claims 1-2 on the pairs the accountant uses: remove (w P + (1-w) Q, Q) and add
    # (Q, w P + (1-w) Q) at extreme rates and noise scales, tiny and coarse grids, against
    # their closed forms (mpmath), at spread points and at the first 20 grid points.
    from privamp.pairs.combinators import MixturePair, SwappedPair
    s = 1.0 / sigma
    rem = MixturePair(GaussianPair(s), w)
    for pair, fn in ((rem, _mix_rem), (SwappedPair(rem), _mix_add)):
        pess, opt = discretise(pair, h)
        hi = pair.loss_range(1e-12)[1]
        eps = np.concatenate((np.linspace(0.0, max(hi, 0.01), 12), np.arange(20) * h))
        ex = np.array([fn(s, w, float(e)) for e in eps])
        assert np.all(pess.delta(eps) >= ex - _FLOAT)
        assert np.all(opt.delta(eps) <= ex + _FLOAT)


def _gauss_eps(S: float, d: float) -> float:
    """Smallest eps >= 0 with delta_S(eps) <= d for the Gaussian pair of shift S (mpmath
    bisection, 200 halvings: exact to double precision)."""
    mp.mp.dps = 40

    def f(e):
        return mp.ncdf(S / 2 - e / S) - mp.e**e * mp.ncdf(-S / 2 - e / S) - d

    lo, hi = mp.mpf(0), mp.mpf(S * S + 20 * S)
    if f(lo) <= 0:
        return 0.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return float(hi)


@pytest.mark.parametrize("sigma,T,h", [(1.0, 1, 1e-3), (0.5, 10, 1e-3), (5.0, 5000, 1e-3)])
def test_epsilon_inversion_brackets_closed_form(sigma: float, T: int, h: float) -> None:
    # PLD.epsilon: pessimistic >= the true epsilon(delta) >= optimistic (1e-12 relative
    # is the bisection's and the double rounding's noise).
    s = 1.0 / sigma
    pess, opt = discretise(GaussianPair(s), h)
    up, lo = compose_two_level(pess, T), compose_two_level(opt, T)
    ds = np.array([0.5, 1e-1, 1e-3, 1e-6, 1e-10])
    ex = np.array([_gauss_eps(s * math.sqrt(T), float(d)) for d in ds])
    assert np.all(up.epsilon(ds) >= ex * (1 - 1e-12))
    assert np.all(lo.epsilon(ds) <= up.epsilon(ds))
    assert np.all(lo.epsilon(ds) <= ex * (1 + 1e-12))
