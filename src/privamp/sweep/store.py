"""The sweep's store: an SQLite file in WAL mode holding one row per finished configuration.

Rows are written in groups, one transaction each (a Dask task's rows; in a serial sweep the
rows of ~0.25 s of work), keyed by (canonical configuration, privamp version): a process
killed at any point (``kill -9`` included) loses no committed row (only the group in flight,
never reported as finished), and the primary key makes a duplicate impossible.
``synchronous=NORMAL``: a commit survives the death of the process; only a power
failure may lose the last commits (which are then computed again, never half-written).

The ``attempts`` table logs every configuration handed to a worker (one line per hand-out), so
"nothing finished was computed again" can be checked from the store.  Rows of another privamp
version are kept but never reused: :meth:`Store.other_versions` counts them.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["Store"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    config TEXT NOT NULL, version TEXT NOT NULL, row TEXT NOT NULL, finished REAL NOT NULL,
    PRIMARY KEY (config, version)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT, config TEXT NOT NULL, version TEXT NOT NULL,
    started REAL NOT NULL, pid INTEGER NOT NULL);
"""


class Store:
    """An embedded store of sweep rows (``path`` None: in memory, nothing kept).

    Args:
        path: the SQLite file (created with its folder if missing).
        version: the privamp version rows are written and reused for.
    """

    def __init__(self, path: str | Path | None, version: str) -> None:
        self.path = None if path is None else Path(path)
        self.version = version
        if self.path is not None and self.path.parent != Path(""):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(":memory:" if self.path is None else str(self.path),
                                  timeout=60.0, isolation_level=None)
        if self.path is not None:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)

    def close(self) -> None:
        """Close the connection (the WAL is checkpointed by SQLite)."""
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------ reading
    def finished(self) -> dict[str, dict[str, Any]]:
        """Every finished row of this version, by configuration key."""
        cur = self.db.execute("SELECT config, row FROM results WHERE version = ?",
                              (self.version,))
        return {k: json.loads(r) for k, r in cur}

    def other_versions(self, keys: Iterable[str]) -> int:
        """How many of ``keys`` have a row only from another privamp version."""
        wanted = set(keys)
        mine = set(self.finished())
        cur = self.db.execute("SELECT DISTINCT config FROM results WHERE version != ?",
                              (self.version,))
        return sum(1 for (k,) in cur if k in wanted and k not in mine)

    def count(self) -> int:
        """Rows of this version."""
        return int(self.db.execute("SELECT COUNT(*) FROM results WHERE version = ?",
                                   (self.version,)).fetchone()[0])

    def attempts(self) -> list[tuple[str, float, int]]:
        """(configuration key, time handed out, process id) of every hand-out, in order."""
        cur = self.db.execute("SELECT config, started, pid FROM attempts WHERE version = ? "
                              "ORDER BY id", (self.version,))
        return [(k, float(t), int(p)) for k, t, p in cur]

    # ------------------------------------------------------------------------ writing
    def started(self, keys: Sequence[str]) -> None:
        """Log that ``keys`` were handed out for computation (one transaction)."""
        now, pid = time.time(), os.getpid()
        with self._transaction():
            self.db.executemany(
                "INSERT INTO attempts (config, version, started, pid) VALUES (?, ?, ?, ?)",
                [(k, self.version, now, pid) for k in keys])

    def put(self, rows: Sequence[tuple[str, dict[str, Any]]], started: Sequence[str] = ()
            ) -> int:
        """Write finished rows ``(key, row)`` in one transaction (a row already there is
        kept: never a duplicate), with the hand-out of the keys ``started`` (the next
        configurations of a serial sweep: one commit per configuration).

        Returns:
            how many rows were new.
        """
        now, pid = time.time(), os.getpid()
        with self._transaction():
            self.db.executemany(
                "INSERT INTO attempts (config, version, started, pid) VALUES (?, ?, ?, ?)",
                [(k, self.version, now, pid) for k in started])
            before = self.db.total_changes
            self.db.executemany(
                "INSERT OR IGNORE INTO results (config, version, row, finished) "
                "VALUES (?, ?, ?, ?)",
                [(k, self.version, json.dumps(r, sort_keys=True), now) for k, r in rows])
            return self.db.total_changes - before

    def forget(self, keys: Sequence[str]) -> None:
        """Drop this version's rows of ``keys`` (to compute them again)."""
        with self._transaction():
            self.db.executemany("DELETE FROM results WHERE config = ? AND version = ?",
                                [(k, self.version) for k in keys])

    def _transaction(self) -> _Transaction:
        return _Transaction(self.db)


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error) on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *rest: object) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")
