"""Matrix-factorisation (correlated-noise) mechanisms: DP-FTRL, banded matrix factorisation.

A strategy matrix C (lower-triangular, T x T) turns the per-step gradient sums x_1..x_T into
the release ``C x + sigma * clip * z`` with z ~ N(0, I) (each row of x a model-sized vector);
the trained iterates are a post-processing of it (the workload A = B C, ``B (C x + z)``:
Choquette-Choo et al. 2023, "Amplified BandMF", arXiv 2306.08153, Sec. 2; Denisov et al.
2022, arXiv 2202.08312).  ``C = I`` is DP-SGD.

An example whose clipped gradients (norm <= ``clip``) enter the steps ``pi`` moves the release
by ``sum_{t in pi} C[:, t] g_t``, of norm at most ``clip * sqrt(sum_{s,t in pi} |G[s, t]|)``
with ``G = C^T C`` (equality when G is entrywise non-negative and the gradients align:
:meth:`MatrixMechanism.sensitivity`).

This class is a *whole-run* mechanism: it is not a :class:`~privamp.Mechanism` (one release),
and only accountants that declare they handle it apply to a run of it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_int, check_positive

__all__ = [
    "MatrixMechanism",
    "MAX_DENSE_STEPS",
]

#: the largest T for which a dense T x T strategy is built (T^2 doubles: 200 MB)
MAX_DENSE_STEPS = 5000


def _as_strategy(strategy: object) -> np.ndarray:
    try:
        arr = np.array(strategy, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"strategy must be a 1-D array of Toeplitz coefficients or a square "
                         f"lower-triangular 2-D array, got {strategy!r}") from exc
    if arr.ndim not in (1, 2) or arr.size == 0:
        raise ValueError(f"strategy must be a non-empty 1-D array (Toeplitz coefficients) or a "
                         f"square 2-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("strategy must contain finite numbers only")
    if arr.ndim == 2:
        n, m = arr.shape
        if n != m:
            raise ValueError(f"a dense strategy must be square, got shape {arr.shape}")
        if n > MAX_DENSE_STEPS:
            raise ValueError(f"a dense strategy has at most {MAX_DENSE_STEPS} rows, got {n}; "
                             f"give a banded Toeplitz strategy (its coefficients) instead")
        if np.any(np.triu(arr, 1) != 0.0):
            raise ValueError("strategy must be lower-triangular (an entry above the diagonal "
                             "is non-zero)")
        if np.any(np.diag(arr) == 0.0):
            raise ValueError("strategy must be invertible: a diagonal entry is 0")
    else:
        nz = np.flatnonzero(arr)
        if arr[0] == 0.0:
            raise ValueError("the first Toeplitz coefficient (the diagonal) must be non-zero")
        arr = arr[: nz[-1] + 1]  # trailing zero bands carry nothing
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class MatrixMechanism:
    """Correlated noise through a lower-triangular strategy ``C``: releases
    ``C x + sigma * clip * z`` (z standard Gaussian; Choquette-Choo et al. 2023,
    arXiv 2306.08153).

    Args:
        strategy: either the Toeplitz coefficients ``c_0, ..., c_{b-1}`` of a banded Toeplitz
            strategy (``C[i, j] = c_{i-j}`` for ``0 <= i - j < b``; any number of steps), or a
            dense square lower-triangular matrix (exactly that many steps).
        sigma: the noise multiplier (> 0): the noise's standard deviation is ``sigma * clip``.
        clip: the l2 clipping norm of each example's gradient per step (> 0).  The
            accountants take two neighbouring examples' gradients ``clip`` apart under
            add/remove and zero-out, ``2 * clip`` under substitution (both examples present).

    Raises:
        ValueError: a strategy that is not lower-triangular, not invertible, not finite, or a
            dense one over :data:`MAX_DENSE_STEPS` rows; sigma or clip not positive.
    """

    strategy: np.ndarray
    sigma: float
    clip: float = 1.0
    name: str = field(default="matrix", init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "strategy", _as_strategy(self.strategy))
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        object.__setattr__(self, "clip", check_positive("clip", self.clip))

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def identity(cls, sigma: float, clip: float = 1.0) -> MatrixMechanism:
        """``C = I``: DP-SGD (independent noise each step)."""
        return cls(np.ones(1), sigma, clip)

    @classmethod
    def banded(cls, coefficients: Sequence[float], sigma: float,
               clip: float = 1.0) -> MatrixMechanism:
        """A banded Toeplitz strategy with the given first-column coefficients (b bands)."""
        arr = np.asarray(coefficients, dtype=float)
        if arr.ndim != 1:
            raise ValueError(f"coefficients must be 1-D, got shape {arr.shape}")
        return cls(arr, sigma, clip)

    @classmethod
    def sqrt_toeplitz(cls, sigma: float, bands: int | None = None, clip: float = 1.0,
                      steps: int | None = None) -> MatrixMechanism:
        """The square root of the prefix-sum matrix, ``c_k = binom(2k, k) / 4^k``
        (``C^2 = A``, the lower-triangular all-ones matrix; Fichtenberger, Henzinger, Upadhyay
        2023, arXiv 2202.11205; Kalinin & Lampert 2024, arXiv 2405.13763), truncated to its
        first ``bands`` coefficients (banded square root).

        Args:
            sigma: the noise multiplier (> 0).
            bands: the number of coefficients kept (default ``steps``: the full square root).
            clip: the clipping norm (> 0).
            steps: the run's number of steps, used when ``bands`` is None.

        Raises:
            ValueError: neither bands nor steps given, or not a positive integer.
        """
        if bands is None:
            if steps is None:
                raise ValueError("give bands (or steps, for the full square root)")
            bands = steps
        b = check_int("bands", bands, minimum=1, maximum=10**7)
        k = np.arange(1, b)
        coef = np.concatenate(([1.0], np.cumprod((2 * k - 1) / (2 * k))))
        return cls(coef, sigma, clip)

    # -- structure ----------------------------------------------------------------------
    @property
    def toeplitz(self) -> bool:
        """Whether the strategy is banded Toeplitz (given by its coefficients)."""
        return self.strategy.ndim == 1

    @property
    def steps(self) -> int | None:
        """The number of steps a dense strategy fixes (None for a Toeplitz one: any)."""
        return None if self.toeplitz else int(self.strategy.shape[0])

    @property
    def bands(self) -> int:
        """The number of non-zero diagonals b (1 for DP-SGD): C[i, j] = 0 when i - j >= b."""
        if self.toeplitz:
            return int(self.strategy.size)
        rows, cols = np.nonzero(self.strategy)
        return int(np.max(rows - cols)) + 1

    def check_steps(self, steps: int) -> int:
        """``steps`` validated against the strategy (a dense one fixes T).

        Raises:
            ValueError: steps not a positive integer, or not the dense strategy's size.
        """
        steps = check_int("steps", steps, minimum=1)
        if self.steps is not None and steps != self.steps:
            raise ValueError(f"steps must equal the dense strategy's size {self.steps}, "
                             f"got {steps}")
        return steps

    def matrix(self, steps: int | None = None) -> np.ndarray:
        """The dense T x T strategy (a Toeplitz one built for ``steps`` <= MAX_DENSE_STEPS).

        Raises:
            ValueError: steps missing for a Toeplitz strategy, or too large to build densely.
        """
        if not self.toeplitz:
            if steps is not None:
                self.check_steps(steps)
            return self.strategy
        if steps is None:
            raise ValueError("steps is required to build a Toeplitz strategy's matrix")
        steps = check_int("steps", steps, minimum=1, maximum=MAX_DENSE_STEPS)
        c = np.zeros(steps)
        m = min(steps, self.strategy.size)
        c[:m] = self.strategy[:m]
        idx = np.arange(steps)
        diff = idx[:, None] - idx[None, :]
        out = np.where(diff >= 0, c[np.clip(diff, 0, steps - 1)], 0.0)
        out.setflags(write=False)
        return out

    def column_norms(self, steps: int) -> np.ndarray:
        """||C e_t|| for t = 0..T-1 (the sensitivity of one participation at step t, per unit
        of clip), computed from the coefficients for a Toeplitz strategy (any T)."""
        steps = self.check_steps(steps)
        if not self.toeplitz:
            return np.sqrt(np.sum(self.strategy ** 2, axis=0))
        sq = np.cumsum(self.strategy ** 2)  # sq[k] = c_0^2 + ... + c_k^2
        t = np.arange(steps)
        last = np.minimum(self.strategy.size, steps - t) - 1
        return np.sqrt(sq[last])

    def _gram_sums(self, participations: Sequence[int], steps: int) -> tuple[float, float]:
        """(sum |G[s, t]|, sum G[s, t]) over s, t in the participations, G = C^T C (per unit
        of clip).  Toeplitz: only lags below the band count (other entries are 0), each
        ``<C e_s, C e_t> = sum_{i < n} c_i c_{i + t - s}`` with ``n = min(b - (t - s), T - t)``
        (rows below T), from the cumulative sums of the lag's products."""
        steps = self.check_steps(steps)
        pi = np.asarray(sorted(participations), dtype=np.int64)
        if pi.size == 0:
            return 0.0, 0.0
        if pi[0] < 0 or pi[-1] >= steps or np.any(np.diff(pi) == 0):
            raise ValueError(f"participations must be distinct steps in [0, {steps}), got "
                             f"{list(participations)}")
        if not self.toeplitz:
            cols = self.strategy[:, pi]
            gram = cols.T @ cols
            return float(np.sum(np.abs(gram))), float(np.sum(gram))
        c = self.strategy
        b = c.size
        diag = float(np.sum(self.column_norms(steps)[pi] ** 2))
        # all pairs i < j with pi[j] - pi[i] < b
        hi = np.searchsorted(pi, pi + b, side="left")
        counts = hi - np.arange(pi.size) - 1
        if not np.any(counts > 0):
            return diag, diag
        first = np.repeat(np.arange(pi.size), counts)
        offs = np.arange(first.size) - np.repeat(np.cumsum(counts) - counts, counts)
        second = first + 1 + offs
        lag = pi[second] - pi[first]
        n = np.minimum(b - lag, steps - pi[second])
        vals = np.empty(lag.size)
        for L in np.unique(lag):
            at = lag == L
            cum = np.concatenate(([0.0], np.cumsum(c[: b - L] * c[L:])))
            vals[at] = cum[n[at]]
        return diag + 2.0 * float(np.sum(np.abs(vals))), diag + 2.0 * float(np.sum(vals))

    def sensitivity(self, participations: Sequence[int], steps: int) -> float:
        """Largest l2 change of the release when one example's clipped gradients enter the
        steps ``participations``: ``clip * sqrt(sum_{s,t} |G[s, t]|)`` with ``G = C^T C``
        restricted to them (Cauchy-Schwarz; attained when G >= 0 entrywise).

        Raises:
            ValueError: a step outside [0, steps) or repeated.
        """
        return self.clip * math.sqrt(self._gram_sums(participations, steps)[0])

    def aligned_norm(self, participations: Sequence[int], steps: int) -> float:
        """The change of the release when the example's gradients are all ``clip * u`` for
        one unit vector u: ``clip * ||sum_{t in pi} C e_t|| = clip * sqrt(sum G[s, t])``
        (realised; equal to :meth:`sensitivity` when G >= 0 on the participations).

        Raises:
            ValueError: a step outside [0, steps) or repeated.
        """
        return self.clip * math.sqrt(max(self._gram_sums(participations, steps)[1], 0.0))

    def operator_norm_bound(self, steps: int) -> float:
        """A certified upper bound on the spectral norm ||C||_2 of the T x T strategy.

        Used for *noise dominance*: ``C x + sigma z`` is a post-processing of
        ``x + (sigma / ||C||_2) z'`` (multiply by C, then add independent Gaussian noise of
        covariance ``sigma^2 (I - C C^T / ||C||_2^2)``, positive semi-definite), so any bound
        for DP-SGD at noise multiplier ``sigma / ||C||_2`` (same clip, same sampling of the
        steps) holds for the matrix mechanism.

        Dense (T <= MAX_DENSE_STEPS): the largest singular value from LAPACK, raised by
        ``T * 2^-50`` relative (backward-stable SVD error) and capped by the always-valid
        Schur bound ``sqrt(||C||_1 ||C||_inf)``.  Toeplitz with larger T: the supremum of the
        symbol ``|sum_k c_k e^{i k w}|`` (which bounds every finite section), taken on a grid
        of 2^16 points plus the Lipschitz slack ``(pi / 2^16) sum_k k |c_k|``, capped by
        ``sum_k |c_k|``.
        """
        steps = self.check_steps(steps)
        c = self.strategy
        if self.toeplitz and steps > MAX_DENSE_STEPS:
            l1 = float(np.sum(np.abs(c)))
            grid = 1 << 16
            symbol = np.abs(np.fft.fft(c, grid)).max()
            slack = math.pi / grid * float(np.sum(np.arange(c.size) * np.abs(c)))
            return min(l1, float(symbol) * (1 + 1e-12) + slack) * (1 + 1e-12)
        dense = self.matrix(steps)
        schur = math.sqrt(float(np.abs(dense).sum(axis=0).max())
                          * float(np.abs(dense).sum(axis=1).max()))
        top = float(np.linalg.norm(dense, 2))
        return min(schur * (1 + 1e-12), top * (1 + steps * 2.0 ** -50) + 1e-300)

    def __repr__(self) -> str:
        kind = (f"bands={self.bands}" if self.toeplitz else f"dense T={self.steps}, "
                f"bands={self.bands}")
        return f"MatrixMechanism({kind}, sigma={self.sigma:g}, clip={self.clip:g})"
