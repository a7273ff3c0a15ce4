"""Issue 28, session 11: the discretisation's numpy passes cut (in place arithmetic, the
switch point of :func:`tail_side` from prefix sums up to it, the mixture's tails from the
kept edge tails) against the forms they replaced (commit 8a67b19, copied here verbatim as
the reference): bit-identical on random inputs with zeros, ties, tiny and huge values, and
on the grids of real queries, so every certified bound is unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from privamp.pairs.combinators import MixturePair, SwappedPair
from privamp.pairs.mechanism_pairs import GaussianPair, LaplacePair
from privamp.pld import binning

_U = float(np.finfo(float).eps) / 2.0


# -- the references (8a67b19) ----------------------------------------------------------------
def ref_tail_side(m: np.ndarray) -> np.ndarray:
    inner = m[1:-1]
    above = np.cumsum(m[::-1])[::-1][1:]
    tot = float(m.sum())
    below = np.concatenate(([m[0]], m[0] + np.cumsum(inner)))
    return np.where(above <= below, above, tot + above)


def ref_tail_errors(pm, qm, a, ulps=4.0):
    return 6.0 * ulps * _U * (ref_tail_side(pm) + a * ref_tail_side(qm)) + 1e-300


def ref_split_tail_errors(pm, qm, pb, l, w, acc):
    em = np.expm1(l)
    c = np.abs(em + w) * (1.0 + 4.0 * _U) + 4.0 * _U * np.abs(em)
    above = np.cumsum(pm[::-1])[::-1][1:] * (1.0 + 2.0 * len(pm) * _U)
    r = 3.0 * np.maximum(acc, 4.0 * _U) + _U
    top_q, top_p = float(acc[-1]) * qm[-1], float(acc[-1]) * pb[-1]
    eta = r * (c * ref_tail_side(qm) + w * ref_tail_side(pb)) + c * top_q + w * top_p
    return 2.0 * eta + 8.0 * _U * above + 1e-300


def ref_relative_split(vertex, err, rho_max=1e-10):
    n = len(vertex)
    if n < 2:
        return 0.0, float(err.max()) if len(err) else 0.0
    e_seg = np.maximum(err[:-1], err[1:])
    g_low = np.maximum(vertex[1:] * (1.0 - 4.0 * n * _U) - err[1:], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(g_low > 0, e_seg / g_low, np.inf)
    rho = float(min(np.max(np.where(ratio <= rho_max, ratio, 0.0)), rho_max)) * (1.0 + 1e-6)
    s = float(np.max(np.maximum(e_seg - rho * g_low, 0.0)))
    return rho, s * (1.0 + 1e-6)


def ref_bin_split(pb, qb, a, h):
    em1 = np.expm1(h)
    return a[:-1] * em1, np.clip((pb / a[:-1] - qb) / em1, 0.0, qb)


def ref_gauss_tac(s, l, dist, upper):
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        z = l / s + (-s / 2 if dist == "P" else s / 2)
    az = np.abs(z)
    small = special.ndtr(-az)
    big = 1.0 - small
    mid = az < 1.0
    if mid.any():
        big[mid] = special.ndtr(az[mid])
    pos = z > 0
    up = np.where(pos, small, big)
    lo = np.where(pos, big, small)
    return (up, lo) if upper else (lo, up)


def ref_preimage(w, l):
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = np.expm1(l) + w
        out = np.log(np.where(x > 0, x, 1.0)) - np.log(w)
    return np.where(x > 0, out, -np.inf)


# -- inputs -----------------------------------------------------------------------------------
def masses(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    if kind == "bulk_low":  # switch near the bottom (small-rate remove direction)
        m = np.exp(-np.arange(n) / 7.0) * rng.random(n)
    elif kind == "bulk_high":  # switch near the top (its swap)
        m = np.exp(-np.arange(n)[::-1] / 7.0) * rng.random(n)
    elif kind == "zeros":
        m = rng.random(n) * (rng.random(n) < 0.3)
    elif kind == "ties":
        m = np.full(n, 0.125)
    else:  # wide range of magnitudes, subnormals included
        m = rng.random(n) * 10.0 ** rng.uniform(-320, 0, n)
    return m


KINDS = ["bulk_low", "bulk_high", "zeros", "ties", "wide"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 511, 513, 1537, 40_000])
def test_tail_side_bit_identical(kind: str, n: int) -> None:
    rng = np.random.default_rng(n)
    m = masses(rng, n, kind)
    assert np.array_equal(binning.tail_side(m), ref_tail_side(m))
    assert np.array_equal(binning.tail_side(m, binning.suffix_sums(m)), ref_tail_side(m))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -1e-3])
def test_tail_side_nonfinite_or_negative_as_before(bad: float) -> None:
    m = masses(np.random.default_rng(3), 2000, "bulk_low")
    m[700] = bad
    assert np.array_equal(binning.tail_side(m), ref_tail_side(m), equal_nan=True)


@pytest.mark.parametrize("kind", KINDS)
def test_error_bounds_bit_identical(kind: str) -> None:
    rng = np.random.default_rng(7)
    n = 3000
    pm, qm, pb = (masses(rng, n + 2, kind) for _ in range(3))
    l = np.arange(-5, n - 4) * 1e-3
    a = np.exp(l)
    acc = 4 * _U + rng.random(n + 1) * 1e-13
    w = 0.01
    assert np.array_equal(binning.tail_errors(pm, qm, a), ref_tail_errors(pm, qm, a))
    assert np.array_equal(binning.tail_errors(pm, qm, a, 7.0, binning.suffix_sums(pm)),
                          ref_tail_errors(pm, qm, a, 7.0))
    ref = ref_split_tail_errors(pm, qm, pb, l, w, acc)
    assert np.array_equal(binning.split_tail_errors(pm, qm, pb, l, w, acc), ref)
    assert np.array_equal(
        binning.split_tail_errors(pm, qm, pb, l, w, acc, binning.suffix_sums(pm)), ref)


@pytest.mark.parametrize("seed", range(6))
def test_relative_split_and_bin_split_bit_identical(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 2000
    vertex = np.sort(rng.random(n) * 10.0 ** rng.uniform(-30, 0, n))[::-1].copy()
    vertex[-50:] = 0.0
    err = rng.random(n) * 1e-16 + 1e-300
    for rho_max in (1e-10, 1e-6):
        assert binning.relative_split(vertex, err, rho_max) == ref_relative_split(
            vertex, err, rho_max)
    h = 1e-3
    a = np.exp(np.arange(n + 1) * h)
    qb = masses(rng, n, "zeros")
    pb = qb * a[:-1] * (1.0 + rng.random(n) * h)
    for step in (h, np.full(n, h)):
        got, ref = binning.bin_split(pb, qb, a, step), ref_bin_split(pb, qb, a, step)
        assert all(np.array_equal(x, y) for x, y in zip(got, ref, strict=True))


def test_gaussian_tails_bit_identical() -> None:
    rng = np.random.default_rng(11)
    l = np.concatenate((rng.normal(0, 3, 50_000), [0.0, -0.0, np.inf, -np.inf, np.nan],
                        np.linspace(-2, 2, 4001)))
    for s in (0.05, 0.9090909, 3.0):
        pair = GaussianPair(s)
        for dist in ("P", "Q"):
            for upper in (True, False):
                got = pair.tail_and_complement(l, dist, upper, True)
                ref = ref_gauss_tac(s, l, dist, upper)
                for x, y in zip(got, ref, strict=True):
                    assert np.array_equal(x, y, equal_nan=True)


@pytest.mark.parametrize("w", [0.004, 0.3])
def test_mixture_tails_bit_identical(w: float) -> None:
    """tail / tail_and_complement (plain, and from the kept edge tails in either order) and
    split_bin_masses against the base's reference tails at the reference preimages."""
    base = GaussianPair(0.9)
    h = 6e-5
    fine = np.arange(-80, 40_000) * h
    floor = np.log1p(-w)
    pair = MixturePair(base, w)
    fresh = MixturePair(base, w)
    got = pair.split_bin_masses(fine)
    assert got is not None
    l0 = ref_preimage(w, np.maximum(fine, floor))
    up_p, lo_p = ref_gauss_tac(0.9, l0, "P", True)
    up_q, lo_q = ref_gauss_tac(0.9, l0, "Q", True)
    assert np.array_equal(got[4], up_q)
    assert np.array_equal(got[2][1:-1], np.maximum(
        np.where(up_p[:-1] < lo_p[1:], up_p[:-1] - up_p[1:], lo_p[1:] - lo_p[:-1]), 0.0))
    pair.split_bin_masses(fine[::2] * 1.0)  # keep the grid j 2h
    coarse = np.arange(-20, 10_030) * (4 * h)  # its swap's grid, negated: partly outside
    swapped, swapped_fresh = SwappedPair(pair), SwappedPair(fresh)
    for x in (coarse, -coarse[::-1], fine[:3000], np.array([floor - 1.0, floor, 0.1])):
        for dist in ("P", "Q"):
            for upper in (True, False):
                for strict in (True, False):
                    a = pair.tail_and_complement(x, dist, upper, strict)
                    b = fresh.tail_and_complement(x, dist, upper, strict)
                    assert all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))
                    assert np.array_equal(pair.tail(x, dist, upper, strict), a[0])
                    c = swapped.tail_and_complement(x, dist, upper, strict)
                    d = swapped_fresh.tail_and_complement(x, dist, upper, strict)
                    assert all(np.array_equal(u, v) for u, v in zip(c, d, strict=True))
    # the reference mixture tail at the losses (no floor in this range)
    up_p, _ = ref_gauss_tac(0.9, ref_preimage(w, coarse), "P", True)
    up_q, _ = ref_gauss_tac(0.9, ref_preimage(w, coarse), "Q", True)
    assert np.array_equal(pair.tail(coarse, "P", True, True), w * up_p + (1.0 - w) * up_q)
    assert np.array_equal(swapped.bin_masses(coarse)[0], swapped_fresh.bin_masses(coarse)[0])


