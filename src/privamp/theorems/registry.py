"""What a theorem module registers with: the names of :mod:`privamp.accountants.registry`
(the registries and the run-accountant protocol live there, one layer below the papers).

A theorem module writes ``from .registry import rdp_method`` (or ``run_accountant``,
``RunAnalysis``, ``BoundPair``) and is picked up by :mod:`privamp.theorems` without being
listed anywhere (docs/architecture.md, "add a theorem")."""

from __future__ import annotations

from ..accountants.registry import (
    ACCOUNTANTS,
    REGISTRY,
    BoundPair,
    RdpCurve,
    RdpMethod,
    RunAccountant,
    RunAnalysis,
    applicable,
    rdp_curve,
    rdp_method,
    rdp_methods,
    rdp_values,
    run_accountant,
)

__all__ = [
    "ACCOUNTANTS", "REGISTRY", "BoundPair", "RdpCurve", "RdpMethod", "RunAccountant",
    "RunAnalysis", "applicable", "rdp_curve", "rdp_method", "rdp_methods",
    "run_accountant", "rdp_values",
]
