"""Issue 28, session 11: :func:`privamp.pld.discretise.discretise` releases its grid-length
arrays as they die (connect-the-dots in chunks, the optimistic construction in stages:
:func:`~privamp.pld.binning.chord_tents`, ``chord_values``, ``chord_slopes``,
``convex_masses``).  Checked against the one-pass form it replaced (commit ead80cf, copied
here verbatim as the reference): bit-identical PLDs (masses, offsets, inf masses, slacks)
on mixtures of the Gaussian and Laplace pairs at the rates of the session-10 check settings,
their swaps, a plain pair, one-sided and sparse-tail calls; and the traced peak of one
discretisation stays about a dozen grid-length arrays (it was ~33)."""

from __future__ import annotations

import importlib
import math
import tracemalloc

import numpy as np
import pytest
from scipy.optimize import isotonic_regression

from privamp.pairs.combinators import MixturePair, SwappedPair
from privamp.pairs.mechanism_pairs import GaussianPair, LaplacePair
from privamp.pld import binning
from privamp.pld.budget import MAX_LOSS
from privamp.pld.discretise import discretise
from privamp.pld.grid import PLD, strip, with_float_allowance

_U = float(np.finfo(float).eps) / 2.0
_Q_NORMAL = 1e-290


# -- the reference (ead80cf, verbatim but for the names) -------------------------------------
def ref_optimistic_masses(l, a, dlt, qb, e, qgt, q_ge):
    K = len(l) - 1
    qge0 = float(q_ge(0))
    m = np.negative(qgt[1:])
    m -= e
    A = qb - e
    with np.errstate(invalid="ignore", divide="ignore"):
        pos = qb > 0
        everywhere = bool(pos.all())
        safe = qb if everywhere else np.where(pos, qb, 1.0)
        g = dlt * A
        g *= e
        g /= safe
        t = e / safe
        if not everywhere:
            np.copyto(g, 0.0, where=~pos)
            np.copyto(t, 0.5, where=~pos)
        np.clip(t, 0.0, 1.0, out=t)
    w = np.zeros(K + 1)
    down = np.negative(m)
    down *= dlt
    w[:K] = binning.suffix_sums(down)
    mu = binning.vertex_lowering(g, t, cap=w)
    v = w - mu
    nonpos = np.nonzero(v[1:] <= 0)[0]
    kend = int(nonpos[0]) + 1 if len(nonpos) else K
    s = mu[1 : kend + 1] - mu[:kend]
    s /= dlt[:kend]
    np.subtract(m[:kend], s, out=s)
    q_at = float(q_ge(kend))
    v_last = min(float(v[kend - 1]), q_at * float(dlt[kend - 1]))
    v_last = max(v_last, 0.0)
    s[kend - 1] = -v_last / dlt[kend - 1]
    if kend >= 2:
        s[kend - 2] = (v_last - v[kend - 2]) / dlt[kend - 2]
    slopes = np.concatenate(([-qge0], s))
    weights = np.concatenate(([a[0]], dlt[:kend]))
    fit = isotonic_regression(slopes, weights=weights, increasing=True).x
    fit = np.minimum(fit, 0.0)
    inc = np.empty(len(fit))
    np.subtract(fit[1:], fit[:-1], out=inc[:-1])
    if len(fit):
        inc[-1] = 0.0 - fit[-1]
    runs = np.flatnonzero(inc[:-1] != 0.0)
    q = np.maximum(inc, 0.0, out=inc)
    out = np.zeros(K + 1)
    np.multiply(a[: kend + 1], q, out=out[: kend + 1])
    m = int(np.max(np.diff(np.concatenate(([-1], runs, [len(fit) - 1]))))) if len(fit) else 1
    out *= 1.0 - 4.0 * (m + 2) * _U
    return out


def ref_grid(pair, h, tail):
    lo, hi = pair.loss_range(tail)
    lo = min(max(lo, -MAX_LOSS), MAX_LOSS)
    hi = min(max(hi, lo), MAX_LOSS)
    i_lo = math.floor(lo / h) - 1
    i_hi = max(math.ceil(hi / h), i_lo + 1)
    return i_lo, np.arange(i_lo, i_hi + 1) * h


def ref_sparse_points(pair, l, k):
    coarse = np.arange(0, len(l), k)
    tv = float(np.asarray(pair.delta(0.0)))
    tails = pair.tail(l[coarse], "P", True, True)
    below = np.nonzero(tails <= 0.1 * tv)[0]
    if not len(below) or tv <= 0:
        return np.arange(len(l))
    j = int(coarse[below[0]])
    idx = np.concatenate((np.arange(j), np.arange(j, len(l), k)))
    return idx if idx[-1] == len(l) - 1 else np.append(idx, len(l) - 1)


