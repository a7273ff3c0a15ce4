"""pld_run's one-delta path of an epsilon curve (issue 28, session 12): scalar_sides and
scalar_max give, bit for bit, what TwoSidedPLD.epsilon_sides and np.max over the sides give
(the code they replace at each checkpoint), and so does the whole curve."""

from __future__ import annotations

import numpy as np
import pytest

import privamp as pa
from privamp.accountants import pld_run
from privamp.accountants.pld_run import scalar_max, scalar_sides
from privamp.accountants.poisson import PLDAnalysis
from privamp.pld.grid import zero_pld
from privamp.pld.two_sided import TwoSidedPLD


def _checkpoint_dirs():
    """The two directions' (pessimistic, optimistic) PLDs of a short Poisson run (the add
    direction's optimistic side zero, as in a curve)."""
    pld = PLDAnalysis(pa.Gaussian(1.0), 0.05, 60).pld()
    (p0, o0), (p1, _) = pld.directions
    return [(p0, o0), (p1, zero_pld(p1.h))]


@pytest.mark.parametrize("delta", [1e-5, 1e-3, 0.3])
def test_scalar_sides_are_epsilon_sides(delta):
    dirs = _checkpoint_dirs()
    d = np.asarray(delta)
    zeros = {id(dirs[1][1])}
    ref = TwoSidedPLD(dirs).epsilon_sides(d)
    got = scalar_sides(dirs, d, [None, None], zeros)
    for (a, b), (c, e) in zip(got, ref, strict=True):
        assert np.asarray(a).tobytes() == np.asarray(c).tobytes()
        assert np.asarray(b).tobytes() == np.asarray(e).tobytes()
    # with hints (earlier answers, one of them infinite or NaN: no hint there)
    hints = [(np.asarray(float(ref[0][0]) * 0.9), np.asarray(np.inf)),
             (np.asarray(np.nan), np.asarray(0.0))]
    ref = TwoSidedPLD(dirs).epsilon_sides(d, hints)
    got = scalar_sides(dirs, d, hints, zeros)
    for (a, b), (c, e) in zip(got, ref, strict=True):
        assert np.asarray(a).tobytes() == np.asarray(c).tobytes()
        assert np.asarray(b).tobytes() == np.asarray(e).tobytes()


def test_scalar_max_is_np_max():
    sides = [(np.asarray(0.5), np.asarray(0.25)), (np.asarray(np.inf), np.asarray(0.0)),
             (np.asarray(0.75), np.asarray(0.5))]
    for part in (sides[:1], sides[::2], sides):
        want = [np.max(v, axis=0) for v in zip(*part, strict=True)]
        got = scalar_max(part)
        assert [float(g) for g in got] == [float(w) for w in want]
    nan = scalar_max([(np.asarray(np.nan), np.asarray(0.0)), (np.asarray(1.0), np.asarray(0.0))])
    assert np.isnan(float(nan[0]))


@pytest.mark.parametrize(("q", "sigma", "T"), [(0.05, 1.0, 400), (1e-3, 4.0, 20_000)])
def test_curve_is_bit_identical_to_the_epsilon_sides_path(monkeypatch, q, sigma, T):
    """The whole curve (100 checkpoints; a pessimistic-only direction settled sparsely, or
    refined and evaluated by settle_partial at most checkpoints) with the one-delta path and
    with the code it replaced (epsilon_sides, np.max), verbatim."""
    calls = []

    def run():
        return pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T).epsilon_curve(1e-5)

    plain = pld_run.scalar_sides

    def counted(dirs, d, hints, zeros):
        calls.append(len(dirs))
        return plain(dirs, d, hints, zeros)

    monkeypatch.setattr(pld_run, "scalar_sides", counted)
    fast = run()
    assert len(calls) >= 100  # (the path was taken)

    def sides(dirs, d, hints, zeros):
        return TwoSidedPLD(dirs).epsilon_sides(
            d, [(np.nan, np.nan) if h is None else h for h in hints])

    def biggest(s):
        return tuple(np.max(v, axis=0) for v in zip(*s, strict=True))

    monkeypatch.setattr(pld_run, "scalar_sides", sides)
    monkeypatch.setattr(pld_run, "scalar_max", biggest)
    slow = run()
    assert fast.upper.value.tobytes() == slow.upper.value.tobytes()
    assert fast.lower.value.tobytes() == slow.lower.value.tobytes()
