"""privamp: how private is this training run, given how it samples its data?

Tight upper bounds, and certified lower bounds, on the privacy of differentially private
training under Poisson, fixed-size, with-replacement, shuffled, deterministic and balanced
batches, model splitting and dropout — each number labelled with the theorem it came from.

>>> import privamp as pa
>>> run = pa.Training(pa.Gaussian(1.1), pa.Poisson(256 / 60000), steps=14063)
>>> g = run.epsilon(1e-5)          # Guarantee: g.upper, g.lower are Bounds
"""

from . import sampling as _sampling
from . import sweep  # a callable package: pa.sweep(...) runs privamp.sweep.sweep(...)
from . import theorems as _theorems  # noqa: F401  (imports register every result)
from .accountants.poisson import poisson_pairs
from .accountants.rdp import RdpAccountant
from .accountants.registry import rdp_curve, rdp_methods
from .accounting import Calibration, Composition, Training, calibrate, compare, compose
from .accounting.audit import AuditCheck, audit_check
from .accounting.estimate import estimate_delta
from .accounting.tradeoff import Tradeoff, TradeoffCurve
from .errors import NotApplicable
from .integrations.dp_accounting import from_dp_event
from .mechanisms import Gaussian, Laplace, MatrixMechanism, Mechanism, RandomizedResponse
from .pld import PLD, TwoSidedPLD, discretise
from .results import Bound, Estimate, Guarantee
from .sampling import *  # noqa: F403  (relations, Scheme and every registered scheme)
from .sweep import calibration_table  # no Dask until a parallel sweep runs
from .theorems.balle2018.profiles import profile_bound
from .theorems.chua2024 import ABLQ, calibrate_interval
from .theorems.dong2025.rdp import partial_split_rdp
from .theorems.schuchardt2024 import ChainEvents, ot_coupling_rdp, ot_pairwise_rdp, ot_rdp

__version__ = "0.1.0"


def rdp(mechanism, scheme, alpha, relation=None, method="best") -> Bound:
    """Upper bounds on the Rényi-DP epsilon of one step of ``mechanism`` under ``scheme`` at
    the order(s) ``alpha`` (> 1, real): a :class:`Bound` of kind ``"upper"`` whose value has
    the shape of ``alpha`` (``np.asarray(bound)`` gives the array) and whose source names the
    results used.  ``method="best"`` takes, per order, the smallest applicable result; another
    name selects one (see :func:`rdp_methods`).

    Raises:
        NotApplicable: no result (or not the one named) applies to this setting.
        ValueError: an order outside (1, inf) or an unknown method name.
    """
    import numpy as np

    curve = rdp_curve(mechanism, scheme, alpha, relation, method)
    value = curve.epsilon.reshape(np.shape(alpha))
    return Bound(value, "upper", "Rényi DP of one step: " + "; ".join(curve.sources))


def profile(mechanism, scheme, epsilon, relation=None, group="white-box",
            dataset_size=None) -> Bound:
    """Upper bounds on the privacy profile delta(epsilon) of one subsampled release (Balle,
    Barthe, Gaboardi 2018): a :class:`Bound` of kind ``"upper"`` whose value has the shape of
    ``epsilon``; arguments as :func:`profile_bound` (which keeps the kind ``"exact"`` where the
    theorem is tight).

    Raises:
        NotApplicable: no theorem covers this mechanism, scheme and relation.
        ValueError: a negative epsilon or an invalid argument, named in the message.
    """
    b = profile_bound(mechanism, scheme, epsilon, relation, group, dataset_size)
    return Bound(b.value, "upper", b.source)


#: the public names: the sampling schemes and relations (from the scheme registry, see
#: privamp.sampling.registry) and the rest
__all__ = [
    "ABLQ",
    "AuditCheck",
    "Bound",
    "Calibration",
    "ChainEvents",
    "Composition",
    "Gaussian",
    "Guarantee",
    "Laplace",
    "MatrixMechanism",
    "Mechanism",
    "NotApplicable",
    "PLD",
    "RandomizedResponse",
    "RdpAccountant",
    "Tradeoff",
    "TradeoffCurve",
    "Training",
    "TwoSidedPLD",
    "audit_check",
    "calibrate",
    "calibrate_interval",
    "calibration_table",
    "compare",
    "compose",
    "discretise",
    "from_dp_event",
    "ot_coupling_rdp",
    "ot_pairwise_rdp",
    "ot_rdp",
    "partial_split_rdp",
    "poisson_pairs",
    "profile",
    "profile_bound",
    "rdp",
    "rdp_curve",
    "rdp_methods",
    "sweep",
    "Estimate",
    "estimate_delta",
]
__all__ += _sampling.__all__
__all__.sort()
