"""Versions in a PostgreSQL database shared by several servers (``--database postgresql://...``).

N server instances, on N machines, each loading the same packages and releases, keep their
authored resources in one table, ``workbench_versions``, of one database (psycopg 3). A write
is one transaction that first takes a transaction-level advisory lock (``pg_advisory_xact_lock``,
one key for the table), so writes are serialised across instances exactly as SQLite's
``BEGIN IMMEDIATE`` serialises them across processes: the instance reads what the others
committed, decides ``If-Match`` / ``If-None-Exist`` against it, inserts, and sends
``NOTIFY workbench_versions`` in the same transaction (delivered at its commit).

Every instance keeps a second connection that ``LISTEN``\\s on that channel in a thread of its
own; a notification marks the instance as behind (``changed``: a flag, no round trip), and
its next request applies the versions committed since (``changes``). Another instance
therefore serves a write once the notification has crossed the network and that instance
gets a request: a few milliseconds on one network, not at once (the write is answered at the
commit, the others learn of it after it). When the listening connection is lost, it is
opened again (every ``RETRY_SECONDS``) and the instance then catches up, since it may have
missed notifications.

With the database unreachable a write answers 503 (``StorageError``: nothing was stored) and
the resources in memory are still served; once it is back, the next write reconnects.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import psycopg

from workbench import forksafe, jsonio
from workbench.errors import StorageError
from workbench.server.database.base import Change, Version, VersionStore, not_stored

log = logging.getLogger("workbench.server")

CHANNEL = "workbench_versions"
LOCK_KEY = 0x77626E63  # the advisory lock of writes ("wbnc")
CONNECT_SECONDS = 5
RETRY_SECONDS = 0.5
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {CHANNEL} (
    seq BIGSERIAL PRIMARY KEY,
    type TEXT NOT NULL,
    id TEXT NOT NULL,
    number INTEGER NOT NULL,
    deleted BOOLEAN NOT NULL,
    body BYTEA NOT NULL,
    UNIQUE (type, id, number)
)
"""
_COLUMNS = "seq, type, id, number, deleted, body"
_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")


def shown(url: str) -> str:
    """The database URL without its password (for messages)."""
    return _PASSWORD.sub(r"\1***@", url)


def make_tables(url: str, lock: int, statements: Iterable[str]) -> None:
    """Run ``statements`` (``CREATE ... IF NOT EXISTS``) on the database at ``url`` under
    the advisory lock ``lock``, so instances starting together do not race; StorageError
    when the database cannot be reached."""
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_SECONDS) as db:
            db.execute("SELECT pg_advisory_lock(%s)", (lock,))
            for statement in statements:
                db.execute(statement)
            db.execute("SELECT pg_advisory_unlock(%s)", (lock,))
    except psycopg.Error as exc:
        raise StorageError(f"The database {shown(url)} cannot be reached: {exc}") from exc


def _change(row: tuple[Any, ...]) -> Change:
    seq, rtype, rid, number, deleted, body = row
    resource = jsonio.loads(bytes(body), exact_decimals=True)
    return Change(int(seq), rtype, rid, Version(int(number), resource, bool(deleted)))


