"""Certified upper bounds on the (eps, delta) privacy of Balanced Iteration Subsampling
(Dong, Chen, Ozgur 2025, Thm 3.8; with k = 1 also called "random allocation") through a
privacy loss distribution.  k > 1 reduces to k = 1: see :func:`bis_plds`.

One epoch of T steps, Gaussian noise, shift s = c / sigma: the dominating pair is
P = (1/T) sum_i N(s e_i, I_T) vs Q = N(0, I_T) (App. A.12), whose privacy loss is
L = log(S / T), S = sum_i Z_i, with Z_i = exp(s X_i - s^2/2) i.i.d. log-normal under Q and,
under P (by symmetry, given that the record is in step 1), Z_1 replaced by e^{s^2} Z_1.

*Tails with certified bounds.*  Round each Z_i down / up to the lattice Delta N:
Z^- <= Z <= Z^+ pointwise, so S^- <= S <= S^+ and, e.g., Q(S > y) >= Q(S^- > y),
P(S > y) <= P(S^+ > y).  The lattice laws of S^-, S^+ are T-fold convolutions (repeated
squaring, :func:`privamp.numerics.fft.convolve_nonneg` with its certified l1 roundoff bound,
rounded up or down as each tail needs); mass above the window goes to an overflow bucket
(counted above every threshold in upper bounds, dropped in lower bounds).

*Dominating grid pair.*  At the loss grid l_i = i h the profile of each direction,
D(a) = P(L > l) - a Q(L > l) (remove) and Q(-L > l) - a P(-L > l) (add), is bounded above
by U_i from those tails.  D is convex and nonincreasing with D(0) = 1, so it lies below the
piecewise-linear interpolation of (0, 1), (e^{l_i}, U_i) (flat after the last point) and,
being convex, below that function's greatest convex minorant; that minorant is the
profile of a pair on the grid (slope increments = Q-masses), which
therefore dominates the true pair (Blackwell), and domination survives composition
(:mod:`privamp.accounting.pld`).  Epochs compose by FFT (Remark 3.10).

Only upper bounds are certified; no lower bound is claimed (a dominated pair would need
exact bin masses).
"""

from __future__ import annotations

import math

import numpy as np

from ..amplification import partitioning as _part
from ..mechanisms import Gaussian
from ..numerics import log_diff_ndtr
from ..numerics.fft import convolve_nonneg
from ..results import Bound
from ..sampling import AddRemove, BalancedIteration, ZeroOut
from .pld import PLD
from .registry import BoundPair, RunAnalysis, run_accountant

__all__ = ["bis_epoch_plds", "bis_plds", "BISPLDAnalysis"]

_MAX_POINTS = 1_000_000  # lattice points of the sum (beyond: too slow, the accountant abstains)

SOURCE = ("PLD of Balanced Iteration Subsampling (Dong, Chen, Ozgur 2025, Thm 3.8 pair; "
          "privamp: k one-participation blocks, lattice-rounded log-normal sums, dominating "
          "grid pair, FFT composition)")


class _Lattice:
    """A sub-probability law on {0, Delta, ..., M Delta} plus an overflow mass (> M Delta),
    computed with one-sided roundoff: ``mode="up"``: arr >= exact - e, sum|e| <= err;
    ``"down"``: arr <= exact + e."""

    def __init__(self, arr: np.ndarray, over: float, err: float, mode: str) -> None:
        self.arr, self.over, self.err, self.mode = arr, over, err, mode

    def add(self, other: _Lattice, m: int) -> _Lattice:
        z, e = convolve_nonneg(self.arr, other.arr, self.mode)
        beyond = float(z[m + 1:].sum())
        # invariant (up): exact kept masses <= arr + e_vec, exact overflow <= over + r, with
        # |e_vec|_1 + r <= err; (down): exact kept masses >= arr - e_vec, |e_vec|_1 <= err
        if self.mode == "up":
            err = self.err + other.err + self.err * other.err + e
            over = self.over + other.over + beyond + e
        else:
            err = self.err + other.err + self.err * other.err + e
            over = 0.0
        return _Lattice(z[: m + 1].copy(), over, err, self.mode)

    def times(self, n: int, m: int) -> _Lattice:
        result: _Lattice | None = None
        base = self
        while True:
            if n & 1:
                result = base if result is None else result.add(base, m)
            n >>= 1
            if not n:
                break
            base = base.add(base, m)
        assert result is not None
        return result


