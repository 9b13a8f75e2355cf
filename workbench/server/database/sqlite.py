"""Versions in one SQLite database in the data folder (``--data FOLDER``).

The database, ``{FOLDER}/workbench.sqlite3``, is in WAL mode (many readers, one writer, readers
never blocked) with ``synchronous=FULL`` (a commit is on disk before the write is answered).
Table ``versions`` holds every version of every authored resource (a deletion too), with a
``seq`` that grows in commit order. A write is one ``BEGIN IMMEDIATE`` transaction: it takes
the database's write lock, shared by every process over the folder, before anything is read,
so ``If-Match`` and ``If-None-Exist`` are decided against the latest commit (no lost update).

Read your writes from any worker: before a request reads authored content, ``changed`` looks
at SQLite's own change counter: the header of its WAL index (the ``-shm`` file every
connection maps; it moves at every commit), mapped read-only here, else ``PRAGMA
data_version`` on a connection kept for that; when it moved, the process reads the versions
with a ``seq`` above the last it applied. A commit happens before the write is
answered, so the next request to any worker sees it.

Faults: before a write the database file is looked at (gone, a folder in its place, the
folder a file, or read-only), because a connection writes on into a file that was unlinked
or moved; a file replaced by another (a folder restored or made anew) is reopened, by a
writer at once and by the read path within ``LOOK_SECONDS``, and a database made anew
numbers its commits after the highest this process saw. What SQLite refuses
(a full disk, an I/O error) rolls the transaction back. Either way the write answers a
``StorageError`` and nothing changes. A process killed in a transaction leaves nothing of
it: SQLite rolls it back when the database is next opened.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import mmap
import os
import shutil
import sqlite3
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from workbench import forksafe, jsonio
from workbench.errors import StorageError
from workbench.server.database.base import Change, Version, VersionStore, not_stored, refused

log = logging.getLogger("workbench.server")

FILE = "workbench.sqlite3"
BUSY_SECONDS = 30.0  # how long a writer waits for another's transaction
LOOK_SECONDS = 0.1  # how often the read path looks whether the database file was replaced
SCHEMA = """
CREATE TABLE IF NOT EXISTS versions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    type TEXT NOT NULL,
    id TEXT NOT NULL,
    number INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    body BLOB NOT NULL,
    UNIQUE (type, id, number)
);
"""
_COLUMNS = "seq, type, id, number, deleted, body"


def _change(row: tuple[int, str, str, int, int, bytes]) -> Change:
    seq, rtype, rid, number, deleted, body = row
    resource = jsonio.loads(body, exact_decimals=True)
    return Change(seq, rtype, rid, Version(number, resource, bool(deleted)))


class SQLiteVersions(VersionStore):
    """The versions in ``{folder}/workbench.sqlite3``; each process (a forked worker too)
    opens its own connections, one for the work and one that watches for commits."""

    shared = True

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / FILE
        self._mutex = forksafe.rlock()  # the work connection, one thread at a time
        self._watch_mutex = forksafe.lock()
        self._pid = 0
        self._db: sqlite3.Connection | None = None
        self._watch: sqlite3.Connection | None = None
        self._identity: tuple[int, int] = (0, 0)
        self._seen: int | None = None  # data_version when last asked
        self._index: mmap.mmap | None = None  # the WAL index (``-shm``), read only
        self._header = b""  # its header when last asked
        self._top = 0  # the highest seq this process has seen
        self._look_at = 0.0  # when ``changed`` next checks the file is still the one open
        self._inherited: list[sqlite3.Connection] = []  # from before a fork: never touched
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._connect()
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"The database in {folder} cannot be opened: {exc}") from exc

    # --- connections -------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            self.path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False
        )
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        return db

    def _connect(self) -> None:
        """Open (again) this process's connections, the schema made when missing."""
        old = [c for c in (self._db, self._watch) if c is not None]
        if self._pid == os.getpid():
            for connection in old:
                with contextlib.suppress(sqlite3.Error):
                    connection.close()
        else:  # a forked child: the parent's connections are the parent's
            self._inherited += old
        fresh = not self.path.exists()
        db = self._open()
        db.executescript(SCHEMA)
        if fresh and self._top:  # a new database where one was: seq goes on from there
            db.execute(
                "INSERT INTO sqlite_sequence (name, seq) VALUES ('versions', ?)", (self._top,)
            )
        found = os.stat(self.path)
        self._db, self._watch, self._seen = db, self._open(), None
        self._watch.execute("PRAGMA data_version").fetchone()  # (the WAL index is made)
        self._index, self._header = _wal_index(self.path), b""
        self._identity, self._pid = (found.st_dev, found.st_ino), os.getpid()

    def _connection(self) -> sqlite3.Connection:
        if self._pid != os.getpid() or self._db is None:
            self._connect()
        assert self._db is not None
        return self._db

    def _writable(self) -> sqlite3.Connection:
        """The work connection, once the database file is seen to be where it was and
        writable; a file replaced by another is reopened (StorageError when it fails). The
        file is looked at first: a connection closed meanwhile is opened only where it can
        be."""
        try:
            found = os.stat(self.path)
        except FileNotFoundError as exc:
            if not self.folder.is_dir():
                raise refused(exc) from exc
            log.warning("The database in %s is gone: starting a new one", self.folder)
            return self._reconnect()
        except OSError as exc:
            raise refused(exc) from exc
        if stat.S_ISDIR(found.st_mode):
            raise refused(OSError(errno.EISDIR, "a folder"))
        if (found.st_dev, found.st_ino) != self._identity:
            return self._reconnect()
        if not os.access(self.path, os.W_OK):
            raise refused(OSError(errno.EROFS, "read-only"))
        try:
            return self._connection()
        except sqlite3.Error as exc:
            raise self._refused(exc) from exc

    def _replaced(self) -> bool:
        """Whether the file at the database's path is another one than the one open (the
        folder was made anew, or restored): a ``stat``, no database call."""
        try:
            found = os.stat(self.path)
        except OSError:
            return False  # nothing to follow (yet): a write says why
        return (found.st_dev, found.st_ino) != self._identity and not stat.S_ISDIR(found.st_mode)

    def _follow(self) -> bool:
        """Open the database again when the file at its path is another one (the folder
        was made anew, or restored); whether it did."""
        if not self._replaced():
            return False
        with self._mutex:
            try:
                self._connect()
            except (OSError, sqlite3.Error):
                return False
        return True

    def _reconnect(self) -> sqlite3.Connection:
        try:
            self._connect()
        except (OSError, sqlite3.Error) as exc:
            raise self._refused(exc) from exc
        assert self._db is not None
        return self._db

    def _refused(self, exc: OSError | sqlite3.Error) -> StorageError:
        """The StorageError of what SQLite (or the folder) refused; never a path."""
        if isinstance(exc, OSError):
            return refused(exc)
        code = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
        if code == sqlite3.SQLITE_FULL or _disk_full(self.folder):
            return not_stored("the disk is full", status=507)
        if code == sqlite3.SQLITE_READONLY:
            return not_stored("the data folder is read-only")
        if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return not_stored("the database is busy (another writer held it too long)", status=503)
        name = getattr(exc, "sqlite_errorname", "") or type(exc).__name__
        return not_stored(f"the database refused it ({name})")

    # --- the contract ------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``; rolled back when the block raises."""
        with self._mutex:
            db = self._writable()
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._refused(exc) from exc
            try:
                yield
                db.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._refused(exc) from exc
                raise

    def save(self, rtype: str, rid: str, version: Version) -> int:
        """Insert a version (inside ``transaction``); return its ``seq``."""
        body = jsonio.dumps(version.resource)
        with self._mutex:
            cursor = self._connection().execute(
                "INSERT INTO versions (type, id, number, deleted, body) VALUES (?, ?, ?, ?, ?)",
                (rtype, rid, version.number, int(version.deleted), body),
            )
        seq = int(cursor.lastrowid or 0)
        self._top = max(self._top, seq)
        return seq

    def _rows(self, sql: str, args: tuple[object, ...]) -> list[Change]:
        with self._mutex:
            try:
                rows = self._connection().execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise StorageError(f"The database could not be read: {exc}") from exc
        found = [_change(row) for row in rows]
        self._top = max([self._top, *(c.seq for c in found)])
        return found

    def load(self, rtype: str, rid: str, number: int) -> Version | None:
        """One version, or None."""
        found = self._rows(
            f"SELECT {_COLUMNS} FROM versions WHERE type = ? AND id = ? AND number = ?",
            (rtype, rid, number),
        )
        return found[0].version if found else None

    def history(self, rtype: str, rid: str) -> list[Version]:
        """Every version of a resource, oldest first."""
        sql = f"SELECT {_COLUMNS} FROM versions WHERE type = ? AND id = ? ORDER BY number"
        return [c.version for c in self._rows(sql, (rtype, rid))]

    def numbers(self, rtype: str, rid: str) -> list[int]:
        """The version numbers of a resource, oldest first (no body read)."""
        sql = "SELECT number FROM versions WHERE type = ? AND id = ? ORDER BY number"
        with self._mutex:
            try:
                rows = self._connection().execute(sql, (rtype, rid)).fetchall()
            except sqlite3.Error as exc:
                raise StorageError(f"The database could not be read: {exc}") from exc
        return [int(row[0]) for row in rows]

    def ids(self, rtype: str) -> list[str]:
        """The ids of a type's resources with versions here."""
        sql = "SELECT DISTINCT id FROM versions WHERE type = ? ORDER BY id"
        with self._mutex:
            rows = self._connection().execute(sql, (rtype,)).fetchall()
        return [str(row[0]) for row in rows]

    def latest(self) -> Iterator[Change]:
        """The highest version of every resource, in commit order."""
        sql = (
            f"SELECT {_COLUMNS} FROM versions AS v WHERE number = (SELECT MAX(number) "
            "FROM versions WHERE type = v.type AND id = v.id) ORDER BY seq"
        )
        return iter(self._rows(sql, ()))

    def changes(self, after: int) -> list[Change]:
        """The versions committed after ``seq`` ``after`` (in the file now at the path)."""
        self._follow()
        return self._rows(f"SELECT {_COLUMNS} FROM versions WHERE seq > ? ORDER BY seq", (after,))

    def changed(self) -> bool:
        """Whether another connection committed since last asked (or this process has not
        asked yet). Read from the header of SQLite's WAL index (the ``-shm`` file, mapped
        read-only: its change counter and last frame move at every commit; a fraction of a
        microsecond), else from ``PRAGMA data_version`` (a few microseconds). A header
        that moved for another reason (a checkpoint, this process's own commit) only costs
        a catch-up that finds nothing. Every ``LOOK_SECONDS`` it also looks whether the
        file is still the one open (a folder made anew: the catch-up follows it). Asked on
        the event loop, it never opens a connection or waits for the work connection."""
        watch = self._watch
        if self._pid != os.getpid() or watch is None:
            return True  # (a new worker, or closed: the catch-up, in a thread, connects)
        now = time.monotonic()
        if now >= self._look_at:
            self._look_at = now + LOOK_SECONDS
            if self._replaced():
                return True  # (the catch-up follows it: ``changes``)
        if self._index is not None:
            header = self._index[:_HEADER]
            if header == self._header:
                return False
            self._header = header
            return True
        with self._watch_mutex:
            try:
                now = int(watch.execute("PRAGMA data_version").fetchone()[0])
            except sqlite3.Error:
                return True
            if now == self._seen:
                return False
            self._seen = now
            return True

    def close(self) -> None:
        """Close this process's connections."""
        with self._mutex:
            for connection in (self._db, self._watch):
                if connection is not None and self._pid == os.getpid():
                    connection.close()
            self._db = self._watch = None
            if self._index is not None:
                self._index.close()
                self._index = None


_HEADER = 96  # the two copies of the WAL index header (``WalIndexHdr``, 48 bytes each)


def _wal_index(path: Path) -> mmap.mmap | None:
    """The WAL index of the database at ``path``, mapped read-only (None when there is
    none to map: then ``PRAGMA data_version`` is asked instead)."""
    try:
        with open(f"{path}-shm", "rb") as shm:
            if os.fstat(shm.fileno()).st_size < _HEADER:
                return None
            return mmap.mmap(shm.fileno(), _HEADER, prot=mmap.PROT_READ)
    except (OSError, ValueError):
        return None


def _disk_full(folder: Path) -> bool:
    try:
        return shutil.disk_usage(folder).free == 0
    except OSError:
        return False
