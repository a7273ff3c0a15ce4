"""Adversarial review of session 10's shortcuts (independent references only)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from privamp.accountants.poisson import PLDAnalysis, hellinger_tv_bound, poisson_pairs
from privamp.mechanisms.gaussian import Gaussian
from privamp.pairs.combinators import MixturePair
from privamp.pairs.mechanism_pairs import GaussianPair


@pytest.mark.parametrize("second", [
    np.concatenate([[-np.inf], np.linspace(0.0, 1.0, 10)]),  # an infinite edge
    np.array([0.0, 1e300, 2e300]),  # a spacing too large for an integer ratio
    np.array([np.nan, 0.0, 1.0]),
])
def test_edge_cache_odd_grids_match_fresh(second: np.ndarray) -> None:
    """split_bin_masses after a cached call: the same values as on a fresh pair (it raised
    OverflowError / ValueError from round(inf | nan) before the fix)."""
    cached = MixturePair(GaussianPair(1.0), 0.01)
    cached.split_bin_masses(np.linspace(-0.01, 1.0, 50))
    got = cached.split_bin_masses(second)
    ref = MixturePair(GaussianPair(1.0), 0.01).split_bin_masses(second)
    assert got is not None and ref is not None
    for a, b in zip(got, ref, strict=True):
        assert np.array_equal(a, b, equal_nan=True)


def test_edge_cache_near_grid_matches_fresh() -> None:
    """Edges off the cached ones by an ulp-level amount, reversed, or every other one: reuse
    only where the floats are equal (bit-identical to a fresh pair)."""
    base = np.linspace(-0.01, 1.0, 51)
    for second in (base + 1e-17, base[::-1], base[::2], np.nextafter(base, 2.0)):
        cached = MixturePair(GaussianPair(0.7), 0.3)
        cached.split_bin_masses(base)
        got = cached.split_bin_masses(second)
        ref = MixturePair(GaussianPair(0.7), 0.3).split_bin_masses(second)
        assert got is not None and ref is not None
        for a, b in zip(got, ref, strict=True):
            assert np.array_equal(a, b)


def _tv_one_step(q: float, s: float) -> float:
    """TV((1-q) N(0) + q N(s), N(0)) = q (2 Phi(s/2) - 1), exactly (mpmath)."""
    return float(q * (2 * mp.ncdf(mp.mpf(s) / 2) - 1))


@pytest.mark.parametrize(("q", "sigma", "steps"), [
    (0.999, 0.3, 1), (0.5, 1.0, 1), (0.3, 0.05, 1), (0.2, 1.0, 1), (1e-3, 0.5, 1)])
def test_tv_bound_above_exact_one_step(q: float, sigma: float, steps: int) -> None:
    """The run's TV bound is above the exact one-step total variation distance."""
    pairs = poisson_pairs(Gaussian(sigma), q)
    assert hellinger_tv_bound(pairs, steps) >= _tv_one_step(q, 1 / sigma)
    assert PLDAnalysis(Gaussian(sigma), q, steps).tv_bound() >= _tv_one_step(q, 1 / sigma)


def test_tv_bound_above_two_step_integral() -> None:
    """T = 2: TV(M x M, Q x Q) by a 2-d quadrature (scipy, error estimate) stays below the
    Hellinger bound."""
    from scipy import integrate

    q, s = 0.4, 1.5

    def lr(x: float) -> float:  # likelihood ratio of one step
        return 1 - q + q * math.exp(s * x - s * s / 2)

    def integrand(y: float, x: float) -> float:
        return max(lr(x) * lr(y) - 1.0, 0.0) * math.exp(-(x * x + y * y) / 2) / (2 * math.pi)

    tv, err = integrate.dblquad(integrand, -12, 12, -12, 12, epsabs=1e-8)
    bound = hellinger_tv_bound(poisson_pairs(Gaussian(1 / s), q), 2)
    assert bound >= tv + err
    assert tv > 0.1  # (the integral is not degenerate)


def _group_delta_exact(k: int, q: float, s: float, eps: float) -> float:
    """delta(eps) of one step of a Poisson group of k (the larger of both directions'),
    from mpmath at 40 digits: the loss preimage by bisection, then the components' normal
    tails."""
    with mp.workdps(40):
        return _group_delta_mp(k, q, s, eps)


def _group_delta_mp(k: int, q: float, s: float, eps: float) -> float:
    b = [mp.binomial(k, j) * mp.mpf(q) ** j * (1 - mp.mpf(q)) ** (k - j) for j in range(k + 1)]
    sm, e = mp.mpf(s), mp.e ** mp.mpf(eps)

    def loss(x):
        return mp.log(sum(b[j] * mp.exp(j * sm * x - (j * sm) ** 2 / 2) for j in range(k + 1)))

    lo, hi = mp.mpf(-80), k * sm + 80
    for _ in range(300):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if loss(mid) > eps else (mid, hi)
    x = (lo + hi) / 2
    rem = sum(b[j] * mp.ncdf(j * sm - x) for j in range(k + 1)) - e * mp.ncdf(-x)
    # add direction: (N, B_k), its loss -L, the region L < -eps
    lo, hi = mp.mpf(-80), k * sm + 80
    for _ in range(300):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if loss(mid) >= -eps else (mid, hi)
    x = (lo + hi) / 2
    add = mp.ncdf(x) - e * sum(b[j] * mp.ncdf(x - j * sm) for j in range(k + 1))
    return float(max(rem, add, 0))


