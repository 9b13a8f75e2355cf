"""The client caches in the data folder's SQLite database (``--data FOLDER``).

The same file as the versions, ``{FOLDER}/workbench.sqlite3`` (WAL mode), on a connection of
its own per process (a forked worker opens its own), so that a cache never waits for a
version write's work in this process. A write is one ``BEGIN IMMEDIATE`` transaction; a
read one deferred transaction (one snapshot). ``synchronous=NORMAL``: a cache is ephemeral,
so a commit need not wait for the disk (a power cut loses at most the last caches' writes,
and the database stays whole).
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
from workbench.server.database.caches import Execute, SQLCaches, T
from workbench.server.database.sqlite import BUSY_SECONDS, FILE

SCHEMA = """
CREATE TABLE IF NOT EXISTS workbench_caches (
    id TEXT PRIMARY KEY,
    sealed INTEGER NOT NULL,
    token TEXT NOT NULL,
    counter INTEGER NOT NULL,
    used REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS workbench_cache_resources (
    cache TEXT NOT NULL,
    name TEXT NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (cache, name)
);
CREATE TABLE IF NOT EXISTS workbench_cache_ends (
    id TEXT PRIMARY KEY,
    reason TEXT NOT NULL,
    at REAL NOT NULL,
    used REAL NOT NULL,
    limit_name TEXT NOT NULL,
    limit_value REAL NOT NULL
);
"""


class SQLiteCaches(SQLCaches):
    """The client caches in ``{folder}/workbench.sqlite3``."""

    def __init__(self, folder: Path) -> None:
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
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(SCHEMA)
            self._db, self._pid = db, os.getpid()
        return self._db

    def _run(self, work: Callable[[Execute], T], *, write: bool) -> T:
        """``work`` in one transaction on this process's connection."""

        def execute(sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            return db.execute(sql, args).fetchall()

        with self._mutex:
            try:
                db = self._connection()
                db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    done = work(execute)
                    db.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                name = getattr(exc, "sqlite_errorname", "") or type(exc).__name__
                raise StorageError(f"The client caches could not be read or kept ({name})") from exc
            return done

    def close(self) -> None:
        """Close this process's connection."""
        with self._mutex:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db = None
