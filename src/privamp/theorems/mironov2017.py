"""Mironov 2017 (arXiv:1702.07476): black-box group privacy for Rényi DP (Prop 2 and the
general group curve of Schuchardt et al. 2024, Prop 2.10).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..mechanisms.base import Mechanism
from ..renyi.curves import monotone_envelope
from ..sampling.relations import Relation
from ..sampling.schemes import Scheme
from .registry import REGISTRY, rdp_curve, rdp_method

__all__ = [
    "mironov_group_curve",
    "mironov_group_prop2",
]


SRC_MIRONOV_GROUP = (
    "Mironov 2017, Cor 4 / Prop 11 (recursive group privacy; Schuchardt et al. 2024, App. B.1)"
)


SRC_MIRONOV_PROP2 = "Mironov 2017, Prop 2 (Schuchardt et al. 2024, Prop 2.10)"


# ----------------------------------------------------------------------------------------
# Mironov 2017 group privacy
# ----------------------------------------------------------------------------------------
def _group_orders(K: int, a: np.ndarray, acc: list) -> None:
    if K == 1:
        acc.append(a)
        return
    k1, k2 = (K + 1) // 2, K // 2
    for first, second in {(k1, k2), (k2, k1)}:
        _group_orders(first, 2 * a, acc)
        _group_orders(second, 2 * a - 1, acc)


def _group_eval(K: int, a: np.ndarray, base_orders: np.ndarray, base_eps: np.ndarray) -> np.ndarray:
    if K == 1:
        return base_eps[np.searchsorted(base_orders, a)]
    k1, k2 = (K + 1) // 2, K // 2
    best = np.full(a.shape, np.inf)
    for first, second in {(k1, k2), (k2, k1)}:
        v = (a - 0.5) / (a - 1) * _group_eval(first, 2 * a, base_orders, base_eps) + _group_eval(
            second, 2 * a - 1, base_orders, base_eps
        )
        best = np.minimum(best, v)
    return best


def mironov_group_curve(
    mech: Mechanism, scheme: Scheme, alpha, relation: Relation, base_method: str = "best"
) -> np.ndarray:
    """Group-K RDP from the group-1 curve by the weak triangle inequality of Mironov 2017
    (Prop 11 with p = q = 2, his Cor 4):
    ``D_a(P||Q) <= (a - 1/2)/(a - 1) D_2a(P||R) + D_(2a-1)(R||Q)``, applied recursively with
    R at distance ceil(K/2) (or floor(K/2)) from P, taking the better split.

    (Schuchardt et al. 2024, App. B.1, print the second coefficient as a/(a-1); Hölder's
    inequality gives 1, which we use — it is smaller, and the proof is two lines: write
    P^a Q^(1-a) = [P^a R^(1/2-a)] [R^(a-1/2) Q^(1-a)] and apply Cauchy-Schwarz.)
    The base curve is ``rdp_curve(..., relation with group=1, method=base_method)``."""
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    K = relation.group
    acc: list = []
    _group_orders(K, a, acc)
    base_orders = np.unique(np.concatenate(acc))
    rel1 = replace(relation, group=1)
    if base_orders.size <= _MAX_BASE_ORDERS:
        base = rdp_curve(mech, scheme, base_orders, rel1, base_method).epsilon
        return _group_eval(K, a, base_orders, np.asarray(base, dtype=float))
    ladder, where = np.unique(_ladder(base_orders), return_inverse=True)
    return _group_eval(K, a, base_orders, _ladder_values(mech, scheme, rel1, base_method,
                                                         ladder)[where])


def _ladder_values(mech: Mechanism, scheme: Scheme, rel1: Relation, base_method: str,
                   ladder: np.ndarray) -> np.ndarray:
    """The base curve at ladder orders, memoised per run setting (an epsilon curve asks the
    same ladder orders at every checkpoint; a few settings kept)."""
    key = (mech, scheme, rel1, base_method)
    memo = _LADDER_MEMO.pop(key, {})
    _LADDER_MEMO[key] = memo
    while len(_LADDER_MEMO) > 4:
        _LADDER_MEMO.pop(next(iter(_LADDER_MEMO)))
    missing = np.array([x for x in ladder.tolist() if x not in memo])
    if missing.size:
        vals = np.asarray(rdp_curve(mech, scheme, missing, rel1, base_method).epsilon,
                          dtype=float)
        memo.update(zip(missing.tolist(), np.atleast_1d(vals).tolist(), strict=True))
    return np.array([memo[x] for x in ladder.tolist()])


_LADDER_MEMO: dict[tuple, dict[float, float]] = {}


#: above this many base orders (large groups: each halving doubles them; K = 100 asks
#: ~8000), each is evaluated at the next order of a geometric ladder instead
_MAX_BASE_ORDERS = 512


_LADDER_RATIO = 2.0 ** (1.0 / 64.0)


def _ladder(orders: np.ndarray) -> np.ndarray:
    """Each order rounded up to the ladder 2^(j/64): Rényi divergences are nondecreasing in
    the order (van Erven & Harremoës 2014, Thm 3), so the value there bounds the one asked
    (about 1% higher order)."""
    up = _LADDER_RATIO ** np.ceil(np.log(orders) / math.log(_LADDER_RATIO))
    return np.where(up >= orders, up, up * _LADDER_RATIO)


def mironov_group_prop2(
    mech: Mechanism, scheme: Scheme, alpha, relation: Relation, base_method: str = "best"
) -> np.ndarray:
    """Mironov 2017, Prop 2: (alpha, eps)-RDP implies (alpha/K, 3^log2(K) eps)-RDP at distance
    K = 2^C when alpha >= 2K.  Orders below 2 use the order-2 value (RDP is monotone in the
    order)."""
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    K = relation.group
    c = int(round(math.log2(K)))
    if 2**c != K:
        raise ValueError(f"Mironov 2017, Prop 2 needs a group size that is a power of 2, got {K}")
    b = np.maximum(a, 2.0)
    base = rdp_curve(mech, scheme, K * b, replace(relation, group=1), base_method).epsilon
    return 3.0**c * np.asarray(base, dtype=float)


_GROUP_METHODS = ("mironov-group", "mironov-group-prop2")


def _has_base(m, s, r) -> bool:
    """Some group-1 result applies to (m, s, r with group 1)."""
    if r.group <= 1:
        return False
    r1 = replace(r, group=1)
    return any(
        meth.in_best and meth.applies(m, s, r1)
        for name, meth in REGISTRY.items()
        if name not in _GROUP_METHODS
    )


@rdp_method(
    "mironov-group",
    SRC_MIRONOV_GROUP,
    when=_has_base,
)
def _mironov_group_method(mech, scheme, relation, alpha):
    return monotone_envelope(alpha, lambda a: mironov_group_curve(mech, scheme, a, relation))


@rdp_method(
    "mironov-group-prop2",
    SRC_MIRONOV_PROP2,
    when=lambda m, s, r: _has_base(m, s, r) and (r.group & (r.group - 1)) == 0,
    in_best=False,
)
def _mironov_prop2_method(mech, scheme, relation, alpha):
    return mironov_group_prop2(mech, scheme, alpha, relation)

