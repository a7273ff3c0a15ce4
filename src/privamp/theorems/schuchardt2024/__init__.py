"""Schuchardt, Stoian, Kosmala, Günnemann 2024 (NeurIPS 2024), "Unified
Mechanism-Specific Amplification by Subsampling and Group Privacy Amplification" (RDP part).

:mod:`.core` holds the registered instances (Thms 3.7, 4.1/4.2, G.1, F.2, F.3);
:mod:`.ot_framework` the general optimal-transport bound (Thms 3.3/3.4) as an API.
Every public name is importable from here.
"""

from . import core
from .core import *  # noqa: F403 - the package re-exports its modules' public names
from .core import __all__ as _core_all
from .core import gaussian_mixture_log_moments

__all__ = ["core", *_core_all, "gaussian_mixture_log_moments"]

from . import ot_framework, relations  # noqa: E402
from .ot_framework import (  # noqa: E402
    ChainEvents,
    ot_coupling_rdp,
    ot_pairwise_rdp,
    ot_rdp,
)

__all__ += ["ot_framework", "relations", "ChainEvents", "ot_rdp", "ot_pairwise_rdp",
            "ot_coupling_rdp"]

from . import group_pld  # noqa: E402
from .group_pld import GroupPLDAnalysis, group_mixture_pairs  # noqa: E402

__all__ += ["group_pld", "GroupPLDAnalysis", "group_mixture_pairs"]
