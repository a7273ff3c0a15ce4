"""Array plumbing shared by the accountants."""

from __future__ import annotations

import numpy as np


def shaped(value: np.ndarray, like) -> np.ndarray | float:
    """``value`` as a float array shaped like ``like`` (a plain float when ``like`` is a
    scalar): answers come back in the shape they were asked in."""
    v = np.asarray(value, dtype=float).reshape(np.shape(like))
    return float(v) if v.ndim == 0 else v

