"""The versions of authored resources, behind one contract (``VersionStore``).

Every write (create, update, delete) is one new version; the current state of a resource is
its highest version. A store holds every version (a deletion is a version too, a
*tombstone*) and numbers each saved version with a sequence number that grows in commit
order, so that a process serving the same database learns what other processes wrote by
reading the versions after the last sequence number it has seen (``changes``).

Writes happen inside ``transaction()``: exclusive across every process sharing the
database, committed when the block ends, rolled back (and a ``StorageError`` raised) when
the database refuses. ``ResourceStore`` (``server/store.py``) decides ``If-Match`` and
``If-None-Exist`` inside that transaction, after reading what others wrote, so that no
update is lost. Subclasses: ``MemoryVersions`` (no ``--data``), ``SQLiteVersions``
(``--data FOLDER``).
"""

from __future__ import annotations

import abc
import contextlib
import errno
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone

from workbench.errors import StorageError
from workbench.resources import Resource

_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
# why a write failed, for the errors whose system text would mislead (never a path: the
# answer goes to the client)
_REASONS = {
    errno.ENOENT: "the data folder (or a file in it) is gone",
    errno.ENOTDIR: "the data folder is no longer a folder (a file took its place)",
    errno.EISDIR: "a folder took the place of a file of the data folder",
    errno.EROFS: "the data folder is read-only",
}


def not_stored(reason: str, *, status: int = 500) -> StorageError:
    """The StorageError of a write the database refused: the write was not stored, why."""
    return StorageError(f"The write was not stored: {reason}; nothing was changed", status=status)


def refused(exc: OSError, what: str = "") -> StorageError:
    """The StorageError of a write the data folder refused, from the error number (never a
    path or file name): 507 for a full disk, else 500."""
    if exc.errno in _FULL:
        return not_stored("the disk is full", status=507)
    reason = _REASONS.get(exc.errno or 0) or exc.strerror or "an I/O error"
    return not_stored(f"{reason} ({what})" if what else reason)


@dataclass(frozen=True)
class Version:
    """One version of a resource: its content, or a deletion (``resource`` then holds only
    ``resourceType``, ``id`` and ``meta``)."""

    number: int
    resource: Resource
    deleted: bool = False


@dataclass(frozen=True)
class Change:
    """A version as saved, with its sequence number (commit order)."""

    seq: int
    rtype: str
    rid: str
    version: Version


def tombstone(rtype: str, rid: str, number: int, when: str) -> Version:
    """The version that records a deletion."""
    meta = {"versionId": str(number), "lastUpdated": when}
    return Version(number, {"resourceType": rtype, "id": rid, "meta": meta}, deleted=True)


def now_instant() -> str:
    """The current instant as a FHIR ``instant`` (UTC, milliseconds)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class VersionStore(abc.ABC):
    """Every version of every authored resource (the whole contract of a database)."""

    #: Whether other processes may write the same store (then ``changed`` is worth asking).
    shared: bool = False

    @abc.abstractmethod
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One exclusive write transaction (every process, every thread): what ``save``
        writes in it is committed when the block ends, or nothing is (StorageError)."""

    @abc.abstractmethod
    def save(self, rtype: str, rid: str, version: Version) -> int:
        """Save a version (inside ``transaction``); return its sequence number."""

    @abc.abstractmethod
    def load(self, rtype: str, rid: str, number: int) -> Version | None:
        """One version, or None when it is not known."""

    @abc.abstractmethod
    def history(self, rtype: str, rid: str) -> list[Version]:
        """Every known version of a resource, oldest first."""

    @abc.abstractmethod
    def ids(self, rtype: str) -> list[str]:
        """The ids of the resources of a type that have versions here."""

    @abc.abstractmethod
    def latest(self) -> Iterator[Change]:
        """The current (highest) version of every resource, in commit order."""

    @abc.abstractmethod
    def changes(self, after: int) -> list[Change]:
        """Every version saved with a sequence number above ``after``, in commit order."""

    def numbers(self, rtype: str, rid: str) -> list[int]:
        """The known version numbers of a resource, oldest first."""
        return [v.number for v in self.history(rtype, rid)]

    def changed(self) -> bool:
        """Whether another process may have written since this was last asked (cheap:
        asked before every request that reads authored content). Never, by default."""
        return False

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connections."""
