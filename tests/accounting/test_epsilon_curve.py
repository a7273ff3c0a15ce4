"""run.epsilon_curve: checkpoints reusing composed PLDs, checked against dp-accounting and
against single queries of runs of each length."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import privamp as pa


def _dpa_pld(q, sigma, T, delta):
    from dp_accounting.pld import privacy_loss_distribution as pld

    d = pld.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=1e-4,
                                    use_connect_dots=True)
    return d.self_compose(T).get_epsilon_for_delta(delta)


def test_curve_brackets_dp_accounting_at_checkpoints():
    q, sigma, T = 0.01, 1.0, 600
    steps = [50, 200, 600]
    g = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T).epsilon_curve(1e-5, steps)
    assert g.upper.value.shape == (3,) and g.lower.value.shape == (3,)
    for i, t in enumerate(steps):
        ref = _dpa_pld(q, sigma, t, 1e-5)
        assert g.lower.value[i] <= ref
        assert abs(g.upper.value[i] - ref) <= 1e-4 * ref
    assert np.all(np.diff(g.upper.value) > 0)


def test_curve_overlaps_single_queries_long_run():
    """A run long enough for the two-level grid: every checkpoint's certified interval
    overlaps that of a separate run of that length, and is <= 0.1% wide."""
    run = pa.Training(pa.Gaussian(1.1), pa.Poisson(256 / 60000), steps=14063)
    steps = [7000, 141, 14063]  # any order, aligned with the output
    g = run.epsilon_curve(1e-5, steps)
    for i, t in enumerate(steps):
        one = pa.Training(pa.Gaussian(1.1), pa.Poisson(256 / 60000), steps=t).epsilon(1e-5)
        assert g.lower.value[i] <= one.upper.value and one.lower.value <= g.upper.value[i]
        assert g.upper.value[i] - g.lower.value[i] <= 1e-3 * g.upper.value[i]


def test_default_checkpoints():
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.1), epochs=3)  # 30 steps
    g = run.epsilon_curve(1e-5)
    assert g.upper.value.shape == (3,)
    run = pa.Training(pa.Gaussian(2.0), pa.Poisson(0.01), steps=300)
    assert run.epsilon_curve(1e-5).upper.value.shape == (100,)


def test_rdp_curve_matches_dp_accounting():
    import dp_accounting as dpa

    logging.disable(logging.WARNING)
    q, sigma = 0.02, 0.9
    steps = [10, 100, 1000]
    g = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=1000).epsilon_curve(
        1e-6, steps, accountant="rdp")
    assert g.lower.value.tolist() == [0.0, 0.0, 0.0]  # trivial lower bound
    for i, t in enumerate(steps):
        acc = dpa.rdp.RdpAccountant()
        acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), t)
        ref = acc.get_epsilon(1e-6)
        assert ref * (1 - 1e-3) <= g.upper.value[i] <= ref * (1 + 1e-9)


def test_best_curve_takes_rdp_where_it_wins():
    """At delta = 1e-100 the PLD declines; "best" answers every checkpoint by RDP."""
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=100)
    g = run.epsilon_curve(1e-100, [10, 100])
    ref = run.epsilon_curve(1e-100, [10, 100], accountant="rdp")
    assert np.allclose(g.upper.value, ref.upper.value, rtol=1e-12)


@pytest.mark.parametrize("bad", [[], [0, 5], [1.5], [[1, 2]]])
def test_curve_rejects_bad_steps(bad):
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=100)
    with pytest.raises(ValueError, match="steps"):
        run.epsilon_curve(1e-5, bad)


@pytest.mark.parametrize("kind", ["pessimistic", "optimistic"])
def test_epsilon_hint_never_changes_the_answer(kind):
    """The suffix tables of a hinted query give the full tables' answer, for hints below,
    at and above the answers (above: the fallback)."""
    from privamp.pld.grid import PLD

    rng = np.random.default_rng(3)
    m = rng.random(4000) * np.exp(-np.linspace(0, 30, 4000))
    m /= m.sum()
    p = PLD(1e-3, -500, m, 1e-9, kind, 1e-12)
    d = np.array([1e-2, 1e-4, 1e-6])
    full = p.epsilon(d)
    for hint in (-1.0, 0.0, float(full.min()) - 0.01, float(full.min()), 3.0, 10.0):
        fresh = PLD(1e-3, -500, m, 1e-9, kind, 1e-12)
        assert np.array_equal(fresh.epsilon(d, hint), full)


@pytest.mark.parametrize("kind", ["pessimistic", "optimistic"])
def test_band_tables_give_the_full_answer(kind):
    """A hinted single-delta query reads tables on _BAND points above the hint (the sums
    above them in one pass each): the answers agree with the full tables' to float error,
    for hints just below the answer (band used), far below (fallback) and above it."""
    from privamp.pld.grid import _BAND, PLD

    rng = np.random.default_rng(5)
    m = rng.random(6000) * np.exp(-0.5 * ((np.arange(6000) - 2500) / 600.0) ** 2)
    m /= m.sum()
    for d in (1e-2, 1e-5, 1e-9):
        full = float(PLD(1e-3, -1000, m, 1e-12, kind, 1e-13).epsilon(d))
        for hint in (full - 0.05, full - 0.2 * _BAND * 1e-3, full - 2 * _BAND * 1e-3,
                     full + 0.01):
            fresh = PLD(1e-3, -1000, m, 1e-12, kind, 1e-13)
            assert float(fresh.epsilon(d, hint)) == pytest.approx(full, rel=1e-12, abs=0)


def test_best_curve_is_the_smaller_of_pld_and_rdp():
    """The screening of checkpoints in runs never drops an RDP bound that would win."""
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=2000)
    steps = np.unique(np.linspace(1, 2000, 30).astype(int))
    best = run.epsilon_curve(1e-10, steps)
    pld = run.epsilon_curve(1e-10, steps, accountant="pld")
    rdp = run.epsilon_curve(1e-10, steps, accountant="rdp")
    assert np.allclose(best.upper.value, np.minimum(pld.upper.value, rdp.upper.value),
                       rtol=1e-12, atol=0)


def _check_running_products(arrays: dict, plan: list, tau: float = 1e-14) -> None:
    """Each window of product_windows against the exact running convolution."""
    from privamp.numerics.fft import product_windows

    exact = np.ones(1)
    for (start, z, err, tau_lo, tau_hi), g in zip(product_windows(arrays, plan, tau), plan,
                                                   strict=True):
        exact = np.convolve(exact, arrays[g])
        win = exact[start : start + len(z)]
        assert np.sum(np.abs(z - win)) <= err + tau_lo + tau_hi + 1e-15
        assert exact[:start].sum() <= tau_lo + 1e-15
        assert exact[start + len(z):].sum() <= tau_hi + 1e-15
        assert err < 1e-11


def test_running_fourier_products_within_their_certified_error():
    """Windows of running products of two arrays against exact convolutions (mpmath-free:
    direct sums of nonnegative terms, relative error ~1e-16): the l1 distance stays within
    the certified error plus the aliased tails, and the tails outside are <= tau."""
    rng = np.random.default_rng(7)
    x = np.arange(300)
    arrays = {1: np.exp(-0.5 * ((x - 150) / 20.0) ** 2) * (1 + 0.3 * rng.random(300)),
              2: np.exp(-0.5 * ((x[:200] - 60) / 9.0) ** 2)}
    for a in arrays.values():
        a /= a.sum()
    plan = [1, 2, 2, 1, 2, 1, 1, 2]
    _check_running_products(arrays, plan)


def test_curve_spectral_checkpoints_bracket_dp_accounting_long_run():
    """Checkpoints of a long run (blocks of ~141 steps composed in the Fourier domain) stay
    certified: lower <= dp-accounting (connect-the-dots, h = 1e-4) <= upper + 1e-4 rel; every
    interval (the optimistic side on its coarser grid) <= 0.1% wide."""
    q, sigma = 256 / 60000, 1.1
    run = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=14063)
    g = run.epsilon_curve(1e-5)
    assert np.all(g.upper.value - g.lower.value <= 1e-3 * g.upper.value)
    steps = np.unique(np.round(np.linspace(14063 / 100, 14063, 100)).astype(int))
    for i in (0, 37, 99):
        ref = _dpa_pld(q, sigma, int(steps[i]), 1e-5)
        assert g.lower.value[i] <= ref <= g.upper.value[i] * (1 + 1e-4)


def test_rr_curve_brackets_exact_binomial_profile():
    """Randomized response (discrete blocks, Fourier running products): each checkpoint's
    interval brackets the exact epsilon (binomial sufficient statistic,
    tests/soundness/exact_refs.py): exact delta <= 1e-5 at the upper end and >= at the lower."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "soundness"))
    from exact_refs import rr_poisson_delta

    theta, q, delta = 0.7, 0.01, 1e-5
    steps = [100, 1500, 3000]
    g = pa.Training(pa.RandomizedResponse(theta), pa.Poisson(q), steps=3000).epsilon_curve(
        delta, steps, accountant="pld")
    for i, t in enumerate(steps):
        assert rr_poisson_delta(float(g.upper.value[i]), theta, q, t) <= delta * (1 + 1e-9)
        assert rr_poisson_delta(float(g.lower.value[i]), theta, q, t) >= delta * (1 - 1e-9)
        assert g.upper.value[i] - g.lower.value[i] <= 1e-3 * g.upper.value[i]


