"""Run accountants for deterministic and shuffled batches, every (n, b), both PyTorch
``drop_last`` conventions, fresh or persistent shuffling, whole or partial epochs.

Notation: n records, batches of b, ``T = steps_per_epoch`` (ceil(n / b), or floor(n / b)
with ``drop_last``), r = n mod b; ``steps = E_f T + m`` (E_f whole epochs, m < T steps of
a partial one); ``E_up = ceil(steps / T)``; s = sensitivity / sigma.

*Upper bound (both samplers).*  For every fixed ordering of the data (the identity for
deterministic batches, any permutation, fresh or persistent, for shuffled ones) each record
is in at most one batch per epoch, so it takes part in at most E_up of the run's steps; with
adaptive queries the run given the ordering is then dominated by the Gaussian pair at shift
s sqrt(E_up) (adaptive composition of Gaussians; groups below).  The
ordering is drawn independently of the data, the same under both neighbours, so the run's
output is the same mixture over orderings under D and D'; the hockey-stick divergence is
jointly convex, so the mixture's divergence is at most the largest conditional one: the
Gaussian curve of Prop 3.1 at s sqrt(E_up) (Chua et al. 2024, Thm 4.1 for b | n).

One record, shuffled: when its number k of releases is not constant (sit-out, a partial
epoch, a persistent permutation) the upper side is the tighter count mixture
``sum_k P(k) delta_Gauss(s sqrt(k))`` (:mod:`~privamp.theorems.chua2024.mixture`: condition
on k, which depends on the ordering only; joint convexity).

A group of K: the run's squared norm is E_f times an epoch's (at most
:func:`~.deterministic.group_epoch_square`) plus the partial epoch's, whose m released batches
(all full: the short one is last) hold at most min(K, m b) members, at most
``group_epoch_square(min(K, m b), b)``.  Both terms are maximised at once by filling the
batches in order from the first, so this is attained.

*Deterministic batches*: that placement (aligned gradients) realises the Gaussian upper bound,
so the curve is *exact* for every (n, b), group and number of steps.

*Shuffled batches, lower bound (one record)*: the witness of
:mod:`~privamp.theorems.chua2024.witness` with p_t = b / n, r / n (short batch) and p_0 =
r / n (``drop_last``).  Fresh permutations: E_f epochs of that pair, then the partial
epoch's pair (its m released batches, each with p_t = b / n; the rest is p_0), independent
(a fresh permutation each epoch) -- at least the floor(steps / T) epochs' bound, by
post-processing.  Persistent permutation: one pair at shift s sqrt(c_t) per batch
(c_t = E_f + 1 released copies for t < m, else E_f), exact by sufficiency.

*Neighbours.*  Zero-out only (Chua et al. 2024, Sec. 2).  Under add/remove the batches are
not fixed: removing a record shifts every later record into another batch (e.g.
deterministic batches of 10 out of 100 whose batch-leading records alternate +-1: removing
record 0 moves the releases by a vector of norm sqrt(37)), so these accountants raise
NotApplicable there.  Substitution is not covered either (no bound proven here).
"""

from __future__ import annotations

import math

import numpy as np

from ...accountants.grid import auto_grid
from ...errors import NotApplicable
from ...mechanisms.gaussian import Gaussian
from ...numerics.arrays import shaped
from ...pairs.mechanism_pairs import GaussianPair
from ...pld.discretise import discretise
from ...pld.grid import PLD
from ...pld.two_sided import TwoSidedPLD
from ...results import Bound
from ...sampling.relations import AddRemove, ZeroOut
from ...sampling.schemes import Deterministic, Shuffle
from ..registry import BoundPair, RunAnalysis, run_accountant
from .deterministic import (
    SRC_DET,
    GaussianRunAnalysis,
    gauss_delta,
    gauss_epsilon,
    group_epoch_square,
)
from .mixture import (
    SRC_MIXTURE,
    mixture_delta,
    mixture_epsilon,
    mixture_pld,
    release_counts,
)
from .shuffle import (
    SRC_THM41,
    checked_lower,
    lower_source,
    shuffle_lower_delta,
    shuffle_lower_epsilon,
)
from .statistics import maxstat_composed, maxstat_grid
from .witness import Witness, uniform_witness

