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
  grid point is bounded (:func:`privamp.pld.binning.tail_errors`) and covered by a
  relative part (masses scaled by 1 +- rho) where the profile is large against it and an
  additive part (``slack``) elsewhere (:func:`privamp.pld.binning.relative_split`) -- a
  relative error costs a T-fold composition T rho times delta, an additive one T s;
  direct-sum convolutions are corrected by their
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

from .._validation import check_int
from ..errors import NotApplicable
from ..numerics.fft import (
    UNIT_ROUNDOFF,
    convolve_nonneg,
    product_windows,
    self_convolve_power,
)
from ..numerics.threads import limit_blas
from .binning import bin_split, optimistic_masses, relative_split, tail_errors
from .budget import MEMORY_BUDGET, POWER_MAX_LEN, QUERY_REL, REL_SAFETY, TRUNC_BUDGET
from .coarse_bins import bin_sums
from .profile_scan import TableScan, gather, invert_many, invert_one
from .tables import GridLosses, band_tables, discounted_suffix, product_allowances, profile_at
from .tail_cut import tail_cut

__all__ = [
    "PLD",
    "PowerMethodUnavailable",
]


_U = UNIT_ROUNDOFF


#: peak bytes per output point of :meth:`PLD.compose` (the FFT's padded input, spectrum and
#: output, the split bulk and tails), rounded up
COMPOSE_POINT_BYTES = 64