@pytest.mark.parametrize("accountant", ["pld", "best"])
def test_checkpoint_the_shared_composition_declines_is_asked_alone(accountant):
    """Found by review: at delta 1e-12 the shared composition declined at some checkpoints
    (its float allowance) where single queries answer; "pld" raised and "best" fell back to
    RDP without a lower bound.  Each checkpoint must bracket dp-accounting's PLD (h 1e-4)."""
    q, sigma = 0.05, 0.8
    run = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=1000)
    steps = [50, 100, 999]
    g = run.epsilon_curve(1e-12, steps=steps, accountant=accountant)
    for i, t in enumerate(steps):
        ref = _dpa_pld(q, sigma, t, 1e-12)
        assert g.lower.value[i] <= ref * (1 + 1e-3) and ref <= g.upper.value[i] * (1 + 1e-3)
        assert g.lower.value[i] > 0.98 * g.upper.value[i]


@pytest.mark.parametrize("ratio", [1.0, 1e9])
def test_pessimistic_only_direction_settled_from_later_checkpoints(monkeypatch, ratio):
    """The add direction (pessimistic side only) evaluated at every checkpoint (ratio 1) or
    only at the last (1e9: every other checkpoint settled by evaluating it there): both
    bracket dp-accounting (connect-the-dots, h = 1e-4), as the default schedule does."""
    from privamp.accountants import pld_run as poisson_pld

    q, sigma = 0.05, 1.0
    steps = list(range(20, 401, 20))
    default = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=400).epsilon_curve(1e-5, steps)
    monkeypatch.setattr(poisson_pld, "SPARSE_RATIO", ratio)
    g = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=400).epsilon_curve(1e-5, steps)
    for i in (0, 4, 19):
        ref = _dpa_pld(q, sigma, steps[i], 1e-5)
        for c in (g, default):
            assert c.lower.value[i] <= ref <= c.upper.value[i] * (1 + 1e-4)
    assert np.all(np.abs(g.upper.value - default.upper.value) <= 1e-12 * default.upper.value)


