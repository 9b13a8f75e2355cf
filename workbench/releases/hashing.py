"""Hashing release files while they are read.

An import runs inside ``reading()``; the readers of release files open them through
``tracked``, which feeds every byte read, in order, to a SHA-256, and records the digest of a
file read to its end in the ``Reads`` of that import. The release cache (``release_cache``)
names a store by these digests, so a first import reads each file once.

>>> with reading() as reads:
...     with tracked("a.txt", io.BytesIO(b"abc")) as stream:
...         _ = stream.read()
>>> reads.found["a.txt"].size, reads.found["a.txt"].sha256[:12]
(3, 'ba7816bf8f01')
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import IO, Any

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Digest:
    """The size and SHA-256 of one release file's bytes."""

    size: int
    sha256: str


# --- hashing while reading ---------------------------------------------------------------------


class Reads:
    """The digests of the release files read to their end during one import, by label
    (``found``), and those read twice with other bytes (``changed``: changed meanwhile)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.found: dict[str, Digest] = {}
        self.changed: set[str] = set()

    def record(self, name: str, digest: Digest) -> None:
        """Note a file read to its end (read twice with other bytes: it changed meanwhile)."""
        with self._lock:
            before = self.found.setdefault(name, digest)
            if before != digest:
                self.changed.add(name)


_READS: ContextVar[Reads | None] = ContextVar("workbench_release_reads", default=None)


@contextlib.contextmanager
def reading() -> Iterator[Reads]:
    """Collect the digests of the release files ``tracked`` streams read meanwhile."""
    reads = Reads()
    token = _READS.set(reads)
    try:
        yield reads
    finally:
        _READS.reset(token)


class _Hashing(io.RawIOBase):
    """A release file's stream that feeds every byte read, in order, to a SHA-256; read to
    its end, it records the digest."""

    def __init__(self, name: str, inner: IO[bytes], reads: Reads) -> None:
        super().__init__()
        self._name, self._inner, self._reads = name, inner, reads
        self._digest = hashlib.sha256()
        self._size = 0
        self._done = False

    def readable(self) -> bool:
        return True

    def _feed(self, data: bytes, end: bool) -> None:
        if data:
            self._digest.update(data)
            self._size += len(data)
        if (end or not data) and not self._done:
            self._done = True
            self._reads.record(self._name, Digest(self._size, self._digest.hexdigest()))

    def read(self, size: int | None = -1) -> bytes:
        whole = size is None or size < 0
        data: bytes = self._inner.read() if size is None or size < 0 else self._inner.read(size)
        self._feed(data, whole)
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def tell(self) -> int:
        return self._size

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
        super().close()


def tracked(name: str, stream: IO[bytes]) -> IO[bytes]:
    """``stream`` (a release file's bytes, ``name`` its label), hashed as it is read when an
    import collects digests (``reading``); else the stream itself."""
    reads = _READS.get()
    if reads is None:
        return stream
    return io.BufferedReader(_Hashing(name, stream, reads), buffer_size=_CHUNK)