_U_LD = float(np.finfo(np.longdouble).eps) / 2.0


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
    _tables: TableScan | None = field(default=None, repr=False, compare=False)

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
    @limit_blas
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
        n = len(self.masses) + len(other.masses)
        if n * COMPOSE_POINT_BYTES > MEMORY_BUDGET:  # refused before allocating
            raise NotApplicable(
                f"composing PLDs of {len(self.masses)} and {len(other.masses)} grid points "
                f"(step h={self.h:.3g}) would take about {n * COMPOSE_POINT_BYTES / 2**20:.0f}"
                f" MiB, above the memory budget of {MEMORY_BUDGET / 2**20:.0f} MiB; use a "
                f"coarser h")
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
        return truncated(self.h, self.offset + other.offset, z, inf_mass, self.kind, slack,
                          max(truncation, err))

    @limit_blas
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
        tau = TRUNC_BUDGET / (2.0 * T) if truncation is None else float(truncation)
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
        res = self_convolve_power(self.masses, T, tau, max_len=POWER_MAX_LEN,
                                  max_kept_fraction=max_kept)
        if res is None:
            return None
        start, z, err, tau_lo, tau_hi = res
        inf_t, grow = product_allowances([(self, T)])
        return window_pld(self.h, T * self.offset + start, z, err, tau_lo, tau_hi, inf_t,
                           grow, self.kind)

    @staticmethod
    def running_products(blocks: dict, plan: list, tau: float, want: list[bool] | None = None):
        """The PLDs of the running products ``blocks[plan[0]] x ... x blocks[plan[k-1]]``,
        k = 1 .. len(plan), as a generator (one inverse FFT each:
        :func:`privamp.numerics.fft.product_windows`), or None where that cannot be used
        (then compose one by one).  The blocks share kind and grid; each product is
        certified like :meth:`_power_self_compose` (mass at +inf and slack growth by
        :func:`product_allowances`, window by :func:`window_pld`); the first is the first
        block itself.  ``want``: None (no inverse FFT) at each k > 0 where ``want[k]`` is
        false."""
        first = next(iter(blocks.values()))
        for b in blocks.values():
            first._check_compatible(b)
        wins = product_windows({g: b.masses for g, b in blocks.items()}, plan, tau,
                               max_len=POWER_MAX_LEN, want=want)
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
                inf_t, grow = product_allowances(
                    [(blocks[x], c) for x, c in counts.items() if c],
                    [sums[x] for x, c in counts.items() if c])
                out = window_pld(first.h, offset + start, z, err, tau_lo, tau_hi, inf_t,
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
        buf: np.ndarray = np.zeros(n_bins * k)
        buf[shift : shift + len(self.masses)] = self.masses
        buf = buf.reshape(n_bins, k)
        r = np.arange(k)
        f = np.expm1(-r * self.h) / math.expm1(-k * self.h)
        out = np.zeros(n_bins + 1)
        out[1:] += buf @ f
        out[:-1] += buf @ (1.0 - f)
        out *= 1.0 + 4.0 * (k + 8) * _U
        return strip(PLD(k * self.h, first, out, self.inf_mass, self.kind, self.slack))

    def _coarsen_optimistic(self, k: int) -> PLD:
        h, n = self.h, len(self.masses)
        idx = self.offset + np.arange(n)
        # bin (J k h, (J + 1) k h] holds index J k + 1 .. (J + 1) k; one empty bin below (j0)
        # keeps the total P-mass (see discretise)
        with np.errstate(under="ignore"):
            j0, (pb, qb) = bin_sums(self.offset, k, [self.masses,
                                                     self.masses * np.exp(-idx * h)])
        nbins = len(pb)
        H = k * h
        l = (j0 + np.arange(nbins + 1)) * H
        qgt = np.zeros(nbins + 1)
        # suffix sums in long double: relative error <= nbins u_ld, a few double ulp
        qgt[:-1] = np.cumsum(qb[::-1].astype(np.longdouble))[::-1]
        # losses past ~709 overflow e^l: the construction then yields non-finite masses,
        # replaced by the zero PLD (every pair dominates it, so it is a valid optimistic side)
        with np.errstate(over="ignore", invalid="ignore"):
            a = np.exp(l)
            dlt, e = bin_split(pb, qb, a, H)
            # Q(L >= l_i) is only used as a lower bound on the slope's size (the tangent
            # lines of the construction must stay below D), so Q(L > l_i) <= Q(L >= l_i)
            o = optimistic_masses(l, a, dlt, qb, e, qgt, lambda i: qgt[i])
        if not np.all(np.isfinite(o)):
            return strip(PLD(H, j0, np.zeros_like(o), self.inf_mass, "optimistic", 0.0))
        pm = np.concatenate(([0.0], pb, [0.0]))
        qm = np.concatenate(([0.0], qb, [0.0]))
        ulps = 4.0 + k + 2.0 * nbins * _U_LD / _U  # bincount sums, long-double suffix sums
        errs = tail_errors(pm, qm, a, ulps=ulps)
        return strip(with_float_allowance(H, j0, o, self.inf_mass, "optimistic", 2.0 * errs,
                                            slack=self.slack))

    # -- queries ----------------------------------------------------------------------------
    def _get_tables(self) -> tuple:
        """R_j = sum_{i>=j} p_i e^{-(l_i - l_j)} and G_j = sum_{i>j} p_i (1 - e^{-(l_i-l_j)})
        (the raw profile at eps = l_j), both sums of nonnegative terms; also G reversed
        (nondecreasing; G is a view of it).  Built on each call and not kept (issue 28: the
        queries read a few entries through :class:`privamp.pld.profile_scan.TableScan`)."""
        m = self.masses
        r = discounted_suffix(m, self.h, self.kind == "pessimistic")
        inc = -math.expm1(-self.h) * r
        g_up = np.zeros_like(m)
        if len(m) > 1:
            np.cumsum(inc[:0:-1], out=g_up[1:])  # (no temporary: issue 28)
        return GridLosses(self.offset, self.h, len(m)), r, g_up[::-1], g_up

    def _scan(self) -> TableScan:
        """The PLD's :class:`TableScan` (kept: a few floats per chunk of the grid)."""
        if not (isinstance(self._tables, TableScan) and self._tables.m is self.masses):
            self._tables = TableScan(self.masses, self.h, self.kind == "pessimistic")
        return self._tables

    def _raw_delta(self, eps: np.ndarray, tables: tuple | None = None) -> np.ndarray:
        """sum_{l_j > eps} p_j (1 - e^{eps - l_j}) + inf_mass (no slack, no rounding)."""
        n = len(self.masses)
        losses = GridLosses(self.offset, self.h, n) if tables is None else tables[0]
        j = np.searchsorted(losses, eps, side="right")
        inside = j < n
        jj = np.minimum(j, n - 1)
        if tables is not None:
            gj, rj = tables[2][jj], tables[1][jj]
        else:
            gj, rj = gather(self._scan().values(np.atleast_1d(jj)[np.atleast_1d(inside)])[0],
                            jj, inside)
        t = np.where(inside, losses[jj] - eps, 0.0)  # > 0 inside; 0 elsewhere (unused)
        val = gj + (-np.expm1(-t)) * rj
        return np.where(inside, val, 0.0) + self.inf_mass

    def delta(self, epsilon: np.ndarray | float) -> np.ndarray:
        """Bound of this PLD's kind on the true profile delta(eps) (eps real)."""
        eps = np.asarray(epsilon, dtype=float)
        raw = self._raw_delta(eps) if len(self.masses) else eps * 0.0 + self.inf_mass
        if self.kind == "pessimistic":
            return np.minimum(raw * (1 + QUERY_REL) + self.slack, 1.0)
        return np.maximum(raw * (1 - QUERY_REL) - self.slack, 0.0)

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
                band = band_tables(self.masses, self.h, self.offset,
                                   self.kind == "pessimistic", j0, j0 + _BAND)
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
        if d.ndim == 0 and len(self.masses):  # no tables: a scan for the entries it reads
            one = self._invert_one(float(d), None)
            if one is not None:
                return np.asarray(one[0])
        return self._invert(d, self._get_tables())[0]

    def _target(self, d):
        """The raw-profile level (finite masses only) that answers ``delta = d``: the slack
        and the query allowance QUERY_REL taken off (pessimistic) or added (optimistic)."""
        if self.kind == "pessimistic":
            return (d - self.slack) / (1 + QUERY_REL) - self.inf_mass
        return (d + self.slack) / (1 - QUERY_REL) - self.inf_mass

    def _invert(self, d: np.ndarray, tables: tuple) -> tuple[np.ndarray, bool]:
        """:meth:`epsilon` from the tables; also whether every answer's segment lies past
        the tables' first point (then tables on any suffix holding them give the same)."""
        if d.ndim == 0:  # one delta (an epsilon curve asks hundreds): the same steps on floats
            one = self._invert_one(float(d), tables)
            if one is not None:
                return np.asarray(one[0]), one[1]
        target = np.atleast_1d(self._target(d))
        raw0 = self._raw_delta(np.zeros_like(target), tables) - self.inf_mass
        out, inside = invert_many(target, raw0, self.kind == "pessimistic", tables)
        return out.reshape(d.shape), inside

    def _invert_one(self, d: float, tables: tuple | None) -> tuple[float, bool] | None:
        """:meth:`_invert` at one delta, step for step on floats (None: a degenerate case,
        left to the array code); ``tables`` None: the entries it reads from a scan."""
        target = self._target(d)
        if not math.isfinite(target):
            return None
        if target < 0:
            return math.inf, True
        pess = self.kind == "pessimistic"
        if tables is None:
            scan = self._scan()
            key = (target, self.inf_mass)
            if key not in scan.answers:
                losses = GridLosses(self.offset, self.h, len(self.masses))
                i0 = int(np.searchsorted(losses, 0.0, side="right"))
                want = np.array([i0] if i0 < len(losses) else [], dtype=np.intp)
                got, j = scan.values(want, target)
                scan.answers[key] = invert_one(target, self.inf_mass, pess, losses, j,
                                               got.__getitem__)
            return scan.answers[key]
        losses, r, g, g_up = tables
        j = len(g) - int(np.searchsorted(g_up, target, side="right"))
        return invert_one(target, self.inf_mass, pess, losses, j,
                          lambda i: (float(g[i]), float(r[i])))


def window_pld(h: float, offset: int, z: np.ndarray, err: float, tau_lo: float,
                tau_hi: float, inf_t: float, grow: float, kind: str) -> PLD | None:
    """A composed PLD from a Fourier window (``z = x_window + a + e``, aliased mass a >= 0 of
    total <= tau_lo + tau_hi, sum |e| <= err, tails outside <= tau_lo below and <= tau_hi
    above; :func:`privamp.numerics.fft.self_convolve_power`); profiles are linear in the
    masses with coefficients in [0, 1] that increase with the loss:

    * pessimistic: negatives clipped to 0 (raises the profile), tau_lo added to the
      window's first entry (covers the low tail moved up), tau_hi to the mass at +inf (the
      high tail), ``err`` to slack; aliased mass only raises the profile.
    * optimistic: tails dropped; ``err + tau_lo + tau_hi + clipped negatives`` to slack.

    ``grow``: the factors' slack, grown by the product (:func:`product_allowances`).
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
    return strip(PLD(h, offset, z, inf_t, kind, slack))


#: a hinted single-delta epsilon first tries tables on this many grid points above the hint
#: (:func:`privamp.pld.tables.band_tables`): an epsilon curve's answers move little
#: between checkpoints
_BAND = 512


def truncated(h: float, offset: int, z: np.ndarray, inf_mass: float, kind: str,
               slack: float, tau: float) -> PLD:
    """Truncate tails of mass <= tau: pessimistic moves the low tail up to the first kept
    index and the high tail to +inf; optimistic drops both (dropping P-mass lowers D)."""
    n = len(z)
    nonneg = bool(z.min() >= 0.0) if n else True  # (one pass for both ends: session 12)
    i0, low = tail_cut(z, tau, nonneg)  # (the prefix sums' cut, summing only the tail)
    k, high = tail_cut(z[::-1], tau, nonneg)
    i1 = n - k  # keep [i0, i1)
    if i1 <= i0:  # nothing above the threshold: keep the largest entry's neighbourhood
        i0 = int(np.argmax(z))
        i1 = i0 + 1
        low = float(z[:i0].sum())
        high = float(z[i1:].sum())
    kept = z[i0:i1].copy()
    if kind == "pessimistic":
        kept[0] += low
        inf_mass = inf_mass + high
    return PLD(h, offset + i0, kept, inf_mass, kind, slack)


def with_float_allowance(h: float, offset: int, masses: np.ndarray, inf_mass: float,
                          kind: str, errs: np.ndarray, rho_max: float = 1e-10,
                          slack: float = 0.0, at: np.ndarray | None = None) -> PLD:
    """The grid PLD of ``kind`` with its masses (and inf_mass) scaled by 1 +- (relative
    safety + rho) and ``s`` added to ``slack``, (rho, s) covering the float errors ``errs``
    at the grid points (:func:`relative_split` of its own profile there).  ``at``: the
    indices of the grid points ``errs`` belong to, if not all (the masses vanish between
    them, so the profile and its error are linear there)."""
    if at is None:
        vertex = PLD(h, offset, masses, inf_mass, kind)._get_tables()[2] + inf_mass
    else:
        vertex = profile_at(masses[at], at * h) + inf_mass
    rho, s = relative_split(vertex, errs, rho_max)
    fac = 1.0 + (REL_SAFETY + rho) * (1.0 if kind == "pessimistic" else -1.0)
    return PLD(h, offset, masses * fac, inf_mass * fac, kind, slack + s)


def zero_pld(h: float) -> PLD:
    """The optimistic PLD of the trivial lower bound (profile 0)."""
    return PLD(h, 0, np.zeros(1), 0.0, "optimistic")


def strip(p: PLD) -> PLD:
    """p without its zero masses at either end (p itself if there are none)."""
    m = p.masses
    if len(m) and m[0] > 0 and m[-1] > 0:
        return p
    pos = np.flatnonzero(m > 0)
    if not len(pos):
        return PLD(p.h, p.offset, np.zeros(1), p.inf_mass, p.kind, p.slack)
    i0, i1 = int(pos[0]), int(pos[-1]) + 1
    return PLD(p.h, p.offset + i0, p.masses[i0:i1].copy(), p.inf_mass, p.kind, p.slack)



