"""The hoisted chain of :func:`privamp.pld.binning.vertex_lowering` (issue 28) against the
step-by-step form it replaced (commit 14e61b2, copied here verbatim as the reference):
bit-identical lowerings on random tents (with and without caps, extreme peak positions)
and on every call a few real queries make, so the certified lower side is unchanged.
Session 11: the chain runs in chunks of blocks (bounded memory); the same bits with tiny
chunks (many chunk boundaries, a padded last chunk) and on a grid of several real chunks,
and the peak traced memory stays a few grid-length arrays."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import privamp as pa
from privamp.pld import binning
from privamp.pld.binning import vertex_lowering

_U = float(np.finfo(float).eps) / 2.0
_BLOCK = 32
_LEFT = 1e-3


def reference_lowering(g: np.ndarray, t: np.ndarray, cap: np.ndarray | None = None
                       ) -> np.ndarray:
    """The pre-issue-28 implementation, unchanged."""
    K = len(g)
    gi = g * (1.0 + 1e-9)
    mu_max = np.empty(K + 1)
    mu_max[0] = gi[0]
    mu_max[K] = gi[K - 1]
    if K > 1:
        mu_max[1:K] = np.maximum(gi[:-1], gi[1:])
    L = _BLOCK
    nb = -(-K // L)
    pad = nb * L - K
    gp = np.concatenate((gi, np.zeros(pad))).reshape(nb, L)
    tp = np.concatenate((t, np.full(pad, 0.5))).reshape(nb, L)
    mm = np.concatenate((mu_max, np.zeros(pad))).reshape(-1)
    up = 1.0 + 4.0 * _U
    if cap is None:
        cap = np.full(K + 1, np.inf)
    cp = np.concatenate((cap, np.full(pad, np.inf)))
    vidx = np.arange(nb) * L
    chain = np.zeros((nb, L + 1))
    chain[:, 0] = mm[0 : nb * L : L]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(L):
            tk, gk = tp[:, i], gp[:, i]
            fwd = np.maximum((gk - (1.0 - tk) * chain[:, i]) / np.where(tk > 0, tk, 1.0),
                             0.0) * up
            left = (tk < _LEFT) | (fwd > cp[vidx + i + 1])
            need = gk / np.where(tk < 1.0, 1.0 - tk, 1.0) * up
            both = left & (need > cp[vidx + i])
            new_left = np.where(both, gk * up, need)
            chain[:, i] = np.where(left, np.maximum(chain[:, i], new_left), chain[:, i])
            chain[:, i + 1] = np.where(both, gk * up, np.where(left, 0.0, fwd))
    mu = np.zeros(nb * L + 1)
    mu[: nb * L] = chain[:, :L].reshape(-1)
    mu[L : nb * L + 1 : L] = np.maximum(mu[L : nb * L + 1 : L], chain[:, L])
    mu = mu[: K + 1]
    lhs = (1.0 - t) * mu[:-1] + t * mu[1:]
    bad = np.nonzero(lhs < gi)[0]
    if len(bad):
        mu[bad] = np.maximum(mu[bad], mu_max[bad])
        mu[bad + 1] = np.maximum(mu[bad + 1], mu_max[bad + 1])
    return mu


@pytest.mark.parametrize("seed", range(40))
def test_same_bits_on_random_tents(seed: int) -> None:
    rng = np.random.default_rng(seed)
    K = int(rng.choice([1, 2, 31, 32, 33, 64, 257, 1000, 4099]))
    g = rng.exponential(1.0, K) * 10.0 ** rng.uniform(-12, 0, K)
    g[rng.random(K) < 0.1] = 0.0
    if seed % 2:
        t = rng.choice([0.0, 1e-12, 1e-4, 0.5, 1 - 1e-12, 1.0, 2e-3], K)
    else:
        t = rng.uniform(0.0, 1.0, K)
    cap = None
    if seed % 3 == 0:
        cap = np.sort(rng.exponential(1.0, K + 1) * 10.0 ** rng.uniform(-10, 0))[::-1]
    elif seed % 3 == 1:
        cap = np.full(K + 1, np.inf)
    new, old = vertex_lowering(g, t, cap=cap), reference_lowering(g, t, cap=cap)
    np.testing.assert_array_equal(new, old)


def test_same_bits_on_real_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every lowering the PLD path asks for in a few queries (Gaussian and Laplace, several
    rates and noise levels) is the same as the reference's."""
    seen: list[int] = []

    def both(g, t, cap=None):
        new = vertex_lowering(g, t, cap=cap)
        np.testing.assert_array_equal(new, reference_lowering(g, t, cap=cap))
        seen.append(len(g))
        return new

    monkeypatch.setattr(binning, "vertex_lowering", both)
    for mech, q, T in [(pa.Gaussian(1.1), 256 / 60000, 1000), (pa.Gaussian(0.7), 0.01, 100),
                       (pa.Gaussian(3.0), 1e-3, 50), (pa.Laplace(1.0), 1e-2, 20)]:
        pa.Training(mech, pa.Poisson(q), steps=T).epsilon(1e-5)
    assert len(seen) >= 4


@pytest.mark.parametrize("chunk", [1, 2, 3, 7])
@pytest.mark.parametrize("seed", range(12))
def test_same_bits_with_tiny_chunks(seed: int, chunk: int,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(binning, "_CHAIN_CHUNK", chunk)
    rng = np.random.default_rng(100 + seed)
    K = int(rng.choice([1, 31, 32, 33, 95, 96, 97, 250, 1000]))
    g = rng.exponential(1.0, K) * 10.0 ** rng.uniform(-12, 0, K)
    g[rng.random(K) < 0.1] = 0.0
    t = (rng.choice([0.0, 1e-12, 1e-4, 0.5, 1 - 1e-12, 1.0, 2e-3], K) if seed % 2
         else rng.uniform(0.0, 1.0, K))
    cap = None
    if seed % 3 == 0:
        cap = np.sort(rng.exponential(1.0, K + 1) * 10.0 ** rng.uniform(-10, 0))[::-1]
    np.testing.assert_array_equal(vertex_lowering(g, t, cap=cap),
                                  reference_lowering(g, t, cap=cap))


def test_same_bits_and_bounded_memory_on_a_long_grid() -> None:
    """K = 600,001 segments (five chunks, the last one padded): the same bits, and the
    traced peak of the lowering is below 4 grid-length float arrays (the reference's was
    about 20)."""
    rng = np.random.default_rng(7)
    K = 600_001
    g = rng.exponential(1.0, K) * 10.0 ** rng.uniform(-12, 0, K)
    t = rng.uniform(0.0, 1.0, K)
    t[rng.random(K) < 0.01] = 1e-5
    cap = np.sort(rng.exponential(1.0, K + 1))[::-1] * 1e-3
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        new = vertex_lowering(g, t, cap=cap)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert peak < 4 * 8 * (K + 1)
    np.testing.assert_array_equal(new, reference_lowering(g, t, cap=cap))
