"""The example resources of FHIR R4 (hl7.fhir.r4.examples 4.0.1) and of the International
Patient Summary (hl7.fhir.uv.ips 2.0.0) as a binding check reads them: the packages' JSON
files that are not definitions (StructureDefinitions, value sets, search parameters ...),
Bundles opened, as read_fhir opens them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

#: Resource types that define rather than record: not examples of data.
DEFINITIONS = frozenset({
    "StructureDefinition", "ValueSet", "CodeSystem", "ConceptMap", "SearchParameter",
    "OperationDefinition", "CapabilityStatement", "CompartmentDefinition", "NamingSystem",
    "ImplementationGuide", "StructureMap", "GraphDefinition", "MessageDefinition",
    "TerminologyCapabilities",
})  # fmt: skip


def resources_in(value: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A Bundle's entries' resources (recursively), anything else itself."""
    if value.get("resourceType") == "Bundle":
        for entry in value.get("entry", []):
            if isinstance(entry.get("resource"), dict):
                yield from resources_in(entry["resource"])
    else:
        yield value


def example_resources(*folders: Path) -> list[dict[str, Any]]:
    """The example resources of the JSON files in ``folders`` (sorted by file name)."""
    found: list[dict[str, Any]] = []
    for folder in folders:
        for path in sorted(folder.glob("*.json")):
            value = orjson.loads(path.read_bytes())
            if not isinstance(value, dict) or "resourceType" not in value:
                continue
            found.extend(r for r in resources_in(value) if r["resourceType"] not in DEFINITIONS)
    return found
