"""The participation bound (issue 27): each record takes part in at most m releases, so the
unsampled m-fold composition is an upper bound.  References: mpmath closed forms, exact
binomial enumeration, brute-force participation counts."""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.accountants.participation import ParticipationAnalysis

SRC = "each record takes part in at most"


def mp_gauss_delta(eps: float, s: float) -> mp.mpf:
    """Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s) in 50 digits."""
    with mp.workdps(50):
        e, s = mp.mpf(eps), mp.mpf(s)
        return mp.ncdf(s / 2 - e / s) - mp.e ** e * mp.ncdf(-s / 2 - e / s)


def mp_gauss_eps(delta: float, s: float) -> float:
    with mp.workdps(50):
        lo, hi = mp.mpf(0), mp.mpf(200)
        for _ in range(200):
            mid = (lo + hi) / 2
            if mp_gauss_delta(mid, s) > delta:
                lo = mid
            else:
                hi = mid
        return float(hi)


def test_issue_example_balanced_iteration_2_1():
    """Issue 27's row: BalancedIteration(2, 1), sigma 0.4: delta(0.1) <= 0.7780 (one
    Gaussian at shift 2.5), not 0.9957, and epsilon 13.21, not 13.48."""
    run = pa.Training(pa.Gaussian(0.4), pa.BalancedIteration(2, 1), steps=2)
    g = run.delta(0.1)
    ref = float(mp_gauss_delta(0.1, 2.5))
    assert abs(ref - 0.7780) < 5e-5
    assert ref <= g.upper.value <= ref * (1 + 1e-9)
    assert g.upper.kind == "upper" and SRC in g.upper.source
    e = run.epsilon(1e-5)
    ref_e = mp_gauss_eps(1e-5, 2.5)
    assert ref_e <= e.upper.value <= ref_e * (1 + 1e-9) + 1e-12
    assert abs(e.upper.value - 13.21) < 0.01


@pytest.mark.parametrize("steps,m", [(1, 1), (4, 2), (5, 3), (7, 4), (8, 4)])
def test_balanced_partial_epoch_gaussian(steps, m):
    """BalancedIteration(4, 2): 2 per epoch, min(2, r) in a partial epoch of r steps."""
    sch = pa.BalancedIteration(4, 2)
    assert sch.max_participations(steps) == m
    run = pa.Training(pa.Gaussian(0.7), sch, steps=steps)
    up, _ = run.delta(1.0, accountant="participation").upper, None
    s = math.sqrt(m) / 0.7
    ref = float(mp_gauss_delta(1.0, s))
    assert ref <= up.value <= ref * (1 + 1e-9)


def _brute_partitioned(n: int, b: int, drop_last: bool, steps: int) -> int:
    """The most batches any record is in, over the identity ordering (any ordering gives the
    same count per epoch position): consecutive batches of b, epoch after epoch."""
    per = n // b if drop_last else -(-n // b)
    counts = [0] * n
    for t in range(steps):
        j = t % per
        for i in range(j * b, min((j + 1) * b, n)):
            counts[i] += 1
    return max(counts)


@pytest.mark.parametrize("n,b,drop", [(10, 3, False), (10, 3, True), (9, 3, False), (7, 7, True)])
def test_partitioned_counts_by_enumeration(n, b, drop):
    for steps in range(1, 15):
        for cls in (pa.Deterministic, pa.Shuffle):
            assert cls(b, n, drop_last=drop).max_participations(steps) == \
                _brute_partitioned(n, b, drop, steps)


def test_balanced_counts_by_enumeration():
    """Every assignment of k of T slots per epoch, over all epochs: the most slots among
    the first `steps` steps."""
    for T, k in ((3, 1), (3, 2), (4, 2)):
        slots = list(itertools.combinations(range(T), k))
        for steps in range(1, 3 * T + 1):
            epochs = -(-steps // T)
            best = 0
            for choice in itertools.product(slots, repeat=epochs):
                c = sum(1 for e, sl in enumerate(choice) for j in sl if e * T + j < steps)
                best = max(best, c)
            assert pa.BalancedIteration(T, k).max_participations(steps) == best


def test_unbounded_schemes_say_none():
    assert pa.Poisson(0.1).max_participations(10) is None
    assert pa.WithReplacement(10, 100).max_participations(10) is None
    assert pa.TruncatedPoisson(0.1, 20, 1000).max_participations(10) is None
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.1), steps=10)
    with pytest.raises(pa.NotApplicable):
        run.epsilon(1e-5, accountant="participation")


