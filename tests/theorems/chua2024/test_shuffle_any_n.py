"""Shuffled and deterministic batches for every (n, b): PyTorch's drop_last conventions,
fresh or persistent permutations, partial epochs (issue 25).

Independent references: the exact law of the differing record's batch by enumerating every
permutation of n <= 6 records; the eq. (7) masses of the witness in mpmath from that law; the
witness pair's hockey-stick divergence by quadrature (<= 2 released batches); the persistent
sufficient-statistic reduction by Monte Carlo on the full output with a confidence interval;
the Gaussian closed form in mpmath.
"""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.theorems.chua2024 import accountants as AC
from privamp.theorems.chua2024 import statistics as ST
from privamp.theorems.chua2024 import witness as W

# ------------------------------------------------------------------ enumeration references


def _batches(perm: tuple[int, ...], b: int, drop_last: bool) -> list[tuple[int, ...]]:
    """PyTorch's BatchSampler over an ordering: consecutive chunks of b, the last short one
    kept (drop_last=False) or dropped."""
    out = [perm[i:i + b] for i in range(0, len(perm), b)]
    if drop_last and len(out[-1]) < b:
        out = out[:-1]
    return out


def _enumerated_witness(n: int, b: int, drop_last: bool, persistent: bool, steps: int,
                        s: float) -> list[tuple[list[tuple[float, float]], float]]:
    """Per independent permutation block: (sorted (p_t, shift) of the released batches,
    sit-out probability), from every permutation of n records (record n - 1 differs).

    Persistent: one block; batch t released c_t times (steps j with j mod T = t) adds up to
    shift s sqrt(c_t).  Fresh: one block per epoch (whole, then the partial one)."""
    perms = list(itertools.permutations(range(n)))
    T = len(_batches(perms[0], b, drop_last))
    law = [0.0] * T
    out_mass = 0.0
    for perm in perms:
        where = [t for t, bt in enumerate(_batches(perm, b, drop_last)) if n - 1 in bt]
        if where:
            law[where[0]] += 1.0 / len(perms)
        else:
            out_mass += 1.0 / len(perms)
    counts = [sum(1 for j in range(steps) if j % T == t) for t in range(T)]

    def block(rel: list[int]) -> tuple[list[tuple[float, float]], float]:
        comps = [(law[t], s * math.sqrt(c)) for t, c in enumerate(rel) if c > 0]
        sit = out_mass + sum(law[t] for t, c in enumerate(rel) if c == 0)
        return sorted(comps), sit
    if persistent:
        return [block(counts)]
    E_f, m = divmod(steps, T)
    blocks = [block([1] * T) for _ in range(E_f)]
    if m:
        blocks.append(block([1 if t < m else 0 for t in range(T)]))
    return blocks


def _mp_count_mixture(blocks, s, eps) -> mp.mpf:
    """sum_k P(k) delta_Gauss(s sqrt(k)) (mpmath), k the record's releases: in each block
    c releases (shift s sqrt(c)) with probability p, none with the sit-out probability."""
    law = {0: mp.mpf(1)}
    for comps, sit in blocks:
        step = {0: mp.mpf(sit)}
        for p, mu in comps:
            c = int(round(float(mu / s) ** 2))
            step[c] = step.get(c, 0) + mp.mpf(p)
        new: dict = {}
        for k, a in law.items():
            for j, b in step.items():
                new[k + j] = new.get(k + j, 0) + a * b
        law = new

    def gd(mu):
        return mp.ncdf(mu / 2 - eps / mu) - mp.e ** eps * mp.ncdf(-mu / 2 - eps / mu)
    return sum(w * gd(s * mp.sqrt(k)) for k, w in law.items() if k > 0)


def _expand(w: W.Witness) -> tuple[list[tuple[float, float]], float]:
    return sorted((p, mu) for k, p, mu in w.classes for _ in range(k)), w.sitout


def _mp_eq7(comps: list[tuple[float, float]], sit: float, c: float, k: int) -> mp.mpf:
    """P(max >= c) of the mixture sit N(0, I) + sum_t p_t N(k mu_t e_t, I) in mpmath."""
    T = len(comps)
    F = mp.ncdf(c)
    below = sit * F ** T + sum(p * mp.ncdf(c - k * mu) * F ** (T - 1) for p, mu in comps)
    return 1 - below


