"""Session 12: the fixed-batch PLD analysis's realised-pair Rényi floor computes its Pinsker
(TV) term once instead of every screening round.  Reference: the library function it used to
call, :func:`privamp.pld.moments.two_sided_renyi_floor`, on the same PLD, bit for bit, on
first and repeated calls at several order sets."""

from __future__ import annotations

import numpy as np
import pytest

import privamp as pa
from privamp.pld.moments import two_sided_renyi_floor


@pytest.mark.parametrize("sigma,m,T", [(3.0, 60, 100), (1.5, 256, 10**3)])
def test_realised_floor_as_two_sided(sigma, m, T):
    run = pa.Training(pa.Gaussian(sigma), pa.WithoutReplacement(m, 60000), steps=T,
                      relation=pa.Substitution())
    an = dict(run.analysis("pld"))["pld"]
    ups, los = an.plds
    rounds = [1.0 + np.geomspace(1e-9, 1e6, 48), np.array([1.5, 2.0, 33.0]), np.array([7.0])]
    for a in rounds + rounds:
        got = an._realised_floor(ups, los, a)
        np.testing.assert_array_equal(got, two_sided_renyi_floor(an._floor_pld, a))