@pytest.mark.parametrize(("k", "q", "sigma"), [(8, 1e-6, 0.08), (4, 0.5, 0.5), (3, 0.3, 2.0)])
def test_group_one_step_brackets_mpmath(k: int, q: float, sigma: float) -> None:
    """One step of the group PLD (extreme shift K s = 100 with tiny weights, and ordinary
    settings): its interval brackets the exact delta(eps) from mpmath."""
    from privamp.theorems.schuchardt2024.group_pld import GroupPLDAnalysis

    eps = np.array([0.0, 0.1, 1.0, 5.0])
    up, lo = GroupPLDAnalysis(Gaussian(sigma), q, 1, k).delta(eps)
    assert up is not None and lo is not None
    for i, e in enumerate(eps):
        ref = _group_delta_exact(k, q, 1 / sigma, float(e))
        assert float(up.value[i]) >= ref * (1 - 1e-12)
        assert float(lo.value[i]) <= ref * (1 + 1e-12)


def test_wor_substitution_renyi_floor_below_rdp_curve() -> None:
    """The without-replacement substitution Rényi floor (screening only) stays below the
    RDP accountant's curve it claims to floor (balle-profile, T steps)."""
    from privamp.accountants.registry import rdp_curve
    from privamp.sampling.relations import Substitution
    from privamp.sampling.schemes import WithoutReplacement
    from privamp.theorems.balle2018.pld import FixedBatchPLDAnalysis

    mech, scheme, steps = Gaussian(1.0), WithoutReplacement(10, 1000), 10
    alpha = np.array([1.5, 2.0, 4.0, 8.0, 32.0])
    floor = FixedBatchPLDAnalysis(mech, scheme, Substitution(), steps).renyi_floor(alpha)
    curve = steps * rdp_curve(mech, scheme, alpha, Substitution()).epsilon
    assert np.all(floor <= curve)


@pytest.mark.filterwarnings("ignore:Secure RNG turned off")  # (Opacus's own notice)
def test_reused_privacy_engine_does_not_calibrate_with_the_first_loader() -> None:
    """A PrivacyEngine(accountant="privamp") reused: make_private_with_epsilon with a Poisson
    loader, then again with a shuffled one.  Before the fix the second calibration took the
    first loader's scheme (sigma 1.2048 for Poisson(0.25), target 4) while the batches were
    shuffled (privamp's certified lower bound 5.0955 > 4 at that sigma), and the engine kept
    reporting Poisson.  Now the second call refuses."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("opacus")
    import warnings

    from opacus import PrivacyEngine

    import privamp.opacus  # noqa: F401  (registers the "privamp" accountant)

    def private(engine, poisson: bool) -> None:
        torch.manual_seed(0)
        g = torch.Generator().manual_seed(0)
        x = torch.randn(64, 5, generator=g)
        data = torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long())
        model = torch.nn.Linear(5, 2)
        loader = torch.utils.data.DataLoader(data, batch_size=16, shuffle=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            engine.make_private_with_epsilon(
                module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                data_loader=loader, target_epsilon=4.0, target_delta=1e-5, epochs=2,
                max_grad_norm=1.0, poisson_sampling=poisson)

    engine = PrivacyEngine(accountant="privamp")
    private(engine, True)
    with pytest.raises(ValueError, match="bound to"):
        private(engine, False)


@pytest.mark.parametrize("K, q, s", [(8, 1e-6, 12.5), (2, 1e-8, 3.0)])
def test_group_mixture_tails_a_hair_above_the_loss_floor_match_mpmath(K, q, s) -> None:
    """The session-10 review's open concern, closed: Q(L > floor + d) for d down to 1e-15,
    where a float log(sum) rounded the loss onto its floor (errors of 1e-5 to 1e-1 relative
    before: the loss is now top + log1p(the other terms) and the preimage's stopping rule has
    no absolute term).  Reference: the preimage by 60-digit bisection, Q's tail in mpmath."""
    import mpmath as mp
    from scipy.stats import binom

    from privamp.pairs.mixtures import GaussianShiftMixturePair

    pair = GaussianShiftMixturePair(binom.pmf(np.arange(K + 1), K, q), s)
    with mp.workdps(60):
        b = [mp.mpf(float(x)) for x in pair.b]

        def loss(x):
            return mp.log(mp.fsum(b[j] * mp.exp(j * s * x - (j * s) ** 2 / 2)
                                  for j in range(K + 1)))

        for d in (1e-15, 1e-13, 1e-12, 1e-10):
            level = pair.floor + d
            lo, hi = mp.mpf(-200), mp.mpf(200)
            for _ in range(260):
                mid = (lo + hi) / 2
                lo, hi = (lo, mid) if loss(mid) > mp.mpf(level) else (mid, hi)
            exact = float(mp.ncdf(-hi))
            got = float(pair.tail(np.array([level]), "Q", True, True)[0])
            assert got == pytest.approx(exact, rel=1e-6), (d, got, exact)
