"""from_dp_event: dp_accounting event trees become privamp runs; on Poisson-subsampled
Gaussian events privamp's [lower, upper] interval contains dp_accounting's own PLD epsilon
(connect-the-dots, its default discretisation) up to that discretisation's error."""

from __future__ import annotations

import math

import pytest

dpa = pytest.importorskip("dp_accounting")

import privamp as pa  # noqa: E402
from privamp.integrations.dp_accounting import (  # noqa: E402
    as_relation,
    from_dp_event,
    runs_from_dp_event,
)

DELTA = 1e-5
# dp_accounting's PLDAccountant discretises privacy losses with interval 1e-4 (its default);
# its epsilon is then accurate to a few multiples of that.  We allow 10 x.
DPA_TOL = 1e-3


def _poisson_gaussian(q: float, sigma: float, steps: int):
    return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), steps)


@pytest.mark.parametrize(
    "q,sigma,steps",
    [(0.2, 2.0, 50), (0.05, 1.0, 20), (0.02, 1.5, 100), (1.0, 3.0, 10)],
)
def test_poisson_gaussian_grid_matches_dp_accounting_pld(q, sigma, steps):
    event = _poisson_gaussian(q, sigma, steps)
    acc = dpa.pld.PLDAccountant()
    acc.compose(event)
    reference = acc.get_epsilon(DELTA)

    run = from_dp_event(event)
    assert run.mechanism == pa.Gaussian(sigma) and run.scheme == pa.Poisson(q)
    assert run.steps == steps and run.relation == pa.AddRemove()
    g = run.epsilon(DELTA)
    assert g.upper is not None and g.lower is not None
    assert g.lower.value - DPA_TOL <= reference <= g.upper.value + DPA_TOL
    # and the interval is tight enough to be useful next to the peer
    assert g.upper.value - g.lower.value <= DPA_TOL


@pytest.mark.parametrize("q,scale,steps", [(0.1, 1.0, 20), (0.05, 2.0, 50)])
def test_poisson_laplace_matches_dp_accounting_pld(q, scale, steps):
    event = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.LaplaceDpEvent(scale)), steps)
    acc = dpa.pld.PLDAccountant()
    acc.compose(event)
    reference = acc.get_epsilon(DELTA)
    run = from_dp_event(event)
    assert run.mechanism == pa.Laplace(scale) and run.scheme == pa.Poisson(q)
    g = run.epsilon(DELTA)
    assert g.lower.value - DPA_TOL <= reference <= g.upper.value + DPA_TOL


def test_unsampled_gaussian_composition_matches_closed_form():
    # T Gaussian releases of noise multiplier s = one Gaussian of s / sqrt(T); closed-form
    # epsilon from dp_accounting's analytic Gaussian (Balle & Wang 2018).
    s, steps = 4.0, 16
    event = dpa.ComposedDpEvent(
        [dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(s), 10), dpa.NoOpDpEvent()]
        + [dpa.GaussianDpEvent(s)] * 6
    )
    run = from_dp_event(event)
    assert run.steps == steps and run.scheme == pa.Poisson(1.0)
    g = run.epsilon(DELTA)
    exact = dpa.get_epsilon_gaussian(s / math.sqrt(steps), DELTA)
    assert g.lower.value - 1e-6 <= exact <= g.upper.value + 1e-6
    assert g.upper.value - exact <= 1e-3


def test_tree_translation():
    assert pa.from_dp_event is from_dp_event
    lap = from_dp_event(dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(2.0), 3))
    assert lap.mechanism == pa.Laplace(2.0) and lap.steps == 3
    wor = from_dp_event(
        dpa.SelfComposedDpEvent(
            dpa.SampledWithoutReplacementDpEvent(1000, 10, dpa.GaussianDpEvent(1.0)), 5
        ),
        dataset_size=1000,
        relation=pa.Substitution(),
    )
    assert wor.scheme == pa.WithoutReplacement(10, 1000) and wor.steps == 5
    assert wor.mechanism == pa.Gaussian(1.0, 2.0) and wor.relation == pa.Substitution()
    wr = from_dp_event(dpa.SampledWithReplacementDpEvent(100, 4, dpa.GaussianDpEvent(1.0)))
    assert wr.scheme == pa.WithReplacement(4, 100) and wr.steps == 1
    rr = from_dp_event(dpa.RandomizedResponseDpEvent(0.5, 2))
    assert rr.mechanism == pa.RandomizedResponse(0.75)
    nested = from_dp_event(
        dpa.SelfComposedDpEvent(
            dpa.ComposedDpEvent([_poisson_gaussian(0.1, 1.0, 3), _poisson_gaussian(0.1, 1.0, 4)]),
            2,
        )
    )
    assert nested.steps == 14 and nested.scheme == pa.Poisson(0.1)