def test_other_schemes_counts():
    assert pa.ModelSplit(4).max_participations(7) == 7
    assert pa.ModelSplit(4, 3).max_participations(7) == 21
    assert pa.Dropout().max_participations(3) == 3
    assert pa.WithoutReplacement(10, 100).max_participations(5) == 5
    assert pa.PersistentBallsInBins(4).max_participations(9) == 3
    assert pa.BallsInBins(4).max_participations(9) == 3
    with pytest.raises(ValueError, match="steps"):
        pa.BallsInBins(4).max_participations(0)


def _rr_exact_delta(theta: float, m: int, eps: float) -> mp.mpf:
    """delta(eps) of the m-fold product of (Bern(theta), Bern(1 - theta)): the loss is
    (2j - m) eps0 with j ~ Bin(m, theta) under P, Bin(m, 1 - theta) under Q."""
    with mp.workdps(40):
        t = mp.mpf(theta)
        total = mp.mpf(0)
        for j in range(m + 1):
            p = mp.binomial(m, j) * t ** j * (1 - t) ** (m - j)
            q = mp.binomial(m, j) * (1 - t) ** j * t ** (m - j)
            total += max(p - mp.e ** eps * q, 0)
        return total


@pytest.mark.parametrize("eps", [0.0, 0.5, 1.3, 2.0])
def test_randomized_response_by_enumeration(eps):
    """Deterministic(10, 100), 30 steps: 3 releases of RR(0.7); PLD upper bound above the
    exact binomial value and close to it."""
    run = pa.Training(pa.RandomizedResponse(0.7), pa.Deterministic(10, 100), steps=30)
    up = run.delta(eps, accountant="participation").upper.value
    ref = float(_rr_exact_delta(0.7, 3, eps))
    assert ref - 1e-15 <= up <= ref + 0.02


def test_laplace_pure_cap_and_monte_carlo():
    """Laplace(2), 3 releases: epsilon never above the pure-DP 3 * 0.5; delta(0.5) above a
    Monte Carlo estimate of the 3-fold profile (99.9% interval)."""
    run = pa.Training(pa.Laplace(2.0), pa.Shuffle(10, 100), steps=30)
    assert run.epsilon(1e-5).upper.value <= 1.5 * (1 + 1e-15)
    assert run.delta(1.5 + 1e-9).upper.value == 0.0
    rng = np.random.default_rng(3)
    n = 400_000
    e0 = 0.5
    x = rng.laplace(e0, 1.0, size=(n, 3))  # P = Lap(e0, 1)^3 (units of the scale)
    loss = np.sum(np.abs(x) - np.abs(x - e0), axis=1)
    vals = np.maximum(1 - np.exp(0.5 - loss), 0.0)  # E_P[(1 - e^{eps - L})_+]
    mc, se = vals.mean(), vals.std() / math.sqrt(n)
    up = run.delta(0.5, accountant="participation").upper.value
    assert up >= mc - 3.3 * se
    assert up <= mc + 3.3 * se + 0.01


def test_groups_and_hybrid_gaussian_shift():
    """Gaussian: a group of K scales the shift by K, hybrid substitution by 2; the group
    bound is at least Chua et al.'s exact deterministic value."""
    sch = pa.Deterministic(10, 100)
    g2 = pa.Training(pa.Gaussian(2.0), sch, steps=30, relation=pa.ZeroOut(group=2))
    up = g2.delta(1.0, accountant="participation").upper.value
    ref = float(mp_gauss_delta(1.0, 2 * math.sqrt(3) / 2.0))
    assert ref <= up <= ref * (1 + 1e-9)
    exact = g2.delta(1.0, accountant="ablq-deterministic").upper.value
    assert up >= exact * (1 - 1e-12)
    hy = pa.Training(pa.Gaussian(2.0), pa.BalancedIteration(3, 1), steps=3,
                     relation=pa.HybridSubstitution())
    up = hy.delta(1.0, accountant="participation").upper.value
    ref = float(mp_gauss_delta(1.0, 2 * 1 / 2.0))
    assert ref <= up <= ref * (1 + 1e-9)


