"""One database connection per process, work run in one transaction: what the client
caches and the closure tables (and whatever else keeps small tables beside the resources)
share, for SQLite (``{folder}/workbench.sqlite3``) and PostgreSQL.

A connection opened before a fork is never touched after it (kept aside, unused), so each
worker process of a server opens its own.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from workbench import forksafe
from workbench.errors import StorageError

T = TypeVar("T")
#: Runs one statement (``?`` placeholders) and returns its rows.
Execute = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]
#: Runs one statement for each of many rows.
Many = Callable[[str, list[tuple[Any, ...]]], None]
Work = Callable[[Execute, Many], T]


class SqliteSession:
    """This process's connection to the SQLite database at ``path`` (``schema`` run when
    it opens, ``pragmas`` set); ``what`` names what it keeps in its error messages."""

    def __init__(
        self, path: Path, schema: str, what: str, *, busy: float, pragmas: Iterable[str] = ()
    ) -> None:
        self.path, self.schema, self.what, self.busy = path, schema, what, busy
        self.pragmas = ("journal_mode=WAL", *pragmas)
        self._mutex = forksafe.lock()
        self._pid = 0
        self._db: sqlite3.Connection | None = None
        self._inherited: list[sqlite3.Connection] = []  # from before a fork: never touched
        try:
            self._connection()
        except sqlite3.Error as exc:
            raise StorageError(f"The database in {path.parent} cannot be opened: {exc}") from exc

    def _connection(self) -> sqlite3.Connection:
        if self._pid != os.getpid() or self._db is None:
            if self._db is not None:
                self._inherited.append(self._db)
            db = sqlite3.connect(
                self.path, timeout=self.busy, isolation_level=None, check_same_thread=False
            )
            for pragma in self.pragmas:
                db.execute(f"PRAGMA {pragma}")
            db.executescript(self.schema)
            self._db, self._pid = db, os.getpid()
        return self._db

    def run(self, work: Work[T], *, write: bool) -> T:
        """``work`` in one transaction on this process's connection (``write``: taking the
        write lock at once, so two writers never deadlock)."""

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
                raise StorageError(f"{self.what} could not be read or kept ({name})") from exc
            return done

    def close(self) -> None:
        """Close this process's connection."""
        with self._mutex:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db = None


class PostgresSession:
    """This process's connection to the PostgreSQL database at ``url``; ``what`` names what
    it keeps in its error messages (503: the database cannot be reached or refused)."""

    def __init__(self, url: str, what: str, *, connect_seconds: int) -> None:
        self.url, self.what, self.connect_seconds = url, what, connect_seconds
        self._mutex = forksafe.lock()
        self._pid = 0
        self._db: Any = None  # a psycopg.Connection, opened on first use
        self._inherited: list[object] = []  # from before a fork: never touched

    def _connection(self) -> Any:
        import psycopg

        if self._pid != os.getpid():
            self._inherited.append(self._db)
            self._db, self._pid = None, os.getpid()
        if self._db is None or self._db.closed or self._db.broken:
            self._db = psycopg.connect(
                self.url, autocommit=True, connect_timeout=self.connect_seconds
            )
        return self._db

    def run(self, work: Work[T], *, write: bool) -> T:
        """``work`` in one transaction; once more on a new connection when the first was
        found broken (the database restarted since it was last used)."""
        import psycopg

        with self._mutex:
            for attempt in (1, 2):
                try:
                    return self._once(work)
                except psycopg.OperationalError as exc:
                    if self._db is not None:
                        with contextlib.suppress(psycopg.Error):
                            self._db.close()
                    if attempt == 2:
                        raise self._failed("the database cannot be reached") from exc
                except psycopg.Error as exc:
                    name = type(exc).__name__
                    raise self._failed(f"the database refused it ({name})") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _once(self, work: Work[T]) -> T:
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

    def _failed(self, reason: str) -> StorageError:
        return StorageError(f"{self.what} could not be read or kept: {reason}", status=503)

    def close(self) -> None:
        """Close this process's connection."""
        with self._mutex:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db, self._pid = None, 0
