"""from_dp_event under dp_accounting's neighbouring relations: the bridge reads each
``NeighboringRelation`` as dp-accounting's own accountants do, so privamp's interval contains
dp-accounting's PLD epsilon (the independent reference: dp_accounting.pld.PLDAccountant at its
default discretisation, and the analytic Gaussian of Balle & Wang 2018 where one applies)."""

from __future__ import annotations

import math

import pytest

dpa = pytest.importorskip("dp_accounting")

import privamp as pa  # noqa: E402
from privamp.integrations.dp_accounting import (  # noqa: E402
    from_dp_event,
    is_replace_one,
    runs_from_dp_event,
)

DELTA = 1e-5
# dp_accounting's PLD discretises losses at 1e-4; its epsilon is accurate to a few multiples.
DPA_TOL = 1e-3
REL = dpa.NeighboringRelation


def _pld(event, relation) -> float:
    acc = dpa.pld.PLDAccountant(neighboring_relation=relation)
    acc.compose(event)
    return acc.get_epsilon(DELTA)


def _sampled(q, sigma, steps, leaf=None):
    leaf = dpa.GaussianDpEvent(sigma) if leaf is None else leaf
    return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, leaf), steps)


def _contains(run, reference, tol=DPA_TOL):
    g = run.epsilon(DELTA)
    assert g.upper is not None and g.lower is not None
    assert g.lower.value - tol <= reference <= g.upper.value + tol
    return g


def test_replace_one_sampled_gaussian_is_the_antipodal_pair():
    # The brief's case: sigma 1, q 0.05, T 30. Plain substitution at sensitivity 2 gave an
    # upper bound of 12.08; dp-accounting's PLD for REPLACE_ONE gives 2.78.
    event = _sampled(0.05, 1.0, 30)
    run = from_dp_event(event, relation=REL.REPLACE_ONE)
    assert run.relation == pa.HybridSubstitution() and run.mechanism == pa.Gaussian(1.0, 1.0)
    assert run.scheme == pa.Poisson(0.05) and run.steps == 30
    reference = _pld(event, REL.REPLACE_ONE)
    g = _contains(run, reference)
    assert g.upper.value - g.lower.value <= DPA_TOL
    assert g.upper.value < 3.0


def test_replace_one_unsampled_gaussian_moves_by_twice_the_bound():
    # dp-accounting's PLD: N(-1, s^2) vs N(1, s^2) per release; T releases of s are one of
    # s / sqrt(T) at distance 2: the analytic Gaussian at s / (2 sqrt(T)).
    s, steps = 4.0, 5
    event = dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(s), steps)
    run = from_dp_event(event, relation=REL.REPLACE_ONE)
    assert run.scheme == pa.Poisson(1.0) and run.relation == pa.HybridSubstitution()
    exact = dpa.get_epsilon_gaussian(s / (2 * math.sqrt(steps)), DELTA)
    assert abs(_pld(event, REL.REPLACE_ONE) - exact) <= DPA_TOL
    g = _contains(run, exact, tol=1e-6)
    assert g.upper.value - exact <= 1e-3


def test_replace_one_compositions_match_dp_accounting():
    # two Poisson phases
    two_rates = dpa.ComposedDpEvent([_sampled(0.05, 1.0, 30), _sampled(0.2, 2.0, 10)])
    runs = runs_from_dp_event(two_rates, relation=REL.REPLACE_ONE)
    assert {r.relation for r in runs} == {pa.HybridSubstitution()}
    _contains(from_dp_event(two_rates, relation=REL.REPLACE_ONE),
              _pld(two_rates, REL.REPLACE_ONE))


def test_replace_one_sampled_and_unsampled_compose():
    with_release = dpa.ComposedDpEvent(
        [_sampled(0.1, 1.5, 20), dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(10.0), 2)])
    _contains(from_dp_event(with_release, relation=REL.REPLACE_ONE),
              _pld(with_release, REL.REPLACE_ONE))


def test_replace_one_bound_scales_the_pair():
    # values of norm <= C/2: the same pair as noise multiplier 2 s at bound C
    event = _sampled(0.1, 1.0, 10)
    run = from_dp_event(event, relation=REL.REPLACE_ONE, sensitivity=0.5)
    assert run.mechanism == pa.Gaussian(1.0, 0.5)
    _contains(run, _pld(_sampled(0.1, 2.0, 10), REL.REPLACE_ONE))


