"""Session 12, issue 28: at q 1e-5, sigma 1, T 1e7 the add direction of Poisson-subsampled
Gaussian is put on the remove direction's plan before its composition where its run's float
allowance is a sizeable share of the delta asked for (``PLDAnalysis._coarse_would_decide``):
composed once instead of twice.  The interval is checked against an independent reference,
the Fourier (Lewis) formula of tests/soundness/mixture_refs.py (imports nothing from privamp),
both directions."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import privamp as pa
from privamp.accountants import poisson as poisson_module

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "soundness"))
import mixture_refs as R  # noqa: E402

Q, SIGMA, T, DELTA = 1e-5, 1.0, 10**7, 1e-5


def _counting(monkeypatch) -> list[float]:
    seen: list[float] = []
    orig = poisson_module.compose_two_level

    def spy(x, steps, *a, **k):
        seen.append(x.h)
        return orig(x, steps, *a, **k)

    monkeypatch.setattr(poisson_module, "compose_two_level", spy)
    return seen


def test_add_direction_composed_once(monkeypatch):
    seen = _counting(monkeypatch)
    g = pa.Training(pa.Gaussian(SIGMA), pa.Poisson(Q), steps=T).epsilon(DELTA)
    assert len(seen) == 3  # remove: both sides; add: its pessimistic side, once
    assert len(set(seen)) == 1  # all on the lead's step
    assert float(g.upper.value) - float(g.lower.value) < 2e-4  # (0.130476, 0.130592)


@pytest.mark.slow
def test_interval_brackets_fourier_reference():
    """The Lewis formula (both directions) at the interval's ends straddles delta (80 s CPU:
    1e7 steps; its error bound 1e-8, 1e-3 of delta; the damped formula does not apply)."""
    g = pa.Training(pa.Gaussian(SIGMA), pa.Poisson(Q), steps=T).epsilon(DELTA)
    up, low = float(g.upper.value), float(g.lower.value)
    w = R.binomial_weights(1, Q)
    ends = np.array([up, low])
    vr, er = R.cf_delta(w, 1.0 / SIGMA, T, ends, "remove")
    va, ea = R.cf_delta(w, 1.0 / SIGMA, T, ends, "add")
    ref, err = np.maximum(vr, va), np.maximum(er, ea)
    assert np.all(err <= 2e-3 * DELTA), err
    assert ref[0] - err[0] <= DELTA, (up, ref, err)  # delta(upper eps) <= target
    assert ref[1] + err[1] >= DELTA, (low, ref, err)  # delta(lower eps) >= target


def test_shorter_run_keeps_the_coarse_plan(monkeypatch):
    """T 1e6: the coarse add direction's allowance (9e-9) is under the share: kept coarse,
    and it lies below the remove direction (never refined: 3 compositions)."""
    seen = _counting(monkeypatch)
    pa.Training(pa.Gaussian(SIGMA), pa.Poisson(Q), steps=10**6).epsilon(DELTA)
    assert len(seen) == 3 and len(set(seen)) == 2
