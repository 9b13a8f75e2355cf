"""Writes shared by every server process over one data folder.

``server.py --workers N`` runs N processes over one data folder (and two servers may be given
the same ``--data``). Each holds the resources in its own memory, so a write one of them
acknowledges must reach the others before any of them answers again:

* **One writer at a time.** A write (create, update, delete) takes an exclusive
  ``fcntl.flock`` on ``{data}/.lock`` (and a thread lock, for the threads of one process),
  brings its process up to date under it, and only then checks ``If-Match`` or
  ``If-None-Exist`` against what is current: two processes cannot both accept an update of
  the same version (no lost update).
* **A journal of versions.** Once the version file is durable (``history.py``), the writer
  appends one line, ``{type}/{id}/{version}``, to ``{data}/.journal``, still under the lock
  and before the response.
* **Read your writes anywhere.** Every request first compares the journal's size with what
  its process has applied (one ``fstat``, about a microsecond) and, when it grew, applies
  the new lines (each names a version file in the folder) before answering. A write
  acknowledged by one process is therefore seen by the next request to any process.

The journal only tells live processes what changed; the version files are what is durable,
and a start restores from them (``store.py``), so the journal needs no fsync of its own.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from workbench import forksafe
from workbench.errors import StorageError

log = logging.getLogger("workbench.server")

JOURNAL = ".journal"
LOCK = ".lock"

Apply = Callable[[str, str, int], None]


class Journal:
    """The journal of one data folder, as one process sees it (``apply(type, id, version)``
    brings that process's registry to a version another process wrote)."""

    def __init__(self, folder: Path, apply: Apply) -> None:
        self.folder = folder
        self.apply = apply
        try:
            self._fd = os.open(folder / JOURNAL, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            raise StorageError(f"The journal in {folder} cannot be opened: {exc}") from exc
        self.offset = os.fstat(self._fd).st_size
        self._mutex = forksafe.lock()
        # flock belongs to an open file: each process (a forked worker too) opens its own
        self._lock_fd: int | None = None
        self._lock_pid = 0

    def behind(self) -> bool:
        """Whether another process wrote since this one last caught up (cheap: one fstat)."""
        return os.fstat(self._fd).st_size > self.offset

    def catch_up(self) -> None:
        """Apply what other processes wrote since this one last looked."""
        with self._mutex:
            self._catch_up()

    @contextlib.contextmanager
    def exclusive(self, *, catch_up: bool = True) -> Iterator[None]:
        """Hold the folder's write lock (every process, every thread), up to date first."""
        with self._mutex:
            fd = self._lock_file()
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if catch_up:
                    self._catch_up()
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def mark_applied(self) -> None:
        """Take everything in the journal as applied (after a restore from the folder, under
        ``exclusive``)."""
        self.offset = os.fstat(self._fd).st_size

    def append(self, rtype: str, rid: str, number: int) -> None:
        """Announce a version this process wrote and applies itself (under ``exclusive``)."""
        line = f"{rtype}/{rid}/{number}\n".encode()
        start = os.fstat(self._fd).st_size
        # the offset moves first, so that a request of this process does not take its own
        # write for another's while the line is being written
        self.offset = start + len(line)
        try:
            written = os.write(self._fd, line)
        except OSError as exc:
            self.offset = start
            raise StorageError(f"The write was not stored: {exc}; nothing was changed") from exc
        if written != len(line):  # pragma: no cover - a short write to a local file
            self.offset = start + written
            raise StorageError("The write was not stored: the journal is full")

    def _lock_file(self) -> int:
        if self._lock_fd is None or self._lock_pid != os.getpid():
            self._lock_fd = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
            self._lock_pid = os.getpid()
        return self._lock_fd

    def _catch_up(self) -> None:
        size = os.fstat(self._fd).st_size
        if size <= self.offset:
            return
        data = os.pread(self._fd, size - self.offset, self.offset)
        whole = data[: data.rfind(b"\n") + 1]  # a line still being written waits
        for line in whole.splitlines():
            try:
                rtype, rid, number = line.decode().split("/")
                self.apply(rtype, rid, int(number))
            except Exception:  # one bad line must not stop this process for good
                log.exception("Journal line %r in %s could not be applied", line, self.folder)
        self.offset += len(whole)


class JournalSync:
    """ASGI middleware: bring this process up to date with the journal before a request."""

    def __init__(self, app: ASGIApp, *, journal: Journal) -> None:
        self.app = app
        self.journal = journal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.journal.behind():
            # reading and indexing a large resource takes a while: not on the event loop
            await run_in_threadpool(self.journal.catch_up)
        await self.app(scope, receive, send)
