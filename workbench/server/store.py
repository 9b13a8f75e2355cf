"""Create, read, update, delete, history and search of terminology resources, with persistence.

Writes are checked completely before anything changes. Every accepted write is a new version
in the history (``history.py``); with a data folder that version is on disk (temporary file,
fsync, rename, fsync of the folder) before the registry changes and before the response. A
rejected write, or one the disk refuses (``StorageError``, 5xx), changes neither. At start the
data folder is restored exactly: each written resource under its own id, replacing whatever
was loaded with that id or canonical, deleted resources removed.
"""

from __future__ import annotations

import contextlib
import re
import threading
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from workbench import structure
from workbench.errors import (
    GoneError,
    InvalidRequestError,
    InvalidResourceError,
    PreconditionFailedError,
    ResourceNotFoundError,
    StorageError,
    VersionConflictError,
)
from workbench.loading import check_resource
from workbench.registry import TERMINOLOGY_TYPES
from workbench.resources import Resource
from workbench.server import search as fhir_search
from workbench.server.history import (
    FolderHistory,
    MemoryHistory,
    Version,
    now_instant,
    refused,
    tombstone,
)
from workbench.server.journal import Journal
from workbench.service import ServiceHolder, service_of
from workbench.terminology.hierarchy import hierarchy_cycle

if TYPE_CHECKING:
    from workbench.service import TerminologyService

_ID = re.compile(r"[A-Za-z0-9\-.]{1,64}")
_ETAG = re.compile(r'\s*(?:W/)?"([^"]*)"\s*')


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


def etag_version(header: str) -> str:
    """The version an ``If-Match`` header names, in the weak (``W/"3"``) or strong (``"3"``)
    form; a bare ``3`` is taken as well."""
    match = _ETAG.fullmatch(header)
    return match.group(1) if match else header.strip()


def if_match_holds(header: str, current: Resource | None) -> bool:
    """Whether an ``If-Match`` header holds (RFC 9110 13.1.1): ``*`` for any current version,
    else one of its comma-separated ETags names the current version. Without a current
    version (never created, or deleted) it never holds."""
    if current is None:
        return False
    have = version_of(current)
    return any(
        tag.strip() == "*" or etag_version(tag) == have for tag in header.split(",") if tag.strip()
    )


def _check_if_match(if_match: str | None, current: Resource | None) -> None:
    """Raise VersionConflictError (412) when ``If-Match`` is given and does not hold."""
    if if_match is not None and not if_match_holds(if_match, current):
        have = etag(current) if current is not None else "no resource"
        raise VersionConflictError(
            f"If-Match {if_match} does not match the current version ({have})"
        )


def _number(version: str) -> int:
    return int(version) if version.isdigit() else 1


