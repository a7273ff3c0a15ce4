"""The issue-28 forms of :mod:`privamp.numerics.chernoff`'s blocking and merging against the
forms they replaced (commit da5d972, copied here verbatim as the reference): bit-identical
blocked masses and positions (unchanged code, kept as a guard) and merged scan inputs on random measures (zeros, ties, spikes,
the lengths of real queries), so every Chernoff window is unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from privamp.numerics import chernoff
from privamp.numerics.chernoff import UNIT_ROUNDOFF, blocked_log_masses_both, chernoff_k

_SCAN_POINTS = 1024


def reference_merged(logp: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(logp)
    g = -(-n // _SCAN_POINTS)
    if g <= 1:
        return logp, idx
    nb = -(-n // g)
    buf: np.ndarray = np.full(nb * g, -np.inf)
    buf[:n] = logp
    buf = buf.reshape(nb, g)
    mx = buf.max(axis=1)
    at = np.minimum(np.arange(nb) * g + np.argmax(buf, axis=1), n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        buf -= mx[:, None]
        lse = mx + np.log(np.exp(buf, out=buf).sum(axis=1))
    return lse, idx[at]


def reference_blocks(p: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(p)
    if n <= 2 * points:
        nz = np.nonzero(p > 0)[0]
        at = nz.astype(float)
        return np.log(p[nz]), at, at
    b = -(-n // points)
    nb = -(-n // b)
    buf = np.zeros(nb * b)
    buf[:n] = p
    sums = buf.reshape(nb, b).sum(axis=1) * (1.0 + (b + 2) * UNIT_ROUNDOFF)
    first = np.arange(nb) * b
    last = np.minimum(first + (b - 1), n - 1)
    k = min(max(1, (2 * points) // b), nb)
    exact = np.zeros(nb, dtype=bool)
    exact[np.argpartition(-sums, k - 1)[:k]] = True
    keep = (sums > 0) & ~exact
    ent = (np.arange(nb * b).reshape(nb, b)[exact]).ravel()
    ent = ent[ent < n]
    ent = ent[p[ent] > 0]
    order = np.argsort(np.concatenate((last[keep], ent)), kind="stable")
    with np.errstate(divide="ignore"):
        logs = np.concatenate((np.log(sums[keep]), np.log(p[ent])))
    at_max = np.concatenate((last[keep], ent))[order].astype(float)
    at_min = np.concatenate((first[keep], ent))[order].astype(float)
    return logs[order], at_max, at_min


def _measures(seed: int):
    rng = np.random.default_rng(seed)
    for n in (5, 300, 8192, 8193, 9359, 18714, 37429, 58288, 100003):
        p = np.exp(-0.5 * ((np.arange(n) - rng.uniform(0, n)) / rng.uniform(1, n)) ** 2)
        p[rng.random(n) < 0.3] = 0.0  # zeros, zero blocks
        yield p
        q = p.copy()
        q[: n // 2] = 0.0
        q[rng.integers(0, n, 5)] = 1.0  # ties among the heaviest blocks, spikes
        yield q
        yield np.round(rng.random(n), 1)  # many ties and zeros


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("points", [256, 4096])
def test_blocks_bit_identical(seed: int, points: int) -> None:
    for p in _measures(seed):
        if not p.max() > 0:
            continue
        (hl, hi), (rl, ri) = blocked_log_masses_both(p, points)
        logs, at_max, at_min = reference_blocks(p, points)
        assert np.array_equal(hl, logs) and np.array_equal(hi, at_max)
        assert np.array_equal(rl, logs[::-1])
        assert np.array_equal(ri, (len(p) - 1) - at_min[::-1])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_merged_and_k_bit_identical(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    for p in _measures(seed):
        if not p.max() > 0:
            continue
        for logp, idx in blocked_log_masses_both(p):
            ml, mi = chernoff._merged(logp, idx)
            rl, ri = reference_merged(logp, idx)
            assert np.array_equal(ml, rl) and np.array_equal(mi, ri)
            lams, kb = chernoff_k(logp, idx, 740, 34.26)
            with monkeypatch.context() as m:
                m.setattr(chernoff, "_merged", reference_merged)
                lams0, kb0 = chernoff_k(logp, idx, 740, 34.26)
            assert np.array_equal(lams, lams0) and np.array_equal(kb, kb0)
