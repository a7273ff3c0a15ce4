"""Certified two-sided bounds on the (eps, delta) privacy of Balanced Iteration Subsampling
(Dong, Chen, Ozgur 2025, Thm 3.8; with k = 1 also called "random allocation") through
privacy loss distributions.  k > 1: upper bounds by reduction to k = 1 (:func:`bis_plds`),
lower bounds from a statistic of the output (:func:`bis_statistic_lower_plds`).

One epoch of T steps, Gaussian noise, shift s = c / sigma: the dominating pair is
P = (1/T) sum_i N(s e_i, I_T) vs Q = N(0, I_T) (App. A.12), whose privacy loss is
L = log(S / T), S = sum_i W_i, with W_i = Z_i = exp(s X_i - s^2/2) i.i.d. log-normal under
Q and, under P (by symmetry, given that the record is in step 1), W_1 = e^{s^2} Z_1.  The
pair is realised by neighbouring datasets (one record contributing 1 to one coordinate, all
others 0), so any pair it dominates gives certified LOWER bounds.

*Tails with certified bounds* (:class:`SumLaw`).  Floor each W_i to the lattice d N:
K = sum_i floor(W_i / d) satisfies d K <= S < d K + T d.  Coordinates with W_i >= N d are
dropped (event E^c, P(E^c) <= sum_i P(W_i >= N d)); the law of K on E is the T-fold
convolution of the cell masses, computed on the circle Z_N by one real FFT per factor, a
binary power and one inverse FFT.  Wrapped mass (K >= N on E) is bounded by Chernoff,
e^{-theta N d} prod_i E[e^{theta W_i}; W_i < N d] (moment generating functions bounded above
from coarse cells); the FFT roundoff by an l1 bound (pocketfft's proven 2-norm bound,
docs/fft_roundoff.md, sections 6 and 10, with the power rule |a^m - b^m| <= m R^{m-1}
|a - b|).  N is the smallest power of two with dropped and wrapped mass <= 2e-11 (the
lattice step d is doubled, up to 8 times, when N would exceed the memory budget's 2^22 points).

*Dominating grid pair* (upper bounds).  At the loss grid l_i = i h the profile of each
direction, D(a) = E_Q[(r - a)_+] (remove) and E_Q[(1 - a r)_+] (add), r = S / T = dP/dQ,
is bounded above by U_i: on each cell {K = j}, r lies in [d j / T, d j / T + d] and
E_Q[r; K = j] = P(K = j), so the convex integrand below its chord over the cell bounds the
cell's share by P- and Q-masses of K (:func:`chord_upper`; exact where the integrand is
linear, so the lattice costs second order in d), and also by tail differences
P(L > l) - a Q(L > l) (first order in d).  D is convex and nonincreasing with D(0) = 1, so it
lies below the piecewise-linear interpolation of (0, 1), (e^{l_i}, U_i) (flat after the last
point) and, being convex, below that function's greatest convex minorant; that minorant is
the profile of a pair on the grid (slope increments = Q-masses), which therefore dominates
the true pair (Blackwell), and domination survives composition (:mod:`privamp.pld`).

*Dominated grid pair* (lower bounds, k = 1): lower bounds on D at the grid points (threshold
tests {K >= j}, {K < j} on the lattice statistic K itself: post-processing, no lattice
shift, :func:`_threshold_lower`), lowered chords (gap to the end tangents, whose slopes
are bounded by the Q-tails) and the greatest convex minorant give a grid pair whose
profile lies below D (:func:`lower_profile_pld`).
Epochs compose by FFT (Remark 3.10).
"""

from __future__ import annotations

import functools
import math
from typing import cast

import numpy as np

