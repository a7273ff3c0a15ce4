"""Amplification results, one module per paper family.  Importing this package registers every
result with the dispatcher (:mod:`privamp.amplification.registry`).

* :mod:`.poisson` — Poisson subsampling: sampled Gaussian (Mironov, Talwar, Zhang 2019), exact
  Poisson RDP of any dominating pair, Zhu & Wang 2019.
* :mod:`.profiles` — (eps, delta) amplification, Balle, Barthe, Gaboardi 2018.
* :mod:`.rdp` — the optimal-transport framework of Schuchardt et al. 2024 and the prior
  bounds it generalises.
* :mod:`.partitioning` — model splitting, dropout, balanced iteration (Dong, Chen, Ozgur 2025).
* :mod:`.batching` — deterministic / Poisson / shuffled batches (Chua et al. 2024).
"""

from . import batching, partitioning, poisson, profiles, rdp  # noqa: F401  (registration)
from .registry import REGISTRY, RdpCurve, RdpMethod, rdp_curve, rdp_method, rdp_methods
from .registry import rdp as rdp_of

__all__ = ["REGISTRY", "RdpCurve", "RdpMethod", "rdp_curve", "rdp_method", "rdp_methods", "rdp_of"]
