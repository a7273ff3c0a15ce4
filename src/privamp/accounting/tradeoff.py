"""Certified trade-off curves (f-DP), TPR at FPR and Gaussian-DP mu of a run or history.

The f-DP view (Dong, Roth, Su 2022, "Gaussian differential privacy", arXiv:1905.02383):
``T(A, B)(alpha)`` is the least type-II error ``beta`` of a test between the output laws A
(null) and B with type-I error <= alpha; an attack's true-positive rate at false-positive rate
alpha is at most ``1 - T(alpha)``.

From the run's two-sided PLD (``pld`` capability: directions ``[remove, add]``, each a
(pessimistic, optimistic) pair; remove: P = M(D), Q = M(D') with D' = D minus one record, add:
the same pair in the other order), with :mod:`privamp.pld.tradeoff`:

* ``remove``: the curve of the membership test T(M(D'), M(D)) (type I on the world without
  the record).  Lower envelope: ``max(f_remove, f_add^{-1})`` (the affine constraints of the
  remove profile, and of the add profile in inverse form: Prop. 2.12 and 2.4), both from
  pessimistic profiles at eps >= 0: a guarantee for every pair of neighbours in this order.
  Upper envelope: ``min(u_remove, u_add^{-1})`` from the optimistic sides (pairs of
  neighbours that realise them): what the best attack provably achieves on some pair.
* ``add``: the other order, symmetrically.
* ``either``: pointwise min of both orders (lower and upper): the bound for every pair in any
  order, and an attack on some pair in some order.
* ``symmetric``: the f-DP function of the run under its symmetric relation: the convex hull
  of ``min(f, f^{-1})`` (Dong et al. 2022, Prop. 2.5; the subsampling symmetrisation
  ``C(min(f_p, f_p^{-1}))``), computed soundly from a grid: ``either`` is nonincreasing, so
  the step function through ``(a_i, either(a_{i+1}))`` lies below it, and its lower convex
  hull (exact, from its corner points) below both.

Without a PLD, the lower envelope comes from the run's upper bounds on delta(eps) at a grid of
eps (any finite set of (eps, delta) constraints is a valid f-DP bound; weaker, labelled), the
upper envelope is the trivial ``1 - alpha``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr

from ..errors import NotApplicable
from ..pld.tradeoff import beta_upper, inverse_beta_upper, lower_lines
from ..pld.two_sided import TwoSidedPLD
from ..results import Bound, Guarantee

__all__ = [
    "GdpBound",
    "Tradeoff",
    "TradeoffCurve",
    "gaussian_beta",
    "gdp_mu",
    "pld_sources",
    "tpr_at_fpr",
    "tradeoff",
]


#: the internal alpha grid of the symmetric hull and of the plots: log-spaced near 0
_GRID = np.unique(np.concatenate((
    [0.0, 1.0], np.logspace(-12, 0, 1201), np.linspace(0.0, 1.0, 801))))


#: eps points of the (eps, delta) fallback (each is a delta query of the run), and of the
#: GDP check without a PLD
_PROFILE_POINTS = 48
_PROFILE_GDP_POINTS = 256


DUALITY = ("f-DP duality beta(alpha) = sup_eps [1 - delta(eps) - e^eps alpha] "
           "(Dong, Roth, Su 2022, Prop. 2.12)")


@dataclass(frozen=True)
class TradeoffCurve:
    """Bounds on the trade-off curve beta(alpha) of one order of the neighbours.

    ``lower``: a certified lower bound on beta at each alpha (the guarantee); ``upper``: an
    upper bound on beta achieved by an attack on some realised pair (``1 - alpha`` when none
    is known).  ``name``: "remove", "add", "either" or "symmetric".
    """

    name: str
    alphas: np.ndarray
    lower: Bound
    upper: Bound

    def tpr(self) -> Guarantee:
        """True-positive rate ``1 - beta`` at each alpha (false-positive rate): the upper
        bound from the lower envelope, the lower bound from the upper envelope."""
        lo = np.asarray(self.lower.value, dtype=float)
        up = np.asarray(self.upper.value, dtype=float)
        return Guarantee(Bound(1.0 - lo, "upper", self.lower.source + "; TPR = 1 - beta"),
                         Bound(1.0 - up, "lower", self.upper.source + "; TPR = 1 - beta"))


@dataclass(frozen=True)
class Tradeoff:
    """Certified trade-off curves of a run at ``alphas``: both orders of the neighbours, their
    pointwise worst case ``either`` and the symmetrised f-DP function ``symmetric``."""

    alphas: np.ndarray
    remove: TradeoffCurve
    add: TradeoffCurve
    either: TradeoffCurve
    symmetric: TradeoffCurve

    @property
    def lower(self) -> Bound:
        """Lower envelope on beta for every pair of neighbours in either order."""
        return self.either.lower

    @property
    def upper(self) -> Bound:
        """Upper envelope on beta: achieved by an attack on some pair of neighbours."""
        return self.either.upper

    def tpr(self) -> Guarantee:
        """TPR at FPR = alphas, for any pair in any order (:meth:`TradeoffCurve.tpr`)."""
        return self.either.tpr()


@dataclass(frozen=True)
class GdpBound:
    """Gaussian DP of a run: ``upper`` a certified mu (T >= G_mu - tolerance at every alpha);
    ``estimate``: the central-limit estimate where one is known (NOT a bound), else None."""

    upper: Bound
    tolerance: float
    estimate: float | None = None
    estimate_source: str = ""


def gaussian_beta(mu: float, alphas: np.ndarray) -> np.ndarray:
    """The Gaussian trade-off curve G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu).

    Args:
        mu: >= 0.
        alphas: values in [0, 1].

    Returns:
        Array of G_mu at ``alphas``.
    """
    from scipy.stats import norm

    return norm.cdf(norm.isf(np.asarray(alphas, dtype=float)) - mu)


def _check_alphas(alphas: Any, name: str = "alphas") -> np.ndarray:
    a = np.asarray(alphas, dtype=float)
    if a.size == 0 or not np.all(np.isfinite(a)) or np.any((a < 0) | (a > 1)):
        raise ValueError(f"{name} must be a nonempty array of values in [0, 1], got {alphas!r}")
    return a


def pld_sources(run: Any) -> list[tuple[str, TwoSidedPLD]]:
    """The whole-run two-sided PLDs of a Training (every analysis offering ``pld``) or a
    Composition (its phases composed as PLDs), labelled with their accountants; empty when
    there is none.

    Args:
        run: a privamp Training or Composition.

    Returns:
        List of (source, TwoSidedPLD).
    """
    out = []
    if hasattr(run, "offering"):
        for acc, an in run.offering("pld"):
            try:
                out.append((acc.description or acc.name, an.pld()))
            except NotApplicable:
                continue
    else:
        try:
            out.append(("phases composed as PLDs on one grid", run.pld_analysis().pld()))
        except NotApplicable:
            pass
    return out


def _orders(pld: TwoSidedPLD, grid: np.ndarray) -> dict[str, tuple[np.ndarray, ...]]:
    """Per order ("remove", "add") on ``grid``: lower and upper bounds on beta, and the
    intercepts and slopes of the certified lines giving the lower bounds."""
    dirs = pld.directions
    if len(dirs) > 2:
        raise ValueError("a TwoSidedPLD for a trade-off curve has one or two directions")
    (pr, orr), (pa_, oa) = dirs[0], dirs[-1]  # one direction: a symmetric pair, both orders
    out: dict[str, tuple[np.ndarray, ...]] = {}
    for name, (p1, o1), (p2, o2) in (("remove", (pr, orr), (pa_, oa)),
                                     ("add", (pa_, oa), (pr, orr))):
        c1, s1 = lower_lines(p1, grid)
        c2, s2 = lower_lines(p2, grid, inverse=True)
        first = c1 + s1 * grid >= c2 + s2 * grid
        c, s = np.where(first, c1, c2), np.where(first, s1, s2)
        lo = np.minimum(np.clip(c + s * grid, 0.0, None), 1.0 - grid)
        up = np.minimum(beta_upper(o1, grid), inverse_beta_upper(o2, grid))
        out[name] = (lo, np.maximum(up, lo), c, s)
    return out


def _lower_hull(xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertices of the lower convex hull of the points (xs sorted increasing)."""
    hull: list[int] = []
    x, y = xs.tolist(), ys.tolist()  # (Python floats: far faster than numpy scalars here)
    for i in range(len(x)):
        while len(hull) >= 2:
            i0, i1 = hull[-2], hull[-1]
            if (x[i1] - x[i0]) * (y[i] - y[i0]) - (y[i1] - y[i0]) * (x[i] - x[i0]) <= 0:
                hull.pop()
            else:
                break
        hull.append(i)
    return xs[hull], ys[hull]