LAYOUTS = [(n, b, dl) for n in range(2, 7) for b in range(1, n + 1) for dl in (False, True)
           if not (dl and n % b == 0)]


@pytest.mark.parametrize("n,b,drop_last", LAYOUTS)
@pytest.mark.parametrize("persistent", [False, True])
def test_witness_weights_match_enumeration(n, b, drop_last, persistent):
    sch = pa.Shuffle(b, n, drop_last=drop_last, persistent=persistent)
    T = sch.steps_per_epoch
    s = 0.8
    for steps in sorted({1, T, 2 * T, 2 * T + 1, 3 * T - 1} - {0}):
        ref = _enumerated_witness(n, b, drop_last, persistent, steps, s)
        w, E, extra = AC.shuffle_witnesses(sch, steps, s)
        mine = [_expand(w)] * E + ([_expand(extra)] if extra is not None else [])
        assert len(mine) == len(ref)
        for (cm, sm), (cr, sr) in zip(mine, ref, strict=True):
            assert sm == pytest.approx(sr, abs=1e-12)
            assert len(cm) == len(cr)
            for (pm, mm), (pr, mr) in zip(cm, cr, strict=True):
                assert pm == pytest.approx(pr, rel=1e-12) and mm == pytest.approx(mr, rel=1e-12)
            # eq. (7) masses of the witness against mpmath from the enumerated law
            blk = w if (cm, sm) == _expand(w) else extra
            for c in (0.3, 1.7, 3.2):
                lp, _, lq, _ = W.eq7_log_masses(np.array([c]), blk)
                assert math.exp(lp[0]) == pytest.approx(float(_mp_eq7(cr, sr, c, 2)), rel=1e-9)
                assert math.exp(lq[0]) == pytest.approx(float(_mp_eq7(cr, sr, c, 1)), rel=1e-9)


def _quad_delta(comps: list[tuple[float, float]], sit: float, eps: float) -> float:
    """max over directions of the hockey-stick divergence of the witness pair, by a fine
    grid quadrature (1 or 2 coordinates)."""
    T = len(comps)
    top = 9.0 + 2 * max(mu for _, mu in comps)
    x = np.linspace(-9.0, top, 2001 if T == 2 else 200001)
    dx = x[1] - x[0]
    grids = np.meshgrid(*([x] * T), indexing="ij")
    phi = [np.exp(-g * g / 2) / math.sqrt(2 * math.pi) for g in grids]

    def dens(k: int) -> np.ndarray:
        base = np.prod(phi, axis=0)
        out = sit * base
        for t, (p, mu) in enumerate(comps):
            g = grids[t]
            out = out + p * base * np.exp(k * mu * g - (k * mu) ** 2 / 2)
        return out
    P, Q = dens(2), dens(1)
    a = float(np.sum(np.maximum(P - math.exp(eps) * Q, 0.0))) * dx ** T
    b = float(np.sum(np.maximum(Q - math.exp(eps) * P, 0.0))) * dx ** T
    return max(a, b)


SMALL = [(3, 2, False), (5, 2, True), (4, 2, False), (5, 3, False), (5, 4, True), (6, 4, False)]


