"""Balle, Barthe, Gaboardi 2018 (arXiv:1807.01647): privacy profiles and (eps, delta)
amplification by subsampling (:mod:`.profiles`), their Thm 6 (profile -> Rényi DP,
:mod:`.thm6`), and the PLD accountant of fixed-size batches built from their dominating
pairs (:mod:`.pld`)."""

from . import black_box, pld, profiles, thm6
from .profiles import profile, profile_bound

__all__ = ["black_box", "pld", "profiles", "thm6", "profile", "profile_bound"]