def _hull(grid: np.ndarray, lines: dict[str, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The convex hull of ``min(g_remove, g_add)`` on ``grid``, soundly: each order's curve is
    at least the max of the certified lines found at the two ends of each grid interval, so
    on that interval min over orders of those maxes (piecewise linear, its breakpoints among
    the lines' pairwise intersections) lies below the true min; the lower convex hull of its
    vertices lies below it everywhere, and is convex."""
    cr, sr = lines["remove"]
    ca, sa = lines["add"]
    C = np.stack([cr[:-1], cr[1:], ca[:-1], ca[1:]], axis=1)
    S = np.stack([sr[:-1], sr[1:], sa[:-1], sa[1:]], axis=1)
    lo, hi = grid[:-1, None], grid[1:, None]
    xs = [lo, hi]
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(4):
            for j in range(i + 1, 4):
                x = (C[:, j] - C[:, i]) / (S[:, i] - S[:, j])
                xs.append(np.where(np.isfinite(x), x, lo[:, 0])[:, None])
    X = np.clip(np.concatenate(xs, axis=1), lo, hi)
    V = C[:, :, None] + S[:, :, None] * X[:, None, :]  # (intervals, lines, points)
    m = np.minimum(np.maximum(V[:, 0], V[:, 1]), np.maximum(V[:, 2], V[:, 3]))
    order = np.argsort(X, axis=1)
    X = np.take_along_axis(X, order, axis=1).ravel()
    m = np.take_along_axis(m, order, axis=1).ravel()
    hx, hy = _lower_hull(X, m)
    h = np.interp(grid, hx, hy)
    return np.clip(h - 1e-15 * (1 + np.abs(h)), 0.0, 1.0 - grid)


def _profile_lower(run: Any, grid: np.ndarray) -> tuple[np.ndarray, str]:
    """Lower envelope from the run's upper bounds on delta at a grid of eps (both orders)."""
    # one vectorised delta query (an epsilon query first would cost a root search)
    eps = np.concatenate(([0.0], np.geomspace(1e-3, 64.0, _PROFILE_POINTS - 1)))
    g = run.delta(eps)
    if g.upper is None:
        raise NotApplicable("no upper bound on the run's delta(eps) to build a curve from")
    d = np.asarray(g.upper.value, dtype=float)[None, :]
    e = eps[None, :]
    a = grid[:, None]
    lines = np.maximum(1.0 - d - np.exp(e) * a, np.exp(-e) * (1.0 - d - a)).max(axis=1)
    lo = np.clip(lines - 1e-14, 0.0, 1.0 - grid)
    return lo, (f"(epsilon, delta) profile bounds at {_PROFILE_POINTS} eps (weaker); {DUALITY}; "
                f"from: {g.upper.source}")


def tradeoff(run: Any, alphas: Any) -> Tradeoff:
    """Certified trade-off curves of ``run`` at the type-I errors ``alphas`` (module
    docstring): from every two-sided PLD the run's accountants offer (best lower / upper
    envelope across them), else from its (eps, delta) profile bounds (weaker, labelled).

    Args:
        run: a privamp Training or Composition.
        alphas: type-I errors (false-positive rates) in [0, 1], scalar or array.

    Returns:
        A :class:`Tradeoff` whose arrays have the shape of ``alphas``.

    Raises:
        ValueError: an alpha outside [0, 1] or not finite.
        NotApplicable: no accountant gives a PLD or an upper bound on delta for this run.
    """
    a = _check_alphas(alphas)
    flat = a.ravel()
    grid = np.unique(np.concatenate((_GRID, flat)))
    at = np.searchsorted(grid, flat)
    sources = pld_sources(run)
    if sources:
        per = [_orders(pld, grid) for _, pld in sources]
        res, lines = {}, {}
        for k in ("remove", "add"):
            best = np.argmax([p[k][0] for p in per], axis=0)  # the best source per alpha
            pick = [np.choose(best, [p[k][i] for p in per]) for i in (0, 2, 3)]
            res[k] = (pick[0], np.min([p[k][1] for p in per], axis=0))
            lines[k] = (pick[1], pick[2])
        names = "; ".join(dict.fromkeys(s for s, _ in sources))
        src_lo = (f"f-DP duality of the pessimistic PLD sides at eps >= 0 (Dong, Roth, Su "
                  f"2022, Prop. 2.12); {DUALITY}; accountants: {names}")
        src_up = ("Neyman-Pearson power of the optimistic PLD sides (realised pairs of "
                  f"neighbours; LP duality); accountants: {names}")
    else:
        lo, src_lo = _profile_lower(run, grid)
        res = {k: (lo, 1.0 - grid) for k in ("remove", "add")}
        lines = None
        src_up = "trivial 1 - alpha: no certified attack without a PLD lower side"
    lo_e = np.minimum(res["remove"][0], res["add"][0])
    up_e = np.minimum(res["remove"][1], res["add"][1])
    res["either"] = (lo_e, up_e)
    # without lines (profile fallback) the lower envelope is already a max of lines valid
    # for both orders at once, hence convex: its own hull
    res["symmetric"] = (lo_e if lines is None else _hull(grid, lines), up_e)
    notes = {"remove": "order remove (membership test)", "add": "order add",
             "either": "either order (worst case)",
             "symmetric": "symmetrised f-DP function C(min(f, f^-1)), Dong et al. Prop. 2.5"}
    curves = {k: TradeoffCurve(k, a, Bound(v[0][at].reshape(a.shape), "lower",
                                           f"{src_lo}; {notes[k]}"),
                               Bound(v[1][at].reshape(a.shape), "upper",
                                     f"{src_up}; {notes[k]}"))
              for k, v in res.items()}
    return Tradeoff(a, curves["remove"], curves["add"], curves["either"], curves["symmetric"])


def tpr_at_fpr(run: Any, fprs: Any, order: str = "either") -> Guarantee:
    """Bounds on the largest true-positive rate of any attack at each false-positive rate:
    upper = 1 - the certified lower envelope, lower = 1 - the realised pairs' upper envelope.

    Args:
        run: a privamp Training or Composition.
        fprs: false-positive rates in [0, 1], scalar or array.
        order: "either" (any pair, any order), "remove" (membership) or "add".

    Returns:
        A Guarantee (upper, lower) shaped like ``fprs``.

    Raises:
        ValueError: a rate outside [0, 1] or an unknown order.
        NotApplicable: no accountant gives a curve for this run.
    """
    if order not in ("either", "remove", "add"):
        raise ValueError(f"order must be 'either', 'remove' or 'add', got {order!r}")
    _check_alphas(fprs, "fprs")
    return getattr(tradeoff(run, fprs), order).tpr()


def _profile_upper(run: Any, tolerance: float) -> tuple[Any, float, str]:
    """A certified upper bound D on the run's profile (both orders) at eps >= 0, as a
    function, an eps beyond which D <= tolerance (inf if none), and its source: the PLDs'
    pessimistic sides, else the run's delta bounds."""
    sources = pld_sources(run)
    if sources:
        def prof(eps: np.ndarray) -> np.ndarray:
            return np.min([np.max([p.delta(eps) for p, _ in pld.directions], axis=0)
                           for _, pld in sources], axis=0)
        top = min(max(float(p.epsilon(tolerance)) for p, _ in pld.directions)
                  for _, pld in sources)
        return prof, top, "; ".join(dict.fromkeys(s for s, _ in sources))

    def prof_run(eps: np.ndarray) -> np.ndarray:
        g = run.delta(eps)
        if g.upper is None:
            raise NotApplicable("no upper bound on the run's delta(eps)")
        return np.asarray(g.upper.value, dtype=float)
    up = run.epsilon(tolerance).upper
    top = math.inf if up is None else float(up)
    return prof_run, top, "(epsilon, delta) profile bounds of the run"


def gdp_mu(run: Any, tolerance: float = 1e-9, points: int = 20000) -> GdpBound:
    """The smallest mu (to bisection precision, rounded up) with ``T >= G_mu - tolerance`` for
    every pair of neighbours in either order, certified; and the CLT estimate for Poisson
    subsampled Gaussian runs (labelled as an estimate).

    Check, on eps_0 = 0 < ... < eps_K = E with the profile bound D(E) <= tolerance:
    ``D(eps_i) <= delta_mu(eps_{i+1}) + tolerance`` for every i (D nonincreasing, the GDP
    profile delta_mu(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) nonincreasing, so
    it holds between grid points, and beyond E since D <= tolerance there); this is (eps,
    delta_mu(eps) + tolerance)-DP for every eps >= 0 in both orders, i.e. T >= G_mu - tolerance
    (Dong et al. 2022, Cor. 2.13, the additive tolerance carried through the duality).  A PLD
    keeps a little mass at +inf and numerical slack, so no tolerance 0 is certifiable.

    Args:
        run: a privamp Training or Composition.
        tolerance: the additive allowance on beta (> 0, < 1e-3).
        points: number of eps grid points (>= 10).

    Returns:
        A :class:`GdpBound`.

    Raises:
        ValueError: tolerance or points out of range.
        NotApplicable: no profile bound, or no mu <= 1000 certified.
    """
    if not 0.0 < tolerance < 1e-3:
        raise ValueError(f"tolerance must be in (0, 1e-3), got {tolerance}")
    if int(points) != points or points < 10:
        raise ValueError(f"points must be an integer >= 10, got {points}")
    prof, top, src = _profile_upper(run, tolerance)
    if not math.isfinite(top):
        raise NotApplicable("no finite upper bound on epsilon at the tolerance")
    hi_e = top * (1 + 1e-9) + 1e-12
    for _ in range(30):  # (an RDP conversion's delta(eps) and eps(delta) differ a little)
        if prof(np.array([hi_e]))[0] <= tolerance:
            break
        hi_e *= 1.05
    else:
        raise NotApplicable("the profile bound does not fall below the tolerance")
    if not pld_sources(run):  # each point is then a delta query of the run: fewer
        points = min(int(points), _PROFILE_GDP_POINTS)
    eps = np.linspace(0.0, hi_e, int(points))
    d = prof(eps)

    def ok(mu: float) -> bool:
        e = eps[1:]
        with np.errstate(over="ignore", invalid="ignore"):
            dm = ndtr(mu / 2 - e / mu) - np.exp(e) * ndtr(-mu / 2 - e / mu)
        dm = np.where(np.isfinite(dm), dm, 0.0)
        return bool(np.all(d[:-1] <= dm - 1e-14 + tolerance))

    hi = 0.5
    while not ok(hi):
        hi *= 2
        if hi > 1000:
            raise NotApplicable("no mu <= 1000 certified")
    lo = 0.0 if hi == 0.5 else hi / 2
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        if mid > 0 and ok(mid):
            hi = mid
        else:
            lo = mid
    est, est_src = _clt_estimate(run)
    return GdpBound(Bound(hi, "upper", f"GDP mu with additive tolerance {tolerance:g}, "
                                       f"checked on {points} eps (shifted neighbours): {src}"),
                    tolerance, est, est_src)


def _clt_estimate(run: Any) -> tuple[float | None, str]:
    """mu = q sqrt(T (e^{s^2} - 1)) for Poisson subsampled Gaussian runs (Bu, Dong, Long, Su
    2020, arXiv:1911.11607, Thm 3 / Dong et al. 2022, Cor. 5.4): an estimate, not a bound."""
    from ..mechanisms.gaussian import Gaussian
    from ..sampling.relations import AddRemove
    from ..sampling.schemes import Poisson

    if not (hasattr(run, "scheme") and isinstance(run.scheme, Poisson)
            and isinstance(run.mechanism, Gaussian) and isinstance(run.relation, AddRemove)):
        return None, ""
    s = run.mechanism.shift(1)
    mu = run.scheme.rate * math.sqrt(run.steps * math.expm1(s * s))
    return mu, "CLT estimate (Bu et al. 2020, Thm 3), NOT a certified bound"
