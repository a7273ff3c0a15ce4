"""The tail-sparsity rule of session 11 (accountants/short_grid.py ``tail_sparsity``, issue 28):
one-level runs (tiny rates) of at most DENSE_TAIL_MAX_T steps whose one-level step the range sets
(coarser than the automatic step), of at least DENSE_TAIL_MIN_STEP (DENSE_TAIL_LONG_STEP from
SHORT_RUN_COARSE_T steps on), discretise the remove direction's pessimistic tail densely, every
other one-level pessimistic step over the sparse tail (one point in SPARSE_TAIL).  The rule's
picks on the scan's plans; the dense tail's upper bound below the sparse tail's (chords over a
superset of points lie below); and on the rows it closes, privamp's certified upper bound at or
below dp-accounting's PLD estimate (computed here, the independent reference).  Soundness of
both tails: tests/pld/test_tiny_rates.py (one step against mpmath, sparse_tail 1 and 32)."""

from __future__ import annotations

import pytest
from dpa_peer import assert_within_dp_accounting

import privamp as pa
import privamp.accountants.poisson as poisson_mod
from privamp.accountants.grid import grid_plan
from privamp.accountants.poisson import poisson_pairs
from privamp.accountants.short_grid import (
    DENSE_TAIL_LONG_STEP,
    DENSE_TAIL_MAX_POINTS,
    DENSE_TAIL_MAX_T,
    DENSE_TAIL_MIN_HITS,
    DENSE_TAIL_MIN_STEP,
    SHORT_RUN_COARSE_T,
    SPARSE_TAIL,
    tail_sparsity,
)

TAIL = 1e-16


def _pick(q: float, sigma: float, T: int, direction: int = 0) -> int:
    """The rule's pick for one direction of the scan's setting (its one-level plan)."""
    pair = poisson_pairs(pa.Gaussian(sigma), q)[direction]
    h, _, one = grid_plan(pair, T, short_run=True)
    return tail_sparsity(pair, one, h, T, min(TAIL, 1e-13 / T))


def test_rule_bounds() -> None:
    lead = poisson_pairs(pa.Gaussian(0.3), 1e-4)[0]
    lo, hi = lead.loss_range(TAIL)
    step = max(DENSE_TAIL_LONG_STEP, (hi - lo) / 4e5)
    h = step / 3
    assert tail_sparsity(lead, None, h, 10, TAIL) == 1  # no one-level step: no sparse tail
    assert tail_sparsity(lead, step, h, 10, TAIL) == 1
    assert tail_sparsity(lead, step, step, 10, TAIL) == SPARSE_TAIL  # the bulk sets the step
    assert tail_sparsity(lead, step, h, DENSE_TAIL_MAX_T, TAIL) == 1
    assert tail_sparsity(lead, step, h, DENSE_TAIL_MAX_T + 1, TAIL) == SPARSE_TAIL
    small = DENSE_TAIL_MIN_STEP * 0.99
    assert tail_sparsity(lead, small, small / 3, 10, TAIL) == SPARSE_TAIL
    assert tail_sparsity(lead, step, h, int(DENSE_TAIL_MIN_HITS / 1e-4) - 1, TAIL) == SPARSE_TAIL
    mid = DENSE_TAIL_LONG_STEP * 0.99
    assert tail_sparsity(lead, mid, mid / 3, SHORT_RUN_COARSE_T - 1, TAIL) == 1
    assert tail_sparsity(lead, mid, mid / 3, SHORT_RUN_COARSE_T, TAIL) == SPARSE_TAIL
    # a grid of more than DENSE_TAIL_MAX_POINTS points stays sparse
    fine = (hi - lo) / (DENSE_TAIL_MAX_POINTS * 1.01)
    assert fine >= DENSE_TAIL_MIN_STEP  # (the range is wide enough for this check)
    assert tail_sparsity(lead, fine, fine / 3, 10, TAIL) == SPARSE_TAIL
    add = poisson_pairs(pa.Gaussian(0.3), 1e-4)[1]
    assert tail_sparsity(add, step, h, 10, TAIL) == SPARSE_TAIL  # the add direction: sparse


@pytest.mark.parametrize("q, sigma, T", [
    (1e-5, 0.3, 100), (1e-4, 0.3, 10), (1e-4, 0.3, 100), (1e-4, 0.3, 10**4),
    (1e-3, 0.3, 10), (1e-3, 0.3, 100), (1e-3, 0.5, 10)])
def test_dense_on_the_looser_rows(q: float, sigma: float, T: int) -> None:
    """The seven scan rows the sparse tail held above dp-accounting take the dense tail."""
    assert _pick(q, sigma, T) == 1
    assert _pick(q, sigma, T, direction=1) == SPARSE_TAIL


@pytest.mark.parametrize("q, sigma, T", [
    (1e-7, 0.3, 10**6), (1e-5, 0.3, 10**4), (1e-6, 0.3, 10**4), (1e-5, 0.5, 100),
    (1e-7, 0.5, 10**4), (1e-5, 1.0, 10), (1e-6, 1.0, 10**4), (1e-4, 2.0, 10),
    (1e-3, 1.0, 100), (1e-3, 0.8, 1000), (1e-3, 1.0, 1000), (1e-6, 0.3, 100),
    (1e-5, 0.3, 10), (1e-7, 0.3, 100)])
def test_sparse_where_not_needed(q: float, sigma: float, T: int) -> None:
    """Long one-level runs, fine one-level steps, steps the bulk sets (sigma >= 0.8; the
    17-setting grid's T 1e3 rows at q 1e-3), and runs of fewer than DENSE_TAIL_MIN_HITS
    expected sampled steps keep the sparse tail."""
    assert grid_plan(poisson_pairs(pa.Gaussian(sigma), q)[0], T, short_run=True)[2] is not None
    assert _pick(q, sigma, T) == SPARSE_TAIL


def test_dense_tail_not_looser(monkeypatch: pytest.MonkeyPatch) -> None:
    """q 1e-3, sigma 0.5, T 100 (one level, dense by the rule): the upper bound on the dense
    tail at or below the sparse tail's (connect-the-dots chords over a superset of points lie
    below), the lower bound unchanged (the optimistic side keeps its sparse tail)."""
    def run() -> tuple[float, float]:
        r = pa.Training(pa.Gaussian(0.5), pa.Poisson(1e-3), steps=100).epsilon(1e-5)
        assert r.lower is not None
        return float(r.lower.value), float(r.upper.value)

    lo_dense, up_dense = run()
    monkeypatch.setattr(poisson_mod, "tail_sparsity",
                        lambda pair, one, h, T, tail: 1 if one is None else SPARSE_TAIL)
    lo_sparse, up_sparse = run()
    assert up_dense < up_sparse
    assert lo_dense == lo_sparse
    assert 0.0 < lo_dense <= up_dense


@pytest.mark.slow  # (dp-accounting: ~1-2 s a call; privamp ~0.3-0.5 s)
@pytest.mark.parametrize("q, sigma, T, width", [(1e-4, 0.3, 10**4, 1e-5),
                                                (1e-3, 0.5, 10, 1e-6)])
def test_closed_rows_against_dp_accounting(q: float, sigma: float, T: int,
                                           width: float) -> None:
    """The two rows the dense tail closes: certified upper at or below dp-accounting's."""
    assert_within_dp_accounting(q, sigma, T, width)
