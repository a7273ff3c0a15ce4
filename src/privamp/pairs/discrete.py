"""A dominating pair given by finitely many atoms (e.g. randomized response)."""

from __future__ import annotations

import numpy as np

from .loss_pair import LossPair, as_array

__all__ = [
    "DiscretePair",
]


class DiscretePair(LossPair):
    """Finitely many outcomes with probabilities p (under P) and q (under Q)."""

    def __init__(self, p: np.ndarray, q: np.ndarray) -> None:
        p = np.asarray(p, dtype=float)
        q = np.asarray(q, dtype=float)
        keep = (p > 0) | (q > 0)
        p, q = p[keep], q[keep]
        with np.errstate(divide="ignore"):
            loss = np.log(p) - np.log(q)
        order = np.argsort(loss)
        self.p, self.q, self.losses = p[order], q[order], loss[order]
        self.p_inf = float(p[np.isposinf(loss)].sum())
        self.q_minf = float(q[np.isneginf(loss)].sum())

    def tail(self, l, dist, upper, strict):
        l = as_array(l)
        w = self.p if dist == "P" else self.q
        L = self.losses[:, None]
        flat = l.reshape(1, -1)
        if upper:
            mask = L > flat if strict else L >= flat
        else:
            mask = L < flat if strict else L <= flat
        return (w[:, None] * mask).sum(axis=0).reshape(l.shape)