def test_settled_checkpoint_takes_a_larger_direction():
    """_settle_partial: where the later evaluation does not settle a checkpoint, the
    direction is evaluated there and its bound kept if larger: one atom of P-mass p at loss
    l has epsilon l + log(1 - delta / p) (closed form)."""
    from privamp.accountants.pld_run import settle_partial as _settle_partial
    from privamp.pld.grid import PLD
    from privamp.results import Bound

    h, delta = 1e-3, 1e-5
    atoms = [(1000, 0.5), (3000, 0.5), (3500, 0.5)]  # loss 1, 3, 3.5
    plds = [PLD(h, off, np.array([p]), 0.0, "pessimistic") for off, p in atoms]
    out = [(Bound(2.0, "upper", "a"), Bound(1.9, "lower", "a")) for _ in atoms]
    partial = {1: {2: (np.asarray(3.5 + np.log1p(-delta / 0.5)), np.asarray(2.0))}}

    def stream(i, want, finer):
        assert not finer
        return iter([p if w else None for p, w in zip(plds, want, strict=True)])

    _settle_partial(out, partial, [False, False, True], stream, np.asarray(delta))
    assert out[0][0].value == 2.0  # loss 1: the bound 2 stands
    want = 3.0 + np.log1p(-delta / 0.5)
    assert want <= out[1][0].value <= want * (1 + 1e-9)
    assert out[2][0].value == 2.0 and out[1][1].value == 1.9