def test_non_gaussian_mixture_unchanged() -> None:
    """A Laplace base: no kept-edge lookup; tail equals tail_and_complement's first."""
    pair = MixturePair(LaplacePair(1.0), 0.1)
    x = np.linspace(-0.2, 1.2, 3001)
    pair.split_bin_masses(x)
    for dist in ("P", "Q"):
        a = pair.tail_and_complement(x, dist, True, False)
        assert np.array_equal(pair.tail(x, dist, True, False), a[0])
        assert np.array_equal(a[0], MixturePair(LaplacePair(1.0), 0.1).tail(
            x, dist, True, False))


@pytest.mark.parametrize("seed", range(40))
def test_tail_side_switch_at_a_tie(seed: int) -> None:
    """Masses whose mass above and below nearly tie at the switch (within a few ulp, so the
    bounds cannot decide and the exact prefix sums do), and spread ones."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 5000))
    m = rng.random(n) * (rng.random(n) < 0.5) if seed % 2 else np.full(n, 2.0 ** -int(
        rng.integers(1, 1070)))
    k = int(rng.integers(1, n - 1))
    m[k] = float(m[k + 1 :].sum() - m[:k].sum()) if seed % 3 == 0 else m[k]
    m = np.maximum(m, 0.0)
    assert np.array_equal(binning.tail_side(m), ref_tail_side(m))
