"""Array numerics of grid PLDs (no PLD objects): the discounted suffix sums behind
``PLD.delta`` / ``PLD.epsilon`` (:func:`discounted_suffix`, :func:`profile_at`) and the
mass/slack arithmetic of a product of grid pairs (:func:`product_allowances`).

Split from :mod:`privamp.pld.grid` (issue 26); the soundness arguments are in that module's
docstring.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np

from ..numerics.fft import UNIT_ROUNDOFF

if TYPE_CHECKING:
    from .grid import PLD

__all__ = [
    "GridLosses",
    "band_tables",
    "decay_weights",
    "discounted_suffix",
    "product_allowances",
    "profile_at",
    "underflow",
]


_U = UNIT_ROUNDOFF


class GridLosses:
    """The losses ``(offset + i) h``, 0 <= i < n, of a grid PLD, computed on access by the
    float operations of ``PLD.losses`` (so the same values) instead of stored: the query
    tables of a long PLD hold n floats fewer (issue 28).  Supports ``len``, indexing by
    integers and arrays of integers in [0, n), ``np.asarray`` (the stored array), and
    ``np.searchsorted(losses, v, side="right")``: exact, as the losses are nondecreasing
    in i (an integer-to-float conversion and a product by h > 0, both monotone), so a guess
    from ``v / h`` is moved to the count of losses <= v by comparisons with those values."""

    def __init__(self, offset: int, h: float, n: int) -> None:
        self.offset, self.h, self.n = offset, h, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        return (self.offset + np.asarray(i)) * self.h

    def __array__(self, dtype=None, copy=None):
        return np.asarray((self.offset + np.arange(self.n)) * self.h, dtype=dtype)

    def searchsorted(self, v, side: str = "right", sorter=None):
        va = np.asarray(v, dtype=float)
        n = self.n
        if side != "right" or sorter is not None or n == 0:
            return np.searchsorted(np.asarray(self), va, side=side,  # type: ignore[call-overload]
                                   sorter=sorter)
        x = va.reshape(-1)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            f = np.floor(x / self.h) - self.offset + 1.0
        g = np.clip(np.nan_to_num(f, nan=n, posinf=n, neginf=0.0), 0, n).astype(np.intp)
        g[np.isnan(x)] = n  # (numpy sorts NaN last)
        for _ in range(64):
            inc = (g < n) & (self[np.minimum(g, n - 1)] <= x)
            dec = (g > 0) & (self[np.maximum(g - 1, 0)] > x)
            if not (inc.any() or dec.any()):
                return g.reshape(va.shape)[()]
            g = g + inc.astype(np.intp) - dec.astype(np.intp)
        return np.searchsorted(np.asarray(self), va, side="right")


@functools.lru_cache(maxsize=16)
def decay_table(h: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(n) * h
    w = np.where(k <= 700.0, np.exp(-np.minimum(k, 700.0)), 0.0)
    om = -np.expm1(-k)
    w.flags.writeable = om.flags.writeable = False
    return w, om


def decay_weights(h: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """e^{-k h} (0 where k h > 700) and 1 - e^{-k h} for k = 0 .. n - 1 (read-only views
    of a cached table of the next power of two)."""
    w, om = decay_table(h, 1 << max(n - 1, 1).bit_length())
    return w[:n], om[:n]


#: entries per chunk of :func:`discounted_suffix`'s in-place passes
_SUFFIX_CHUNK = 1 << 16


def discounted_suffix(m: np.ndarray, h: float, up: bool) -> np.ndarray:
    """r_j = sum_{i >= j} m_i e^{-(i - j) h} for nonnegative m, in blocks of B <= 1024 points
    with B h <= 30: within a block, weights e^{-(i - s) h} >= e^{-30} and one reversed cumsum
    (a chain of nonnegative additions, like the first-order recursion it replaces); blocks
    are chained by r_s = (block sum) + e^{-B h} r_{s + B}.  Terms m_i e^{-(i-s)h} that
    round among subnormals err by at most 2^-1075 e^{30} each (either way); with ``up`` that
    allowance is added, else taken off (clipped at 0), so the tables stay on their side.
    (Replaces scipy.signal.lfilter: importing scipy.signal cost a tenth of privamp's import
    time.)"""
    n = len(m)
    B = int(max(1, min(1024, math.floor(30.0 / h))))
    nb = -(-n // B)
    wrev, tailrev, decay = suffix_weights(B, h)
    mm = np.zeros(nb * B)
    mm[:n] = m
    # the blocks from the top down, each read backwards (rows of a view of mm): the same
    # products and the same chains of additions as summing each block backwards in place;
    # done in mm a chunk of rows at a time (issue 28: no temporaries of the grid's length)
    inner = mm[::-1].reshape(nb, B)
    rows = max(1, _SUFFIX_CHUNK // B)
    for c in range(0, nb, rows):
        blk = np.cumsum(inner[c : c + rows] * wrev, axis=1)
        blk /= wrev
        inner[c : c + rows] = blk
    starts = inner[:, -1].copy()
    carry = np.zeros(nb)
    acc = 0.0
    for b in range(nb):  # r at the start of the block above, chained
        carry[b] = acc
        acc = float(starts[b]) + decay * acc
    for c in range(0, nb, rows):
        inner[c : c + rows] += carry[c : c + rows, None] * tailrev
    r = mm[:n]
    a = n * math.exp(30.0) * 5e-324  # the allowance of :func:`underflow`, in place
    if up:
        r += a
    else:
        r -= a
        np.maximum(r, 0.0, out=r)
    return r


def underflow(x, count: float, up: bool):
    """x raised (``up``), or lowered and clipped at 0, by ``count`` times 5e-324: products
    rounded among subnormals are each within 2^-1075 of the exact value; ``count`` is their
    number times the largest factor they are then divided by."""
    a = count * 5e-324
    return x + a if up else np.maximum(x - a, 0.0)


def suffix_weights(B: int, h: float) -> tuple[np.ndarray, np.ndarray, float]:
    """For :func:`discounted_suffix`: e^{-k h} for k = B - 1 .. 0 and e^{-(B - k) h} for
    k = 0 .. B - 1 read backwards (read-only views of :func:`decay_weights`; B h <= 30),
    and e^{-B h}."""
    w = decay_weights(h, B + 1)[0]
    return w[B - 1 :: -1], w[1 : B + 1], math.exp(-B * h)


def profile_at(m: np.ndarray, l: np.ndarray) -> np.ndarray:
    """G_j = sum_{i > j} m_i (1 - e^{-(l_i - l_j)}) for masses m >= 0 at increasing losses l
    (any spacing): the raw profile at eps = l_j, as in :meth:`PLD._get_tables`, from sums of
    nonnegative terms only: r_k = sum_{i >= k} m_i e^{-(l_i - l_k)} in blocks spanning at
    most 30 in loss (one reversed cumsum each, chained), then
    G_j = sum_{k > j} (1 - e^{-(l_k - l_{k-1})}) r_k.  (Underflowing terms are dropped:
    the result may be low by ~1e-300, covered with the rest by :func:`relative_split`.)
    Memory (issue 28): the steps run in place (the same float operations), so at most three
    arrays of the input's length are alive."""
    n = len(m)
    r = np.empty(n)
    carry, end = 0.0, n  # r at index `end` (0 beyond the top)
    starts = np.searchsorted(l, np.arange(float(l[0]), float(l[-1]) + 30.0, 30.0))
    for b in starts[::-1]:
        b = int(b)
        if b >= end:
            continue
        seg = slice(b, end)
        d = l[seg] - l[b]  # in [0, 30]
        x = np.exp(-d)
        x *= m[seg]
        rs = r[seg]
        np.cumsum(x[::-1], out=rs[::-1])  # the reversed cumsum, reversed
        del x
        rs *= np.exp(d, out=d)
        if end < n:
            np.subtract(l[end], l[seg], out=d)
            np.negative(d, out=d)
            np.exp(d, out=d)
            d *= carry
            rs += d
        carry, end = float(r[b]), b
    inc = np.diff(l)
    np.negative(inc, out=inc)
    np.expm1(inc, out=inc)
    np.negative(inc, out=inc)
    inc *= r[1:]
    del r
    g = np.zeros(n)
    if n > 1:
        np.cumsum(inc[::-1], out=g[n - 2 :: -1])
    return g


