"""Tests of the chained optimistic discretisation, grid coarsening and two-level composition
(privamp.pld).

References: closed forms written here (the T-fold Gaussian pair is Gaussian; profiles of
finite pairs by direct summation), the tent constraints of the chained lowering checked
directly, and Google's dp_accounting PLD.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

import privamp as pa
from privamp.accountants.poisson import PLDAnalysis, poisson_pairs
from privamp.pairs.discrete import DiscretePair
from privamp.pairs.mechanism_pairs import GaussianPair
from privamp.pld.binning import vertex_lowering
from privamp.pld.compose import compose_two_level
from privamp.pld.discretise import discretise
from privamp.pld.grid import PLD, zero_pld


def gauss_delta(s: float, eps: np.ndarray) -> np.ndarray:
    """N(s,1) vs N(0,1) (Balle & Wang 2018, Thm 8)."""
    return norm.cdf(s / 2 - eps / s) - np.exp(eps) * norm.cdf(-s / 2 - eps / s)


def atoms_delta(losses: np.ndarray, p: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Profile of a finite pair given by its losses and P-masses: sum p (1 - e^{eps-l})_+."""
    e = np.asarray(eps, dtype=float)[:, None]
    return np.sum(p[None, :] * np.maximum(-np.expm1(e - losses[None, :]), 0.0), axis=1)


