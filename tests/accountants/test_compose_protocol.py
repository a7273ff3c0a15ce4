"""pa.compose over every scheme's own accountant (issue 26): phases whose analyses offer
``pld(h)`` compose as PLDs on one grid; before, anything but Poisson fell back to RDP.

References are independent of privamp: dp-accounting's PLD accountant (connect-the-dots,
its own discretisation) for the realised pairs, and dp-accounting's RDP accountant."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import privamp as pa
from privamp.accountants.phases import compose_plds
from privamp.accountants.registry import CAPABILITIES, RunAnalysis, applicable, offers
from privamp.pld.grid import PLD
from privamp.pld.two_sided import TwoSidedPLD

SIGMA, N, M, Q, T = 1.0, 1000, 10, 0.01, 50


@pytest.fixture(scope="module")
def fixed_and_poisson():
    sub = pa.Substitution()
    f = pa.Training(pa.Gaussian(SIGMA), pa.WithoutReplacement(M, N), steps=T, relation=sub)
    p = pa.Training(pa.Gaussian(SIGMA), pa.Poisson(Q), steps=T, relation=sub)
    return f, p


def _dpa_epsilon(events, delta):
    import dp_accounting as dpa

    acc = dpa.pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dpa.ComposedDpEvent(events))
    return acc.get_epsilon(delta)


@pytest.mark.slow
def test_fixed_size_and_poisson_compose_as_plds(fixed_and_poisson):
    """WithoutReplacement(10, 1000) + Poisson(0.01), both under substitution, 50 steps each.

    Before: only RDP composed them (no lower bound).  After: both phases' PLDs.  Reference:
    each phase's realised worst pair is (eta N(Delta/sigma) + (1 - eta) N(0), N(0)) with
    eta = m / n = 0.01 (one record substituted; Balle et al. 2018, Thm 9 attained) -- in
    both orders; dp-accounting composes that pair (as Poisson-subsampled Gaussian, both
    directions) independently: a value the true epsilon is at least (up to its grid), so our
    upper bound must lie above it and our certified lower bound agree with it."""
    import dp_accounting as dpa

    c = pa.compose(*fixed_and_poisson)
    rdp = c.epsilon(1e-5, accountant="rdp")
    pld = c.epsilon(1e-5, accountant="pld")
    best = c.epsilon(1e-5)
    assert rdp.lower is None
    ev = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(M / N, dpa.GaussianDpEvent(SIGMA)), T)
    ref = _dpa_epsilon([ev, ev], 1e-5)  # eta = q = 0.01: the two phases' worst pairs agree
    assert pld.upper.value >= ref * (1 - 1e-4)
    # the Poisson phase's realised pair under substitution is a record at Delta/2 replaced by
    # one at 0 (reachable by clipped gradients; tests/soundness/test_poisson_substitution_lower)
    half = dpa.SelfComposedDpEvent(
        dpa.PoissonSampledDpEvent(Q, dpa.GaussianDpEvent(2 * SIGMA)), T)
    ref_lower = _dpa_epsilon([ev, half], 1e-5)
    assert abs(pld.lower.value - ref_lower) <= 1e-3 * ref_lower
    assert pld.upper.value < 0.7 * rdp.upper.value  # RDP 1.254 -> PLD 0.768 (interval 0.718)
    assert best.upper.value == pld.upper.value and best.lower.value == pld.lower.value
    assert "phases composed as PLDs" in best.upper.source


def test_one_phase_composition_matches_the_run(fixed_and_poisson):
    """A composition of one phase is that run: its PLD bounds overlap the run's own."""
    f, _ = fixed_and_poisson
    g1 = pa.compose(f).epsilon(1e-5, accountant="pld")
    g2 = f.epsilon(1e-5, accountant="pld")
    assert g1.lower.value <= g2.upper.value * (1 + 1e-9)
    assert g2.lower.value <= g1.upper.value * (1 + 1e-9)


