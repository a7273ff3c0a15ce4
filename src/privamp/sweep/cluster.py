"""Dask for sweeps: a local cluster started once and warmed, and the engine that hands out
configurations in tasks and writes each finished task's rows at once.

Imported only by a parallel sweep (it imports Dask).  A cluster can serve many sweeps::

    >>> from privamp.sweep import local_cluster, sweep
    >>> with local_cluster(workers=2) as client:                          # doctest: +SKIP
    ...     a = sweep("a.toml", scheduler=client)
    ...     b = sweep("b.toml", scheduler=client)

Start-up (worker processes spawned, then each importing privamp, NumPy and SciPy: about one
second of CPU per worker) is paid once, in :func:`local_cluster`, and reported apart
(``SweepResult.meta["startup_seconds"]``), not inside the first task.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import dask
from dask.distributed import Client, LocalCluster, WorkerPlugin, as_completed

from .runs import evaluate_batch
from .store import Store
from .tasks import plan_tasks

__all__ = ["NO_TRIM", "PROFILE", "WarmUp", "warm_up", "local_cluster", "connect", "run_on_dask"]

#: the Dask setting that would put MALLOC_TRIM_THRESHOLD_ in the local workers' environment
NO_TRIM = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"
#: Dask's statistical profiler in every worker (a stack sample every 10 ms, for a dashboard
#: a local sweep does not show): off in the local workers
PROFILE = "distributed.worker.profile.enabled"

def warm_up() -> float:
    """Import privamp and answer one small query (RDP and PLD accountants), so that a
    worker's first task pays no import.

    Returns:
        the seconds it took in this process.
    """
    start = time.perf_counter()
    import privamp  # noqa: F401  (the whole package, as a task would)
    from privamp.accounting.training import Training
    from privamp.mechanisms import Gaussian
    from privamp.sampling.schemes import Poisson

    run = Training(Gaussian(1.0), Poisson(0.01), steps=10)
    for acc in ("rdp", "pld"):
        run.epsilon(1e-5, accountant=acc)
    return time.perf_counter() - start


class WarmUp(WorkerPlugin):
    """A Dask worker plugin running :func:`warm_up` as each worker starts (also the workers
    that replace a lost one)."""

    name = "privamp-warm-up"

    def setup(self, worker: Any) -> None:
        """Warm ``worker``'s process up."""
        warm_up()


@contextmanager
def local_cluster(workers: int | None = None, warm: bool = True) -> Iterator[Client]:
    """A local Dask cluster of ``workers`` single-threaded worker processes (default: one
    per core), warmed up, with a client; closed on exit.  Pass the client as
    ``scheduler=`` to :func:`privamp.sweep.sweep` to run several sweeps on one cluster.

    Args:
        workers: worker processes (>= 1).
        warm: import privamp in every worker before returning (:class:`WarmUp`).

    Yields:
        the client.

    Raises:
        ValueError: ``workers`` is not a whole number >= 1.
        RuntimeError: the workers did not start (a script without a main guard).
    """
    n = (os.cpu_count() or 1) if workers is None else workers
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"workers must be a whole number >= 1, got {workers!r}")
    # Dask sets MALLOC_TRIM_THRESHOLD_ in its workers by default, which turns off glibc's
    # adaptive mmap threshold: every large numpy array is then mapped and unmapped, and a
    # PLD accountant ran 2-3x slower in a worker than in this process (measured).  BLAS
    # threads: Dask already gives its workers OMP/MKL/OPENBLAS_NUM_THREADS=1.  The nannies
    # take these settings to the worker processes they spawn.
    with dask.config.set({NO_TRIM: None, PROFILE: False}):
        try:
            # dashboard_address=None would still bind the scheduler's HTTP routes to port
            # 8787 and warn when another cluster holds it: a free local port instead
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                   dashboard_address="127.0.0.1:0",
                                   silence_logs=logging.ERROR)
        except RuntimeError as exc:
            raise RuntimeError(
                "the local Dask workers did not start; in a script, call the sweep under "
                "`if __name__ == '__main__':` (worker processes are spawned and import "
                "the script again), or run serially with workers=1") from exc
    try:
        client = Client(cluster)
        try:
            if warm:
                client.register_plugin(WarmUp())
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


@contextmanager
def connect(scheduler: str | Client | None, workers: int | None
            ) -> Iterator[tuple[Client, int, float]]:
    """The client a sweep runs on: ``scheduler``'s (a client is used as is and left open;
    an address is connected to), else a new warmed :func:`local_cluster`.

    Yields:
        (client, its worker count, the seconds its start-up took: 0 for a given client).
    """
    start = time.perf_counter()
    if isinstance(scheduler, Client):
        yield scheduler, _workers(scheduler), 0.0
    elif scheduler:
        with Client(scheduler, timeout="30s") as client:
            client.run(warm_up)  # once, on the workers there now (nothing left behind)
            yield client, _workers(client), time.perf_counter() - start
    else:
        with local_cluster(workers) as client:
            yield client, _workers(client), time.perf_counter() - start


def _workers(client: Client) -> int:
    return max(1, len(client.scheduler_info().get("workers", {})))


def run_on_dask(todo: list[tuple[str, dict[str, Any]]], store: Store, client: Client,
                workers: int,
                on_rows: Callable[[list[tuple[str, dict[str, Any]]]], None]) -> None:
    """Hand ``todo`` out in tasks (:func:`plan_tasks`) on ``client``'s workers; each
    finished task's rows go to ``on_rows`` (one commit) as it arrives.  Every hand-out is
    logged in ``store`` first; a task whose worker dies is retried by Dask (twice).

    Args:
        todo: (key, configuration) pairs to compute.
        store: the store logging the hand-outs.
        client: the Dask client.
        workers: the worker count (for the task sizes).
        on_rows: receives each task's (key, row) pairs.
    """
    keys = [k for k, _ in todo]
    configs = [c for _, c in todo]
    groups = plan_tasks(configs, workers)
    store.started([keys[i] for g in groups for i in g])
    futures = {client.submit(evaluate_batch, [configs[i] for i in g], pure=False,
                             retries=2): g for g in groups}
    for fut in as_completed(list(futures)):
        rows = fut.result()
        g = futures.pop(fut)
        on_rows([(keys[i], r) for i, r in zip(g, rows, strict=True)])
