"""Rows committed in groups (issue 29, per-configuration overhead): a serial sweep commits the
rows of ~0.25 s of work at once, a Dask sweep a task's rows.  Checked here: every
configuration is handed out (logged) before it is computed and committed exactly once; a
configuration is reported (callback) only once committed; a group committed before a SIGKILL
is never computed again and what the kill loses is only the uncommitted tail; rows equal the
hand-written loop's; a local cluster started once serves several sweeps, warmed up."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import privamp as pa
from privamp.sweep import sweep
from privamp.sweep.tasks import plan_tasks, run_serial

SRC = str(Path(__file__).resolve().parents[2] / "src")


def replay(n: int, seconds: float, most: int, work: float = 0.0):
    """run_serial over n dummy configurations: the commits, and the order of computation."""
    todo = [(f"k{i}", {"i": i}) for i in range(n)]
    commits: list[tuple[list[str], list[str]]] = []
    computed: list[str] = []
    handed: set[str] = set()

    def evaluate(cfg):
        key = f"k{cfg['i']}"
        assert key in handed, f"{key} computed before it was handed out"
        computed.append(key)
        if work:
            time.sleep(work)
        return {"i": cfg["i"]}

    def commit(rows, more):
        commits.append(([k for k, _ in rows], list(more)))
        handed.update(more)

    count = run_serial(todo, evaluate, commit, seconds=seconds, most=most)
    return commits, computed, count


@pytest.mark.parametrize("seconds,most", [(0.0, 256), (math.inf, 7), (0.01, 256)])
def test_every_row_committed_once_in_order_after_its_hand_out(seconds, most):
    commits, computed, count = replay(50, seconds, most, work=0.001)
    assert commits[0] == ([], ["k0"])  # the first hand-out, before anything is computed
    rows = [k for r, _ in commits for k in r]
    handed = [k for _, h in commits for k in h]
    want = [f"k{i}" for i in range(50)]
    assert rows == computed == want and handed == want  # each once, in order
    assert count == len(commits) - 1
    assert all(0 < len(r) <= most for r, _ in commits[1:])
    if seconds == 0.0:
        assert all(len(r) == 1 for r, _ in commits[1:])  # a commit per configuration
    if seconds == math.inf:
        assert len(commits) - 1 <= math.ceil(50 / 7) + 3  # grouped by count alone


def test_commit_groups_follow_the_time_per_configuration():
    # 50 configurations of ~2 ms, a commit every 20 ms: far fewer commits than rows
    commits, _, count = replay(50, 0.02, 256, work=0.002)
    assert 2 <= count <= 25, count


def test_empty_todo_commits_nothing():
    assert replay(0, 0.25, 256)[0] == []


def test_rows_equal_the_hand_written_loop_and_the_store_holds_them_once(tmp_path):
    grid = {"sweep": {"accountant": "rdp"},
            "grid": {"sampler": "poisson", "sigma": [0.7, 1.1, 2.0], "rate": [0.005, 0.02],
                     "steps": [10, 50, 400], "delta": 1e-5}}
    db = tmp_path / "s.sqlite"
    seen: list[int] = []
    r = sweep(grid, workers=1, store=db, progress=False,
              callback=lambda done, total, row: seen.append(done))
    assert seen == list(range(1, 19))
    for row in r:
        g = pa.Training(pa.Gaussian(row["sigma"]), pa.Poisson(row["rate"]),
                        steps=row["steps"]).epsilon(1e-5, accountant="rdp")
        assert (row["epsilon_upper"], row["upper_source"]) == (g.upper.value, g.upper.source)
    con = sqlite3.connect(db)
    n, distinct = con.execute("SELECT COUNT(*), COUNT(DISTINCT config) FROM results").fetchone()
    attempts = con.execute("SELECT COUNT(*), COUNT(DISTINCT config) FROM attempts").fetchone()
    con.close()
    assert n == distinct == 18 and attempts == (18, 18)
    assert r.meta["engine"] == "serial" and r.meta["startup_seconds"] == 0.0


@pytest.mark.parametrize("n,accountant,tasks_between,least", [
    (1000, "rdp", (16, 17), 50),   # 10 s estimated: 16 tasks of ~0.6 s
    (200, "rdp", (4, 4), 50),      # 2 s: tasks of 0.5 s, not 16 of 0.12 s
    (40, "rdp", (4, 4), 10),       # 0.4 s: still two tasks a worker
    (200, "pld", (16, 17), 12),    # 60 s: 16 tasks of ~3.6 s
])
def test_task_plan_sizes(n, accountant, tasks_between, least):
    configs = [{"sampler": "poisson", "task": "epsilon", "accountant": accountant}] * n
    tasks = plan_tasks(configs, workers=2)
    assert sorted(i for t in tasks for i in t) == list(range(n))  # each once
    assert tasks_between[0] <= len(tasks) <= tasks_between[1]
    assert min(map(len, tasks)) >= least or len(tasks[-1]) < least <= len(tasks[0])


#: the subprocess: a serial sweep whose computations (counter) and reports (callback) are
#: appended to files; each computation also sleeps 20 ms, so commits group several rows
SCRIPT = """\
import json, sys, time
import privamp.sweep.runner as runner
from privamp.sweep import sweep
from privamp.sweep.runs import evaluate

