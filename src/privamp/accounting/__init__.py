"""Accountants: Rényi DP (:mod:`.rdp`), privacy loss distributions (:mod:`.pld`), whole runs
(:mod:`.training`), calibration (:mod:`.calibration`)."""

from . import pld, rdp  # noqa: F401  (registers the "pld" and "rdp" run accountants)
from . import profiles_pld  # noqa: F401  (registers "pld" for fixed-size batches, Balle et al. 2018)
from .calibration import calibrate, compare
from .registry import ACCOUNTANTS, RunAnalysis, run_accountant
from .training import Training

__all__ = ["Training", "calibrate", "compare", "ACCOUNTANTS", "RunAnalysis", "run_accountant"]
