"""Accountants: Rényi DP (:mod:`.rdp`), privacy loss distributions (:mod:`.pld`), whole runs
(:mod:`.training`), calibration (:mod:`.calibration`)."""

# registration: "pld" (Poisson; fixed-size batches, Balle et al. 2018; balanced iteration,
# Dong et al. 2025) and "rdp"
from . import partitioning_pld, pld, profiles_pld, rdp  # noqa: F401
from .calibration import calibrate, compare
from .registry import ACCOUNTANTS, RunAnalysis, run_accountant
from .training import Training

__all__ = ["Training", "calibrate", "compare", "ACCOUNTANTS", "RunAnalysis", "run_accountant"]
