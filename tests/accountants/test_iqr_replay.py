"""The replayed quartile search of the grid plan (accountants/quartiles.py, issue 28): for the
remove direction of Poisson-subsampled Gaussian, :func:`loss_iqr` gives the bracket search's
value bit for bit (the search re-implemented here from its documented rounds, as the
reference), so the grid steps are unchanged; the quantile satisfies the mixture's CDF
(scipy.stats.norm); a wrong quantile is caught by the check and the search runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

import privamp as pa
from privamp.accountants import grid
from privamp.accountants.poisson import poisson_pairs
from privamp.accountants.quartiles import mixture_quantile, replayed_brackets


def search_iqr(pair) -> float:
    """loss_iqr's documented search: 5 rounds of 31 interior points from loss_range(1e-12)."""
    lo, hi = pair.loss_range(1e-12)
    out = []
    for target in (0.25, 0.75):
        a, b = lo, hi
        for _ in range(5):
            x = a + (b - a) * np.arange(1, 32) / 32
            with np.errstate(all="ignore"):
                right = np.asarray(pair.tail(x, "P", False, False)) < target
            k = int(np.argmin(right)) if not right.all() else len(x)
            a, b = (float(x[k - 1]) if k > 0 else a, float(x[k]) if k < len(x) else b)
        out.append(b)
    return max(out[1] - out[0], 1e-12)


RATES = [1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 256 / 60000, 1e-2, 0.1]
SIGMAS = [0.2, 0.3, 0.5, 0.8, 1.1, 2.0, 4.0, 16.0]


@pytest.mark.parametrize("q", RATES)
def test_bit_identical_to_search(q: float, monkeypatch: pytest.MonkeyPatch) -> None:
    used = []

    def spy(*args, **kwargs):
        out = replayed_brackets(*args, **kwargs)
        used.append(out is not None)
        return out

    monkeypatch.setattr(grid, "replayed_brackets", spy)
    for sigma in SIGMAS:
        lead = poisson_pairs(pa.Gaussian(sigma), q)[0]
        assert grid.loss_iqr(lead) == search_iqr(lead)
    assert used and all(used)  # (the replay answered every time)


@pytest.mark.parametrize("s, w", [(1.0, 1e-3), (0.5, 0.1), (3.0, 1e-6), (2.0, 0.05)])
def test_quantile_solves_mixture_cdf(s: float, w: float) -> None:
    for p in (0.25, 0.5, 0.75):
        l = mixture_quantile(s, w, p)
        x = (math.log((math.expm1(l) + w) / w) + s * s / 2) / s  # the output with loss l
        assert w * norm.cdf(x - s) + (1 - w) * norm.cdf(x) == pytest.approx(p, abs=1e-12)


def test_wrong_quantile_rejected() -> None:
    lead = poisson_pairs(pa.Gaussian(1.0), 1e-3)[0]
    lo, hi = lead.loss_range(1e-12)
    q25, q75 = (mixture_quantile(lead.base.s, lead.w, t) for t in (0.25, 0.75))
    assert replayed_brackets(lead, [q25, q75], (0.25, 0.75), lo, hi) is not None
    off = q25 + 0.01 * (q75 - q25)
    assert replayed_brackets(lead, [off, q75], (0.25, 0.75), lo, hi) is None
    assert replayed_brackets(lead, [math.nan, q75], (0.25, 0.75), lo, hi) is None
