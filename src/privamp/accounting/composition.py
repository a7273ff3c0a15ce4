"""Runs made of phases: ``pa.compose(run_a, run_b, ...)`` (also ``run_a + run_b``).

Phases may differ in mechanism, noise, rate, steps and scheme; they must share the
neighbouring relation.  The accountants are asked for capabilities, not by name
(:mod:`privamp.accountants.registry`):

* PLD: when every phase has an analysis offering ``pld(h)`` (Poisson, fixed-size without /
  with replacement, shuffling, deterministic, balanced iteration ...), the phases' whole-run
  PLDs are composed on one grid (:func:`privamp.accountants.phases.compose_plds`): every
  phase is asked for its PLD on h, the finest step the phases pick for themselves (a phase
  may answer on a multiple of h), then all are brought to the coarsest;
* RDP: when every phase has an analysis offering ``rdp_accountant()``, the phases' curves
  are summed at common orders (Mironov 2017, arXiv:1702.07476, Prop. 1) and converted once
  (Balle et al. 2020, arXiv:1905.09982, Thm 21).

"best" runs the PLD composition and the RDP one only where it can win
(:mod:`privamp.accounting.screening`), and keeps the smallest upper and largest lower bound,
each labelled with its source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np

from .._validation import check_delta, check_epsilon
from ..accountants.phases import ComposedPLDAnalysis
from ..accountants.rdp import RdpAccountant, RdpRunAnalysis
from ..accountants.registry import BoundPair
from ..errors import NotApplicable
from ..numerics.threads import limit_blas
from ..results import Bound, Guarantee, reshaped
from .screening import rdp_ruled_out
from .tradeoff import GdpBound, Tradeoff, gdp_mu, tpr_at_fpr, tradeoff
from .training import Training, combine_pairs

__all__ = [
    "Composition",
    "compose",
]


ACCOUNTANTS = ("best", "pld", "rdp")


#: the privacy loss at which the candidate PLDs of one phase are ranked
_RANK_EPSILON = 1.0


def _tightest_first(found: list) -> list:
    """The candidates ``(source, analysis, step)`` of one phase, the one whose phase-alone
    upper delta at epsilon 1 is smallest first (any of them is a valid dominating side, so
    the choice only affects tightness: e.g. under hybrid substitution the antipodal pair of
    theorems/poisson_substitution.py beats Balle et al.'s); a candidate that cannot answer
    there keeps its place after the ranked ones."""
    if len(found) < 2:
        return found

    def upper(item) -> float:
        try:
            up, _ = item[1].delta(_RANK_EPSILON)
        except NotApplicable:
            return math.inf
        return math.inf if up is None else float(up.value)

    return sorted(found, key=upper)


@dataclass(frozen=True)
class Composition:
    """Phases run one after the other on the same data (a history of training runs)."""

    phases: tuple[Training, ...]

    def __post_init__(self) -> None:
        phases = tuple(self.phases)
        if not phases:
            raise ValueError("a composition needs at least one phase (a privamp Training)")
        for p in phases:
            if not isinstance(p, Training):
                raise ValueError(f"every phase must be a privamp Training, got {p!r}")
        rel = phases[0].relation
        for p in phases[1:]:
            if p.relation != rel:
                raise ValueError(
                    f"all phases must share the neighbouring relation: {rel} and {p.relation}")
        object.__setattr__(self, "phases", phases)

    @property
    def relation(self):
        return self.phases[0].relation

    def __add__(self, other: Training | Composition) -> Composition:
        return compose(self, other)

    # ------------------------------------------------------------------------------------
    def _pld(self) -> ComposedPLDAnalysis:
        live = [p for p in self.phases if getattr(p.scheme, "rate", None) != 0.0]
        if not live:
            raise NotApplicable("every phase has rate 0: no privacy loss")
        offered = []
        for p in live:
            found = []
            for acc, an in p.offering("pld"):
                src = acc.description or acc.name
                try:
                    step = an.grid_step()
                except NotApplicable:
                    step = None  # no step of its own: it takes the common one
                found.append((src, an, step))
            if not found:
                raise NotApplicable(f"no accountant offers the PLD of the phase {p}")
            offered.append(_tightest_first(found))
        steps = [step for found in offered for _, _, step in found if step is not None]
        if not steps:
            raise NotApplicable("no phase's accountant picks a grid step (grid_step)")
        h = min(steps)
        plds, sources = [], []
        for p, found in zip(live, offered, strict=True):
            for src, an, _ in found:
                try:
                    plds.append(an.pld(h))
                    sources.append(src)
                    break
                except NotApplicable:
                    continue
            else:
                raise NotApplicable(f"no accountant gives the PLD of the phase {p} on h = {h}")
        return ComposedPLDAnalysis(plds, sources, h)

    def _rdp(self) -> RdpRunAnalysis:
        acc = RdpAccountant()
        for p in self.phases:
            curves = []
            for _, an in p.offering("rdp_accountant"):
                try:
                    curves.append(an.rdp_accountant())
                except NotApplicable:
                    continue
            if not curves:
                raise NotApplicable(f"no Rényi-DP result applies to the phase {p}")
            acc.extend(curves[0])
        return RdpRunAnalysis(acc=acc)

    def _analysis(self, name: str):
        cache = self.__dict__.setdefault("_built", {})
        if name not in cache:
            try:
                cache[name] = self._pld() if name == "pld" else self._rdp()
            except NotApplicable as exc:
                cache[name] = exc
        return cache[name]

    @limit_blas
    def _query(self, which: str, x: np.ndarray, accountant: str) -> Guarantee:
        if accountant not in ACCOUNTANTS:
            raise ValueError(f"accountant must be one of {', '.join(ACCOUNTANTS)}, "
                             f"got {accountant!r}")
        names = ("pld", "rdp") if accountant == "best" else (accountant,)
        pairs: list[BoundPair] = []
        declined: list[tuple[str, str]] = []
        errors: list[NotApplicable] = []
        for name in names:
            an = self._analysis(name)
            if name == "rdp" and accountant == "best" and pairs and rdp_ruled_out(
                    list(self.phases), [self._analysis("pld")], which, x,
                    np.asarray(cast(Bound, pairs[0][0]).value)):
                continue
            try:
                if isinstance(an, NotApplicable):
                    raise an
                pairs.append(getattr(an, which)(x))
            except NotApplicable as exc:
                errors.append(exc)
                declined.append((name, str(exc)))
        if not pairs:
            raise errors[0]
        return combine_pairs(pairs, np.shape(x), tuple(declined))

    def epsilon(self, delta: float | np.ndarray, accountant: str = "best") -> Guarantee:
        """Bounds on the history's epsilon at ``delta`` (in (0, 1), scalar or array).

        Raises:
            NotApplicable: some phase is one no accountant (or not the one named) composes.
            ValueError: ``delta`` outside (0, 1), or an unknown accountant.
        """
        d = check_delta(delta)
        return reshaped(self._query("epsilon", d.reshape(-1) if d.ndim > 1 else d, accountant),
                        d.shape)

    def delta(self, epsilon: float | np.ndarray, accountant: str = "best") -> Guarantee:
        """Bounds on the history's delta at ``epsilon`` (>= 0, scalar or array).

        Raises:
            NotApplicable: some phase is one no accountant (or not the one named) composes.
            ValueError: ``epsilon`` negative or NaN, or an unknown accountant.
        """
        e = check_epsilon(epsilon)
        return reshaped(self._query("delta", e.reshape(-1) if e.ndim > 1 else e, accountant),
                        e.shape)

    def pld_analysis(self) -> ComposedPLDAnalysis:
        """The phases composed as PLDs on one grid (built once).

        Raises:
            NotApplicable: some phase offers no PLD.
        """
        an = self._analysis("pld")
        if isinstance(an, NotApplicable):
            raise an
        return an

    def tradeoff(self, alphas) -> Tradeoff:
        """Certified trade-off curves (:func:`privamp.accounting.tradeoff.tradeoff`)."""
        return tradeoff(self, alphas)

    def tpr_at_fpr(self, fprs, order: str = "either") -> Guarantee:
        """Bounds on an attack's true-positive rate at ``fprs`` (:func:`tpr_at_fpr`)."""
        return tpr_at_fpr(self, fprs, order)

    def gdp_mu(self, tolerance: float = 1e-9) -> GdpBound:
        """A certified Gaussian-DP mu (:func:`privamp.accounting.tradeoff.gdp_mu`)."""
        return gdp_mu(self, tolerance)

    def __str__(self) -> str:
        return "Composition(" + ", ".join(str(p) for p in self.phases) + ")"


def compose(*runs: Training | Composition) -> Composition:
    """A history made of the given runs one after the other (a Composition's phases are
    spliced in).  ``run_a + run_b`` is the same.

    Raises:
        ValueError: no runs, a non-run argument, or phases under different relations.
    """
    phases: list[Training] = []
    for r in runs:
        if isinstance(r, Composition):
            phases.extend(r.phases)
        elif isinstance(r, Training):
            phases.append(r)
        else:
            raise ValueError(f"compose takes privamp Training runs or Compositions, got {r!r}")
    return Composition(tuple(phases))
