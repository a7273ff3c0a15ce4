"""Session 12: :func:`privamp.pld.moments.renyi_floor` keeps its Jensen blocks on the PLD
(the screening asks each PLD's floor at new orders every round).  Reference: the function as
it was before (copied verbatim below), bit for bit, on first and repeated calls, and after the
PLD's fields change (the memo must not be read then)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privamp as pa
from privamp.accountants.poisson import poisson_pairs
from privamp.pld.discretise import discretise
from privamp.pld.grid import PLD
from privamp.pld.jensen_blocks import block_sums
from privamp.pld.moments import renyi_floor


def _reference(pld: PLD, alpha: np.ndarray) -> np.ndarray:
    """renyi_floor before session 12, verbatim (module constants inlined)."""
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    if pld.inf_mass > 0:
        return np.full(a.shape, np.inf)
    n = len(pld.masses)
    k = max(1, math.ceil(n / 1024))
    blocks, weighted = block_sums(pld.masses, pld.slack, k)
    keep = blocks > 0
    if not keep.any():
        return np.zeros(a.shape)
    index = weighted[keep] / blocks[keep]
    lm = (pld.offset + k * np.flatnonzero(keep) + index) * pld.h
    lw = np.log(blocks[keep])
    out = np.empty(a.shape)
    for i in range(0, a.size, 64):
        t = (a[i : i + 64] - 1.0)[:, None]
        e = t * lm[None, :] + lw[None, :]
        top = e.max(axis=1, keepdims=True)
        with np.errstate(invalid="ignore"):
            lse = top[:, 0] + np.log(np.exp(e - top).sum(axis=1))
        out[i : i + 64] = lse / t[:, 0]
    return np.maximum(out, 0.0)


@pytest.mark.parametrize("q,sigma,h", [(1e-3, 1.0, 1e-4), (0.1, 0.7, 1e-3), (1e-5, 4.0, 1e-7)])
def test_memo_bit_identical(q, sigma, h):
    _, o = discretise(poisson_pairs(pa.Gaussian(sigma), q)[0], h, 1e-16)
    assert o is not None
    rounds = [1.0 + np.geomspace(1e-9, 1e6, 48), np.array([1.5, 2.0, 33.0]), np.array(7.0)]
    for a in rounds + rounds:  # (the second pass reads the memo)
        np.testing.assert_array_equal(renyi_floor(o, a), _reference(o, a))


def test_memo_not_read_after_a_change():
    _, o = discretise(poisson_pairs(pa.Gaussian(1.0), 0.01)[0], 1e-4, 1e-16)
    assert o is not None
    a = 1.0 + np.geomspace(1e-3, 1e3, 20)
    renyi_floor(o, a)
    o.slack = 1e-6  # (a field changed in place)
    np.testing.assert_array_equal(renyi_floor(o, a), _reference(o, a))
    o.masses = o.masses * 0.5
    np.testing.assert_array_equal(renyi_floor(o, a), _reference(o, a))
    empty = PLD(o.h, 0, np.zeros(3), 0.0, "optimistic")
    np.testing.assert_array_equal(renyi_floor(empty, a), np.zeros(a.shape))
    np.testing.assert_array_equal(renyi_floor(empty, a), _reference(empty, a))
