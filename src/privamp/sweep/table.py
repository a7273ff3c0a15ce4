"""A sweep's results as rows: CSV always, a pandas DataFrame and Parquet when pandas (and
pyarrow) are installed."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .runs import RESULT_COLUMNS, result_columns

__all__ = ["SweepResult", "columns_of"]

#: configuration columns shown first, in this order (the rest follow, sorted)
LEADING = ("task", "sampler", "mechanism", "sigma", "scale", "theta", "rate", "batch_size",
           "dataset_size", "steps", "epochs", "relation", "group", "delta", "epsilon")


def columns_of(rows: Sequence[dict[str, Any]], task: str, knob: str = "noise") -> list[str]:
    """The table's columns: the configuration's (leading ones first), then the results."""
    tail = [*result_columns(task, knob), *RESULT_COLUMNS]
    keys = {k for r in rows for k in r} - set(tail)
    return [k for k in LEADING if k in keys] + sorted(keys - set(LEADING)) + tail


@dataclass
class SweepResult:
    """The rows of a sweep, in grid order, and how they were obtained.

    Attributes:
        rows: one dict per configuration (:func:`privamp.sweep.runs.evaluate`'s row).
        columns: the column order.
        computed: configurations computed by this call.
        reused: configurations read from the store.
        store: the store's path (None: in memory).
        other_versions: configurations with a row only from another privamp version (not
            reused, computed again).
    """

    rows: list[dict[str, Any]]
    columns: list[str]
    computed: int = 0
    reused: int = 0
    store: str | None = None
    other_versions: int = 0
    task: str = "epsilon"
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def counts(self) -> dict[str, int]:
        """How many rows are answered, refused, failed."""
        out = {"answered": 0, "refused": 0, "failed": 0}
        for r in self.rows:
            out[r["status"]] = out.get(r["status"], 0) + 1
        return out

    def summary(self) -> str:
        """One line: counts and where the rows came from."""
        c = self.counts()
        where = f" (store {self.store})" if self.store else ""
        note = (f"; {self.other_versions} rows of another privamp version not reused"
                if self.other_versions else "")
        return (f"{len(self.rows)} configurations: {c['answered']} answered, {c['refused']} "
                f"refused, {c['failed']} failed; {self.computed} computed now, {self.reused} "
                f"from the store{where}{note}")

    def to_csv(self, path: str | Path | None = None) -> str:
        """The rows as CSV (lists as JSON); written to ``path`` when given.

        Returns:
            the CSV text.
        """
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=self.columns, lineterminator="\n")
        w.writeheader()
        for r in self.rows:
            w.writerow({k: _cell(r.get(k)) for k in self.columns})
        text = buf.getvalue()
        if path is not None:
            Path(path).write_text(text)
        return text

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame.

        Raises:
            ImportError: pandas is not installed (``pip install pandas``).
        """
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("to_pandas needs pandas: pip install pandas "
                              "(or use to_csv / rows)") from exc
        return pd.DataFrame([{k: r.get(k) for k in self.columns} for r in self.rows],
                            columns=self.columns)

    def to_parquet(self, path: str | Path) -> None:
        """Write the rows to a Parquet file.

        Raises:
            ImportError: pandas or pyarrow is not installed.
        """
        frame = self.to_pandas()
        for c in frame.columns:  # list-valued keys (custom weights) as JSON text
            if frame[c].map(lambda v: isinstance(v, list)).any():
                frame[c] = frame[c].map(lambda v: json.dumps(v) if isinstance(v, list) else v)
        try:
            frame.to_parquet(path, index=False)
        except ImportError as exc:
            raise ImportError("to_parquet needs pyarrow: pip install pyarrow") from exc

    def write(self, path: str | Path) -> None:
        """Write to ``path``: Parquet for ``.parquet``, else CSV."""
        if str(path).endswith(".parquet"):
            self.to_parquet(path)
        else:
            self.to_csv(path)


def _cell(v: Any) -> Any:
    if isinstance(v, list):
        return json.dumps(v)
    if isinstance(v, float):
        return repr(v)
    return v