def test_laplace_groups_refused():
    run = pa.Training(pa.Laplace(1.0), pa.Deterministic(10, 100), steps=10,
                      relation=pa.ZeroOut(group=2))
    with pytest.raises(pa.NotApplicable):
        run.epsilon(1e-5, accountant="participation")


RUNS = [
    pa.Training(pa.Gaussian(0.4), pa.BalancedIteration(2, 1), steps=2),
    pa.Training(pa.Gaussian(1.0), pa.BalancedIteration(4, 1), steps=8),
    pa.Training(pa.Gaussian(0.8), pa.Deterministic(10, 100), steps=30),
    pa.Training(pa.Gaussian(0.8), pa.Shuffle(10, 100), steps=30),
    pa.Training(pa.Gaussian(0.8), pa.Dropout(), steps=5),
    pa.Training(pa.Gaussian(1.0), pa.WithoutReplacement(10, 1000), steps=20,
                relation=pa.Substitution()),
]


def test_without_replacement_add_remove_refused():
    """Fixed-size batches under add/remove: the other records' batches change with the
    dataset's size, so the count of the record's releases is not the whole story."""
    run = pa.Training(pa.Gaussian(1.0), pa.WithoutReplacement(10, 1000), steps=20)
    with pytest.raises(pa.NotApplicable):
        run.epsilon(1e-5, accountant="participation")


@pytest.mark.parametrize("run", RUNS, ids=lambda r: type(r.scheme).__name__)
def test_best_never_looser_than_any_accountant(run):
    """"best" is at most every other accountant's upper bound and at least its lower bound,
    and at most the participation bound."""
    best = run.epsilon(1e-5)
    names = {name for name, _ in run.analysis("best")} | {"rdp"}
    for name in names:
        try:
            g = run.epsilon(1e-5, accountant=name)
        except pa.NotApplicable:
            continue
        if g.upper is not None:
            assert best.upper.value <= g.upper.value
        if g.lower is not None:
            assert best.lower is not None and best.lower.value >= g.lower.value


def test_compose_keeps_the_scheme_pld_and_its_lower_side():
    """compose uses the scheme's own two-sided PLD (Chua et al.'s exact deterministic one)
    where there is one: the participation PLD defers, so no lower bound is lost."""
    det = pa.Training(pa.Gaussian(0.8), pa.Deterministic(10, 100), steps=30)
    poi = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=100, relation=pa.ZeroOut())
    g = pa.compose(det, poi).epsilon(1e-5, accountant="pld")
    assert g.lower is not None and g.lower.value > 0
    assert "each record takes part" not in g.upper.source
    an = [a for n, a in det.analysis("best") if isinstance(a, ParticipationAnalysis)][0]
    with pytest.raises(pa.NotApplicable):
        an.pld()


def test_compose_model_split_as_pld():
    """Laplace dropout has no PLD of its own: the participation bound's joins a composition,
    sound (at least the participation bound of that phase alone) and labelled; and for a
    Gaussian dropout phase compose keeps the split PLD (its own lower side)."""
    drop = pa.Training(pa.Laplace(4.0), pa.Dropout(), steps=5)
    poi = pa.Training(pa.Laplace(2.0), pa.Poisson(0.01), steps=100)
    g = pa.compose(drop, poi).epsilon(1e-5, accountant="pld")
    assert "each record takes part" in g.upper.source
    alone = drop.epsilon(1e-5, accountant="participation").upper.value
    assert g.upper.value >= alone
    gdrop = pa.Training(pa.Gaussian(2.0), pa.Dropout(), steps=5)
    g = pa.compose(gdrop, pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=100)).epsilon(
        1e-5, accountant="pld")
    assert "each record takes part" not in g.upper.source and g.lower.value > 0


def test_refused_where_add_remove_shifts_the_layout():
    """Removing the first record of fixed-order batches moves every later record to another
    batch, so 'at most one release per epoch' does not bound add/remove neighbours (the
    shuffle soundness tests give the counterexample in closed form)."""
    for scheme in (pa.Deterministic(10, 100), pa.Shuffle(10, 100)):
        run = pa.Training(pa.Gaussian(1.0), scheme, steps=10, relation=pa.AddRemove())
        with pytest.raises(pa.NotApplicable):
            run.epsilon(1e-5, accountant="participation")
