"""Shuffled batches (ABLQ_S, Chua et al. 2024, "How private are DP-SGD implementations?",
arXiv:2403.17673): certified intervals [lower, upper] for delta_S(eps) and eps_S(delta).

* Upper bound: shuffling never hurts (Thm 4.1, Lemma B.1, which holds for every real eps),
  and dominating pairs compose (Zhu et al. 2022), so ``delta_S <= delta_D`` over E epochs.
* Lower bound: the concrete input of Sec. 3 (x = (-1, ..., -1, 1) vs x' = (-1, ..., -1, ⊥),
  query psi(x) = x) realises the pair (P_S, Q_S) of eqs. (1)-(2),
  P_S = mean_t N(2 s e_t, I_T), Q_S = mean_t N(s e_t, I_T), and E epochs (fresh
  permutations) realise (P_S^{⊗E}, Q_S^{⊗E}) (any batch layout:
  :class:`~privamp.theorems.chua2024.witness.Witness`).  Any post-processing of the pair
  gives a lower bound (data processing).  privamp uses, and reports the largest of:

  * eq. (7): the sets E_c = {max_t w_t >= c}, in both directions and with their
    complements, c optimised continuously (grid + local refinement: at least as strong as
    the paper's grid); over E epochs, the number K of epochs whose output falls in E_c,
    Bin(E, P_S(E_c)) vs Bin(E, Q_S(E_c)), whose divergence is a finite sum (exact);
  * over E > 1 epochs (``method="auto"``): the max statistic of each epoch, cut into cells,
    composed E times by privamp's PLD accountant (optimistic side: certified lower bound);
  * one epoch, ``method="histogram"``: the histogram of the coordinates, whose divergence
    is E_R[(sum_t a_{k_t})_+] / T for R = N(0, I)
    (:func:`~privamp.theorems.chua2024.statistics.histogram_delta`).

  (The count #{t : w_t >= c} was tried as a finer statistic: on every setting of the paper
  its optimum is the event {count >= 1}, i.e. eq. (7), to 8 digits.)

Lower bounds are rounded down (relative 1e-9) to absorb floating-point error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._validation import check_delta, check_epsilon, check_int, check_positive
from ...numerics.arrays import shaped
from ...results import Bound, Guarantee
from .deterministic import (
    SRC_DET,
    deterministic_delta,
    deterministic_epsilon,
    gauss_delta,
    gauss_epsilon,
)
from .statistics import histogram_delta, maxcount_composed, maxstat_composed
from .witness import Witness, eq7_delta, eq7_epsilon, uniform_witness

__all__ = [
    "SRC_EQ7",
    "SRC_EPOCHS",
    "SRC_HIST",
    "SRC_MAXPLD",
    "SRC_THM41",
    "ABLQ",
    "shuffle_delta_eq7",
    "shuffle_delta_lower",
    "shuffle_epsilon_lower",
    "shuffle_delta",
    "shuffle_epsilon",
    "calibrate_interval",
    "shuffle_lower_delta",
    "shuffle_lower_epsilon",
    "lower_source",
    "checked_lower",
]


SRC_THM41 = (
    "Chua et al. 2024, Thm 4.1 (shuffle <= deterministic) with Prop 3.1, composed over epochs"
)


SRC_EQ7 = "Chua et al. 2024, eq. (7) (sets E_C for the pair (P_S, Q_S) of eqs. (1)-(2))"


SRC_EPOCHS = (
    "Chua et al. 2024, eq. (7) sets E_C for the pair (P_S, Q_S) of eqs. (1)-(2), "
    "composed over epochs (exact binomial count of epochs hitting E_C)"
)


SRC_HIST = (
    "Chua et al. 2024, pair (P_S, Q_S) of eqs. (1)-(2), histogram of the coordinates "
    "(finer than eq. (7); values rounded down)"
)


SRC_MAXPLD = (
    "Chua et al. 2024, pair (P_S, Q_S) of eqs. (1)-(2) composed over epochs: per-epoch max "
    "statistic (the sets of eq. (7)) and (max, count above a threshold) composed by privamp's "
    "PLD, optimistic side"
)


def checked_lower(lower: np.ndarray, upper: np.ndarray, what: str) -> np.ndarray:
    """The lower bounds, after checking that none exceeds its certified upper bound beyond
    rounding (relative 1e-7, plus 1e-18 for deltas); within rounding they are capped at the
    upper.  A larger excess is a bug (an unsound side), never clamped silently.

    Args:
        lower: lower bounds (array).
        upper: the matching upper bounds (array).
        what: "delta" or "epsilon".

    Returns:
        ``min(lower, upper)``.

    Raises:
        RuntimeError: a lower bound above its upper bound beyond rounding.
    """
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    slack = 1e-7 * np.abs(upper) + (1e-18 if what == "delta" else 1e-7)
    bad = lower > upper + slack
    if np.any(bad):
        i = int(np.argmax(bad))
        raise RuntimeError(
            f"internal error: shuffle lower bound on {what} ({lower.flat[i]!r}) exceeds the "
            f"certified upper bound ({upper.flat[i]!r}); please report this run")
    return np.minimum(lower, upper)


def lower_source(E: int, method: str = "auto") -> str:
    """The source of a shuffle lower bound over ``E`` epochs with ``method``."""
    if E > 1:
        return SRC_EPOCHS if method != "auto" else SRC_EPOCHS + " and " + SRC_MAXPLD
    return SRC_EQ7 if method != "histogram" else SRC_EQ7 + " and " + SRC_HIST


def _composed_lower(val: np.ndarray, w: Witness, E: int, extra: Witness | None,
                    ask) -> np.ndarray:
    """``val`` raised to the lower bounds of the per-epoch statistics composed over the
    epochs (the max statistic; for (P_S, Q_S) also the (max, count) statistics):
    ``ask(pld)`` is the two-sided PLD's (upper, lower) answer, of which the lower side is
    kept."""
    pld = maxstat_composed(w, E, extra)
    plds = [pld] if pld is not None else []
    if w.uniform and extra is None:
        plds += list(maxcount_composed(w.smax, w.T, E))
    for p in plds:
        val = np.maximum(val, np.maximum(ask(p)[1], 0.0))
    return val


def shuffle_lower_delta(eps: np.ndarray, w: Witness, E: int, extra: Witness | None = None,
                        method: str = "auto") -> np.ndarray:
    """Certified lower bound on delta(eps) of E epochs of the witness ``w`` (then ``extra``
    once): the largest of the statistics of the module docstring.

    Args:
        eps: epsilons (1-d array).
        w: the per-epoch witness pair.
        E: number of epochs of ``w`` (>= 1).
        extra: the witness of one more (e.g. partial) epoch, or None.
        method: "auto", "eq7" or "histogram".

    Returns:
        The lower bounds (array).
    """
    eps = np.atleast_1d(eps)
    val = eq7_delta(eps, w, E, extra)
    if method == "histogram" and E == 1 and extra is None and w.uniform:
        val = np.maximum(val, histogram_delta(eps, w.smax, w.T))
    if method == "auto" and (E > 1 or extra is not None):
        val = _composed_lower(val, w, E, extra, lambda p: p.delta(eps))
    return val


def shuffle_lower_epsilon(delta: np.ndarray, w: Witness, E: int, s_up: float,
                          extra: Witness | None = None, method: str = "auto") -> np.ndarray:
    """Certified lower bound on eps(delta) of E epochs of the witness ``w`` (then ``extra``
    once); ``s_up`` is the Gaussian shift of the run's upper bound (a bracket).

    Args:
        delta: deltas in (0, 1) (1-d array).
        w: the per-epoch witness pair.
        E: number of epochs of ``w`` (>= 1).
        s_up: shift of a Gaussian pair dominating the run.
        extra: the witness of one more (e.g. partial) epoch, or None.
        method: "auto", "eq7" or "histogram".

    Returns:
        The lower bounds (array).
    """
    delta = np.atleast_1d(delta)
    val = eq7_epsilon(delta, w, E, s_up, extra)
    if method == "histogram" and E == 1 and extra is None and w.uniform:
        # bisection above the eq. (7) value, kept on the witness side
        hi = gauss_epsilon(delta, s_up)
        lo = val.copy()
        for _ in range(14):
            mid = 0.5 * (lo + hi)
            above = histogram_delta(mid, w.smax, w.T) > delta
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
        val = np.maximum(val, lo)
    if method == "auto" and (E > 1 or extra is not None):
        val = _composed_lower(val, w, E, extra, lambda p: p.epsilon(delta))
    return val


_METHODS = ("auto", "eq7", "histogram")


def _check_method(method: str) -> str:
    if method not in _METHODS:
        raise ValueError(f"method must be one of {', '.join(_METHODS)}, got {method!r}")
    return method


def _check_shuffle(sigma, steps_per_epoch, epochs, sensitivity) -> tuple[float, int, int]:
    sigma = check_positive("sigma", sigma)
    T = check_int("steps_per_epoch", steps_per_epoch, minimum=1)
    E = check_int("epochs", epochs, minimum=1)
    s = check_positive("sensitivity", sensitivity) / sigma
    return s, T, E


def shuffle_delta_eq7(epsilon, sigma: float, steps_per_epoch: int,
                      sensitivity: float = 1.0) -> Bound:
    """Lower bound on delta_S(eps) for one epoch by Chua et al. 2024, eq. (7), with the
    threshold C optimised continuously (at least as strong as the paper's grid 0:0.01:100).

    Args:
        epsilon: epsilon(s) >= 0 (scalar or array).
        sigma: noise multiplier (> 0).
        steps_per_epoch: batches per epoch T (>= 1), b | n.
        sensitivity: clipping norm (> 0).

    Returns:
        A lower Bound (one epoch).

    Raises:
        ValueError: a parameter out of range.
    """
    e = check_epsilon(epsilon)
    s, T, _ = _check_shuffle(sigma, steps_per_epoch, 1, sensitivity)
    return Bound(shaped(eq7_delta(e.ravel(), uniform_witness(s, T)), epsilon), "lower", SRC_EQ7)


def shuffle_delta_lower(epsilon, sigma: float, steps_per_epoch: int, epochs: int = 1,
                        sensitivity: float = 1.0, method: str = "auto") -> Bound:
    """Certified lower bound on delta_S(eps) over ``epochs`` epochs, the largest of:

    * eq. (7) with an optimised threshold (over epochs: the exact binomial composition of the
      event E_C) — always, milliseconds;
    * ``method="auto"`` and epochs > 1: the max statistic of each epoch, composed by privamp's
      PLD (optimistic side; a few seconds, cached per (sigma, T, epochs));
    * ``method="histogram"`` and one epoch: the histogram statistic (about 1 s per eps).
    ``method="eq7"`` keeps only the first.

    Args:
        epsilon: epsilon(s) >= 0 (scalar or array).
        sigma: noise multiplier (> 0).
        steps_per_epoch: batches per epoch T (>= 1), b | n.
        epochs: whole epochs E (>= 1), a fresh permutation each.
        sensitivity: clipping norm (> 0).
        method: "auto", "eq7" or "histogram".

    Returns:
        A lower Bound.

    Raises:
        ValueError: a parameter out of range.
    """
    e = check_epsilon(epsilon)
    s, T, E = _check_shuffle(sigma, steps_per_epoch, epochs, sensitivity)
    method = _check_method(method)
    val = shuffle_lower_delta(e.ravel(), uniform_witness(s, T), E, method=method)
    return Bound(shaped(val, epsilon), "lower", lower_source(E, method))


def shuffle_epsilon_lower(delta, sigma: float, steps_per_epoch: int, epochs: int = 1,
                          sensitivity: float = 1.0, method: str = "auto") -> Bound:
    """Certified lower bound on eps_S(delta): the largest eps whose lower-bound delta still
    exceeds ``delta`` (closed form for eq. (7); bisection kept on the witness side otherwise).
    ``method="histogram"`` costs about 15 s per delta.

    Args:
        delta: delta(s) in (0, 1) (scalar or array).
        sigma: noise multiplier (> 0).
        steps_per_epoch: batches per epoch T (>= 1), b | n.
        epochs: whole epochs E (>= 1), a fresh permutation each.
        sensitivity: clipping norm (> 0).
        method: "auto", "eq7" or "histogram".

    Returns:
        A lower Bound.

    Raises:
        ValueError: a parameter out of range.
    """
    d = check_delta(delta)
    s, T, E = _check_shuffle(sigma, steps_per_epoch, epochs, sensitivity)
    method = _check_method(method)
    val = shuffle_lower_epsilon(d.ravel(), uniform_witness(s, T), E, s * math.sqrt(E),
                                method=method)
    return Bound(shaped(val, delta), "lower", lower_source(E, method) + " (inverted)")


def shuffle_delta(epsilon, sigma: float, steps_per_epoch: int, epochs: int = 1,
                  sensitivity: float = 1.0, method: str = "auto") -> Guarantee:
    """Interval for delta_S(eps): [lower bound of :func:`shuffle_delta_lower`, delta_D
    (Thm 4.1)].

    Args:
        epsilon: epsilon(s) >= 0 (scalar or array).
        sigma: noise multiplier (> 0).
        steps_per_epoch: batches per epoch T (>= 1), b | n.
        epochs: whole epochs E (>= 1), a fresh permutation each.
        sensitivity: clipping norm (> 0).
        method: "auto", "eq7" or "histogram".

    Returns:
        A Guarantee (upper Thm 4.1, lower the witness).

    Raises:
        ValueError: a parameter out of range.
    """
    e = check_epsilon(epsilon)
    s, T, E = _check_shuffle(sigma, steps_per_epoch, epochs, sensitivity)
    method = _check_method(method)
    up = gauss_delta(e.ravel(), s * math.sqrt(E))
    lo = checked_lower(shuffle_lower_delta(e.ravel(), uniform_witness(s, T), E, method=method),
                       up, "delta")
    src = lower_source(E, method)
    return Guarantee(Bound(shaped(up, epsilon), "upper", SRC_THM41),
                     Bound(shaped(lo, epsilon), "lower", src))


def shuffle_epsilon(delta, sigma: float, steps_per_epoch: int, epochs: int = 1,
                    sensitivity: float = 1.0, method: str = "auto") -> Guarantee:
    """Interval for eps_S(delta): [inverted lower bound, eps_D(delta) (Thm 4.1)].

    Args:
        delta: delta(s) in (0, 1) (scalar or array).
        sigma: noise multiplier (> 0).
        steps_per_epoch: batches per epoch T (>= 1), b | n.
        epochs: whole epochs E (>= 1), a fresh permutation each.
        sensitivity: clipping norm (> 0).
        method: "auto", "eq7" or "histogram".

    Returns:
        A Guarantee (upper Thm 4.1, lower the witness).

    Raises:
        ValueError: a parameter out of range.
    """
    d = check_delta(delta)
    s, T, E = _check_shuffle(sigma, steps_per_epoch, epochs, sensitivity)
    method = _check_method(method)
    up = gauss_epsilon(d.ravel(), s * math.sqrt(E))
    lo = checked_lower(shuffle_lower_epsilon(d.ravel(), uniform_witness(s, T), E,
                                             s * math.sqrt(E), method=method), up, "epsilon")
    src = lower_source(E, method)
    return Guarantee(Bound(shaped(up, delta), "upper", SRC_THM41 + " (inverted)"),
                     Bound(shaped(lo, delta), "lower", src + " (inverted)"))


# ------------------------------------------------------------------------------------------
# Convenience object and calibration
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ABLQ:
    """ABLQ with Gaussian noise ``sigma`` over ``epochs`` epochs of ``steps_per_epoch`` batches,
    under ``sampler`` "deterministic" or "shuffle" (zero-out neighbours, clipping norm
    ``sensitivity``).  ``.delta(eps)`` / ``.epsilon(delta)`` return Guarantees; ``method``
    picks the shuffle lower bound ("eq7", fast, or "histogram", finer and slower)."""

    sampler: str
    sigma: float
    steps_per_epoch: int
    epochs: int = 1
    sensitivity: float = 1.0
    method: str = "auto"

    def __post_init__(self) -> None:
        if self.sampler not in ("deterministic", "shuffle"):
            raise ValueError(f"sampler must be 'deterministic' or 'shuffle', got {self.sampler!r}")
        _check_shuffle(self.sigma, self.steps_per_epoch, self.epochs, self.sensitivity)
        _check_method(self.method)

    def delta(self, epsilon) -> Guarantee:
        if self.sampler == "deterministic":
            b = deterministic_delta(epsilon, self.sigma, self.epochs, self.sensitivity)
            return Guarantee(b, b)
        return shuffle_delta(epsilon, self.sigma, self.steps_per_epoch, self.epochs,
                             self.sensitivity, self.method)

    def epsilon(self, delta) -> Guarantee:
        if self.sampler == "deterministic":
            b = deterministic_epsilon(delta, self.sigma, self.epochs, self.sensitivity)
            return Guarantee(b, b)
        return shuffle_epsilon(delta, self.sigma, self.steps_per_epoch, self.epochs,
                               self.sensitivity, self.method)


def calibrate_interval(target_epsilon: float, delta: float, steps_per_epoch: int,
                       epochs: int = 1, sampler: str = "shuffle", sensitivity: float = 1.0,
                       rtol: float = 1e-3) -> Guarantee:
    """Noise multiplier needed for (target_epsilon, delta)-DP of ABLQ, as an interval.

    ``upper``: a sigma that certainly suffices (the deterministic / Thm 4.1 upper bound meets
    the target; rounded up).  ``lower``: a sigma at which the certified lower bound on
    eps_S(delta) still exceeds the target, so every sigma at or below it violates the target
    (the privacy curve of ABLQ is monotone in sigma: more noise is a post-processing).  For
    "deterministic" both sides come from the exact Prop 3.1 curve.
    """
    target = check_positive("target_epsilon", target_epsilon)
    d = float(check_delta(delta))
    T = check_int("steps_per_epoch", steps_per_epoch)
    E = check_int("epochs", epochs)
    sens = check_positive("sensitivity", sensitivity)
    if sampler not in ("deterministic", "shuffle"):
        raise ValueError(f"sampler must be 'deterministic' or 'shuffle', got {sampler!r}")

    def eps_up(sigma: float) -> float:
        return float(gauss_epsilon(np.array([d]), math.sqrt(E) * sens / sigma)[0])

    # upper: smallest sigma with eps_D <= target (bisection in log sigma, safe side = larger)
    a, b = math.log(1e-3), math.log(1e4)
    if eps_up(math.exp(b)) > target:
        raise ValueError("target_epsilon too small: even sigma=1e4 does not meet it")
    while b - a > math.log1p(rtol):
        m = 0.5 * (a + b)
        a, b = (m, b) if eps_up(math.exp(m)) > target else (a, m)
    sig_up = math.exp(b)
    if sampler == "deterministic":
        sig_lo = math.exp(a)  # eps_D(exp(a)) > target: exact curve, so this sigma violates it
        return Guarantee(Bound(sig_up, "upper", f"calibrated sigma; {SRC_DET}"),
                         Bound(sig_lo, "lower", f"calibrated sigma; {SRC_DET}"))

    def eps_lo(sigma: float) -> float:
        return float(shuffle_lower_epsilon(np.array([d]), uniform_witness(sens / sigma, T), E,
                                           math.sqrt(E) * sens / sigma, method="eq7")[0])

    a, b = math.log(1e-3), math.log(sig_up)
    if eps_lo(math.exp(a)) <= target:
        return Guarantee(Bound(sig_up, "upper", f"calibrated sigma; {SRC_THM41}"), None)
    while b - a > math.log1p(rtol):
        m = 0.5 * (a + b)
        a, b = (m, b) if eps_lo(math.exp(m)) > target else (a, m)
    src = lower_source(E, "eq7")
    return Guarantee(Bound(sig_up, "upper", f"calibrated sigma; {SRC_THM41}"),
                     Bound(math.exp(a), "lower", f"calibrated sigma (target violated at or "
                           f"below); {src}"))