def _lattice_pmf(s: float, scale: float, delta: float, m: int, rounding: str, mode: str
                 ) -> _Lattice:
    """Law of scale * Z rounded to the lattice (``rounding`` "down" = floor, "up" = ceil),
    Z = exp(s X - s^2/2), truncated at m (mass above goes to overflow)."""
    edges = np.arange(m + 2) * delta  # cell j: [j delta, (j+1) delta)
    with np.errstate(divide="ignore"):
        x = (np.log(edges / scale) + s * s / 2) / s
    logm = log_diff_ndtr(x[:-1], x[1:])
    cells = np.exp(logm)  # P(scale Z in [j delta, (j+1) delta)), j = 0..m
    arr = np.zeros(m + 1)
    if rounding == "down":
        arr[:] = cells
    else:
        arr[1:] = cells[:-1]  # ceil: (j-1) delta < Z <= j delta -> j
    top = float(np.exp(log_diff_ndtr(np.array([x[-1 if rounding == "down" else -2]]),
                                     np.array([np.inf]))[0]))
    rel = 1e-12
    if mode == "up":
        return _Lattice(arr * (1 + rel), top * (1 + rel), 0.0, mode)
    return _Lattice(arr * (1 - rel), 0.0, 0.0, mode)


def _gcm_pld(l_idx: np.ndarray, h: float, upper: np.ndarray) -> PLD:
    """Pessimistic grid PLD whose profile is the greatest convex minorant of (0, 1),
    (e^{l_i}, U_i) (U made nonincreasing), flat after the last point."""
    u = np.minimum.accumulate(np.clip(upper, 0.0, 1.0))
    a = np.exp(l_idx * h)
    xs = np.concatenate([[0.0], a])
    ys = np.concatenate([[1.0], u])
    hull: list[int] = []
    for i in range(len(xs)):
        while len(hull) >= 2:
            i0, i1 = hull[-2], hull[-1]
            # remove i1 if it lies on or above the segment i0 -> i
            cross = (xs[i1] - xs[i0]) * (ys[i] - ys[i0]) - (ys[i1] - ys[i0]) * (xs[i] - xs[i0])
            if cross <= 0:
                hull.pop()
            else:
                break
        hull.append(i)
    hx, hy = xs[hull], ys[hull]
    slopes = np.diff(hy) / np.diff(hx)  # nonpositive, increasing
    after = np.concatenate([slopes[1:], [0.0]])
    q = np.maximum(after - slopes, 0.0)  # Q-mass at each hull vertex (excluding a = 0)
    p = q * hx[1:]
    masses = np.zeros(len(l_idx))
    masses[np.array(hull[1:]) - 1] = p
    inf_mass = float(hy[-1])
    # total P-mass must be 1: the hull passes through (0, 1); absorb float residue upward
    total = inf_mass + float(masses.sum())
    if total < 1.0:
        inf_mass += 1.0 - total
    # slack: float error of the hull arithmetic (profile values are sums of terms <= 1)
    return PLD(h, int(l_idx[0]), masses, inf_mass, "pessimistic", 1e-14)