store, counter, reported = sys.argv[1], sys.argv[2], sys.argv[3]
grid = {"sweep": {"accountant": "rdp"},
        "grid": {"sampler": "poisson", "sigma": [0.6, 0.8, 1.0, 1.3, 1.7, 2.2, 3.0, 4.0],
                 "rate": [0.01, 0.05], "steps": [10, 100, 1000], "delta": 1e-5}}

def point(c):
    return json.dumps([c["sigma"], c["rate"], c["steps"]])

def counted(config):
    with open(counter, "a") as f:
        f.write(point(config) + "\\n")
    time.sleep(0.02)
    return evaluate(config)

def report(done, total, row):
    with open(reported, "a") as f:
        f.write(point(row) + "\\n")

runner.evaluate = counted
sweep(grid, store=store, workers=1, progress=False, callback=report)
"""


def store_points(db: Path) -> list[str]:
    if not db.exists():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        if not con.execute("SELECT name FROM sqlite_master WHERE name = 'results'").fetchall():
            return []
        rows = [json.loads(r) for (r,) in con.execute("SELECT row FROM results")]
    finally:
        con.close()
    return [json.dumps([r["sigma"], r["rate"], r["steps"]]) for r in rows]


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.slow
def test_a_group_committed_before_sigkill_is_never_computed_again(tmp_path):
    db = tmp_path / "store.sqlite"
    env = {**os.environ, "PYTHONPATH": SRC, "PRIVAMP_PROGRESS": "0"}

    def start(run: int) -> tuple[subprocess.Popen, Path, Path]:
        counter, reported = tmp_path / f"computed{run}.txt", tmp_path / f"reported{run}.txt"
        p = subprocess.Popen([sys.executable, "-c", SCRIPT, str(db), str(counter),
                              str(reported)], env=env, start_new_session=True,
                             stderr=subprocess.PIPE)
        return p, counter, reported

    p, counter, reported = start(0)
    end = time.monotonic() + 120
    while p.poll() is None and time.monotonic() < end and len(store_points(db)) < 2:
        time.sleep(0.005)
    time.sleep(0.05)  # into the next group
    assert p.poll() is None, p.stderr.read().decode()[-2000:]
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
    committed = store_points(db)
    computed = lines(counter)
    assert 2 <= len(committed) < 48 and len(set(committed)) == len(committed)
    assert set(lines(reported)) <= set(committed)  # nothing reported as finished was lost
    # the kill lost only the uncommitted tail of what was computed
    assert set(computed[: len(committed)]) == set(committed)
    lost = len(computed) - len(committed)
    print(f"killed with {len(committed)} rows committed, {lost} computed and not committed")

    p, counter, reported = start(1)
    assert p.wait(timeout=300) == 0, p.stderr.read().decode()[-2000:]
    again = lines(counter)
    assert set(again).isdisjoint(committed)  # a committed group is never computed again
    final = store_points(db)
    assert len(final) == len(set(final)) == 48 == len(committed) + len(again)
    assert sorted(lines(reported)) == sorted(again)


@pytest.mark.slow
def test_one_local_cluster_serves_several_sweeps_warmed_up():
    pytest.importorskip("distributed")
    from privamp.sweep import local_cluster

    a = {"sweep": {"accountant": "rdp"},
         "grid": {"sampler": "poisson", "sigma": [0.8, 1.6], "rate": [0.01, 0.05],
                  "steps": [10, 100], "delta": 1e-5}}
    b = {"sweep": {"accountant": "rdp"},
         "grid": {**a["grid"], "sigma": [1.0, 3.0], "steps": [30]}}
    with local_cluster(2) as client:
        warm = client.run(lambda: "privamp.accounting.training" in sys.modules)
        assert len(warm) == 2 and all(warm.values())  # imported before any task
        import dask

        settings = client.run(lambda: (dask.config.get("distributed.worker.profile.enabled"),
                                       os.environ.get("MALLOC_TRIM_THRESHOLD_")))
        assert set(settings.values()) == {(False, None)}  # no profiler, glibc's own trim
        ra = sweep(a, scheduler=client, progress=False)
        rb = sweep(b, scheduler=client, progress=False)
        assert client.status == "running"  # left open for the next sweep
    for r, g in ((ra, a), (rb, b)):
        assert r.meta["engine"] == "dask client" and r.meta["startup_seconds"] == 0.0
        serial = sweep(g, workers=1, progress=False)
        strip = [{k: v for k, v in x.items() if k != "seconds"} for x in r.rows]
        assert strip == [{k: v for k, v in x.items() if k != "seconds"} for x in serial.rows]