from ...errors import NotApplicable
from ...mechanisms.gaussian import Gaussian
from ...numerics.arrays import shaped
from ...pld.grid import PLD, zero_pld
from ...pld.profiles import upper_profile_pld
from ...pld.two_sided import TwoSidedPLD
from ...results import Bound
from ...sampling.relations import AddRemove, ZeroOut
from ...sampling.schemes import BalancedIteration
from ..registry import BoundPair, RunAnalysis, run_accountant
from .bis_bounds import DegenerateProfile, add_tail_upper, lower_profile_pld
from .bis_lattice import (
    SumLaw,
    choose_lattice,
    chord_upper,
    factor,
    prefix_sums,
    suffix_sums,
    trim_common,
)
from .moments import block_counts, reverse_divergence

__all__ = [
    "bis_epoch_plds",
    "bis_epoch_two_sided",
    "bis_lower_plds",
    "bis_plds",
    "bis_statistic_lower_plds",
    "statistic_saddle",
    "statistic_shape",
    "BISPLDAnalysis",
]


SOURCE_LOWER = ("PLD of Balanced Iteration Subsampling (Dong, Chen, Ozgur 2025, Thm 3.8 pair, "
                "realised by neighbouring datasets; privamp: dominated grid pair from "
                "certified lattice tails -- k = 1 exact loss, k > 1 (random allocation "
                "k-of-T) threshold tests on the separable lattice statistic "
                "sum_i floor(log(1 + z W_i) / (z d)), W_i = exp(s Y_i - s^2/2), z = 0.75 k / T "
                "(post-processing) --, FFT composition)")


SOURCE = ("PLD of Balanced Iteration Subsampling (Dong, Chen, Ozgur 2025, Thm 3.8 pair; "
          "privamp: k one-participation blocks -- the k-of-T to k x 1-of-T/k reduction, as in "
          "Feldman & Shenfeld 2025, arXiv:2502.08202 --, lattice-rounded log-normal sums, "
          "dominating grid pair, FFT composition)")


#: how many times the k = 1 lattice step may be doubled to fit the memory budget
_DOUBLINGS = 8


def bis_epoch_two_sided(sigma: float, steps: int, h: float = 1e-3, lattice: float = 2e-3,
                        tail: float = 1e-15) -> dict[str, PLD | None]:
    """:func:`_epoch_two_sided` (see there), memoised for the last few settings: the runs of
    an epsilon curve (one per checkpoint) share their epoch."""
    return dict(_epoch_memo(float(sigma), int(steps), float(h), float(lattice), float(tail)))


@functools.lru_cache(maxsize=8)
def _epoch_memo(sigma: float, steps: int, h: float, lattice: float, tail: float
                ) -> dict[str, PLD | None]:
    return _epoch_two_sided(sigma, steps, h, lattice, tail)


