"""The version history of served resources: in memory, or durable in a data folder.

Every write (create, update, delete) is one new version. In a data folder each version is one
file, ``{type}-{id}/{versionId}.json`` (``.deleted`` for a deletion), written to a temporary
file, fsynced, renamed into place and made durable by an fsync of its folder before the write
is acknowledged. The current state of a resource is its highest version, so a restart restores
exactly what was acknowledged, under the same id. Temporary files of an interrupted write are
removed at start.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from workbench import jsonio
from workbench.errors import StorageError
from workbench.registry import TERMINOLOGY_TYPES
from workbench.resources import Resource

TEMP_PREFIX = ".tmp-"
MEMORY_VERSIONS = 50
_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
# why a write failed, for the errors whose system text would mislead (never a path: the
# answer goes to the client)
_REASONS = {
    errno.ENOENT: "the data folder (or a file in it) is gone",
    errno.ENOTDIR: "the data folder is no longer a folder (a file took its place)",
    errno.EISDIR: "a folder took the place of a file of the data folder",
}


def refused(exc: OSError, what: str = "") -> StorageError:
    """The StorageError of a write the data folder refused: the write was not stored, why
    (from the error number, never a path or file name), 507 for a full disk, else 500."""
    full = exc.errno in _FULL
    if full:
        reason = "the disk is full"
    else:
        reason = _REASONS.get(exc.errno or 0) or exc.strerror or "an I/O error"
    where = f" ({what})" if what else ""
    return StorageError(
        f"The write was not stored: {reason}{where}; nothing was changed",
        status=507 if full else 500,
    )


@dataclass(frozen=True)
class Version:
    """One version of a resource: its content, or a deletion (``resource`` then holds only
    ``resourceType``, ``id`` and ``meta``)."""

    number: int
    resource: Resource
    deleted: bool = False


def tombstone(rtype: str, rid: str, number: int, when: str) -> Version:
    """The version that records a deletion."""
    meta = {"versionId": str(number), "lastUpdated": when}
    return Version(number, {"resourceType": rtype, "id": rid, "meta": meta}, deleted=True)


class MemoryHistory:
    """Versions kept in memory (a server without a data folder): the latest ``keep`` of each
    resource, so that a long session of large writes does not grow without bound."""

    def __init__(self, keep: int = MEMORY_VERSIONS) -> None:
        self.keep = keep
        self._versions: dict[tuple[str, str], dict[int, Version]] = {}

    def save(self, rtype: str, rid: str, version: Version) -> None:
        """Record a version (forgetting the oldest beyond ``keep``)."""
        versions = self._versions.setdefault((rtype, rid), {})
        versions[version.number] = version
        while len(versions) > self.keep:
            del versions[min(versions)]

    def discard(self, rtype: str, rid: str, version: Version) -> None:
        """Forget a version just saved whose write was then refused."""
        self._versions.get((rtype, rid), {}).pop(version.number, None)

    def numbers(self, rtype: str, rid: str) -> list[int]:
        """The known version numbers of a resource, oldest first."""
        return sorted(self._versions.get((rtype, rid), {}))

    def load(self, rtype: str, rid: str, number: int) -> Version | None:
        """One version, or None when it is not known."""
        return self._versions.get((rtype, rid), {}).get(number)

    def ids(self, rtype: str) -> list[str]:
        """The ids of the resources of a type that have versions here."""
        return [rid for (kind, rid), kept in self._versions.items() if kind == rtype and kept]


class FolderHistory:
    """Versions in a data folder, one durable file per version."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"The data folder {folder} cannot be created: {exc}") from exc

    def _dir(self, rtype: str, rid: str) -> Path:
        return self.folder / f"{rtype}-{rid}"

    def save(self, rtype: str, rid: str, version: Version) -> None:
        """Write a version durably, or raise StorageError having written nothing."""
        where = self._dir(rtype, rid)
        suffix = ".deleted" if version.deleted else ".json"
        target = where / f"{version.number}{suffix}"
        try:
            if not where.is_dir():
                where.mkdir()
                sync_folder(self.folder)
            write_durably(target, jsonio.dumps(version.resource))
        except OSError as exc:
            raise refused(exc, f"{rtype}/{rid} version {version.number}") from exc

    def discard(self, rtype: str, rid: str, version: Version) -> None:
        """Remove a version just saved whose write was then refused."""
        suffix = ".deleted" if version.deleted else ".json"
        with contextlib.suppress(OSError):
            (self._dir(rtype, rid) / f"{version.number}{suffix}").unlink()

    def numbers(self, rtype: str, rid: str) -> list[int]:
        """The version numbers on disk, oldest first."""
        return sorted(n for n, _ in self._listing(self._dir(rtype, rid)))

    def load(self, rtype: str, rid: str, number: int) -> Version | None:
        """One version read from disk, or None."""
        where = self._dir(rtype, rid)
        for suffix, deleted in ((".json", False), (".deleted", True)):
            path = where / f"{number}{suffix}"
            if path.is_file():
                resource = jsonio.loads(path.read_bytes(), exact_decimals=True)
                return Version(number, resource, deleted)
        return None

    def ids(self, rtype: str) -> list[str]:
        """The ids of the resources of a type that have versions in the folder."""
        return [
            where.name[len(rtype) + 1 :]
            for where in sorted(self.folder.glob(f"{rtype}-*"))
            if where.is_dir() and any(self._listing(where))
        ]

    @staticmethod
    def _listing(where: Path) -> Iterator[tuple[int, bool]]:
        if not where.is_dir():
            return
        for path in where.iterdir():
            if path.suffix in (".json", ".deleted") and path.stem.isdigit():
                yield int(path.stem), path.suffix == ".deleted"

    def remove_leftovers(self) -> list[Path]:
        """Delete the temporary files of interrupted writes; return what was removed."""
        removed = []
        for path in [*self.folder.glob(TEMP_PREFIX + "*"), *self.folder.glob(f"*/{TEMP_PREFIX}*")]:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
        return removed

    def latest(self) -> Iterator[Version]:
        """The current (highest) version of every resource in the folder."""
        for where in sorted(self.folder.iterdir()):
            rtype, _, rid = where.name.partition("-")
            if not where.is_dir() or rtype not in TERMINOLOGY_TYPES or not rid:
                continue
            numbers = sorted(self._listing(where))
            if numbers:
                found = self.load(rtype, rid, numbers[-1][0])
                if found is not None:
                    yield found

    def migrate_flat_files(self) -> None:
        """Move the files of the earlier layout (``{type}-{id}.json`` holding the current
        version, ``{type}-{id}.deleted`` marking a deletion) into version folders."""
        for path in sorted(self.folder.glob("*.json")):
            rtype, _, rid = path.stem.partition("-")
            if rtype not in TERMINOLOGY_TYPES or not rid:
                continue
            resource = jsonio.loads(path.read_bytes(), exact_decimals=True)
            number = int(str((resource.get("meta") or {}).get("versionId") or "1"))
            if number not in self.numbers(rtype, rid):
                self.save(rtype, rid, Version(number, resource))
            path.unlink()
        for path in sorted(self.folder.glob("*.deleted")):
            rtype, _, rid = path.stem.partition("-")
            if rtype in TERMINOLOGY_TYPES and rid:
                number = max(self.numbers(rtype, rid), default=1) + 1
                when = now_instant()
                self.save(rtype, rid, tombstone(rtype, rid, number, when))
            path.unlink()
        sync_folder(self.folder)


def now_instant() -> str:
    """The current instant as a FHIR ``instant`` (UTC, milliseconds)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_durably(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: temporary file, fsync, rename, fsync of the folder.

    On failure the temporary file is removed and ``path`` is untouched.
    """
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=TEMP_PREFIX, suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    try:
        sync_folder(path.parent)
    except BaseException:
        path.unlink(missing_ok=True)  # not durable, so not acknowledged: leave no trace
        raise


def sync_folder(folder: Path) -> None:
    """fsync a folder, so that a rename or a new entry in it survives a crash."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
