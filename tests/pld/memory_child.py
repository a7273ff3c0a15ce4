"""Run a snippet in a fresh interpreter with privamp imported and measure its own peak
resident memory (shared by the issue-27 memory tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")

#: the bar: peak RSS of the whole child process (1 GB)
LIMIT_MB = 1e9 / 2**20


def run_child(body: str, cpu_seconds: int = 60) -> tuple[dict, float]:
    """Run ``body`` (which sets ``out``, a JSON-able dict) in a fresh interpreter with privamp
    imported; returns (out, the child's peak RSS in MiB).  A CPU hang guard (RLIMIT_CPU) stops
    a runaway child.  The peak is the child's VmHWM: ``ru_maxrss`` (of RUSAGE_SELF as of
    RUSAGE_CHILDREN) carries the forking pytest worker's peak across fork and execve."""
    code = ("import json, resource, time, warnings\n"
            f"resource.setrlimit(resource.RLIMIT_CPU, ({cpu_seconds}, {cpu_seconds}))\n"
            "warnings.simplefilter('ignore')\n"
            "import privamp as pa\n"
            "t0 = time.process_time()\n"
            f"{body}\n"
            "out['cpu'] = time.process_time() - t0\n"
            "out['maxrss_kib'] = next(int(v.split()[1]) for v in open('/proc/self/status')"
            " if v.startswith('VmHWM:'))\n"
            "print(json.dumps(out))\n")
    env = dict(os.environ, PYTHONPATH=SRC, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    return out, out["maxrss_kib"] / 1024.0