def _epoch_two_sided(sigma: float, steps: int, h: float = 1e-3, lattice: float = 2e-3,
                     tail: float = 1e-15) -> dict[str, PLD | None]:
    """Pessimistic and optimistic PLDs of one epoch of Balanced Iteration Subsampling with
    k = 1 (Dong, Chen, Ozgur 2025, Thm 3.8 pair) and the Gaussian mechanism (noise multiplier
    ``sigma``): keys ``"remove"``, ``"add"`` (pessimistic) and ``"remove_opt"``,
    ``"add_opt"`` (optimistic; None if the lower profile is degenerate).  The optimistic
    ones are lower bounds because the pair (P, Q) is realised by neighbouring datasets (a
    record contributing 1 in one coordinate).
    """
    s = 1.0 / sigma
    T = int(steps)
    # up to 2^8 times the step: a coarser lattice (sound, looser) rather than no PLD at small
    # sigma (issue 27: sigma 0.55-0.59, 3 steps, delta(1) 0.42 -> 0.25)
    d, n = choose_lattice(float(sigma), T, float(lattice), _DOUBLINGS)
    # one law after the other (memory: one set of FFT buffers at a time); the spectrum of an
    # unshifted coordinate is shared through the cache, which goes once both laws are built
    alphas = np.array([2.0, 3.0, 5.0, 9.0, 17.0, 33.0, 65.0, 129.0, 257.0])
    rev = reverse_divergence(s, T, 1, alphas)
    l_min = -float(np.min(rev + math.log(1 / tail) / (alphas - 1)))
    l_top = math.log(n * d / T)
    lo = min(l_min, -l_top)
    hi = max(l_top, -l_min)
    l_idx = np.arange(int(math.floor(lo / h)) - 1, int(math.ceil(hi / h)) + 2)
    a = np.exp(l_idx * h)
    y_rem = T * np.exp(l_idx * h)  # L > l  <=>  S > T e^l
    y_add = T * np.exp(-l_idx * h)  # -L > l  <=>  S < T e^{-l}
    cache: dict = {}
    # Q's law first (one spectrum), trimmed to its window of the circle before P's spectrum
    # is taken; then P's, then both to one common window (memory; the dropped mass joins
    # the error terms, :func:`trim_common`)
    law_q = SumLaw(s, T, 0.0, d, n, cache, sums=False)
    trim_common([law_q])
    law_p = SumLaw(s, T, s * s, d, n, cache, release=True, sums=False)
    del cache
    trim_common([law_p])
    trim_common([law_q, law_p])
    for law in (law_q, law_p):
        assert law.c is not None  # (kept: sums=False releases nothing)
        law.suffix, law.prefix = suffix_sums(law.c), prefix_sums(law.c)
    # upper: chords over the lattice cells (second order in d); lower: threshold tests on K
    # (a statistic of the output, also second order); the tail differences (first order
    # in d) where they are sharper
    u_rem = np.minimum(law_p.above(y_rem, True) - a * law_q.above(y_rem, False),
                       chord_upper(law_p, law_q, a, True))
    u_add = np.minimum(np.minimum(law_q.below(y_add, True) - a * law_p.below(y_add, False),
                                  chord_upper(law_p, law_q, a, False)),
                       add_tail_upper(s, T, l_idx * h))
    lo_rem = np.maximum(law_p.above(y_rem, False) - a * law_q.above(y_rem, True),
                        _threshold_lower(law_p, law_q, a, True)[0])
    lo_add = np.maximum(law_q.below(y_add, False) - a * law_p.below(y_add, True),
                        _threshold_lower(law_p, law_q, a, False)[0])
    out: dict[str, PLD | None] = {"remove": upper_profile_pld(l_idx, h, u_rem),
                                  "add": upper_profile_pld(l_idx, h, u_add)}
    try:  # a degenerate lower profile only loses the lower bound
        out["remove_opt"] = lower_profile_pld(l_idx, h, lo_rem, law_q.above(y_rem, True),
                                               law_q.above(y_rem, False))
        out["add_opt"] = lower_profile_pld(l_idx, h, lo_add, law_p.below(y_add, True),
                                            law_p.below(y_add, False))
    except DegenerateProfile:
        out["remove_opt"] = out["add_opt"] = None
    return out


