"""pa.compose / run_a + run_b against dp-accounting on the same mixed history."""

from __future__ import annotations

import logging

import pytest

import privamp as pa


@pytest.fixture(scope="module")
def history():
    a = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=2000)
    b = pa.Training(pa.Gaussian(2.0), pa.Poisson(0.05), steps=500)
    return a, b


@pytest.fixture(scope="module")
def dpa_event():
    import dp_accounting as dpa

    return dpa.ComposedDpEvent([
        dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 2000),
        dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.05, dpa.GaussianDpEvent(2.0)), 500),
    ])


def test_add_and_compose_build_the_same_phases(history):
    a, b = history
    c = a + b
    assert isinstance(c, pa.Composition)
    assert c.phases == (a, b)
    assert pa.compose(a, b).phases == c.phases
    assert (c + a).phases == (a, b, a)


def test_pld_interval_brackets_dp_accounting(history, dpa_event):
    import dp_accounting as dpa

    acc = dpa.pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dpa_event)
    ref = acc.get_epsilon(1e-5)  # connect-the-dots estimate, grid 1e-4
    g = (history[0] + history[1]).epsilon(1e-5, accountant="pld")
    assert g.lower.value <= ref
    assert abs(g.upper.value - ref) <= 1e-4 * ref
    assert (g.upper.value - g.lower.value) <= 1e-3 * g.upper.value
    d = (history[0] + history[1]).delta(1.0, accountant="pld")
    assert d.lower.value <= acc.get_delta(1.0) <= d.upper.value * (1 + 1e-4)


def test_rdp_matches_dp_accounting(history, dpa_event):
    import dp_accounting as dpa

    logging.disable(logging.WARNING)
    acc = dpa.rdp.RdpAccountant()
    acc.compose(dpa_event)
    ref = acc.get_epsilon(1e-5)
    got = float((history[0] + history[1]).epsilon(1e-5, accountant="rdp").upper.value)
    assert ref * (1 - 1e-3) <= got <= ref * (1 + 1e-9)


def test_best_is_the_pld_here(history):
    c = history[0] + history[1]
    best = c.epsilon(1e-5)
    assert best.upper.value <= c.epsilon(1e-5, accountant="rdp").upper.value
    assert best.upper.value == c.epsilon(1e-5, accountant="pld").upper.value


def test_one_phase_overlaps_the_run():
    run = pa.Training(pa.Laplace(2.0), pa.Poisson(0.02), steps=300)
    g1 = pa.compose(run).epsilon(1e-6, accountant="pld")
    g2 = run.epsilon(1e-6, accountant="pld")
    assert g1.lower.value <= g2.upper.value and g2.lower.value <= g1.upper.value


def test_relations_must_match():
    a = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=10)
    b = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=10, relation=pa.ZeroOut())
    with pytest.raises(ValueError, match="relation"):
        a + b


def test_phase_no_accountant_composes():
    a = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=10)
    # no result for truncated Poisson with Laplace noise (shuffled batches now have the
    # participation bound, issue 27)
    b = pa.Training(pa.Laplace(1.0), pa.TruncatedPoisson(0.1, 20, 1000), steps=15)
    with pytest.raises(pa.NotApplicable):
        (a + b).epsilon(1e-5)
    with pytest.raises(ValueError, match="accountant"):
        (a + a).epsilon(1e-5, accountant="exact")
