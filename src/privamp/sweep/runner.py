"""Running a sweep: what the store lacks is computed, serially or on Dask, and written at once.

The default engine is Dask (``dask[distributed]``, the ``sweep`` extra): an in-process
``LocalCluster`` with one worker process per core, started and stopped by the call (no
service).  ``scheduler="tcp://HOST:8786"`` (or ``DASK_SCHEDULER_ADDRESS`` in the environment)
runs on a real cluster of ``dask scheduler`` / ``dask worker`` processes, which must have the
same privamp installed; ``workers=1`` runs serially in this process, with no Dask at all.
Configurations are handed out in tasks of several cheap ones (the expensive first, alone),
so scheduling costs little; a task whose worker dies is retried by Dask (``retries=2``).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..progress import progress as progress_bar
from .grid import Grid, grid_from_mapping, load_grid
from .runs import evaluate, evaluate_batch, privamp_version
from .store import Store
from .table import SweepResult, columns_of

__all__ = ["sweep", "calibration_table", "as_grid", "batches"]

#: ``callback(done, total, row)`` after each finished configuration
Callback = Callable[[int, int, dict[str, Any]], None]

#: the Dask setting that would put MALLOC_TRIM_THRESHOLD_ in the local workers' environment
NO_TRIM = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"

#: relative cost of one configuration by sampler (Poisson: an FFT-composed PLD, fast)
_CHEAP = ("poisson", "with-replacement", "without-replacement", "subsampled-model-split",
          "model-split", "dropout")


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


def _cost(config: Mapping[str, Any]) -> float:
    base = 1.0 if config["sampler"] in _CHEAP else 20.0
    return base * (10.0 if config["task"] == "calibrate" else 1.0)


def batches(keys: list[str], configs: list[dict[str, Any]], workers: int
            ) -> list[list[int]]:
    """Indices of ``configs`` grouped into tasks: most expensive first, each task about
    1/(8 workers) of the total estimated cost (at most 64 configurations), so that every
    worker gets several tasks and an expensive configuration goes alone.

    Args:
        keys: the configurations' keys (parallel to ``configs``).
        configs: the configurations to hand out.
        workers: how many workers share them.

    Returns:
        The tasks, as lists of indices into ``configs``.
    """
    order = sorted(range(len(configs)), key=lambda i: -_cost(configs[i]))
    total = sum(_cost(configs[i]) for i in order)
    budget = total / max(1, 8 * workers)
    out: list[list[int]] = []
    cur: list[int] = []
    spent = 0.0
    for i in order:
        c = _cost(configs[i])
        if cur and (spent + c > budget or len(cur) >= 64):
            out.append(cur)
            cur, spent = [], 0.0
        cur.append(i)
        spent += c
    if cur:
        out.append(cur)
    return out


def _serial(todo: list[tuple[str, dict[str, Any]]], store: Store,
            on_rows: Callable[..., None]) -> None:
    if todo:
        store.started([todo[0][0]])
    for i, (key, cfg) in enumerate(todo):
        after = [todo[i + 1][0]] if i + 1 < len(todo) else []
        on_rows([(key, evaluate(cfg))], after)  # row i and the hand-out of i + 1: one commit


def _dask(todo: list[tuple[str, dict[str, Any]]], store: Store, workers: int | None,
          address: str | None, on_rows: Callable[[list[tuple[str, dict[str, Any]]]], None]
          ) -> None:
    try:
        import dask
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as exc:
        raise ImportError("a parallel sweep needs Dask: pip install 'privamp[sweep]' "
                          "(or run serially with workers=1)") from exc
    cluster = None
    if address:
        client = Client(address, timeout="30s")
        n = max(1, len(client.scheduler_info().get("workers", {})))
    else:
        n = workers or os.cpu_count() or 1
        # Dask sets MALLOC_TRIM_THRESHOLD_ in its workers by default, which turns off glibc's
        # adaptive mmap threshold: every large numpy array is then mapped and unmapped, and a
        # PLD accountant ran 2-3x slower in a worker than in this process (measured)
        with dask.config.set({NO_TRIM: None}):
            try:
                cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=logging.ERROR)
            except RuntimeError as exc:
                raise RuntimeError(
                    "the local Dask workers did not start; in a script, call the sweep under "
                    "`if __name__ == '__main__':` (worker processes are spawned and import "
                    "the script again), or run serially with workers=1") from exc
        client = Client(cluster)
    try:
        keys = [k for k, _ in todo]
        configs = [c for _, c in todo]
        groups = batches(keys, configs, n)
        store.started([keys[i] for g in groups for i in g])
        futures = {}
        for g in groups:
            fut = client.submit(evaluate_batch, [configs[i] for i in g], pure=False,
                                retries=2)
            futures[fut] = g
        for fut in as_completed(list(futures)):
            rows = fut.result()
            g = futures.pop(fut)
            on_rows([(keys[i], r) for i, r in zip(g, rows, strict=True)])
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def sweep(
    grid: Grid | str | Path | Mapping[str, Any] | None = None,
    *,
    task: str | None = None,
    accountant: str | None = None,
    store: str | Path | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
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
        scheduler: a Dask scheduler address (default ``$DASK_SCHEDULER_ADDRESS``); then
            ``workers`` is ignored.
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
             scheduler: str | None = None, progress: bool = True,
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
    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS") or None
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
            of the keys ``started``), then reported."""
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
                _serial(todo, db, on_rows)
            else:
                engine = address or "local dask"
                _dask(todo, db, workers, address, on_rows)
        finally:
            if bar is not None:
                bar.close()
        stored = db.finished()
    rows = [stored[k] for k in grid.keys]
    knob = grid.settings.get("knob", "noise")
    return SweepResult(rows, columns_of(rows, grid.task, knob), computed=len(todo),
                       reused=total - len(todo), store=None if store is None else str(store),
                       other_versions=other, task=grid.task,
                       meta={"knob": knob, "source": grid.source,
                             "engine": engine})