__all__ = [
    "DeterministicAnalysis",
    "ShuffleAnalysis",
    "SRC_ANY_N",
    "SRC_PERSISTENT",
    "SRC_PARTIAL",
    "NOT_ZERO_OUT",
    "run_layout",
    "shuffle_witnesses",
    "MAX_WITNESS_EPOCHS",
]


SRC_ANY_N = (
    "witness of Chua et al. 2024, Sec. 3 with the record in batch t with probability |B_t|/n "
    "(short batch r/n; out of the epoch with probability r/n under drop_last)"
)
SRC_PERSISTENT = (
    "persistent permutation: the record's releases in its batch add up to one Gaussian at "
    "s sqrt(releases) (sufficient statistic)"
)
SRC_PARTIAL = "partial last epoch: its m released batches as one more epoch of the witness"
SRC_UPPER_ANY = (
    "each record in at most one batch per epoch for every ordering, joint convexity over "
    "orderings (Chua et al. 2024, Thm 4.1 generalised) with Prop 3.1 at ceil(steps/T) epochs"
)

NOT_ZERO_OUT = (
    "shuffled/deterministic batches are analysed under zero-out neighbours (Chua et al. 2024, "
    "Sec. 2): adding or removing a record shifts the later batches; use relation=pa.ZeroOut()"
)


def _require_zero_out(run) -> None:
    """Raise NotApplicable unless the run is declared under zero-out neighbours."""
    if not isinstance(run.relation, ZeroOut):
        raise NotApplicable(NOT_ZERO_OUT)


def run_layout(scheme, steps: int) -> tuple[int, int, int]:
    """(T, E_f, m): steps per epoch, whole epochs and steps of a partial last epoch.

    Args:
        scheme: a Deterministic or Shuffle scheme.
        steps: the run's steps (>= 1).

    Returns:
        ``(T, E_f, m)`` with ``steps = E_f T + m``, ``0 <= m < T``.
    """
    T = int(scheme.steps_per_epoch)
    E_f, m = divmod(int(steps), T)
    return T, E_f, m


def shuffle_witnesses(scheme, steps: int, s: float) -> tuple[Witness, int, Witness | None]:
    """The lower-bound witness of a shuffled run (one record): ``(w, E, extra)``, the run
    realising E epochs of ``w`` then ``extra`` once (see the module docstring).

    Args:
        scheme: a Shuffle scheme (any n, b, drop_last, persistent).
        steps: the run's steps (>= 1).
        s: sensitivity / sigma.

    Returns:
        ``(w, E, extra)``; b | n, fresh, whole epochs: ``(uniform_witness(s, T), E, None)``.
    """
    n, b = scheme.dataset_size, scheme.batch_size
    full, r = divmod(n, b)
    T, E_f, m = run_layout(scheme, steps)
    p = b / n
    short = r > 0 and not scheme.drop_last
    sit = r / n if scheme.drop_last else 0.0
    if scheme.persistent:
        if r == 0 and m == 0:
            return uniform_witness(s * math.sqrt(E_f), T), 1, None
        classes = [(m, p, s * math.sqrt(E_f + 1)), (full - m, p, s * math.sqrt(E_f))]
        if short:
            classes.append((1, r / n, s * math.sqrt(E_f)))
        return Witness(sit, tuple(classes)), 1, None
    if r == 0:
        epoch = uniform_witness(s, T)
    else:
        epoch = Witness(sit, ((full, p, s),) + (((1, r / n, s),) if short else ()))
    partial = Witness(1.0 - m * p, ((m, p, s),)) if m else None
    if E_f == 0:
        assert partial is not None
        return partial, 1, None
    if E_f > MAX_WITNESS_EPOCHS:
        # the first MAX_WITNESS_EPOCHS epochs are a sub-run (post-processing: the adversary
        # ignores the rest), so their bound is a lower bound; the witness costs O(E) memory
        return epoch, MAX_WITNESS_EPOCHS, None
    return epoch, E_f, partial


