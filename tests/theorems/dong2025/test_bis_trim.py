"""Trimming a lattice law to a window of the circle (issue 28, memory): the dropped mass
joins the certified error, so the bounds on P(S > y) and P(S < y) still bracket the truth.
Reference: Monte Carlo (2e5 draws, 5-sd allowance) of S = sum of T log-normal coordinates,
one of them scaled by e^{s^2} (the P side of the k = 1 pair)."""

from __future__ import annotations

import math

import numpy as np

from privamp.theorems.dong2025 import bis_lattice as lat


def _mc(s: float, T: int, first: float, ys: np.ndarray, n: int = 200_000):
    rng = np.random.default_rng(7)
    z = np.exp(s * rng.standard_normal((n, T)) - s * s / 2)
    z[:, 0] *= math.exp(first)
    S = z.sum(axis=1)
    above = (S[:, None] > ys[None, :]).mean(axis=0)
    below = (S[:, None] < ys[None, :]).mean(axis=0)
    return above, below, n


def test_trimmed_law_brackets_monte_carlo():
    sigma, T = 1.0, 4
    s = 1.0 / sigma
    d, n = lat.choose_lattice(sigma, T, 2e-3, 3)
    ys = np.array([1.0, 2.0, 3.0, 4.0, 6.0, 10.0, 20.0])
    for first in (0.0, s * s):
        law = lat.SumLaw(s, T, first, d, n, sums=False)
        err0 = law.err
        # a deliberately narrow window (much more mass dropped than trim_common would)
        lo, hi = law.window(1e6)
        law.trim(lo, hi)
        assert law.err > err0
        law.suffix, law.prefix = lat.suffix_sums(law.c), lat.prefix_sums(law.c)
        above, below, m = _mc(s, T, first, ys)
        tol = 5 * np.sqrt(np.maximum(above * (1 - above), 1.0 / m) / m)
        tolb = 5 * np.sqrt(np.maximum(below * (1 - below), 1.0 / m) / m)
        assert np.all(law.above(ys, True) >= above - tol)
        assert np.all(law.above(ys, False) <= above + tol)
        assert np.all(law.below(ys, True) >= below - tolb)
        assert np.all(law.below(ys, False) <= below + tolb)


def test_trim_common_keeps_one_window_and_grows_err_little():
    sigma, T = 1.0, 50
    s = 1.0 / sigma
    d, n = lat.choose_lattice(sigma, T, 2e-3, 3)
    laws = [lat.SumLaw(s, T, f, d, n, sums=False) for f in (0.0, s * s)]
    errs = [law.err for law in laws]
    lat.trim_common(laws)
    assert laws[0].lo == laws[1].lo and len(laws[0].c) == len(laws[1].c)
    assert len(laws[0].c) < n
    for law, e in zip(laws, errs, strict=True):
        assert e < law.err <= e * (1 + 2.5e-3)
