"""Create, read, update, delete, history and search of terminology resources, with persistence.

Writes are checked completely before anything changes. Every accepted write is a new version
in a ``VersionStore`` (``database/``): in memory, or with a data folder in its SQLite
database, committed (on disk) before the registry changes and before the response. A
rejected write, or one the database refuses (``StorageError``, 5xx), changes neither. At
start the database is restored exactly: each written resource under its own id, replacing
whatever was loaded with that id or canonical, deleted resources removed. Several processes
over one database (``--workers N``) see each other's writes before their next request
(``behind``, ``catch_up``; ``sync.py``).
"""

from __future__ import annotations

import contextlib
import logging
import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from starlette.concurrency import run_in_threadpool

from workbench import forksafe, structure
from workbench.errors import (
    GoneError,
    InvalidRequestError,
    InvalidResourceError,
    PreconditionFailedError,
    RequiredError,
    ResourceNotFoundError,
    StorageError,
    VersionConflictError,
)
from workbench.loading import check_resource
from workbench.registry import TERMINOLOGY_TYPES
from workbench.resources import Resource
from workbench.server import search as fhir_search
from workbench.server.database import (
    Change,
    Version,
    VersionStore,
    now_instant,
    open_database,
    tombstone,
)
from workbench.service import ServiceHolder, service_of
from workbench.terminology.hierarchy import hierarchy_cycle

if TYPE_CHECKING:
    from workbench.service import TerminologyService