#: above this many whole epochs the lower-bound witness composes only this many (a sub-run)
#: and the release-count mixture upper bound is skipped (both cost memory and time in E)
MAX_WITNESS_EPOCHS = 2000


def _zero(h: float) -> PLD:
    """The optimistic PLD of the trivial lower bound (profile 0)."""
    return PLD(h, 0, np.zeros(1), 0.0, "optimistic")


class DeterministicAnalysis(GaussianRunAnalysis):
    """Deterministic batches: the Gaussian at shift ``s_up`` bounds the run above and the one
    at ``s_lo`` is realised (equal: exact, Prop 3.1)."""

    def __init__(self, s_up: float, s_lo: float, note: str = "") -> None:
        super().__init__(s_up, s_lo, SRC_DET + note,
                         SRC_DET + " (group placed in whole epochs or the first batch)" + note,
                         mark_inverted=True)
        self.note = note


class ShuffleAnalysis(RunAnalysis):
    """Shuffled batches: upper bound the Gaussian at ``s_all``; lower bound (one record) the
    witness ``lower = (w, E, extra)``, or None (groups)."""

    def __init__(self, s_all: float, lower: tuple[Witness, int, Witness | None] | None,
                 note: str = "", upper_src: str = SRC_THM41, lower_note: str = "",
                 counts: tuple[float, dict[int, float]] | None = None) -> None:
        self.s_all, self.lower, self.note = s_all, lower, note
        self.upper_src, self.lower_note = upper_src, lower_note
        self.counts = counts  # (s, law of the releases): the count-mixture upper bound

    def _up_delta(self, e: np.ndarray) -> np.ndarray:
        if self.counts is None:
            return gauss_delta(e, self.s_all)
        return np.minimum(mixture_delta(e, *self.counts), gauss_delta(e, self.s_all))

    def _up_epsilon(self, d: np.ndarray) -> np.ndarray:
        if self.counts is None:
            return gauss_epsilon(d, self.s_all)
        return np.minimum(mixture_epsilon(d, *self.counts), gauss_epsilon(d, self.s_all))

    def _lower_src(self) -> str:
        assert self.lower is not None
        w, E, extra = self.lower
        return lower_source(E + (extra is not None)) + self.lower_note

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        d = np.ravel(delta)
        up = self._up_epsilon(d)
        upper = Bound(shaped(up, delta), "upper", self.upper_src + " (inverted)" + self.note)
        if self.lower is None:
            return upper, None
        w, E, extra = self.lower
        lo = checked_lower(shuffle_lower_epsilon(d, w, E, self.s_all, extra), up, "epsilon")
        return upper, Bound(shaped(lo, delta), "lower",
                            self._lower_src() + " (inverted)" + self.note)

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        e = np.ravel(epsilon)
        up = self._up_delta(e)
        upper = Bound(shaped(up, epsilon), "upper", self.upper_src + self.note)
        if self.lower is None:
            return upper, None
        w, E, extra = self.lower
        lo = checked_lower(shuffle_lower_delta(e, w, E, extra), up, "delta")
        return upper, Bound(shaped(lo, epsilon), "lower", self._lower_src() + self.note)

    def grid_step(self) -> float:
        """The grid step this run would pick by itself: that of the composed max statistic
        (the lower side), or the Gaussian's when there is none."""
        if self.lower is not None:
            w, E, extra = self.lower
            return maxstat_grid(w, E, extra)
        return auto_grid(GaussianPair(self.s_all), 1)

    def pld(self, h: float | None = None) -> TwoSidedPLD:
        """The whole run's PLD, directions [(P, Q), (Q, P)] of the witness: pessimistic the
        Gaussian at ``s_all`` (symmetric), optimistic the composed per-epoch max statistic
        of the witness (zero when there is none or the grid cannot hold it)."""
        h = self.grid_step() if h is None else h
        if self.counts is None:
            p, _ = discretise(GaussianPair(self.s_all), h, optimistic=False)
        else:
            p = mixture_pld(*self.counts, h)
        low = None if self.lower is None else maxstat_composed(*self.lower, h=h)
        if low is None:
            return TwoSidedPLD([(p, _zero(h))])
        for _, o in low.directions:  # an optimistic side above the pessimistic one is a bug
            checked_lower(np.array([o.inf_mass]), np.array([p.inf_mass + p.slack]), "delta")
            checked_lower(o.delta(_CHECK_EPS), p.delta(_CHECK_EPS), "delta")
        return TwoSidedPLD([(p, o) for _, o in low.directions])