# ---------------------------------------------------------------------------------------
# chained vertex lowering
# ---------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    g=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=200),
    t_kind=st.sampled_from(["uniform", "extreme"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_vertex_lowering_satisfies_every_tent_constraint(g, t_kind, seed):
    """Every lowered segment lies below its tent: mu >= 0 and
    (1 - t_i) mu_i + t_i mu_{i+1} >= g_i (checked in exact rational arithmetic would be
    ideal; float with a relative margin far below the 1e-9 inflation suffices)."""
    rng = np.random.default_rng(seed)
    g = np.array(g)
    if t_kind == "uniform":
        t = rng.uniform(0.0, 1.0, len(g))
    else:
        t = rng.choice([0.0, 1e-12, 1e-4, 0.5, 1 - 1e-12, 1.0], len(g))
    mu = vertex_lowering(g, t)
    assert mu.shape == (len(g) + 1,)
    assert np.all(mu >= 0.0) and np.all(np.isfinite(mu))
    lhs = (1.0 - t) * mu[:-1] + t * mu[1:]
    assert np.all(lhs >= g * (1.0 + 1e-10))


def test_vertex_lowering_beats_max_rule_on_smooth_gaps():
    """For slowly varying gaps with peaks mid-segment the chain lowers each vertex by about
    one gap on average (the max rule: the larger neighbouring gap at every vertex)."""
    g = 1.0 + 0.1 * np.sin(np.arange(400) / 20.0)
    t = np.full(400, 0.5)
    mu = vertex_lowering(g, t)
    max_rule = np.concatenate(([g[0]], np.maximum(g[:-1], g[1:]), [g[-1]]))
    assert mu.mean() < max_rule.mean()
    assert mu.mean() == pytest.approx(g.mean(), rel=0.1)


# ---------------------------------------------------------------------------------------
# coarsening
# ---------------------------------------------------------------------------------------
def _fine_pair() -> tuple[PLD, PLD]:
    return discretise(poisson_pairs(pa.Gaussian(0.8), 0.01)[0], 1e-4, 1e-16)


def test_coarsen_pessimistic_is_connect_the_dots_of_the_atoms():
    """At coarse grid points the coarse profile equals the fine PLD's (summed directly
    here from its atoms); between them it lies above; masses are kept."""
    p, _ = _fine_pair()
    c = p.coarsen(8)
    assert c.h == pytest.approx(8e-4)
    assert c.kind == "pessimistic"
    assert c.total_mass == pytest.approx(p.total_mass, rel=1e-12)
    grid = c.losses[(c.losses > -0.01) & (c.losses < 2.0)][::7]
    direct = atoms_delta(p.losses, p.masses, grid) + p.inf_mass
    coarse = atoms_delta(c.losses, c.masses, grid) + c.inf_mass
    np.testing.assert_allclose(coarse, direct, rtol=1e-10, atol=1e-18)
    assert np.all(coarse >= direct * (1 - 1e-13))
    eps = np.linspace(-0.01, 2.0, 3001)
    assert np.all(c.delta(eps) >= p.delta(eps) - 1e-16)


def test_coarsen_optimistic_lies_below_and_keeps_mass():
    _, o = _fine_pair()
    c = o.coarsen(8)
    assert c.kind == "optimistic"
    eps = np.linspace(-0.01, 2.0, 3001)
    assert np.all(c.delta(eps) <= o.delta(eps) + 1e-16)
    assert c.total_mass == pytest.approx(o.total_mass, rel=1e-8)


@settings(max_examples=25, deadline=None)
@given(
    w=st.lists(st.tuples(st.floats(0.01, 1.0), st.floats(0.01, 1.0)), min_size=2, max_size=6),
    h=st.floats(1e-3, 0.05),
    k=st.integers(2, 9),
)
def test_coarsen_random_finite_pairs_sandwich(w, h, k):
    """Random finite pairs: coarsening the (pessimistic, optimistic) discretisation keeps
    pessimistic >= exact >= optimistic."""
    p = np.array([a for a, _ in w])
    q = np.array([b for _, b in w])
    p, q = p / p.sum(), q / q.sum()
    pess, opt = discretise(DiscretePair(p, q), h)
    eps = np.linspace(-1.0, 3.0, 401)
    exact = atoms_delta(np.log(p / q), p, eps)
    assert np.all(pess.coarsen(k).delta(eps) >= exact - 1e-13)
    assert np.all(opt.coarsen(k).delta(eps) <= exact + 1e-13)


def test_coarsen_validation():
    p, _ = _fine_pair()
    with pytest.raises(ValueError, match="factor"):
        p.coarsen(0)
    assert p.coarsen(1) is p


# ---------------------------------------------------------------------------------------
# two-level composition
# ---------------------------------------------------------------------------------------
def test_two_level_gaussian_composition_contains_closed_form():
    """T-fold N(s,1) vs N(0,1) is N(sqrt(T) s, 1) vs N(0,1): the two-level pessimistic and
    optimistic compositions bracket its profile closely."""
    s, T = 0.05, 12345
    p, o = discretise(GaussianPair(s), 2e-4)
    up, lo = compose_two_level(p, T), compose_two_level(o, T)
    eps = np.linspace(0.0, 12.0, 121)
    exact = gauss_delta(math.sqrt(T) * s, eps)
    assert np.all(up.delta(eps) >= exact - 1e-15)
    assert np.all(lo.delta(eps) <= exact + 1e-15)
    big = exact > 1e-8
    assert np.all((up.delta(eps) - lo.delta(eps))[big] <= 2e-3 * exact[big])
    d = 1e-6
    e_exact = float(pa.Gaussian(1.0 / (math.sqrt(T) * s)).epsilon(d).value)
    assert float(lo.epsilon(d)) <= e_exact <= float(up.epsilon(d))
    assert float(up.epsilon(d)) - float(lo.epsilon(d)) <= 1e-3 * e_exact


def test_two_level_short_runs_are_one_level():
    p, _ = discretise(GaussianPair(0.3), 1e-3)
    a, b = compose_two_level(p, 100), p.self_compose(100)
    assert a.h == b.h
    np.testing.assert_array_equal(a.masses, b.masses)


@pytest.mark.parametrize("q, sigma, T", [(0.01, 1.0, 20000), (1e-3, 0.8, 200000)])
def test_poisson_runs_against_dp_accounting(q, sigma, T):
    """The accountant's interval (two-level composition, chained optimistic side) contains
    dp_accounting's connect-the-dots estimate at value discretisation 1e-4 or lies just
    below it (privamp's upper bound is the tighter one), and is at most 0.1% wide."""
    from dp_accounting.pld import privacy_loss_distribution as pldm

    delta = 1e-5
    ref = pldm.from_gaussian_mechanism(
        sigma, sampling_prob=q, value_discretization_interval=1e-4, use_connect_dots=True
    ).self_compose(T).get_epsilon_for_delta(delta)
    up, lo = PLDAnalysis(pa.Gaussian(sigma), q, T).epsilon(delta)
    assert lo.value <= ref
    assert up.value <= ref * (1 + 1e-6)
    assert up.value - lo.value <= 1e-3 * up.value


def test_secondary_direction_is_refined_when_it_decides():
    """The add direction is composed pessimistically on a coarse grid only; if its upper
    bound ever exceeds the remove direction's, the accountant composes its pessimistic side
    again on the remove direction's grid; its optimistic side only if it still decides.
    (q 0.01: at q 1e-3 the add direction is the remove direction's swap since session 11.)"""
    a = PLDAnalysis(pa.Gaussian(1.0), 1e-2, 2000)
    pld = a.pld()
    assert a._partial == [1]
    p_add, _ = pld.directions[1]
    # force it to decide: an upper bound with extra mass at +inf
    pld.directions[1] = (PLD(p_add.h, p_add.offset, p_add.masses, 1e-3, p_add.kind,
                             p_add.slack), pld.directions[1][1])
    up, lo = a.epsilon(1e-5)
    assert a._partial == []
    assert a.grid[1] == a.grid[0]
    p_new, o_new = pld.directions[1]
    assert p_new.h == pld.directions[0][0].h
    assert o_new.total_mass == 0.0  # the genuine add direction no longer decides
    # the recomputed direction is the genuine one again: below the remove direction
    assert float(p_new.epsilon(1e-5)) <= float(up.value)


def test_refined_direction_that_still_decides_gets_its_optimistic_side():
    """If the recomputed add direction still exceeds the others, its lower side is composed
    too (here the remove direction is replaced by the zero PLD to force that)."""
    a = PLDAnalysis(pa.Gaussian(1.0), 1e-3, 2000)
    pld = a.pld()
    h = pld.directions[0][0].h
    pld.directions[0] = (zero_pld(h), zero_pld(h))
    up, lo = a.epsilon(1e-5)
    assert a._partial == []
    p_new, o_new = pld.directions[1]
    assert o_new.total_mass > 0.5
    assert 0.0 < float(lo.value) <= float(up.value)


def test_optimistic_keeps_rare_large_losses_at_tiny_rates():
    """Poisson rate 1e-5, sigma = 0.3, a grid step about the spread of the unselected bulk:
    the chained lowering must not drive a bulk vertex to value <= 0 (which would end the
    optimistic grid there and drop the rare selected outcomes with large losses).  The
    optimistic side keeps the P-mass above loss 1 (closed form from the pair's tails) and
    stays below the true profile."""
    pair = poisson_pairs(pa.Gaussian(0.3), 1e-5)[0]
    p, o = discretise(pair, 1.5448872e-05, 1e-18)
    true_above = float(pair.tail(np.array([1.0]), "P", True, True)[0])
    assert o.masses[o.losses > 1.0].sum() == pytest.approx(true_above, rel=1e-3)
    eps = np.linspace(-1e-4, 8.0, 4001)
    assert np.all(o.delta(eps) <= pair.delta(eps) + 1e-15)
    assert np.all(p.delta(eps) >= pair.delta(eps) - 1e-15)
