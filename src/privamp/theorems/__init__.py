"""One module per source, named after it (the same key as docs/<paper>.md and
reproduce/<paper>.py). Each result registers itself in :mod:`.registry` with an applicability
predicate: one-step RDP methods and whole-run accountants alike. Importing this package
imports (and so registers) every result."""

from . import (
    balle2018,
    chua2024,
    chua2025,
    daigavane2022,
    dong2025,
    mironov2017,
    mironov2019,
    poisson_pld,
    rdp_composition,
    schuchardt2024,
    truncated_poisson,
    wang2019,
    zhu_wang2019,
)
from .registry import (
    ACCOUNTANTS,
    REGISTRY,
    RdpCurve,
    RdpMethod,
    RunAnalysis,
    rdp,
    rdp_curve,
    rdp_method,
    rdp_methods,
    run_accountant,
)

__all__ = [
    "balle2018", "chua2024", "chua2025", "daigavane2022", "dong2025", "mironov2017",
    "mironov2019", "poisson_pld", "rdp_composition", "schuchardt2024", "truncated_poisson",
    "wang2019", "zhu_wang2019",
    "ACCOUNTANTS", "REGISTRY", "RdpCurve", "RdpMethod", "RunAnalysis", "rdp", "rdp_curve",
    "rdp_method", "rdp_methods", "run_accountant",
]
