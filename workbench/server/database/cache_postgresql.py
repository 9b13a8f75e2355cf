"""The client caches in the PostgreSQL database of a fleet (``--database postgresql://...``).

Every instance reads and writes the same three tables (``caches.py``), so a cache started on
one instance works on every other: a load balancer may send the requests of one
``X-Cache-Id`` to any instance. Each process opens its own connection (autocommit, one
transaction per call, with ``%s`` for ``?``); a connection found broken is opened again
once. The database unreachable (or refusing): ``StorageError``, 503.
"""

from __future__ import annotations

from collections.abc import Callable

from workbench.server.database.caches import Execute, SQLCaches, T
from workbench.server.database.postgresql import CONNECT_SECONDS, make_tables
from workbench.server.database.sessions import PostgresSession

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS workbench_caches (
    id TEXT PRIMARY KEY,
    sealed INTEGER NOT NULL,
    token TEXT NOT NULL,
    counter BIGINT NOT NULL,
    used DOUBLE PRECISION NOT NULL
)""",
    """
CREATE TABLE IF NOT EXISTS workbench_cache_resources (
    cache TEXT NOT NULL,
    name TEXT NOT NULL,
    body BYTEA NOT NULL,
    PRIMARY KEY (cache, name)
)""",
    """
CREATE TABLE IF NOT EXISTS workbench_cache_ends (
    id TEXT PRIMARY KEY,
    reason TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    used DOUBLE PRECISION NOT NULL,
    limit_name TEXT NOT NULL,
    limit_value DOUBLE PRECISION NOT NULL
)""",
)
SCHEMA_LOCK = 0x77626E64  # the advisory lock of making the tables ("wbnd")


class PostgresCaches(SQLCaches):
    """The client caches in the PostgreSQL database at ``url``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._session = PostgresSession(url, "The client caches", connect_seconds=CONNECT_SECONDS)
        make_tables(url, SCHEMA_LOCK, SCHEMA)

    def _run(self, work: Callable[[Execute], T], *, write: bool) -> T:
        """``work`` in one transaction; once more on a new connection when the first was
        found broken (the database restarted since it was last used)."""
        return self._session.run(lambda execute, _: work(execute), write=write)

    def close(self) -> None:
        """Close this process's connection."""
        self._session.close()
