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


def test_near_tie_share():
    """near_tie: excess at most NEAR_TIE_SHARE of the width at every point; not finite: no."""
    from privamp.accountants.poisson_policy import NEAR_TIE_SHARE, near_tie

    best, low = np.array([1.0, 2.0]), np.array([0.0, 1.0])
    assert near_tie(best + 0.5 * NEAR_TIE_SHARE, best, low)
    assert not near_tie(best + np.array([0.0, 2.0 * NEAR_TIE_SHARE]), best, low)
    assert not near_tie(np.array([np.inf, 2.0]), np.array([np.inf, 2.0]), low)


def test_near_tied_add_direction_gets_no_optimistic_side(monkeypatch):
    """q 1e-6, sigma 4, T 1e4: the add direction's upper bound exceeds the remove direction's
    by 0.6% of the width (a tie within discretisation error); its optimistic side is not
    composed (it lay 2% of the width below the remove direction's).  The interval against
    dp-accounting (an independent library): its pessimistic PLD's epsilon (an upper bound)
    is above privamp's lower bound."""
    import dp_accounting as dpa

    q, sigma, steps = 1e-6, 4.0, 10**4
    calls: list[bool] = []
    orig = poisson_module.PLDAnalysis._lead_recipe

    def spy(self, pair, *plan, optimistic=True):
        calls.append(optimistic)
        return orig(self, pair, *plan, optimistic=optimistic)

    monkeypatch.setattr(poisson_module.PLDAnalysis, "_lead_recipe", spy)
    g = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=steps).epsilon(DELTA)
    assert calls.count(True) == 1  # the remove direction's two sides only
    acc = dpa.pld.PLDAccountant()
    acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), steps)
    assert float(g.lower.value) <= acc.get_epsilon(DELTA)
    assert 0.0 < float(g.lower.value) <= float(g.upper.value)
