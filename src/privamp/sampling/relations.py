"""Neighbouring relations between datasets, with a group size K (datasets at distance K)."""

from __future__ import annotations

from dataclasses import dataclass

from .._validation import check_int

__all__ = ["Relation", "AddRemove", "Substitution", "ZeroOut", "HybridSubstitution"]


@dataclass(frozen=True)
class Relation:
    """Base class: ``group`` is the number of records in which the two datasets differ."""

    group: int = 1
    name = "relation"

    def __post_init__(self) -> None:
        object.__setattr__(self, "group", check_int("group", self.group, minimum=1))

    def __str__(self) -> str:
        g = "" if self.group == 1 else f", group={self.group}"
        return f"{self.name}{g}"


@dataclass(frozen=True)
class AddRemove(Relation):
    """Datasets differ by the insertion or removal of ``group`` records."""

    name = "add/remove"


@dataclass(frozen=True)
class Substitution(Relation):
    """Datasets of the same size differ in ``group`` records (replace-one)."""

    name = "substitution"


@dataclass(frozen=True)
class ZeroOut(Relation):
    """One dataset has ``group`` records replaced by a null record whose gradient is zero
    (Chua et al. 2024, Kairouz et al. 2021); for clipped gradients this behaves like
    add/remove with sensitivity C."""

    name = "zero-out"


@dataclass(frozen=True)
class HybridSubstitution(Relation):
    """Datasets of the same size differ in ``group`` records (substitution), while the
    mechanism's ``sensitivity`` is measured for the insertion or removal of one batch element
    (Schuchardt et al. 2024, App. F.2, "hybrid relations"): for gradients clipped to C, use
    sensitivity C (not 2C) with this relation."""

    name = "hybrid-substitution"
