"""The support matrix, generated from the registries: for each sampling scheme, relation and
mechanism, which one-step Rényi-DP results and which whole-run accountants apply, with a
status (legend in :data:`LEGEND`), and one row per registered result.  Results registered by
any module appear automatically.

``privamp support`` prints it; ``docs/support.md`` is this output (a test keeps it current).
"""

from __future__ import annotations

from .accountants.registry import ACCOUNTANTS, REGISTRY
from .accounting.training import Training
from .mechanisms.base import Mechanism
from .mechanisms.gaussian import Gaussian
from .mechanisms.laplace import Laplace
from .mechanisms.randomized_response import RandomizedResponse
from .sampling.registry import scheme_entries
from .sampling.relations import AddRemove, HybridSubstitution, Relation, Substitution, ZeroOut
from .sampling.schemes import Scheme

__all__ = [
    "LEGEND",
    "support_rows",
    "support_markdown",
]


LEGEND = {
    "supported": "a tight one-step result (exact divergence of the worst pair) or a "
                 "scheme-specific whole-run accountant (PLD / closed form) applies",
    "partial": "only sound upper bounds that are not known to be tight: generic RDP results "
               "composed by the `rdp` accountant (group privacy, conversions, reductions), "
               "or the `participation` bound (the unsampled mechanism, m releases)",
    "not yet": "privamp refuses (`NotApplicable`): no result covers this setting",
}


#: generic run accountants (not scheme-specific): those composing one-step RDP curves, and
#: the participation bound (the unsampled mechanism composed m times)
_RDP_COMPOSITION = ("rdp", "black-box-group", "participation")


_MECHANISMS: tuple[Mechanism, ...] = (Gaussian(1.0), Laplace(1.0), RandomizedResponse(0.75))


def _schemes() -> list[tuple[str, Scheme]]:
    """(label, example) of every registered scheme (privamp.sampling.registry)."""
    return [(e.label, e.example_value()) for e in scheme_entries()]


_RELATIONS: tuple[Relation, ...] = (
    AddRemove(),
    ZeroOut(),
    Substitution(),
    HybridSubstitution(),
    AddRemove(group=4),
    ZeroOut(group=4),
    Substitution(group=4),
)


def _ours(func) -> bool:
    """Results registered by privamp's own modules (test suites register stand-ins)."""
    return getattr(func, "__module__", "").startswith("privamp.")


def _methods():
    return [m for m in REGISTRY.values() if _ours(m.func)]


def _accountants():
    return [a for accs in ACCOUNTANTS.values() for a in accs if _ours(a.build)]


def _status(methods: list[str], accs: list[str]) -> str:
    if any(REGISTRY[m].tight for m in methods) or any(a not in _RDP_COMPOSITION for a in accs):
        return "supported"
    return "partial" if methods or accs else "not yet"


def support_rows() -> list[tuple[str, str, str, str, list[str], list[str]]]:
    """(scheme, relation, mechanism, status, RDP methods, run accountants) for every
    combination of the sample schemes, relations and mechanisms."""
    rows = []
    for label, scheme in _schemes():
        for relation in _RELATIONS:
            for mech in _MECHANISMS:
                methods = [m.name for m in _methods() if m.applies(mech, scheme, relation)]
                run = Training(mech, scheme, steps=int(scheme.steps_per_epoch), relation=relation)
                accs = sorted({a.name for a in _accountants() if a.applies(run)})
                rows.append((label, str(relation), mech.name, _status(methods, accs),
                             methods, accs))
    return rows


def _settings_of(rows, key: str, col: int) -> str:
    hits = sorted({f"{s} / {r}" for s, r, _, _, *lists in rows if key in lists[col]})
    return "; ".join(hits) if hits else "(none of the sample settings)"


def support_markdown() -> str:
    rows = support_rows()
    lines = [
        "# Support matrix",
        "",
        "Generated from the code (`privamp support`): which one-step Rényi-DP results",
        "(`pa.rdp(..., method=NAME)`) and which whole-run accountants",
        "(`Training.epsilon(..., accountant=NAME)`) apply to each setting. `best` uses all of",
        "them (RDP methods marked *not in best* only when named). Sources of each method:",
        "`pa.rdp_methods(mechanism, scheme, relation)`.",
        "",
        "## Legend",
        "",
        "| status | meaning |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in LEGEND.items()],
        "",
        "## Settings",
        "",
        "| scheme | relation | mechanism | status | RDP methods | run accountants |",
        "|---|---|---|---|---|---|",
    ]
    missing: dict[tuple[str, str], list[str]] = {}
    for scheme, rel, mech, status, methods, accs in rows:
        if status == "not yet":
            missing.setdefault((scheme, rel), []).append(mech)
            continue
        m = ", ".join(f"`{x}`" for x in methods) or "-"
        a = ", ".join(f"`{x}`" for x in accs) or "-"
        lines.append(f"| {scheme} | {rel} | {mech} | {status} | {m} | {a} |")
    lines += ["", "Not yet (no result applies):", ""]
    lines += [f"- {s} / {r}: {', '.join(ms)}" for (s, r), ms in missing.items()]
    lines += ["", "## Registered RDP methods", "",
              "| method | source | tight | in best | sample settings |", "|---|---|---|---|---|"]
    for m in sorted(_methods(), key=lambda m: m.name):
        lines.append(f"| `{m.name}` | {m.source} | {'yes' if m.tight else 'no'} | "
                     f"{'yes' if m.in_best else 'not in best'} | {_settings_of(rows, m.name, 0)} |")
    lines += ["", "## Registered run accountants", "",
              "| accountant | description | sample settings |", "|---|---|---|"]
    for name in sorted({a.name for a in _accountants()}):
        desc = " / ".join(dict.fromkeys(a.description for a in _accountants()
                                        if a.name == name and a.description))
        lines.append(f"| `{name}` | {desc or '-'} | {_settings_of(rows, name, 1)} |")
    return "\n".join(lines) + "\n"
