"""The ``$closure`` tables in the data folder's SQLite database (``--data FOLDER``).

The same file as the versions, ``{FOLDER}/workbench.sqlite3`` (WAL mode), on a connection of
its own per process (a forked worker opens its own). A write is one ``BEGIN IMMEDIATE``
transaction, which holds the database's write lock while an addition plans, so that two
workers adding to one closure take turns. ``synchronous=FULL``: a client keeps its copy of
a closure table by the versions it was answered, so a version answered is never lost.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench import forksafe
from workbench.errors import StorageError
from workbench.server.database.closures import Execute, Many, SQLClosures, T
from workbench.server.database.sqlite import BUSY_SECONDS, FILE

SCHEMA = """
CREATE TABLE IF NOT EXISTS workbench_closures (
    name TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    version INTEGER NOT NULL,
    used REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS workbench_closure_concepts (
    name TEXT NOT NULL,
    system TEXT NOT NULL,
    code TEXT NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (name, system, code)
);
CREATE TABLE IF NOT EXISTS workbench_closure_entries (
    name TEXT NOT NULL,
    system TEXT NOT NULL,
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (name, system, source, target)
);
CREATE INDEX IF NOT EXISTS workbench_closure_entries_version
    ON workbench_closure_entries (name, version);
"""


class SQLiteClosures(SQLClosures):
    """The closure tables in ``{folder}/workbench.sqlite3``."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.path = folder / FILE
        self._mutex = forksafe.lock()
        self._pid = 0
        self._db: sqlite3.Connection | None = None
        self._inherited: list[sqlite3.Connection] = []  # from before a fork: never touched
        try:
            self._connection()
        except sqlite3.Error as exc:
            raise StorageError(f"The database in {folder} cannot be opened: {exc}") from exc

    def _connection(self) -> sqlite3.Connection:
        if self._pid != os.getpid() or self._db is None:
            if self._db is not None:
                self._inherited.append(self._db)
            db = sqlite3.connect(
                self.path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False
            )
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
            self._db, self._pid = db, os.getpid()
        return self._db

    def _run(self, work: Callable[[Execute, Many], T], *, write: bool) -> T:
        """``work`` in one transaction on this process's connection."""

        def execute(sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            return db.execute(sql, args).fetchall()

        def many(sql: str, rows: list[tuple[Any, ...]]) -> None:
            db.executemany(sql, rows)

        with self._mutex:
            try:
                db = self._connection()
                db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    done = work(execute, many)
                    db.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                name = getattr(exc, "sqlite_errorname", "") or type(exc).__name__
                raise StorageError(
                    f"The closure tables could not be read or kept ({name})"
                ) from exc
            return done

    def close(self) -> None:
        """Close this process's connection."""
        with self._mutex:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db = None
