"""privamp.integrations.jax_privacy: jax_privacy 2.0's strategies and DP-SGD configurations as
privamp runs.  The law privamp claims for each strategy is checked on the batch indices
jax_privacy's own ``batch_iterator`` draws (exact structure on every draw, frequencies against
binomial confidence intervals over seeds); Poisson runs are compared with jax_privacy's own
accountant (dp_accounting's PLD, a peer library)."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pytest

import privamp as pa
from privamp.integrations import jax_privacy as J


def test_imports_without_jax():
    # privamp and the bridge import with jax_privacy made unimportable, and import no jax
    # (blocking jax itself by sys.modules['jax'] = None would break scipy's array-API checks)
    code = ("import sys; sys.modules['jax_privacy'] = None\n"
            "import privamp\n"
            "from privamp.integrations.jax_privacy import run_from_jax_privacy\n"
            "import privamp.integrations.jax_privacy as J\n"
            "print(sorted(m for m in sys.modules if m.startswith(('jax', 'jaxlib', 'optax'))\n"
            "             and sys.modules[m]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@dataclass(frozen=True)
class DPKerasConfig:  # a stand-in with jax_privacy.keras_api.DPKerasConfig's fields (no keras)
    batch_size: int
    train_size: int
    train_steps: int
    noise_multiplier: float | None = 1.0
    gradient_accumulation_steps: int = 1
    poisson_sampling_in_fit: bool = True


def test_keras_config_poisson_and_refusals():
    run = J.run_from_jax_privacy(DPKerasConfig(50, 1000, 200))
    assert run == pa.Training(pa.Gaussian(1.0), pa.Poisson(0.05), steps=200)
    with pytest.raises(pa.NotApplicable, match="poisson_sampling_in_fit=False"):
        J.run_from_jax_privacy(DPKerasConfig(50, 1000, 200, poisson_sampling_in_fit=False))
    with pytest.raises(pa.NotApplicable, match="more than once"):
        J.run_from_jax_privacy(DPKerasConfig(50, 1000, 200, gradient_accumulation_steps=4))
    with pytest.raises(ValueError, match="noise_multiplier"):
        J.run_from_jax_privacy(DPKerasConfig(50, 1000, 200, noise_multiplier=None))


def test_unknown_objects_refused():
    with pytest.raises(ValueError, match="jax_privacy batch-selection strategy"):
        J.run_from_jax_privacy(object(), noise_multiplier=1.0)
    with pytest.raises(ValueError, match="jax_privacy batch-selection strategy"):
        J.scheme_of_strategy("poisson")


# ------------------------------------------------------------------ with jax_privacy installed
try:
    from jax_privacy import batch_selection as bs
    from jax_privacy.accounting import accountants as jp_accountants
    from jax_privacy.accounting import analysis as jp_analysis
    from jax_privacy.experimental import execution_plan as jp_plan
except ImportError:  # pragma: no cover - exercised only without jax_privacy
    bs = jp_accountants = jp_analysis = jp_plan = None

needs_jp = pytest.mark.skipif(bs is None, reason="jax_privacy not installed "
                              "(pip install jax-privacy jax[cpu])")
IND = EQ = None
if bs is not None:
    IND, EQ = bs.PartitionType.INDEPENDENT, bs.PartitionType.EQUAL_SPLIT
N = 22


@needs_jp
@pytest.mark.parametrize("strategy,scheme", [
    (lambda: bs.CyclicPoissonSampling(0.1, 10), pa.Poisson(0.1)),
    (lambda: bs.CyclicPoissonSampling(0.1, 10, partition_type=IND), pa.Poisson(0.1)),
    (lambda: bs.CyclicPoissonSampling(0.1, 10, truncated_batch_size=5),
     pa.TruncatedPoisson(0.1, 5, N)),
    (lambda: bs.CyclicPoissonSampling(1.0, 10, cycle_length=4, partition_type=IND),
     pa.PersistentBallsInBins(4)),
    (lambda: bs.CyclicPoissonSampling(1.0, 10, cycle_length=4),
     pa.Shuffle(5, N, drop_last=True, persistent=True)),
    (lambda: bs.BallsInBinsSampling(10, 4), pa.PersistentBallsInBins(4)),
    (lambda: bs.FixedBatchSampling(5, 10), pa.WithoutReplacement(5, N)),
    (lambda: bs.FixedBatchSampling(5, 10, replace=True), pa.WithReplacement(5, N)),
    (lambda: bs.BMinSepSampling(1.0, 10, 4), pa.PersistentBallsInBins(4)),
    (lambda: bs.UserSelectionStrategy(bs.BallsInBinsSampling(10, 4), 2),
     pa.PersistentBallsInBins(4)),
    (lambda: bs.UserSelectionStrategy(bs.CyclicPoissonSampling(0.2, 10)), pa.Poisson(0.2)),
])
def test_mapping_of_every_strategy(strategy, scheme):
    strategy = strategy()
    assert J.scheme_of_strategy(strategy, N) == scheme
    assert J.steps_of_strategy(strategy) == 10
    run = J.run_from_jax_privacy(strategy, noise_multiplier=1.5, dataset_size=N,
                                 relation=pa.ZeroOut())
    assert run == pa.Training(pa.Gaussian(1.5), scheme, steps=10, relation=pa.ZeroOut())


@needs_jp
def test_balls_in_bins_is_not_fresh_bins_per_epoch():
    # the issue: jax_privacy's balls-in-bins is privamp's persistent scheme, never BallsInBins
    s = J.scheme_of_strategy(bs.BallsInBinsSampling(iterations=300, cycle_length=100))
    assert isinstance(s, pa.PersistentBallsInBins) and not isinstance(s, pa.BallsInBins)


@needs_jp
@pytest.mark.parametrize("strategy,match", [
    (lambda: bs.CyclicPoissonSampling(1.0, 8, cycle_length=8), "n mod k = 6"),  # 22 = 8 * 2 + 6
    (lambda: bs.BMinSepSampling(0.5, 8, 4), "Monte Carlo"),
    (lambda: bs.BMinSepSampling(1.0, 8, 4, warm_start=False), "Monte Carlo"),
])
def test_strategy_refusals(strategy, match):
    strategy = strategy()
    with pytest.raises(pa.NotApplicable, match=match):
        J.run_from_jax_privacy(strategy, noise_multiplier=1.0, dataset_size=N,
                               relation=pa.ZeroOut())


@needs_jp
def test_parameter_errors():
    with pytest.raises(ValueError, match="dataset_size is needed"):
        J.scheme_of_strategy(bs.FixedBatchSampling(5, 10))
    with pytest.raises(ValueError, match="dataset_size is needed"):
        J.scheme_of_strategy(bs.CyclicPoissonSampling(0.1, 10, truncated_batch_size=5))
    with pytest.raises(ValueError, match="noise_multiplier is needed"):
        J.run_from_jax_privacy(bs.BallsInBinsSampling(10, 4))
    with pytest.raises(ValueError, match="noise_multiplier must be in"):
        J.run_from_jax_privacy(bs.BallsInBinsSampling(10, 4), noise_multiplier=0.0)
    with pytest.raises(ValueError, match="sampling_prob must be in"):
        J.scheme_of_strategy(bs.CyclicPoissonSampling(0.0, 10))
    # EQUAL_SPLIT groups under add/remove: jax_privacy's own rule
    with pytest.raises(pa.NotApplicable, match="EQUAL_SPLIT is not an add/remove"):
        J.run_from_jax_privacy(bs.CyclicPoissonSampling(1.0, 8, cycle_length=4),
                               noise_multiplier=1.0, dataset_size=N)


# ------------------------------------------------ the law of jax_privacy's real batch indices
def _draw(strategy, n, seed):
    return [np.asarray(b, dtype=int) for b in strategy.batch_iterator(n, rng=seed)]


def _within(count: int, trials: int, p: float, z: float = 5.0) -> bool:
    """count is within z binomial standard deviations of trials * p."""
    return abs(count - trials * p) <= z * math.sqrt(trials * p * (1 - p)) + 1


@needs_jp
@pytest.mark.parametrize("strategy", [
    lambda: bs.BallsInBinsSampling(iterations=12, cycle_length=4),
    lambda: bs.CyclicPoissonSampling(1.0, 12, cycle_length=4, partition_type=IND),
    lambda: bs.BMinSepSampling(1.0, 12, 4),
])
def test_persistent_balls_in_bins_law(strategy):
    strategy = strategy()
    n, k, seeds = 15, 4, 400
    bins_of_0, same_bin_01 = np.zeros(k, int), 0
    for seed in range(seeds):
        batches = _draw(strategy, n, seed)
        assert len(batches) == 12
        bin_of = np.full(n, -1)
        for i, b in enumerate(batches):
            assert len(set(b.tolist())) == len(b)
            for x in b:
                # each example in exactly one bin per cycle, the same bin every cycle
                assert bin_of[x] in (-1, i % k)
                bin_of[x] = i % k
        for c in range(3):
            for j in range(k):
                assert sorted(batches[c * k + j]) == sorted(batches[j])
        assert (bin_of >= 0).all()
        bins_of_0[bin_of[0]] += 1
        same_bin_01 += int(bin_of[0] == bin_of[1])
    # the bin is uniform, and independent across examples (P(same bin) = 1/k)
    assert all(_within(c, seeds, 1 / k) for c in bins_of_0), bins_of_0
    assert _within(same_bin_01, seeds, 1 / k), same_bin_01


@needs_jp
def test_equal_split_is_a_persistent_shuffle():
    n, k, seeds = 22, 4, 400  # groups of 5, 2 examples never used
    strategy = bs.CyclicPoissonSampling(1.0, 8, cycle_length=k)
    scheme = J.scheme_of_strategy(strategy, n)
    left_out_0 = 0
    for seed in range(seeds):
        batches = _draw(strategy, n, seed)
        assert [len(b) for b in batches] == [scheme.batch_size] * 8
        used = np.concatenate(batches[:k])
        assert len(set(used.tolist())) == k * scheme.batch_size  # disjoint batches
        for j in range(k):
            assert sorted(batches[k + j]) == sorted(batches[j])  # kept for the run
        left_out_0 += int(0 not in used)
    assert _within(left_out_0, seeds, (n % k) / n)


@needs_jp
def test_poisson_law():
    n, p, t, seeds = 30, 0.2, 5, 200
    strategy = bs.CyclicPoissonSampling(p, t)
    hits = np.zeros(n, int)
    both = 0
    for seed in range(seeds):
        batches = _draw(strategy, n, seed)
        assert len(batches) == t
        members = [set(b.tolist()) for b in batches]
        for m in members:
            for x in m:
                hits[x] += 1
        both += int(0 in members[0] and 0 in members[1])
    assert all(_within(h, seeds * t, p) for h in hits)
    assert _within(both, seeds, p * p)  # independent across steps


@needs_jp
def test_truncated_poisson_caps_the_batch():
    n, p, m, seeds = 40, 0.3, 10, 400
    strategy = bs.CyclicPoissonSampling(p, 3, truncated_batch_size=m)
    scheme = J.scheme_of_strategy(strategy, n)
    assert scheme == pa.TruncatedPoisson(p, m, n)
    at_cap = 0
    for seed in range(seeds):
        sizes = [len(b) for b in _draw(strategy, n, seed)]
        assert max(sizes) <= m
        at_cap += int(sizes[0] == m)
    tail = sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(m, n + 1))
    assert _within(at_cap, seeds, tail)  # P(size = m) = P(Binomial(n, p) >= m)


@needs_jp
def test_fixed_batch_law():
    for replace, scheme_type in ((False, pa.WithoutReplacement), (True, pa.WithReplacement)):
        strategy = bs.FixedBatchSampling(6, 4, replace=replace)
        assert isinstance(J.scheme_of_strategy(strategy, 10), scheme_type)
        repeats = 0
        for seed in range(100):
            for b in _draw(strategy, 10, seed):
                assert len(b) == 6 and ((b >= 0) & (b < 10)).all()
                repeats += int(len(set(b.tolist())) < 6)
        assert (repeats > 0) == replace


@needs_jp
def test_user_selection_is_the_base_strategy_over_users():
    user_ids = np.repeat(np.arange(6), 3)  # 6 users, 3 examples each
    strategy = bs.UserSelectionStrategy(bs.BallsInBinsSampling(6, 3), 2)
    assert J.scheme_of_strategy(strategy, 6) == pa.PersistentBallsInBins(3)
    batches = list(strategy.batch_iterator(user_ids, rng=0))
    for i, b in enumerate(batches):
        users = [set(user_ids[row].tolist()) for row in b]
        assert all(len(u) == 1 for u in users)  # one user per row
        assert {u.pop() for u in users} == set(user_ids[batches[i % 3][:, 0]].tolist())


# ------------------------------------------------------ configurations and jax_privacy's numbers
DELTA = 1e-5


def _jax_privacy_epsilon(params, steps):
    acc = jp_analysis.DpsgdTrainingAccountant(jp_accountants.PldAccountantConfig())
    return acc.compute_epsilon(steps, params)


@needs_jp
@pytest.mark.parametrize("method,sigma", [("POISSON", 1.0), ("FIXED_BATCH_SIZE", 2.0)])
def test_dp_params_against_jax_privacy_accountant(method, sigma):
    params = jp_analysis.DpParams(noise_multipliers=sigma, num_samples=1000, delta=DELTA,
                                  batch_size=20,
                                  sampling_method=jp_analysis.SamplingMethod[method])
    run = J.run_from_jax_privacy(params, num_updates=100)
    scheme = pa.Poisson(0.02) if method == "POISSON" else pa.WithoutReplacement(20, 1000)
    rel = pa.AddRemove() if method == "POISSON" else pa.Substitution()
    assert run == pa.Training(pa.Gaussian(sigma, 2.0 if method != "POISSON" else 1.0), scheme,
                              steps=100, relation=rel)
    if method == "POISSON":
        g = run.epsilon(DELTA)
        ref = _jax_privacy_epsilon(params, 100)  # dp_accounting PLD, discretisation 1e-4
        assert g.lower.value - 1e-3 <= ref <= g.upper.value + 1e-3


@needs_jp
def test_dp_params_schedules_are_phases():
    params = jp_analysis.DpParams(noise_multipliers=[(0, 1.0), (40, 2.0)], num_samples=1000,
                                  delta=DELTA, batch_size=20, batch_size_scale_schedule={60: 2})
    runs = J.runs_from_dp_params(params, 100)
    assert [(r.mechanism.sigma, r.scheme, r.steps) for r in runs] == [
        (1.0, pa.Poisson(0.02), 40), (2.0, pa.Poisson(0.02), 20), (2.0, pa.Poisson(0.04), 40)]
    assert isinstance(J.run_from_jax_privacy(params, num_updates=100), pa.Composition)


@needs_jp
def test_dp_params_noise_schedule_against_jax_privacy_accountant():
    params = jp_analysis.DpParams(noise_multipliers=[(0, 1.0), (20, 2.0)], num_samples=1000,
                                  delta=DELTA, batch_size=20)
    g = J.run_from_jax_privacy(params, num_updates=40).epsilon(DELTA)
    ref = _jax_privacy_epsilon(params, 40)
    assert g.lower.value - 1e-3 <= ref <= g.upper.value + 1e-3


@needs_jp
@pytest.mark.parametrize("kwargs,match", [
    ({"cycle_length": 2}, "cycle_length=2 > 1"),
    ({"examples_per_user": 3}, "examples_per_user=3"),
    ({"is_finite_guarantee": False}, "is_finite_guarantee"),
])
def test_dp_params_refusals(kwargs, match):
    params = jp_analysis.DpParams(noise_multipliers=1.0, num_samples=1000, delta=DELTA,
                                  batch_size=20, **kwargs)
    with pytest.raises(pa.NotApplicable, match=match):
        J.run_from_jax_privacy(params, num_updates=100)


@needs_jp
def test_bandmf_one_band_is_dpsgd_and_matches_its_dp_event():
    import dp_accounting

    config = jp_plan.BandMFExecutionPlanConfig(iterations=60, strategy=[1.0], epsilon=None,
                                               delta=None, noise_multiplier=1.2,
                                               sampling_prob=0.05)
    run = J.run_from_jax_privacy(config)
    # jax_privacy's default relation REPLACE_SPECIAL is zero-out
    assert run == pa.Training(pa.Gaussian(1.2), pa.Poisson(0.05), steps=60,
                              relation=pa.ZeroOut())
    relation = dp_accounting.NeighboringRelation.REPLACE_SPECIAL
    assert J.run_from_jax_privacy(config.plan, relation=relation) == run
    with pytest.raises(ValueError, match="relation="):
        J.run_from_jax_privacy(config.plan)
    acc = dp_accounting.pld.PLDAccountant(relation)
    acc.compose(config.plan.dp_event)  # the plan's own event, dp_accounting's PLD
    g = run.epsilon(DELTA)
    assert g.lower.value - 1e-3 <= acc.get_epsilon(DELTA) <= g.upper.value + 1e-3


@needs_jp
@pytest.mark.slow
def test_bandmf_calibrated_noise_is_read_from_the_plan():
    config = jp_plan.BandMFExecutionPlanConfig(iterations=60, strategy=[1.0], epsilon=2.0,
                                               delta=DELTA, sampling_prob=0.05)
    run = J.run_from_jax_privacy(config)  # the noise jax_privacy calibrated to epsilon 2
    g = run.epsilon(DELTA)
    assert g.lower.value - 1e-3 <= 2.0 <= g.upper.value + 1e-3


@needs_jp
def test_bandmf_substitution_scales_the_noise_by_the_sensitivity():
    import dp_accounting

    config = jp_plan.BandMFExecutionPlanConfig(
        iterations=10, strategy=[1.0], epsilon=None, delta=None, noise_multiplier=1.5,
        sampling_prob=0.1, accountant=dp_accounting.pld.PLDAccountant(
            dp_accounting.NeighboringRelation.REPLACE_ONE))
    run = J.run_from_jax_privacy(config)
    # jax_privacy's plan: noise std = noise_multiplier * (2 C) under REPLACE_ONE
    assert run.mechanism == pa.Gaussian(3.0, 2.0) and run.relation == pa.Substitution()


def _numbers(run, delta=DELTA):
    return run.epsilon(delta)


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact epsilon of the Gaussian mechanism with mu = sensitivity / sigma (Balle & Wang
    2018, Thm 8), by bisection on delta(eps)."""
    from scipy.stats import norm

    def d(e):
        return norm.cdf(mu / 2 - e / mu) - math.exp(e) * norm.cdf(-mu / 2 - e / mu)

    lo, hi = 0.0, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if d(mid) > delta else (lo, mid)
    return hi


