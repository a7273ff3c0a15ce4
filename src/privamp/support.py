"""The support matrix, generated from the registries: for each sampling scheme, relation and
mechanism, which one-step Rényi-DP results and which whole-run accountants apply.

``privamp support`` prints it; ``docs/support.md`` is this output (a test keeps it current).
"""

from __future__ import annotations

from .accounting.training import Training
from .mechanisms.base import Mechanism
from .mechanisms.gaussian import Gaussian
from .mechanisms.laplace import Laplace
from .mechanisms.randomized_response import RandomizedResponse
from .sampling.relations import AddRemove, Relation, Substitution, ZeroOut
from .sampling.schemes import (
    BalancedIteration,
    Deterministic,
    ModelSplit,
    Poisson,
    Scheme,
    Shuffle,
    WithoutReplacement,
    WithReplacement,
)
from .theorems.registry import ACCOUNTANTS, REGISTRY

__all__ = [
    "support_rows",
    "support_markdown",
]


_MECHANISMS: tuple[Mechanism, ...] = (Gaussian(1.0), Laplace(1.0), RandomizedResponse(0.75))


_SCHEMES: tuple[Scheme, ...] = (
    Poisson(0.01),
    WithoutReplacement(10, 1000),
    WithReplacement(10, 1000),
    Deterministic(10, 1000),
    Shuffle(10, 1000),
    BalancedIteration(100, 1),
    ModelSplit(4, 1),
)


_RELATIONS: tuple[Relation, ...] = (
    AddRemove(),
    ZeroOut(),
    Substitution(),
    AddRemove(group=4),
    Substitution(group=4),
)


def support_rows() -> list[tuple[str, str, str, list[str], list[str]]]:
    """(scheme, relation, mechanism, RDP methods, run accountants) for every combination that
    has at least one of them."""
    rows = []
    for scheme in _SCHEMES:
        for relation in _RELATIONS:
            for mech in _MECHANISMS:
                methods = [m.name for m in REGISTRY.values() if m.applies(mech, scheme, relation)]
                run = Training(mech, scheme, steps=int(scheme.steps_per_epoch), relation=relation)
                accs = sorted({a.name for accs in ACCOUNTANTS.values() for a in accs
                               if a.applies(run)})
                if methods or accs:
                    rows.append((scheme.name, str(relation), mech.name, methods, accs))
    return rows


def support_markdown() -> str:
    lines = [
        "# Support matrix",
        "",
        "Generated from the code (`privamp support`): which one-step Rényi-DP results",
        "(`pa.rdp(..., method=NAME)`) and which whole-run accountants",
        "(`Training.epsilon(..., accountant=NAME)`) apply to each setting. `best` uses all of",
        "them. Sources of each method: `pa.rdp_methods(mechanism, scheme, relation)`.",
        "",
        "| scheme | relation | mechanism | RDP methods | run accountants |",
        "|---|---|---|---|---|",
    ]
    for scheme, rel, mech, methods, accs in support_rows():
        m = ", ".join(f"`{x}`" for x in methods) or "-"
        a = ", ".join(f"`{x}`" for x in accs) or "-"
        lines.append(f"| {scheme} | {rel} | {mech} | {m} | {a} |")
    lines += ["", "## RDP methods and their sources", "", "| method | source |", "|---|---|"]
    for m in sorted(REGISTRY.values(), key=lambda m: m.name):
        lines.append(f"| `{m.name}` | {m.source} |")
    return "\n".join(lines) + "\n"

