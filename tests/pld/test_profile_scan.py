"""PLD queries without kept tables (:mod:`privamp.pld.profile_scan`, issue 28).

* :class:`TableScan` against the whole tables (discounted_suffix and the reversed cumsum
  of the session-10 ``PLD._get_tables``, copied here): the same bits, for any chunk size;
* ``PLD.delta`` / ``PLD.epsilon`` through the scan against the whole-table path
  (``PLD._invert`` on ``PLD._get_tables()``, the session-10 algorithm): the same bits;
* delta(0) (the total variation distance of the grid pair) and epsilon(delta) against
  exact references: mpmath sums at 50 digits (and ``math.fsum``), bisection of the exact
  profile; pessimistic above, optimistic below, both within the query allowance;
* nothing of the grid's length stays on the PLD after a query, and a query's traced peak
  is a fraction of the masses' size.
"""

from __future__ import annotations

import math
import tracemalloc

import mpmath
import numpy as np
import pytest

from privamp.pld.grid import PLD
from privamp.pld.profile_scan import TableScan
from privamp.pld.tables import discounted_suffix


def whole_tables(m: np.ndarray, h: float, up: bool) -> tuple[np.ndarray, np.ndarray]:
    """R and G as the session-10 ``PLD._get_tables`` built them."""
    r = discounted_suffix(m, h, up)
    inc = -math.expm1(-h) * r
    g_up = np.zeros_like(m)
    if len(m) > 1:
        np.cumsum(inc[:0:-1], out=g_up[1:])
    return r, g_up[::-1]


def random_masses(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.random(n) ** 6
    m[rng.random(n) < 0.3] = 0.0
    return m / max(float(m.sum()), 1e-300)


@pytest.mark.parametrize("seed", range(12))
def test_scan_same_bits_as_whole_tables(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40000))
    h = float(rng.choice([1e-3, 0.01, 0.3, 1.0, 40.0]))
    m = random_masses(rng, n) * (1e-300 if seed % 4 == 0 else 1.0)  # subnormal products
    up = bool(seed % 2)
    r, g = whole_tables(m, h, up)
    chunk = int(rng.choice([1, 777, 4096, 1 << 16]))
    top = n
    for lo, rr, gg in TableScan(m, h, up).scan(chunk):
        assert lo + len(rr) == top and len(gg) == len(rr)
        assert np.array_equal(rr, r[lo:top]) and np.array_equal(gg, g[lo:top])
        top = lo
    assert top == 0


