"""The issue-28 forms of :mod:`privamp.numerics.chernoff`'s merging (``_merged``) and of
:func:`chernoff_lambda`'s Newton steps against the forms they replaced (commit da5d972,
copied here verbatim as the reference), and the blocking against its unchanged form (a
guard): bit-identical merged scan inputs, lambdas, log-MGF bounds, blocked masses and
positions on random measures (zeros, ties, spikes, the lengths of real queries), so every
Chernoff window is unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privamp.numerics import chernoff
from privamp.numerics.chernoff import (
    UNIT_ROUNDOFF,
    blocked_log_masses_both,
    chernoff_k,
    chernoff_lambda,
    log_mgf_bounds,
)

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


def reference_lambda(logp: np.ndarray, idx: np.ndarray, T: int, c: float) -> float:
    top = float(idx[-1])
    w0 = np.exp(logp - logp.max())
    mean = float(np.sum(w0 * idx) / np.sum(w0))
    var = float(np.sum(w0 * (idx - mean) ** 2) / np.sum(w0))
    lam = math.sqrt(2.0 * c / (T * max(var, 1e-12)))
    lam = min(max(lam, 1e-12), 50.0)

    def scan(lams: np.ndarray) -> int | None:
        xs = (T * log_mgf_bounds(logp, idx, lams) + c) / lams
        fin = np.isfinite(xs)
        return int(np.argmin(np.where(fin, xs, np.inf))) if fin.any() else None

    near = lam * np.geomspace(1.0 / 8.0, 8.0, 9)
    i = scan(near)
    if i is None or i in (0, len(near) - 1):
        wide = np.geomspace(1e-12, 50.0, 48)
        i = scan(wide)
        lam = lam if i is None else float(wide[i])
    else:
        lam = float(near[i])
    fine = lam * np.geomspace(1.0 / 1.7, 1.7, 17)
    i = scan(fine)
    lam = lam if i is None else float(fine[i])
    best, best_lam = math.inf, lam
    for _ in range(8):
        a = logp + lam * (idx - top)
        mx = float(a.max())
        w = np.exp(a - mx)
        sw = float(w.sum())
        k = mx + math.log(sw) + lam * top
        x = (T * k + c) / lam
        if not math.isfinite(x) or (best < math.inf and not x < best - 1e-6 * abs(best)):
            break
        best, best_lam = x, lam
        m1 = float(np.sum(w * idx)) / sw
        m2 = float(np.sum(w * (idx - m1) ** 2)) / sw
        g = lam * T * m1 - T * k - c
        gp = lam * T * max(m2, 1e-300)
        lam = min(max(lam - g / gp, lam / 4.0), 4.0 * lam, 50.0)
    return best_lam


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
            for T, c in ((740, 34.26), (19, 37.9), (100000, 20.0), (2, 60.0)):
                assert chernoff_lambda(ml, mi, T, c) == reference_lambda(rl, ri, T, c)
            lams, kb = chernoff_k(logp, idx, 740, 34.26)
            with monkeypatch.context() as m:
                m.setattr(chernoff, "_merged", reference_merged)
                lams0, kb0 = chernoff_k(logp, idx, 740, 34.26)
            assert np.array_equal(lams, lams0) and np.array_equal(kb, kb0)


def test_lambda_other_dtypes() -> None:
    """float32 log masses and integer positions promote as in the reference (float64)."""
    rng = np.random.default_rng(3)
    idx = np.sort(rng.choice(50000, 900, replace=False))
    logp = (-0.5 * ((idx - 20000.0) / 3000.0) ** 2).astype(np.float32)
    for T, c in ((740, 34.26), (19, 37.9)):
        assert chernoff_lambda(logp, idx, T, c) == reference_lambda(logp, idx, T, c)