def product_allowances(factors: list[tuple[PLD, int]], mass_sums: list[float] | None = None
                        ) -> tuple[float, float]:
    """(mass at +inf, slack growth) of the product of the grid pairs ``factors`` (pairs
    (PLD, how many times), all of one kind), each rounded the safe way.

    The finite masses m_i and masses at +inf p_i multiply to ``prod (m_i + p_i) - prod m_i``
    at +inf, computed as ``prod m_i expm1(sum log1p(p_i / m_i))``.  Slack: ``H(P1 x P2 ||
    Q1 x Q2)`` changes by at most sup|D1 - D1'| times the total P-mass of pair 2 when D1
    does (the composition formula in the module docstring), so composing the true pairs
    (mass 1) and the grid pairs (mass M_i) gives slack ``<= prod (M'_i + s_i) - prod M'_i``
    with ``M'_i = max(M_i, 1)``.  The exponents carry about n u (n factors in all): the
    relative allowance 16 (n + 8) u + 1e-15 covers them.  ``mass_sums``: the factors'
    ``float(np.sum(masses))`` if already known."""
    pess = factors[0][0].kind == "pessimistic"
    log_m = log_mp = log_mm = ratio = ratio_s = 0.0
    total = 0
    for i, (f, c) in enumerate(factors):
        n = len(f.masses)
        m_sum = float(np.sum(f.masses)) if mass_sums is None else mass_sums[i]
        m_hi = m_sum * (1.0 + (n + 2) * _U)
        m = m_hi if pess else m_sum * (1.0 - (n + 2) * _U)
        mm = max(m_hi * (1.0 + 2 * _U) + f.inf_mass, 1.0)
        total += c
        log_mm += c * math.log(mm)
        ratio_s += c * math.log1p(f.slack / mm)
        log_mp += c * math.log(m + f.inf_mass) if m + f.inf_mass > 0 else -math.inf
        if m > 0:
            log_m += c * math.log(m)
            ratio += c * math.log1p(f.inf_mass / m)
        else:
            log_m = -math.inf
    rel = 16.0 * (total + 8) * _U + 1e-15
    # some factor without finite mass: the product's mass is all at +inf
    inf_t = math.exp(log_m) * math.expm1(ratio) if log_m > -math.inf else math.exp(log_mp)
    inf_t *= (1.0 + rel) if pess else (1.0 - rel)
    grow = math.exp(log_mm) * math.expm1(ratio_s) * (1.0 + rel) if ratio_s > 0 else 0.0
    return inf_t, grow


