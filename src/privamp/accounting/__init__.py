"""Whole runs: :class:`Training` (choosing the accountants that apply and combining their
bounds), calibration and comparison."""

from .calibrated import Calibration
from .calibration import calibrate
from .compare import Comparison, compare
from .composition import Composition, compose
from .training import Training

__all__ = ["Training", "Calibration", "calibrate", "Comparison", "compare", "Composition",
           "compose"]
