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

**Compaction.** Once the journal holds ``compact_at`` bytes (1 MiB, some 30,000 writes), the
writer that appended past it, still under the lock and up to date, replaces it: a fresh
journal holding only the line ``~journal {generation}`` is renamed over ``{data}/.journal``
(atomic), then ``~moved {generation}`` is appended to the old one. The version files hold
everything the old journal announced, so the fresh journal is the whole snapshot a process
starting now needs (it restores from the folder). A live process keeps reading the old
journal through its open file up to ``~moved``, so it applies every line it had not seen,
then follows to the new file and reads it from its start; a writer in another process
catches up the same way under the lock before it appends, so no write is ever appended to
a replaced journal. A process that slept through two compactions finds a later generation
than the one announced: the lines in between are gone, so it reloads every resource's
latest version from the folder (``reload``) instead. A compaction that died between its
rename and its mark is finished by the next writer, which finds under the lock (one ``stat``
per write) that ``.journal`` is no longer the file it reads, and marks the old one.
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
from workbench.server.history import refused

log = logging.getLogger("workbench.server")

JOURNAL = ".journal"
LOCK = ".lock"
MOVED = b"~moved "  # the last line of a replaced journal: read on in the new one
HEADER = b"~journal "  # the first line of a journal made by compaction
COMPACT_AT = 1 << 20  # bytes of journal that make the next write replace it

Apply = Callable[[str, str, int], None]
Reload = Callable[[], None]


