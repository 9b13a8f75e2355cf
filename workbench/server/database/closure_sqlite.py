"""The ``$closure`` tables in the data folder's SQLite database (``--data FOLDER``).

The same file as the versions, ``{FOLDER}/workbench.sqlite3`` (WAL mode), on a connection of
its own per process (a forked worker opens its own). A write is one ``BEGIN IMMEDIATE``
transaction, which holds the database's write lock while an addition plans, so that two
workers adding to one closure take turns. ``synchronous=FULL``: a client keeps its copy of
a closure table by the versions it was answered, so a version answered is never lost.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from workbench.server.database.closures import Execute, Many, SQLClosures, T
from workbench.server.database.sessions import SqliteSession
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
        self._session = SqliteSession(self.path, SCHEMA, "The closure tables", busy=BUSY_SECONDS)

    def _run(self, work: Callable[[Execute, Many], T], *, write: bool) -> T:
        """``work`` in one transaction on this process's connection."""
        return self._session.run(work, write=write)

    def close(self) -> None:
        """Close this process's connection."""
        self._session.close()