@pytest.mark.slow
def test_with_replacement_and_poisson_add_remove():
    """WithReplacement (add/remove: exact one-step pair) + Poisson (add/remove): PLD, tighter
    than RDP; the history's upper bound lies above each phase's certified lower bound."""
    a = pa.Training(pa.Gaussian(1.0), pa.WithReplacement(10, 1000), steps=100)
    b = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=100)
    c = a + b
    pld, rdp = c.epsilon(1e-5, accountant="pld"), c.epsilon(1e-5, accountant="rdp")
    assert pld.lower.value <= pld.upper.value < rdp.upper.value
    for run in (a, b):
        assert pld.upper.value >= run.epsilon(1e-5).lower.value


def test_shuffle_and_poisson_compose_as_plds():
    """Shuffle + Poisson (zero-out): the shuffle analysis offers ``pld``, so the
    composition is a PLD one.  Checks: the interval is
    ordered; its upper bound lies above dp-accounting's epsilon of the Poisson phase alone
    (a realised pair: the history can only be less private than one of its phases); "best"
    is labelled with the PLD composition wherever it wins and is at most both answers."""
    import dp_accounting as dpa

    s = pa.Training(pa.Gaussian(1.0), pa.Shuffle(10, 1000), epochs=1)  # zero-out
    p = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=100, relation=pa.ZeroOut())
    offered, declined = [], []
    for acc in applicable(s, "best"):
        try:
            an = acc.build(s)
            if offers(an, "pld"):
                offered.append(an.pld(an.grid_step()))
        except pa.NotApplicable as exc:
            declined.append(f"{acc.name}: {exc}")
    assert offered, f"no shuffle analysis offers pld: {'; '.join(declined)}"
    c = pa.compose(s, p)
    pld, best = c.epsilon(1e-5, accountant="pld"), c.epsilon(1e-5)
    with pytest.raises(pa.NotApplicable, match="Rényi"):  # before: no answer at all
        c.epsilon(1e-5, accountant="rdp")
    ev = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 100)
    assert pld.lower.value <= pld.upper.value
    assert pld.upper.value >= _dpa_epsilon([ev], 1e-5) * (1 - 1e-4)
    assert best.upper.value == pld.upper.value
    assert "phases composed as PLDs" in best.upper.source
    # the shuffle phase's upper side is the Gaussian at shift 1 (one epoch, Prop 3.1): the
    # history is dominated by that Gaussian composed with the Poisson phase (dp-accounting)
    dom = [dpa.GaussianDpEvent(1.0), ev]
    assert pld.upper.value <= _dpa_epsilon(dom, 1e-5) * (1 + 1e-3) + 1e-3


def test_rdp_composition_matches_dp_accounting_for_poisson_phases():
    import dp_accounting as dpa

    logging.disable(logging.WARNING)
    a = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=200)
    b = pa.Training(pa.Gaussian(2.0), pa.Poisson(0.05), steps=100)
    acc = dpa.rdp.RdpAccountant()
    acc.compose(dpa.ComposedDpEvent([
        dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 200),
        dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.05, dpa.GaussianDpEvent(2.0)), 100),
    ]))
    ref = acc.get_epsilon(1e-5)
    got = float((a + b).epsilon(1e-5, accountant="rdp").upper.value)
    assert ref * (1 - 1e-3) <= got <= ref * (1 + 1e-9)


# ---------------------------------------------------------------------------------------
# compose_plds on hand-made PLDs (exact: point masses)
# ---------------------------------------------------------------------------------------
def _atom(h, k, kind):
    return PLD(h, k, np.array([1.0]), 0.0, kind)