def test_replace_one_randomized_response():
    rr = dpa.RandomizedResponseDpEvent(0.5, 2)
    event = dpa.ComposedDpEvent([rr] * 3)
    run = from_dp_event(event, relation=REL.REPLACE_ONE)
    assert run.mechanism == pa.RandomizedResponse(0.75) and run.steps == 3
    reference = _pld(event, REL.REPLACE_ONE)
    # three releases of loss +-ln 3 (P(true) = 3/4): 3 ln 3 at this delta
    assert abs(reference - 3 * math.log(3)) <= DPA_TOL
    _contains(run, reference)
    # dp-accounting 0.6.0's PLDAccountant drops the count of a self-composed RR event (it
    # composes the RR PLD once); the bridge counts it, so its interval sits above that number.
    self_composed = dpa.SelfComposedDpEvent(rr, 3)
    assert from_dp_event(self_composed, relation=REL.REPLACE_ONE).steps == 3
    if _pld(self_composed, REL.REPLACE_ONE) < reference - DPA_TOL:
        assert run.epsilon(DELTA).lower.value > _pld(self_composed, REL.REPLACE_ONE)


def test_replace_one_fixed_size_sampling_is_plain_substitution():
    wor = dpa.SelfComposedDpEvent(
        dpa.SampledWithoutReplacementDpEvent(1000, 10, dpa.GaussianDpEvent(1.0)), 50)
    run = from_dp_event(wor, relation=REL.REPLACE_ONE)
    assert run.relation == pa.Substitution() and run.mechanism == pa.Gaussian(1.0, 2.0)
    # dp-accounting's RDP accountant reads the replacement distance as C: sensitivity 0.5
    # mirrors it, and privamp's certified lower bound then stays below RDP's upper bound.
    rdp = dpa.rdp.RdpAccountant(neighboring_relation=REL.REPLACE_ONE)
    rdp.compose(wor)
    half = from_dp_event(wor, relation=REL.REPLACE_ONE, sensitivity=0.5)
    assert half.mechanism == pa.Gaussian(1.0, 1.0)
    g = half.epsilon(DELTA)
    assert g.lower.value <= rdp.get_epsilon(DELTA)
    # a composition mixing Poisson and fixed-size steps needs one relation: substitution at 2
    mixed = dpa.ComposedDpEvent([_sampled(0.05, 1.0, 3), wor])
    runs = runs_from_dp_event(mixed, relation=REL.REPLACE_ONE)
    assert [(r.relation, r.mechanism) for r in runs] == [
        (pa.Substitution(), pa.Gaussian(1.0, 2.0))] * 2


def test_replace_one_sampled_laplace_maps_although_dp_accounting_refuses():
    event = _sampled(0.05, 2.0, 20, dpa.LaplaceDpEvent(2.0))
    assert not dpa.pld.PLDAccountant(REL.REPLACE_ONE).supports(event)
    run = from_dp_event(event, relation=REL.REPLACE_ONE)
    assert run.relation == pa.HybridSubstitution() and run.mechanism == pa.Laplace(2.0, 1.0)
    # below the unsampled Laplace at distance 2 (scale 2): basic composition of 20 x 1
    g = run.epsilon(DELTA)
    assert 0 < g.lower.value <= g.upper.value < 20 * 2 / 2.0


def test_add_remove_and_replace_special_match_dp_accounting():
    event = dpa.ComposedDpEvent([_sampled(0.05, 1.0, 20),
                                 _sampled(0.1, 2.0, 10, dpa.LaplaceDpEvent(2.0))])
    for relation, privamp_relation in ((REL.ADD_OR_REMOVE_ONE, pa.AddRemove()),
                                       (REL.REPLACE_SPECIAL, pa.ZeroOut())):
        runs = runs_from_dp_event(event, relation=relation)
        assert [(r.relation, r.mechanism) for r in runs] == [
            (privamp_relation, pa.Gaussian(1.0)), (privamp_relation, pa.Laplace(2.0))]
        _contains(from_dp_event(event, relation=relation), _pld(event, relation),
                  tol=3 * DPA_TOL)
    self_composed = _sampled(0.02, 1.5, 100)
    _contains(from_dp_event(self_composed, relation=REL.REPLACE_SPECIAL),
              _pld(self_composed, REL.REPLACE_SPECIAL))


def test_privamp_relations_keep_privamp_semantics():
    assert is_replace_one(REL.REPLACE_ONE)
    assert not is_replace_one(pa.Substitution()) and not is_replace_one(REL.REPLACE_SPECIAL)
    run = from_dp_event(_sampled(0.05, 1.0, 30), relation=pa.Substitution())
    assert run.relation == pa.Substitution() and run.mechanism == pa.Gaussian(1.0, 2.0)
    hybrid = from_dp_event(_sampled(0.05, 1.0, 30), relation=pa.HybridSubstitution())
    assert hybrid.mechanism == pa.Gaussian(1.0, 1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        from_dp_event(_sampled(0.05, 1.0, 30), relation=REL.REPLACE_ONE, sensitivity=0.0)
