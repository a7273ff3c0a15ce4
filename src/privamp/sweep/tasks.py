"""How a sweep's configurations are grouped: into Dask tasks (expensive first, several tasks a
worker) and, in a serial sweep, into commits (one SQLite transaction every ~0.25 s of work).

A configuration counts as finished once its row is committed; grouping commits bounds what a
``kill -9`` can lose to the work done since the last commit (one group), never a committed row.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["CHEAP", "TASKS_PER_WORKER", "MIN_TASK_SECONDS", "MAX_PER_TASK", "COMMIT_SECONDS",
           "MAX_PER_COMMIT", "cost", "plan_tasks", "run_serial"]

#: samplers whose configurations are cheap (Poisson: an FFT-composed PLD or an RDP curve)
CHEAP = ("poisson", "with-replacement", "without-replacement", "subsampled-model-split",
         "model-split", "dropout")

#: tasks per worker (so that the last ones balance the load)
TASKS_PER_WORKER = 8
#: the least estimated seconds of work in one task (when there is enough work)
MIN_TASK_SECONDS = 0.5
#: the most configurations in one Dask task (one commit each task)
MAX_PER_TASK = 256
#: a serial sweep commits its finished rows at least this often (seconds of work)
COMMIT_SECONDS = 0.25
#: and at most this many rows a commit
MAX_PER_COMMIT = 256


def cost(config: Mapping[str, Any]) -> float:
    """A rough estimate of a configuration's seconds (by accountant, sampler and task):
    Poisson-like samplers 10 ms under the RDP accountant and 0.3 s under the others (a
    composed PLD), other samplers 20 times more, a calibration 10 times more (measured on
    one core, to within a few times: it only sizes the tasks)."""
    base = 0.01 if config.get("accountant") == "rdp" else 0.3
    base *= 1.0 if config["sampler"] in CHEAP else 20.0
    return base * (10.0 if config["task"] == "calibrate" else 1.0)


def plan_tasks(configs: list[dict[str, Any]], workers: int) -> list[list[int]]:
    """Indices of ``configs`` grouped into tasks: most expensive first, each task about
    1/(:data:`TASKS_PER_WORKER` x workers) of the total estimated cost but at least
    :data:`MIN_TASK_SECONDS` (so that scheduling and a worker's per-task costs stay small;
    still at least two tasks a worker), at most :data:`MAX_PER_TASK` configurations: every
    worker gets several tasks, the last ones balance the load, and an expensive
    configuration goes alone.

    Args:
        configs: the configurations to hand out.
        workers: how many workers share them.

    Returns:
        The tasks, as lists of indices into ``configs``.
    """
    costs = [cost(c) for c in configs]
    order = sorted(range(len(configs)), key=lambda i: -costs[i])
    total, w = sum(costs), max(1, workers)
    budget = min(max(total / (TASKS_PER_WORKER * w), MIN_TASK_SECONDS), total / (2 * w))
    out: list[list[int]] = []
    cur: list[int] = []
    spent = 0.0
    for i in order:
        if cur and (spent + costs[i] > budget * (1 + 1e-9) or len(cur) >= MAX_PER_TASK):
            out.append(cur)
            cur, spent = [], 0.0
        cur.append(i)
        spent += costs[i]
    if cur:
        out.append(cur)
    return out


def run_serial(todo: list[tuple[str, dict[str, Any]]],
               evaluate: Callable[[dict[str, Any]], dict[str, Any]],
               commit: Callable[[list[tuple[str, dict[str, Any]]], list[str]], None],
               seconds: float = COMMIT_SECONDS, most: int = MAX_PER_COMMIT) -> int:
    """Compute ``todo`` in order in this process, committing the finished rows in groups.

    ``commit(rows, handed_out)`` is called with the rows finished since the last commit and
    the keys handed out next (logged in the same transaction, before they are computed):
    the first call has no rows and hands out the first configuration; a group is committed
    once ``seconds`` of work have passed since the last commit, ``most`` rows are pending, or
    every handed-out configuration is finished.  Hand-outs grow with the measured time per
    configuration (about two commit periods' worth, at most ``most``).

    Args:
        todo: (key, configuration) pairs.
        evaluate: the row of a configuration.
        commit: writes rows and hand-outs in one transaction.
        seconds: the commit period.
        most: the most rows a commit.

    Returns:
        the number of commits (after the first hand-out).
    """
    if not todo:
        return 0
    handed = 1
    commit([], [todo[0][0]])
    pending: list[tuple[str, dict[str, Any]]] = []
    commits = 0
    start = last = time.perf_counter()
    for i, (key, cfg) in enumerate(todo):
        pending.append((key, evaluate(cfg)))
        now = time.perf_counter()
        if now - last >= seconds or len(pending) >= most or i + 1 == handed:
            per = (now - start) / (i + 1)
            nxt = min(len(todo), i + 1 + max(1, int(min(most, 2 * seconds / max(per, 1e-9)))))
            more = [k for k, _ in todo[handed:nxt]] if i + 1 == handed else []
            if more:
                handed = nxt
            commit(pending, more)
            commits += 1
            pending, last = [], now
    return commits
