"""Running a sweep: what the store lacks is computed, serially or on Dask, and written at once.

The default engine is Dask (``dask[distributed]``, the ``sweep`` extra): an in-process
``LocalCluster`` with one single-threaded worker process per core, warmed up (privamp
imported in each worker) and stopped by the call (no service); its start-up is reported apart
(``SweepResult.meta["startup_seconds"]``).  To pay it once for several sweeps, pass the
client of :func:`privamp.sweep.local_cluster` as ``scheduler``.  ``scheduler="tcp://HOST:8786"``
(or ``DASK_SCHEDULER_ADDRESS`` in the environment) runs on a real cluster of ``dask scheduler``
/ ``dask worker`` processes, which must have the same privamp installed; ``workers=1`` runs
serially in this process, with no Dask at all.

Configurations are handed out in tasks of several cheap ones (the expensive first, alone),
so scheduling costs little; a task whose worker dies is retried by Dask (``retries=2``).
Rows are committed to the store a task at a time (Dask) or every ~0.25 s of work (serial):
a configuration counts as finished, and is reported (progress, callback), once committed."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..progress import progress as progress_bar
from .grid import Grid, grid_from_mapping, load_grid
from .runs import evaluate, privamp_version
from .store import Store
from .table import SweepResult, columns_of
from .tasks import plan_tasks, run_serial

__all__ = ["sweep", "calibration_table", "as_grid", "batches", "local_cluster"]

#: ``callback(done, total, row)`` after each finished configuration
Callback = Callable[[int, int, dict[str, Any]], None]

def as_grid(grid: Grid | str | Path | Mapping[str, Any] | None,
            overrides: Mapping[str, Mapping[str, Any]] | None = None) -> Grid:
    """A checked :class:`Grid` from a Grid, a grid file's path, a mapping (a grid file's
    shape, or its ``[grid]`` table alone) or None (the ``overrides`` alone).

    Raises:
        GridError: the grid is refused (file, line, key).
        ValueError: overrides given with an already checked Grid.
    """
    if isinstance(grid, Grid):
        if overrides and any(overrides.values()):
            raise ValueError("give keys with a grid file or mapping, not with a checked Grid")
        return grid
    if isinstance(grid, (str, Path)):
        return load_grid(grid, overrides)
    return grid_from_mapping(grid or {}, "<arguments>" if grid is None else "<dict>",
                             overrides)


def batches(keys: list[str], configs: list[dict[str, Any]], workers: int
            ) -> list[list[int]]:
    """:func:`privamp.sweep.tasks.plan_tasks` of ``configs`` (``keys`` unused: kept for
    callers of the first version)."""
    return plan_tasks(configs, workers)


def local_cluster(workers: int | None = None, warm: bool = True) -> Any:
    """A local Dask cluster for several sweeps: a context manager yielding its client (pass
    it as ``scheduler=``), started once, its workers warmed up, closed on exit.

    >>> with local_cluster(2) as client:                                  # doctest: +SKIP
    ...     a = sweep("a.toml", scheduler=client); b = sweep("b.toml", scheduler=client)

    Args:
        workers: single-threaded worker processes (default: one per core).
        warm: import privamp and answer a small query in every worker before yielding.

    Returns:
        the context manager (:func:`privamp.sweep.cluster.local_cluster`).

    Raises:
        ImportError: Dask is not installed.
    """
    try:
        from .cluster import local_cluster as start
    except ImportError as exc:
        raise ImportError("a local cluster needs Dask: pip install 'privamp[sweep]'") from exc
    return start(workers, warm)


def _dask(todo: list[tuple[str, dict[str, Any]]], store: Store, workers: int | None,
          scheduler: Any, on_rows: Callable[[list[tuple[str, dict[str, Any]]]], None],
          timings: dict[str, float]) -> None:
    try:
        from .cluster import connect, run_on_dask
    except ImportError as exc:
        raise ImportError("a parallel sweep needs Dask: pip install 'privamp[sweep]' "
                          "(or run serially with workers=1)") from exc
    with connect(scheduler, workers) as (client, n, startup):
        timings["startup_seconds"] = startup
        run_on_dask(todo, store, client, n, on_rows)


def sweep(
    grid: Grid | str | Path | Mapping[str, Any] | None = None,
    *,
    task: str | None = None,
    accountant: str | None = None,
    store: str | Path | None = None,
    workers: int | None = None,
    scheduler: Any = None,
    progress: bool = True,
    callback: Callback | None = None,
    retry_failed: bool = False,
    **values: Any,
) -> SweepResult:
    """Compute every configuration of a grid (what ``store`` holds already is reused).

    >>> r = sweep(sampler=["poisson"], sigma=[0.8, 1.6], rate=0.01, steps=100, delta=1e-5,
    ...           workers=1, progress=False)                                  # doctest: +SKIP
    >>> r.to_csv("eps.csv")                                                  # doctest: +SKIP

    Args:
        grid: a grid file (TOML/YAML), a mapping of the same shape or of its ``[grid]`` table,
            or a checked :class:`Grid`; None: the ``values`` alone.
        task: ``"epsilon"`` (at ``delta``), ``"delta"`` (at ``epsilon``) or ``"calibrate"``
            (overrides the file's ``[sweep] task``).
        accountant: the accountant name (default "best").
        store: the SQLite file keeping every finished row (None: kept in memory only).
        workers: local Dask workers (default: one per core); 1: serial, no Dask.
        scheduler: a Dask scheduler address (default ``$DASK_SCHEDULER_ADDRESS``) or a
            ``distributed.Client`` (e.g. of :func:`privamp.sweep.local_cluster`, left open);
            then ``workers`` is ignored.
        progress: a bar over the whole sweep on stderr (a terminal), log lines elsewhere;
            ``PRIVAMP_PROGRESS=0`` silences it.
        callback: ``callback(done, total, row)`` after each finished configuration.
        retry_failed: compute again the configurations stored as ``"failed"``.
        values: grid keys (lists are axes), set over the grid's.

    Returns:
        A :class:`SweepResult`, rows in grid order.

    Raises:
        GridError: the grid is refused before anything runs (file, line and key).
        ValueError: an argument out of range.
    """
    settings = {k: v for k, v in (("task", task), ("accountant", accountant)) if v is not None}
    g = as_grid(grid, {"sweep": settings, "grid": values})
    return run_grid(g, store=store, workers=workers, scheduler=scheduler, progress=progress,
                    callback=callback, retry_failed=retry_failed)


def calibration_table(
    grid: Grid | str | Path | Mapping[str, Any] | None = None,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    knob: str | None = None,
    **kwargs: Any,
) -> SweepResult:
    """For every configuration of ``grid`` (sampler, batch size, epochs, ...), the noise
    multiplier (or with ``knob``: the largest rate, batch size, steps or epochs) whose epsilon
    *upper bound* at ``delta`` meets ``epsilon``, by :func:`privamp.calibrate`.

    Args:
        grid: as :func:`sweep` (without ``sigma`` for the noise knob).
        epsilon: the target epsilon (> 0), over the grid's.
        delta: the delta (in (0, 1)), over the grid's.
        knob: ``"noise"`` (default), ``"rate"``, ``"batch_size"``, ``"steps"``, ``"epochs"``.
        kwargs: the other arguments and grid keys of :func:`sweep`.

    Returns:
        A :class:`SweepResult` whose rows carry the knob's value (column named after the
        knob), its kind (``upper`` for noise: at least the smallest noise meeting the target;
        ``lower`` for the others) and source.

    Raises:
        GridError: the grid is refused before anything runs.
    """
    targets = {k: v for k, v in (("epsilon", epsilon), ("delta", delta)) if v is not None}
    settings = {"task": "calibrate", **({"knob": knob} if knob else {})}
    sweep_args = {k: kwargs.pop(k) for k in ("store", "workers", "scheduler", "progress",
                                              "callback", "retry_failed", "accountant")
                  if k in kwargs}
    if "accountant" in sweep_args:
        settings["accountant"] = sweep_args.pop("accountant")
    g = as_grid(grid, {"sweep": settings, "grid": {**kwargs, **targets}})
    return run_grid(g, **sweep_args)


def run_grid(grid: Grid, *, store: str | Path | None = None, workers: int | None = None,
             scheduler: Any = None, progress: bool = True,
             callback: Callback | None = None, retry_failed: bool = False) -> SweepResult:
    """Run a checked grid: what ``store`` lacks is computed, each row written as it finishes.

    Args:
        grid: the checked grid.
        store, workers, scheduler, progress, callback, retry_failed: as :func:`sweep`.

    Returns:
        A :class:`SweepResult`, rows in grid order (read back from the store).

    Raises:
        ValueError: ``workers`` is not a whole number >= 1.
        RuntimeError: a worker runs another privamp version (nothing of it is written).
        ImportError: a parallel sweep without Dask installed.
    """
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ValueError(f"workers must be a whole number >= 1, got {workers!r}")
    began = time.perf_counter()
    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS") or None
    timings = {"startup_seconds": 0.0}
    version = privamp_version()
    with Store(store, version) as db:
        done = db.finished()
        if retry_failed:
            failed = [k for k in grid.keys if k in done and done[k]["status"] == "failed"]
            db.forget(failed)
            for k in failed:
                del done[k]
        todo = [(k, c) for k, c in zip(grid.keys, grid.configs, strict=True) if k not in done]
        total = len(grid)
        state = {"done": total - len(todo)}
        other = db.other_versions(k for k, _ in todo) if store is not None else 0
        bar = progress_bar(total=total, desc="sweep", unit=" configs", log_every=10.0) \
            if progress else None
        if bar is not None and state["done"]:
            bar.n = bar.initial = bar.last_print_n = state["done"]  # rate from new work only
            bar.refresh()
        if other and bar is not None:
            bar.write(f"sweep: {other} configurations have rows from another privamp version "
                      f"only: computed again with {version}", file=sys.stderr)

        def on_rows(pairs: list[tuple[str, dict[str, Any]]], started: list[str] | None = None
                    ) -> None:
            """Finished rows: checked, written at once (one transaction, with the hand-out
            of the keys ``started``), then reported (finished = committed)."""
            for _, row in pairs:
                if row.get("version") != version:
                    raise RuntimeError(f"a worker runs privamp {row.get('version')}, this "
                                       f"process {version}: install the same version")
            db.put(pairs, started or [])
            for _, row in pairs:
                state["done"] += 1
                if callback is not None:
                    callback(state["done"], total, row)
            if bar is not None:
                bar.update(len(pairs))

        engine = "store" if not todo else "serial"
        try:
            if not todo:
                pass
            elif address is None and (workers == 1 or len(todo) == 1 or (
                    workers is None and (os.cpu_count() or 1) == 1)):  # nothing to share
                run_serial(todo, evaluate, on_rows)
            else:
                engine = "local dask" if address is None else (
                    address if isinstance(address, str) else "dask client")
                _dask(todo, db, workers, address, on_rows, timings)
        finally:
            if bar is not None:
                bar.close()
        stored = db.finished()
    rows = [stored[k] for k in grid.keys]
    knob = grid.settings.get("knob", "noise")
    return SweepResult(rows, columns_of(rows, grid.task, knob), computed=len(todo),
                       reused=total - len(todo), store=None if store is None else str(store),
                       other_versions=other, task=grid.task,
                       meta={"knob": knob, "source": grid.source, "engine": engine,
                             "seconds": time.perf_counter() - began, **timings})

