"""Whole runs: :class:`Training` (choosing the accountants that apply and combining their
bounds), calibration and comparison."""

from .calibration import calibrate, compare
from .composition import Composition, compose
from .training import Training

__all__ = ["Training", "calibrate", "compare", "Composition", "compose"]
