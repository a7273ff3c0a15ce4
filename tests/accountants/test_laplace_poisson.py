"""Poisson-subsampled Laplace runs (issue 28): the default call's interval against an exact
reference for T = 1, 2 (closed-form inner integrals, mpmath outer quadrature split at the
integrand's kinks) and against dp-accounting's PLD on issue 28's settings."""

from __future__ import annotations

import math

import mpmath as mp
import pytest

import privamp as pa

DELTA = 1e-5


def _parts(q: float, e0: float, remove: bool):
    """The pair (A, B) of one step, remove: (q P0 + (1 - q) Q0, Q0) with P0 = Lap(e0, 1),
    Q0 = Lap(0, 1); add: its swap.  Returns the atoms (x <= 0 and x >= e0) as
    (A-mass, B-mass) and the densities on (0, e0) with their closed-form integrals."""
    q, e0 = mp.mpf(q), mp.mpf(e0)
    half = mp.mpf(1) / 2
    p_lo, q_lo = q * half * mp.e ** -e0 + (1 - q) * half, half
    p_hi, q_hi = q * half + (1 - q) * half * mp.e ** -e0, half * mp.e ** -e0

    def int_q(u, v):  # int_u^v e^-x / 2
        return (mp.e ** -u - mp.e ** -v) / 2

    def int_p(u, v):  # int_u^v (q e^{x - e0} + (1 - q) e^-x) / 2
        return q * (mp.e ** (v - e0) - mp.e ** (u - e0)) / 2 + (1 - q) * int_q(u, v)

    def ratio_x(c):  # x in [0, e0] with P/Q(x) = 1 + q (e^{2x - e0} - 1) = c (P/Q increasing)
        y = 1 + (c - 1) / q
        if y <= 0:
            return mp.mpf(0)
        return min(max((e0 + mp.log(y)) / 2, mp.mpf(0)), e0)

    if remove:
        atoms = [(p_lo, q_lo), (p_hi, q_hi)]

        def mass_where_ratio_above(c):  # int over {A/B > c} of A and of B, on (0, e0)
            x = ratio_x(c)
            return int_p(x, e0), int_q(x, e0)

        def dens(x):
            return (q * mp.e ** (x - e0) + (1 - q) * mp.e ** -x) / 2, mp.e ** -x / 2
    else:
        atoms = [(q_lo, p_lo), (q_hi, p_hi)]

        def mass_where_ratio_above(c):  # A/B = Q/P > c  <=>  P/Q < 1 / c
            x = ratio_x(1 / c)
            return int_q(0, x), int_p(0, x)

        def dens(x):
            return mp.e ** -x / 2, (q * mp.e ** (x - e0) + (1 - q) * mp.e ** -x) / 2
    # the integrand of the double integral (over x1 in (0, e0)) has kinks where the set
    # {x2: A/B(x2) > c(x1)} reaches an end of (0, e0) or an atom's sign changes: where
    # P/Q(x1) = c r for r = P/Q at the ends (the atoms' ratios), c = e^eps or its inverse
    r_ends = [p_lo / q_lo, p_hi / q_hi]

    def kinks(a):
        cs = [a / r for r in r_ends] if remove else [1 / (a * r) for r in r_ends]
        return [ratio_x(c) for c in cs]
    return atoms, mass_where_ratio_above, dens, e0, kinks


def exact_delta(q: float, e0: float, T: int, eps: float, remove: bool):
    """delta(eps) of T in {1, 2} steps: sum over the parts of the (product) pair of
    int (A - e^eps B)_+, each inner integral in closed form."""
    atoms, above, dens, e0m, kinks = _parts(q, e0, remove)
    a = mp.e ** mp.mpf(eps)

    def one(wa, wb):  # int (wa A - a wb B)_+ over the atoms and (0, e0)
        out = sum(max(wa * pa_ - a * wb * qa, 0) for pa_, qa in atoms)
        ma, mb = above(a * wb / wa)
        return out + max(wa * ma - a * wb * mb, 0)

    if T == 1:
        return one(mp.mpf(1), mp.mpf(1))
    out = sum(one(pa_, qa) for pa_, qa in atoms)
    cuts = sorted(set(mp.linspace(0, e0m, 9)) | set(kinks(a)))
    out += mp.quad(lambda x: one(*dens(x)), cuts)
    return out


def exact_delta_run(q: float, b: float, T: int, eps: float) -> float:
    """The run's delta(eps): the larger of the remove and add directions'."""
    return float(max(exact_delta(q, 1.0 / b, T, eps, r) for r in (True, False)))