@needs_jp
def test_persistent_balls_in_bins_numbers():
    # E cycles of persistent balls-in-bins: each example in E steps, a Gaussian of sensitivity
    # sqrt(E) at most (no amplification): the certified lower bound cannot exceed it; one cycle
    # is the same law as privamp's BallsInBins for one epoch
    sigma, k, cycles = 1.0, 10, 3
    run = J.run_from_jax_privacy(bs.BallsInBinsSampling(k * cycles, k), noise_multiplier=sigma)
    g = _numbers(run)
    cap = _gaussian_epsilon(math.sqrt(cycles) / sigma, DELTA)
    assert g.lower is None or g.lower.value <= cap + 1e-9
    one = _numbers(J.run_from_jax_privacy(bs.BallsInBinsSampling(k, k),
                                                  noise_multiplier=sigma))
    ref = pa.Training(pa.Gaussian(sigma), pa.BallsInBins(k), steps=k).epsilon(DELTA)
    assert one.upper.value >= ref.lower.value - 1e-6
    assert ref.upper.value >= one.lower.value - 1e-6


@needs_jp
def test_truncated_poisson_numbers_against_jax_privacy_accountant():
    # jax_privacy accounts truncation with dp_accounting's TruncatedSubsampledGaussianDpEvent
    params = jp_analysis.DpParams(noise_multipliers=1.0, num_samples=200, delta=DELTA,
                                  batch_size=20, truncated_batch_size=22)
    run = J.run_from_jax_privacy(params, num_updates=30)
    assert run == pa.Training(pa.Gaussian(1.0), pa.TruncatedPoisson(0.1, 22, 200), steps=30)
    g = _numbers(run)
    ref = _jax_privacy_epsilon(params, 30)
    assert g.lower is None or g.lower.value - 1e-3 <= ref


@pytest.mark.slow
def test_example_runs_without_jax():
    code = ("import sys, runpy; sys.modules['jax_privacy'] = None\n"
            "sys.argv = ['x', '--n', '200', '--batch', '20', '--epochs', '2']\n"
            "runpy.run_path('examples/jax_privacy_run.py', run_name='__main__')")
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=root)
    assert out.returncode == 0, out.stderr
    assert "stand-ins" in out.stdout and "PersistentBallsInBins(batches=10)" in out.stdout
    assert out.stdout.count("epoch 2: epsilon in [") >= 2
