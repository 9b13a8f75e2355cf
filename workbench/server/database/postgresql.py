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
missed notifications. ``close`` ends the thread and both connections at once (the thread is
woken by a notification on a channel of its own); nothing here is ever asked on the event
loop but ``changed``, which never waits.

With the database unreachable a write answers 503 (``StorageError``: nothing was stored) and
the resources in memory are still served; once it is back, the next write reconnects.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import uuid
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
LISTEN_SECONDS = 5.0  # how long the listener waits before it looks at its stop flag
CLOSE_SECONDS = 5.0  # how long ``close`` waits for the listener to end
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
        self._listener: _Listener | None = None
        self._inherited: list[object] = []  # from before a fork: never touched
        make_tables(url, LOCK_KEY, [SCHEMA])

    # --- connections -------------------------------------------------------------------

    def _connection(self) -> psycopg.Connection[Any]:
        """This process's work connection, (re)opened when missing or broken; the
        listening thread started with it (again after a fork or a ``close``)."""
        if self._pid != os.getpid():
            if self._db is not None:
                self._inherited.append(self._db)
            self._db, self._pid = None, os.getpid()
            self._behind = threading.Event()  # (the parent's may be held by its thread)
            self._behind.set()  # the parent's state is not this process's
            self._listener = _Listener(self.url, self._behind)
        if self._db is None or self._db.closed or self._db.broken:
            try:
                self._db = psycopg.connect(
                    self.url, autocommit=True, connect_timeout=CONNECT_SECONDS
                )
            except psycopg.Error as exc:
                raise _unreachable(exc) from exc
        return self._db

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
        """Whether a notification came since last asked (or this process has not
        connected yet: a new worker, or after ``close``). Never waits: it is asked on the
        event loop, and the catch-up that follows (in a worker thread) connects."""
        if self._pid != os.getpid():
            return True
        if not self._behind.is_set():
            return False
        self._behind.clear()
        return True

    def close(self) -> None:
        """Close this process's work connection and stop its listening thread (which
        closes its own connection): at once, since the thread is woken by a
        notification on its own channel. A later use opens them again."""
        with self._mutex:
            listener = self._listener if self._pid == os.getpid() else None
            if listener is not None:
                listener.stop(self._db)
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db, self._pid, self._listener = None, 0, None
        if listener is not None:
            listener.join(CLOSE_SECONDS)


class _Listener:
    """The thread ``workbench-listen`` of one process: it ``LISTEN``\\s on ``CHANNEL`` and
    sets ``behind`` at every notification, and once more after every (re)connection
    (notifications may have been missed). ``stop`` ends it: a flag, and a ``NOTIFY`` on
    a channel of its own that wakes it where it waits."""

    def __init__(self, url: str, behind: threading.Event) -> None:
        self.url, self.behind = url, behind
        self.wake = f"workbench_wake_{os.getpid()}_{uuid.uuid4().hex[:16]}"
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="workbench-listen", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        pid = os.getpid()
        while not self.stopping.is_set() and os.getpid() == pid:
            try:
                self._listen()
            except psycopg.Error as exc:
                log.warning("Listening to %s failed (%s); again soon", shown(self.url), exc)
            self.stopping.wait(RETRY_SECONDS)

    def _listen(self) -> None:
        with psycopg.connect(
            self.url, autocommit=True, connect_timeout=CONNECT_SECONDS
        ) as listening:
            listening.execute(f"LISTEN {CHANNEL}")
            listening.execute(f"LISTEN {self.wake}")
            self.behind.set()
            # (a stop from here on is a notification that the loop below receives)
            while not self.stopping.is_set():
                for note in listening.notifies(timeout=LISTEN_SECONDS):
                    if note.channel == self.wake:
                        return
                    self.behind.set()

    def stop(self, db: psycopg.Connection[Any] | None) -> None:
        """Ask the thread to end, waking it through ``db`` (a work connection) if open."""
        self.stopping.set()
        if db is not None and not db.closed and not db.broken:
            with contextlib.suppress(psycopg.Error):
                db.execute(f"NOTIFY {self.wake}")

    def join(self, seconds: float) -> None:
        """Wait (at most ``seconds``) for the thread and its connection to end."""
        if self.thread is not threading.current_thread():
            self.thread.join(seconds)


def _unreachable(exc: psycopg.Error) -> StorageError:
    if isinstance(exc, psycopg.OperationalError):
        return not_stored("the database cannot be reached", status=503)
    return not_stored(f"the database refused it ({type(exc).__name__})", status=503)
