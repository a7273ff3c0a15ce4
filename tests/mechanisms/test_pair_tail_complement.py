"""LossPair.tail_and_complement (issue 28: one special-function pass for both tails).

References: the Gaussian tails Phi(-z), Phi(z) from mpmath at 50 digits (independent of
scipy), and the definition (the complement of ``L > l`` is ``L <= l``) against each pair's
own ``tail`` for pairs with atoms (the mixture's floor, a swapped mixture).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from privamp.pairs.combinators import MixturePair, SwappedPair
from privamp.pairs.mechanism_pairs import GaussianPair, LaplacePair

U = 2.0**-53


def _phi(z: float) -> float:
    with mpmath.workdps(50):
        return float(mpmath.ncdf(z))


@pytest.mark.parametrize("s", [0.05, 1.0, 3.0])
def test_gaussian_tails_match_mpmath(s):
    pair = GaussianPair(s)
    l = np.concatenate((np.linspace(-40, 40, 301), [-np.inf, np.inf, 0.0]))
    for dist, mean in (("P", s * s / 2), ("Q", -s * s / 2)):
        for upper in (True, False):
            t, c = pair.tail_and_complement(l, dist, upper, True)
            for li, ti, ci in zip(l, t, c, strict=True):
                z = (li - mean) / s if np.isfinite(li) else li
                up, lo = _phi(-z), _phi(z)
                want_t, want_c = (up, lo) if upper else (lo, up)
                # scipy's ndtr to a few ulp, plus the argument's rounding (|z| + 1) |dz|
                tol = 8 * U + (abs(z) + 1) * U * (2 * abs(li) / s + abs(z) + s) * 4 \
                    if np.isfinite(li) else 0.0
                assert abs(ti - want_t) <= tol * want_t + 1e-300
                assert abs(ci - want_c) <= tol * want_c + 1e-300


def test_gaussian_tails_bit_identical_to_ndtr():
    """The values are scipy's ndtr(-z) and ndtr(z) themselves (so the tails' accuracy
    allowances are unchanged), also around |z| = 1 where the two forms meet."""
    from scipy.special import ndtr

    rng = np.random.default_rng(0)
    z = np.concatenate((rng.uniform(-40, 40, 200_000), rng.uniform(-1.01, 1.01, 100_000),
                        [-1.0, 1.0, 0.0, -0.0, np.inf, -np.inf]))
    z = np.concatenate((z, np.nextafter(1.0, 0) * np.array([1, -1]), [1e-300, -1e-300]))
    pair = GaussianPair(1.0)
    l = z - 0.5  # Q's standardised argument is l / s + s / 2 = z
    up, lo = pair.tail_and_complement(l, "Q", True, True)
    zq = l / 1.0 + 0.5
    assert np.array_equal(up, ndtr(-zq)) and np.array_equal(lo, ndtr(zq))
    up0, lo0 = pair.tail_and_complement(np.float64(0.2), "P", False, True)  # 0-d
    assert float(up0) == ndtr(-0.3) and float(lo0) == ndtr(0.3)


@pytest.mark.parametrize("pair", [
    MixturePair(GaussianPair(1.0), 0.01),
    SwappedPair(MixturePair(GaussianPair(0.7), 0.2)),
    MixturePair(LaplacePair(1.5), 0.3),
    SwappedPair(MixturePair(LaplacePair(1.5), 0.3)),
])
def test_complement_is_the_other_tail(pair):
    l = np.concatenate((np.linspace(-5, 5, 41), [np.log1p(-0.3), np.log1p(-0.01), 1.5]))
    for dist in ("P", "Q"):
        for upper in (True, False):
            for strict in (True, False):
                t, c = pair.tail_and_complement(l, dist, upper, strict)
                direct_t = pair.tail(l, dist, upper, strict)
                direct_c = pair.tail(l, dist, not upper, not strict)
                np.testing.assert_allclose(t, direct_t, rtol=4 * U, atol=1e-300)
                np.testing.assert_allclose(c, direct_c, rtol=4 * U, atol=1e-300)
                np.testing.assert_allclose(t + c, 1.0, rtol=8 * U)


def _mix_tails(s: float, w: float, l: float) -> tuple[float, float]:
    """(P(L' > l), Q(L' < l)) of MixturePair(GaussianPair(s), w), from mpmath."""
    with mpmath.workdps(50):
        arg = (mpmath.exp(l) - 1 + w) / w
        if arg <= 0:  # at or below the floor log(1 - w): all of P and Q lies above
            return 1.0, 0.0
        x = mpmath.log(arg)  # the base loss
        p = w * mpmath.ncdf(s / 2 - x / s) + (1 - w) * mpmath.ncdf(-s / 2 - x / s)
        return float(p), float(mpmath.ncdf(x / s + s / 2))


@pytest.mark.parametrize("s,w", [(0.9, 256 / 60000), (0.25, 1e-3), (2.0, 0.1), (5.0, 0.5)])
@pytest.mark.parametrize("tail", [7e-18, 1e-12, 1e-6])
def test_mixture_loss_range_from_closed_form_starts(s, w, tail):
    """The narrow starts (issue 28) give the range the wide search's precision promises:
    P(L' > hi) <= tail < P(L' > hi - 1e-4), Q(L' < lo) <= tail < Q(L' < lo + 1e-4)."""
    pair = MixturePair(GaussianPair(s), w)
    assert pair.range_starts(tail) is not None
    lo, hi = pair.loss_range(tail)
    rel = 1e-9  # (mpmath at the float lo, hi: only the tails' own rounding)
    assert _mix_tails(s, w, hi)[0] <= tail * (1 + rel)
    assert _mix_tails(s, w, hi - 1e-4)[0] > tail
    assert _mix_tails(s, w, lo)[1] <= tail * (1 + rel)
    assert _mix_tails(s, w, lo + 1e-4)[1] > tail


@pytest.mark.parametrize("s,w", [(0.9, 256 / 60000), (2.0, 0.1)])
def test_swapped_loss_range_is_the_reflection(s, w):
    """SwappedPair's starts reflect the base's: its range is the base's reflected (the two
    searches solve the same equations), to the search's precision."""
    base = MixturePair(GaussianPair(s), w)
    pair = SwappedPair(MixturePair(GaussianPair(s), w))
    assert pair.range_starts(1e-16) is not None
    lo, hi = pair.loss_range(1e-16)
    blo, bhi = base.loss_range(1e-16)
    assert abs(lo + bhi) < 1e-4 and abs(hi + blo) < 1e-4


