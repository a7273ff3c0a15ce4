"""``privamp.opacus``: the Opacus integration (:mod:`privamp.integrations.opacus`) under a
short name: :class:`PrivampAccountant`, :func:`make_private`,
:func:`make_private_with_epsilon`, :func:`from_opacus_history`.  Needs Opacus and PyTorch."""

from .integrations.opacus import (
    PrivampAccountant,
    from_opacus_history,
    make_private,
    make_private_with_epsilon,
    runs_from_opacus_history,
)

__all__ = [
    "PrivampAccountant",
    "from_opacus_history",
    "make_private",
    "make_private_with_epsilon",
    "runs_from_opacus_history",
]
