"""Kill and resume (issue 29): a sweep in a subprocess is SIGKILLed at random points, then
run again, several times; after each run the store is read with plain SQL.  0 finished
configurations computed again (counted by a counter file written by the subprocess before
each computation, and by the store's attempt log), 0 lost, 0 duplicated, and the final table
equals an uninterrupted serial sweep."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from privamp.sweep import grid_from_mapping, sweep

SRC = str(Path(__file__).resolve().parents[2] / "src")

GRID = """\
[sweep]
accountant = "pld"  # ~0.1 s a configuration: several tasks and commit groups

[grid]
sampler = "poisson"
sigma = [0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.4, 1.7, 2.0, 2.5]
rate = [0.01, 0.05]
steps = [10, 300]
delta = 1e-5
"""

#: the subprocess: a sweep whose every computation is first appended to a counter file
SCRIPT = """\
import sys
import time
import privamp.sweep.runner as runner
from privamp.sweep import sweep
from privamp.sweep.runs import canonical_key, evaluate

grid, store, workers, counter = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

def counted(config):
    with open(counter, "a") as f:
        f.write(canonical_key(config) + "\\n")
    time.sleep(0.03)  # a few commit groups (~0.25 s each) even when the queries are fast
    return evaluate(config)

runner.evaluate = counted  # the serial engine's computation, counted
sweep(grid, store=store, workers=workers, progress=False)
"""


def finished(db: Path) -> tuple[set[str], int, int]:
    """(finished keys, rows, distinct keys) of the store, read with plain SQL."""
    if not db.exists():
        return set(), 0, 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        if not con.execute("SELECT name FROM sqlite_master WHERE name = 'results'").fetchall():
            return set(), 0, 0  # created, not yet set up
        keys = {k for (k,) in con.execute("SELECT config FROM results")}
        n, distinct = con.execute("SELECT COUNT(*), COUNT(DISTINCT config || version) "
                                  "FROM results").fetchone()
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        con.close()
    return keys, n, distinct


def attempts(db: Path, pid: int) -> list[str]:
    if not db.exists():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        if not con.execute("SELECT name FROM sqlite_master WHERE name = 'attempts'").fetchall():
            return []
        return [k for (k,) in con.execute("SELECT config FROM attempts WHERE pid = ?", (pid,))]
    finally:
        con.close()


def start(tmp: Path, workers: int, run: int) -> tuple[subprocess.Popen, Path]:
    counter = tmp / f"computed-{run}.txt"
    env = {**os.environ, "PYTHONPATH": SRC, "PRIVAMP_PROGRESS": "0"}
    p = subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp / "grid.toml"),
                          str(tmp / "store.sqlite"), str(workers), str(counter)],
                         env=env, start_new_session=True, stderr=subprocess.PIPE)
    return p, counter


def kill_after(p: subprocess.Popen, db: Path, rows: int, rng: random.Random,
               limit: float = 120.0) -> bool:
    """SIGKILL ``p`` (its whole process group: the Dask workers too) once the store holds
    ``rows`` rows, plus a random few milliseconds; False when it finished first."""
    end = time.monotonic() + limit
    while p.poll() is None and time.monotonic() < end:
        if finished(db)[1] >= rows:
            time.sleep(rng.uniform(0.0, 0.05))
            break
        time.sleep(0.01)
    if p.poll() is not None:
        return False
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
    return True


def check_run(tmp: Path, workers: int, run: int, before: set[str], p: subprocess.Popen,
              counter: Path) -> set[str]:
    db = tmp / "store.sqlite"
    after, n, distinct = finished(db)
    assert before <= after, f"run {run} lost {len(before - after)} finished rows"
    assert n == distinct == len(after), f"run {run}: duplicated rows"
    again = before & set(attempts(db, p.pid))
    assert not again, f"run {run} handed out {len(again)} finished configurations again"
    if workers == 1 and counter.exists():  # the counter sees every computation
        computed = counter.read_text().split()
        assert not before & set(computed), f"run {run} recomputed finished configurations"
        assert len(computed) == len(set(computed))
    return after


def kill_and_resume(tmp: Path, workers: int, kills: int, seed: int) -> None:
    (tmp / "grid.toml").write_text(GRID)
    db = tmp / "store.sqlite"
    rng = random.Random(seed)
    total = len(grid_from_mapping(__import__("tomllib").loads(GRID)))
    done: set[str] = set()
    killed = 0
    for run in range(kills):
        p, counter = start(tmp, workers, run)
        target = min(total - 1, len(done) + rng.randint(1, max(1, total // (kills + 1))))
        was_killed = kill_after(p, db, target, rng)
        killed += was_killed
        done = check_run(tmp, workers, run, done, p, counter)
        print(f"run {run}: {'killed' if was_killed else 'finished'} with "
              f"{len(done)}/{total} rows in the store")
    assert killed >= 1 and 0 < len(done) < total
    p, counter = start(tmp, workers, kills)
    assert p.wait(timeout=300) == 0, p.stderr.read().decode()[-2000:]
    done = check_run(tmp, workers, kills, done, p, counter)
    assert len(done) == total
    # the final table (read from the store) equals an uninterrupted serial sweep
    resumed = sweep(tmp / "grid.toml", store=db, workers=1, progress=False)
    assert resumed.computed == 0
    fresh = sweep(tmp / "grid.toml", workers=1, progress=False)
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in resumed.rows]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in fresh.rows]


@pytest.mark.slow
def test_kill_and_resume_serial(tmp_path):
    kill_and_resume(tmp_path, workers=1, kills=3, seed=29)


@pytest.mark.slow
def test_kill_and_resume_local_dask(tmp_path):
    pytest.importorskip("distributed")
    kill_and_resume(tmp_path, workers=2, kills=2, seed=7)