def test_compose_plds_adds_losses_and_serves_one_direction_for_both():
    """Point masses at losses a and b compose to one at a + b (delta(eps) = 1 - e^{eps - l}
    for eps < l, closed form); a one-direction phase serves both; grids 1e-2 and 2e-2 meet
    on 2e-2."""
    h = 1e-2
    one = TwoSidedPLD([(_atom(h, 30, "pessimistic"), _atom(h, 30, "optimistic"))])
    two = TwoSidedPLD([(_atom(2 * h, 10, "pessimistic"), _atom(2 * h, 10, "optimistic")),
                       (_atom(2 * h, 5, "pessimistic"), _atom(2 * h, 5, "optimistic"))])
    out = compose_plds([one, two])
    assert len(out.directions) == 2
    up, lo = out.delta(0.0)
    l_max = 0.3 + 0.2
    assert up >= 1 - np.exp(-l_max) - 1e-12
    assert lo <= 1 - np.exp(-l_max) + 1e-12
    assert out.directions[0][0].h == pytest.approx(2 * h)
    with pytest.raises(ValueError, match="multiples"):
        compose_plds([one, TwoSidedPLD([(_atom(0.015, 1, "pessimistic"),
                                         _atom(0.015, 1, "optimistic"))])])


def test_capabilities_are_declared_and_detected():
    class Minimal(RunAnalysis):
        def epsilon(self, delta):
            return None, None

        def delta(self, epsilon):
            return None, None

    an = Minimal()
    assert not any(offers(an, c) for c in CAPABILITIES)
    with pytest.raises(pa.NotApplicable):
        an.pld()
    with pytest.raises(ValueError, match="capability"):
        offers(an, "closed_forms")
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=10)
    caps = {a.name: a.capabilities for a in applicable(run)}
    assert {"pld", "renyi_floor", "curve"} <= caps["pld"]
    assert caps["rdp"] == {"rdp_accountant"}


@pytest.mark.slow
def test_poisson_substitution_run_has_a_pld_interval():
    """Producer: Poisson under substitution (Balle et al. 2018 Poisson-substitution weights,
    symmetrised dominating pair; lower bound from the substituted record sampled with
    probability q).  The dominating pair is (q N(Delta/sigma) + (1 - q) N(0), N(0)) in both
    orders, and the realised one (a record at Delta/2 replaced by one at 0, reachable by
    clipped gradients) the same at half the shift; dp-accounting composes both as
    Poisson-subsampled Gaussians: our lower bound must agree with the second, our upper
    bound lie above the first, and below the RDP answer."""
    import dp_accounting as dpa

    run = pa.Training(pa.Gaussian(1.1), pa.Poisson(0.01), steps=100, relation=pa.Substitution())
    g = run.epsilon(1e-5, accountant="pld")
    ev = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.1)), 100)
    ref = _dpa_epsilon([ev], 1e-5)
    half = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(2.2)), 100)
    ref_lower = _dpa_epsilon([half], 1e-5)
    assert abs(g.lower.value - ref_lower) <= 1e-3 * ref_lower
    assert g.upper.value >= ref * (1 - 1e-4)
    assert g.upper.value < run.epsilon(1e-5, accountant="rdp").upper.value


def _exact_rr_history_delta(phases, eps):
    """The exact profile, in mpmath, of phases of subsampled randomized response under
    add/remove: each step's pair is (w Bern(t) + (1 - w) Bern(1 - t), Bern(1 - t)) in the
    remove order and its swap in the add order; the history's profile is the max over the
    two orders of the product pair's hockey-stick divergence (outcomes enumerated by the
    number of ones per phase)."""
    import mpmath as mp

    mp.mp.dps = 40

    def order(swap):
        acc = [(mp.mpf(1), mp.mpf(1))]
        for w, t, T in phases:
            w, t = mp.mpf(w), mp.mpf(t)
            p1, q1 = w * t + (1 - w) * (1 - t), 1 - t
            if swap:
                p1, q1 = q1, p1
            law = [(mp.binomial(T, k) * p1**k * (1 - p1) ** (T - k),
                    mp.binomial(T, k) * q1**k * (1 - q1) ** (T - k)) for k in range(T + 1)]
            acc = [(a * c, b * d) for a, b in acc for c, d in law]
        return mp.fsum(max(P - mp.e ** mp.mpf(eps) * Q, 0) for P, Q in acc)

    return float(max(order(False), order(True)))