class Journal:
    """The journal of one data folder, as one process sees it (``apply(type, id, version)``
    brings that process's registry to a version another process wrote; ``reload()`` to the
    latest version of every resource in the folder, when journal lines were missed)."""

    def __init__(
        self, folder: Path, apply: Apply, reload: Reload, *, compact_at: int = COMPACT_AT
    ) -> None:
        self.folder = folder
        self.apply = apply
        self.reload = reload
        self.compact_at = compact_at
        self._fd = self._open()
        self._retired: int | None = None  # the replaced journal, closed at the next swap
        self.generation = self._generation()
        self.offset = os.fstat(self._fd).st_size
        self._mutex = forksafe.lock()
        # flock belongs to an open file: each process (a forked worker too) opens its own
        self._lock_fd: int | None = None
        self._lock_pid = 0

    def behind(self) -> bool:
        """Whether another process wrote since this one last caught up (cheap: one fstat)."""
        try:
            return os.fstat(self._fd).st_size > self.offset
        except OSError:  # pragma: no cover - the journal swapped meanwhile: catch up to know
            return True

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
                    if self._replaced():  # a compaction died before marking the old one
                        self._mark_moved()
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def mark_applied(self) -> None:
        """Take everything in the journal as applied (after a restore from the folder, under
        ``exclusive``), following it if another process replaced it."""
        if self._replaced():
            self._swap(self._open())
            self.generation = self._generation()
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
            raise refused(exc, "the journal") from exc
        if written != len(line):  # pragma: no cover - a short write to a local file
            self.offset = start + written
            raise StorageError("The write was not stored: the journal is full")
        if self.offset >= self.compact_at:
            self._compact()

    def _compact(self) -> None:
        """Replace the journal with an empty one and mark the old one ``~moved`` (under
        ``exclusive``, this process up to date). A failure leaves the journal as it was."""
        path = self.folder / JOURNAL
        fresh_path = self.folder / f"{JOURNAL}.{os.getpid()}.new"
        generation = self.generation + 1
        header = HEADER + str(generation).encode() + b"\n"
        try:
            fresh = os.open(fresh_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        except OSError as exc:
            log.warning("The journal in %s was not compacted: %s", self.folder, exc)
            return
        try:
            if os.write(fresh, header) != len(header):  # pragma: no cover - a full disk
                raise OSError("short write")
            os.replace(fresh_path, path)
        except OSError as exc:
            os.close(fresh)
            with contextlib.suppress(OSError):
                fresh_path.unlink()
            log.warning("The journal in %s was not compacted: %s", self.folder, exc)
            return
        self._write_mark(generation)
        self._swap(fresh)
        self.generation, self.offset = generation, len(header)

    def _write_mark(self, generation: int) -> None:
        """Append ``~moved {generation}`` to the open (replaced) journal."""
        size = os.fstat(self._fd).st_size
        # a line left unfinished (a writer died) must not swallow the mark
        ends_open = size > 0 and os.pread(self._fd, 1, size - 1) != b"\n"
        mark = MOVED + str(generation).encode() + b"\n"
        os.write(self._fd, (b"\n" if ends_open else b"") + mark)

    def _mark_moved(self) -> None:
        """Finish a compaction that died between its rename and its mark (under
        ``exclusive``, up to date with the old journal): mark the old journal for the
        processes still reading it, then read on in the new one from its start."""
        fresh = self._open()
        generation = self._generation(fresh)
        self._write_mark(generation)
        self._swap(fresh)
        self.generation, self.offset = generation, 0
        self._catch_up()

    def _open(self) -> int:
        """The journal file, opened for appending."""
        try:
            return os.open(self.folder / JOURNAL, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:  # (the text names no path: it may reach a client)
            raise refused(exc, "the journal cannot be opened") from exc

    def _generation(self, fd: int | None = None) -> int:
        """The generation of the open journal, or of ``fd`` (0: not made by compaction)."""
        first = os.pread(self._fd if fd is None else fd, 64, 0).split(b"\n", 1)[0]
        if first.startswith(HEADER) and first[len(HEADER) :].isdigit():
            return int(first[len(HEADER) :])
        return 0

    def _follow(self, announced: int) -> None:
        """Go on in the journal that replaced this one (``~moved {announced}`` read): from
        its start when it is that generation, else (later ones came and went) reload
        everything from the folder and go on from its end."""
        self._swap(self._open())
        self.generation = self._generation()
        if self.generation == announced:
            self.offset = 0
            return
        log.info("Journal generations were skipped in %s: reloading", self.folder)
        self.offset = os.fstat(self._fd).st_size  # first: a line written meanwhile is read
        self.reload()

    def _replaced(self) -> bool:
        """Whether ``.journal`` is no longer the file this process has open."""
        try:
            return os.stat(self.folder / JOURNAL).st_ino != os.fstat(self._fd).st_ino
        except FileNotFoundError:
            return True

    def _swap(self, fd: int) -> None:
        """Read and write ``fd`` from now on; the replaced file stays open until the next
        swap (a thread that just read the old descriptor's number can still use it)."""
        if self._retired is not None:
            os.close(self._retired)
        self._retired, self._fd = self._fd, fd

    def _lock_file(self) -> int:
        """The lock file, opened once per process, and again when it is no longer the one
        in the folder (the folder was restored after a failure): every process locks the
        same file."""
        fd, mine = self._lock_fd, self._lock_pid == os.getpid()
        if fd is not None and mine and _same_file(self.folder / LOCK, fd):
            return fd
        self._lock_fd = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        self._lock_pid = os.getpid()
        if fd is not None and mine:
            os.close(fd)
        return self._lock_fd

    def _catch_up(self) -> None:
        size = os.fstat(self._fd).st_size
        if size <= self.offset:
            return
        data = os.pread(self._fd, size - self.offset, self.offset)
        whole = data[: data.rfind(b"\n") + 1]  # a line still being written waits
        for line in whole.splitlines():
            announced = line[len(MOVED) :]
            if line.startswith(MOVED) and announced.isdigit():  # replaced: read on in the new
                self._follow(int(announced))
                self._catch_up()
                return
            if line.startswith(HEADER):
                continue
            try:
                rtype, rid, number = line.decode().split("/")
                self.apply(rtype, rid, int(number))
            except Exception:  # one bad line must not stop this process for good
                log.exception("Journal line %r in %s could not be applied", line, self.folder)
        self.offset += len(whole)


def _same_file(path: Path, fd: int) -> bool:
    try:
        there, held = os.stat(path), os.fstat(fd)
    except OSError:
        return False
    return (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino)


class JournalSync:
    """ASGI middleware: bring this process up to date with the journal before a request."""

    def __init__(self, app: ASGIApp, *, journal: Journal) -> None:
        self.app = app
        self.journal = journal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.sync()
        await self.app(scope, receive, send)

    async def sync(self) -> None:
        """Apply the writes of other processes that this one has not seen yet."""
        if self.journal.behind():
            # reading and indexing a large resource takes a while: not on the event loop
            await run_in_threadpool(self.journal.catch_up)
