"""Session 12: the add direction of a Poisson-subsampled Laplace run starts as the remove
direction's composed pessimistic PLD swapped (:func:`~privamp.accountants.poisson_bounds.
swapped_pessimistic`), composed on its own grid only where it decides.  References:
dp-accounting's pessimistic add-direction PLD at a fine grid (above the truth), and the
identity delta_add(e) = 1 - e^e + e^e delta_rm(-e) applied to the remove direction's certified
optimistic run PLD (below the truth)."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

import privamp as pa
from privamp.accountants.poisson import pld_analysis


def _dpa_add(q: float, b: float, T: int):
    from dp_accounting.pld import privacy_loss_distribution as pld

    logging.disable(logging.WARNING)
    try:
        one = pld.from_laplace_mechanism(b, sampling_prob=q, pessimistic_estimate=True,
                                         value_discretization_interval=1e-5)
        return one.self_compose(T)._pmf_add
    finally:
        logging.disable(logging.NOTSET)


@pytest.mark.parametrize("q,b,T", [(1e-3, 2.0, 100), (1e-3, 0.5, 100), (1e-2, 1.0, 100)])
def test_laplace_swapped_add_direction(q, b, T):
    an = pld_analysis(pa.Training(pa.Laplace(b), pa.Poisson(q), steps=T))
    up, lo = an.epsilon(1e-5)
    assert 1 in an._swapped  # (the swap stood: the remove direction decides)
    (_, o_rm), (add, _) = an.pld().directions
    hi = _dpa_add(q, b, T)
    lowers = []
    for eps in np.array([0.25, 0.5, 1.0, 1.5]) * float(up.value):
        got = float(add.delta(eps))
        lower = 1.0 - math.exp(eps) + math.exp(eps) * float(o_rm.delta(-eps))
        lowers.append(lower)
        assert got >= lower - 1e-12 * abs(lower)
        assert got <= hi.get_delta_for_epsilon(eps) * (1 + 2e-3) + 1e-9  # (its coarser grid)
    assert max(lowers) > 1e-6  # (the reference is not vacuous)


def test_laplace_unswaps_where_it_decides():
    """A composition whose own add direction is asked for (the run's curve uses every
    direction's own step): the lazy step is discretised on the add direction's own grid."""
    an = pld_analysis(pa.Training(pa.Laplace(1.0), pa.Poisson(1e-3), steps=100))
    an.epsilon(1e-5)
    own = an._own_step(1)[0]
    assert own.h == an.grid[1] and 1 not in an._lazy
    # the own add PLD's run: below dp-accounting's pessimistic add direction at the answer
    run = own.self_compose(100)
    hi = _dpa_add(1e-3, 1.0, 100)
    for eps in (0.01, 0.05, 0.1):
        assert float(run.delta(eps)) <= hi.get_delta_for_epsilon(eps) * (1 + 2e-3) + 1e-9
