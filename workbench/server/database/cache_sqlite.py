"""The client caches in the data folder's SQLite database (``--data FOLDER``).

The same file as the versions, ``{FOLDER}/workbench.sqlite3`` (WAL mode), on a connection of
its own per process (a forked worker opens its own), so that a cache never waits for a
version write's work in this process. A write is one ``BEGIN IMMEDIATE`` transaction; a
read one deferred transaction (one snapshot). ``synchronous=NORMAL``: a cache is ephemeral,
so a commit need not wait for the disk (a power cut loses at most the last caches' writes,
and the database stays whole).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from workbench.server.database.caches import Execute, SQLCaches, T
from workbench.server.database.sessions import SqliteSession
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
        self._session = SqliteSession(
            self.path, SCHEMA, "The client caches", busy=BUSY_SECONDS,
            pragmas=("synchronous=NORMAL",),
        )  # fmt: skip

    def _run(self, work: Callable[[Execute], T], *, write: bool) -> T:
        """``work`` in one transaction on this process's connection."""
        return self._session.run(lambda execute, _: work(execute), write=write)

    def close(self) -> None:
        """Close this process's connection."""
        self._session.close()
