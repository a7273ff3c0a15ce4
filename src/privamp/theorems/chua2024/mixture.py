"""The count-mixture upper bound of shuffled batches: condition on how many times the
differing record is released.

*Derivation.*  Zero-out neighbours D, D' have the same n records, so the ordering pi of the
run (fresh permutations each epoch or one persistent permutation; the batch layout fixed by
(n, b, drop_last)) is drawn independently of the data and with the same law under D and D'.
Given pi, the differing record takes part in k(pi) of the run's steps (its batch is
released k times; k = 0 if it sits out every released batch), and the run with adaptive
queries is the adaptive composition of k Gaussian mechanisms of sensitivity C plus steps
that do not depend on the record: dominated by the Gaussian pair at shift s sqrt(k)
(s = C / sigma) for every order alpha (Rényi / hockey-stick of every e^eps >= 0).  The
run's output law is the mixture over pi of these conditional laws, under D and D' alike;
the hockey-stick divergence is jointly convex, so

    delta(eps) <= sum_k P(k) delta_Gauss(eps; s sqrt(k))

(a dominating pair: the Gaussian pairs with the label k revealed).  k depends on pi only,
so its law is public: with T steps per epoch, E_f whole epochs and m steps of a partial one,

* fresh permutations: k = Bin(E_f, q) + Bernoulli(m b / n), q = floor(n / b) b / n under
  ``drop_last`` (the r = n mod b records left out sit out), else q = 1;
* persistent permutation: k = E_f + 1 with probability m b / n (the record in one of the
  first m batches), 0 with probability r / n under ``drop_last``, else E_f.

Since delta_Gauss(s sqrt(k)) increases with k <= ceil(steps / T), this is never above the
Gaussian at s sqrt(ceil(steps / T)) (Chua et al. 2024, Thm 4.1 generalised), and strictly
below it whenever k is not constant (sit-out, a partial epoch, a persistent permutation).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ...numerics.roots import bisect_monotone
from ...pairs.mechanism_pairs import GaussianPair
from ...pld.compose import mix
from ...pld.discretise import discretise
from ...pld.grid import PLD
from .deterministic import gauss_log_delta

__all__ = [
    "SRC_MIXTURE",
    "release_counts",
    "mixture_delta",
    "mixture_epsilon",
    "mixture_pld",
]


SRC_MIXTURE = (
    "number k of releases of the record (independent of the data under zero-out), joint "
    "convexity: delta <= sum_k P(k) delta_Gauss(s sqrt(k)) (Chua et al. 2024, Prop 3.1 per k)"
)

_ROUND_UP = 1.0 + 1e-10  # float error of the sum (each term is accurate to ~1e-13)


def _binomial(n: int, q: float) -> dict[int, float]:
    if q >= 1.0 or n == 0:
        return {n: 1.0}
    k = np.arange(n + 1)
    logp = (special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
            + special.xlogy(k, q) + special.xlog1py(n - k, -q))
    keep = logp > -700.0
    out = {int(i): float(math.exp(v)) for i, v in zip(k[keep], logp[keep], strict=True)}
    # the dropped terms (each below e^-700) go to the largest count: delta increases with k
    out[n] = out.get(n, 0.0) + float(np.sum(~keep)) * math.exp(-700.0)
    return out


def release_counts(scheme, steps: int) -> dict[int, float]:
    """The law of the number of releases of one record over the run (module docstring).

    Args:
        scheme: a Shuffle scheme (fresh or persistent, any n, b, drop_last).
        steps: the run's steps (>= 1).

    Returns:
        ``{k: P(k)}`` (probabilities > 0).
    """
    n, b = scheme.dataset_size, scheme.batch_size
    full, r = divmod(n, b)
    T = int(scheme.steps_per_epoch)
    E_f, m = divmod(int(steps), T)
    q_m = m * b / n
    if scheme.persistent:
        out: dict[int, float] = {E_f + 1: q_m, 0: r / n if scheme.drop_last else 0.0}
        out[E_f] = out.get(E_f, 0.0) + 1.0 - q_m - out[0]
        return {k: p for k, p in out.items() if p > 0}
    q = full * b / n if scheme.drop_last else 1.0
    out = {}
    for k, p in _binomial(E_f, q).items():
        for j, pj in ((0, 1.0 - q_m), (1, q_m)):
            if pj > 0:
                out[k + j] = out.get(k + j, 0.0) + p * pj
    return out


def mixture_delta(eps: np.ndarray, s: float, counts: dict[int, float]) -> np.ndarray:
    """sum_k P(k) delta_Gauss(eps; s sqrt(k)), from log space, rounded up.

    Args:
        eps: epsilons (array).
        s: sensitivity / sigma (> 0).
        counts: ``{k: P(k)}``.

    Returns:
        The upper bounds on delta.
    """
    eps = np.asarray(eps, dtype=float)
    terms = [math.log(p) + gauss_log_delta(eps, s * math.sqrt(k))
             for k, p in counts.items() if k > 0]
    if not terms:
        return np.zeros(eps.shape)
    with np.errstate(divide="ignore"):
        log = special.logsumexp(np.stack(np.broadcast_arrays(*terms)), axis=0)
    return np.minimum(np.exp(log) * _ROUND_UP, 1.0)


def mixture_epsilon(delta: np.ndarray, s: float, counts: dict[int, float]) -> np.ndarray:
    """Smallest eps >= 0 with :func:`mixture_delta` <= delta (bisection, safe side).

    Args:
        delta: deltas in (0, 1) (array).
        s: sensitivity / sigma (> 0).
        counts: ``{k: P(k)}``.

    Returns:
        Epsilons, rounded up.
    """
    delta = np.asarray(delta, dtype=float)
    kmax = max(counts)
    hi = np.full(delta.shape, max(1.0, s * s * kmax))
    for _ in range(200):
        bad = mixture_delta(hi, s, counts) > delta
        if not bad.any():
            break
        hi = np.where(bad, hi * 2.0, hi)
    eps = bisect_monotone(lambda e: mixture_delta(e, s, counts), delta, 0.0, hi,
                          increasing=False)
    return np.where(mixture_delta(np.zeros_like(delta), s, counts) <= delta, 0.0, eps)


def mixture_pld(s: float, counts: dict[int, float], h: float) -> PLD:
    """Pessimistic PLD of the labelled mixture pair (P(k)-weighted Gaussian pairs at shift
    s sqrt(k), the label k revealed) on grid step ``h``: the P(k)-weighted sum of the
    Gaussians' pessimistic PLDs (a PLD's profile is linear in its masses, so the sum's is
    >= sum_k P(k) delta_Gauss(s sqrt(k))); k = 0 puts its mass at loss 0.  Symmetric
    (each Gaussian pair is), so it serves both directions.

    Args:
        s: sensitivity / sigma (> 0).
        counts: ``{k: P(k)}``.
        h: grid step (> 0).

    Returns:
        A pessimistic PLD.
    """
    parts = []
    for k, p in counts.items():
        if k == 0:
            parts.append((p, PLD(h, 0, np.ones(1), 0.0, "pessimistic")))
        else:
            parts.append((p, discretise(GaussianPair(s * math.sqrt(k)), h, optimistic=False)[0]))
    return mix(parts, "pessimistic", _ROUND_UP - 1.0)