def ref_discretise(pair, h, tail=1e-16, optimistic=True, rho_max=1e-10, pessimistic=True,
                   sparse_tail=1):
    i_lo, l = ref_grid(pair, h, tail)
    at = ref_sparse_points(pair, l, sparse_tail) if sparse_tail > 1 else None
    full = len(l)
    if at is not None:
        l = l[at]
    a = np.exp(l)
    split = pair.split_bin_masses(l) if isinstance(pair, MixturePair) else None
    q_gt = None
    if split is not None:
        pm_all, qm_all, base_p, acc, q_gt = split
        p_above = binning.suffix_sums(pm_all)
        errs = binning.split_tail_errors(pm_all, qm_all, base_p, l, pair.w, acc, p_above)
    else:
        pm_all, qm_all = pair.bin_masses(l)
        p_above = binning.suffix_sums(pm_all)
        errs = binning.tail_errors(pm_all, qm_all, a, p_above=p_above)
    pb, qb = pm_all[1:-1], qm_all[1:-1]
    dlt, e = binning.bin_split(pb, qb, a, h if at is None else np.diff(at) * h)

    def on_grid(m):
        if at is None:
            return m
        out = np.zeros(full)
        out[at] = m
        return out

    p = None
    if pessimistic:
        pess = np.zeros(len(a))
        low_part, high_part = a[:-1] * (qb - e), a[1:] * e
        low = qb < _Q_NORMAL
        if np.any(low):
            tail_p = p_above[1:-1]
            low_part[low] = 0.0
            high_part[low] = pb[low] * (1.0 + 1e-12) + 2.0 ** -50 * tail_p[low]
        pess[:-1] += low_part
        pess[1:] += high_part
        pess[0] += pm_all[0]
        p = strip(with_float_allowance(h, i_lo, on_grid(pess), float(pm_all[-1]),
                                       "pessimistic", errs, rho_max, at=at))
    if not optimistic:
        return p, None
    o = ref_optimistic_masses(l, a, dlt, qb, e,
                              pair.tail(l, "Q", True, True) if q_gt is None else q_gt,
                              lambda i: pair.tail(l[i : i + 1], "Q", True, False)[0])
    opt = with_float_allowance(h, i_lo, on_grid(o), pair.p_inf, "optimistic", 2.0 * errs,
                               rho_max, at=at)
    return p, strip(opt)


def same(x: PLD | None, y: PLD | None) -> bool:
    if x is None or y is None:
        return x is None and y is None
    return (x.masses.tobytes() == y.masses.tobytes() and x.offset == y.offset
            and repr(x.inf_mass) == repr(y.inf_mass) and repr(x.slack) == repr(y.slack)
            and x.kind == y.kind and x.h == y.h)


# sigma, q of the session-10 check settings (benchmarks/results/floor_session10.md)
_RATES = [(1.1, 256 / 60000), (0.5, 1e-4), (0.5, 1e-3), (0.8, 0.01), (1.0, 0.1), (1.0, 1e-4),
          (2.0, 0.01), (4.0, 0.1), (4.0, 1e-3), (1.5, 0.05), (0.7, 0.003), (3.0, 1e-4),
          (1.0, 0.02), (0.6, 0.02), (1.2, 1e-3), (0.9, 0.1), (2.5, 0.004), (0.3, 1e-5)]


@pytest.mark.parametrize("sigma,q", _RATES)
def test_mixtures_bit_identical(sigma: float, q: float) -> None:
    pair = MixturePair(GaussianPair(1.0 / sigma), q)
    for pp, h in ((pair, 2e-3), (SwappedPair(pair), 4e-3)):
        assert all(map(same, discretise(pp, h, 1e-20), ref_discretise(pp, h, 1e-20)))


@pytest.mark.parametrize("pair", [MixturePair(LaplacePair(0.5), 0.01), GaussianPair(0.7),
                                  SwappedPair(MixturePair(LaplacePair(2.0), 0.3))],
                         ids=["laplace-mix", "gauss", "laplace-swap"])
def test_other_pairs_and_options_bit_identical(pair) -> None:
    h = 1e-3
    for kw in ({}, {"optimistic": False}, {"pessimistic": False}, {"sparse_tail": 4},
               {"rho_max": 1e-7, "tail": 1e-12}):
        assert all(map(same, discretise(pair, h, **kw), ref_discretise(pair, h, **kw))), kw


