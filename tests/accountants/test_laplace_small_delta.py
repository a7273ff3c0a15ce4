"""Poisson-subsampled Laplace at small delta (review, session 9): the default call's upper
bound at or below dp-accounting's pessimistic epsilon (value_discretization_interval 1e-4,
computed here, independently) up to a small relative tolerance, and the lower bound below
it.  Before the precise pass (accountants/laplace_poisson.py ``laplace_precise``), q 0.1,
b 3, T 100, delta 1e-10 gave upper 1.941 against 1.924."""

from __future__ import annotations

import pytest

import privamp as pa

#: privamp certifies its float error (the single step's discretisation allowance, ~1e-15
#: per step, paid T times) where dp-accounting does not: about 1e-3 of delta at 1e-10,
#: a few 1e-5 of epsilon
REL = 1e-4

CASES = [
    (0.1, 3.0, 100, 1e-10),
    (0.5, 10.0, 100, 1e-10),
    (1e-4, 0.5, 100, 1e-12),
    (1e-3, 0.3, 1000, 1e-10),
    (0.2, 5.0, 30, 1e-11),
    (0.01, 1.0, 1000, 1e-8),
    (0.1, 2.0, 100, 1e-5),
]


@pytest.mark.parametrize("q, b, T, delta", CASES)
def test_small_delta_against_dp_accounting(q, b, T, delta):
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    ref = float(pld.from_laplace_mechanism(
        parameter=b, sensitivity=1.0, sampling_prob=q, pessimistic_estimate=True,
        value_discretization_interval=1e-4).self_compose(T).get_epsilon_for_delta(delta))
    res = pa.Training(pa.Laplace(b), pa.Poisson(q), steps=T).epsilon(delta)
    up, lo = float(res.upper.value), float(res.lower.value)
    assert up <= ref * (1.0 + REL)
    assert lo <= ref
    assert "PLD" in res.upper.source  # the PLD accountant answered, not a looser one
