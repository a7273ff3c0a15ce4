"""``privamp.opacus``: the Opacus integration (:mod:`privamp.integrations.opacus`) under a
short name: :class:`PrivampAccountant`, :func:`make_private`,
:func:`make_private_with_epsilon`.  Needs Opacus and PyTorch."""

from .integrations.opacus import PrivampAccountant, make_private, make_private_with_epsilon

__all__ = ["PrivampAccountant", "make_private", "make_private_with_epsilon"]
