"""Where the client caches live beyond one process: the contract (``SharedCaches``).

``ClientCaches`` (``client_caches.py``) holds its caches in memory; with a backing, every
cache is also kept there, so that a cache started through one process (a worker, or an
instance of a fleet) works through every other. The engine knows only this contract; the
server layer implements it over its database (``server/database/cache_sqlite.py`` for
``--data``, ``cache_postgresql.py`` for ``--database``).

A cache in the backing has a *stamp*, an opaque text that changes at every change of the
cache (a start, a resource put), and is never the same for two caches started under one
id; a process whose copy has another stamp reads the cache again. ``used`` is wall-clock
time (seconds since the epoch), set at the start and by ``touch``.

A cache that is gone leaves a record of how it ended (``Ended``: closed by its client,
expired, or cleared to keep within the limits), written by ``drop`` and ``sweep`` and read
by ``ended``, so that every process can tell a request naming it why it is gone. The
backing keeps the last ``ENDS_KEPT`` of them.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

#: How a cache ends: ``closed`` by its client (``$cache-control?mode=end``), ``expired``
#: (unused for longer than the idle timeout), ``cleared`` (dropped by the server to keep
#: within its limits: the number of caches, or the bytes they take).
REASONS = ("closed", "expired", "cleared")
#: How many ends are remembered (in each process, and in a backing).
ENDS_KEPT = 10_000


@dataclass(frozen=True)
class Mark:
    """What tells a process whether its copy of a cache is current, and whether it is idle."""

    stamp: str
    used: float


@dataclass(frozen=True)
class Stored:
    """A cache as the backing holds it: sealed or not, its mark, and the JSON of every
    resource (the order of their keys)."""

    sealed: bool
    mark: Mark
    resources: list[bytes]


@dataclass(frozen=True)
class Ended:
    """How a cache ended: ``reason`` (one of ``REASONS``), ``at`` when and ``used`` when it
    was last used (wall-clock seconds); and the limit it ended by: ``limit_name``
    ``cache_idle_seconds`` (expired), ``caches`` or ``cache_bytes`` (cleared), ``limit`` its
    value."""

    reason: str
    at: float
    used: float
    limit_name: str = ""
    limit: float = 0.0


class SharedCaches(abc.ABC):
    """The client caches shared by several processes (the whole contract of a backing).

    Every method is one short transaction; a backing that fails raises ``StorageError``.
    """

    @abc.abstractmethod
    def start(self, cache_id: str, sealed: bool, now: float) -> str:
        """Start the cache ``cache_id`` empty (replacing one of that id); return its stamp."""

    @abc.abstractmethod
    def put(self, cache_id: str, key: str, raw: bytes, now: float) -> tuple[str, str]:
        """Add or replace the resource ``key`` (its JSON ``raw``) of a cache (started again,
        unsealed, when it is gone); return the cache's stamp before (``""`` when it was
        gone) and after, so that a process whose copy had another stamp before (another
        process put in between) knows its copy is not the cache."""

    @abc.abstractmethod
    def read(self, cache_id: str) -> Stored | None:
        """The cache, or None when there is none. The mark is read before the resources,
        so a put between the two only makes a later request read the cache again."""

    @abc.abstractmethod
    def mark(self, cache_id: str) -> Mark | None:
        """The cache's mark (one small read), or None when there is none."""

    @abc.abstractmethod
    def touch(self, cache_id: str, now: float) -> None:
        """Mark the cache as used at ``now``."""

    @abc.abstractmethod
    def drop(self, cache_id: str, ended: Ended) -> None:
        """Remove the cache and its resources (nothing when there is none), and record how
        it ended."""

    @abc.abstractmethod
    def ended(self, cache_id: str) -> Ended | None:
        """How the cache ended, or None when there is no record of it (never started, or
        ended before the last ``ENDS_KEPT``)."""

    @abc.abstractmethod
    def sweep(self, idle_seconds: float, caches: int, now: float) -> None:
        """Remove the caches unused for more than ``idle_seconds`` (recorded ``expired``),
        and the least recently used past ``caches`` of them (recorded ``cleared``)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connections."""
