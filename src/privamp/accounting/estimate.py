"""Monte Carlo *estimates* (never bounds) of a matrix-mechanism run's delta: the realised pair
with aligned gradients, the conjectured worst case (Choquette-Choo et al., ICLR 2025, arXiv
2410.06266; jax_privacy ``experimental.monte_carlo``).

The pair (units of the clip norm, projected on the gradients' direction u): with the example,
``Y = C x_pi + sigma z`` where ``x_pi`` is the indicator of its random participation pattern
pi; without it (or zeroed out), ``Y = sigma z``.  The privacy loss of ``y`` is computed exactly
per sample as a mixture over the patterns:
``L(y) = log E_pi exp((<y, m_pi> - |m_pi|^2 / 2) / sigma^2)``, ``m_pi = C x_pi``:

* :class:`~privamp.PersistentBallsInBins` (jax_privacy's ``BallsInBinsSampling``): the B bins,
  enumerated;
* :class:`~privamp.Poisson` and :class:`~privamp.CyclicPoisson`: each eligible step in with
  probability p, summed by a forward recursion whose state is the choices of the previous
  eligible steps fewer than b apart (``2^w`` states); a public (``"fixed"``) partition or
  ``cycle_length = 1`` puts the example in group 0 (the most steps), a random one in a uniform
  group (a mixture over the groups; for ``"equal-split"`` this ignores the dependence between
  the groups' sizes).

delta at epsilon is ``max(E_P[(1 - e^{eps - L})_+], E_Q[(1 - e^{eps + L})_+])`` (remove and add
directions, each from its own samples).  The confidence interval of each direction is the
Chernoff-Hoeffding bound for means of [0, 1] variables (Hoeffding 1963, Thm 1, in its KL
form) at confidence ``1 - (1 - confidence) / 2``, so the interval of the maximum holds with
probability ``confidence`` (union bound).  It covers the realised pair's delta, which is a
*lower* bound on the run's delta; whether it equals it (aligned gradients being the worst
case) is a conjecture — hence an :class:`~privamp.results.Estimate`, not a bound.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import signal

from .._validation import check_int
from ..mechanisms.matrix import MatrixMechanism
from ..numerics.logspace import logsumexp
from ..results import Estimate
from ..sampling.cyclic import CyclicPoisson
from ..sampling.schemes import PersistentBallsInBins, Poisson

__all__ = ["estimate_delta", "kl_interval", "privacy_losses", "mixture_loss"]

_MAX_STATES = 1 << 12


def kl_interval(mean: float, n: int, alpha: float) -> tuple[float, float]:
    """The two-sided Chernoff-Hoeffding interval for the mean of ``n`` i.i.d. variables in
    [0, 1] with empirical mean ``mean``: each side fails with probability <= ``alpha / 2``.

    Args:
        mean: the empirical mean, in [0, 1].
        n: the number of samples (>= 1).
        alpha: the total failure probability, in (0, 1).

    Returns:
        ``(low, high)``.
    """
    target = math.log(2.0 / alpha) / n

    def kl(a: float, b: float) -> float:
        out = 0.0
        if a > 0:
            out += a * math.log(a / b)
        if a < 1:
            out += (1 - a) * math.log((1 - a) / (1 - b))
        return out

    def solve(lo: float, hi: float, up: bool) -> float:
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            inside = kl(mean, mid) <= target
            if up:
                lo, hi = (mid, hi) if inside else (lo, mid)
            else:
                lo, hi = (lo, mid) if inside else (mid, hi)
        return hi if up else lo

    high = 1.0 if mean >= 1 else solve(mean, 1.0 - 1e-300, True)
    low = 0.0 if mean <= 0 else solve(1e-300, mean, False)
    return low, high


def _columns(mech: MatrixMechanism, steps: int, cols: np.ndarray) -> np.ndarray:
    """``C e_t`` for the steps ``cols`` (T x len(cols))."""
    e = np.zeros((steps, cols.size))
    e[cols, np.arange(cols.size)] = 1.0
    if mech.toeplitz:
        return signal.lfilter(mech.strategy, [1.0], e, axis=0)
    return mech.strategy @ e


class _Model:
    """The patterns' structure: ``logpdf_ratio(y)`` (rows of y: samples) and ``draw(rng)``."""

    def __init__(self, mech: MatrixMechanism, scheme, steps: int) -> None:
        self.mech, self.T, self.s = mech, steps, mech.sigma
        if isinstance(scheme, PersistentBallsInBins):
            B = scheme.batches
            pat = np.zeros((steps, B))
            pat[np.arange(steps), np.arange(steps) % B] = 1.0
            self.means = _columns(mech, steps, np.arange(steps)) @ pat  # T x B
            self.kind = "bins"
            return
        if isinstance(scheme, Poisson):
            k, groups = 1, [0]
        elif isinstance(scheme, CyclicPoisson):
            k = scheme.cycle_length
            groups = [0] if scheme.group_known else list(range(min(k, steps)))
        else:
            raise ValueError(f"scheme must be PersistentBallsInBins, Poisson or CyclicPoisson, "
                             f"got {scheme!r}")
        if getattr(scheme, "truncated_batch_size", None) is not None:
            raise ValueError("truncated batches are not estimated")
        self.kind, self.rate, self.groups = "poisson", float(scheme.rate), groups
        self.width = -(-(mech.bands - 1) // k) if mech.bands > 1 else 0
        if (1 << self.width) > _MAX_STATES:
            raise ValueError(f"the forward recursion needs 2^{self.width} states (bands "
                             f"{mech.bands}, cycle_length {k}); at most {_MAX_STATES}")
        self.elig = [np.arange(g, steps, k) for g in groups]
        self.cols = [_columns(mech, steps, e) for e in self.elig]
        self.gram = [c.T @ c for c in self.cols]

    def draw(self, rng: np.random.Generator, n: int, positive: bool) -> np.ndarray:
        z = rng.standard_normal((n, self.T)) * self.s
        if not positive:
            return z
        if self.kind == "bins":
            return z + self.means.T[rng.integers(0, self.means.shape[1], n)]
        g = rng.integers(0, len(self.groups), n)
        for i in range(len(self.groups)):
            at = g == i
            x = rng.random((int(at.sum()), self.elig[i].size)) < self.rate
            z[at] += x @ self.cols[i].T
        return z

    def loss(self, y: np.ndarray) -> np.ndarray:
        s2 = self.s * self.s
        if self.kind == "bins":
            m = self.means
            lw = (y @ m - 0.5 * np.sum(m * m, axis=0)) / s2
            return logsumexp(lw, axis=1) - math.log(m.shape[1])
        per = [self._forward(y, i) for i in range(len(self.groups))]
        return logsumexp(np.stack(per), axis=0) - math.log(len(per))

    def _forward(self, y: np.ndarray, i: int) -> np.ndarray:
        a = (y @ self.cols[i]) / (self.s * self.s)
        g = self.gram[i] / (self.s * self.s)
        w, K = self.width, a.shape[1]
        S = 1 << w
        mask = S - 1
        states = np.arange(S)
        lq, l1q = math.log(self.rate), math.log1p(-self.rate) if self.rate < 1 else -np.inf
        alpha = np.full((a.shape[0], S), -np.inf)
        alpha[:, 0] = 0.0
        for j in range(K):
            # cross terms with the previous w eligible steps whose bits are set
            cross = np.zeros(S)
            for lag in range(1, min(w, j) + 1):
                cross += ((states >> (lag - 1)) & 1) * g[j, j - lag]
            new = np.full_like(alpha, -np.inf)
            stay = (states << 1) & mask
            on = (stay | 1) & mask
            base_on = lq - 0.5 * g[j, j] - cross  # per previous state
            for src in range(S):
                col = alpha[:, src]
                new[:, stay[src]] = np.logaddexp(new[:, stay[src]], col + l1q)
                new[:, on[src]] = np.logaddexp(new[:, on[src]], col + base_on[src] + a[:, j])
            alpha = new
        return logsumexp(alpha, axis=1)


def mixture_loss(mechanism: MatrixMechanism, scheme, steps: int, y: np.ndarray) -> np.ndarray:
    """The realised pair's privacy loss ``L(y)`` of each row of ``y`` (T-vectors of the
    release projected on the gradients' direction, units of the clip norm).

    Args:
        mechanism: the matrix mechanism.
        scheme: PersistentBallsInBins, Poisson or CyclicPoisson.
        steps: T.
        y: shape ``(n, T)``.

    Returns:
        Shape ``(n,)``.

    Raises:
        ValueError: another scheme, truncated batches, too many forward states.
    """
    steps = mechanism.check_steps(steps)
    return _Model(mechanism, scheme, steps).loss(np.atleast_2d(np.asarray(y, dtype=float)))


def privacy_losses(mechanism: MatrixMechanism, scheme, steps: int, samples: int,
                   seed: int | None = None, positive: bool = True) -> np.ndarray:
    """Samples of the realised pair's privacy loss ``L(Y)`` (Y drawn with the example when
    ``positive``, without it otherwise).

    Args:
        mechanism: the matrix mechanism.
        scheme: PersistentBallsInBins, Poisson or CyclicPoisson.
        steps: T.
        samples: how many.
        seed: the generator's seed.
        positive: which side Y is drawn from.

    Returns:
        The losses, shape ``(samples,)``.

    Raises:
        ValueError: another scheme, truncated batches, too many forward states.
    """
    steps = mechanism.check_steps(steps)
    model = _Model(mechanism, scheme, steps)
    rng = np.random.default_rng(seed)
    out = np.empty(samples)
    chunk = max(1, 2_000_000 // max(steps, 1))
    for start in range(0, samples, chunk):
        n = min(chunk, samples - start)
        out[start:start + n] = model.loss(model.draw(rng, n, positive))
    return out


def estimate_delta(run, epsilon: float, samples: int = 10_000, seed: int | None = None,
                   confidence: float = 0.999) -> Estimate:
    """A Monte Carlo estimate of a matrix-mechanism run's delta at ``epsilon`` from the
    realised pair with aligned gradients (module docstring): an
    :class:`~privamp.results.Estimate`, **not a bound**.

    Args:
        run: a Training with a MatrixMechanism under PersistentBallsInBins, Poisson or
            CyclicPoisson (group 1; the relation only fixes the pair's distance: add/remove
            and zero-out give the same pair).
        epsilon: the epsilon (>= 0).
        samples: Monte Carlo samples per direction (>= 100).
        seed: the generator's seed (None: fresh entropy).
        confidence: the interval's coverage, in (0, 1).

    Returns:
        The estimate with its confidence interval.

    Raises:
        ValueError: not a matrix-mechanism run of those schemes, a group > 1, substitution,
            a bad epsilon, samples or confidence.
    """
    if not isinstance(run.mechanism, MatrixMechanism):
        raise ValueError(f"run.mechanism must be a MatrixMechanism, got {run.mechanism!r}")
    if run.relation.group != 1 or run.relation.name not in ("add/remove", "zero-out"):
        raise ValueError(f"run.relation must be add/remove or zero-out of one example, got "
                         f"{run.relation}")
    eps = float(epsilon)
    if not (math.isfinite(eps) and eps >= 0):
        raise ValueError(f"epsilon must be in [0, inf), got {epsilon!r}")
    n = check_int("samples", samples, minimum=100)
    if not (0.0 < float(confidence) < 1.0):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    alpha = (1.0 - float(confidence)) / 2.0  # one half per direction
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, 2**63 - 1, 2)
    mech, T = run.mechanism, run.steps
    rem = privacy_losses(mech, run.scheme, T, n, int(seeds[0]), positive=True)
    add = privacy_losses(mech, run.scheme, T, n, int(seeds[1]), positive=False)
    m_rem = float(np.mean(-np.expm1(np.minimum(eps - rem, 0.0))))
    m_add = float(np.mean(-np.expm1(np.minimum(eps + add, 0.0))))
    lo_r, hi_r = kl_interval(m_rem, n, alpha)
    lo_a, hi_a = kl_interval(m_add, n, alpha)
    value = max(m_rem, m_add)
    return Estimate(value, max(lo_r, lo_a), max(hi_r, hi_a), n, float(confidence),
                    f"Monte Carlo of the realised pair with aligned gradients (conjectured "
                    f"worst case; arXiv 2410.06266) for {run.scheme}, exact mixture loss per "
                    f"sample, Chernoff-Hoeffding interval; remove {m_rem:.4g}, add "
                    f"{m_add:.4g}")
