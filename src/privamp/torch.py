"""``privamp.torch``: PyTorch batch samplers that know their privamp scheme
(:mod:`privamp.integrations.torch`) under a short name.  Needs PyTorch."""

from .integrations.torch import *  # noqa: F403
from .integrations.torch import __all__  # noqa: F401
