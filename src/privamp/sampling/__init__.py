"""Sampling schemes and neighbouring relations (immutable values, validated on construction).

The schemes are read from the scheme registry (:mod:`privamp.sampling.registry`): a scheme
decorated with ``@register_scheme(...)`` is exported here, by ``privamp``, listed by
``privamp support`` and offered as ``privamp ... --scheme NAME`` with no other list to edit.
"""

from . import relations as _relations
from . import schemes as _schemes
from .cyclic import CyclicPoisson  # noqa: F401  (a registered scheme, in __all__)
from .relations import *  # noqa: F403  (relations.__all__)
from .schemes import *  # noqa: F403  (Scheme and every registered scheme: schemes.__all__)

__all__ = sorted({*_relations.__all__, *_schemes.__all__, "CyclicPoisson"})
