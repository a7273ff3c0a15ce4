"""The Balanced Iteration PLD analysis offers the capability contract's ``pld(h)`` and
``grid_step()`` (COMMON.md): its dominating grid PLDs as the pessimistic sides, its lower
pairs as the optimistic sides, on the caller's grid step.

Reference: composition itself -- two epochs of the run are the product of one epoch with
itself (Dong, Chen, Ozgur 2025, Remark 3.10), so ``pld(h)`` of one epoch composed with itself
by :meth:`TwoSidedPLD.compose` and the analysis of the two-epoch run certify the same
quantity; each interval is certified, so they must overlap, and as both come from the same
one-epoch grid pairs they agree to the composition's float allowances.
"""

from __future__ import annotations

import numpy as np
import pytest

import privamp as pa
from privamp.errors import NotApplicable
from privamp.pld.two_sided import TwoSidedPLD
from privamp.theorems.dong2025.bis_pld import BISPLDAnalysis
from privamp.theorems.registry import applicable


@pytest.fixture(scope="module")
def one_epoch() -> BISPLDAnalysis:
    return BISPLDAnalysis(2.0, 10, 1, 1)


def test_pld_composed_with_itself_matches_two_epochs(one_epoch: BISPLDAnalysis) -> None:
    h = one_epoch.grid_step()
    tp = one_epoch.pld(h)
    assert isinstance(tp, TwoSidedPLD) and len(tp.directions) == 2
    composed = tp.compose(tp)
    twice = BISPLDAnalysis(2.0, 10, 1, 2)
    for delta in (1e-3, 1e-5):
        c_up, c_lo = composed.epsilon(delta)
        b_up, b_lo = twice.epsilon(delta)
        assert b_lo is not None
        # both certified: the intervals overlap ...
        assert c_lo <= b_up.value and b_lo.value <= c_up
        assert 0.0 < c_lo <= c_up
        # ... and coincide up to the float allowances of one extra composition
        assert c_up == pytest.approx(b_up.value, rel=1e-9)
        assert c_lo == pytest.approx(b_lo.value, rel=1e-9)
        # a genuine lower side (not the zero PLD): the interval is narrow
        assert c_up - c_lo < 1e-3 * c_up


def test_pld_on_a_caller_given_step(one_epoch: BISPLDAnalysis) -> None:
    tp = one_epoch.pld(2e-3)
    assert all(p.h == 2e-3 and o.h == 2e-3 for p, o in tp.directions)
    assert [p.kind for p, _ in tp.directions] == ["pessimistic"] * 2
    assert [o.kind for _, o in tp.directions] == ["optimistic"] * 2
    up2, lo2 = tp.epsilon(1e-5)
    up1, lo1 = one_epoch.pld().epsilon(1e-5)
    # two certified intervals for the same run: they overlap
    assert lo2 <= up1 and lo1 <= up2
    for bad in (0.0, -1e-3, 0.5):
        with pytest.raises(ValueError, match="h must be"):
            one_epoch.pld(bad)


def test_k_above_one_sides_share_the_step() -> None:
    an = BISPLDAnalysis(1.0, 20, 4, 1)
    h = an.grid_step()
    tp = an.pld()
    assert all(p.h == h and o.h == h for p, o in tp.directions)
    up, lo = tp.epsilon(1e-5)
    b_up, b_lo = an.epsilon(1e-5)
    assert up == pytest.approx(b_up.value, rel=1e-12)
    assert lo <= b_up.value and 0.0 < lo <= up


def test_balls_in_bins_run_offers_the_capabilities() -> None:
    run = pa.Training(pa.Gaussian(1.0), pa.BallsInBins(10), epochs=1)
    (acc,) = [a for a in applicable(run, "pld") if a.name == "pld"]
    an = acc.build(run)
    assert isinstance(an, BISPLDAnalysis) and an.grid_step() == 1e-3
    up, lo = an.pld().epsilon(1e-5)
    ref = run.epsilon(1e-5, accountant="pld")
    assert up == pytest.approx(ref.upper.value, rel=1e-12)
    assert np.isfinite(lo) and lo <= up


def test_refusal_is_kept() -> None:
    an = BISPLDAnalysis(0.1, 100, 1, 1)  # sigma far too small for the lattice
    with pytest.raises(NotApplicable):
        an.pld()
    with pytest.raises(NotApplicable):
        an.pld(2e-3)
