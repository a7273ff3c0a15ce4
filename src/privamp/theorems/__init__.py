"""One module per source, named after it (the same key as docs/<paper>.md and
reproduce/<paper>.py).  Each result registers itself (:mod:`.registry`) with an applicability
predicate: one-step RDP methods and whole-run accountants alike.

Importing this package imports, and so registers, every module under it: they are found by
:func:`pkgutil.walk_packages`, in alphabetical order (a package's own ``__init__`` first), so
a new theorem module is picked up without being listed here.  The generic accountants (the
Poisson PLD, the RDP composition) are not papers: they live in :mod:`privamp.accountants`.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from .registry import (
    ACCOUNTANTS,
    REGISTRY,
    RdpCurve,
    RdpMethod,
    RunAnalysis,
    rdp_curve,
    rdp_method,
    rdp_methods,
    run_accountant,
)


def _discover() -> dict[str, ModuleType]:
    """Import every module of this package (depth first, alphabetical); the top-level
    ones by name."""
    found: dict[str, ModuleType] = {}
    for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        module = importlib.import_module(info.name)
        short = info.name.removeprefix(f"{__name__}.")
        if "." not in short and short != "registry":
            found[short] = module
    return found


#: the theorem modules (top level: papers and packages of papers), by key
MODULES: dict[str, ModuleType] = _discover()
globals().update(MODULES)

__all__ = [
    *MODULES,
    "MODULES", "ACCOUNTANTS", "REGISTRY", "RdpCurve", "RdpMethod", "RunAnalysis",
    "rdp_curve", "rdp_method", "rdp_methods", "run_accountant",
]
