"""Calibration: the value of one knob of a run (noise, rate, batch size, steps, epochs) that
meets a target epsilon at a delta, returned with the guarantee it meets."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from .._validation import check_delta, check_positive
from ..accountants.registry import applicable, offers
from ..errors import NotApplicable
from ..pld.budget import release_memory
from ..results import Bound, Guarantee
from .calibrated import KNOB_NAMES, Calibration
from .compare import Comparison, compare

__all__ = [
    "KNOBS",
    "TIME_BUDGET",
    "KNOB_NAMES",
    "Calibration",
    "calibrate",
    "compare",
    "Comparison",
]


#: the knobs :func:`calibrate` can tune: (default search range, integer-valued, epsilon
#: increases with the value)
KNOBS: dict[str, tuple[float, float, bool, bool]] = {
    "noise": (1e-2, 1e3, False, False),
    "rate": (1e-7, 1.0, False, True),
    "batch_size": (1.0, 1e7, True, True),
    "steps": (1.0, 1e9, True, True),
    "epochs": (1e-3, 1e6, False, True),
}

#: ``callback(value, guarantee)`` of :func:`calibrate`
Probe = Callable[[float, Guarantee | None], None]

#: CPU seconds the accountant queries of one :func:`calibrate` may take: a probe predicted to
#: end past it (the time spent plus the costliest probe so far) is not run; the search stops
#: at the best value met so far (see :class:`_OverBudget`)
TIME_BUDGET = 60.0


def calibrate(
    target_epsilon: float,
    delta: float,
    make_run: Callable[[float], Any],
    *,
    accountant: str = "best",
    lo: float | None = None,
    hi: float | None = None,
    rtol: float = 1e-3,
    knob: str = "noise",
    start: float | None = None,
    callback: Probe | None = None,
    epsilon_tolerance: float | None = None,
) -> Calibration:
    """The knob value (noise multiplier by default) for which ``make_run(value)`` has an
    epsilon *upper bound* at ``delta`` no larger than ``target_epsilon``, within ``rtol``,
    returned with the guarantee it meets.

    ``knob``: ``"noise"`` (the smallest sigma meeting the target found, within ``rtol``), or
    ``"rate"``, ``"batch_size"``, ``"steps"``, ``"epochs"`` (epsilon grows with them: the
    largest value meeting the target; batch size and steps are integers).  ``make_run`` maps
    the value to a :class:`Training` (or a composition).  ``lo``/``hi`` bound the search
    (defaults per knob in :data:`KNOBS`).

    The search never probes far from the answer, so each probe is cheap: for Poisson-sampled
    Gaussian noise it starts at a closed-form estimate (Bu et al. 2020 CLT,
    arXiv:1911.11607); otherwise it first screens the knob with the Rényi DP accountant (a
    millisecond query, an upper bound no tighter than the PLD's), then probes the accountant
    at the RDP answer and steps to where the RDP curve, corrected by the probes' ratio to it,
    meets the target, closing to ``rtol`` in 2-3 probes typically.  Only when no screen
    applies does it walk outward by growing factors from the range's geometric middle, then
    close the bracket by regula falsi (Illinois).  Every answer is the accountant's.
    ``callback(value, guarantee)`` is called after every probe (``guarantee`` is ``None``
    where the accountant declined the run).  ``epsilon_tolerance`` (Opacus's
    ``get_noise_multiplier`` rule, there 0.01 by default): also stop at the first probe whose
    epsilon upper bound lies in [target - epsilon_tolerance, target].

    Time budget: once a probed value meets the target, a probe predicted to end past
    :data:`TIME_BUDGET` CPU seconds in all (the time spent plus the costliest probe so far) is
    not run: the search stops at the best value met so far, its guarantee the accountant's
    (the note says so and names the nearest value probed that fails).  Each probe's memory is
    bounded by its accountant's own grid budget (:data:`privamp.pld.budget.MEMORY_BUDGET`:
    an operation that would exceed it is refused, never run, and a refused probe counts as
    failing the target) and released before the next probe
    (:func:`privamp.pld.budget.release_memory`), so a calibration peaks where its costliest
    probe does.

    Returns:
        A :class:`Calibration`: the value (``float(c)``) and the guarantee met there.

    Raises:
        ValueError: a parameter out of range, an unknown knob, ``make_run`` not returning a
            run, or no value in [lo, hi] meets the target (the message names the bound to
            move).
    """
    target = check_positive("target_epsilon", target_epsilon)
    d = float(check_delta(delta))
    if knob not in KNOBS:
        raise ValueError(f"knob must be one of {', '.join(KNOBS)}, got {knob!r}")
    if not callable(make_run):
        raise ValueError(f"make_run must be a function of the {knob} returning a "
                         f"privamp.Training, got {type(make_run).__name__}")
    dlo, dhi, integer, increasing = KNOBS[knob]
    lo = check_positive("lo", dlo if lo is None else lo)
    hi = check_positive("hi", dhi if hi is None else hi)
    if not lo < hi:
        raise ValueError(f"lo must be below hi, got lo={lo}, hi={hi}")
    rtol = check_positive("rtol", rtol)
    probes = _Probes(make_run, d, accountant, callback, integer, knob)
    probes.target = target
    try:
        return _calibrate(probes, target, d, make_run, lo, hi, rtol, knob, start,
                          epsilon_tolerance)
    except _OverBudget:
        return probes.within_budget(target, increasing)


def _calibrate(probes: _Probes, target: float, d: float, make_run, lo: float, hi: float,
               rtol: float, knob: str, start: float | None,
               epsilon_tolerance: float | None) -> Calibration:
    """The search of :func:`calibrate` on its checked arguments."""
    increasing = KNOBS[knob][3]
    if epsilon_tolerance is not None:
        probes.close = (target - check_positive("epsilon_tolerance", epsilon_tolerance), target)
    elif start is not None or _estimate_off(probes, make_run, target, d, knob, lo, hi):
        # no closed-form estimate with its slope (which needs 2-3 probes alone), or one the
        # first probe shows off by more than 5%: walk on coarse bounds from there
        coarse = _Coarse(probes)
        if start is None:
            start = float(min(max(_estimate(make_run, target, d, knob, lo, hi)[0], lo), hi))
        for _ in range(3):  # the search on cheap coarse bounds, confirmed by the accountant
            try:
                x, note = _search(coarse, target, lo, hi, rtol, knob, start, make_run, d)
            except ValueError:
                break  # e.g. the coarse bound misses the target at the limit: full search
            found = _confirm(probes, target, x, lo, hi, rtol, increasing, note)
            if found is not None:
                return probes.result(found, target, note)
            start, full, raw = x, probes.eps(x), coarse.raw(x)
            if not (math.isfinite(full) and full > 0 and math.isfinite(raw) and raw > 0):
                break
            coarse.scale = full / raw  # the coarse curve, rescaled to the accountant's here
    try:
        x, note = _search(probes, target, lo, hi, rtol, knob, start, make_run, d)
    except _Close as done:
        x, note = done.x, f"epsilon within {epsilon_tolerance:g} of the target"
    return probes.result(x, target, note)


def _estimate_off(probes: _Probes, make_run, target: float, d: float, knob: str, lo: float,
                  hi: float) -> bool:
    """True when there is no closed-form estimate with a slope, or the accountant's epsilon
    at the estimate is more than 5% from the target (then the walk from it is done on coarse
    bounds, each a fraction of a full probe's cost)."""
    x0, slope = _estimate(make_run, target, d, knob, lo, hi)
    if slope is None:
        return True
    e0 = probes.eps(float(min(max(x0, lo), hi)))
    return not (math.isfinite(e0) and e0 > 0 and abs(math.log(e0 / target)) <= 0.05)


def _confirm(probes: _Probes, target: float, x: float, lo: float, hi: float, rtol: float,
             increasing: bool, note: str) -> float | None:
    """``x`` found on coarse bounds, checked by the accountant: x meets the target and one
    rtol step towards failing does not (or x is at the search limit).  None when not."""
    if probes.eps(x) > target:
        return None
    if note:
        return x
    nxt = x * (1.0 + rtol) if increasing else x / (1.0 + rtol)
    if probes.integer:
        nxt = float(round(nxt)) if round(nxt) != x else x + (1 if increasing else -1)
    if not lo <= nxt <= hi or probes.eps(nxt) > target:
        return x
    return None


class _OverBudget(Exception):  # noqa: N818 - control flow, never leaves calibrate
    """The next probe would likely end past :data:`TIME_BUDGET` while a probed value already
    meets the target: the search stops there (:meth:`_Probes.within_budget`)."""


class _Close(Exception):  # noqa: N818 - control flow, never leaves calibrate
    """A probe met the target within ``epsilon_tolerance``: the search stops there."""

    def __init__(self, x: float) -> None:
        super().__init__(x)
        self.x = x


def _search(probes: _Probes, target: float, lo: float, hi: float, rtol: float, knob: str,
            start: float | None, make_run, d: float) -> tuple[float, str]:
    """The search of :func:`calibrate` (its docstring): the value found and a note."""
    _, _, integer, increasing = KNOBS[knob]

    def meets(x: float) -> bool:
        return probes.eps(x) <= target

    slope = None
    if start is not None:
        x0 = start
    else:
        x0, slope = _estimate(make_run, target, d, knob, lo, hi)
    x0 = float(min(max(x0, lo), hi))
    # with an epsilon window (epsilon_tolerance) the search aims at its middle and stops
    # there (rtol does not apply); else at the target, to rtol
    window = probes.close
    aim = target if window is None else 0.5 * (window[0] + window[1])
    if window is not None:
        rtol = 1e-12
    over = 0.0 if window is not None else 0.4 * math.log1p(rtol)
    first = None if slope is None or integer else _predicted_step(probes, x0, aim, slope, over)
    bad, good = _bracket(meets, x0, lo, hi, increasing, integer, first)
    if good is None:
        end = "lo" if increasing else "hi"
        limit = lo if increasing else hi
        if not math.isfinite(probes.eps(limit)):
            raise ValueError(
                f"no accountant certifies a finite epsilon for this run even at "
                f"{knob}={limit:g} (the search limit {end}): moving {end} is unlikely to "
                f"help; see privamp.support for the results covering its scheme and relation")
        raise ValueError(
            f"even {knob}={limit:g} gives epsilon {probes.eps(limit):.4g} > "
            f"target_epsilon={target:g}; move {end}")
    if bad is None:
        return good, "target met already at the search limit"
    if first is not None and window is None:
        bad, good = _near_side(probes, target, x0, bad, good, rtol)
    # aiming inside a window, a chord step may land next to an end (no 5% margin)
    good = _illinois(probes, target, bad, good, rtol, integer, aim,
                     0.05 if window is None else 1e-3)
    return good, ""


class _Probes:
    """Accountant queries of the calibration, remembered by value."""

    def __init__(self, make_run, delta, accountant, callback, integer, knob="noise") -> None:
        self.make_run, self.delta, self.accountant = make_run, delta, accountant
        self.callback, self.integer, self.knob = callback, integer, knob
        self.seen: dict[float, tuple[float, Guarantee | None]] = {}
        #: (lowest, highest) epsilon at which a probe ends the search (None: never)
        self.close: tuple[float, float] | None = None
        #: CPU seconds spent in probes, and the costliest probe's
        self.spent, self.costliest = 0.0, 0.0
        self.budget = TIME_BUDGET
        #: the probes the search did not run (over the budget)
        self.skipped = 0
        #: the target epsilon (set by :func:`calibrate`; the budget stops the search only
        #: once a probed value meets it)
        self.target = -math.inf

    def run(self, x: float) -> Any:
        """``make_run`` at ``x`` (an int for an integer knob).

        Raises:
            ValueError: ``make_run`` did not return a run (something with ``epsilon``).
        """
        run = self.make_run(int(x) if self.integer else x)
        if not callable(getattr(run, "epsilon", None)):
            raise ValueError(
                f"make_run must return a privamp.Training (or a composition), but "
                f"make_run({self.knob}={x:g}) returned {type(run).__name__} {run!r}")
        return run

    def query(self, x: float) -> Guarantee:
        """The accountant's guarantee at ``x`` (NotApplicable when it declines)."""
        return self.run(x).epsilon(self.delta, accountant=self.accountant)

    def eps(self, x: float) -> float:
        x = float(round(x)) if self.integer else float(x)
        if x not in self.seen:
            if self.spent + self.costliest > self.budget and any(
                    g is not None and e <= self.target for e, g in self.seen.values()):
                self.skipped += 1
                raise _OverBudget(x)
            g: Guarantee | None = None
            began = time.process_time()
            try:
                g = self.query(x)
            except NotApplicable:
                # declined (e.g. losses too large to discretise at tiny sigma): counts as
                # not meeting the target, never as meeting it
                self.seen[x] = (float("inf"), None)
            else:
                if g.upper is None:
                    raise ValueError("the accountant gives no upper bound for this run; "
                                     "cannot calibrate")
                self.seen[x] = (float(g.upper.value), g)
            finally:
                # the probe's memory goes now: its objects caught in a reference cycle
                # (make_run's, an exception's frames) and scipy's cached FFT plans would
                # otherwise pile up over the probes (issue 27: 1.1-1.4 GB peak RSS)
                release_memory()
                cost = time.process_time() - began
                self.spent += cost
                self.costliest = max(self.costliest, cost)
            if self.callback is not None:
                self.callback(int(x) if self.integer else x, g)
            if self.close is not None and self.close[0] <= self.seen[x][0] <= self.close[1]:
                raise _Close(x)
        return self.seen[x][0]

    def within_budget(self, target: float, increasing: bool) -> Calibration:
        """The search stopped at the time budget: the best probed value meeting the target
        (the largest for a knob epsilon grows with, else the smallest), with the bracket
        left open in the note.

        Raises:
            ValueError: no probed value meets the target.
        """
        met = [x for x, (e, g) in self.seen.items() if g is not None and e <= target]
        if not met:
            raise ValueError(f"calibration stopped at its {self.budget:g} s time budget "
                             "before any probed value met the target; narrow lo/hi")
        x = max(met) if increasing else min(met)
        beyond = [v for v in self.seen if (v > x if increasing else v < x)]
        edge = (min(beyond) if increasing else max(beyond)) if beyond else None
        note = (f"stopped at the {self.budget:g} s time budget (next probe skipped)"
                + ("" if edge is None else f"; {self.knob}={edge:g} fails the target"))
        return self.result(x, target, note)

    def result(self, x: float, target: float, note: str) -> Calibration:
        """The :class:`Calibration` at the probed value ``x``."""
        g = self.seen[float(x)][1]
        assert g is not None
        value: float = int(x) if self.integer else float(x)
        return Calibration(self.knob, value, g, target, self.delta, len(self.seen), note)


#: the coarse probes' grid step, in multiples of the accountant's own
COARSE = 30.0


class _Coarse(_Probes):
    """Sound but cheap probes: the upper bound of each applicable accountant's pessimistic
    PLD on a grid :data:`COARSE` times coarser than its own (a pessimistic PLD on any grid
    dominates the run, so the bound stays an upper bound: seconds and megabytes instead of
    minutes and gigabytes); runs without a PLD accountant are asked in full."""

    def __init__(self, full: _Probes) -> None:
        super().__init__(full.make_run, full.delta, full.accountant, None, full.integer,
                         full.knob)
        self.full = full
        self.budget = float("inf")  # coarse probes are cheap; the full ones keep the budget
        #: the coarse bounds times this (after a confirmation missed: the accountant's ratio)
        self.scale = 1.0

    def raw(self, x: float) -> float:
        """The coarse upper bound at ``x``, unscaled."""
        return super().eps(x)

    def eps(self, x: float) -> float:
        return super().eps(x) * self.scale

    def query(self, x: float) -> Guarantee:
        run = self.run(x)
        ups = []
        try:
            for acc in applicable(run, self.accountant):
                an = acc.build(run)
                if offers(an, "pld") and offers(an, "grid_step"):
                    up, _ = an.pld(an.grid_step() * COARSE).epsilon(self.delta)
                    ups.append(float(np.max(up)))
        except (NotApplicable, TypeError, AttributeError):
            ups = []
        if not ups:
            self.full.eps(x)
            g = self.full.seen[float(x)][1]
            if g is None:
                raise NotApplicable("the accountant declines this run")
            return g
        return Guarantee(Bound(min(ups), "upper", "coarse PLD screen"), None)


def _predicted_step(probes: _Probes, x0: float, aim: float, slope: float, over: float
                    ) -> float | None:
    """The first step factor of the bracket walk from x0: one Newton step on log epsilon
    against log value towards epsilon = ``aim`` with the estimated ``slope`` (d log eps /
    d log value), overshooting the predicted root by ``over`` in log value (0.4 rtol: the root
    then lies between x0 and the step and, when the prediction is that close, within rtol of
    the step, :func:`_near_side`).  None (the plain walk) when the first probe gives no usable
    log epsilon or shows the estimate off by more than 5% in epsilon (then its slope is not
    trusted either)."""
    e0 = probes.eps(x0)
    if not (math.isfinite(e0) and e0 > 0.0 and slope != 0.0 and math.isfinite(slope)):
        return None
    if abs(math.log(e0 / aim)) > 0.05:
        return None
    move = (math.log(aim) - math.log(e0)) / slope  # predicted log(root / x0)
    factor = math.exp(abs(move) + over)
    return min(factor, 1.1)


def _near_side(probes: _Probes, target: float, x0: float, bad: float, good: float,
               rtol: float) -> tuple[float, float]:
    """After a predicted first step (:func:`_predicted_step`) bracketed the root between x0
    and the step x1: if the chord through both probes (log epsilon against log value) puts
    the root within rtol of x1, probe the point just under rtol from x1 towards x0, which then
    closes the bracket to rtol with no regula falsi; else leave the bracket to it."""
    if x0 not in (bad, good):
        return bad, good
    x1 = good if bad == x0 else bad
    e0, e1 = probes.eps(x0), probes.eps(x1)
    gap = math.log(x0) - math.log(x1)
    if abs(gap) <= math.log1p(rtol) or not (math.isfinite(e0) and e0 > 0 and e1 > 0):
        return bad, good
    f0, f1 = math.log(e0 / target), math.log(e1 / target)
    if f0 == f1 or abs(f1 * gap / (f0 - f1)) > 0.9 * math.log1p(rtol):
        return bad, good
    x2 = x1 * math.exp(math.copysign(0.999 * math.log1p(rtol), gap))
    if probes.eps(x2) <= target:
        return bad, x2
    return x2, good


def _bracket(meets, x0: float, lo: float, hi: float, increasing: bool, integer: bool,
             first: float | None = None) -> tuple[float | None, float | None]:
    """(bad, good): neighbouring probed values, one failing and one meeting the target, found
    by walking from x0 by factors 1.1, 1.21, 1.46, ... (squared each time) within [lo, hi];
    None for a side not found.  ``first``: the first factor instead of 1.1 (a predicted step,
    then 1.1, 1.21, ...)."""
    ok0 = meets(x0)
    # meeting the target: move towards failing (smaller sigma, larger rate), and vice versa
    up = ok0 == increasing
    factor = 1.1 if first is None else first
    x = x0
    while True:
        nxt = min(x * factor, hi) if up else max(x / factor, lo)
        if integer:
            nxt = float(round(nxt)) if nxt != x else nxt
            if nxt == x:
                nxt = min(x + 1, hi) if up else max(x - 1, lo)
        if nxt == x:  # at the limit
            return (None, x) if ok0 else (x, None)
        if meets(nxt) != ok0:
            return (x, nxt) if not ok0 else (nxt, x)
        x = nxt
        factor, first = (1.1, None) if first is not None else (factor * factor, None)


def _illinois(probes: _Probes, target: float, bad: float, good: float, rtol: float,
              integer: bool, aim: float | None = None, margin: float = 0.05) -> float:
    """Close [bad, good] (in either order) to relative width rtol (or adjacent integers) by
    the Illinois variant of regula falsi on log epsilon - log aim (default: the target)
    against log value, each step kept ``margin`` (a fraction of the bracket) from its ends;
    returns the value meeting the target."""
    aim = target if aim is None else aim
    fb = math.log(probes.eps(bad)) - math.log(aim) if math.isfinite(probes.eps(bad)) else None
    fg = math.log(max(probes.eps(good), 1e-300)) - math.log(aim)
    side = 0
    for _ in range(100):
        lb, lg = math.log(bad), math.log(good)
        if abs(lg - lb) <= math.log1p(rtol) or (integer and abs(good - bad) <= 1):
            return good
        if fb is None or fb <= fg:  # no usable slope: bisect
            m = 0.5 * (lb + lg)
        else:
            m = lg - fg * (lg - lb) / (fg - fb)
            # keep the step strictly inside, away from the ends
            w = margin * (lg - lb)
            m = min(max(m, min(lb, lg) + abs(w)), max(lb, lg) - abs(w))
        x = math.exp(m)
        if integer:
            x = float(round(x))
            if x in (bad, good):
                x = float(math.floor(0.5 * (bad + good)))
                if x in (bad, good):
                    return good
        e = probes.eps(x)
        f = math.log(max(e, 1e-300)) - math.log(aim) if math.isfinite(e) else None
        if e <= target:
            good, fg = x, cast(float, f)  # e <= target: e finite, so f is a number
            if side == 1 and fb is not None:
                fb *= 0.5
            side = 1
        else:
            bad, fb = x, f
            if side == -1:
                fg *= 0.5
            side = -1
    return good


def _estimate(make_run, target: float, delta: float, knob: str, lo: float, hi: float
              ) -> tuple[float, float | None]:
    """A starting value and the slope d log epsilon / d log value there (None: unknown): for
    the noise of Poisson-subsampled Gaussian runs, the sigma whose CLT approximation (mu-GDP
    with mu = q sqrt(T (e^{1/sigma^2} - 1)), Bu et al. 2020, arXiv:1911.11607, Thm 6) meets
    the target, and that approximation's slope; else the geometric middle of [lo, hi].  Only
    estimates: every answer is checked by the accountant."""
    middle = math.sqrt(lo * hi)
    if knob != "noise":
        return middle, None
    try:
        run = make_run(1.0)
    except (ValueError, TypeError):
        return middle, None
    if not hasattr(run, "scheme") or not hasattr(run, "mechanism"):
        return middle, None
    rate = getattr(run.scheme, "rate", None)
    if rate is None or run.mechanism.__class__.__name__ != "Gaussian":
        return middle, None
    sens = float(getattr(run.mechanism, "sensitivity", 1.0))
    mu_target = _gdp_mu(target, delta)
    if mu_target is None:
        return middle, None
    # mu(sigma) decreasing: solve mu(sigma) = mu_target in log sigma by bisection
    a, b = math.log(lo), math.log(hi)
    for _ in range(60):
        m = 0.5 * (a + b)
        s = math.exp(m) / sens
        inner = math.expm1(min(1.0 / (s * s), 700.0))
        mu = rate * math.sqrt(run.steps * inner) if rate < 1 else math.sqrt(run.steps) / s
        if mu > mu_target:
            a = m
        else:
            b = m
    x0 = math.exp(b)
    # slope: (d log mu / d log sigma) / (d log mu / d log eps), the latter at the target
    s = x0 / sens
    if rate >= 1:
        dmu = -1.0
    elif 1.0 / (s * s) < 700.0:
        dmu = -(1.0 / (s * s)) / -math.expm1(-1.0 / (s * s))
    else:
        return x0, None
    mu_up = _gdp_mu(target * (1.0 + 1e-4), delta)
    if mu_up is None or mu_up <= mu_target:
        return x0, None
    return x0, dmu * math.log1p(1e-4) / math.log(mu_up / mu_target)


def _gdp_mu(eps: float, delta: float) -> float | None:
    """The mu of mu-GDP whose epsilon at delta is eps (Dong, Roth, Su 2019, Cor. 2.13)."""
    from scipy.special import log_ndtr, ndtr

    def dlt(mu: float) -> float:
        # e^eps Phi(.) in log space: no overflow at large eps
        return float(ndtr(-eps / mu + mu / 2) - math.exp(eps + log_ndtr(-eps / mu - mu / 2)))

    a, b = 1e-3, 100.0
    if dlt(b) < delta or dlt(a) > delta:
        return None
    for _ in range(80):
        m = math.sqrt(a * b)
        if dlt(m) > delta:
            b = m
        else:
            a = m
    return a