def band_tables(masses: np.ndarray, h: float, offset: int, up: bool, j0: int, j1: int
                ) -> tuple:
    """``PLD._get_tables`` of the grid PLD with ``masses`` at losses ``(offset + i) h``
    (``up``: pessimistic) on the grid points j0..j1 only (0 < j0 < j1 < n - 1), equal
    there to the full tables up to float error: at j1, R and G are one sum each over
    the masses from j1 up (weights e^{-kh} and 1 - e^{-kh}: nonnegative terms, relative
    error <= n u, within QUERY_REL); below it, the recursions of the full tables
    (R_j = p_j + e^{-h} R_{j+1}, G_j = G_{j+1} + (1 - e^{-h}) R_{j+1}).  Weights that
    underflow (k h > 700) lose <= e^{-700} per mass, added back when pessimistic.
    An answer read from them is the full tables' if its segment lies inside: G at j1 at
    most the query's level (checked by the caller) and the "inside" flag of
    ``PLD._invert_one`` at j0 (the first loss must be > 0 there)."""
    m = masses
    top = m[j1:]
    w, om = decay_weights(h, len(top))
    # products rounding among subnormals err by <= 2^-1075 each (either way)
    r_top = underflow(float(np.dot(top, w)), len(top), up)
    g_top = underflow(float(np.dot(top[1:], om[1:])), len(top), up)
    cut = 700.0 / h  # weights zeroed beyond: each such term <= its mass e^{-700}
    if up and len(top) > cut:
        r_top += float(np.sum(top[int(math.floor(cut)):])) * math.exp(-700.0)
    seg = np.concatenate((m[j0:j1], [r_top]))
    if len(seg) * h <= 30.0:  # one block of discounted_suffix, on the cached weights
        ws = w[: len(seg)] if len(seg) <= len(w) else decay_weights(h, len(seg))[0]
        r = underflow(np.cumsum((seg * ws)[::-1])[::-1] / ws, len(seg) * math.exp(30.0),
                       up)
    else:
        r = discounted_suffix(seg, h, up)
    inc = -math.expm1(-h) * r
    g_up = np.empty(len(seg) + 1)
    g_up[0] = g_top
    g_up[1:] = inc[::-1]
    g_up = np.cumsum(g_up)[:-1]
    losses = (offset + np.arange(j0, j1 + 1)) * h
    return losses, r, g_up[::-1], g_up