def test_settle_on_a_finer_grid_takes_the_least_bound():
    """settle_partial with a finer version of the direction: it is evaluated at the missing
    checkpoints and where the coarse evaluation decided, and the least certified bound of
    the direction is kept there (one atom of P-mass p at loss l: epsilon l + log(1 - delta /
    p), closed form)."""
    from privamp.accountants.pld_run import settle_partial
    from privamp.pld.grid import PLD
    from privamp.results import Bound

    h, delta = 1e-3, 1e-5

    def eps(loss):
        return loss + np.log1p(-delta / 0.5)

    fine = [PLD(h, off, np.array([0.5]), 0.0, "pessimistic") for off in (1000, 3000, 3500)]
    out = [(Bound(2.0, "upper", "a"), Bound(1.9, "lower", "a")) for _ in range(2)]
    out.append((Bound(eps(3.6), "upper", "a"), Bound(1.9, "lower", "a")))
    partial = {1: {2: (np.asarray(eps(3.6)), np.asarray(2.0))}}  # coarse: loss 3.6, decides
    asked = []

    def stream(i, want, finer):
        asked.append((i, list(want), finer))
        return iter([p if w else None for p, w in zip(fine, want, strict=True)])

    settle_partial(out, partial, [False, False, True], stream, np.asarray(delta), {1})
    assert asked == [(1, [True, True, True], True)]
    assert out[0][0].value == 2.0  # loss 1 on the fine grid: the others' bound 2 stands
    for k, loss in ((1, 3.0), (2, 3.5)):  # the fine grid's bound, below the coarse one
        assert eps(loss) <= out[k][0].value <= eps(loss) * (1 + 1e-9)
    assert all(o[1].value == 1.9 for o in out)
    # the coarse grid decided nowhere: it settles the missing checkpoints itself
    out = [(Bound(4.0, "upper", "a"), Bound(1.9, "lower", "a")) for _ in range(3)]
    partial = {1: {2: (np.asarray(eps(3.6)), np.asarray(4.0))}}
    asked.clear()
    settle_partial(out, partial, [False, True, True], stream, np.asarray(delta), {1})
    assert asked == [(1, [True, False, False], False)]
    assert [o[0].value for o in out] == [4.0, 4.0, 4.0]


@pytest.mark.slow
def test_deciding_add_direction_refined_in_the_curve():
    """q 1e-3, sigma 4: the add direction (pessimistic only, on a 4x coarser grid) decides
    the curve's upper bounds; refined on the remove direction's grid (session 11) the last
    checkpoint's interval is as narrow as a single query's (2.0e-3 relative; 6.0e-3 before)
    and still holds dp-accounting's connect-the-dots epsilon above its lower bound."""
    q, sigma, T = 1e-3, 4.0, 20_000
    g = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T).epsilon_curve(1e-5)
    up, lo = float(g.upper.value[-1]), float(g.lower.value[-1])
    assert lo <= _dpa_pld(q, sigma, T, 1e-5)
    one = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T).epsilon(1e-5)
    assert one.lower.value <= up and lo <= one.upper.value
    assert up - lo <= 2.5e-3 * up
    assert np.all(np.diff(g.upper.value) > 0)


def test_shared_spectra_change_no_result_and_are_released():
    """Blocks of nearby lengths share one long-double transform (and the Chernoff windows'
    log-MGF bounds) inside shared_spectra: the first power equals the one computed alone,
    the second (its window from the first one's lambdas) agrees with it within both
    certified errors and tails, and nothing is kept after the block."""
    from privamp.numerics import fft

    rng = np.random.default_rng(3)
    p = rng.random(3000)
    p /= p.sum()
    alone = [fft.self_convolve_power(p, T, 1e-14) for T in (140, 141)]
    with fft.shared_spectra():
        shared = [fft.self_convolve_power(p, T, 1e-14) for T in (140, 141)]
        assert sum(k[0] == "X" for k in fft._SPECTRA) == 1  # one transform
    assert fft._SPECTRA is None
    a, b = alone[0], shared[0]
    assert a[0] == b[0] and a[2:] == b[2:] and np.array_equal(a[1], b[1])
    (sa, za, ea, la, ha), (sb, zb, eb, lb, hb) = alone[1], shared[1]
    lo, hi = max(sa, sb), min(sa + len(za), sb + len(zb))
    assert hi - lo > 0.99 * max(len(za), len(zb))
    diff = np.abs(za[lo - sa : hi - sa] - zb[lo - sb : hi - sb]).sum()
    assert diff <= ea + eb + la + ha + lb + hb


def test_running_products_read_short_windows_from_shorter_transforms(monkeypatch):
    """Early windows of a long plan come from inverse transforms of every m-th coefficient
    (length N / m): still within their certified error of exact convolutions (direct sums)."""
    import privamp.numerics.fft as F

    lengths: list[int] = []
    irfft = F.sfft.irfft
    monkeypatch.setattr(F.sfft, "irfft", lambda y, n: lengths.append(n) or irfft(y, n))
    x = np.arange(120)
    arrays = {1: np.exp(-0.5 * ((x - 60) / 8.0) ** 2), 2: np.exp(-0.5 * ((x - 50) / 6.0) ** 2)}
    for a in arrays.values():
        a /= a.sum()
    plan = [1, 2] * 12
    _check_running_products(arrays, plan)
    assert min(lengths) * 4 <= max(lengths)  # the first windows used shorter transforms