def bis_epoch_plds(sigma: float, steps: int, h: float | None = None,
                   lattice: float | None = None, tail: float = 1e-15) -> tuple[PLD, PLD]:
    """(remove, add) pessimistic PLDs of one epoch of Balanced Iteration Subsampling with
    k = 1 and the Gaussian mechanism of noise multiplier ``sigma`` (sensitivity 1)."""
    s = 1.0 / sigma
    T = int(steps)
    # loss window from the certified RDP curves (Chernoff): P(L > l) <= e^{b(D_{b+1} - l)}
    alphas = np.array([2.0, 3.0, 5.0, 9.0, 17.0, 33.0, 65.0, 129.0, 257.0])
    fwd, _ = _part.forward_divergence(s, T, 1, alphas)
    rev = _part.reverse_divergence(s, T, 1, alphas)
    log_tail = math.log(1 / tail)
    l_max = float(np.min(fwd + log_tail / (alphas - 1)))
    l_min = -float(np.min(rev + log_tail / (alphas - 1)))
    if lattice is None:
        lattice = 2e-3
    # Z lattice step d_z (E Z = 1): S is known within T d_z, the loss within ~ d_z e^{-l}
    d_z = lattice
    m = int(math.ceil(T * math.exp(l_max) / d_z)) + 1
    if m > _MAX_POINTS:
        raise ValueError(
            f"the BIS PLD lattice would need {m} points (steps={T}, sigma={sigma}); "
            "use the RDP accountant")
    if h is None:
        h = max(lattice, (l_max - l_min) / 20000.0)
    chains = {}
    for name, scale, count, rounding in (("Q", 1.0, T, "down"), ("P", math.exp(s * s), T - 1,
                                                                  "up")):
        for mode in ("up", "down"):
            z = _lattice_pmf(s, 1.0, d_z, m, rounding, mode)
            total = z.times(count, m) if count > 0 else None
            if name == "P":
                first = _lattice_pmf(s, scale, d_z, m, rounding, mode)
                total = first if total is None else total.add(first, m)
            chains[name, mode] = total
    i_lo = int(math.floor(l_min / h)) - 1
    i_hi = int(math.ceil(l_max / h)) + 1
    l_idx = np.arange(i_lo, i_hi + 1)
    pos = np.arange(m + 1) * d_z  # lattice values of S

    def upper_tail(c: _Lattice, y: np.ndarray) -> np.ndarray:  # mass with S > y, upper
        suffix = np.concatenate([np.cumsum(c.arr[::-1])[::-1], [0.0]])
        j = np.searchsorted(pos, y, side="right")
        return np.minimum(suffix[j] + c.over + c.err, 1.0)

    def lower_tail(c: _Lattice, y: np.ndarray) -> np.ndarray:  # mass with S > y, lower
        suffix = np.concatenate([np.cumsum(c.arr[::-1])[::-1], [0.0]])
        j = np.searchsorted(pos, y, side="right")
        return np.maximum(suffix[j] - c.err, 0.0)

    def upper_below(c: _Lattice, y: np.ndarray) -> np.ndarray:  # mass with S < y, upper
        prefix = np.concatenate([[0.0], np.cumsum(c.arr)])
        j = np.searchsorted(pos, y, side="left")
        return np.minimum(prefix[j] + c.err, 1.0)

    def lower_below(c: _Lattice, y: np.ndarray) -> np.ndarray:  # mass with S < y, lower
        prefix = np.concatenate([[0.0], np.cumsum(c.arr)])
        j = np.searchsorted(pos, y, side="left")
        return np.maximum(prefix[j] - c.err, 0.0)

    a = np.exp(l_idx * h)
    y_remove = T * np.exp(l_idx * h)  # L > l  <=>  S > T e^l
    u_remove = upper_tail(chains["P", "up"], y_remove) - a * lower_tail(chains["Q", "down"],
                                                                      y_remove)
    y_add = T * np.exp(-l_idx * h)  # -L > l  <=>  S < T e^{-l}
    u_add = upper_below(chains["Q", "up"], y_add) - a * lower_below(chains["P", "down"], y_add)
    return _gcm_pld(l_idx, h, u_remove), _gcm_pld(l_idx, h, u_add)


