"""Whole training runs: ``Training(mechanism, scheme, steps | epochs, relation)``.

``run.epsilon(delta)`` and ``run.delta(epsilon)`` ask the registered accountants
(:mod:`privamp.accountants.registry`) by capability and return a
:class:`~privamp.Guarantee`: the smallest sound upper bound and the largest certified lower
bound any of them gives.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from .._validation import MAX_STEPS, check_delta, check_epsilon, check_int, check_positive
from ..accountants.rdp import RdpRunAnalysis, compositions
from ..accountants.registry import BoundPair, RunAccountant, RunAnalysis, applicable, offers
from ..errors import NotApplicable
from ..mechanisms.base import Mechanism
from ..mechanisms.matrix import MatrixMechanism
from ..numerics.threads import limit_blas
from ..pld.moments import two_sided_renyi_floor
from ..results import Bound, Guarantee, Kind, reshaped
from ..sampling.relations import Relation
from ..sampling.schemes import Scheme
from .screening import floor_screened, rdp_ruled_out, rdp_ruled_out_scaled
from .tradeoff import GdpBound, Tradeoff, gdp_mu, tpr_at_fpr, tradeoff

__all__ = [
    "Training",
]


@dataclass(frozen=True)
class Training:
    """A training run: ``steps`` releases of ``mechanism``, each on data chosen by ``scheme``,
    protecting neighbours under ``relation``.  Give ``steps`` or ``epochs`` (not both).

    ``relation`` defaults to the scheme's :meth:`~privamp.Scheme.default_relation`:
    add/remove, or zero-out for batches cut from an ordering of the records (shuffled and
    deterministic batches, whose layout shifts when a record is added or removed)."""

    mechanism: Mechanism | MatrixMechanism
    scheme: Scheme
    steps: int | None = None
    epochs: float | None = None
    relation: Relation | None = None  # None: the scheme's default (resolved below)
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.mechanism, (Mechanism, MatrixMechanism)):
            raise ValueError(f"mechanism must be a privamp mechanism, got {self.mechanism!r}")
        if not isinstance(self.scheme, Scheme):
            raise ValueError(f"scheme must be a privamp sampling scheme, got {self.scheme!r}")
        if self.relation is None and isinstance(self.scheme, Scheme):
            object.__setattr__(self, "relation", self.scheme.default_relation())
        if not isinstance(self.relation, Relation):
            raise ValueError(f"relation must be a privamp relation, got {self.relation!r}")
        if (self.steps is None) == (self.epochs is None):
            raise ValueError("give exactly one of steps (integer >= 1) or epochs (> 0)")
        if self.steps is not None:
            object.__setattr__(self, "steps", check_int("steps", self.steps, minimum=1,
                                                        maximum=MAX_STEPS))
        else:
            epochs = check_positive("epochs", self.epochs)
            object.__setattr__(self, "epochs", epochs)
            steps = epochs * self.scheme.steps_per_epoch
            if not math.isfinite(steps) or round(steps) < 1:
                raise ValueError(f"epochs={epochs} gives no whole step for {self.scheme}")
            if round(steps) > MAX_STEPS:
                raise ValueError(f"epochs={epochs} gives {steps:.4g} steps; steps must be an "
                                 f"integer in [1, {MAX_STEPS}]")
            object.__setattr__(self, "steps", int(round(steps)))
        if isinstance(self.mechanism, MatrixMechanism):
            self.mechanism.check_steps(int(self.steps))  # type: ignore[arg-type]

    @property
    def resolved_relation(self) -> Relation:
        """The run's relation: ``relation`` as given, or the scheme's default when it was
        None (``__post_init__`` stores the resolved value in ``relation`` itself, so after
        construction ``relation`` is never None; this property says so to type checkers)."""
        assert self.relation is not None  # resolved in __post_init__
        return self.relation

    # ------------------------------------------------------------------------------------
    def analysis(self, name: str) -> list[tuple[str, RunAnalysis]]:
        """The analyses of the accountants ``name`` ("best" = all applicable), built once.

        With ``"best"``, an accountant that declines this particular run (raises
        :class:`~privamp.NotApplicable`, e.g. the RDP accountant for a partial epoch) is skipped
        as long as another one answers; any other exception is a bug and propagates.
        """
        return self._analyses(name)[0]

    def offering(self, capability: str) -> list[tuple[RunAccountant, RunAnalysis]]:
        """The applicable accountants whose analyses of this run offer ``capability`` (one
        of :data:`~privamp.accountants.registry.CAPABILITIES`), with the analyses (built
        once).  Accountants that declared capabilities are asked only for those; one that
        declared none is built and its analysis asked (:func:`offers`), except for
        "rdp_accountant", which must be declared.  Accountants declining the run are left
        out.

        Raises:
            ValueError: an unknown capability.
        """
        out = []
        for acc in applicable(self, "best"):
            if capability not in acc.capabilities and (
                    acc.capabilities or capability == "rdp_accountant"):
                continue
            built = self._built(acc, "best")
            if not isinstance(built, NotApplicable) and offers(built, capability):
                out.append((acc, built))
        return out

    def _analyses(self, name: str, skip: tuple[RunAccountant, ...] = (),
                  accountants: list[RunAccountant] | None = None
                  ) -> tuple[list[tuple[str, RunAnalysis]], list[tuple[str, str]]]:
        if accountants is None:  # (else: applicable(self, name), already found by the caller)
            accountants = applicable(self, name)
        if not accountants:
            raise NotApplicable(
                f"no accountant handles {type(self.mechanism).__name__} with "
                f"{type(self.scheme).__name__} under {self.relation} yet"
            )
        out = []
        declined: list[tuple[str, str]] = []
        errors: list[NotApplicable] = []
        for acc in accountants:
            if acc in skip:
                continue
            built = self._built(acc, name)
            if isinstance(built, NotApplicable):
                errors.append(built)
                declined.append((acc.name, str(built)))
                continue
            out.append((acc.name, built))
        if not out and errors and not skip:  # (skipped accountants may still answer)
            raise errors[0]
        return out, declined

    def _built(self, acc, name: str) -> RunAnalysis | NotApplicable:
        key = f"{acc.name}:{id(acc)}"
        if key not in self._cache:
            try:
                self._cache[key] = acc.build(self)
            except NotApplicable as exc:
                if name != "best":
                    raise
                self._cache[key] = exc
        return self._cache[key]

    def _ask(self, analyses, accountant: str, which: str, x: np.ndarray,
             pairs: list[BoundPair], declined: list[tuple[str, str]]) -> list[NotApplicable]:
        errors: list[NotApplicable] = []
        for acc_name, an in analyses:
            try:
                pairs.append(getattr(an, which)(x))
            except NotApplicable as exc:
                if accountant != "best":
                    raise
                # (without its traceback: its frames hold this list, a cycle keeping the
                # analysis's PLDs alive until a full garbage collection, issue 27)
                errors.append(exc.with_traceback(None))
                declined.append((acc_name, str(exc)))
        return errors

    @limit_blas
    def _query(self, accountant: str, which: str, x: np.ndarray
               ) -> tuple[list[BoundPair], tuple[tuple[str, str], ...]]:
        """Ask the accountants; with "best", those whose answers are conversions of a Rényi-DP
        curve (capability "rdp_accountant") only when they can win
        (:mod:`privamp.accounting.screening`)."""
        found = applicable(self, "best") if accountant == "best" else None  # (once a query)
        later = (_screened(found) + floor_screened(found) if found is not None else ())
        analyses, declined = self._analyses(accountant, skip=later, accountants=found)
        pairs: list[BoundPair] = []
        errors = self._ask(analyses, accountant, which, x, pairs, declined)
        uppers = [np.asarray(u.value, dtype=float) for u, _ in pairs if u is not None]
        for acc in later:
            if uppers and rdp_ruled_out(self, [an for _, an in analyses], which, x,
                                        np.min(np.broadcast_arrays(*uppers), axis=0)):
                continue
            built = self._built(acc, accountant)
            if isinstance(built, NotApplicable):
                errors.append(built)
                declined.append((acc.name, str(built)))
                continue
            errors += self._ask([(acc.name, built)], accountant, which, x, pairs, declined)
        if not pairs:
            raise errors[0] if errors else NotApplicable(
                "; ".join(f"{name}: {why}" for name, why in declined) or "no accountant answered")
        return pairs, tuple(declined)

    def epsilon(self, delta: float | np.ndarray, accountant: str = "best") -> Guarantee:
        """Bounds on the run's epsilon at ``delta`` (in (0, 1), scalar or array).

        Raises:
            NotApplicable: no accountant (or not the one named) handles this run.
            ValueError: ``delta`` outside (0, 1).
        """
        d = check_delta(delta)
        pairs, declined = self._query(accountant, "epsilon", d.reshape(-1) if d.ndim else d)
        return reshaped(combine_pairs(pairs, d.shape if d.ndim < 2 else (d.size,), declined),
                        d.shape)

    def delta(self, epsilon: float | np.ndarray, accountant: str = "best") -> Guarantee:
        """Bounds on the run's delta at ``epsilon`` (>= 0, scalar or array).

        Raises:
            NotApplicable: no accountant (or not the one named) handles this run.
            ValueError: ``epsilon`` negative or NaN.
        """
        e = check_epsilon(epsilon)
        pairs, declined = self._query(accountant, "delta", e.reshape(-1) if e.ndim else e)
        return reshaped(combine_pairs(pairs, e.shape if e.ndim < 2 else (e.size,), declined),
                        e.shape)

    @limit_blas
    def epsilon_curve(self, delta: float, steps: Sequence[int] | None = None,
                      accountant: str = "best") -> Guarantee:
        """Bounds on epsilon at ``delta`` after each number of steps in ``steps``: a Guarantee
        whose upper and lower values are arrays aligned with ``steps`` (default: the end of
        each epoch when the run was given in epochs or its scheme composes epochs, else 100
        evenly spaced checkpoints up to the run's length).

        One query: an analysis offering ``curve`` (the Poisson PLD accountant) composes each
        checkpoint from the previous one
        (:meth:`~privamp.accountants.poisson.PLDAnalysis.curve`); with "best" the RDP
        accountant is asked only at checkpoints where it can win
        (:mod:`privamp.accounting.screening`); other accountants answer checkpoint by
        checkpoint.  A checkpoint with no lower bound gets the trivial lower bound 0.

        Raises:
            NotApplicable: no accountant (or not the one named) answers some checkpoint.
            ValueError: ``delta`` outside (0, 1), or steps not positive integers.
        """
        d = check_delta(delta)
        if d.size != 1:
            raise ValueError("delta must be one number for epsilon_curve")
        d = d.reshape(())
        ts = self._checkpoints(steps)
        order = np.unique(ts)
        pairs = self._curve_pairs(order, d, accountant)
        at = np.searchsorted(order, ts)
        ups, los, srcs_u, srcs_l = [], [], [], []
        for ps in pairs:
            if len(ps) == 1 and ps[0][0] is not None and ps[0][0].kind == "upper":
                up, lo = ps[0]  # one accountant answered: its pair as it is (as combine_pairs)
            else:
                g = combine_pairs(ps, ())
                up, lo = g.upper, g.lower
            up = cast(Bound, up)  # every pair combined here has an upper side
            ups.append(float(up.value))
            srcs_u.append(up.source)
            los.append(0.0 if lo is None else float(lo.value))
            srcs_l.append("trivial bound 0" if lo is None else lo.source)
        upper = Bound(np.asarray(ups)[at], "upper", "; ".join(dict.fromkeys(srcs_u)))
        lower = Bound(np.asarray(los)[at], "lower", "; ".join(dict.fromkeys(srcs_l)))
        return Guarantee(upper, lower)

    def _checkpoints(self, steps: Sequence[int] | None) -> np.ndarray:
        if steps is None:
            assert self.steps is not None  # set by __post_init__ (from steps or epochs)
            per = None
            try:
                per = float(self.scheme.steps_per_epoch)
            except (NotImplementedError, ValueError):
                per = None
            if per and (self.epochs is not None or self.scheme.per_epoch) and \
                    self.steps / per <= 1000:
                ends = np.round(per * np.arange(1, math.ceil(self.steps / per - 1e-9) + 1))
                return np.unique(np.clip(ends, 1, self.steps).astype(int))
            return np.unique(np.round(np.linspace(self.steps / 100, self.steps, 100))
                             .clip(1).astype(int))
        ts = np.asarray(steps)
        if ts.ndim != 1 or not ts.size or not np.all(np.isfinite(ts)) or \
                np.any(ts != np.round(ts)) or np.any(ts < 1):
            raise ValueError("steps must be a non-empty sequence of integers >= 1")
        return ts.astype(int)

    def _at(self, t: int) -> Training:
        return Training(self.mechanism, self.scheme, steps=int(t), relation=self.relation)

    def _curve_pairs(self, order: np.ndarray, d: np.ndarray, accountant: str
                     ) -> list[list[BoundPair]]:
        """Per checkpoint, the (upper, lower) pairs of the accountants that answer."""
        last = self._at(int(order[-1])) if order[-1] != self.steps else self
        screened = _screened(applicable(last, "best"))
        chosen = applicable(last, accountant)
        if chosen and all(a in screened for a in chosen):  # an RDP accountant by name
            # strict=True: every checkpoint answers
            return [[cast(BoundPair, pair)] for pair in self._rdp_curve(order, d, strict=True)]
        fast: Any = None  # a RunAnalysis offering the "curve" capability
        others: list[tuple[RunAccountant, RunAnalysis]] = []  # asked checkpoint by checkpoint
        for acc in chosen:
            if accountant == "best" and acc in screened:
                continue
            built = last._built(acc, accountant)
            if isinstance(built, NotApplicable):
                continue
            if fast is None and offers(built, "curve"):
                fast = built
            else:
                others.append((acc, built))
        if fast is None or any(offers(an, "curve") for _, an in others):
            return [self._at(int(t))._query(accountant, "epsilon", d)[0] for t in order]
        rdp_ok = accountant == "best" and bool(screened)
        # an accountant giving no bound at all at this delta for the whole run (e.g. a lower
        # accountant answering tiny deltas only) is not built at every checkpoint: leaving it
        # out only leaves out bounds, so every checkpoint stays certified (a heuristic for
        # speed: one asked by name is always asked)
        if accountant == "best":
            others = [(a, an) for a, an in others
                      if any(u is not None or lo is not None
                             for u, lo in last._pairs_of([a], accountant, d))]

        bases: list[_Floor] = []

        def keep_floor(t: int, pld, res) -> _Floor | None:
            """Keep the floor of checkpoints t > 2 t0 (t0 the last kept): about
            log2(checkpoints) PLDs kept, each the base of the floors up to twice its t."""
            if rdp_ok and not isinstance(res, NotApplicable) and (
                    not bases or t > 2 * bases[-1].steps):
                bases.append(_Floor(pld, t))
            return bases[-1] if bases else None

        results, floors = fast.curve(order, "epsilon", d, hook=keep_floor)
        needs = self._screen(order, results, floors, d) if rdp_ok else [False] * len(order)
        wanted = [int(t) for t, res, need in zip(order, results, needs, strict=True)
                  if need and not isinstance(res, NotApplicable)]
        rdp = dict(zip(wanted, self._rdp_curve(np.array(wanted, dtype=int), d), strict=True)) \
            if wanted else {}
        out = []
        wide = _WIDE_REASKS  # shared answers this wide are re-asked alone (a few per curve)
        for t, res in zip(order, results, strict=True):
            if isinstance(res, NotApplicable):
                # the shared composition declined here (e.g. its float allowance at this delta):
                # the checkpoint is asked as a run of its own, like a single query
                out.append(self._at(int(t))._query(accountant, "epsilon", d)[0])
                continue
            ps = [res]
            if wide and _too_wide(res):
                # nearly declined (its float allowance near delta: q 0.05, sigma 0.8, T 100,
                # delta 1e-12 gave [11.97, 12.61], the run alone [12.12, 12.24]); both are
                # certified, so adding the run's own bounds only tightens
                wide -= 1
                ps += self._at(int(t))._query(accountant, "epsilon", d)[0]
            if rdp.get(int(t)) is not None:
                ps.append(rdp[int(t)])
            if others:  # e.g. a lower-only accountant (tiny deltas): asked at this checkpoint
                ps += self._at(int(t))._pairs_of([a for a, _ in others], accountant, d)
            out.append(ps)
        return out

    def _pairs_of(self, accs: list[RunAccountant], accountant: str, d: np.ndarray
                  ) -> list[BoundPair]:
        """The epsilon answers at ``d`` of the accountants ``accs`` for this run (those
        declining it left out, or raised when one is asked by name)."""
        built = [(a.name, self._built(a, accountant)) for a in accs]
        pairs: list[BoundPair] = []
        self._ask([(n, an) for n, an in built if not isinstance(an, NotApplicable)],
                  accountant, "epsilon", d, pairs, [])
        return pairs

    def _screen(self, order: np.ndarray, results: list, floors: list, d: np.ndarray
                ) -> list[bool]:
        """Per checkpoint, whether the RDP accountant might beat the PLD's upper bound there
        (:mod:`privamp.accounting.screening`).  Every checkpoint is screened from the first
        floor base t0 in one batch (:func:`~privamp.accounting.screening.rdp_ruled_out_scaled`),
        those left undecided from their own base (the latest kept at or before them), each
        with its own floor ``(t / t0) floor_t0`` against its own PLD upper bound: the run's
        pair after t steps is the t-fold product of one step's, and Rényi divergences add up
        over products (van Erven and Harremoës 2014, Thm 28), so D_alpha after t steps is
        exactly (t / t0) times D_alpha after t0 steps, and so is any floor on it (the scale is
        rounded down by 4e-16 relative, more than its three roundings)."""
        need = [isinstance(r, NotApplicable) or f is None for r, f in zip(results, floors,
                                                                          strict=True)]

        def screen(base: _Floor, idx: list[int]) -> None:
            ts = [int(order[i]) for i in idx]
            scales = np.array([t / base.steps for t in ts]) * (1.0 - 4e-16)  # rounded down
            targets = np.array([float(np.max(results[i][0].value)) for i in idx])
            out = rdp_ruled_out_scaled([self._at(t) for t in ts], base.renyi_floor, scales,
                                       float(d), targets)
            for i, ruled_out in zip(idx, out, strict=True):
                need[i] = not ruled_out

        todo = [i for i in range(len(order)) if not need[i]]
        if todo:  # first every checkpoint from the first base, then the rest from their own
            screen(floors[todo[0]], todo)
        groups: dict[int, list[int]] = {}
        for i in todo:
            if need[i] and floors[i] is not floors[todo[0]]:
                groups.setdefault(id(floors[i]), []).append(i)
        for idx in groups.values():
            screen(floors[idx[0]], idx)
        return need

    def _rdp_curve(self, order: np.ndarray, d: np.ndarray, strict: bool = False
                   ) -> list[BoundPair | None]:
        """The "rdp" accountant after each number of steps in ``order``, from one one-step
        curve (:meth:`~privamp.accountants.rdp.RdpAccountant.with_steps`); None where it
        declines (raised if
        ``strict``)."""
        out: list[BoundPair | None] = []
        base = None
        for t in order:
            try:
                run_t = self._at(int(t))
                n = compositions(run_t)
                if base is None:
                    accs = _screened(applicable(run_t, "best"))
                    if not accs:
                        raise NotApplicable(f"no Rényi-DP accountant applies to {run_t}")
                    an = run_t._built(accs[0], "rdp")
                    if isinstance(an, NotApplicable):
                        raise an
                    base = an.rdp_accountant()
                out.append(RdpRunAnalysis(acc=base.with_steps(n)).epsilon(d))
            except NotApplicable:
                if strict:
                    raise
                out.append(None)
        return out

    def tradeoff(self, alphas) -> Tradeoff:
        """Certified trade-off curves (f-DP) at type-I errors ``alphas``
        (:func:`privamp.accounting.tradeoff.tradeoff`)."""
        return tradeoff(self, alphas)

    def tpr_at_fpr(self, fprs, order: str = "either") -> Guarantee:
        """Bounds on an attack's true-positive rate at ``fprs`` (:func:`tpr_at_fpr`)."""
        return tpr_at_fpr(self, fprs, order)

    def gdp_mu(self, tolerance: float = 1e-9) -> GdpBound:
        """A certified Gaussian-DP mu (:func:`privamp.accounting.tradeoff.gdp_mu`)."""
        return gdp_mu(self, tolerance)

    def __add__(self, other):
        """``run_a + run_b``: the two runs one after the other (:func:`privamp.compose`)."""
        from .composition import compose

        return compose(self, other)

    def __str__(self) -> str:
        return (
            f"Training({self.mechanism}, {self.scheme}, steps={self.steps}, "
            f"relation={self.relation})"
        )


def _screened(found: list[RunAccountant]) -> tuple[RunAccountant, ...]:
    """The accountants among ``found`` (those applicable to a run with "best") whose answers
    are the conversion of a Rényi-DP curve (capability "rdp_accountant"): "best" asks them
    last, where the screening rule (:mod:`privamp.accounting.screening`) does not rule them
    out."""
    return tuple(a for a in found if "rdp_accountant" in a.capabilities)


class _Floor:
    """The Rényi floor of the PLD after ``steps`` steps, for the screening rule, memoised by
    the orders asked (the screening asks the same orders at many checkpoints)."""

    def __init__(self, pld, steps: int) -> None:
        self.pld, self.steps = pld, int(steps)
        self._memo: dict[bytes, np.ndarray] = {}

    def renyi_floor(self, alpha: np.ndarray) -> np.ndarray:
        a = np.ascontiguousarray(alpha, dtype=float)
        key = a.tobytes() + str(a.shape).encode()
        if key not in self._memo:
            self._memo[key] = two_sided_renyi_floor(self.pld, a)
        return self._memo[key]


def _pick(bounds: list[Bound], upper: bool, shape: tuple) -> Bound | None:
    if not bounds:
        return None
    vals = np.stack([np.broadcast_to(np.asarray(b.value, dtype=float), shape) for b in bounds])
    idx = np.argmin(vals, axis=0) if upper else np.argmax(vals, axis=0)
    flat = np.atleast_1d(idx).ravel()
    best = np.take_along_axis(vals, idx[None, ...] if vals.ndim > 1 else np.array([idx]), 0)[0]
    winners = sorted({int(i) for i in flat})
    kinds = {bounds[i].kind for i in winners}
    kind: Kind = "exact" if kinds == {"exact"} else ("upper" if upper else "lower")
    source = "; ".join(dict.fromkeys(bounds[i].source for i in winners))
    value = float(best) if shape == () else best.reshape(shape)
    return Bound(value, kind, source)


def combine_pairs(
    pairs: list[BoundPair], shape: tuple, declined: tuple[tuple[str, str], ...] = ()
) -> Guarantee:
    """The accountants' (upper, lower) answers as one Guarantee: the smallest upper and the
    largest lower bound at each point (an exact answer is both).

    Args:
        pairs: one (upper or None, lower or None) pair per accountant that answered.
        shape: the shape of the query (``()`` for a scalar).
        declined: (accountant, reason) for each accountant that declined.

    Returns:
        The combined Guarantee, carrying ``declined``.

    Raises:
        NotApplicable: no accountant gave any bound.
    """
    uppers = [u for u, _ in pairs if u is not None]
    lowers = [lo for _, lo in pairs if lo is not None]
    upper = _pick(uppers, True, shape)
    lower = _pick(lowers, False, shape)
    if upper is not None and upper.kind == "exact":
        lower = upper
    if upper is None and lower is None:
        raise NotApplicable("no accountant gave a bound for this run" + "".join(
            f"; {name} declined: {why}" for name, why in declined))
    return Guarantee(upper, lower, declined)


#: re-asks per curve of checkpoints whose shared interval is wider than ``_WIDE_REL``
_WIDE_REASKS = 4
_WIDE_REL = 1e-2


def _too_wide(res) -> bool:
    """Whether a checkpoint's (upper, lower) interval is wider than ``_WIDE_REL`` of its
    upper bound, with a positive lower bound (a [0, x] interval is left as it is)."""
    up, lo = res
    if up is None or lo is None:
        return False
    u = np.asarray(up.value, dtype=float)
    low = np.asarray(lo.value, dtype=float)
    return bool(np.any((low > 0) & np.isfinite(u) & (u - low > _WIDE_REL * u)))