@pytest.mark.parametrize("kind", ["pessimistic", "optimistic"])
def test_scalar_epsilon_inversion_matches_the_array_code(kind):
    """One delta is inverted on floats (the curve asks hundreds): the same answers as the
    array code, and each (up to its safe rounding: up when pessimistic, down when optimistic)
    the smallest eps >= 0 whose profile (PLD.delta, computed apart) is <= delta."""
    from privamp.pld.grid import PLD

    rng = np.random.default_rng(11)
    for trial in range(20):
        m = rng.random(rng.integers(2, 400)) ** 3
        m /= m.sum() * (1.0 + rng.random())
        p = PLD(0.01 + 0.05 * rng.random(), int(rng.integers(-200, 50)), m,
                float(rng.random() * 1e-6) if trial % 3 else 0.0, kind, 1e-12 * trial)
        for d in np.concatenate((np.geomspace(1e-9, 0.9, 25), [0.0, 1.0])):
            one = float(p.epsilon(float(d)))
            assert one == float(p.epsilon(np.array([d]))[0])
            if 0 < one < np.inf and kind == "pessimistic":
                assert p.delta(one) <= d
                assert p.delta(one * (1 - 1e-6) - 1e-9) > d
            elif 0 < one < np.inf:
                assert p.delta(one) >= d
                assert p.delta(one * (1 + 1e-6) + 1e-9) <= d


@pytest.mark.slow
def test_coarsened_curve_brackets_dp_accounting(monkeypatch):
    """Many checkpoints of a short, fine-grid run: the gaps' blocks are coarsened (issue 28,
    curve_coarsening > 1); each checked checkpoint's interval still holds dp-accounting's
    epsilon and overlaps a single query's interval at that length."""
    import privamp.accountants.pld_run as pld_run

    factors = []
    real = pld_run.curve_coarsening

    def spy(blocks, ts):
        factors.append(real(blocks, ts))
        return factors[-1]

    monkeypatch.setattr(pld_run, "curve_coarsening", spy)
    q, sigma, T = 0.1, 1.0, 200
    g = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T).epsilon_curve(1e-5)
    assert g.upper.value.shape == (100,) and max(factors) > 1
    for i, t in [(0, 2), (99, 200)]:
        ref = _dpa_pld(q, sigma, t, 1e-5)
        assert g.lower.value[i] <= ref <= g.upper.value[i] * (1 + 1e-5)  # (dpa: 1e-4 grid)
        assert g.upper.value[i] - g.lower.value[i] <= 1e-5 * g.upper.value[i]
        one = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=t).epsilon(1e-5)
        assert g.lower.value[i] <= one.upper.value and one.lower.value <= g.upper.value[i]
    assert np.all(np.diff(g.upper.value) > 0) and np.all(np.diff(g.lower.value) >= 0)


@pytest.mark.slow
def test_curve_asks_tiny_delta_lower_accountant_only_where_it_answers(monkeypatch):
    """The threshold test (lower bounds at deltas below 1e-7 only, for one record) gives no
    bound for the whole run at delta 1e-5: the curve asks it once, not at every checkpoint;
    at 1e-9 it answers and is asked at each checkpoint.  Both curves bracket dp-accounting."""
    from privamp.theorems import threshold_test

    calls = []
    real = threshold_test.ThresholdTestAnalysis.epsilon
    monkeypatch.setattr(threshold_test.ThresholdTestAnalysis, "epsilon",
                        lambda self, d: calls.append(self.steps) or real(self, d))
    q, sigma, steps = 0.01, 1.0, [50, 100, 200]
    for delta, least in [(1e-5, 1), (1e-9, 4)]:
        calls.clear()
        run = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=200)
        g = run.epsilon_curve(delta, steps)
        assert len(calls) == least if delta == 1e-5 else len(calls) >= least
        for i, t in enumerate(steps):
            ref = _dpa_pld(q, sigma, t, delta)
            assert g.lower.value[i] <= ref <= g.upper.value[i] * (1 + 1e-5)  # (dpa: 1e-4 grid)


def test_many_checkpoints_stay_tight():
    """1000 checkpoints (the ends of 1000 epochs): the blocks are not coarsened further than
    for 100, so every interval stays under 0.05% wide (1% when the window cap was divided by
    the checkpoints' number), and the last overlaps a single query's."""
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), epochs=1000)
    g = run.epsilon_curve(1e-5)
    assert g.upper.value.shape == (1000,)
    assert np.all(g.upper.value - g.lower.value <= 5e-4 * g.upper.value)
    one = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=100_000).epsilon(1e-5)
    assert g.lower.value[-1] <= one.upper.value and one.lower.value <= g.upper.value[-1]