@pytest.mark.parametrize("n,b,drop_last", SMALL)
@pytest.mark.parametrize("persistent", [False, True])
def test_one_epoch_lower_below_quadrature_below_upper(n, b, drop_last, persistent):
    sigma, eps = 0.9, 0.5
    sch = pa.Shuffle(b, n, drop_last=drop_last, persistent=persistent)
    T = sch.steps_per_epoch
    for steps in (T, T + 1) if persistent else (T,):
        ref = _enumerated_witness(n, b, drop_last, persistent, steps, 1 / sigma)
        if len(ref) != 1 or len(ref[0][0]) > 2:
            continue
        truth = _quad_delta(*ref[0], eps)
        run = pa.Training(pa.Gaussian(sigma), sch, steps=steps, relation=pa.ZeroOut())
        g = run.delta(eps, accountant="ablq-shuffle")
        lo, up = float(g.lower.value), float(g.upper.value)
        assert 0 < lo <= truth + 1e-6
        assert truth <= up + 1e-6
        E_up = -(-steps // T)
        mp_up = mp.ncdf(mp.sqrt(E_up) / sigma / 2 - eps * sigma / mp.sqrt(E_up)) - mp.e ** eps \
            * mp.ncdf(-mp.sqrt(E_up) / sigma / 2 - eps * sigma / mp.sqrt(E_up))
        assert up <= float(mp_up) * (1 + 1e-9)  # never above Thm 4.1 at ceil(steps / T)
        # the count mixture, with the law of the releases from the enumeration
        mix = _mp_count_mixture(ref, 1 / mp.mpf(sigma), eps)
        assert up == pytest.approx(float(mix), rel=1e-9)


def test_persistent_sufficient_statistic_monte_carlo():
    """Persistent shuffle, n = 5, b = 3 (a short batch of 2), steps = 5 = 2 T + 1: the full
    5-dimensional witness output vs the 2-coordinate pair at shifts s sqrt(3), s sqrt(2)."""
    n, b, steps, sigma, eps = 5, 3, 5, 1.3, 0.4
    s = 1 / sigma
    T = 2
    p = [3 / 5, 2 / 5]
    batch_of_step = [j % T for j in range(steps)]
    rng = np.random.default_rng(7)
    N = 400_000

    def lr(y: np.ndarray, mu_num: float, mu_den: float) -> np.ndarray:
        def mix(mu):
            return sum(pt * np.exp(np.sum([mu * y[:, j] - mu * mu / 2 for j in range(steps)
                                           if batch_of_step[j] == t], axis=0))
                       for t, pt in enumerate(p))
        return mix(mu_num) / mix(mu_den)

    def sample(mu: float) -> np.ndarray:
        t = rng.choice(T, size=N, p=p)
        y = rng.standard_normal((N, steps))
        for j in range(steps):
            y[:, j] += mu * (t == batch_of_step[j])
        return y
    yq = sample(s)
    a = np.maximum(lr(yq, 2 * s, s) - math.exp(eps), 0.0)  # E_Q[(dP/dQ - e^eps)_+]
    yp = sample(2 * s)
    c = np.maximum(lr(yp, s, 2 * s) - math.exp(eps), 0.0)  # E_P[(dQ/dP - e^eps)_+]
    ref = _enumerated_witness(n, b, False, True, steps, s)[0]
    assert [mu for _, mu in ref[0]] == pytest.approx(sorted([s * math.sqrt(3), s * math.sqrt(2)]))
    quad = _quad_delta(*ref, eps)
    mc = max(a.mean(), c.mean())
    se = max(a.std(), c.std()) / math.sqrt(N)
    assert abs(mc - quad) <= 5 * se + 1e-4


# ------------------------------------------------------------------------ accountants
def _interval(sch, steps, sigma=1.0, delta=1e-5, rel=None):
    run = pa.Training(pa.Gaussian(sigma), sch, steps=steps,
                      relation=pa.ZeroOut() if rel is None else rel)
    acc = "ablq-shuffle" if isinstance(sch, pa.Shuffle) else "ablq-deterministic"
    g = run.epsilon(delta, accountant=acc)
    return float(g.lower.value), float(g.upper.value), g


@pytest.mark.parametrize("n", [60000, 50000])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("persistent", [False, True])
def test_mnist_cifar_answer(n, drop_last, persistent):
    sch = pa.Shuffle(256, n, drop_last=drop_last, persistent=persistent)
    T = sch.steps_per_epoch
    assert T == (n // 256 if drop_last else -(-n // 256))
    for steps in (T, 3 * T, 2 * T + T // 2):
        lo, up, g = _interval(sch, steps)
        assert 0 < lo < up
        if not sch.divisible:
            assert "|B_t|/n" in g.lower.source
    # a partial epoch: at least the whole epochs' lower bound, the next whole epoch's upper
    lo_p, up_p, _ = _interval(sch, 2 * T + T // 2)
    lo_2, up_2, _ = _interval(sch, 2 * T)
    _, up_3, _ = _interval(sch, 3 * T)
    assert lo_p >= lo_2 * (1 - 1e-9) and up_2 < up_p < up_3  # count mixture, partial epoch


def test_persistent_dominates_fresh_lower_and_one_epoch_equal():
    sch_f, sch_p = pa.Shuffle(10, 1000), pa.Shuffle(10, 1000, persistent=True)
    assert _interval(sch_p, 100)[:2] == _interval(sch_f, 100)[:2]
    lo_f, up_f, _ = _interval(sch_f, 300)
    lo_p, up_p, _ = _interval(sch_p, 300)
    assert up_p == up_f and lo_p > lo_f


@pytest.mark.parametrize("drop_last", [False, True])
def test_deterministic_any_n_exact_at_ceil(drop_last):
    sigma = 1.5
    sch = pa.Deterministic(7, 100, drop_last=drop_last)
    T = sch.steps_per_epoch
    for steps in (1, T, 2 * T + 3):
        run = pa.Training(pa.Gaussian(sigma), sch, steps=steps, relation=pa.ZeroOut())
        E_up = -(-steps // T)
        g = run.delta(1.0, accountant="ablq-deterministic")
        assert g.exact
        ref = mp.ncdf(mp.sqrt(E_up) / sigma / 2 - sigma / mp.sqrt(E_up)) - mp.e * \
            mp.ncdf(-mp.sqrt(E_up) / sigma / 2 - sigma / mp.sqrt(E_up))
        assert float(g.upper.value) == pytest.approx(float(ref), rel=1e-9)
    # groups over partial epochs: exact, against a brute-force placement maximum
    for K, steps in ((9, T + 1), (20, 2 * T + 2), (100, T + 3), (3, 1)):
        run = pa.Training(pa.Gaussian(sigma), sch, steps=steps, relation=pa.ZeroOut(K))
        g = run.delta(1.0, accountant="ablq-deterministic")
        assert g.exact
        ref_s = math.sqrt(_best_placement(K, sch, steps)) / sigma
        ref = float(AC.gauss_delta(np.array(1.0), ref_s, "nearest"))
        assert float(g.upper.value) == pytest.approx(ref, rel=1e-12)


def _best_placement(K: int, sch, steps: int) -> int:
    """max over placements of K records in the data (positions 0..n-1, batches cut in
    order) of sum_t releases_t * k_t^2, by dynamic programming over the batches."""
    n, b = sch.dataset_size, sch.batch_size
    sizes = [min(b, n - i) for i in range(0, n, b)]
    T = sch.steps_per_epoch  # with drop_last the short last batch (if any) is never released
    rel = [sum(1 for j in range(steps) if j % T == t) for t in range(len(sizes))]
    best = {0: 0}  # members placed so far -> best value
    for size, c in zip(sizes, rel, strict=True):
        new: dict[int, int] = {}
        for used, val in best.items():
            for k in range(0, min(size, K - used) + 1):
                v = val + c * k * k
                if new.get(used + k, -1) < v:
                    new[used + k] = v
        best = new
    return max(v for u, v in best.items() if u == min(K, n))


def test_add_remove_not_applicable_and_group_upper_only():
    # add/remove shifts the later batches: not the zero-out analysis of Chua et al. (Sec. 2)
    for sch in (pa.Shuffle(7, 100, drop_last=True), pa.Deterministic(10, 100)):
        run = pa.Training(pa.Gaussian(1.0), sch, steps=30, relation=pa.AddRemove())
        name = "ablq-shuffle" if isinstance(sch, pa.Shuffle) else "ablq-deterministic"
        with pytest.raises(pa.NotApplicable, match="zero-out neighbours.*relation=pa.ZeroOut"):
            run.epsilon(1e-5, accountant=name)
    lo, up, g = _interval(pa.Shuffle(7, 100, drop_last=True), 30, rel=pa.ZeroOut())
    run = pa.Training(pa.Gaussian(1.0), pa.Shuffle(7, 100), steps=30, relation=pa.ZeroOut(2))
    g2 = run.epsilon(1e-5, accountant="ablq-shuffle")
    assert g2.lower is None or float(g2.lower.value) <= float(g2.upper.value)
    assert float(g2.upper.value) > up


# ------------------------------------------------------------------------ PLD capability
def test_pld_capability_shuffle_and_deterministic():
    eps = np.array([0.5, 2.0])
    run = pa.Training(pa.Gaussian(0.9), pa.Shuffle(10, 1005, drop_last=False), steps=250,
                      relation=pa.ZeroOut())
    (_, an), = run.analysis("ablq-shuffle")
    h = an.grid_step()
    assert 0 < h < 0.1
    pld = an.pld()
    assert len(pld.directions) == 2
    up, lo = pld.delta(eps)
    # the count mixture: 2 whole epochs, then the record in the 48 released batches of 10
    blocks = [([(1.0, 1 / 0.9)], 0.0)] * 2 + [([(480 / 1005, 1 / 0.9)], 525 / 1005)]
    exact_up = np.array([float(_mp_count_mixture(blocks, 1 / mp.mpf(0.9), e)) for e in eps])
    assert np.all(up >= exact_up) and np.all(up <= exact_up * 1.01 + 1e-9)
    a_up, a_lo = an.delta(eps)
    assert np.all(lo > 0) and np.all(lo <= np.asarray(a_lo.value) * (1 + 1e-9))
    both = pld.compose(an.pld(h))  # two phases on one grid
    assert np.all(both.delta(eps)[1] >= lo)
    det = pa.Training(pa.Gaussian(0.9), pa.Deterministic(10, 1005), steps=250,
                      relation=pa.ZeroOut())
    (_, dn), = det.analysis("ablq-deterministic")
    up_d, lo_d = dn.pld(0.01).delta(eps)
    exact = np.asarray(dn.delta(eps)[0].value)
    assert np.all(lo_d <= exact) and np.all(exact <= up_d) and np.all(up_d <= exact * 1.01)


def test_count_law_with_a_partial_epoch_matches_mpmath():
    """K = #{epochs hitting E_c} over E whole epochs and one partial one: the binomial
    convolved with a Bernoulli, against the Poisson-binomial sum in mpmath."""
    sch = pa.Shuffle(3, 11)  # T = 4: three batches of 3, one of 2
    w, E, extra = AC.shuffle_witnesses(sch, 3 * 4 + 2, 1 / 0.8)
    assert E == 3 and extra is not None
    c = 1.9
    lP, lQ = W.count_log_pmfs(np.array([c]), w, E, extra)
    for k_fac, lk in ((2, lP[0]), (1, lQ[0])):
        cw, sw = _expand(w)
        cx, sx = _expand(extra)
        a = _mp_eq7(cw, sw, c, k_fac)
        ax = _mp_eq7(cx, sx, c, k_fac)
        for k in range(E + 2):
            ref = sum(mp.binomial(E, j) * a ** j * (1 - a) ** (E - j)
                      * (ax if k - j == 1 else 1 - ax) for j in range(E + 1) if k - j in (0, 1))
            assert math.exp(lk[k]) == pytest.approx(float(ref), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("sigma", [0.6, 1.0, 2.5])
def test_lower_below_upper_across_layouts(sigma):
    eps, delta = np.array([0.0, 0.5, 2.0, 6.0]), np.array([1e-8, 1e-5, 1e-2])
    for b, n, dl, per in [(7, 100, False, False), (7, 100, True, True), (32, 1000, True, False),
                          (1, 9, False, True), (9, 9, False, False)]:
        sch = pa.Shuffle(b, n, drop_last=dl, persistent=per)
        for steps in (1, sch.steps_per_epoch + 1, 3 * sch.steps_per_epoch):
            run = pa.Training(pa.Gaussian(sigma), sch, steps=steps, relation=pa.ZeroOut())
            for x, which in ((eps, "delta"), (delta, "epsilon")):
                g = getattr(run, which)(x, accountant="ablq-shuffle")
                lo, up = np.asarray(g.lower.value), np.asarray(g.upper.value)
                assert np.all(np.isfinite(up)) and np.all(lo >= 0) and np.all(lo <= up)


def test_far_tail_masses_keep_their_precision():
    """A large shift (persistent shuffle, 100 epochs): the max's upper tail under Q is ~1e-23;
    a log-CDF summed near 1 would round it to 0 and fake an infinite privacy loss.  Against
    mpmath at 50 digits, and a split (non-uniform) copy of (P_S, Q_S) against its closed
    form."""
    w, _, _ = AC.shuffle_witnesses(pa.Shuffle(256, 50000, persistent=True), 100 * 196, 1.0)
    comps, sit = _expand(w)
    with mp.workdps(50):
        for c in (12.0, 20.0, 25.0):
            lp, _, lq, _ = W.eq7_log_masses(np.array([c]), w)
            for k, l in ((2, lp[0]), (1, lq[0])):
                assert math.exp(l) == pytest.approx(float(_mp_eq7(comps, sit, c, k)), rel=1e-9)
    split = W.Witness(0.0, ((100, 1 / 235, 10.0), (135, 1 / 235, 10.0)))
    assert not split.uniform
    x = np.linspace(5.0, 28.0, 47)
    for a, b in zip(W.eq7_log_masses(x, split), W.eq7_log_masses(x, W.uniform_witness(10.0, 235)),
                    strict=True):
        assert np.allclose(a, b, rtol=1e-9, atol=0)
    e = np.array([60.0, 80.0, 95.0])
    d_split, d_uni = W.eq7_delta(e, split), W.eq7_delta(e, W.uniform_witness(10.0, 235))
    assert np.all(d_uni > 0) and np.allclose(d_split, d_uni, rtol=1e-6, atol=0)
    pair = ST.maxstat_pair(w)
    assert pair.p_inf < 1e-15


@pytest.mark.parametrize("b,n,drop_last,persistent,steps",
                         [(10, 1000, False, False, 1), (256, 60000, True, False, 1),
                          (99, 100, True, True, 3), (3, 7, False, True, 1)])
def test_one_released_batch_against_quadrature(b, n, drop_last, persistent, steps):
    """Witnesses with a single released batch (a first step; or T = 1 with a record out of
    every epoch): p_0 N(0) + p N(2 mu) vs p_0 N(0) + p N(mu), by 1-d quadrature."""
    sigma, eps = 0.5, 0.7
    sch = pa.Shuffle(b, n, drop_last=drop_last, persistent=persistent)
    ref = _enumerated_witness(n, b, drop_last, persistent, steps, 1 / sigma) if n <= 7 else \
        [([(b / n, math.sqrt(steps if persistent else 1) / sigma)], 1 - b / n)]
    w, E, extra = AC.shuffle_witnesses(sch, steps, 1 / sigma)
    assert extra is None and E == 1 and w.T == 1
    (cr, sr), = ref
    assert np.allclose(_expand(w)[0], cr, rtol=1e-12) and w.sitout == pytest.approx(sr)
    truth = _quad_delta(cr, sr, eps)
    g = pa.Training(pa.Gaussian(sigma), sch, steps=steps, relation=pa.ZeroOut()).delta(
        eps, accountant="ablq-shuffle")
    assert 0.5 * truth <= float(g.lower.value) <= truth + 1e-7 <= float(g.upper.value) + 2e-7


@pytest.mark.parametrize("n,b,drop_last,steps", [(5, 2, False, 7), (5, 2, True, 5)])
def test_fresh_epochs_with_partial_below_monte_carlo(n, b, drop_last, steps):
    """Fresh permutations over whole epochs and a partial one: the exact witness pair (the
    product of the enumerated per-epoch mixtures) by Monte Carlo; privamp's lower bound (count
    of epochs hitting E_c, composed max statistic) must lie below it, the upper above."""
    sigma, eps = 0.8, 0.6
    s = 1 / sigma
    blocks = _enumerated_witness(n, b, drop_last, False, steps, s)
    rng = np.random.default_rng(5)
    N = 400_000

    def draw_and_ratio(k_draw: int) -> np.ndarray:
        """log dP/dQ (k_draw = 1: samples from Q; 2: from P, then the ratio is dQ/dP)."""
        total = np.zeros(N)
        for comps, sit in blocks:
            T = len(comps)
            probs = [p for p, _ in comps] + [sit]
            which = rng.choice(T + 1, size=N, p=np.array(probs) / sum(probs))
            y = rng.standard_normal((N, T))
            for t, (_, mu) in enumerate(comps):
                y[:, t] += k_draw * mu * (which == t)

            dens = [sit + sum(p * np.exp(k * mu * y[:, t] - (k * mu) ** 2 / 2)
                              for t, (p, mu) in enumerate(comps)) for k in (2, 1)]
            total += np.log(dens[0]) - np.log(dens[1])  # densities relative to N(0, I)
        return total if k_draw == 1 else -total
    # bounded forms: H(P || Q) = E_P[(1 - e^eps dQ/dP)_+], H(Q || P) = E_Q[(1 - e^eps dP/dQ)_+]
    a = np.maximum(1.0 - math.exp(eps) * np.exp(draw_and_ratio(2)), 0.0)
    c = np.maximum(1.0 - math.exp(eps) * np.exp(draw_and_ratio(1)), 0.0)
    mc, se = max(a.mean(), c.mean()), max(a.std(), c.std()) / math.sqrt(N)
    run = pa.Training(pa.Gaussian(sigma), pa.Shuffle(b, n, drop_last=drop_last), steps=steps,
                      relation=pa.ZeroOut())
    g = run.delta(eps, accountant="ablq-shuffle")
    lo, up = float(g.lower.value), float(g.upper.value)
    assert lo <= mc + 5 * se and mc - 5 * se <= up
    assert lo >= 0.8 * mc  # not vacuous