def test_with_replacement_and_poisson_against_exact_enumeration():
    """Randomized response sampled with replacement (m = 5 of n = 100, add/remove: the pair
    of Balle et al. 2018 Thm 11 is attained for randomized response, w = 1 - (1 - 1/n)^m)
    then Poisson (q = 0.1): the composed PLD interval holds the exact profile computed in
    mpmath, the upper bound within 1e-3 and the lower within 1% (randomized response's atoms
    off the grid cost the optimistic side first order in h); RDP alone was twice as high."""
    n, m = 100, 5
    w = 1.0 - (1.0 - 1.0 / n) ** m
    a = pa.Training(pa.RandomizedResponse(0.75), pa.WithReplacement(m, n), steps=30)
    b = pa.Training(pa.RandomizedResponse(0.8), pa.Poisson(0.1), steps=20)
    eps = [0.5, 1.0]
    g = (a + b).delta(eps, accountant="pld")
    exact = np.array([_exact_rr_history_delta([(w, 0.75, 30), (0.1, 0.8, 20)], e) for e in eps])
    assert np.all(g.lower.value <= exact) and np.all(exact <= g.upper.value)
    assert np.all(g.upper.value <= exact * (1 + 1e-3))
    assert np.all(g.lower.value >= exact * (1 - 1e-2))
    assert np.all((a + b).delta(eps, accountant="rdp").upper.value > 1.5 * exact)


# ---------------------------------------------------------------------------------------
# the consumer side with a producer that declares nothing (as chua2024's analyses may)
# ---------------------------------------------------------------------------------------
from dataclasses import dataclass  # noqa: E402

from privamp.accountants.registry import run_accountant  # noqa: E402
from privamp.pairs.mechanism_pairs import GaussianPair  # noqa: E402
from privamp.pld.discretise import discretise  # noqa: E402


@dataclass(frozen=True)
class _Unamplified(pa.Scheme):
    """Every record in every step (a toy per-step scheme for this test only)."""

    name = "unamplified-toy"

    @property
    def steps_per_epoch(self) -> int:
        return 1


class _GaussianRun(RunAnalysis):
    """T releases of the Gaussian mechanism without sampling (the pair (N(Delta/sigma),
    N(0)) composed T times on the grid); offers pld (not declared at registration) and no
    grid_step."""

    def __init__(self, run):
        self.pair, self.T = GaussianPair(run.mechanism.shift(1)), run.steps

    def pld(self, h=None):
        p, o = discretise(self.pair, 1e-4 if h is None else h)
        return TwoSidedPLD([(p.self_compose(self.T), o.self_compose(self.T))])

    def epsilon(self, delta):
        raise pa.NotApplicable("toy: composition only")

    def delta(self, epsilon):
        raise pa.NotApplicable("toy: composition only")


run_accountant("toy-unamplified", lambda run: isinstance(run.scheme, _Unamplified))(_GaussianRun)


def test_an_undeclared_pld_producer_joins_a_composition():
    """A phase whose accountant declares no capability but whose analysis overrides ``pld``
    (and has no grid_step) composes with a Poisson phase on the Poisson phase's step.
    Reference: dp-accounting's PLD of the same history (5 Gaussian releases at noise 4,
    then 200 Poisson-subsampled ones at q = 0.02, noise 1)."""
    import dp_accounting as dpa

    a = pa.Training(pa.Gaussian(4.0), _Unamplified(), steps=5)
    b = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.02), steps=200)
    g = (a + b).epsilon(1e-5, accountant="pld")
    ref = _dpa_epsilon([
        dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(4.0), 5),
        dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.02, dpa.GaussianDpEvent(1.0)), 200),
    ], 1e-5)
    assert g.lower.value <= ref * (1 + 1e-4) and ref <= g.upper.value * (1 + 1e-4)
    assert g.upper.value - g.lower.value <= 1e-3 * ref