def test_sparse_tail_mixture_bit_identical() -> None:
    pair = MixturePair(GaussianPair(2.0), 1e-3)
    for k in (2, 8):
        got, ref = discretise(pair, 1e-3, sparse_tail=k), ref_discretise(pair, 1e-3,
                                                                          sparse_tail=k)
        assert all(map(same, got, ref))


def test_staged_optimistic_masses_bit_identical() -> None:
    """The wrapper (used by the grid's query tables) on random chords, zeros included."""
    rng = np.random.default_rng(5)
    for K in (1, 2, 7, 300, 5000):
        l = np.sort(rng.uniform(-2, 6, K + 1))
        a = np.exp(l)
        qb = rng.exponential(1.0, K) * (rng.random(K) > 0.1)
        qb /= max(qb.sum(), 1.0) * 1.01
        qgt = np.concatenate((binning.suffix_sums(qb), [0.0]))
        pb = qb * np.exp(l[:-1] + rng.uniform(0, 1, K) * np.diff(l))
        dlt, e = binning.bin_split(pb, qb, a, np.diff(l))
        got = binning.optimistic_masses(l, a, dlt, qb, e, qgt, qgt.__getitem__)
        ref = ref_optimistic_masses(l, a, dlt, qb, e, qgt, qgt.__getitem__)
        assert got.tobytes() == ref.tobytes()


def test_traced_peak_about_a_dozen_arrays() -> None:
    """One discretisation on a 310k-point grid (above the 2^18 points up to which the mixture
    keeps its edge tails): peak traced memory under 14 grid-length float arrays (the
    one-pass form held ~33)."""
    pair = MixturePair(GaussianPair(1.0 / 0.5), 1e-4)
    h = 3e-5
    K = len(ref_grid(pair, h, 1e-20)[1])
    assert K > 1 << 18
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        discretise(pair, h, 1e-20)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak < 14 * 8 * K, peak / (8 * K)


@pytest.mark.parametrize("pair", [MixturePair(GaussianPair(70.0), 0.01), GaussianPair(40.0)],
                         ids=["mix-clip", "gauss-clip"])
def test_subnormal_bins_bit_identical(pair, monkeypatch) -> None:
    """Grids reaching the 700 clip, where many bins' Q-masses are below 1e-290 (the
    connect-the-dots special case, review27), in chunks of 777 bins (boundaries inside and
    across the subnormal region)."""
    monkeypatch.setattr(importlib.import_module("privamp.pld.discretise"), "_CTD_CHUNK", 777)
    assert all(map(same, discretise(pair, 0.05), ref_discretise(pair, 0.05)))
    assert all(map(same, discretise(pair, 0.01, sparse_tail=3),
                   ref_discretise(pair, 0.01, sparse_tail=3)))


@pytest.mark.slow  # (~5 s: a T = 1e7 query in a fresh interpreter)
def test_t1e7_sigma_half_rate_1e4_extra_peak_under_100_mib():
    """Issue 28: sigma 0.5, q 1e-4, T 1e7 (a 462k-point single-step grid) peaked at 108-113
    MiB above the warm-up, in the discretisation; now ~35 MiB (benchmarks/results/
    memory_disc_session11.md).  The answer lies above one step's exact epsilon (mpmath)."""
    import sys
    from pathlib import Path

    import mpmath as mp

    sys.path.insert(0, str(Path(__file__).parent))
    from memory_child import run_child
    from test_memory_peaks import one_step_epsilon

    out, _ = run_child(
        "status = lambda k: next(int(v.split()[1]) for v in open('/proc/self/status')"
        " if v.startswith(k + ':')) / 1024.0\n"
        "pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=100).epsilon(1e-5)\n"
        "base = status('VmRSS')\n"
        "g = pa.Training(pa.Gaussian(0.5), pa.Poisson(1e-4), steps=10**7).epsilon(1e-5)\n"
        "out = {'extra': status('VmHWM') - base, 'up': g.upper.value,\n"
        "       'lo': None if g.lower is None else g.lower.value}\n")
    assert out["extra"] < 100.0, f"extra peak {out['extra']:.0f} MiB"
    mp.mp.dps = 30
    assert mp.mpf(out["up"]) >= one_step_epsilon(1e-5, 2.0, 1e-4)
    assert out["lo"] is None or out["lo"] <= out["up"]