_CHECK_EPS = np.array([0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])


def _ablq_applies(run, scheme_type: type) -> bool:
    return (
        type(run.scheme) is scheme_type
        and isinstance(run.mechanism, Gaussian)
        and isinstance(run.relation, (ZeroOut, AddRemove))
    )


def _shifts(run) -> tuple[float, int, int]:
    """(Gaussian shift of the run, E_f, m): for a group of K, E_f whole epochs at the
    layout's largest square plus the partial epoch's m (full) batches filled greedily."""
    sch, m_ = run.scheme, run.mechanism
    _, E_f, m = run_layout(sch, run.steps)
    k = run.relation.group
    sq = group_epoch_square(k, sch.batch_size, sch.dataset_size, sch.drop_last)
    sq_m = group_epoch_square(min(k, m * sch.batch_size), sch.batch_size) if m else 0.0
    return math.sqrt(E_f * sq + sq_m) * m_.sensitivity / m_.sigma, E_f, m


@run_accountant(
    "ablq-deterministic",
    applies=lambda run: _ablq_applies(run, Deterministic),
    description="deterministic batches, Gaussian noise: exact (Chua et al. 2024, Prop 3.1)",
    capabilities=("pld", "grid_step"),
)
def _build_deterministic(run) -> RunAnalysis:
    _require_zero_out(run)
    s_all, _, _ = _shifts(run)
    return DeterministicAnalysis(s_all, s_all)


@run_accountant(
    "ablq-shuffle",
    applies=lambda run: _ablq_applies(run, Shuffle),
    description="shuffled batches, Gaussian noise: [eq. (7) lower, Thm 4.1 upper] "
    "(Chua et al. 2024)",
    capabilities=("pld", "grid_step"),
)
def _build_shuffle(run) -> RunAnalysis:
    _require_zero_out(run)
    sch, mech = run.scheme, run.mechanism
    s_all, E_f, m = _shifts(run)
    if not math.isfinite(s_all) or s_all <= 0:
        raise NotApplicable(f"the run's Gaussian shift must be finite and > 0, got {s_all}")
    plain = sch.divisible and not sch.persistent and m == 0
    lower, note = None, ""
    if run.relation.group == 1:
        lower = shuffle_witnesses(sch, run.steps, mech.sensitivity / mech.sigma)
        if not sch.divisible:
            note += "; " + SRC_ANY_N
        if sch.persistent:
            note += "; " + SRC_PERSISTENT
        elif E_f > MAX_WITNESS_EPOCHS:
            note += f"; of the first {MAX_WITNESS_EPOCHS} epochs (a sub-run, post-processing)"
        elif m and E_f:
            note += "; " + SRC_PARTIAL
    upper_src = SRC_THM41 if plain else SRC_UPPER_ANY
    counts = None
    if run.relation.group == 1 and E_f <= MAX_WITNESS_EPOCHS:
        law = release_counts(sch, run.steps)
        if len(law) > 1:  # k not constant: the count mixture is strictly tighter
            counts = (mech.sensitivity / mech.sigma, law)
            upper_src = SRC_MIXTURE + "; else " + upper_src
    return ShuffleAnalysis(s_all, lower, "", upper_src, note, counts)
