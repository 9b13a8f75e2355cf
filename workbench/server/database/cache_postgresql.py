"""The client caches in the PostgreSQL database of a fleet (``--database postgresql://...``).

Every instance reads and writes the same three tables (``caches.py``), so a cache started on
one instance works on every other: a load balancer may send the requests of one
``X-Cache-Id`` to any instance. Each process opens its own connection (autocommit, one
transaction per call, with ``%s`` for ``?``); a connection found broken is opened again
once. The database unreachable (or refusing): ``StorageError``, 503.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any

import psycopg

from workbench import forksafe
from workbench.errors import StorageError
from workbench.server.database.caches import Execute, SQLCaches, T
from workbench.server.database.postgresql import CONNECT_SECONDS, make_tables

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
        self._mutex = forksafe.lock()
        self._pid = 0
        self._db: psycopg.Connection[Any] | None = None
        self._inherited: list[object] = []  # from before a fork: never touched
        make_tables(url, SCHEMA_LOCK, SCHEMA)

    def _connection(self) -> psycopg.Connection[Any]:
        if self._pid != os.getpid():
            self._inherited.append(self._db)
            self._db, self._pid = None, os.getpid()
        if self._db is None or self._db.closed or self._db.broken:
            self._db = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_SECONDS)
        return self._db

    def _run(self, work: Callable[[Execute], T], *, write: bool) -> T:
        """``work`` in one transaction; once more on a new connection when the first was
        found broken (the database restarted since it was last used)."""
        with self._mutex:
            for attempt in (1, 2):
                try:
                    return self._once(work)
                except psycopg.OperationalError as exc:
                    if self._db is not None:
                        with contextlib.suppress(psycopg.Error):
                            self._db.close()
                    if attempt == 2:
                        raise _failed("the database cannot be reached") from exc
                except psycopg.Error as exc:
                    name = type(exc).__name__
                    raise _failed(f"the database refused it ({name})") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _once(self, work: Callable[[Execute], T]) -> T:
        db = self._connection()

        def execute(sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            cursor = db.execute(sql.replace("?", "%s"), args)
            return cursor.fetchall() if cursor.description else []

        with db.transaction():
            return work(execute)

    def close(self) -> None:
        """Close this process's connection."""
        with self._mutex:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db, self._pid = None, 0


def _failed(reason: str) -> StorageError:
    return StorageError(f"The client caches could not be read or kept: {reason}", status=503)
