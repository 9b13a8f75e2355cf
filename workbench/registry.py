"""The shared in-memory store of terminology resources.

One ``Registry`` holds every ValueSet and CodeSystem a Workbench knows, indexed by logical id
and by canonical URL (and ``url|version``). It is thread-safe: the embedded server and the
notebook share one instance. Every change is announced to listeners with the set of canonical
URLs it touched, which is how the engine's caches know what to drop.

Resources are stored as the dicts they came in as (FHIR JSON stays lossless); the registry
only fills in ``id`` when a loaded resource has none.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from workbench import forksafe
from workbench.errors import DuplicateCanonicalError, ResourceNotFoundError
from workbench.resources import Resource, latest
from workbench.terminology.versions import matches

TERMINOLOGY_TYPES = ("CodeSystem", "ValueSet", "ConceptMap")
_ID_CHARS = re.compile(r"[^A-Za-z0-9\-.]")


@dataclass(frozen=True)
class Change:
    """What one registry write touched: ``(resourceType, url)`` pairs."""

    urls: frozenset[tuple[str, str]] = field(default_factory=frozenset)


Listener = Callable[[Change], None]


class Registry:
    """Thread-safe store of ValueSets and CodeSystems, by id and by canonical URL."""

    def __init__(self) -> None:
        self._lock = forksafe.rlock()
        self._by_id: dict[tuple[str, str], Resource] = {}
        self._by_url: dict[tuple[str, str], dict[str, Resource]] = {}
        self._latest: dict[tuple[str, str], Resource] = {}
        self._listeners: list[Listener] = []
        self.generation = 0

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as its resources and generation (no lock; listeners subscribe again)."""
        with self._lock:
            return {
                "by_id": self._by_id,
                "by_url": self._by_url,
                "latest": self._latest,
                "generation": self.generation,
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]
        self._by_id, self._by_url = state["by_id"], state["by_url"]
        self._latest, self.generation = state["latest"], state["generation"]

    # --- notification -----------------------------------------------------------------

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener(change)`` after every write."""
        with self._lock:
            self._listeners.append(listener)

    def _notify(self, touched: set[tuple[str, str]]) -> None:
        self.generation += 1
        change = Change(frozenset(touched))
        for listener in list(self._listeners):
            listener(change)

    # --- reads ------------------------------------------------------------------------

    def read(self, resource_type: str, resource_id: str) -> Resource:
        """Return the resource with this id, or raise ResourceNotFoundError."""
        found = self._by_id.get((resource_type, resource_id))
        if found is None:
            raise ResourceNotFoundError(f"{resource_type}/{resource_id} not found")
        return found

    def get(self, resource_type: str, url: str, version: str | None = None) -> Resource | None:
        """Return the resource for ``url`` (and ``version``), latest version when none given."""
        if version is None:
            return self._latest.get((resource_type, url))
        versions = self._by_url.get((resource_type, url))
        if not versions:
            return None
        found = versions.get(version)
        if found is None:
            # A partial version ("1.0" for "1.0.3") or a pattern ("1.x"): the latest match.
            found = latest(r for v, r in versions.items() if matches(version, v))
        return found

    def versions(self, resource_type: str, url: str) -> list[str]:
        """Return the known versions of a canonical URL ('' for an unversioned resource)."""
        return list(self._by_url.get((resource_type, url), {}))

    def all(self, resource_type: str) -> list[Resource]:
        """Return every stored resource of a type, in load order."""
        with self._lock:
            return [r for (t, _), r in self._by_id.items() if t == resource_type]

    def __len__(self) -> int:
        return len(self._by_id)

    # --- writes -----------------------------------------------------------------------

    def add_many(
        self, resources: Iterable[Resource], *, replace_canonical: bool = True
    ) -> list[Resource]:
        """Store resources in one step, notify once, and return them as stored.

        A resource whose ``url|version`` is already stored replaces the stored one when
        ``replace_canonical`` is true (later loads win); otherwise DuplicateCanonicalError is
        raised and nothing changes. A resource whose ``id`` is taken by a resource with another
        canonical gets a fresh id.
        """
        items = list(resources)
        with self._lock:
            touched: set[tuple[str, str]] = set()
            staged: dict[tuple[str, str], Resource] = {}
            staged_canonicals: dict[tuple[str, str, str], Resource] = {}
            for resource in items:
                rtype = resource["resourceType"]
                url = resource.get("url")
                version = str(resource.get("version") or "")
                earlier = staged_canonicals.get((rtype, url, version)) if url else None
                if earlier is not None:
                    del staged[(rtype, earlier["id"])]
                existing = earlier or (
                    self._by_url.get((rtype, url), {}).get(version) if url else None
                )
                if existing is not None and not replace_canonical:
                    raise DuplicateCanonicalError(
                        f"{rtype} {url}|{version} already exists as {rtype}/{existing['id']}"
                    )
                rid = resource.get("id")
                if existing is not None and (not rid or rid == existing.get("id")):
                    rid = existing["id"]
                elif not rid or self._id_taken(rtype, rid, staged, url, version):
                    rid = self._fresh_id(rtype, rid, version, staged)
                resource["id"] = rid
                staged[(rtype, rid)] = resource
                if url:
                    staged_canonicals[(rtype, url, version)] = resource
                if existing is not None and existing is not earlier and existing.get("id") != rid:
                    self._remove(rtype, existing["id"], touched)
            for (rtype, rid), resource in staged.items():
                self._put(rtype, rid, resource, touched)
            self._notify(touched)
            return list(staged.values())

    def put(self, resource: Resource) -> tuple[Resource, bool]:
        """Create or replace the resource with ``resource['id']``; return (resource, created).

        Raises DuplicateCanonicalError, changing nothing, when another resource already has
        the same ``url|version``.
        """
        rtype, rid = resource["resourceType"], resource["id"]
        with self._lock:
            self.check_put(resource)
            touched: set[tuple[str, str]] = set()
            created = (rtype, rid) not in self._by_id
            if not created:
                self._remove(rtype, rid, touched)
            self._put(rtype, rid, resource, touched)
            self._notify(touched)
            return resource, created

    def check_put(self, resource: Resource) -> None:
        """Raise DuplicateCanonicalError when ``put`` would clash with another resource."""
        rtype, rid, url = resource["resourceType"], resource["id"], resource.get("url")
        version = str(resource.get("version") or "")
        other = self._by_url.get((rtype, url), {}).get(version) if url else None
        if other is not None and other.get("id") != rid:
            raise DuplicateCanonicalError(
                f"{rtype} {url}|{version} already exists as {rtype}/{other['id']}"
            )

    def delete(self, resource_type: str, resource_id: str) -> Resource:
        """Remove and return a resource; raise ResourceNotFoundError when it is not there."""
        with self._lock:
            resource = self.read(resource_type, resource_id)
            touched: set[tuple[str, str]] = set()
            self._remove(resource_type, resource_id, touched)
            self._notify(touched)
            return resource

    # --- internals (called with the lock held) ------------------------------------------

    def _id_taken(
        self, rtype: str, rid: str, staged: dict[tuple[str, str], Resource], url: Any, version: str
    ) -> bool:
        holder = staged.get((rtype, rid)) or self._by_id.get((rtype, rid))
        if holder is None:
            return False
        return holder.get("url") != url or str(holder.get("version") or "") != version

    def _fresh_id(
        self, rtype: str, rid: str | None, version: str, staged: dict[tuple[str, str], Resource]
    ) -> str:
        base = rid or uuid.uuid4().hex
        first = [f"{base}-{_ID_CHARS.sub('-', version)}"] if version else []
        # candidates made one at a time: the first free one usually comes at once
        candidates = chain(first, (f"{base}-{n}" for n in range(2, 10_000)))
        for candidate in candidates:
            candidate = candidate[:64]
            if (rtype, candidate) not in self._by_id and (rtype, candidate) not in staged:
                return candidate
        return uuid.uuid4().hex

    def _put(self, rtype: str, rid: str, resource: Resource, touched: set[tuple[str, str]]) -> None:
        self._by_id[(rtype, rid)] = resource
        url = resource.get("url")
        if url:
            key = (rtype, str(url))
            self._by_url.setdefault(key, {})[str(resource.get("version") or "")] = resource
            self._refresh_latest(key)
            touched.add(key)

    def _remove(self, rtype: str, rid: str, touched: set[tuple[str, str]]) -> None:
        resource = self._by_id.pop((rtype, rid))
        url = resource.get("url")
        if url:
            key = (rtype, str(url))
            versions = self._by_url.get(key, {})
            version = str(resource.get("version") or "")
            if versions.get(version) is resource:
                del versions[version]
            if not versions:
                self._by_url.pop(key, None)
            self._refresh_latest(key)
            touched.add(key)

    def _refresh_latest(self, key: tuple[str, str]) -> None:
        found = latest(self._by_url.get(key, {}).values())
        if found is None:
            self._latest.pop(key, None)
        else:
            self._latest[key] = found


class OverlayRegistry:
    """A read-only view for one request: its own resources first, then a shared registry.

    ``tx-resource`` parameters are seen this way: preferred over stored resources (also when
    value sets import each other), never stored, and invisible to every other request.
    """

    def __init__(self, top: Registry, base: Registry | OverlayRegistry) -> None:
        self.top = top
        self.base = base

    @property
    def generation(self) -> int:
        """The shared registry's generation (the request's own resources never change)."""
        return self.base.generation

    def subscribe(self, listener: Listener) -> None:
        """Nothing to announce: a request's view does not change while it runs."""

    def read(self, resource_type: str, resource_id: str) -> Resource:
        """The resource with this id, the request's own first."""
        try:
            return self.top.read(resource_type, resource_id)
        except ResourceNotFoundError:
            return self.base.read(resource_type, resource_id)

    def get(self, resource_type: str, url: str, version: str | None = None) -> Resource | None:
        """The resource for ``url`` (and ``version``), the request's own first."""
        found = self.top.get(resource_type, url, version)
        return found if found is not None else self.base.get(resource_type, url, version)

    def versions(self, resource_type: str, url: str) -> list[str]:
        """The known versions of a canonical URL, the request's own first."""
        own = self.top.versions(resource_type, url)
        return own + [v for v in self.base.versions(resource_type, url) if v not in own]

    def all(self, resource_type: str) -> list[Resource]:
        """Every resource of a type, the request's own first."""
        return self.top.all(resource_type) + self.base.all(resource_type)

    def __len__(self) -> int:
        return len(self.top) + len(self.base)