@pytest.mark.parametrize("k,shift", [(2, 0), (2, -3), (3, 1), (1, 5)])
def test_split_bin_masses_reuse_is_exact(k, shift):
    """A grid inside the previous one (the optimistic side on k h after the pessimistic on
    h) reuses its edge tails: the same floats as a fresh pair's (the reuse is only an
    optimisation, issue 28)."""
    s, w, h = 0.9, 256 / 60000, 2.7e-4
    used = MixturePair(GaussianPair(s), w)
    used.split_bin_masses(np.arange(-20, 9000) * h)
    coarse = np.arange(-20 // k + shift, 9000 // k + shift + 3) * (k * h)
    fresh = MixturePair(GaussianPair(s), w).split_bin_masses(coarse)
    again = used.split_bin_masses(coarse)
    assert fresh is not None and again is not None
    for a, b in zip(again, fresh, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("h,k", [(6e-5, 3), (1e-4, 3), (6e-5, 5)])
def test_split_bin_masses_partial_reuse_is_exact(h, k, monkeypatch):
    """The grid j (k h) inside j h rounds like (k j) h at most points but not all (k not a
    power of 2): the matching edges reuse their tails, the others are evaluated fresh, and
    every value is the float a fresh pair gives (session 12); the reuse does happen."""
    s, w = 1.0, 0.01
    used = MixturePair(GaussianPair(s), w)
    used.split_bin_masses(np.arange(-200, 30000) * h)
    coarse = np.arange(-200 // k, 30000 // k + 4) * (k * h)
    same = np.isin(coarse, np.arange(-200, 30000) * h)
    assert 0.5 < same.mean() < 1.0  # (the case this test is about)
    fresh = MixturePair(GaussianPair(s), w).split_bin_masses(coarse)
    seen: list[int] = []
    evaluate = MixturePair._fresh_tails

    def counted(self, edges):
        seen.append(len(edges))
        return evaluate(self, edges)

    monkeypatch.setattr(MixturePair, "_fresh_tails", counted)
    again = used.split_bin_masses(coarse)
    assert fresh is not None and again is not None
    for a, b in zip(again, fresh, strict=True):
        assert np.array_equal(a, b)
    assert sum(seen) == len(coarse) - int(np.count_nonzero(same))