def _threshold_lower(law_p: SumLaw, law_q: SumLaw, a: np.ndarray, remove: bool
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Certified lower bounds on the profile D(a) of the pair (law of K' under P, under Q),
    K' the lattice statistic of :class:`SumLaw` (K on the event E that no coordinate is
    dropped, an overflow symbol otherwise), from the threshold tests A_j = {K' >= j}
    (``remove``: D(a) >= P(A_j) - a Q(A_j)) or {K' < j} (add: Q(A_j) - a P(A_j)).

    Any j gives a valid bound; privamp takes, for each a, the first j at which the running
    maximum of the computed likelihood ratio exceeds a (the optimal test when the ratio of K
    is monotone) and its two neighbours.  Range sums of the computed law c are off from the
    exact law rho of K on E by ``err`` (plus ``wrap`` from above, see :class:`SumLaw`);
    the overflow symbol has mass <= drop + wrap."""
    # on the laws' common window [lo, lo + m) of the circle (both trimmed alike)
    lo, m = law_q.lo, len(cast(np.ndarray, law_q.c))
    if law_p.lo != lo or len(cast(np.ndarray, law_p.c)) != m:
        raise ValueError("the two laws must keep the same window of the circle")
    if remove:
        num, den = cast(np.ndarray, law_p.c), cast(np.ndarray, law_q.c)
    else:
        num, den = cast(np.ndarray, law_q.c)[::-1], cast(np.ndarray, law_p.c)[::-1]
    # ratio where the denominator is above the roundoff floor; below it, 0 left of the mode
    # and inf right of it (only the choice of j depends on this, not the validity)
    tau = 1e-15
    mode = int(np.argmax(den))
    r = np.maximum(den, tau)  # one full-length work array (memory)
    np.divide(num, r, out=r)
    low = den <= tau
    r[:mode][low[:mode]] = 0.0
    r[mode:][low[mode:]] = np.inf
    del low
    rmax = np.maximum.accumulate(r, out=r)
    j0 = np.searchsorted(rmax, a, side="right")  # first index with rmax > a (m if none)
    best = np.zeros(len(a))
    slope = np.zeros(len(a))  # the empty test: D(a) >= 0
    for off in (-1, 0, 1):
        jw = np.clip(j0 + off, 0, m)  # window index
        if remove:  # A_j = {K' >= j} (overflow included), j = lo + jw on the circle
            j = lo + jw
            p_low = law_p.suffix_at(j, False) - law_p.err - law_p.wrap
            q_up = law_q.suffix_at(j, True) + law_q.err + law_q.wrap + law_q.drop
            v = p_low - a * q_up
        else:  # reversed window index: A = {K' < lo + m - jw} (overflow excluded)
            jj = lo + m - jw
            q_low = law_q.prefix_at(jj, False) - law_q.err - law_q.wrap
            p_up = law_p.prefix_at(jj, True) + law_p.err + law_p.drop
            v = q_low - a * p_up
        better = v > best
        best = np.where(better, v, best)
        slope = np.where(better, q_up if remove else p_up, slope)
    return best, slope


def bis_statistic_lower_plds(sigma: float, steps: int, participations: int,
                             h: float = 1e-3, lattice: float = 2e-3, shape: float = 1.0,
                             saddle: float = 0.0) -> tuple[PLD, PLD] | None:
    """Optimistic (remove, add) PLDs of one epoch of Balanced Iteration Subsampling with any
    k = ``participations`` (lower bounds), from a statistic of the output.

    The epoch's pair P = mean over k-subsets S of N(s 1_S, I_T) vs Q = N(0, I_T) (Dong,
    Chen, Ozgur 2025, Thm 3.8; random allocation k-of-T) is realised by neighbouring
    datasets, and any function of the output gives a pair it dominates (post-processing).
    privamp uses the separable lattice statistic K = sum_i floor(V_i / d),
    V_i = W_i = exp(c Y_i - c^2 / 2), c = ``shape`` s (shape 1: the k = 1 likelihood ratio),
    or, with ``saddle`` z > 0, V_i = log(1 + z W_i) / z (the saddle-point form of the exact
    ratio e_k(W) / C(T, k) = [x^k] prod_i (1 + x W_i) / C(T, k), see
    :func:`statistic_saddle`): under Q the sum of T i.i.d. floored coordinates, under P the
    same with k of them shifted (by symmetry), both certified on a circle
    (:class:`SumLaw`).  At each grid loss l_i the
    threshold tests {K >= j} (remove) and {K < j} (add) at the likelihood-ratio crossing
    (:func:`_threshold_lower`) bound the true profile from below -- no lattice shift: both
    probabilities are range sums of the same statistic --; a grid pair below those points
    (lowered chords whose tangents are the tests' lines, greatest convex minorant,
    :func:`lower_profile_pld`) is dominated by the true pair.  Its looseness: K is not
    sufficient for k > 1 (the exact loss is log(e_k(W) / C(T, k))).  None when the lattice
    would be too large or the profile degenerate.
    """
    s = 1.0 / float(sigma)
    c = s * float(shape)  # the statistic's coordinates: exp(c Y_i - c^2 / 2)
    T, k = int(steps), int(participations)
    if not 1 <= k < T:
        raise ValueError(f"participations must be in [1, steps), got {k}")
    if not 0.0 < c <= 50.0:
        raise ValueError(f"shape must be in (0, {50.0 / s:g}] (shape / sigma <= 50), got {shape}")
    z = float(saddle)
    if not 0.0 <= z <= 1.0:
        raise ValueError(f"saddle must be in [0, 1] (0: the plain sum), got {saddle}")
    try:
        d, n = choose_lattice(1.0 / c, T, float(lattice), 3, k, signal=s, z=z)
    except NotApplicable:  # no lattice: no lower bound (the upper bound is computed apart)
        return None
    cache: dict = {}
    for scale in (0.0, c * s):  # both spectra first: their FFT work space is then the peak
        factor(c, scale, d, n, cache, z)
    law_q = SumLaw(c, T, 0.0, d, n, cache, sums=False, z=z)
    law_p = SumLaw(c, T, c * s, d, n, cache, shifted=k, release=True, sums=False, z=z)
    l_top = math.log(n * d / T)
    top = k * l_top + 1.0
    l_idx = np.arange(int(math.floor(-top / h)) - 1, int(math.ceil(top / h)) + 2)
    a = np.exp(l_idx * h)
    # remove reads the suffix sums, add the prefix sums: one kind at a time (memory)
    for law in (law_q, law_p):
        assert law.c is not None
        law.suffix = suffix_sums(law.c)
    d_rem, s_rem = _threshold_lower(law_p, law_q, a, True)
    for law in (law_q, law_p):
        assert law.c is not None
        law.suffix, law.prefix = None, prefix_sums(law.c)
    d_add, s_add = _threshold_lower(law_p, law_q, a, False)
    del law_q, law_p
    try:  # each value is a test's line: its slope bounds the tangents (no first-order loss)
        return (lower_profile_pld(l_idx, h, d_rem, s_rem, s_rem, lines=True),
                lower_profile_pld(l_idx, h, d_add, s_add, s_add, lines=True))
    except DegenerateProfile:
        return None


def bis_epoch_plds(sigma: float, steps: int, h: float = 1e-3, lattice: float = 2e-3,
                   tail: float = 1e-15) -> tuple[PLD, PLD]:
    """(remove, add) pessimistic PLDs of one epoch of Balanced Iteration Subsampling with
    k = 1 and the Gaussian mechanism of noise multiplier ``sigma`` (sensitivity 1)."""
    out = bis_epoch_two_sided(sigma, steps, h, lattice, tail)
    return cast(PLD, out["remove"]), cast(PLD, out["add"])


def bis_lower_plds(sigma: float, steps: int, epochs: int = 1, h: float = 1e-3,
                   lattice: float = 2e-3) -> tuple[PLD | None, ...]:
    """(remove, add, remove_opt, add_opt) PLDs of ``epochs`` epochs of BIS with k = 1:
    pessimistic (upper bounds) and optimistic (lower bounds, realised pair)."""
    out = bis_epoch_two_sided(sigma, steps, h, lattice)
    E = int(epochs)
    return tuple(None if out[key] is None else cast(PLD, out[key]).self_compose(E)
                 for key in ("remove", "add", "remove_opt", "add_opt"))


def lattice_step(sigma: float, steps: int) -> float:
    """Lattice step d of a one-participation epoch of ``steps`` steps: a tenth of the standard
    deviation of S / T under Q, sqrt((e^{1/sigma^2} - 1) / T), at most 0.01.  The chord and
    threshold bounds lose second order in d / sd (only cells within d of the kink lose), so
    this keeps the k = 1 width near 0.1-0.4% (sigma 1-2, T 1000) at about 1 s."""
    # (beyond e^700 the cap of 0.01 holds anyway; the lattice size check then refuses)
    sd = math.sqrt(math.expm1(min(1.0 / float(sigma) ** 2, 700.0)) / int(steps))
    return min(1e-2, 0.1 * sd)


def statistic_shape(steps: int, participations: int) -> float:
    """Shape c / s of the statistic sum_i exp(c Y_i - c^2/2), an option of
    :func:`bis_statistic_lower_plds` for the k > 1 lower bound: 1 - 0.4 k / sqrt(T), clipped
    to [0.3, 1] (tuned on sigma = 1, delta = 1e-5: T = 100, k = 10 -> 0.6; T = 1000, k = 10
    -> 0.87; any shape gives a valid lower bound).  The accountant uses the sharper
    saddle-point statistic (:func:`statistic_saddle`)."""
    gap = 0.4 * participations / math.sqrt(steps)
    return min(1.0, max(0.3, 1.0 - gap))


def statistic_saddle(steps: int, participations: int) -> float:
    """Saddle parameter z of the statistic sum_i log(1 + z W_i) / z used for the k > 1 lower
    bound: 0.75 k / T.  The exact likelihood ratio is e_k(W) / C(T, k), e_k(W) =
    [x^k] prod_i (1 + x W_i), whose saddle-point approximation is
    prod_i (1 + z W_i) / z^k at z solving sum_i z W_i / (1 + z W_i) = k, i.e. z ~ k / T
    (E[W] = 1); the factor 0.75 was tuned at sigma = 1, delta = 1e-5 (T = 100, 1000;
    k = 5, 10; any z gives a valid lower bound)."""
    return 0.75 * int(participations) / int(steps)


def bis_plds(sigma: float, steps: int, participations: int = 1, epochs: int = 1,
             h: float = 2e-3, tail: float = 1e-12, refine: bool = True) -> tuple[PLD, PLD]:
    """(remove, add) pessimistic PLDs of ``epochs`` epochs of Balanced Iteration Subsampling
    with any k = ``participations``.

    k > 1: cutting the T steps into k random blocks of sizes floor/ceil(T/k) and picking one
    step per block gives a uniformly random k-subset, so the epoch's pair is a mixture of
    pairs each isomorphic to the product of k one-participation pairs on the blocks; by joint
    convexity of the hockey-stick divergence its profile (both directions) is at most that of
    the product, which therefore dominates it (and domination survives composition).
    Blocks of one step are plain Gaussian releases.  Raises NotApplicable when a block's
    lattice would be too large (sigma too small for its steps).  ``refine=False``: keep the
    grid step ``h`` as given (by default short blocks move to a finer one, at most 1e-3).
    """
    T, k, E = int(steps), int(participations), int(epochs)
    rem: PLD | None = None
    add: PLD | None = None
    if refine and any(1 < size <= 20 for size, _ in block_counts(T, k)):
        h = min(h, 1e-3)  # short blocks: finer lattice and grid (cheap)
    for size, count in block_counts(T, k):
        if size == 1:
            from ...pairs.combinators import SwappedPair
            from ...pairs.mechanism_pairs import GaussianPair
            from ...pld.discretise import discretise

            base = GaussianPair(1.0 / sigma)
            r_b = discretise(base, h, tail / (k * E))[0]
            a_b = discretise(SwappedPair(base), h, tail / (k * E))[0]
        else:
            r_b, a_b = bis_epoch_plds(sigma, size, h=h, lattice=lattice_step(sigma, size),
                                      tail=tail / (k * E))
        r_b, a_b = r_b.self_compose(count), a_b.self_compose(count)
        rem = r_b if rem is None else rem.compose(r_b)
        add = a_b if add is None else add.compose(a_b)
    assert rem is not None and add is not None
    return rem.self_compose(E), add.self_compose(E)


class BISPLDAnalysis(RunAnalysis):
    """E epochs of Balanced Iteration Subsampling: certified upper bounds (any k) and
    certified lower bounds -- k = 1: optimistic PLDs of the realised worst-case pair; k > 1:
    of a statistic of its output (:func:`bis_statistic_lower_plds`), when its lattice
    resolves the statistic (else no lower bound)."""

    def __init__(self, sigma: float, steps_per_epoch: int, participations: int, epochs: int
                 ) -> None:
        self.sigma, self.T, self.epochs = float(sigma), int(steps_per_epoch), int(epochs)
        self.k = int(participations)
        self._plds: list[PLD] | None = None
        self._opt: list[PLD] = []
        self._refusal: NotApplicable | None = None

    @property
    def plds(self) -> list[PLD]:
        """The composed pessimistic (remove, add) PLDs (the optimistic ones are in
        ``self.optimistic``).  Raises NotApplicable (every time it is asked) when a lattice
        would be too large, i.e. sigma is too small for the steps per epoch."""
        if self._refusal is not None:
            raise self._refusal
        if self._plds is None:
            try:
                if self.k == 1 and self.T > 1:
                    out = bis_lower_plds(self.sigma, self.T, self.epochs,
                                         lattice=lattice_step(self.sigma, self.T))
                    opt = [p for p in out[2:] if p is not None]
                    self._opt = opt if len(opt) == 2 else []
                    self._plds = cast("list[PLD]", list(out[:2]))
                elif 1 < self.k < self.T:
                    # upper (block reduction) and lower (statistic) bounds, one after the
                    # other: each holds its own circles (memory over parallelism)
                    plds = list(bis_plds(self.sigma, self.T, self.k, self.epochs))
                    # the saddle-point statistic (sharper than the power shapes at every
                    # setting measured, E = 1 and 10; see docs/dong2025.md)
                    low = bis_statistic_lower_plds(
                        self.sigma, self.T, self.k, shape=1.0,
                        lattice=lattice_step(self.sigma, self.T),
                        saddle=statistic_saddle(self.T, self.k))
                    if low is not None:
                        self._opt = [o.self_compose(self.epochs) for o in low]
                    self._plds = plds
                else:
                    self._plds = list(bis_plds(self.sigma, self.T, self.k, self.epochs))
            except NotApplicable as exc:
                self._refusal = exc
                raise
        return self._plds

    @property
    def optimistic(self) -> list[PLD]:
        _ = self.plds
        return self._opt

    def grid_step(self) -> float:
        """The loss-grid step h this analysis picks by itself: 1e-3 for one participation
        per epoch (:func:`bis_lower_plds`), else 2e-3, or 1e-3 when a block of the k > 1
        reduction has 2 to 20 steps (:func:`bis_plds`).

        Returns:
            The grid step h > 0.
        """
        if self.k == 1 and self.T > 1:
            return 1e-3
        if any(1 < size <= 20 for size, _ in block_counts(self.T, self.k)):
            return 1e-3
        return 2e-3

    def pld(self, h: float | None = None) -> TwoSidedPLD:
        """The whole run's PLDs on the loss grid of step ``h`` (None: :meth:`grid_step`), as
        the directions [remove, add], each (pessimistic, optimistic).

        Pessimistic: the dominating grid pair of :func:`bis_epoch_two_sided` (k = 1) or of
        the k-block reduction (:func:`bis_plds`), composed over the epochs.  Optimistic: the
        dominated grid pair of the realised worst-case pair (k = 1) or of a statistic of its
        output (k > 1, :func:`bis_statistic_lower_plds`), composed over the epochs -- lower
        sides of one pair of neighbouring datasets, so they compose with other phases on the
        same datasets; the zero PLD where there is no lower side.

        Args:
            h: grid step in (0, 0.1], or None.

        Returns:
            A :class:`~privamp.pld.two_sided.TwoSidedPLD` with two directions on step h.

        Raises:
            ValueError: h outside (0, 0.1].
            NotApplicable: a lattice would be too large (sigma too small for the steps).
        """
        own = self.grid_step()
        if h is None:
            h = own
        h = float(h)
        if not (0.0 < h <= 0.1):
            raise ValueError(f"h must be in (0, 0.1], got {h}")
        pess: list[PLD] | None = None
        opt: list[PLD | None] | list[PLD]
        if h == own:  # the analysis's own PLDs (the k > 1 lower side is on a finer step)
            pess, opt = self.plds, [_on_step(o, h) for o in self.optimistic]
            if any(o is None for o in opt):
                pess = None
        if pess is None:
            if self._refusal is not None:
                raise self._refusal
            pess, opt = self._build_plds(h)
        if not opt:
            opt = [zero_pld(h), zero_pld(h)]
        # opt holds no None here (any None sent it through _build_plds)
        return TwoSidedPLD([(pess[0], cast(PLD, opt[0])), (pess[1], cast(PLD, opt[1]))])

    def _build_plds(self, h: float) -> tuple[list[PLD], list[PLD]]:
        """(pessimistic, optimistic) [remove, add] PLDs of the run on grid step h."""
        lat = lattice_step(self.sigma, self.T)
        if self.k == 1 and self.T > 1:
            out = bis_lower_plds(self.sigma, self.T, self.epochs, h=h, lattice=lat)
            opt = [p for p in out[2:] if p is not None]
            return cast("list[PLD]", list(out[:2])), opt if len(opt) == 2 else []
        pess = list(bis_plds(self.sigma, self.T, self.k, self.epochs, h=h, refine=False))
        opt = []
        if 1 < self.k < self.T:
            low = bis_statistic_lower_plds(self.sigma, self.T, self.k, h=h, shape=1.0,
                                           lattice=lat,
                                           saddle=statistic_saddle(self.T, self.k))
            if low is not None:
                opt = [o.self_compose(self.epochs) for o in low]
        return pess, opt

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        d = np.asarray(delta, dtype=float)
        up = np.max([p.epsilon(d) for p in self.plds], axis=0)
        if not np.all(np.isfinite(up)):
            # the dominating pair keeps the certified truncation / roundoff allowances as
            # mass at +inf loss: below it no finite epsilon is certified
            floor = max(p.inf_mass + p.slack for p in self.plds)
            bad = np.asarray(d, dtype=float).ravel()[~np.isfinite(np.ravel(up))]
            raise NotApplicable(
                f"delta={float(bad.min()):g} is below what the Balanced Iteration PLD "
                f"certifies here (its dominating pair keeps about {floor:.2g} of mass at "
                f"infinite loss for truncation and roundoff); it covers delta > {floor:.2g}")
        lo = None
        if self.optimistic:
            low = np.max([p.epsilon(d) for p in self.optimistic], axis=0)
            lo = Bound(shaped(np.minimum(low, up), d), "lower", SOURCE_LOWER)
        return Bound(shaped(up, d), "upper", SOURCE), lo

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        e = np.asarray(epsilon, dtype=float)
        up = np.max([p.delta(e) for p in self.plds], axis=0)
        lo = None
        if self.optimistic:
            low = np.max([p.delta(e) for p in self.optimistic], axis=0)
            lo = Bound(shaped(np.minimum(low, up), e), "lower", SOURCE_LOWER)
        return Bound(shaped(up, e), "upper", SOURCE), lo


def _on_step(p: PLD, h: float) -> PLD | None:
    """p on grid step h, if h is p's step times an integer (:meth:`PLD.coarsen`, which
    keeps p's kind), else None."""
    r = round(h / p.h)
    if r >= 1 and p.h * r == h:
        return p.coarsen(r)
    return None


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
                            "(k > 1 through k one-participation blocks) and lower bound by a "
                            "dominated one (k > 1: threshold tests on a statistic), FFT "
                            "composition",
                capabilities=("pld", "grid_step"))
def _build(run) -> BISPLDAnalysis:
    mech = run.mechanism
    return BISPLDAnalysis(mech.sigma / mech.sensitivity, run.scheme.steps,
                          run.scheme.participations, run.steps // run.scheme.steps)