@pytest.mark.parametrize("seed", range(10))
def test_queries_same_bits_as_the_table_path(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 200000 if seed < 3 else 3000))
    h = float(rng.choice([1e-3, 0.01, 0.05, 0.3]))
    kind = "pessimistic" if seed % 2 else "optimistic"
    p = PLD(h, int(rng.integers(-n, n // 2 + 1)), random_masses(rng, n),
            float(rng.choice([0.0, 1e-9])), kind, float(rng.choice([0.0, 1e-12])))
    tables = p._get_tables()
    eps = np.concatenate(([0.0, 1.0], rng.random(6) * n * h / 2))
    assert np.array_equal(p.delta(eps), np.asarray(
        [q.delta(e) for q in [PLD(h, p.offset, p.masses, p.inf_mass, kind, p.slack)]
         for e in eps]))
    # the table path of _raw_delta (the session-10 one) against the scan
    assert np.array_equal(p._raw_delta(eps, tables), p._raw_delta(eps))
    for d in (1e-10, 1e-5, 1e-3, 0.1, 0.5):
        fresh = PLD(h, p.offset, p.masses, p.inf_mass, kind, p.slack)
        assert np.array_equal(fresh.epsilon(d), fresh._invert(np.asarray(d), tables)[0])
        assert np.array_equal(p.epsilon(d), fresh.epsilon(d))  # memo: the same answer
    ds = np.array([1e-7, 1e-4, 0.2])
    assert np.array_equal(p.epsilon(ds), [p.epsilon(d) for d in ds])


def exact_profile(p: PLD, eps: float) -> mpmath.mpf:
    """inf_mass + sum_{l_i > eps} p_i (1 - e^{eps - l_i}) at 50 digits (the grid losses as
    floats, as the PLD defines them)."""
    with mpmath.workdps(50):
        e = mpmath.mpf(eps)
        tot = mpmath.mpf(p.inf_mass)
        for mi, li in zip(p.masses.tolist(), p.losses.tolist(), strict=True):
            if li > eps and mi > 0:
                tot += mpmath.mpf(mi) * (1 - mpmath.exp(e - mpmath.mpf(li)))
        return tot


@pytest.mark.parametrize("seed", range(6))
def test_delta_zero_is_total_variation(seed: int) -> None:
    """delta(0) of a discrete pair = TV = sum_{l > 0} p (1 - e^{-l}): mpmath and math.fsum."""
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(2, 1500))
    h = float(rng.choice([0.01, 0.1, 0.7]))
    m = random_masses(rng, n)
    off = int(rng.integers(-n, 3))
    exact = exact_profile(PLD(h, off, m, 1e-6, "optimistic"), 0.0)
    losses = (off + np.arange(n)) * h
    fs = math.fsum(float(mi) * -math.expm1(-li) for mi, li in zip(m, losses, strict=True)
                   if li > 0) + 1e-6
    assert abs(fs - float(exact)) <= 1e-14 * float(exact)
    up = float(PLD(h, off, m, 1e-6, "pessimistic", 1e-13).delta(0.0))
    lo = float(PLD(h, off, m, 1e-6, "optimistic", 1e-13).delta(0.0))
    assert lo <= exact <= up
    assert up - float(exact) <= 2e-9 * float(exact) + 1e-13
    assert float(exact) - lo <= 2e-9 * float(exact) + 1e-13


@pytest.mark.parametrize("seed", range(4))
def test_epsilon_brackets_the_exact_inverse(seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    n = int(rng.integers(50, 800))
    h = 0.05
    m = random_masses(rng, n)
    off = int(rng.integers(-n // 2, 1))
    pess, opt = PLD(h, off, m, 0.0, "pessimistic"), PLD(h, off, m, 0.0, "optimistic")
    top = float(pess.losses[-1])
    for d in (1e-4, 1e-2):
        if exact_profile(pess, 0.0) <= d:
            continue
        a, b = 0.0, top  # bisection of the exact (nonincreasing) profile
        for _ in range(60):
            c = 0.5 * (a + b)
            a, b = (c, b) if exact_profile(pess, c) > d else (a, c)
        e_up, e_lo = float(pess.epsilon(d)), float(opt.epsilon(d))
        assert e_lo <= a <= b <= e_up
        assert e_up - e_lo <= 1e-6 * max(1.0, b)


def test_no_grid_arrays_kept_and_small_query_peak() -> None:
    rng = np.random.default_rng(5)
    n = 1 << 20
    m = rng.random(n)
    m /= m.sum()
    p = PLD(1e-4, -n // 2, m, 0.0, "pessimistic")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        up0 = p.delta(0.0)
        e = p.epsilon(1e-5)
        again = p.delta(np.zeros(1))
        cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert float(again[0]) == float(up0) and math.isfinite(float(e))
    assert cur - before < 64 * 1024  # a few memoised floats, no tables
    assert peak - before < m.nbytes / 4  # a chunk of the scan, not R and G (2 x 8 MiB)


@pytest.mark.parametrize("seed", range(8))
def test_resumed_chunks_in_any_order(seed: int) -> None:
    """Entries and crossings read in a random order from a scan of small chunks (states
    kept, chunks recomputed from them) against the whole tables."""
    rng = np.random.default_rng(400 + seed)
    n = int(rng.integers(1, 5000))
    h = float(rng.choice([0.01, 0.3, 2.0]))
    up = bool(seed % 2)
    m = random_masses(rng, n)
    r, g = whole_tables(m, h, up)
    scan = TableScan(m, h, up, chunk=int(rng.choice([1, 64, 1000])))
    for _ in range(20):
        want = rng.integers(0, n, int(rng.integers(0, 4)))
        target = float(rng.choice([0.0, 1e-9, 1e-4, 0.3, 2.0])) if rng.random() < 0.6 else None
        got, j = scan.values(want, target)
        for i in want.tolist():
            assert got[i] == (g[i], r[i])
        if target is not None:
            assert j == n - int(np.searchsorted(g[::-1], target, side="right"))
            jj = min(j, n - 1)
            assert got[jj] == (g[jj], r[jj])
