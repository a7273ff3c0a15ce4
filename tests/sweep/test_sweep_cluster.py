"""A real multi-process Dask cluster on localhost (issue 29): one ``dask scheduler`` and two
``dask worker`` processes, bound to 127.0.0.1, started and stopped by the test within bounded
time; the sweep on it gives the serial loop's rows, row for row, even with one worker
killed (SIGKILL) after the first row: its task is retried by Dask."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from privamp.sweep import sweep

SRC = str(Path(__file__).resolve().parents[2] / "src")
#: Poisson under the PLD accountant: about half a second a configuration, so that a worker
#: killed after the first row is busy with another
GRID = {"grid": {"sampler": "poisson", "sigma": [0.8, 1.6], "rate": [0.01, 0.02],
                 "steps": [10, 100, 1000], "delta": 1e-5}}


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)


@pytest.mark.slow
def test_localhost_cluster_gives_the_serial_rows(tmp_path):
    distributed = pytest.importorskip("distributed")
    dask = Path(sys.executable).parent / "dask"
    if not dask.exists():
        pytest.skip("no dask command next to this python")
    env = {**os.environ, "PYTHONPATH": SRC, "PRIVAMP_PROGRESS": "0"}
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    info = tmp_path / "scheduler.json"
    procs: list[subprocess.Popen] = []
    logs = [open(tmp_path / f"log{i}.txt", "w") for i in range(3)]  # noqa: SIM115
    try:
        procs.append(subprocess.Popen(
            [str(dask), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(info)], env=env, stdout=logs[0], stderr=logs[0]))
        end, address = time.monotonic() + 60, None
        while address is None and time.monotonic() < end:
            time.sleep(0.1)
            try:
                address = json.loads(info.read_text())["address"]
            except (OSError, ValueError, KeyError):  # not yet written, or half written
                pass
        assert address, (tmp_path / "log0.txt").read_text()[-2000:]
        assert address.startswith("tcp://127.0.0.1:")
        for i in (1, 2):
            procs.append(subprocess.Popen(
                [str(dask), "worker", "--scheduler-file", str(info), "--host", "127.0.0.1",
                 "--nthreads", "1", "--nworkers", "1", "--no-dashboard",
                 "--death-timeout", "60"], env=env, stdout=logs[i], stderr=logs[i]))
        with distributed.Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
            hosts = {w["host"] for w in client.scheduler_info()["workers"].values()}
            pids = set(client.run(os.getpid).values())
        assert hosts == {"127.0.0.1"} and len(pids) == 2 and os.getpid() not in pids
        killed: list[int] = []

        def kill_one_worker(done: int, total: int, row: dict) -> None:
            if not killed:
                killed.append(min(pids))
                os.kill(killed[0], signal.SIGKILL)  # a worker process this test started

        on_cluster = sweep(GRID, scheduler=address, progress=False, callback=kill_one_worker)
        assert on_cluster.meta["engine"] == address
    finally:
        stop(procs)
        for f in logs:
            f.close()
    assert all(p.poll() is not None for p in procs)
    assert len(killed) == 1
    serial = sweep(GRID, workers=1, progress=False)
    assert len(serial) == 12 and serial.counts()["answered"] == 12

    def strip(rows):
        return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]

    assert strip(on_cluster.rows) == strip(serial.rows)
