"""The generic Rényi-DP engine: composition of RDP curves and conversion to (eps, delta)
(Mironov 2017; Balle et al. 2020, Thm 21), with a bounded order search. Names no mechanism."""

from .conversion import (
    CONVERSIONS,
    DEFAULT_ORDERS,
    compose_rdp,
    delta_from_rdp,
    eps_from_rdp,
    optimal_delta,
    optimal_epsilon,
)

__all__ = ["CONVERSIONS", "DEFAULT_ORDERS", "compose_rdp", "delta_from_rdp", "eps_from_rdp",
           "optimal_delta", "optimal_epsilon"]