class PostgresVersions(VersionStore):
    """The versions in a PostgreSQL database; each process (a forked worker too) opens its
    own connections, one for the work and one that listens, on first use."""

    shared = True

    def __init__(self, url: str) -> None:
        self.url = url
        self._mutex = forksafe.rlock()
        self._pid = 0
        self._db: psycopg.Connection[Any] | None = None
        self._behind = threading.Event()
        self._inherited: list[object] = []  # from before a fork: never touched
        make_tables(url, LOCK_KEY, [SCHEMA])

    # --- connections -------------------------------------------------------------------

    def _connection(self) -> psycopg.Connection[Any]:
        """This process's work connection, (re)opened when missing or broken."""
        if self._pid != os.getpid():
            self._inherited.append(self._db)
            self._db, self._pid = None, os.getpid()
            self._behind = threading.Event()  # (the parent's may be held by its thread)
            self._behind.set()  # the parent's state is not this process's
            threading.Thread(target=self._listen, name="workbench-listen", daemon=True).start()
        if self._db is None or self._db.closed or self._db.broken:
            try:
                self._db = psycopg.connect(
                    self.url, autocommit=True, connect_timeout=CONNECT_SECONDS
                )
            except psycopg.Error as exc:
                raise _unreachable(exc) from exc
        return self._db

    def _listen(self) -> None:
        """The listening thread: mark this process behind at every notification, and once
        more after every (re)connection (notifications may have been missed)."""
        pid = os.getpid()
        while self._pid == pid:
            try:
                with psycopg.connect(
                    self.url, autocommit=True, connect_timeout=CONNECT_SECONDS
                ) as listening:
                    listening.execute(f"LISTEN {CHANNEL}")
                    self._behind.set()
                    for _ in listening.notifies():
                        self._behind.set()
            except psycopg.Error as exc:
                log.warning("Listening to %s failed (%s); again soon", shown(self.url), exc)
            threading.Event().wait(RETRY_SECONDS)

    # --- the contract ------------------------------------------------------------------

    def _retried(self, first: str, args: tuple[object, ...] = ()) -> psycopg.Cursor[Any]:
        """``first`` executed on the work connection, outside a transaction; a connection
        found broken (the database restarted since it was last used) is opened again once."""
        for attempt in (1, 2):
            db = self._connection()
            try:
                return db.execute(first, args)
            except psycopg.OperationalError as exc:
                with contextlib.suppress(psycopg.Error):
                    db.close()
                if attempt == 2:
                    raise _unreachable(exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """A transaction holding the writes' advisory lock; ``NOTIFY`` at its commit."""
        with self._mutex:
            db = self._retried("BEGIN").connection
            try:
                db.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
                yield
                db.execute(f"NOTIFY {CHANNEL}")
                db.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(psycopg.Error):
                    db.execute("ROLLBACK")
                if isinstance(exc, psycopg.Error):
                    raise _unreachable(exc) from exc
                raise

    def save(self, rtype: str, rid: str, version: Version) -> int:
        """Insert a version (inside ``transaction``); return its ``seq``."""
        body = jsonio.dumps(version.resource)
        with self._mutex:
            row = (
                self._connection()
                .execute(
                    f"INSERT INTO {CHANNEL} (type, id, number, deleted, body) "
                    "VALUES (%s, %s, %s, %s, %s) RETURNING seq",
                    (rtype, rid, version.number, version.deleted, body),
                )
                .fetchone()
            )
        assert row is not None
        return int(row[0])

    def _rows(self, sql: str, args: tuple[object, ...]) -> list[tuple[Any, ...]]:
        with self._mutex:
            db = self._connection()
            try:
                if db.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                    return self._retried(sql, args).fetchall()
                return db.execute(sql, args).fetchall()  # inside ``transaction``
            except psycopg.Error as exc:
                raise _unreachable(exc) from exc

    def load(self, rtype: str, rid: str, number: int) -> Version | None:
        """One version, or None."""
        sql = f"SELECT {_COLUMNS} FROM {CHANNEL} WHERE type = %s AND id = %s AND number = %s"
        found = self._rows(sql, (rtype, rid, number))
        return _change(found[0]).version if found else None

    def history(self, rtype: str, rid: str) -> list[Version]:
        """Every version of a resource, oldest first."""
        sql = f"SELECT {_COLUMNS} FROM {CHANNEL} WHERE type = %s AND id = %s ORDER BY number"
        return [_change(row).version for row in self._rows(sql, (rtype, rid))]

    def numbers(self, rtype: str, rid: str) -> list[int]:
        """The version numbers of a resource, oldest first (no body read)."""
        sql = f"SELECT number FROM {CHANNEL} WHERE type = %s AND id = %s ORDER BY number"
        return [int(row[0]) for row in self._rows(sql, (rtype, rid))]

    def ids(self, rtype: str) -> list[str]:
        """The ids of a type's resources with versions here."""
        sql = f"SELECT DISTINCT id FROM {CHANNEL} WHERE type = %s ORDER BY id"
        return [str(row[0]) for row in self._rows(sql, (rtype,))]

    def latest(self) -> Iterator[Change]:
        """The highest version of every resource, in commit order."""
        sql = (
            f"SELECT {_COLUMNS} FROM {CHANNEL} AS v WHERE number = (SELECT MAX(number) "
            f"FROM {CHANNEL} WHERE type = v.type AND id = v.id) ORDER BY seq"
        )
        return iter([_change(row) for row in self._rows(sql, ())])

    def changes(self, after: int) -> list[Change]:
        """The versions committed after ``seq`` ``after``."""
        sql = f"SELECT {_COLUMNS} FROM {CHANNEL} WHERE seq > %s ORDER BY seq"
        return [_change(row) for row in self._rows(sql, (after,))]

    def changed(self) -> bool:
        """Whether a notification came since last asked (or this process just started)."""
        if self._pid != os.getpid():
            with self._mutex, contextlib.suppress(StorageError):
                self._connection()
            return True
        if not self._behind.is_set():
            return False
        self._behind.clear()
        return True

    def close(self) -> None:
        """Close this process's work connection (the listening thread ends with it)."""
        with self._mutex:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db, self._pid = None, 0


def _unreachable(exc: psycopg.Error) -> StorageError:
    if isinstance(exc, psycopg.OperationalError):
        return not_stored("the database cannot be reached", status=503)
    return not_stored(f"the database refused it ({type(exc).__name__})", status=503)
