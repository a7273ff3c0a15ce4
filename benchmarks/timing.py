"""One timer for the side-by-side benchmarks: a call's result and its CPU time.

CPU time (``time.process_time``) is the load-independent measure on a shared machine; each
benchmark interleaves the libraries it compares, so their ratios are fair.  Imported by
basename (the scripts run as ``python benchmarks/<name>.py``, their folder first on the path).
"""

from __future__ import annotations

import gc
import time
import warnings
from collections.abc import Callable
from typing import TypeVar

R = TypeVar("R")


def cpu(fn: Callable[[], R], quiet: bool = False) -> tuple[R, float]:
    """``(fn(), CPU seconds)``, after a garbage collection (so one call does not pay for the
    previous one's garbage); ``quiet``: peers' warnings silenced."""
    gc.collect()
    t0 = time.process_time()
    if quiet:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn()
    else:
        out = fn()
    return out, time.process_time() - t0
