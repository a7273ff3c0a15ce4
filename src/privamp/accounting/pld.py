"""Privacy loss distributions (PLDs) with certified two-sided bounds.

A pair (P, Q) has the privacy profile ``D(a) = H_a(P || Q) = sup_E P(E) - a Q(E)``,
``a = e^eps`` in [0, inf): convex and nonincreasing.  A pair supported on a loss grid
``l_j = j h`` with atoms (p_j, q_j = p_j e^{-l_j}) has the piecewise-linear profile
``D(a) = p_inf + sum_j q_j (a_j - a)_+`` with kinks at ``a_j = e^{l_j}``.

*Domination survives composition.*  For product pairs,
``H_a(P1 x P2 || Q1 x Q2) = p2_inf D1(0) + int c D1(a / c) dmu2(c)`` (mu2 the law of
``e^{L2}`` under Q2), which is monotone in D1 and, symmetrically, in D2.  Hence a grid pair
whose profile lies above the true one everywhere (``pessimistic``) stays above after any
number of compositions, and one below (``optimistic``) stays below; additive errors add.

* Pessimistic discretisation: the "connect-the-dots" pair of Doroshenko, Ghazi, Kamath,
  Kumar, Manurangsi 2022 (Connect the Dots: Tighter Discrete Approximations of Privacy Loss
  Distributions, PoPETs 2022, arXiv:2207.04380, Sec. 3): in each bin the loss atom is split
  between the two end points with the Q- and P-masses preserved; its profile is the chord
  interpolation of D at the grid points, which lies above D by convexity.
* Optimistic discretisation (privamp): the chords lowered by a bound on their gap to D
  (``g_i = Delta_i A_i B_i / (A_i + B_i)``, from the two end tangents), then the greatest
  convex minorant (isotonic regression of the slopes).  For losses with a density its error
  is second order in h, like the pessimistic one, instead of the T-fold first-order bias of
  rounding losses down.  An atom strictly inside a bin costs any grid-supported optimistic
  pair O(h) on a half-line, so for discrete pairs the accountant aligns the grid with the
  atoms (:func:`_aligned_step`).
* Float error: one-step masses carry a relative safety factor (1 +- 1e-12, for relative
  errors of the splits and the isotonic regression); the tail evaluations' error at each
  grid point is bounded (:func:`_tail_errors`) and covered by a relative part (masses scaled
  by 1 +- rho) where the profile is large against it and an additive part (``slack``)
  elsewhere (:func:`_relative_split`) -- a relative error costs a T-fold composition T rho
  times delta, an additive one T s; direct-sum convolutions are corrected by their
  relative error bound; FFT convolutions add a certified l1 bound (Higham 2002, Thm 24.2)
  to ``slack``; queries add a relative 1e-9.  All of these are in the safe direction.
* Composition: FFT convolution of the P-masses (:func:`privamp.numerics.fft.convolve_nonneg`)
  with a certified l1 bound on the roundoff, carried in :attr:`PLD.slack`; tails below a
  threshold are truncated in the safe direction (pessimistic: low tail moved up, high tail
  to the atom at +inf; optimistic: dropped).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import isotonic_regression
from scipy.signal import lfilter

from .._validation import check_int, check_positive
from ..errors import NotApplicable
from ..mechanisms import Gaussian, Laplace, Mechanism, RandomizedResponse
from ..mechanisms.pairs import (
    DiscretePair,
    GaussianPair,
    LaplacePair,
    LossPair,
    MixturePair,
    SwappedPair,
)
from ..numerics.fft import UNIT_ROUNDOFF, convolve_nonneg, self_convolve_power
from ..results import Bound
from ..sampling import AddRemove, Poisson, ZeroOut
from .registry import BoundPair, RunAnalysis, run_accountant

__all__ = [
    "PLD",
    "TwoSidedPLD",
    "discretise",
    "poisson_pairs",
    "PLDAnalysis",
    "auto_grid",
    "pld_analysis",
    "compose_two_level",
    "PowerMethodUnavailable",
]

_U = UNIT_ROUNDOFF
_U_LD = float(np.finfo(np.longdouble).eps) / 2.0
#: relative safety factor applied to the masses of one discretised step (covers relative
#: float error in the tail evaluations and in the isotonic regression)
_REL_SAFETY = 1e-12
#: default l1 budget of the tails dropped/moved by truncation over a whole self-composition
_TRUNC_BUDGET = 1e-13
#: relative allowance for float error in the suffix sums used by delta() / epsilon()
_QUERY_REL = 1e-9
_MAX_LOSS = 700.0
#: at most this many points in one step's grid (memory: about 100 bytes per point)
_MAX_GRID_POINTS = 4_000_000
#: self_compose(method="auto") uses Fourier-domain powering only for T >= _POWER_MIN_T and
#: PLDs with at least _POWER_MIN_ATOMS atoms, and only while at most _POWER_MAX_KEPT of the
#: Fourier coefficients must be powered
_POWER_MIN_ATOMS = 256
_POWER_MIN_T = 16
_POWER_MAX_KEPT = 1.0 / 32.0
PESSIMISTIC_SOURCE = (
    "PLD, pessimistic connect-the-dots discretisation (Doroshenko et al. 2022), FFT composition"
)
OPTIMISTIC_SOURCE = (
    "PLD, optimistic discretisation by chained lowered chords and convex minorant (privamp), "
    "FFT composition"
)


class PowerMethodUnavailable(ValueError):
    """``PLD.self_compose(method="power")`` cannot compose this PLD (the Fourier window would
    be too long or a numerical check failed); repeated squaring always can."""


@dataclass
class PLD:
    """Discretised PLD of one ordered pair (P, Q): P-masses on the losses ``(offset + i) h``.

    ``inf_mass`` is the P-mass at loss +inf.  ``kind`` is ``"pessimistic"`` (the profile of
    this grid pair, plus ``slack``, is >= the true one) or ``"optimistic"`` (its profile minus
    ``slack`` is <= the true one).  ``slack`` is the numerical-error allowance already
    accounted (float error of the discretisation and certified FFT roundoff bounds).
    """

    h: float
    offset: int
    masses: np.ndarray
    inf_mass: float
    kind: str
    slack: float = 0.0
    _tables: tuple | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in ("pessimistic", "optimistic"):
            raise ValueError(f"kind must be 'pessimistic' or 'optimistic', got {self.kind!r}")
        self.masses = np.asarray(self.masses, dtype=float)

    # -- basic ------------------------------------------------------------------------------
    @property
    def losses(self) -> np.ndarray:
        """The grid losses (offset + i) h of the masses."""
        return (self.offset + np.arange(len(self.masses))) * self.h

    @property
    def total_mass(self) -> float:
        return float(self.masses.sum()) + self.inf_mass

    def _check_compatible(self, other: PLD) -> None:
        if not isinstance(other, PLD):
            raise ValueError(f"can only compose a PLD with a PLD, got {type(other).__name__}")
        if other.kind != self.kind:
            raise ValueError(f"cannot compose a {self.kind} PLD with an {other.kind} one")
        if other.h != self.h:
            raise ValueError(f"PLDs must share the grid step h, got {self.h} and {other.h}")

    # -- composition ------------------------------------------------------------------------
    def compose(self, other: PLD, truncation: float = 1e-16) -> PLD:
        """The PLD of the product pair (P1 x P2, Q1 x Q2).

        Tails of mass <= ``truncation`` (each side) are truncated in the sound direction.
        """
        self._check_compatible(other)
        if not 0.0 <= truncation < 1e-3:
            raise ValueError(f"truncation must be in [0, 1e-3), got {truncation}")
        same = other is self
        rnd = "up" if self.kind == "pessimistic" else "down"
        z, err = convolve_nonneg(self.masses, None if same else other.masses, rnd)
        m1, m2 = float(self.masses.sum()), float(other.masses.sum())
        p1, p2 = self.inf_mass, other.inf_mass
        inf_mass = p1 * (m2 + p2) + m1 * p2
        # each slack acts as extra mass at +inf; in the product it meets the other factor's
        # whole mass (which may exceed 1 by the rounding factors)
        t1, t2 = max(m1 + p1, 1.0), max(m2 + p2, 1.0)
        slack = self.slack * t2 + other.slack * t1 + self.slack * other.slack + err
        # FFT roundoff leaves O(err) l1 garbage spread over the whole array, so the tails are
        # cut at max(truncation, err); this at most doubles the roundoff allowance.
        return _truncated(self.h, self.offset + other.offset, z, inf_mass, self.kind, slack,
                          max(truncation, err))

    def self_compose(self, T: int, truncation: float | None = None,
                     method: str = "auto") -> PLD:
        """The PLD of the T-fold product.

        ``method="power"``: one FFT pair, the transform raised to the T-th power on a window
        chosen by Chernoff bounds (:func:`privamp.numerics.fft.self_convolve_power`, certified
        l1 error); ``"squaring"``: repeated squaring, O(n log n log T); ``"auto"``: power
        for T >= 16 and PLDs with >= 256 atoms, falling back to squaring when the window is
        too long, too many coefficients must be powered, or a check fails.

        ``truncation`` is the tail mass truncated after each convolution; by default
        ``1e-13 / (2 T)``, so that all truncations together change delta by <= 1e-13 (the
        power method truncates ``T truncation / 2`` on each side, once).
        """
        T = check_int("T", T, minimum=1)
        if method not in ("auto", "power", "squaring"):
            raise ValueError(f"method must be 'auto', 'power' or 'squaring', got {method!r}")
        tau = _TRUNC_BUDGET / (2.0 * T) if truncation is None else float(truncation)
        # auto: squaring is cheaper for small T, and when p has few atoms (then many
        # Fourier coefficients of modulus near 1 must be powered in long double)
        if T >= 2 and (method == "power" or (
                method == "auto" and T >= _POWER_MIN_T
                and np.count_nonzero(self.masses) >= _POWER_MIN_ATOMS)):
            out = self._power_self_compose(T, 0.5 * T * tau,
                                           1.0 if method == "power" else _POWER_MAX_KEPT)
            if out is not None:
                return out
            if method == "power":
                raise PowerMethodUnavailable(
                    "the power method cannot compose this PLD (window too long or a "
                    "numerical check failed); use method='squaring'")
        result: PLD | None = None
        base = self
        while True:
            if T & 1:
                result = base if result is None else result.compose(base, tau)
            T >>= 1
            if not T:
                break
            base = base.compose(base, tau)
        assert result is not None
        return result

    def _power_self_compose(self, T: int, tau: float, max_kept: float) -> PLD | None:
        """T-fold product by Fourier-domain exponentiation (None if not applicable).

        With the window returned by :func:`self_convolve_power` (``z = x_window + a + e``,
        aliased mass ``a >= 0`` of total <= tau_lo + tau_hi, ``sum |e| <= err``, tails
        outside <= tau_lo below and <= tau_hi above), and profiles linear in the masses with
        coefficients in [0, 1] that increase with the loss:

        * pessimistic: negatives clipped to 0 (raises the profile), tau_lo added to the
          window's first entry (covers the low tail moved up), tau_hi to inf_mass (the high
          tail), ``err`` to slack; aliased mass only raises the profile.
        * optimistic: tails dropped; ``err + tau_lo + tau_hi + clipped negatives`` to slack.

        Slack of the factors: ``H(P1 x P2 || Q1 x Q2)`` changes by at most sup|D1 - D1'|
        times the total P-mass of pair 2 when D1 does (the composition formula in the module
        docstring), so composing the true pair (mass 1) and the grid pair (mass M) T times
        gives slack ``s sum_{k<T} M^k <= (M' + s)^T - M'^T`` with ``M' = max(M, 1)``.
        The infinite mass of the T-fold grid pair is ``(m + p_inf)^T - m^T``.
        """
        p = self.masses
        res = self_convolve_power(p, T, tau, max_kept_fraction=max_kept)
        if res is None:
            return None
        start, z, err, tau_lo, tau_hi = res
        # sum of n nonnegative terms: relative error <= (n + 1) u; round the way that
        # raises (pessimistic) or lowers (optimistic) the mass at +inf, (m + pinf)^T - m^T
        pess = self.kind == "pessimistic"
        m_sum = float(np.sum(p))
        m_hi = m_sum * (1.0 + (len(p) + 2) * _U)
        m = m_hi if pess else m_sum * (1.0 - (len(p) + 2) * _U)
        pinf = self.inf_mass
        rel = 16.0 * (T + 8) * _U + 1e-15  # float error of powers: exponents carry T u
        if m > 0:
            inf_t = math.exp(T * math.log(m)) * math.expm1(T * math.log1p(pinf / m))
        else:
            inf_t = pinf**T
        inf_t *= (1.0 + rel) if pess else (1.0 - rel)
        mm = max(m_hi * (1.0 + 2 * _U) + pinf, 1.0)
        s = self.slack
        grow = 0.0
        if s > 0:
            grow = math.exp(T * math.log(mm)) * math.expm1(T * math.log1p(s / mm))
            grow *= 1.0 + rel
        neg = float(-z[z < 0].sum())
        z = np.maximum(z, 0.0)
        if pess:
            z[0] += tau_lo
            inf_t += tau_hi
            slack = grow + err
        else:
            slack = grow + err + tau_lo + tau_hi + neg
        slack *= 1.0 + 1e-12
        if not (math.isfinite(slack) and math.isfinite(inf_t)) or slack > 1e-3:
            return None
        return _strip(PLD(self.h, T * self.offset + start, z, inf_t, self.kind, slack))

    def coarsen(self, factor: int) -> PLD:
        """This PLD on the grid of step ``k h`` (``k = factor``), of the same kind.

        Pessimistic: connect-the-dots of its atoms (Doroshenko et al. 2022): an atom at loss
        (kJ + r) h sends the P-fraction ``f_r = (1 - e^{-r h}) / (1 - e^{-k h})`` to
        (J + 1) k h and the rest to J k h, which keeps its P- and Q-masses, so the profile
        is the chord interpolation of this one's at the coarse points -- above it, by
        convexity.  Masses are rounded up by their relative float error.

        Optimistic: the atoms of each coarse bin (J k h, (J + 1) k h] are merged into one
        (a post-processing, so the profile can only drop), and the merged pair is
        discretised like any pair (lowered chords chained at the tents, convex minorant),
        whose tent envelope is then exactly the merged pair's profile.
        """
        factor = check_int("factor", factor, minimum=1)
        if factor == 1:
            return self
        if self.kind == "optimistic":
            return self._coarsen_optimistic(factor)
        k = factor
        first = self.offset // k  # floor
        shift = self.offset - first * k  # position of masses[0] inside its coarse bin
        n_bins = -(-(shift + len(self.masses)) // k)
        buf = np.zeros(n_bins * k)
        buf[shift : shift + len(self.masses)] = self.masses
        buf = buf.reshape(n_bins, k)
        r = np.arange(k)
        f = np.expm1(-r * self.h) / math.expm1(-k * self.h)
        out = np.zeros(n_bins + 1)
        out[1:] += buf @ f
        out[:-1] += buf @ (1.0 - f)
        out *= 1.0 + 4.0 * (k + 8) * _U
        return _strip(PLD(k * self.h, first, out, self.inf_mass, self.kind, self.slack))

    def _coarsen_optimistic(self, k: int) -> PLD:
        h, n = self.h, len(self.masses)
        idx = self.offset + np.arange(n)
        J = (idx - 1) // k  # bin (J k h, (J + 1) k h] holds index J k + 1 .. (J + 1) k
        j0 = int(J[0]) - 1  # one empty bin below keeps the total P-mass (see discretise)
        nbins = int(J[-1]) - j0 + 1
        pb = np.bincount(J - j0, weights=self.masses, minlength=nbins)
        with np.errstate(under="ignore"):
            qb = np.bincount(J - j0, weights=self.masses * np.exp(-idx * h), minlength=nbins)
        H = k * h
        l = (j0 + np.arange(nbins + 1)) * H
        a = np.exp(l)
        dlt, e = _bin_split(pb, qb, a, H)
        qgt = np.zeros(nbins + 1)
        # suffix sums in long double: relative error <= nbins u_ld, a few double ulp
        qgt[:-1] = np.cumsum(qb[::-1].astype(np.longdouble))[::-1]
        # Q(L >= l_i) is only used as a lower bound on the slope's size (the tangent lines
        # of the construction must stay below D), so Q(L > l_i) <= Q(L >= l_i) serves
        o = _optimistic_masses(l, a, dlt, qb, e, qgt, lambda i: qgt[i])
        pm = np.concatenate(([0.0], pb, [0.0]))
        qm = np.concatenate(([0.0], qb, [0.0]))
        ulps = 4.0 + k + 2.0 * nbins * _U_LD / _U  # bincount sums, long-double suffix sums
        errs = _tail_errors(pm, qm, a, ulps=ulps)
        return _strip(_with_float_allowance(H, j0, o, self.inf_mass, "optimistic", 2.0 * errs,
                                            slack=self.slack))

    # -- queries ----------------------------------------------------------------------------
    def _get_tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """R_j = sum_{i>=j} p_i e^{-(l_i - l_j)} and G_j = sum_{i>j} p_i (1 - e^{-(l_i-l_j)})
        (the raw profile at eps = l_j), both sums of nonnegative terms."""
        if self._tables is None:
            m = self.masses
            r = lfilter([1.0], [1.0, -math.exp(-self.h)], m[::-1])[::-1]
            inc = -math.expm1(-self.h) * r
            g = np.zeros_like(m)
            if len(m) > 1:
                g[:-1] = np.cumsum(inc[:0:-1])[::-1]
            self._tables = (self.losses, r, g)
        return self._tables

    def _raw_delta(self, eps: np.ndarray) -> np.ndarray:
        """sum_{l_j > eps} p_j (1 - e^{eps - l_j}) + inf_mass (no slack, no rounding)."""
        losses, r, g = self._get_tables()
        n = len(losses)
        j = np.searchsorted(losses, eps, side="right")
        inside = j < n
        jj = np.minimum(j, n - 1)
        t = np.where(inside, losses[jj] - eps, 0.0)  # > 0 inside; 0 elsewhere (unused)
        val = g[jj] + (-np.expm1(-t)) * r[jj]
        return np.where(inside, val, 0.0) + self.inf_mass

    def delta(self, epsilon: np.ndarray | float) -> np.ndarray:
        """Bound of this PLD's kind on the true profile delta(eps) (eps real)."""
        eps = np.asarray(epsilon, dtype=float)
        raw = self._raw_delta(eps)
        if self.kind == "pessimistic":
            return np.minimum(raw * (1 + _QUERY_REL) + self.slack, 1.0)
        return np.maximum(raw * (1 - _QUERY_REL) - self.slack, 0.0)

    def epsilon(self, delta: np.ndarray | float) -> np.ndarray:
        """Smallest eps >= 0 with delta(eps) <= delta, for this PLD's bound on the profile
        (pessimistic: an upper bound on the true epsilon, possibly inf; optimistic: a lower
        bound).  Exact inversion of the piecewise-smooth profile, rounded in the safe way."""
        d = np.asarray(delta, dtype=float)
        losses, r, g = self._get_tables()
        pess = self.kind == "pessimistic"
        if pess:
            target = (d - self.slack) / (1 + _QUERY_REL) - self.inf_mass
        else:
            target = (d + self.slack) / (1 - _QUERY_REL) - self.inf_mass
        target = np.atleast_1d(target)
        out = np.empty_like(target)
        raw0 = self._raw_delta(np.zeros_like(target)) - self.inf_mass
        # g is nonincreasing: the first index j with g_j <= target
        j = np.searchsorted(-g, -target, side="left")
        n = len(g)
        jj = np.minimum(j, n - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = (target - g[jj]) / r[jj]
            t = -np.log1p(-np.clip(frac, 0.0, 1.0))
        eps = losses[jj] - t
        lower_end = np.where(jj > 0, losses[np.maximum(jj - 1, 0)], -np.inf)
        eps = np.maximum(eps, lower_end)
        step = 1e-12 * np.maximum(1.0, np.abs(eps)) + 4 * _U
        eps = eps + step if pess else eps - step
        eps = np.maximum(eps, 0.0)
        out[:] = eps
        out[raw0 <= target] = 0.0
        out[target < 0] = np.inf
        return out.reshape(d.shape)


def _truncated(h: float, offset: int, z: np.ndarray, inf_mass: float, kind: str,
               slack: float, tau: float) -> PLD:
    """Truncate tails of mass <= tau: pessimistic moves the low tail up to the first kept
    index and the high tail to +inf; optimistic drops both (dropping P-mass lowers D)."""
    n = len(z)
    cs = np.cumsum(z)
    i0 = int(np.searchsorted(cs, tau, side="right"))
    rs = np.cumsum(z[::-1])
    k = int(np.searchsorted(rs, tau, side="right"))
    i1 = n - k  # keep [i0, i1)
    if i1 <= i0:  # nothing above the threshold: keep the largest entry's neighbourhood
        i0 = int(np.argmax(z))
        i1 = i0 + 1
        low = float(z[:i0].sum())
        high = float(z[i1:].sum())
    else:
        low = float(cs[i0 - 1]) if i0 > 0 else 0.0
        high = float(rs[k - 1]) if k > 0 else 0.0
    kept = z[i0:i1].copy()
    if kind == "pessimistic":
        kept[0] += low
        inf_mass = inf_mass + high
    return PLD(h, offset + i0, kept, inf_mass, kind, slack)


# ------------------------------------------------------------------------------------------
# discretisation of one pair
# ------------------------------------------------------------------------------------------
def _grid(pair: LossPair, h: float, tail: float) -> tuple[int, np.ndarray]:
    """First index and losses of the grid ``j h`` covering ``pair.loss_range(tail)`` clipped
    to [-700, 700] (e^l must stay finite).  Clipping is sound: :func:`discretise` moves the
    P-mass below the grid up to its first point and sends the P-mass above it to +inf
    (pessimistic), and the optimistic side only uses tails at the grid points; a wide clip
    only widens the interval.  At most ``_MAX_GRID_POINTS`` points (else NotApplicable)."""
    lo, hi = pair.loss_range(tail)
    if math.isnan(lo) or math.isnan(hi):
        raise NotApplicable("the privacy loss range of this pair could not be computed (NaN); "
                            "the PLD accountant cannot discretise it")
    lo = min(max(lo, -_MAX_LOSS), _MAX_LOSS)
    hi = min(max(hi, lo), _MAX_LOSS)
    i_lo = math.floor(lo / h) - 1  # one empty bin below: keeps the optimistic total P-mass
    i_hi = max(math.ceil(hi / h), i_lo + 1)
    if i_hi - i_lo + 1 > _MAX_GRID_POINTS:
        raise NotApplicable(
            f"a PLD grid of step h={h:.3g} over the losses [{lo:.4g}, {hi:.4g}] would need "
            f"{i_hi - i_lo + 1} points, more than the cap {_MAX_GRID_POINTS:.0f}; use h >= "
            f"{(hi - lo) / (_MAX_GRID_POINTS - 3):.3g}")
    return i_lo, np.arange(i_lo, i_hi + 1) * h


def _tail_errors(pm: np.ndarray, qm: np.ndarray, a: np.ndarray, ulps: float = 4.0
                 ) -> np.ndarray:
    """Bounds E_k on the float error of the grid pair's profile at the grid points a_k.

    The tails are evaluated within 4 ulp (relative) and each bin mass is the rounded
    difference of the two smaller tails, so the tails telescoped from the stored masses are
    within 12 u of the true ones relative to R_k = (stored mass above l_k) above the
    distribution's switch point (where the upper tail becomes the smaller one), and within
    12 u (total + R_k) below it.  The profile at a_k is P(L > l_k) - a_k Q(L > l_k), so
    ``E_k = 12 u (e_P + a_k e_Q)`` with those two terms, times a safety factor 2.  Tails
    known to ``ulps`` ulp instead of 4 scale this by ulps / 4.
    """
    def side(m: np.ndarray) -> np.ndarray:
        inner = m[1:-1]
        above = np.cumsum(m[::-1])[::-1][1:]  # stored mass above l_k, k = 0..K
        tot = float(m.sum())
        below = np.concatenate(([m[0]], m[0] + np.cumsum(inner)))  # stored mass <= l_k
        # switch: first k whose mass above is below the mass at or below
        err = np.where(above <= below, above, tot + above)
        return err

    return 6.0 * ulps * _U * (side(pm) + a * side(qm)) + 1e-300


def _relative_split(vertex: np.ndarray, err: np.ndarray, rho_max: float = 1e-10
                    ) -> tuple[float, float]:
    """(rho, s) with ``rho * G(a) + s >= Err(a)`` on every segment, for a grid profile G
    with values ``vertex`` at the grid points and an error Err at most ``max(E_k, E_k+1)``
    on segment k (G decreases, so G >= G_{k+1} there).

    A relative part rho costs a T-fold composition ``T rho`` times the (small) delta it is
    queried at, an additive part ``T s``; rho is the largest ratio E / G over the segments
    where G is not tiny, at most ``rho_max``; s covers the rest.  ``vertex`` is lowered by the
    float error of its own summation and by E first (it stands in for the true profile).
    """
    n = len(vertex)
    if n < 2:
        return 0.0, float(err.max()) if len(err) else 0.0
    e_seg = np.maximum(err[:-1], err[1:])
    g_low = np.maximum(vertex[1:] * (1.0 - 4.0 * n * _U) - err[1:], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(g_low > 0, e_seg / g_low, np.inf)
    rho = float(min(np.max(np.where(ratio <= rho_max, ratio, 0.0)), rho_max)) * (1.0 + 1e-6)
    s = float(np.max(np.maximum(e_seg - rho * g_low, 0.0)))
    return rho, s * (1.0 + 1e-6)


def discretise(pair: LossPair, h: float, tail: float = 1e-16,
               optimistic: bool = True, rho_max: float = 1e-10) -> tuple[PLD, PLD | None]:
    """(pessimistic, optimistic) grid PLDs of one ordered pair on the grid ``j h``.

    The grid covers ``pair.loss_range(tail)``.  Pessimistic: connect-the-dots (Doroshenko
    et al. 2022); the P-mass below the grid is moved up to its first point, the P-mass above
    it (and at +inf) goes to ``inf_mass``.  Optimistic: lowered chords + greatest convex
    minorant (see module docstring), anchored at value 0 at the grid's end.

    ``optimistic=False`` skips the optimistic side (returned as None).  ``rho_max`` caps the
    relative part of the float-error allowance (:func:`_relative_split`); a T-fold
    composition multiplies its deltas by up to ``(1 + rho)^T``, so callers composing many
    steps may raise it to about ``1e-4 / T`` to turn more of the allowance relative.
    """
    h = check_positive("h", h)
    if not 0 < rho_max <= 1e-6:
        raise ValueError(f"rho_max must be in (0, 1e-6], got {rho_max}")
    if not 0 < tail < 1e-3:
        raise ValueError(f"tail must be in (0, 1e-3), got {tail}")
    finite = float(np.asarray(pair.tail(np.array([np.inf]), "P", False, True))[0])
    if finite <= 0.0:  # all of P sits at loss +inf (e.g. randomized response with theta = 1)
        p_inf = float(pair.p_inf)
        return (PLD(h, 0, np.zeros(1), min(p_inf * (1 + _REL_SAFETY), 1.0), "pessimistic"),
                PLD(h, 0, np.zeros(1), p_inf * (1 - _REL_SAFETY), "optimistic")
                if optimistic else None)
    i_lo, l = _grid(pair, h, tail)
    pm_all, qm_all = pair.bin_masses(l)
    pb, qb = pm_all[1:-1], qm_all[1:-1]  # bins (l_i, l_{i+1}]
    a = np.exp(l)
    dlt, e = _bin_split(pb, qb, a, h)
    errs = _tail_errors(pm_all, qm_all, a)

    # --- pessimistic ---
    up = a[1:] * e
    low = a[:-1] * (qb - e)
    pess = np.zeros(len(l))
    pess[:-1] += low
    pess[1:] += up
    pess[0] += pm_all[0]
    p = _with_float_allowance(h, i_lo, pess, float(pm_all[-1]), "pessimistic", errs, rho_max)
    if not optimistic:
        return _strip(p), None

    # --- optimistic ---
    o = _optimistic_masses(l, a, dlt, qb, e, pair.tail(l, "Q", True, True),
                           lambda i: pair.tail(l[i : i + 1], "Q", True, False)[0])
    opt = _with_float_allowance(h, i_lo, o, pair.p_inf, "optimistic", 2.0 * errs, rho_max)
    return _strip(p), _strip(opt)


def _bin_split(pb: np.ndarray, qb: np.ndarray, a: np.ndarray, h: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """(Delta_i = a_{i+1} - a_i, e_i = the Q-mass of bin i sent to its upper end) for bins
    (l_i, l_{i+1}] of P- and Q-masses pb, qb on the grid a_i = e^{l_i} of step h: the
    connect-the-dots split keeping each bin's P- and Q-mass."""
    em1 = math.expm1(h)
    return a[:-1] * em1, np.clip((pb / a[:-1] - qb) / em1, 0.0, qb)


def _with_float_allowance(h: float, offset: int, masses: np.ndarray, inf_mass: float,
                          kind: str, errs: np.ndarray, rho_max: float = 1e-10,
                          slack: float = 0.0) -> PLD:
    """The grid PLD of ``kind`` with its masses (and inf_mass) scaled by 1 +- (relative
    safety + rho) and ``s`` added to ``slack``, (rho, s) covering the float errors ``errs``
    at the grid points (:func:`_relative_split` of its own profile there)."""
    vertex = PLD(h, offset, masses, inf_mass, kind)._get_tables()[2] + inf_mass
    rho, s = _relative_split(vertex, errs, rho_max)
    fac = 1.0 + (_REL_SAFETY + rho) * (1.0 if kind == "pessimistic" else -1.0)
    return PLD(h, offset, masses * fac, inf_mass * fac, kind, slack + s)


def _optimistic_masses(l: np.ndarray, a: np.ndarray, dlt: np.ndarray, qb: np.ndarray,
                       e: np.ndarray, qgt: np.ndarray, q_ge) -> np.ndarray:
    """P-masses on the grid of a pair whose profile lies below D everywhere.

    Chord slopes m_i = -Q(L > l_{i+1}) - e_i; with A = Q_i - e_i, B = e_i, D lies above the
    tangents at both ends of segment i (slopes m_i - A and m_i + B), i.e. above the chord
    minus a tent of height g_i = Delta_i A B / (A + B) peaked at relative position
    t_i = B / (A + B); vertex lowerings mu_i come from :func:`_vertex_lowering`; values
    v_i = W_i - mu_i with W_i = D(a_i) - D(a_K) <= D(a_i).  The grid ends at the first K'
    with v_K' <= 0, where the value is set to 0 and v_{K'-1} <= Q(L >= l_K') Delta (the
    tangent through (a_K', 0) with the left derivative, a subgradient);
    a virtual point at a = 0 on the line of slope -Q(L >= l_0) through (a_0, v_0) covers
    [0, a_0].  The greatest convex minorant of these points (isotonic regression of the
    slopes with weights Delta) is the optimistic profile; its slope increments are Q'-masses.

    ``qgt`` holds Q(L > l_i), i = 0..K, and ``q_ge(i)`` returns Q(L >= l_i).
    """
    K = len(l) - 1
    qge0 = float(q_ge(0))  # Q(L >= l_0)
    m = -qgt[1:] - e
    A = qb - e
    with np.errstate(invalid="ignore", divide="ignore"):
        pos = qb > 0
        safe = np.where(pos, qb, 1.0)
        g = np.where(pos, dlt * A * e / safe, 0.0)
        t = np.clip(np.where(pos, e / safe, 0.5), 0.0, 1.0)
    w = np.zeros(K + 1)
    w[:K] = np.cumsum((-m * dlt)[::-1])[::-1]
    mu = _vertex_lowering(g, t, cap=w)
    v = w - mu
    nonpos = np.nonzero(v[1:] <= 0)[0]
    kend = int(nonpos[0]) + 1 if len(nonpos) else K  # first index >= 1 with v <= 0
    # slopes on segments 0..kend-1
    s = m[:kend] - (mu[1 : kend + 1] - mu[:kend]) / dlt[:kend]
    # tangent at a_K' with the left derivative -Q(L >= l_K') (a subgradient of D there)
    q_at = float(q_ge(kend))
    v_last = min(float(v[kend - 1]), q_at * float(dlt[kend - 1]))
    v_last = max(v_last, 0.0)
    s[kend - 1] = -v_last / dlt[kend - 1]
    if kend >= 2:
        # keep v_{kend-1} consistent: the segment before ends at the (possibly lowered) value
        s[kend - 2] = (v_last - v[kend - 2]) / dlt[kend - 2]
    slopes = np.concatenate(([-qge0], s))
    weights = np.concatenate(([a[0]], dlt[:kend]))
    fit = isotonic_regression(slopes, weights=weights, increasing=True).x
    fit = np.minimum(fit, 0.0)
    # Q'-mass at a_j = slope increment there (slope after the last point is 0)
    inc = np.diff(np.concatenate((fit, [0.0])))
    q = np.maximum(inc, 0.0)
    out = np.zeros(K + 1)
    out[: kend + 1] = a[: kend + 1] * q
    # a pooled slope (weighted mean of m slopes of one sign) carries a relative error
    # <= (m + 2) u, and the profile at a is the integral of |slope| to its right, so scaling
    # the masses down by 4 (m + 2) u covers it (m: the longest run of pooled slopes)
    runs = np.flatnonzero(np.diff(fit) != 0.0)
    m = int(np.max(np.diff(np.concatenate(([-1], runs, [len(fit) - 1]))))) if len(fit) else 1
    out *= 1.0 - 4.0 * (m + 2) * _U
    return out


#: segments per block of the chained vertex lowering (blocks are chained in parallel)
_CHAIN_BLOCK = 32
#: a tent peak at relative position t < _CHAIN_LEFT loads the segment's left vertex instead
_CHAIN_LEFT = 1e-3


def _vertex_lowering(g: np.ndarray, t: np.ndarray, cap: np.ndarray | None = None
                     ) -> np.ndarray:
    """Lowerings mu_0..mu_K >= 0 of the chord vertices such that every lowered segment lies
    below the tent envelope of its segment (hence below D).

    The lowered segment i runs from (a_i, D_i - mu_i) to (a_{i+1}, D_{i+1} - mu_{i+1}); the
    envelope is the chord minus a tent of height g_i at relative position t_i (zero at both
    ends).  Line minus envelope is concave and piecewise linear with its only kink at the
    tent's peak, so the segment lies below the envelope iff it does at the ends and at the
    peak: mu_i, mu_{i+1} >= 0 and ``(1 - t_i) mu_i + t_i mu_{i+1} >= g_i``.

    Any such mu is sound; small ones give a tight optimistic PLD.  ``mu_i = max(g_{i-1},
    g_i)`` satisfies the constraints but lowers both ends of a segment by its whole gap; the
    chain ``mu_{i+1} = max(0, (g_i - (1 - t_i) mu_i) / t_i)`` makes every constraint tight
    (this is the optimistic analogue of connect-the-dots: each segment touches the envelope
    at its peak, and for a pair with one atom per bin -- where the envelope *is* the profile --
    it is a post-processing of the pair).  For speed the chain runs in blocks of
    ``_CHAIN_BLOCK`` segments in parallel, each block starting from the max-rule value
    (feasible on both sides); a block's last vertex takes the max of both values.  Where
    the chain would lower the right vertex below zero value (beyond ``cap``, the chord's
    value there) or the peak sits at the left end (t < ``_CHAIN_LEFT``), the segment loads
    its left vertex instead (``mu_i >= g_i / (1 - t_i)``, ``mu_{i+1} = 0``), or both ends by
    g_i if that too exceeds the cap.  A final check in float (with g inflated by 1e-9
    relative) raises any vertex of a violated constraint to the max-rule value, which
    satisfies it.
    """
    K = len(g)
    gi = g * (1.0 + 1e-9)
    mu_max = np.empty(K + 1)
    mu_max[0] = gi[0]
    mu_max[K] = gi[K - 1]
    if K > 1:
        mu_max[1:K] = np.maximum(gi[:-1], gi[1:])
    L = _CHAIN_BLOCK
    nb = -(-K // L)
    pad = nb * L - K
    gp = np.concatenate((gi, np.zeros(pad))).reshape(nb, L)
    tp = np.concatenate((t, np.full(pad, 0.5))).reshape(nb, L)
    mm = np.concatenate((mu_max, np.zeros(pad))).reshape(-1)  # vertices 0..nb L
    up = 1.0 + 4.0 * _U
    # vertex values of block b: columns 0..L (columns 0 and L shared with the neighbours)
    if cap is None:
        cap = np.full(K + 1, np.inf)
    cp = np.concatenate((cap, np.full(pad, np.inf)))  # vertices 0..nb L
    vidx = np.arange(nb) * L
    chain = np.zeros((nb, L + 1))
    chain[:, 0] = mm[0 : nb * L : L]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(L):
            tk, gk = tp[:, i], gp[:, i]
            fwd = np.maximum((gk - (1.0 - tk) * chain[:, i]) / np.where(tk > 0, tk, 1.0),
                             0.0) * up
            left = (tk < _CHAIN_LEFT) | (fwd > cp[vidx + i + 1])
            need = gk / np.where(tk < 1.0, 1.0 - tk, 1.0) * up
            both = left & (need > cp[vidx + i])  # left vertex cannot take it alone
            new_left = np.where(both, gk * up, need)
            chain[:, i] = np.where(left, np.maximum(chain[:, i], new_left), chain[:, i])
            chain[:, i + 1] = np.where(both, gk * up, np.where(left, 0.0, fwd))
    mu = np.zeros(nb * L + 1)
    mu[: nb * L] = chain[:, :L].reshape(-1)
    # a block's last vertex is the next block's first: both values must hold
    mu[L : nb * L + 1 : L] = np.maximum(mu[L : nb * L + 1 : L], chain[:, L])
    mu = mu[: K + 1]
    lhs = (1.0 - t) * mu[:-1] + t * mu[1:]
    bad = np.nonzero(lhs < gi)[0]
    if len(bad):
        mu[bad] = np.maximum(mu[bad], mu_max[bad])
        mu[bad + 1] = np.maximum(mu[bad + 1], mu_max[bad + 1])
    return mu


def _zero_pld(h: float) -> PLD:
    """The optimistic PLD of the trivial lower bound (profile 0)."""
    return PLD(h, 0, np.zeros(1), 0.0, "optimistic")


def _strip(p: PLD) -> PLD:
    nz = np.nonzero(p.masses > 0)[0]
    if len(nz) == 0:
        return PLD(p.h, p.offset, np.zeros(1), p.inf_mass, p.kind, p.slack)
    i0, i1 = int(nz[0]), int(nz[-1]) + 1
    return PLD(p.h, p.offset + i0, p.masses[i0:i1].copy(), p.inf_mass, p.kind, p.slack)


# ------------------------------------------------------------------------------------------
# several directions (add / remove)
# ------------------------------------------------------------------------------------------
@dataclass
class TwoSidedPLD:
    """PLDs of several directions (e.g. [remove pair, add pair]), each as (pess, opt).

    The run's profile is the max over directions, so upper bounds are the max of the
    pessimistic ones and lower bounds the max of the optimistic ones.
    """

    directions: list[tuple[PLD, PLD]]

    @classmethod
    def from_pairs(cls, pairs: list[LossPair], h: float, tail: float = 1e-16) -> TwoSidedPLD:
        if not pairs:
            raise ValueError("pairs must hold at least one LossPair")
        return cls([discretise(p, h, tail) for p in pairs])

    def compose(self, other: TwoSidedPLD, truncation: float = 1e-16) -> TwoSidedPLD:
        if len(other.directions) != len(self.directions):
            raise ValueError("both TwoSidedPLDs must have the same number of directions")
        return TwoSidedPLD([
            (p1.compose(p2, truncation), o1.compose(o2, truncation))
            for (p1, o1), (p2, o2) in zip(self.directions, other.directions, strict=True)
        ])

    def self_compose(self, T: int, truncation: float | None = None) -> TwoSidedPLD:
        return TwoSidedPLD([
            (p.self_compose(T, truncation), o.self_compose(T, truncation))
            for p, o in self.directions
        ])

    def delta(self, epsilon: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """(upper, lower) bounds on the profile at eps (max over directions of each)."""
        ups = [p.delta(epsilon) for p, _ in self.directions]
        los = [o.delta(epsilon) for _, o in self.directions]
        return np.max(ups, axis=0), np.max(los, axis=0)

    def epsilon(self, delta: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """(upper, lower) bounds on the smallest eps with profile <= delta."""
        ups = [p.epsilon(delta) for p, _ in self.directions]
        los = [o.epsilon(delta) for _, o in self.directions]
        return np.max(ups, axis=0), np.max(los, axis=0)


def poisson_pairs(mechanism: Mechanism, rate: float, distance: int = 1) -> list[LossPair]:
    """Dominating pairs of one Poisson-subsampled step under add/remove:
    [remove: (q P + (1-q) Q, Q), add: its swap] (Zhu, Dong, Wang 2022, "Optimal accounting
    of differential privacy via characteristic function", AISTATS, dominating pairs of
    Poisson subsampling; rate 1: the base pair and its swap).  ``distance`` is the group
    distance of the base mechanism's pair."""
    rate = float(rate)
    if not 0.0 < rate <= 1.0:
        raise ValueError(f"rate must be in (0, 1], got {rate}")
    base = mechanism.pair(distance)
    if rate == 1.0:
        return [base, SwappedPair(base)]
    mix = MixturePair(base, rate)
    return [mix, SwappedPair(mix)]


# ------------------------------------------------------------------------------------------
# run accountant
# ------------------------------------------------------------------------------------------
def auto_grid(pair: LossPair, T: int, points: float = 1.5e6) -> float:
    """A grid step h for composing ``pair`` T times (see :func:`_auto_grid`)."""
    return _auto_grid(pair, T, points)[0]


def _auto_grid(pair: LossPair, T: int, points: float = 1.5e6) -> tuple[float, float]:
    """A grid step h for composing ``pair`` T times (a heuristic: soundness never depends on
    it, only the width of the certified interval and the cost).

    h = (interquartile range of the single-step loss under P) / 120, but coarse enough that
    the T-fold grid (about 20 sqrt(T) sd(L) + the single-step range, after truncation) has
    at most ``points`` points.  For the remove direction ``(w P + (1-w) Q, Q)`` of
    Poisson-subsampled Gaussian at rates w <= 0.1, h is at most ``_LEAD_STEP`` (the
    connect-the-dots error is second order in h whatever the loss's spread, and the chained
    optimistic discretisation keeps the lower bound within a fraction of a percent at that
    step), and for its add direction ``_SECONDARY_COST`` times coarser (its profile lies far
    below; :class:`PLDAnalysis` composes only its pessimistic side and refines it if it ever
    decides the upper bound).
    """
    atoms = _atoms(pair)
    if atoms is not None and len(atoms[0]):
        # discrete: misplaced atoms cost the optimistic bound first order in h, so use the
        # whole point budget (but at most sd / 2000 is needed)
        l, p, _ = atoms
        tot = max(float(p.sum()), 1e-300)
        mean = float(np.sum(p * l)) / tot
        sd = math.sqrt(max(float(np.sum(p * (l - mean) ** 2)) / tot, 1e-18))
        width = 20.0 * math.sqrt(T) * sd + float(l.max() - l.min())
        return _cap_composed(float(min(max(width / points, sd / 2000.0), 0.05)), width), width
    coarse = _secondary_direction(pair)
    lead = _lead_direction(pair)
    lo_d, hi_d = pair.loss_range(min(1e-16, 1e-13 / T))  # the range discretise() will use
    lo_d, hi_d = max(lo_d, -_MAX_LOSS), min(hi_d, _MAX_LOSS)  # ... clipped as _grid does
    lo, hi = pair.loss_range(1e-12)
    grid = np.linspace(lo, hi, 4001)
    cdf = np.clip(pair.tail(grid, "P", False, False), 0.0, 1.0)
    mid = 0.5 * (grid[1:] + grid[:-1])
    w = np.diff(cdf)
    tot = max(float(w.sum()), 1e-300)
    mean = float(np.sum(w * mid)) / tot
    sd = math.sqrt(max(float(np.sum(w * (mid - mean) ** 2)) / tot, 0.0))
    width = 20.0 * math.sqrt(T) * sd + (hi_d - lo_d)
    if lead or coarse:
        base = pair.base if coarse else pair
        h = min(_LEAD_STEP, _loss_iqr(base) / _LEAD_IQR_BINS)
        h *= _SECONDARY_COST if coarse else 1.0
        if T >= _TWO_LEVEL_MIN_T:  # the long window is composed on the coarse grid
            points *= _TWO_LEVEL_FACTOR
    else:
        quart = np.interp([0.25, 0.75], cdf, grid)
        iqr = float(quart[1] - quart[0])
        spread = max(iqr if iqr > 0.1 * sd else sd, (hi - lo) / 4000.0, 1e-9)
        h = spread / 120.0
    h = max(h, width / points,
            (hi_d - lo_d) / (_MAX_SINGLE_POINTS / (_SECONDARY_COST if coarse else 1.0)))
    return _cap_composed(float(min(h, 0.05)), width), width


#: at most about this many points in the T-fold composition's window (the 0.05 cap on h
#: gives way for very long runs: T = 1e12 steps of Laplace would otherwise need ~1e9 points)
_MAX_COMPOSED_POINTS = 2e6


def _cap_composed(h: float, width: float) -> float:
    """h, coarsened if the composed window ``width`` would need more than
    ``_MAX_COMPOSED_POINTS`` points (a coarser grid is as sound, only wider)."""
    return float(max(h, width / _MAX_COMPOSED_POINTS))


#: grid step of the leading (remove) direction of small-rate Poisson-subsampled Gaussian:
#: at most _LEAD_STEP, and at most the interquartile range of its loss / _LEAD_IQR_BINS
_LEAD_STEP = 6e-5
_LEAD_IQR_BINS = 15.0
#: at most this many grid points for one step's PLD
_MAX_SINGLE_POINTS = 2e6


def _loss_iqr(pair: LossPair) -> float:
    """Interquartile range of the loss under P (bracket search on the tails)."""
    from ..mechanisms.pairs import _bracket

    def cdf(x: np.ndarray) -> np.ndarray:
        return pair.tail(x, "P", False, False)

    lo, hi = pair.loss_range(1e-12)
    q1 = _bracket(cdf, 0.25, lo, hi, increasing=True, side="hi", rounds=5)
    q3 = _bracket(cdf, 0.75, lo, hi, increasing=True, side="hi", rounds=5)
    return max(q3 - q1, 1e-12)
#: the secondary (add) direction of a Poisson-subsampled pair gets a grid this much coarser
_SECONDARY_COST = 4.0


def _lead_direction(pair: LossPair) -> bool:
    """True for the remove direction ``(w P + (1 - w) Q, Q)`` of Poisson-subsampled Gaussian
    at a small rate ``w <= 0.1``."""
    return (isinstance(pair, MixturePair) and isinstance(pair.base, GaussianPair)
            and pair.w <= 0.1)


def _secondary_direction(pair: LossPair) -> bool:
    """True for the add direction ``(Q, w P + (1 - w) Q)`` of Poisson-subsampled Gaussian at a
    small rate ``w <= 0.1``.  Its profile lies well below the remove direction's for the pairs the
    accountant handles (the run's bounds are maxima over directions), so a coarser grid there
    costs no width of the run's interval, only time saved.  A heuristic: soundness never
    depends on the grid."""
    return isinstance(pair, SwappedPair) and _lead_direction(pair.base)


#: two-level composition: first-level length and coarsening factor, used for T >= _TWO_LEVEL_MIN_T
_TWO_LEVEL_T1 = 1000
_TWO_LEVEL_FACTOR = 8
_TWO_LEVEL_MIN_T = 5000


def _optimistic_factor(w: float) -> int:
    """Coarsening of the optimistic side of the leading direction: the chained optimistic
    discretisation's error shrinks with the spread of the single-step loss (about w), so at
    rates above 1e-3 a grid ``round(sqrt(w / 1e-3))`` times coarser (at most 3) keeps the
    lower bound as close as the finest one at w = 1e-3 (a heuristic; the bound stays
    certified)."""
    return int(min(max(round(math.sqrt(w / 1e-3)), 1), 3))


def _power_or_squaring(p: PLD, T: int, tau: float) -> PLD:
    try:
        return p.self_compose(T, truncation=tau, method="power")
    except PowerMethodUnavailable:
        return p.self_compose(T, truncation=tau)


def compose_two_level(p: PLD, T: int) -> PLD:
    """The T-fold composition of a PLD in two levels: ``T1`` (700..1400, the one leaving the
    smallest remainder r = T mod T1) steps on p's grid, then that PLD coarsened 8 times
    (:meth:`PLD.coarsen`: connect-the-dots of its atoms for a pessimistic PLD, merged atoms
    and chained lowered chords for an optimistic one) and composed ``T // T1`` times, times
    r coarsened single steps.

    Every stage keeps the PLD's kind, so the result bounds the truth the same way.  The
    coarse stage's discretisation error (second order in the step, once per T1 steps) adds
    a fraction to the fine one's (once per step), while its window is 8 times shorter: for
    long runs this is both faster and about as tight as one level on p's grid.  One level
    for T < 5000.
    """
    T = check_int("T", T, minimum=1)
    if T < _TWO_LEVEL_MIN_T:
        return p.self_compose(T)
    tau = _TRUNC_BUDGET / (2.0 * T)
    # first-level length near 1000 leaving the smallest remainder (ties: nearest 1000)
    cands = np.arange(int(0.7 * _TWO_LEVEL_T1), int(1.4 * _TWO_LEVEL_T1) + 1)
    rem = T % cands
    t1 = int(cands[np.lexsort((np.abs(cands - _TWO_LEVEL_T1), rem))[0]])
    t2, r = divmod(T, t1)
    k = _TWO_LEVEL_FACTOR
    coarse = _power_or_squaring(p, t1, tau).coarsen(k)
    # one FFT pair even for few coarse steps (squaring would take log2(t2) pairs)
    out = _power_or_squaring(coarse, t2, tau)
    if r:  # r < t2 steps, each coarsened on its own (r H^2 against T h^2: a small share)
        out = out.compose(p.coarsen(k).self_compose(r, truncation=tau), truncation=tau)
    return out


class PLDAnalysis(RunAnalysis):
    """PLD analysis of a Poisson-subsampled run (add/remove or zero-out, group 1).

    ``h`` overrides the automatic grid step (:func:`auto_grid`; for randomized response the
    step of each direction is adjusted so that its largest loss lies on the grid, which
    removes the first-order rounding of the top atom in the optimistic bound).  The
    composition is computed on the first query and cached.
    """

    def __init__(self, mechanism: Mechanism, rate: float, steps: int, h: float | None = None):
        self.mechanism, self.rate, self.steps = mechanism, float(rate), int(steps)
        self.h = None if h is None else check_positive("h", h)
        self.grid: list[float] = []
        self._pld: TwoSidedPLD | None = None

    @property
    def pld(self) -> TwoSidedPLD:
        if self._pld is None:
            self._pairs = poisson_pairs(self.mechanism, self.rate)
            self._tail = min(1e-16, 1e-13 / self.steps)
            self._rho = min(1e-6, max(1e-10, 1e-4 / self.steps))
            self._partial = []
            dirs = []
            for i, pair in enumerate(self._pairs):
                h, width = (self.h, 0.0) if self.h is not None else _auto_grid(pair,
                                                                               self.steps)
                if isinstance(self.mechanism, (RandomizedResponse, Laplace)):
                    h = _aligned_step(pair, h, width / _MAX_COMPOSED_POINTS)
                self.grid.append(h)
                if self.h is None and _secondary_direction(pair):
                    # pessimistic side only: a lower bound from the other direction is
                    # valid, and this one is refined if it ever decides the upper bound
                    p, _ = discretise(pair, h, self._tail, optimistic=False,
                                      rho_max=self._rho)
                    self._partial.append(i)
                    dirs.append((compose_two_level(p, self.steps), _zero_pld(h)))
                elif self.h is None and _lead_direction(pair):
                    p, o = discretise(pair, h, self._tail, rho_max=self._rho)
                    o = o.coarsen(_optimistic_factor(pair.w))
                    dirs.append((compose_two_level(p, self.steps),
                                 compose_two_level(o, self.steps)))
                else:
                    p, o = discretise(pair, h, self._tail, rho_max=self._rho)
                    _check_slack(p, self.steps)
                    dirs.append((p.self_compose(self.steps), o.self_compose(self.steps)))
            self._pld = TwoSidedPLD(dirs)
        return self._pld

    def _refine_if_deciding(self, x: np.ndarray, which: str) -> None:
        """Compose a coarse, pessimistic-only direction fully (on the finest grid in use) if
        its upper bound exceeds every full direction's at some query point."""
        pld = self.pld
        full = [i for i in range(len(pld.directions)) if i not in self._partial]
        if not self._partial or not full:
            return
        best = np.max([getattr(pld.directions[i][0], which)(x) for i in full], axis=0)
        h = min(self.grid[i] for i in full)
        for i in list(self._partial):
            if np.any(getattr(pld.directions[i][0], which)(x) > best):
                p, o = discretise(self._pairs[i], h, self._tail, rho_max=self._rho)
                pld.directions[i] = (p.self_compose(self.steps), o.self_compose(self.steps))
                self.grid[i] = h
                self._partial.remove(i)

    def _query(self, x: np.ndarray, which: str) -> BoundPair:
        x = np.asarray(x, dtype=float)
        if self.rate == 0.0:
            z = Bound(np.zeros_like(x) if x.ndim else 0.0, "exact", "rate 0: no privacy loss")
            return z, z
        self._refine_if_deciding(x, which)
        up, lo = getattr(self.pld, which)(x)
        _check_finite_upper(self.pld, up, lo, x, which)
        return Bound(_shape(up, x), "upper", PESSIMISTIC_SOURCE), Bound(
            _shape(lo, x), "lower", OPTIMISTIC_SOURCE)

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        return self._query(delta, "epsilon")

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        return self._query(epsilon, "delta")


def _check_slack(p: PLD, T: int) -> None:
    """Refuse (NotApplicable) before composing when the allowances of one step (float-error
    slack, mass at +inf, total mass above 1 from the safety factors), added T times, already
    reach 0.1: every upper bound of the composition would be >= 0.1, at great cost."""
    excess = p.slack + p.inf_mass + max(float(np.sum(p.masses)) - 1.0, 0.0)
    if T * excess >= 0.1:
        raise NotApplicable(
            f"steps={T} is too many for the PLD accountant here: the numerical allowances of "
            f"one step ({excess:.3g}) times the steps reach {T * excess:.3g}, so every upper "
            f"bound would be >= 0.1; steps must be below {0.1 / excess:.3g}")


def _check_finite_upper(pld: TwoSidedPLD, up: np.ndarray, lo: np.ndarray, x: np.ndarray,
                        which: str) -> None:
    """Refuse (NotApplicable) an infinite upper bound on epsilon that the lower bound does not
    certify: the grid's mass at +inf plus its float-error allowance exceed the delta asked
    for, so this grid cannot answer (another accountant may).  An infinite epsilon certified
    by both sides (e.g. randomized response with theta = 1, whose P-mass at +inf exceeds
    delta) is the true answer and is returned."""
    if which != "epsilon":
        return
    bad = np.isposinf(np.asarray(up)) & ~np.isposinf(np.asarray(lo))
    if not np.any(bad):
        return
    floor = max(p.inf_mass + p.slack for p, _ in pld.directions)
    d = float(np.min(np.asarray(x, dtype=float)[np.broadcast_to(bad, np.shape(x))]))
    raise NotApplicable(
        f"the PLD accountant cannot certify a finite epsilon at delta={d:.3g}: its grid's "
        f"mass at infinite loss plus its numerical-error allowance is {floor:.3g}; it "
        f"answers delta >= {floor * (1 + 2 * _QUERY_REL):.3g} (or ask another accountant)")


def pld_analysis(run, h: float | None = None) -> PLDAnalysis:
    """The PLD analysis of a :class:`~privamp.Training` run with an explicit grid step
    ``h`` (``None``: automatic).  ``Training.epsilon(accountant="pld")`` uses h=None."""
    if not _applies(run):
        raise NotApplicable(
            "the PLD accountant handles Poisson-subsampled Gaussian, Laplace and randomized "
            "response runs under add/remove or zero-out with group 1"
        )
    return PLDAnalysis(run.mechanism, run.scheme.rate, run.steps, h)


def _aligned_step(pair: LossPair, h: float, floor: float = 0.0) -> float:
    """For a discrete pair: a step in [max(h/4, floor), h] putting the largest finite loss just
    above a grid point and the other atoms as close to grid points as possible.

    A grid-supported optimistic pair must lose O(Q_atom h) on a half-line for every atom
    strictly inside a bin (and round the top atom down), which composes to a first-order
    error; atoms (nearly) on grid points cost nothing.  Soundness does not depend on this.
    """
    atoms = _atom_list(pair)
    if atoms is None or not len(atoms[0]):
        return h
    l, q = atoms
    top = float(l.max())
    if top <= 0:
        return h
    n0 = math.ceil(top / h)
    ns = np.arange(n0, 4 * n0 + 1)[:20000]
    steps = top / ns * (1.0 - 1e-12)
    steps = steps[steps >= max(h / 4.0, floor)]  # floor: the composed window's point cap
    if not len(steps):  # no aligned step in range (e.g. the top atom lies below h / 4)
        return h
    others = l < top
    if not others.any():
        return float(steps[0])
    frac = np.mod(l[others][None, :] / steps[:, None], 1.0)
    score = np.sum(q[others][None, :] * np.minimum(frac, 1.0 - frac), axis=1)
    return float(steps[int(np.argmin(score))])


def _atoms(pair: LossPair) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(finite losses, P-probabilities, Q-probabilities) of a pair built from DiscretePair
    by mixing and swapping; None for pairs with a continuous part."""
    if isinstance(pair, DiscretePair):
        keep = np.isfinite(pair.losses)
        return pair.losses[keep], pair.p[keep], pair.q[keep]
    if isinstance(pair, SwappedPair):
        base = _atoms(pair.base)
        return None if base is None else (-base[0], base[2], base[1])
    if isinstance(pair, MixturePair):
        base = _atoms(pair.base)
        if base is None:
            return None
        l, p, q = base
        return np.log1p(pair.w * np.expm1(l)), pair.w * p + (1 - pair.w) * q, q
    return None


def _atom_list(pair: LossPair) -> tuple[np.ndarray, np.ndarray] | None:
    """(losses, Q-masses) of the finite atoms of a pair (the atoms of a Laplace pair at
    +-e0 included), for grid alignment; None when unknown."""
    if isinstance(pair, LaplacePair):
        e0 = pair.e0
        return np.array([-e0, e0]), np.array([0.5, 0.5 * math.exp(-e0)])
    if isinstance(pair, SwappedPair):
        base = _atom_list(pair.base)
        if base is None:
            return None
        l, q = base
        # Q of the swap is P of the base: P-mass of an atom = e^l * Q-mass
        return -l, np.exp(l) * q
    if isinstance(pair, MixturePair):
        base = _atom_list(pair.base)
        return None if base is None else (np.log1p(pair.w * np.expm1(base[0])), base[1])
    atoms = _atoms(pair)
    return None if atoms is None else (atoms[0], atoms[2])


def _finite_losses(pair: LossPair) -> np.ndarray:
    atoms = _atoms(pair)
    return np.array([]) if atoms is None else atoms[0]


def _shape(x: np.ndarray, like: np.ndarray) -> float | np.ndarray:
    x = np.asarray(x, dtype=float).reshape(np.shape(like))
    return float(x) if x.ndim == 0 else x


def _applies(run) -> bool:
    mech = run.mechanism
    if not (
        isinstance(run.scheme, Poisson)
        and isinstance(mech, (Gaussian, Laplace, RandomizedResponse))
        and isinstance(run.relation, (AddRemove, ZeroOut))
        and run.relation.group == 1
    ):
        return False
    # the single-step losses must fit the grid's range [-700, 700]
    if isinstance(mech, Gaussian):
        return mech.shift(1) <= 25.0
    if isinstance(mech, Laplace):
        return mech.sensitivity / mech.scale <= 600.0
    return True


@run_accountant(
    "pld",
    applies=_applies,
    description="privacy loss distributions, two-sided (pessimistic connect-the-dots and "
    "optimistic lowered chords), FFT composition",
)
def _build(run) -> PLDAnalysis:
    return PLDAnalysis(run.mechanism, run.scheme.rate, run.steps)
