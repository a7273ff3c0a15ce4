"""Sweeps and calibration tables over grids of configurations, on Dask, resumable (issue 29).

    >>> import privamp as pa
    >>> r = pa.sweep("grid.toml", store="grid.sqlite")            # doctest: +SKIP
    >>> r.to_csv("grid.csv"); r.to_pandas()                       # doctest: +SKIP
    >>> t = pa.calibration_table(sampler=["poisson", "shuffle"], batch_size=[128, 256],
    ...                          dataset_size=60000, epochs=[1, 10], epsilon=3, delta=1e-5)
    ...                                                           # doctest: +SKIP

``privamp.sweep`` is both this package and, called, the function :func:`sweep`
(``pa.sweep(...)``): a function of that name on ``privamp`` would hide the package from
``import privamp.sweep.runner``.

Modules: ``grid`` (grid files, checked before anything runs), ``runs`` (one configuration:
its key, its run, its row), ``store`` (SQLite in WAL mode), ``tasks`` (tasks and commit
groups), ``runner`` (serial or Dask), ``cluster`` (the Dask side: imported only by a parallel
sweep), ``table`` (rows, CSV, DataFrame, Parquet), ``plots`` (heat maps).  Importing this
package does not import Dask (only a parallel sweep does).
"""

from __future__ import annotations

import inspect
import sys
import types
from typing import Any

from .grid import Grid, GridError, Problem, grid_from_mapping, load_grid
from .runner import calibration_table, local_cluster, run_grid, sweep
from .store import Store
from .table import SweepResult

__all__ = [
    "CallablePackage",
    "Grid",
    "GridError",
    "Problem",
    "Store",
    "SweepResult",
    "calibration_table",
    "grid_from_mapping",
    "load_grid",
    "local_cluster",
    "run_grid",
    "sweep",
]


class CallablePackage(types.ModuleType):
    """The type of this package: calling it calls :func:`sweep`."""

    def __call__(self, *args: Any, **kwargs: Any) -> SweepResult:
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = CallablePackage
__signature__ = inspect.signature(sweep)  # what help() and inspect show for pa.sweep(...)
