"""Issue 28: the extra peak memory of a long Poisson-subsampled Gaussian run (T = 1e7),
measured in a fresh interpreter (memory_child.py): VmHWM after the query minus VmRSS after a
warm-up query; the answer against an independent reference (one step's exact epsilon, in
mpmath, lies below the run's)."""

from __future__ import annotations

import sys
from pathlib import Path

import mpmath as mp
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from memory_child import run_child  # noqa: E402
from test_memory_peaks import one_step_epsilon  # noqa: E402

#: extra MiB allowed: 153 before issue 28's changes, EXTRA_MB after (benchmarks/results/
#: memory_t1e7.md); the bar leaves room for the allocator's and FFT plans' noise
EXTRA_MB = 145.0


@pytest.mark.slow  # (~5 s: a T = 1e7 query in a fresh interpreter)
def test_t1e7_rate_1e5_sigma_half_extra_peak():
    out, _ = run_child(
        "status = lambda k: next(int(v.split()[1]) for v in open('/proc/self/status')"
        " if v.startswith(k + ':')) / 1024.0\n"
        "pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=100).epsilon(1e-5)\n"
        "base = status('VmRSS')\n"
        "g = pa.Training(pa.Gaussian(0.5), pa.Poisson(1e-5), steps=10**7).epsilon(1e-5)\n"
        "out = {'extra': status('VmHWM') - base, 'up': g.upper.value,\n"
        "       'lo': None if g.lower is None else g.lower.value}\n")
    assert out["extra"] < EXTRA_MB, f"extra peak {out['extra']:.0f} MiB"
    mp.mp.dps = 30
    assert mp.mpf(out["up"]) >= one_step_epsilon(1e-5, 2.0, 1e-5)
    assert out["lo"] is None or out["lo"] <= out["up"]
