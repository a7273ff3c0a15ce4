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

import functools
import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import isotonic_regression

from .._validation import check_int
from ..numerics.fft import (
    UNIT_ROUNDOFF,
    convolve_nonneg,
    product_windows,
    self_convolve_power,
)

__all__ = [
    "PLD",
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


#: self_compose(method="auto") uses Fourier-domain powering only for T >= _POWER_MIN_T and
#: PLDs with at least _POWER_MIN_ATOMS atoms, and only while at most _POWER_MAX_KEPT of the
#: Fourier coefficients must be powered
_POWER_MIN_ATOMS = 256


_POWER_MIN_T = 16


_POWER_MAX_KEPT = 1.0 / 32.0


#: ... except for PLDs this long, where squaring's log2(T) transforms of growing arrays cost
#: more than powering every coefficient in long double (sigma 0.1, q 1e-6, T 7253: the
#: optimistic side's 2.3M atoms, 12 s squaring -> 2.7 s)
_POWER_ALL_KEPT_LEN = 1 << 18


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
    def compose(self, other: PLD, truncation: float = 1e-16,
                direct_budget: float | None = None) -> PLD:
        """The PLD of the product pair (P1 x P2, Q1 x Q2).

        Tails of mass <= ``truncation`` (each side) are truncated in the sound direction.
        ``direct_budget``: see :func:`privamp.numerics.fft.convolve_nonneg` (None: its
        default).
        """
        self._check_compatible(other)
        if not 0.0 <= truncation < 1e-3:
            raise ValueError(f"truncation must be in [0, 1e-3), got {truncation}")
        same = other is self
        rnd = "up" if self.kind == "pessimistic" else "down"
        kw = {} if direct_budget is None else {"direct_budget": direct_budget}
        z, err = convolve_nonneg(self.masses, None if same else other.masses, rnd, **kw)
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
                     method: str = "auto", direct_budget: float | None = None) -> PLD:
        """The PLD of the T-fold product.

        ``method="power"``: one FFT pair, the transform raised to the T-th power on a window
        chosen by Chernoff bounds (:func:`privamp.numerics.fft.self_convolve_power`, certified
        l1 error); ``"squaring"``: repeated squaring, O(n log n log T); ``"auto"``: power
        for T >= 16 and PLDs with >= 256 atoms, falling back to squaring when the window is
        too long, too many coefficients must be powered, or a check fails.

        ``truncation`` is the tail mass truncated after each convolution; by default
        ``1e-13 / (2 T)``, so that all truncations together change delta by <= 1e-13 (the
        power method truncates ``T truncation / 2`` on each side, once).
        ``direct_budget``: passed to each squaring step's :meth:`compose`.
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
                                           1.0 if method == "power"
                                           or len(self.masses) >= _POWER_ALL_KEPT_LEN
                                           else _POWER_MAX_KEPT)
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
                result = base if result is None else result.compose(base, tau, direct_budget)
            T >>= 1
            if not T:
                break
            base = base.compose(base, tau, direct_budget)
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
        res = self_convolve_power(self.masses, T, tau, max_kept_fraction=max_kept)
        if res is None:
            return None
        start, z, err, tau_lo, tau_hi = res
        inf_t, grow = _product_allowances([(self, T)])
        return _window_pld(self.h, T * self.offset + start, z, err, tau_lo, tau_hi, inf_t,
                           grow, self.kind)

    @staticmethod
    def running_products(blocks: dict, plan: list, tau: float, want: list[bool] | None = None):
        """The PLDs of the running products ``blocks[plan[0]] x ... x blocks[plan[k-1]]``,
        k = 1 .. len(plan), as a generator (one inverse FFT each:
        :func:`privamp.numerics.fft.product_windows`), or None where that cannot be used
        (then compose one by one).  The blocks share kind and grid; each product is
        certified like :meth:`_power_self_compose` (mass at +inf and slack growth by
        :func:`_product_allowances`, window by :func:`_window_pld`); the first is the first
        block itself.  ``want``: None (no inverse FFT) at each k > 0 where ``want[k]`` is
        false."""
        first = next(iter(blocks.values()))
        for b in blocks.values():
            first._check_compatible(b)
        wins = product_windows({g: b.masses for g, b in blocks.items()}, plan, tau,
                               want=want)
        if wins is None:
            return None

        def gen():
            offset = 0
            counts = dict.fromkeys(blocks, 0)
            sums = {g: float(np.sum(b.masses)) for g, b in blocks.items()}
            for k, (g, win) in enumerate(zip(plan, wins, strict=False)):
                offset += blocks[g].offset
                counts[g] += 1
                if k == 0 or win is None:
                    yield blocks[g] if k == 0 else None
                    continue
                start, z, err, tau_lo, tau_hi = win
                inf_t, grow = _product_allowances(
                    [(blocks[x], c) for x, c in counts.items() if c],
                    [sums[x] for x, c in counts.items() if c])
                out = _window_pld(first.h, offset + start, z, err, tau_lo, tau_hi, inf_t,
                                  grow, first.kind)
                if out is None:
                    raise ArithmeticError("running products: allowance not certified")
                yield out

        return gen()

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
    def _get_tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """R_j = sum_{i>=j} p_i e^{-(l_i - l_j)} and G_j = sum_{i>j} p_i (1 - e^{-(l_i-l_j)})
        (the raw profile at eps = l_j), both sums of nonnegative terms; also G reversed
        (nondecreasing; G is a view of it)."""
        if self._tables is None:
            m = self.masses
            r = _discounted_suffix(m, self.h, self.kind == "pessimistic")
            inc = -math.expm1(-self.h) * r
            g_up = np.zeros_like(m)
            if len(m) > 1:
                g_up[1:] = np.cumsum(inc[:0:-1])
            self._tables = (self.losses, r, g_up[::-1], g_up)
        return self._tables

    def _band_tables(self, j0: int, j1: int) -> tuple:
        """:meth:`_get_tables` on the grid points j0..j1 only (0 < j0 < j1 < n - 1), equal
        there to the full tables up to float error: at j1, R and G are one sum each over
        the masses from j1 up (weights e^{-kh} and 1 - e^{-kh}: nonnegative terms, relative
        error <= n u, within _QUERY_REL); below it, the recursions of the full tables
        (R_j = p_j + e^{-h} R_{j+1}, G_j = G_{j+1} + (1 - e^{-h}) R_{j+1}).  Weights that
        underflow (k h > 700) lose <= e^{-700} per mass, added back when pessimistic.
        An answer read from them is the full tables' if its segment lies inside: G at j1 at
        most the query's level (checked by the caller) and the "inside" flag of
        :meth:`_invert_one` at j0 (the first loss must be > 0 there)."""
        m, h = self.masses, self.h
        up = self.kind == "pessimistic"
        top = m[j1:]
        w, om = _decay_weights(h, len(top))
        # products rounding among subnormals err by <= 2^-1075 each (either way)
        r_top = _underflow(float(np.dot(top, w)), len(top), up)
        g_top = _underflow(float(np.dot(top[1:], om[1:])), len(top), up)
        cut = 700.0 / h  # weights zeroed beyond: each such term <= its mass e^{-700}
        if up and len(top) > cut:
            r_top += float(np.sum(top[int(math.floor(cut)):])) * math.exp(-700.0)
        seg = np.concatenate((m[j0:j1], [r_top]))
        if len(seg) * h <= 30.0:  # one block of _discounted_suffix, on the cached weights
            ws = w[: len(seg)] if len(seg) <= len(w) else _decay_weights(h, len(seg))[0]
            r = _underflow(np.cumsum((seg * ws)[::-1])[::-1] / ws, len(seg) * math.exp(30.0),
                           up)
        else:
            r = _discounted_suffix(seg, h, up)
        inc = -math.expm1(-h) * r
        g_up = np.empty(len(seg) + 1)
        g_up[0] = g_top
        g_up[1:] = inc[::-1]
        g_up = np.cumsum(g_up)[:-1]
        losses = (self.offset + np.arange(j0, j1 + 1)) * h
        return losses, r, g_up[::-1], g_up

    def _raw_delta(self, eps: np.ndarray) -> np.ndarray:
        """sum_{l_j > eps} p_j (1 - e^{eps - l_j}) + inf_mass (no slack, no rounding)."""
        losses, r, g, _ = self._get_tables()
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

    def epsilon(self, delta: np.ndarray | float, hint: float | None = None) -> np.ndarray:
        """Smallest eps >= 0 with delta(eps) <= delta, for this PLD's bound on the profile
        (pessimistic: an upper bound on the true epsilon, possibly inf; optimistic: a lower
        bound).  Exact inversion of the piecewise-smooth profile, rounded in the safe way.

        ``hint``: a loss probably below every answer (e.g. the previous checkpoint's).  The
        tables are then built on the grid points from there up only (they are suffix sums,
        so equal there to the full ones); if some answer's segment does not lie strictly
        inside that suffix, the full tables are used.  The result depends on it only within
        the float allowances (the same answer to ~1e-14 relative)."""
        d = np.asarray(delta, dtype=float)
        if hint is not None and math.isfinite(hint / self.h):
            j0 = int(math.floor(hint / self.h)) - self.offset
            if d.ndim == 0 and 0 < j0 < len(self.masses) - 1 - _BAND and self.offset + j0 > 0:
                band = self._band_tables(j0, j0 + _BAND)
                one = (self._invert_one(float(d), band)
                       if band[3][0] <= self._target(float(d)) else None)
                if one is not None and one[1]:
                    return np.asarray(one[0])
            if 0 < j0 < len(self.masses) - 1:
                sub = PLD(self.h, self.offset + j0, self.masses[j0:], self.inf_mass,
                          self.kind, self.slack)
                out, inside = sub._invert(d, sub._get_tables())
                if inside:
                    return out
        return self._invert(d, self._get_tables())[0]

    def _target(self, d):
        """The raw-profile level (finite masses only) that answers ``delta = d``: the slack
        and the query allowance _QUERY_REL taken off (pessimistic) or added (optimistic)."""
        if self.kind == "pessimistic":
            return (d - self.slack) / (1 + _QUERY_REL) - self.inf_mass
        return (d + self.slack) / (1 - _QUERY_REL) - self.inf_mass

    def _invert(self, d: np.ndarray, tables: tuple) -> tuple[np.ndarray, bool]:
        """:meth:`epsilon` from the tables; also whether every answer's segment lies past
        the tables' first point (then tables on any suffix holding them give the same)."""
        if d.ndim == 0:  # one delta (an epsilon curve asks hundreds): the same steps on floats
            one = self._invert_one(float(d), tables)
            if one is not None:
                return np.asarray(one[0]), one[1]
        losses, r, g, g_up = tables
        pess = self.kind == "pessimistic"
        target = np.atleast_1d(self._target(d))
        out = np.empty_like(target)
        raw0 = self._raw_delta(np.zeros_like(target)) - self.inf_mass
        # g is nonincreasing: the first index j with g_j <= target (n - #{g_j <= target})
        n = len(g)
        j = n - np.searchsorted(g_up, target, side="right")
        jj = np.minimum(j, n - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = (target - g[jj]) / r[jj]
            t = -np.log1p(-np.clip(frac, 0.0, 1.0))
        eps = losses[jj] - t
        lower_end = np.where(jj > 0, losses[np.maximum(jj - 1, 0)], -np.inf)
        eps = np.maximum(eps, lower_end)
        finite = np.isfinite(eps)  # -inf: the whole profile is below target (answer 0)
        step = np.where(finite, 1e-12 * np.maximum(1.0, np.abs(np.where(finite, eps, 0.0)))
                        + 4 * _U, 0.0)
        eps = eps + step if pess else eps - step
        eps = np.maximum(eps, 0.0)
        out[:] = eps
        out[raw0 <= target] = 0.0
        out[target < 0] = np.inf
        return out.reshape(d.shape), bool(np.all((j >= 1) | (target < 0)))

    def _invert_one(self, d: float, tables: tuple) -> tuple[float, bool] | None:
        """:meth:`_invert` at one delta, step for step on floats (None: a degenerate case,
        left to the array code)."""
        losses, r, g, g_up = tables
        target = self._target(d)
        if not math.isfinite(target):
            return None
        if target < 0:
            return math.inf, True
        n = len(g)
        j = n - int(np.searchsorted(g_up, target, side="right"))
        i0 = int(np.searchsorted(losses, 0.0, side="right"))  # the raw profile at eps = 0
        raw0 = 0.0 if i0 >= n else float(g[i0]) + (-math.expm1(-float(losses[i0]))) * float(
            r[i0])
        if (raw0 + self.inf_mass) - self.inf_mass <= target:
            return 0.0, j >= 1
        jj = min(j, n - 1)
        rj = float(r[jj])
        if not rj > 0:
            return None
        frac = min(max((target - float(g[jj])) / rj, 0.0), 1.0)
        eps = float(losses[jj]) - (math.inf if frac == 1.0 else -math.log1p(-frac))
        if jj > 0:
            eps = max(eps, float(losses[jj - 1]))
        if math.isfinite(eps):
            step = 1e-12 * max(1.0, abs(eps)) + 4 * _U
            eps = eps + step if self.kind == "pessimistic" else eps - step
        return max(eps, 0.0), j >= 1


def _product_allowances(factors: list[tuple[PLD, int]], mass_sums: list[float] | None = None
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


def _window_pld(h: float, offset: int, z: np.ndarray, err: float, tau_lo: float,
                tau_hi: float, inf_t: float, grow: float, kind: str) -> PLD | None:
    """A composed PLD from a Fourier window (``z = x_window + a + e``, aliased mass a >= 0 of
    total <= tau_lo + tau_hi, sum |e| <= err, tails outside <= tau_lo below and <= tau_hi
    above; :func:`privamp.numerics.fft.self_convolve_power`); profiles are linear in the
    masses with coefficients in [0, 1] that increase with the loss:

    * pessimistic: negatives clipped to 0 (raises the profile), tau_lo added to the
      window's first entry (covers the low tail moved up), tau_hi to the mass at +inf (the
      high tail), ``err`` to slack; aliased mass only raises the profile.
    * optimistic: tails dropped; ``err + tau_lo + tau_hi + clipped negatives`` to slack.

    ``grow``: the factors' slack, grown by the product (:func:`_product_allowances`).
    None if an allowance is not finite or exceeds 1e-3."""
    pess = kind == "pessimistic"
    neg = 0.0 if pess else float(-z[z < 0].sum())
    z = np.maximum(z, 0.0, out=z)  # (z: a fresh window of an inverse transform)
    if pess:
        z[0] += tau_lo
        inf_t += tau_hi
        slack = grow + err
    else:
        slack = grow + err + tau_lo + tau_hi + neg
    slack *= 1.0 + 1e-12
    if not (math.isfinite(slack) and math.isfinite(inf_t)) or slack > 1e-3:
        return None
    return _strip(PLD(h, offset, z, inf_t, kind, slack))


#: a hinted single-delta epsilon first tries tables on this many grid points above the hint
#: (:meth:`PLD._band_tables`): an epsilon curve's answers move little between checkpoints
_BAND = 512


@functools.lru_cache(maxsize=16)
def _decay_table(h: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(n) * h
    w = np.where(k <= 700.0, np.exp(-np.minimum(k, 700.0)), 0.0)
    om = -np.expm1(-k)
    w.flags.writeable = om.flags.writeable = False
    return w, om


def _decay_weights(h: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """e^{-k h} (0 where k h > 700) and 1 - e^{-k h} for k = 0 .. n - 1 (read-only views
    of a cached table of the next power of two)."""
    w, om = _decay_table(h, 1 << max(n - 1, 1).bit_length())
    return w[:n], om[:n]


def _discounted_suffix(m: np.ndarray, h: float, up: bool) -> np.ndarray:
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
    wrev, tailrev, decay = _suffix_weights(B, h)
    mm = np.zeros(nb * B)
    mm[:n] = m
    # the blocks from the top down, each read backwards (contiguous rows): the same products
    # and the same chains of additions as summing each block backwards in place
    inner = np.cumsum(mm[::-1].reshape(nb, B) * wrev, axis=1)
    inner /= wrev
    starts = inner[:, -1]
    carry = np.zeros(nb)
    acc = 0.0
    for b in range(nb):  # r at the start of the block above, chained
        carry[b] = acc
        acc = float(starts[b]) + decay * acc
    inner += carry[:, None] * tailrev
    r = inner.ravel()[::-1][:n]
    return _underflow(r, n * math.exp(30.0), up)


def _underflow(x, count: float, up: bool):
    """x raised (``up``), or lowered and clipped at 0, by ``count`` times 5e-324: products
    rounded among subnormals are each within 2^-1075 of the exact value; ``count`` is their
    number times the largest factor they are then divided by."""
    a = count * 5e-324
    return x + a if up else np.maximum(x - a, 0.0)


def _suffix_weights(B: int, h: float) -> tuple[np.ndarray, np.ndarray, float]:
    """For :func:`_discounted_suffix`: e^{-k h} for k = B - 1 .. 0 and e^{-(B - k) h} for
    k = 0 .. B - 1 read backwards (read-only views of :func:`_decay_weights`; B h <= 30),
    and e^{-B h}."""
    w = _decay_weights(h, B + 1)[0]
    return w[B - 1 :: -1], w[1 : B + 1], math.exp(-B * h)


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
    return 6.0 * ulps * _U * (_tail_side(pm) + a * _tail_side(qm)) + 1e-300


def _tail_side(m: np.ndarray) -> np.ndarray:
    """Per grid point l_k, the stored mass above l_k if that is the smaller tail there, else
    the total plus it: what the 12 u error of the telescoped tails of :func:`_tail_errors` is
    relative to."""
    inner = m[1:-1]
    above = np.cumsum(m[::-1])[::-1][1:]  # stored mass above l_k, k = 0..K
    tot = float(m.sum())
    below = np.concatenate(([m[0]], m[0] + np.cumsum(inner)))  # stored mass <= l_k
    # switch: first k whose mass above is below the mass at or below
    return np.where(above <= below, above, tot + above)


def _split_tail_errors(pm: np.ndarray, qm: np.ndarray, pb: np.ndarray, l: np.ndarray,
                       w: float, acc: np.ndarray) -> np.ndarray:
    """Bounds E_k on the float error of the grid pair's profile at a_k = e^{l_k} for the
    mixture (w P + (1 - w) Q, Q) whose cell masses are ``qm`` (base Q on the preimage
    cells), ``pb`` (base P) and ``pm = fl((1 - w) qm + w pb)``
    (:meth:`privamp.pairs.combinators.MixturePair.split_bin_masses`).

    ``acc``: per edge, the relative accuracy of the base tails there.  Telescoped from the
    stored masses (each the rounded difference of the smaller tails), the tails of qm and
    pb above l_k err by eta^Q_k, eta^P_k <= (2 acc_k + u) :func:`_tail_side` at l_k plus
    acc_K times the top cell's mass (the other end of the telescope; below the switch the
    lower tails' ends, within the total); with ``acc = 4 u`` this is the 12 u of
    :func:`_tail_errors`.  The combination rounds each P-mass by a relative 3.01 u.  So the
    profile errs by at most ``|a_k - 1 + w| |eta^Q_k| + w |eta^P_k| + 3.01 u (stored P-mass
    above l_k)``, taken twice (safety factor 2; c_k >= |a_k - 1 + w| with expm1's error)."""
    em = np.expm1(l)
    c = np.abs(em + w) * (1.0 + 4.0 * _U) + 4.0 * _U * np.abs(em)
    above = np.cumsum(pm[::-1])[::-1][1:] * (1.0 + 2.0 * len(pm) * _U)
    r = 3.0 * np.maximum(acc, 4.0 * _U) + _U  # >= 2 acc + u, and 12 u at acc = 4 u
    top_q, top_p = float(acc[-1]) * qm[-1], float(acc[-1]) * pb[-1]
    eta = r * (c * _tail_side(qm) + w * _tail_side(pb)) + c * top_q + w * top_p
    return 2.0 * eta + 8.0 * _U * above + 1e-300


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


def _bin_split(pb: np.ndarray, qb: np.ndarray, a: np.ndarray, h: float | np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """(Delta_i = a_{i+1} - a_i, e_i = the Q-mass of bin i sent to its upper end) for bins
    (l_i, l_{i+1}] of P- and Q-masses pb, qb on the grid a_i = e^{l_i} of step h (or of
    steps h_i = l_{i+1} - l_i): the connect-the-dots split keeping each bin's P- and
    Q-mass."""
    em1 = np.expm1(h)
    return a[:-1] * em1, np.clip((pb / a[:-1] - qb) / em1, 0.0, qb)


def _with_float_allowance(h: float, offset: int, masses: np.ndarray, inf_mass: float,
                          kind: str, errs: np.ndarray, rho_max: float = 1e-10,
                          slack: float = 0.0, at: np.ndarray | None = None) -> PLD:
    """The grid PLD of ``kind`` with its masses (and inf_mass) scaled by 1 +- (relative
    safety + rho) and ``s`` added to ``slack``, (rho, s) covering the float errors ``errs``
    at the grid points (:func:`_relative_split` of its own profile there).  ``at``: the
    indices of the grid points ``errs`` belong to, if not all (the masses vanish between
    them, so the profile and its error are linear there)."""
    if at is None:
        vertex = PLD(h, offset, masses, inf_mass, kind)._get_tables()[2] + inf_mass
    else:
        vertex = _profile_at(masses[at], at * h) + inf_mass
    rho, s = _relative_split(vertex, errs, rho_max)
    fac = 1.0 + (_REL_SAFETY + rho) * (1.0 if kind == "pessimistic" else -1.0)
    return PLD(h, offset, masses * fac, inf_mass * fac, kind, slack + s)


def _profile_at(m: np.ndarray, l: np.ndarray) -> np.ndarray:
    """G_j = sum_{i > j} m_i (1 - e^{-(l_i - l_j)}) for masses m >= 0 at increasing losses l
    (any spacing): the raw profile at eps = l_j, as in :meth:`PLD._get_tables`, from sums of
    nonnegative terms only: r_k = sum_{i >= k} m_i e^{-(l_i - l_k)} in blocks spanning at
    most 30 in loss (one reversed cumsum each, chained), then
    G_j = sum_{k > j} (1 - e^{-(l_k - l_{k-1})}) r_k.  (Underflowing terms are dropped:
    the result may be low by ~1e-300, covered with the rest by :func:`_relative_split`.)"""
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
        inner = np.cumsum((m[seg] * np.exp(-d))[::-1])[::-1] * np.exp(d)
        if end < n:
            inner += carry * np.exp(-(l[end] - l[seg]))
        r[seg] = inner
        carry, end = float(r[b]), b
    inc = -np.expm1(-np.diff(l)) * r[1:]
    g = np.zeros(n)
    g[:-1] = np.cumsum(inc[::-1])[::-1]
    return g


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
    """p without its zero masses at either end (p itself if there are none)."""
    m = p.masses
    if len(m) and m[0] > 0 and m[-1] > 0:
        return p
    pos = np.flatnonzero(m > 0)
    if not len(pos):
        return PLD(p.h, p.offset, np.zeros(1), p.inf_mass, p.kind, p.slack)
    i0, i1 = int(pos[0]), int(pos[-1]) + 1
    return PLD(p.h, p.offset + i0, p.masses[i0:i1].copy(), p.inf_mass, p.kind, p.slack)

