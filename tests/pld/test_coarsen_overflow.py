"""Optimistic coarsening of a PLD whose losses lie past e^709 (issue 27: no RuntimeWarning
reaches users).  The coarsened optimistic side must stay below the exact privacy profile
delta(eps) = sum_i p_i (1 - e^{eps - l_i})_+ of the PLD it coarsens (a closed form), and no
numpy warning may escape."""

import warnings

import numpy as np

from privamp.pld.grid import PLD


def _exact_delta(losses: np.ndarray, masses: np.ndarray, eps: float) -> float:
    return float(np.sum(masses * -np.expm1(np.minimum(eps - losses, 0.0))))


def test_optimistic_coarsen_past_exp_overflow_is_silent_and_below_the_profile():
    h = 0.01
    offset = 70_000  # losses 700 .. 900: e^l overflows past 709.78
    masses = np.full(20_001, 1.0 / 20_001)
    p = PLD(h, offset, masses, 0.0, "optimistic", 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = p.coarsen(8)
        losses = (offset + np.arange(len(masses))) * h
        for eps in (0.0, 100.0, 705.0, 750.0, 850.0):
            d = float(np.asarray(c.delta(eps)))
            assert 0.0 <= d <= _exact_delta(losses, masses, eps) + 1e-15
