"""What the side-by-side benchmarks share: a timer (a call's result and its CPU time) and the
Poisson-subsampled Gaussian query of privamp and of dp-accounting.

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


def privamp_call(q: float, sigma: float, T: int, delta: float = 1e-5
                 ) -> Callable[[], tuple[float, float]]:
    """privamp's default call, as ``() -> (upper, lower)`` (lower 0 where there is none)."""
    import privamp as pa

    def run() -> tuple[float, float]:
        r = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T).epsilon(delta)
        return float(r.upper.value), float(0.0 if r.lower is None else r.lower.value)

    return run


def dpa_call(q: float, sigma: float, T: int, delta: float = 1e-5) -> Callable[[], float]:
    """dp-accounting's PLD accountant at its defaults, as ``() -> epsilon``."""
    import dp_accounting as dpa

    def run() -> float:
        acc = dpa.pld.PLDAccountant()
        acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), T)
        return float(acc.get_epsilon(delta))

    return run


def emit(text: str, out: str = "") -> None:
    """Print a benchmark's table, and write it to ``out`` when given."""
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