@pytest.mark.parametrize(
    "event,name",
    [
        (dpa.ZCDpEvent(0.5), "ZCDpEvent"),
        (dpa.dp_event.DiscreteLaplaceDpEvent(1.0, 1), "DiscreteLaplaceDpEvent"),
        (dpa.RandomizedResponseDpEvent(0.5, 3), "RandomizedResponseDpEvent"),
        (dpa.PoissonSampledDpEvent(0.1, dpa.ZCDpEvent(0.5)), "ZCDpEvent"),
        (dpa.NonPrivateDpEvent(), "NonPrivateDpEvent"),
        (dpa.GaussianDpEvent(0.0), "GaussianDpEvent"),
        (
            dpa.PoissonSampledDpEvent(0.1, dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(1.0), 2)),
            "SelfComposedDpEvent.*inside a sampling event",
        ),
    ],
)
def test_unsupported_events_name_the_event(event, name):
    with pytest.raises(ValueError, match=name):
        from_dp_event(event)


def test_empty_compositions_and_mismatched_sizes_raise():
    with pytest.raises(ValueError, match="no private step"):
        from_dp_event(dpa.ComposedDpEvent([dpa.NoOpDpEvent()]))
    with pytest.raises(ValueError, match="dataset_size"):
        from_dp_event(
            dpa.SampledWithoutReplacementDpEvent(100, 10, dpa.GaussianDpEvent(1.0)),
            dataset_size=99,
        )


def _mixed_event():
    """A warm-up at another rate, then training, then a Laplace release (Poisson rate 1)."""
    return dpa.ComposedDpEvent([
        _poisson_gaussian(0.2, 2.0, 20),
        dpa.SelfComposedDpEvent(
            dpa.ComposedDpEvent([_poisson_gaussian(0.05, 1.0, 10), dpa.NoOpDpEvent()]), 3),
        dpa.LaplaceDpEvent(20.0),
        _poisson_gaussian(0.2, 2.0, 5),
    ])


def test_a_mixed_event_becomes_phases():
    runs = runs_from_dp_event(_mixed_event())
    assert [(r.mechanism, r.scheme, r.steps) for r in runs] == [
        (pa.Gaussian(2.0), pa.Poisson(0.2), 25),
        (pa.Gaussian(1.0), pa.Poisson(0.05), 30),
        (pa.Laplace(20.0), pa.Poisson(1.0), 1),
    ]
    assert len(from_dp_event(_mixed_event()).phases) == 3


def test_a_mixed_event_matches_dp_accounting_pld():
    event = _mixed_event()
    acc = dpa.pld.PLDAccountant()
    acc.compose(event)
    reference = acc.get_epsilon(DELTA)
    run = from_dp_event(event)
    assert len(run.phases) == 3
    g = run.epsilon(DELTA)
    assert g.lower.value - DPA_TOL <= reference <= g.upper.value + DPA_TOL
    assert g.upper.value - g.lower.value <= 10 * DPA_TOL


def test_neighboring_relation_is_accepted():
    rel = dpa.NeighboringRelation
    assert as_relation(rel.ADD_OR_REMOVE_ONE) == pa.AddRemove()
    assert as_relation(rel.REPLACE_ONE) == pa.Substitution()
    assert as_relation(rel.REPLACE_SPECIAL) == pa.ZeroOut()
    with pytest.raises(ValueError, match="NeighboringRelation"):
        as_relation("add-remove")
    wor = dpa.SampledWithoutReplacementDpEvent(100, 10, dpa.GaussianDpEvent(1.0))
    run = from_dp_event(wor, relation=rel.REPLACE_ONE)
    assert run.relation == pa.Substitution() and run.mechanism == pa.Gaussian(1.0, 2.0)
    event = _poisson_gaussian(0.05, 1.0, 20)
    run = from_dp_event(event, relation=rel.ADD_OR_REMOVE_ONE)
    acc = dpa.pld.PLDAccountant(neighboring_relation=rel.ADD_OR_REMOVE_ONE)
    acc.compose(event)
    g = run.epsilon(DELTA)
    assert g.lower.value - DPA_TOL <= acc.get_epsilon(DELTA) <= g.upper.value + DPA_TOL
