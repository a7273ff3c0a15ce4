"""Shared test set-up."""

from __future__ import annotations

import mpmath
import pytest


@pytest.fixture(autouse=True)
def _mpmath_precision():
    """Every test starts at 50 significant digits of mpmath, whatever an earlier test set:
    module-level ``mp.dps = ...`` lines run at collection (the last one wins for every module)
    and a test that lowers the precision for speed must not weaken the next one's reference."""
    saved = mpmath.mp.dps
    mpmath.mp.dps = 50
    yield
    mpmath.mp.dps = saved
