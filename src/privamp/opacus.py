"""``privamp.opacus``: the Opacus integration (:mod:`privamp.integrations.opacus`) under a
short name: :class:`PrivampAccountant`, :func:`make_private`,
:func:`make_private_with_epsilon`, :func:`from_opacus_history`.  Needs Opacus and PyTorch.

Importing it registers :class:`PrivampAccountant` with Opacus under the name ``"privamp"``,
so that ``opacus.PrivacyEngine(accountant="privamp")`` accounts for the data loader actually
used (Opacus's Poisson loader, or the loader's own shuffle/deterministic batches with
``poisson_sampling=False``), and Opacus's own ``PrivacyEngine.make_private_with_epsilon``
then calibrates the noise with privamp's upper bound for that loader
(:mod:`privamp.integrations.opacus_calibration`)."""

from .integrations.opacus import (
    PrivampAccountant,
    from_opacus_history,
    make_private,
    runs_from_opacus_history,
)
from .integrations.opacus_calibration import make_private_with_epsilon

__all__ = [
    "PrivampAccountant",
    "from_opacus_history",
    "make_private",
    "make_private_with_epsilon",
    "runs_from_opacus_history",
]
