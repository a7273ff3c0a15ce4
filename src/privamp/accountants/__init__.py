"""The accounting layer's protocol and its generic accountants (not papers).

* :mod:`.registry`: the registries (one-step Rényi-DP results, whole-run accountants) and
  the run-accountant protocol (:class:`RunAnalysis` and its capabilities).
* :mod:`.grid`: the automatic grid of the PLD analyses.
* :mod:`.poisson`: the Poisson PLD accountant ("pld" for Poisson runs).
* :mod:`.rdp`: the Rényi-DP accountant ("rdp") and :class:`RdpAccountant`.
* :mod:`.phases`: composition of whole runs' PLDs (the phases of :func:`privamp.compose`).
* :mod:`.pld_run`: shared refusals and the checkpoints of an epsilon curve.
* :mod:`.never_sampled`: the never-sampled bound ("never-sampled": under Poisson sampling
  delta(eps) <= the probability that the record is ever drawn).
* :mod:`.participation`: the participation bound ("participation": each record takes part in
  at most m releases, the unsampled m-fold composition).

docs/architecture.md walks through the layers and the protocol.
"""

from . import (
    grid,
    never_sampled,
    participation,
    phases,
    pld_run,
    poisson,
    rdp,
    registry,
)
from .grid import auto_grid
from .phases import ComposedPLDAnalysis, compose_plds
from .poisson import PLDAnalysis, pld_analysis, poisson_pairs
from .rdp import RdpAccountant, RdpRunAnalysis, compositions, pure_dp_epsilon
from .registry import (
    ACCOUNTANTS,
    CAPABILITIES,
    REGISTRY,
    BoundPair,
    RdpCurve,
    RdpMethod,
    RunAccountant,
    RunAnalysis,
    applicable,
    offers,
    rdp_curve,
    rdp_method,
    rdp_methods,
    run_accountant,
)

__all__ = [
    "grid", "never_sampled", "participation", "phases", "pld_run", "poisson",
    "rdp", "registry",
    "auto_grid", "ComposedPLDAnalysis", "compose_plds", "PLDAnalysis", "pld_analysis",
    "poisson_pairs", "RdpAccountant", "RdpRunAnalysis", "compositions", "pure_dp_epsilon",
    "ACCOUNTANTS", "CAPABILITIES", "REGISTRY", "BoundPair", "RdpCurve", "RdpMethod",
    "RunAccountant", "RunAnalysis", "applicable", "offers", "rdp_curve", "rdp_method",
    "rdp_methods", "run_accountant",
]
