"""The ``$closure`` tables in the PostgreSQL database of a fleet (``--database ...``).

Every instance reads and writes the same three tables (``closures.py``), so a closure
initialised through one instance grows through every other; an addition locks the
closure's row (``SELECT ... FOR UPDATE``) while it plans and writes. Each process opens its
own connection (autocommit, one transaction per call, ``%s`` for ``?``); a connection found
broken is opened again once. The database unreachable (or refusing): ``StorageError``, 503.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any

import psycopg

from workbench import forksafe
from workbench.errors import StorageError
from workbench.server.database.closures import Execute, Many, SQLClosures, T
from workbench.server.database.postgresql import CONNECT_SECONDS, make_tables

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

    def _run(self, work: Callable[[Execute, Many], T], *, write: bool) -> T:
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
                    raise _failed(f"the database refused it ({type(exc).__name__})") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _once(self, work: Callable[[Execute, Many], T]) -> T:
        db = self._connection()

        def execute(sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            cursor = db.execute(sql.replace("?", "%s"), args)
            return cursor.fetchall() if cursor.description else []

        def many(sql: str, rows: list[tuple[Any, ...]]) -> None:
            if rows:
                with db.cursor() as cursor:
                    cursor.executemany(sql.replace("?", "%s"), rows)

        with db.transaction():
            return work(execute, many)

    def close(self) -> None:
        """Close this process's connection."""
        with self._mutex:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db, self._pid = None, 0


def _failed(reason: str) -> StorageError:
    return StorageError(f"The closure tables could not be read or kept: {reason}", status=503)