log = logging.getLogger("workbench.server")
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
    """The server's view of a Workbench's resources, their versions in a ``VersionStore``
    (in memory, or the data folder's database)."""

    def __init__(
        self,
        workbench: TerminologyService | ServiceHolder,
        data_dir: str | Path | None = None,
        *,
        database: str | None = None,
    ) -> None:
        """``data_dir``: the data folder (its SQLite database), unless ``database`` (a
        ``postgresql://`` URL) names where the versions are; neither: in memory."""
        self.workbench = service_of(workbench)  # a Workbench is served through its service
        self.registry = self.workbench.registry
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self._lock = forksafe.rlock()
        self.db: VersionStore = open_database(self.data_dir, database)
        self._seen = 0  # the highest sequence number applied to the registry
        self._owed = 0  # changes reported by the database and not caught up yet
        self._owed_lock = forksafe.lock()
        with self._lock:
            self._restore()

    # --- the database -----------------------------------------------------------------

    def _restore(self) -> None:
        """Bring the registry to the state the database records, ids kept exactly."""
        latest = list(self.db.latest())
        for change in latest:
            if change.version.deleted:
                with contextlib.suppress(ResourceNotFoundError):
                    self.registry.delete(change.rtype, change.rid)
        for change in latest:
            if not change.version.deleted:
                self._put_exactly(change.version.resource)
            self._seen = max(self._seen, change.seq)

    def behind(self) -> bool:
        """Whether another process may have written since this one last caught up (cheap:
        asked before every request that reads authored content). A change the database
        reports is owed until a catch-up that started after it ends, so that a request
        arriving while another request's catch-up runs waits for it too."""
        if self.db.shared and self.db.changed():
            with self._owed_lock:
                self._owed += 1
        return self._owed > 0

    def catch_up(self) -> None:
        """Apply what other processes wrote since this one last looked. When the database
        cannot be read now, what is in memory is served meanwhile (a write catches up in
        its transaction anyway)."""
        with self._lock:
            owed = self._owed  # (reported before the versions are read: they cover them)
            try:
                self._catch_up()
            except StorageError as exc:
                log.warning("Other processes' writes could not be read now: %s", exc)
                return
            with self._owed_lock:
                self._owed -= owed

    def _catch_up(self) -> None:
        for change in self.db.changes(self._seen):
            self._apply(change)

    def _apply(self, change: Change) -> None:
        """Bring the registry to a version another process wrote."""
        self._seen = max(self._seen, change.seq)
        rtype, rid, version = change.rtype, change.rid, change.version
        current = self._current(rtype, rid)
        if current is not None and _number(version_of(current)) > version.number:
            return  # (a later version is applied already)
        if version.deleted:
            with contextlib.suppress(ResourceNotFoundError):
                self.registry.delete(rtype, rid)
        else:
            self._put_exactly(version.resource)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[list[Callable[[], None]]]:
        """One write at a time (this process's threads, and every process over the same
        database): a transaction, this process brought up to date in it first. The block
        decides and saves; the steps it appends to the list it gets change the registry
        once the transaction is committed, so a write the database refused changes
        nothing."""
        with self._lock:
            after: list[Callable[[], None]] = []
            with self.db.transaction():
                self._catch_up()
                yield after
            for step in after:
                step()

    def _put_exactly(self, resource: Resource) -> None:
        """Store ``resource`` under its own id; whatever else holds its canonical goes."""
        rtype, url = resource["resourceType"], resource.get("url")
        other = self.registry.get(rtype, url, str(resource.get("version") or "")) if url else None
        if other is not None and other.get("id") != resource["id"]:
            exact = str(other.get("version") or "") == str(resource.get("version") or "")
            if exact:
                self.registry.delete(rtype, other["id"])
        self.registry.put(resource)

    def _record(
        self, rtype: str, rid: str, version: Version, current: Resource | None
    ) -> Callable[[], None]:
        """Save a new version (inside ``_writing``); the first write to a resource that was
        only loaded records the loaded version too, so that its history is complete.
        Return the step that marks the versions as applied."""
        if current is not None and not self.db.numbers(rtype, rid):
            served = with_meta(current)
            self.db.save(rtype, rid, Version(_number(version_of(served)), served))
        seq = self.db.save(rtype, rid, version)

        def applied() -> None:
            self._seen = max(self._seen, seq)

        return applied

    def close(self) -> None:
        """Close the database's connections (a later call opens them again)."""
        self.db.close()

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

    def held(self, rtype: str, rid: str) -> Resource | None:
        """The resource as served from memory (no database call: asked on the event loop),
        None when it is not held (then ``read``, in a worker thread, says why)."""
        self.check_type(rtype)
        current = self._current(rtype, rid)
        return with_meta(current) if current is not None else None

    def read(self, rtype: str, rid: str) -> Resource:
        """Return a resource as served (with ``meta.versionId``); 410 Gone when its latest
        version is a deletion (FHIR RESTful API, read), 404 when it was never here."""
        self.check_type(rtype)
        try:
            return with_meta(self.registry.read(rtype, rid))
        except ResourceNotFoundError:
            numbers = self.db.numbers(rtype, rid)
            last = self.db.load(rtype, rid, numbers[-1]) if numbers else None
            if last is not None and last.deleted:
                raise GoneError(f"{rtype}/{rid} was deleted (version {last.number})") from None
            raise

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
        found = self.db.load(rtype, rid, int(vid)) if vid.isdigit() else None
        if found is None:
            raise ResourceNotFoundError(f"{rtype}/{rid}/_history/{vid} not found")
        if found.deleted:
            raise GoneError(f"{rtype}/{rid} was deleted in version {vid}")
        return found.resource

    def versions(self, rtype: str, rid: str) -> list[Version]:
        """Every known version of a resource, newest first (404 when none is known)."""
        self.check_type(rtype)
        current = self._current(rtype, rid)
        out = {found.number: found for found in self.db.history(rtype, rid)}
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
            ids.update(dict.fromkeys(self.db.ids(rtype)))
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
        with self._writing() as after:
            if if_none_exist is not None:
                existing = self._conditional_match(rtype, if_none_exist)
                if existing is not None:
                    return with_meta(existing), False
            rid = uuid.uuid4().hex
            resource["id"] = rid
            return self._store(resource, None, after), True

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
        if resource.get("id") != rid:  # (FHIR http.html#update: 400; OpenAPI states neither)
            raise RequiredError(
                f"The body's id ({resource.get('id')!r}) does not match the URL's id ({rid!r})"
            )
        with self._writing() as after:
            current = self._current(rtype, rid)
            _check_if_match(if_match, current)
            stored = self._store(resource, current, after)
            return stored, current is None

    def _next_number(self, rtype: str, rid: str, current: Resource | None) -> int:
        known = self.db.numbers(rtype, rid)
        if current is not None:
            known.append(_number(version_of(current)))
        return max(known, default=0) + 1

    def _store(
        self, resource: Resource, current: Resource | None, after: list[Callable[[], None]]
    ) -> Resource:
        """Save ``resource`` as the next version (inside ``_writing``); the registry takes it
        once the transaction is committed."""
        rtype, rid = resource["resourceType"], resource["id"]
        number = self._next_number(rtype, rid, current)
        resource["meta"] = {
            **(resource.get("meta") or {}),
            "versionId": str(number),
            "lastUpdated": now_instant(),
        }
        self.registry.check_put(resource)
        after.append(self._record(rtype, rid, Version(number, resource), current))
        after.append(lambda: self._put(resource))
        return resource

    def delete(self, rtype: str, rid: str, if_match: str | None = None) -> bool:
        """Delete a resource; the deletion is a new version. Return False when it was
        already deleted (nothing changes, as R4 asks); 404 when it never existed, 412 when
        ``if_match`` does not hold (``*``: any current version)."""
        self.check_type(rtype)
        self.check_id(rid)
        with self._writing() as after:
            current = self._current(rtype, rid)
            _check_if_match(if_match, current)
            if current is None:
                if self.db.numbers(rtype, rid):
                    return False  # known, and its latest version is a deletion
                raise ResourceNotFoundError(f"{rtype}/{rid} not found")
            number = self._next_number(rtype, rid, current)
            gone = tombstone(rtype, rid, number, now_instant())
            after.append(self._record(rtype, rid, gone, current))
            after.append(lambda: self._forget(rtype, rid))
            return True

    def _put(self, resource: Resource) -> None:
        self.registry.put(resource)

    def _forget(self, rtype: str, rid: str) -> None:
        with contextlib.suppress(ResourceNotFoundError):
            self.registry.delete(rtype, rid)

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


async def read_resource(store: ResourceStore, rtype: str, rid: str) -> Resource:
    """``store.read``: from memory on the event loop when the resource is held, else in a
    worker thread (the database says whether it was deleted), so that a slow database
    never holds the event loop."""
    held = store.held(rtype, rid)
    return held if held is not None else await run_in_threadpool(store.read, rtype, rid)
