"""Definitions the workbench keeps beside its terminology: SQL on FHIR ViewDefinitions, by
canonical URL, so a view can be run by its ``url`` once its package or file is loaded.

>>> kept = Definitions()
>>> kept.add([{"resourceType": "ViewDefinition", "url": "http://x/v", "resource": "Patient"}])
>>> kept.get("ViewDefinition", "http://x/v")["resource"]
'Patient'
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from workbench.resources import Resource


class Definitions:
    """Definition resources by type and canonical URL (and version): the last one loaded
    for a URL is the one ``get`` gives without a version."""

    def __init__(self) -> None:
        self._by_url: dict[tuple[str, str], dict[str, Resource]] = {}
        self._lock = threading.Lock()

    def add(self, resources: Iterable[Resource]) -> None:
        """Keep ``resources`` (a resource without ``url`` is kept under its ``id``)."""
        with self._lock:
            for resource in resources:
                url = str(resource.get("url") or resource.get("id") or "")
                versions = self._by_url.setdefault((str(resource["resourceType"]), url), {})
                version = str(resource.get("version") or "")
                versions.pop(version, None)
                versions[version] = resource

    def get(self, resource_type: str, url: str, version: str | None = None) -> Resource | None:
        """The definition of ``resource_type`` at ``url`` (``url|version`` too), or None."""
        if version is None and "|" in url:
            url, version = url.split("|", 1)
        with self._lock:
            versions = self._by_url.get((resource_type, url))
            if not versions:
                return None
            if version is None:
                return list(versions.values())[-1]
            return versions.get(version)

    def all(self, resource_type: str) -> list[Resource]:
        """Every definition of ``resource_type``, each URL's versions in load order."""
        with self._lock:
            return [r for (kind, _), found in self._by_url.items() if kind == resource_type
                    for r in found.values()]  # fmt: skip
