"""Dong, Chen, Ozgur 2025 ("Model and data partitioning"): model splitting, dropout and
Balanced Iteration Subsampling — one-step RDP (:mod:`.rdp`) and the two-sided PLD of balanced
iteration (:mod:`.bis_pld`)."""

from . import bis_pld, partial_split, rdp, split_pld
from .rdp import partial_split_rdp

__all__ = ["bis_pld", "partial_split", "rdp", "split_pld", "partial_split_rdp"]
