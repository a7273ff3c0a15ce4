"""Hold a privacy audit's observed (FPR, TPR) against a run's certified trade-off curve.

An audit (canaries, one-run audits) runs an attack on ``n_neg`` trials without the target
record and ``n_pos`` with it and observes its false- and true-positive rates.  With one-sided
Clopper-Pearson bounds (Clopper & Pearson 1934), each at level ``1 - (1 - confidence) / 2``
(a union bound: both hold together with probability >= confidence), the attack's true FPR is
at most ``fpr_hi`` and its true TPR at least ``tpr_lo``.  Any attack's TPR at FPR ``fpr_hi``
is at most ``1 - lower(fpr_hi)`` (the certified lower envelope on beta, for either order of
the neighbours; the TPR bound increases with the FPR).  If ``tpr_lo`` exceeds it, the audit
contradicts the accounting at that confidence: the implementation does not match its
accounting (or the audit's trials were not independent).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scipy.stats import beta as beta_dist

from .._validation import check_int

__all__ = [
    "AuditCheck",
    "AuditViolation",
    "audit_check",
    "clopper_pearson",
]


class AuditViolation(AssertionError):
    """An audit observed more than the accounting certifies (``audit_check(...,
    strict=True)``)."""


@dataclass(frozen=True)
class AuditCheck:
    """The outcome of :func:`audit_check`.

    ``consistent`` is False when the audit's lower confidence bound on the TPR exceeds the
    certified upper bound on any attack's TPR at the audit's upper confidence bound on the FPR.
    """

    fpr: float
    tpr: float
    fpr_upper: float
    tpr_lower: float
    certified_tpr: float
    confidence: float
    consistent: bool
    message: str

    def __str__(self) -> str:
        return self.message


def clopper_pearson(k: int, n: int, level: float, side: str) -> float:
    """One-sided Clopper-Pearson bound on a binomial proportion from k successes in n trials.

    Args:
        k: successes, 0 <= k <= n.
        n: trials, >= 1.
        level: confidence level in (0, 1).
        side: "upper" or "lower".

    Returns:
        The bound (upper: 1 when k = n; lower: 0 when k = 0).

    Raises:
        ValueError: arguments out of range.
    """
    n = check_int("n", n, minimum=1)
    k = check_int("k", k, minimum=0, maximum=n)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if side == "upper":
        return 1.0 if k == n else float(beta_dist.ppf(level, k + 1, n - k))
    if side == "lower":
        return 0.0 if k == 0 else float(beta_dist.ppf(1.0 - level, k, n - k + 1))
    raise ValueError(f"side must be 'upper' or 'lower', got {side!r}")


def _counts(rate: float, n: int, name: str) -> int:
    if not (isinstance(rate, (int, float)) and 0.0 <= rate <= 1.0):
        raise ValueError(f"{name} must be a rate in [0, 1], got {rate!r}")
    k = rate * n
    if abs(k - round(k)) > 1e-6 * max(1.0, k):
        raise ValueError(f"{name} = {rate} is not a count over {n} trials")
    return int(round(k))


def audit_check(run: Any, fpr: float, tpr: float, trials: int | tuple[int, int],
                confidence: float = 0.95, strict: bool = False) -> AuditCheck:
    """Is an audit's observed (FPR, TPR) consistent with ``run``'s certified trade-off curve?

    Args:
        run: a privamp Training or Composition (anything with ``tradeoff(alphas)``).
        fpr: observed false-positive rate (a count over the negative trials).
        tpr: observed true-positive rate (a count over the positive trials).
        trials: trials per class, or ``(negatives, positives)``.
        confidence: joint confidence of the two Clopper-Pearson bounds, in (0, 1).
        strict: raise :class:`AuditViolation` on a violation instead of returning it.

    Returns:
        An :class:`AuditCheck`; its ``message`` starts with "VIOLATION" when the audit
        contradicts the accounting.

    Raises:
        ValueError: rates outside [0, 1] or not counts over the trials, bad trials or
            confidence.
        AuditViolation: ``strict`` and a violation.
        NotApplicable: no certified curve for this run.
    """
    if isinstance(trials, tuple):
        if len(trials) != 2:
            raise ValueError(f"trials must be an int or (negatives, positives), got {trials!r}")
        n_neg, n_pos = (check_int("trials", t, minimum=1) for t in trials)
    else:
        n_neg = n_pos = check_int("trials", trials, minimum=1)
    if not (isinstance(confidence, float) and 0.0 < confidence < 1.0):
        raise ValueError(f"confidence must be a float in (0, 1), got {confidence!r}")
    level = 1.0 - (1.0 - confidence) / 2.0
    k_fp, k_tp = _counts(fpr, n_neg, "fpr"), _counts(tpr, n_pos, "tpr")
    fpr_hi = clopper_pearson(k_fp, n_neg, level, "upper")
    tpr_lo = clopper_pearson(k_tp, n_pos, level, "lower")
    curve = run.tradeoff(fpr_hi)
    cert = float(1.0 - float(curve.lower.value))
    ok = not tpr_lo > cert
    if ok:
        msg = (f"consistent: the audit's TPR >= {tpr_lo:.4g} at FPR <= {fpr_hi:.4g} "
               f"({confidence:.0%} confidence) is within the certified TPR <= {cert:.4g}")
    else:
        msg = (f"VIOLATION: the audit's TPR >= {tpr_lo:.4g} at FPR <= {fpr_hi:.4g} "
               f"({confidence:.0%} confidence) EXCEEDS the certified TPR <= {cert:.4g}: "
               "the implementation does not match its accounting (or the audit's trials "
               "are not independent)")
    out = AuditCheck(float(fpr), float(tpr), fpr_hi, tpr_lo, cert, confidence, ok, msg)
    if strict and not ok:
        raise AuditViolation(msg)
    return out
