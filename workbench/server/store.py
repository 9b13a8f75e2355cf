"""Create, read, update, delete and search of terminology resources, with persistence.

Writes are checked completely before anything changes. With a data folder, an accepted
write is on disk (temporary file, fsync, rename, fsync of the folder) before the registry
changes and before the response; a rejected write changes neither.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench import jsonio
from workbench.errors import (
    InvalidRequestError,
    ResourceNotFoundError,
    VersionConflictError,
)
from workbench.loading import check_resource, read_source
from workbench.registry import TERMINOLOGY_TYPES
from workbench.resources import Resource
from workbench.server import search

if TYPE_CHECKING:
    from workbench.workbench import Workbench

_ID = re.compile(r"^[A-Za-z0-9\-.]{1,64}$")
SEARCH_PARAMETERS = search.COMMON
_IGNORED_SEARCH = frozenset({"_format", "_pretty", "_count", "_summary"})


def etag(resource: Resource) -> str:
    """The weak ETag of a resource's version: ``W/"3"``."""
    return f'W/"{version_of(resource)}"'


def version_of(resource: Resource) -> str:
    """``meta.versionId``, or ``1`` for a resource loaded without one."""
    return str((resource.get("meta") or {}).get("versionId") or "1")


def with_meta(resource: Resource) -> Resource:
    """The resource as served: ``meta.versionId`` filled in (a copy only when needed)."""
    meta = resource.get("meta") or {}
    if "versionId" in meta:
        return resource
    return {**resource, "meta": {**meta, "versionId": "1"}}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class ResourceStore:
    """The server's view of a Workbench's resources, optionally persisted in a folder."""

    def __init__(self, workbench: Workbench, data_dir: str | Path | None = None) -> None:
        self.workbench = workbench
        self.registry = workbench.registry
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self._lock = threading.Lock()
        if self.data_dir is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self._restore()

    # --- persistence ------------------------------------------------------------------

    def _restore(self) -> None:
        assert self.data_dir is not None
        if any(self.data_dir.glob("*.json")):
            resources, _ = read_source(self.data_dir, progress=False, exact_decimals=True)
            self.registry.add_many(resources)
        for tombstone in sorted(self.data_dir.glob("*.deleted")):
            rtype, _, rid = tombstone.stem.partition("-")
            with contextlib.suppress(ResourceNotFoundError):
                self.registry.delete(rtype, rid)

    def _path(self, rtype: str, rid: str, suffix: str = ".json") -> Path:
        assert self.data_dir is not None
        return self.data_dir / f"{rtype}-{rid}{suffix}"

    def _write_file(self, path: Path, data: bytes) -> None:
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        self._sync_folder(path.parent)

    @staticmethod
    def _sync_folder(folder: Path) -> None:
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _persist(self, resource: Resource) -> None:
        if self.data_dir is None:
            return
        rtype, rid = resource["resourceType"], resource["id"]
        self._write_file(self._path(rtype, rid), jsonio.dumps(resource))
        self._path(rtype, rid, ".deleted").unlink(missing_ok=True)

    def _persist_delete(self, rtype: str, rid: str) -> None:
        if self.data_dir is None:
            return
        self._write_file(self._path(rtype, rid, ".deleted"), b"")
        self._path(rtype, rid).unlink(missing_ok=True)
        self._sync_folder(self.data_dir)

    # --- interactions -----------------------------------------------------------------

    @staticmethod
    def check_type(rtype: str) -> None:
        """Only ValueSet and CodeSystem are served as resources."""
        if rtype not in TERMINOLOGY_TYPES:
            raise ResourceNotFoundError(
                f"Resource type {rtype} is not served here (only {', '.join(TERMINOLOGY_TYPES)})"
            )

    def read(self, rtype: str, rid: str) -> Resource:
        """Return a resource as served (with ``meta.versionId``)."""
        self.check_type(rtype)
        return with_meta(self.registry.read(rtype, rid))

    def _checked(self, rtype: str, body: Any) -> Resource:
        if not isinstance(body, dict):
            raise InvalidRequestError(f"The body must be a {rtype} resource (a JSON object)")
        if body.get("resourceType") != rtype:
            raise InvalidRequestError(
                f"The body is a {body.get('resourceType')!r}, but this endpoint takes a {rtype}"
            )
        return check_resource(dict(body), f"{rtype} in the request")

    def create(self, rtype: str, body: Any) -> Resource:
        """Create a resource with a new server-assigned id."""
        self.check_type(rtype)
        resource = self._checked(rtype, body)
        with self._lock:
            resource["id"] = uuid.uuid4().hex
            return self._store(resource, "1")

    def update(
        self, rtype: str, rid: str, body: Any, if_match: str | None = None
    ) -> tuple[Resource, bool]:
        """Update (or create) the resource ``rid``; return (resource, created)."""
        self.check_type(rtype)
        if not _ID.match(rid):
            raise InvalidRequestError(f"'{rid}' is not a valid FHIR id")
        resource = self._checked(rtype, body)
        if resource.get("id") != rid:
            raise InvalidRequestError(
                f"The body's id ({resource.get('id')!r}) does not match the URL's id ({rid!r})"
            )
        with self._lock:
            try:
                current: Resource | None = self.registry.read(rtype, rid)
            except ResourceNotFoundError:
                current = None
            if if_match is not None and (current is None or if_match != etag(current)):
                have = etag(current) if current is not None else "no resource"
                raise VersionConflictError(
                    f"If-Match {if_match} does not match the current version ({have})"
                )
            next_version = str(int(version_of(current)) + 1) if current is not None else "1"
            stored = self._store(resource, next_version)
            return stored, current is None

    def _store(self, resource: Resource, version: str) -> Resource:
        resource["meta"] = {
            **(resource.get("meta") or {}),
            "versionId": version,
            "lastUpdated": _now(),
        }
        self.registry.check_put(resource)
        self._persist(resource)
        self.registry.put(resource)
        return resource

    def delete(self, rtype: str, rid: str) -> None:
        """Delete a resource (404 when it does not exist)."""
        self.check_type(rtype)
        with self._lock:
            self.registry.read(rtype, rid)
            self._persist_delete(rtype, rid)
            self.registry.delete(rtype, rid)

    def search(
        self,
        rtype: str,
        params: list[tuple[str, str]],
        *,
        self_url: str,
        root: str,
        strict: bool = False,
    ) -> Resource:
        """Search by url, version, name, title, status or _id (and a ConceptMap's source,
        target, source-system, target-system, … : ``search.parameters``); return a
        searchset Bundle.

        Unknown search parameters are ignored, as FHIR servers do, unless ``strict`` (the
        client sent ``Prefer: handling=strict``), which makes them an error.
        """
        self.check_type(rtype)
        count: int | None = None
        known = search.parameters(rtype)
        tests = []
        for name, value in params:
            if name == "_count":
                if not value.isdigit():
                    raise InvalidRequestError(f"_count must be a whole number, not '{value}'")
                count = int(value)
            elif name in _IGNORED_SEARCH:
                continue
            elif name not in known:
                if not strict:
                    continue
                raise InvalidRequestError(
                    f"Unknown search parameter '{name}' for {rtype} (supported: "
                    f"{', '.join(known)})"
                )
            else:
                tests.append((name, value))
        found = [
            r for r in self.registry.all(rtype) if all(search.matches(r, n, v) for n, v in tests)
        ]
        shown = found if count is None else found[:count]
        return {
            "resourceType": "Bundle",
            "type": "searchset",
            "total": len(found),
            "link": [{"relation": "self", "url": self_url}],
            "entry": [
                {
                    "fullUrl": f"{root}/{r['resourceType']}/{r['id']}",
                    "resource": with_meta(r),
                    "search": {"mode": "match"},
                }
                for r in shown
            ],
        }

