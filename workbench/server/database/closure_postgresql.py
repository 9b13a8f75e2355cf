"""The ``$closure`` tables in the PostgreSQL database of a fleet (``--database ...``).

Every instance reads and writes the same three tables (``closures.py``), so a closure
initialised through one instance grows through every other; an addition locks the
closure's row (``SELECT ... FOR UPDATE``) while it plans and writes. Each process opens its
own connection (autocommit, one transaction per call, ``%s`` for ``?``); a connection found
broken is opened again once. The database unreachable (or refusing): ``StorageError``, 503.
"""

from __future__ import annotations

from collections.abc import Callable

from workbench.server.database.closures import Execute, Many, SQLClosures, T
from workbench.server.database.postgresql import CONNECT_SECONDS, make_tables
from workbench.server.database.sessions import PostgresSession

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS workbench_closures (
    name TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    version BIGINT NOT NULL,
    used DOUBLE PRECISION NOT NULL
)""",
    """
CREATE TABLE IF NOT EXISTS workbench_closure_concepts (
    name TEXT NOT NULL,
    system TEXT NOT NULL,
    code TEXT NOT NULL,
    version BIGINT NOT NULL,
    PRIMARY KEY (name, system, code)
)""",
    """
CREATE TABLE IF NOT EXISTS workbench_closure_entries (
    name TEXT NOT NULL,
    system TEXT NOT NULL,
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    version BIGINT NOT NULL,
    PRIMARY KEY (name, system, source, target)
)""",
    """
CREATE INDEX IF NOT EXISTS workbench_closure_entries_version
    ON workbench_closure_entries (name, version)""",
)
SCHEMA_LOCK = 0x77626373  # the advisory lock of making the tables ("wbcs")


class PostgresClosures(SQLClosures):
    """The closure tables in the PostgreSQL database at ``url``."""

    _LOCK = " FOR UPDATE"

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self._session = PostgresSession(url, "The closure tables", connect_seconds=CONNECT_SECONDS)
        make_tables(url, SCHEMA_LOCK, SCHEMA)

    def _run(self, work: Callable[[Execute, Many], T], *, write: bool) -> T:
        """``work`` in one transaction; once more on a new connection when the first was
        found broken (the database restarted since it was last used)."""
        return self._session.run(work, write=write)

    def close(self) -> None:
        """Close this process's connection."""
        self._session.close()