@pytest.mark.parametrize("q, b, T", [
    (1e-2, 0.3, 1), (1e-1, 1.0, 1), (0.5, 2.0, 1),
    (1e-2, 0.3, 2), (1e-1, 1.0, 2), (0.3, 0.5, 2),
])
def test_interval_brackets_exact_epsilon(q, b, T):
    """delta is nonincreasing in epsilon: the exact epsilon lies in [lower, upper] iff the
    exact delta at upper is <= DELTA <= the exact delta at lower."""
    mp.mp.dps = 20
    res = pa.Training(pa.Laplace(b), pa.Poisson(q), steps=T).epsilon(DELTA)
    up, lo = float(res.upper.value), float(res.lower.value)
    assert exact_delta_run(q, b, T, up) <= DELTA * (1 + 1e-9)
    assert exact_delta_run(q, b, T, lo) >= DELTA * (1 - 1e-9)
    assert up - lo <= 5e-3 * up  # the interval stays narrow


def test_exact_reference_matches_laplace_profile_at_rate_one():
    """The reference itself, at q -> 1 (remove pair = the Laplace pair): Balle, Barthe,
    Gaboardi 2018, Thm 3, delta(eps) = 1 - exp((eps - e0) / 2)."""
    mp.mp.dps = 30
    e0, eps = 2.0, 0.7
    got = exact_delta(1 - 1e-12, e0, 1, eps, True)
    assert abs(float(got) - (1 - math.exp((eps - e0) / 2))) < 1e-10


@pytest.mark.parametrize("q, b, T, rel", [
    # issue 28's four rows and tiny rates: at or below dp-accounting's epsilon
    (1e-4, 0.5, 100, 0.0), (1e-3, 0.5, 10, 0.0), (1e-3, 2.0, 10_000, 0.0),
    (1e-2, 2.0, 100, 0.0), (1e-5, 1.0, 1000, 0.0), (1e-3, 0.3, 1000, 0.0),
    # the lower side in two levels (T >= 5000, session 10)
    (1e-4, 2.0, 10_000, 0.0), (1e-4, 0.5, 10_000, 0.0),
    # wide losses (rate 0.1): both nearly exact; privamp's certified float allowances
    # and its step (<= 2e-4, against dp-accounting's 1e-4) may put it up to ~5e-7 above
    (0.1, 5.0, 10, 1e-6), (0.1, 0.5, 10, 1e-6),
])
def test_upper_at_or_below_dp_accounting(q, b, T, rel):
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    dp = pld.from_laplace_mechanism(parameter=b, sensitivity=1.0, sampling_prob=q
                                    ).self_compose(T).get_epsilon_for_delta(DELTA)
    res = pa.Training(pa.Laplace(b), pa.Poisson(q), steps=T).epsilon(DELTA)
    up, lo = float(res.upper.value), float(res.lower.value)
    assert up <= dp * (1.0 + rel)
    assert 0 < lo <= up
    assert up - lo <= 1e-2 * up  # a two-sided interval, not a token lower bound


@pytest.mark.parametrize("q, b", [(1e-5, 0.3), (1e-2, 1.0), (0.5, 5.0)])
def test_loss_range_is_the_closed_form_support(q, b):
    """Poisson-subsampled Laplace's loss lies in [log(1 - q (1 - e^-e0)),
    log(1 + q (e^e0 - 1))] (its atoms at the ends, e0 = 1 / b): the range used for the grid
    contains both atoms and leaves no mass outside, in both directions."""
    from privamp.accountants.poisson import poisson_pairs

    e0 = 1.0 / b
    top, bottom = math.log1p(q * math.expm1(e0)), math.log1p(-q * -math.expm1(-e0))
    remove, add = poisson_pairs(pa.Laplace(b), q)
    for pair, (lo_atom, hi_atom) in ((remove, (bottom, top)), (add, (-top, -bottom))):
        lo, hi = pair.loss_range(1e-16)
        assert lo <= lo_atom and hi >= hi_atom
        assert hi - lo <= (hi_atom - lo_atom) * (1 + 1e-6)
        for dist in ("P", "Q"):
            assert float(pair.tail(hi, dist, True, True)) == 0.0
            assert float(pair.tail(lo, dist, False, True)) == 0.0


@pytest.mark.parametrize("q, b, T", [(1e-2, 0.5, 100), (1e-2, 1.0, 100), (0.1, 2.0, 100)])
def test_lower_on_the_pessimistic_step_stays_tight(q, b, T):
    """Where one step spans >= LAPLACE_SPLIT_MAX_POINTS grid steps the lower side is
    discretised on the pessimistic step (issue 28, session 10): the lower bound stays within
    5e-4 (relative) of dp-accounting's estimate (connect-the-dots at 1e-4, an independent
    near-exact value) and the interval within 5e-4 of the upper bound."""
    from privamp.accountants.laplace_poisson import LAPLACE_SPLIT_MAX_POINTS

    assert LAPLACE_SPLIT_MAX_POINTS >= 100
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    dp = pld.from_laplace_mechanism(parameter=b, sensitivity=1.0, sampling_prob=q
                                    ).self_compose(T).get_epsilon_for_delta(DELTA)
    res = pa.Training(pa.Laplace(b), pa.Poisson(q), steps=T).epsilon(DELTA)
    up, lo = float(res.upper.value), float(res.lower.value)
    assert lo >= dp * (1 - 5e-4)
    assert up - lo <= 5e-4 * up