class ResourceStore:
    """The server's view of a Workbench's resources, optionally persisted in a folder."""

    def __init__(
        self, workbench: TerminologyService | ServiceHolder, data_dir: str | Path | None = None
    ) -> None:
        self.workbench = service_of(workbench)  # a Workbench is served through its service
        self.registry = self.workbench.registry
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self._lock = threading.Lock()
        self.history: FolderHistory | MemoryHistory
        self.journal: Journal | None = None
        if self.data_dir is not None:
            self.history = FolderHistory(self.data_dir)
            self.journal = Journal(self.data_dir, self._apply, self._reload)
            with self.journal.exclusive(catch_up=False):
                self._restore(self.history)
                self.journal.mark_applied()
        else:
            self.history = MemoryHistory()

    # --- persistence ------------------------------------------------------------------

    def _restore(self, history: FolderHistory) -> None:
        """Bring the registry to the state the data folder records, ids kept exactly."""
        history.remove_leftovers()
        history.migrate_flat_files()
        self._load_latest(history)

    def _reload(self) -> None:
        """Bring the registry to the latest version of every resource in the data folder
        (when this process missed journal lines), touching no file."""
        if isinstance(self.history, FolderHistory):
            self._load_latest(self.history)

    def _load_latest(self, history: FolderHistory) -> None:
        """Put the latest version of every resource in the folder (deleted ones removed)."""
        latest = list(history.latest())
        for version in latest:
            if version.deleted:
                rtype, rid = version.resource["resourceType"], version.resource["id"]
                with contextlib.suppress(ResourceNotFoundError):
                    self.registry.delete(rtype, rid)
        for version in latest:
            if not version.deleted:
                self._put_exactly(version.resource)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """One write at a time: this process's threads, and with a data folder every process
        serving it (``journal.py``), the registry first brought up to date."""
        with self._lock:
            if self.journal is None:
                yield
                return
            try:
                with self.journal.exclusive():
                    yield
            except OSError as exc:  # the folder, its lock or its journal failed
                raise refused(exc) from exc

    def _apply(self, rtype: str, rid: str, number: int) -> None:
        """Bring the registry to a version another process wrote (from the journal)."""
        version = self.history.load(rtype, rid, number)
        if version is None:
            return
        if version.deleted:
            with contextlib.suppress(ResourceNotFoundError):
                self.registry.delete(rtype, rid)
        else:
            self._put_exactly(version.resource)

    def _put_exactly(self, resource: Resource) -> None:
        """Store ``resource`` under its own id; whatever else holds its canonical goes."""
        rtype, url = resource["resourceType"], resource.get("url")
        other = self.registry.get(rtype, url, str(resource.get("version") or "")) if url else None
        if other is not None and other.get("id") != resource["id"]:
            exact = str(other.get("version") or "") == str(resource.get("version") or "")
            if exact:
                self.registry.delete(rtype, other["id"])
        self.registry.put(resource)

    def _record(self, rtype: str, rid: str, version: Version, current: Resource | None) -> None:
        """Save a new version; the first write to a resource that was only loaded records
        the loaded version too, so that its history is complete."""
        if current is not None and not self.history.numbers(rtype, rid):
            served = with_meta(current)
            self.history.save(rtype, rid, Version(_number(version_of(served)), served))
        self.history.save(rtype, rid, version)
        if self.journal is not None:
            try:
                self.journal.append(rtype, rid, version.number)
            except StorageError:
                self.history.discard(rtype, rid, version)
                raise

    # --- interactions -----------------------------------------------------------------

    @staticmethod
    def check_type(rtype: str) -> None:
        """Only the terminology resource types are served as resources."""
        if rtype not in TERMINOLOGY_TYPES:
            raise ResourceNotFoundError(
                f"Resource type {rtype} is not served here (only {', '.join(TERMINOLOGY_TYPES)})"
            )

    @staticmethod
    def check_id(rid: str) -> None:
        """Raise InvalidRequestError unless ``rid`` is a FHIR id."""
        if not _ID.fullmatch(rid):
            raise InvalidRequestError(f"{rid!r} is not a valid FHIR id")

    def read(self, rtype: str, rid: str) -> Resource:
        """Return a resource as served (with ``meta.versionId``)."""
        self.check_type(rtype)
        return with_meta(self.registry.read(rtype, rid))

    def _current(self, rtype: str, rid: str) -> Resource | None:
        try:
            return self.registry.read(rtype, rid)
        except ResourceNotFoundError:
            return None

    def vread(self, rtype: str, rid: str, vid: str) -> Resource:
        """One version of a resource (410 when that version is a deletion)."""
        self.check_type(rtype)
        current = self._current(rtype, rid)
        if current is not None and version_of(current) == vid:
            return with_meta(current)
        found = self.history.load(rtype, rid, int(vid)) if vid.isdigit() else None
        if found is None:
            raise ResourceNotFoundError(f"{rtype}/{rid}/_history/{vid} not found")
        if found.deleted:
            raise GoneError(f"{rtype}/{rid} was deleted in version {vid}")
        return found.resource

    def versions(self, rtype: str, rid: str) -> list[Version]:
        """Every known version of a resource, newest first (404 when none is known)."""
        self.check_type(rtype)
        current = self._current(rtype, rid)
        out: dict[int, Version] = {}
        for number in self.history.numbers(rtype, rid):
            found = self.history.load(rtype, rid, number)
            if found is not None:
                out[number] = found
        if current is not None:
            served = with_meta(current)
            out[_number(version_of(served))] = Version(_number(version_of(served)), served)
        if not out:
            raise ResourceNotFoundError(f"{rtype}/{rid} not found")
        return [out[n] for n in sorted(out, reverse=True)]

    def histories(self, rtypes: Iterable[str]) -> Iterator[list[Version]]:
        """The versions (newest first) of every resource of the given types: those served
        now and those deleted whose versions are kept."""
        for rtype in rtypes:
            self.check_type(rtype)
            ids = dict.fromkeys(str(r.get("id")) for r in self.registry.all(rtype) if r.get("id"))
            ids.update(dict.fromkeys(self.history.ids(rtype)))
            for rid in ids:
                with contextlib.suppress(ResourceNotFoundError):
                    yield self.versions(rtype, rid)

    @staticmethod
    def checked(rtype: str, body: Any) -> Resource:
        """The body as the resource to store, once it passed every check of a write (its
        type, the R4 structure, the terminology rules, no cycle in a hierarchy); else raise.
        Pure, so it may run in another process (``prechecked`` writes take its result)."""
        if not isinstance(body, dict):
            raise InvalidRequestError(f"The body must be a {rtype} resource (a JSON object)")
        if body.get("resourceType") != rtype:
            raise InvalidRequestError(
                f"The body is a {body.get('resourceType')!r}, but this endpoint takes a {rtype}"
            )
        structure.check_resource(body)
        resource = check_resource(dict(body), f"{rtype} in the request")
        if rtype == "CodeSystem":
            cycle = hierarchy_cycle(resource)
            if cycle:
                raise InvalidResourceError(
                    f"{rtype} in the request: the concept hierarchy has a cycle: "
                    + " -> ".join(cycle)
                )
        return resource

    def create(
        self, rtype: str, body: Any, if_none_exist: str | None = None, *, prechecked: bool = False
    ) -> tuple[Resource, bool]:
        """Create a resource with a new server-assigned id; return (resource, created).

        With ``if_none_exist`` (a search query string), an existing single match is returned
        instead (created false); more than one match is a 412. ``prechecked``: ``body`` is
        what ``checked`` returned.
        """
        self.check_type(rtype)
        resource = body if prechecked else self.checked(rtype, body)
        with self._writing():
            if if_none_exist is not None:
                existing = self._conditional_match(rtype, if_none_exist)
                if existing is not None:
                    return with_meta(existing), False
            rid = uuid.uuid4().hex
            resource["id"] = rid
            return self._store(resource, None), True

    def _conditional_match(self, rtype: str, query_string: str) -> Resource | None:
        pairs = parse_qsl(query_string.lstrip("?"), keep_blank_values=True)
        query = fhir_search.parse(rtype, pairs, strict=True)
        if not query.tests:
            raise InvalidRequestError(f"If-None-Exist holds no search criteria: '{query_string}'")
        found = query.run(self.registry.all(rtype))
        if len(found) > 1:
            raise PreconditionFailedError(
                f"If-None-Exist '{query_string}' matches {len(found)} resources, not one"
            )
        return found[0] if found else None

    def update(
        self,
        rtype: str,
        rid: str,
        body: Any,
        if_match: str | None = None,
        *,
        prechecked: bool = False,
    ) -> tuple[Resource, bool]:
        """Update (or create) the resource ``rid``; return (resource, created).
        ``prechecked``: ``body`` is what ``checked`` returned."""
        self.check_type(rtype)
        self.check_id(rid)
        resource = body if prechecked else self.checked(rtype, body)
        if resource.get("id") != rid:
            raise InvalidRequestError(
                f"The body's id ({resource.get('id')!r}) does not match the URL's id ({rid!r})"
            )
        with self._writing():
            current = self._current(rtype, rid)
            _check_if_match(if_match, current)
            stored = self._store(resource, current)
            return stored, current is None

    def _next_number(self, rtype: str, rid: str, current: Resource | None) -> int:
        known = self.history.numbers(rtype, rid)
        if current is not None:
            known.append(_number(version_of(current)))
        return max(known, default=0) + 1

    def _store(self, resource: Resource, current: Resource | None) -> Resource:
        rtype, rid = resource["resourceType"], resource["id"]
        number = self._next_number(rtype, rid, current)
        resource["meta"] = {
            **(resource.get("meta") or {}),
            "versionId": str(number),
            "lastUpdated": now_instant(),
        }
        self.registry.check_put(resource)
        self._record(rtype, rid, Version(number, resource), current)
        self.registry.put(resource)
        return resource

    def delete(self, rtype: str, rid: str, if_match: str | None = None) -> bool:
        """Delete a resource; the deletion is a new version. Return False when it was
        already deleted (nothing changes, as R4 asks); 404 when it never existed, 412 when
        ``if_match`` does not hold (``*``: any current version)."""
        self.check_type(rtype)
        self.check_id(rid)
        with self._writing():
            current = self._current(rtype, rid)
            _check_if_match(if_match, current)
            if current is None:
                if self.history.numbers(rtype, rid):
                    return False  # known, and its latest version is a deletion
                raise ResourceNotFoundError(f"{rtype}/{rid} not found")
            number = self._next_number(rtype, rid, current)
            self._record(rtype, rid, tombstone(rtype, rid, number, now_instant()), current)
            self.registry.delete(rtype, rid)
            return True

    def search(
        self,
        rtype: str,
        params: Iterable[tuple[str, str]],
        *,
        type_url: str,
        strict: bool = False,
    ) -> Resource:
        """Search (``search.py``): return one page as a searchset Bundle.

        Unknown search parameters are ignored, as FHIR servers do, unless ``strict`` (the
        client sent ``Prefer: handling=strict``), which makes them an error.
        """
        self.check_type(rtype)
        query = fhir_search.parse(rtype, params, strict=strict)
        found = query.run(self.registry.all(rtype))
        return fhir_search.bundle(query, found, type_url=type_url, served=with_meta)