def bis_plds(sigma: float, steps: int, participations: int = 1, epochs: int = 1,
             h: float = 2e-3, tail: float = 1e-12) -> tuple[PLD, PLD]:
    """(remove, add) pessimistic PLDs of ``epochs`` epochs of Balanced Iteration Subsampling
    with any k = ``participations``.

    k > 1: cutting the T steps into k random blocks of sizes floor/ceil(T/k) and picking one
    step per block gives a uniformly random k-subset, so the epoch's pair is a mixture of
    pairs each isomorphic to the product of k one-participation pairs on the blocks; by joint
    convexity of the hockey-stick divergence its profile (both directions) is at most that of
    the product, which therefore dominates it (and domination survives composition).
    Blocks of one step are plain Gaussian releases.  Raises ValueError when a block's lattice
    would be too large.
    """
    T, k, E = int(steps), int(participations), int(epochs)
    rem: PLD | None = None
    add: PLD | None = None
    for size, count in _part._block_counts(T, k):
        if size == 1:
            from ..mechanisms.pairs import GaussianPair, SwappedPair
            from .pld import discretise

            base = GaussianPair(1.0 / sigma)
            r_b = discretise(base, h, tail / (k * E))[0]
            a_b = discretise(SwappedPair(base), h, tail / (k * E))[0]
        else:
            r_b, a_b = bis_epoch_plds(sigma, size, h=h, tail=tail / (k * E))
        r_b, a_b = r_b.self_compose(count), a_b.self_compose(count)
        rem = r_b if rem is None else rem.compose(r_b)
        add = a_b if add is None else add.compose(a_b)
    assert rem is not None and add is not None
    return rem.self_compose(E), add.self_compose(E)


class BISPLDAnalysis(RunAnalysis):
    """E epochs of Balanced Iteration Subsampling, certified upper bounds only."""

    def __init__(self, sigma: float, steps_per_epoch: int, participations: int, epochs: int
                 ) -> None:
        self.sigma, self.T, self.epochs = float(sigma), int(steps_per_epoch), int(epochs)
        self.k = int(participations)
        self._plds: list[PLD] | None = None

    @property
    def plds(self) -> list[PLD] | None:
        """The composed (remove, add) PLDs, or None when a lattice would be too large."""
        if self._plds is None:
            try:
                self._plds = list(bis_plds(self.sigma, self.T, self.k, self.epochs))
            except ValueError:
                self._plds = []
        return self._plds or None

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        d = np.asarray(delta, dtype=float)
        if self.plds is None:
            return None, None
        up = np.max([p.epsilon(d) for p in self.plds], axis=0)
        return Bound(_shape(up, d), "upper", SOURCE), None

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        e = np.asarray(epsilon, dtype=float)
        if self.plds is None:
            return None, None
        up = np.max([p.delta(e) for p in self.plds], axis=0)
        return Bound(_shape(up, e), "upper", SOURCE), None


def _shape(x: np.ndarray, like: np.ndarray) -> float | np.ndarray:
    x = np.asarray(x, dtype=float).reshape(np.shape(like))
    return float(x) if x.ndim == 0 else x


def _applies(run) -> bool:
    sch = run.scheme
    return (
        isinstance(sch, BalancedIteration)
        and isinstance(run.mechanism, Gaussian)
        and isinstance(run.relation, (AddRemove, ZeroOut))
        and run.relation.group == 1
        and run.steps % sch.steps == 0
    )


@run_accountant("pld", applies=_applies,
                description="Balanced Iteration: certified upper bound by a dominating grid PLD "
                            "(k > 1 through k one-participation blocks), FFT composition")
def _build(run) -> BISPLDAnalysis:
    mech = run.mechanism
    return BISPLDAnalysis(mech.sigma / mech.sensitivity, run.scheme.steps,
                          run.scheme.participations, run.steps // run.scheme.steps)
