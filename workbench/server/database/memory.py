"""Versions kept in memory: the server without ``--data``."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator

from workbench.server.database.base import Change, Version, VersionStore

MEMORY_VERSIONS = 50


class MemoryVersions(VersionStore):
    """The latest ``keep`` versions of each resource, in this process only (so that a long
    session of large writes does not grow without bound). ``ResourceStore`` serialises
    the writes of its threads, so a transaction needs no lock of its own."""

    def __init__(self, keep: int = MEMORY_VERSIONS) -> None:
        self.keep = keep
        self._versions: dict[tuple[str, str], dict[int, Version]] = {}
        self._seq = itertools.count(1)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Nothing to commit: a save is final."""
        yield

    def save(self, rtype: str, rid: str, version: Version) -> int:
        """Record a version (forgetting the oldest beyond ``keep``)."""
        versions = self._versions.setdefault((rtype, rid), {})
        versions[version.number] = version
        while len(versions) > self.keep:
            del versions[min(versions)]
        return next(self._seq)

    def load(self, rtype: str, rid: str, number: int) -> Version | None:
        """One version, or None when it is not known."""
        return self._versions.get((rtype, rid), {}).get(number)

    def history(self, rtype: str, rid: str) -> list[Version]:
        """The versions kept, oldest first."""
        kept = self._versions.get((rtype, rid), {})
        return [kept[n] for n in sorted(kept)]

    def ids(self, rtype: str) -> list[str]:
        """The ids of the resources of a type that have versions here."""
        return [rid for (kind, rid), kept in self._versions.items() if kind == rtype and kept]

    def latest(self) -> Iterator[Change]:
        """Nothing outlives the process: no version to restore."""
        return iter(())

    def changes(self, after: int) -> list[Change]:
        """No other process writes here."""
        return []

    def close(self) -> None:
        """Nothing to release."""
