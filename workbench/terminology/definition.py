"""Reading a ValueSet's definition as written: its expansion-parameter extensions, the
value sets an include imports, and filters that have no value (issue 22, e2/e3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench.errors import InvalidValueSetError
from workbench.resources import canonical_of, split_canonical

EXPANSION_PARAMETER = "http://hl7.org/fhir/tools/StructureDefinition/valueset-expansion-parameter"
#: The tools extension and its core twin, both read.
EXPANSION_PARAMETERS = (
    EXPANSION_PARAMETER,
    "http://hl7.org/fhir/StructureDefinition/valueset-expansion-parameter",
)


def expansion_parameter(resource: Mapping[str, Any] | None, name: str) -> Any:
    """The value of a ``valueset-expansion-parameter`` extension called ``name`` on the
    ValueSet or its compose (the tools or the core extension URL), or None.

    >>> expansion_parameter({"compose": {"extension": [{"url": EXPANSION_PARAMETER,
    ...     "extension": [{"url": "name", "valueCode": "displayLanguage"},
    ...                   {"url": "value", "valueCode": "en"}]}]}}, "displayLanguage")
    'en'
    """
    resource = resource or {}
    compose = resource.get("compose")
    compose = compose if isinstance(compose, Mapping) else {}
    for ext in [*(resource.get("extension") or ()), *(compose.get("extension") or ())]:
        if not isinstance(ext, Mapping) or ext.get("url") not in EXPANSION_PARAMETERS:
            continue
        parts = {
            str(p.get("url")): next((v for k, v in p.items() if k.startswith("value")), None)
            for p in ext.get("extension", ()) or ()
            if isinstance(p, Mapping)
        }
        if parts.get("name") == name:
            return parts.get("value")
    return None


def import_refs(raw: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """Return the ``(url, version)`` of each ``valueSet`` import of an include."""
    return [split_canonical(str(ref)) for ref in raw.get("valueSet", ()) or ()]


def check_filter_values(resource: Mapping[str, Any]) -> None:
    """Raise InvalidValueSetError, at ``ValueSet.compose.include[i].filter[j].value`` (the
    element missing, where tx.fhir.org points), for a filter without a ``value`` (absent,
    or only a ``_value`` with an extension such as data-absent-reason). Such a value set may
    be stored and sent as a tx-resource (issue 22, e2); it fails only when it is expanded
    or validated against (e3)."""
    compose = resource.get("compose") or {}
    for kind in ("include", "exclude"):
        for i, raw in enumerate(compose.get(kind, ()) or ()):
            filters = (raw.get("filter") if isinstance(raw, Mapping) else None) or ()
            for j, found in enumerate(filters):
                if isinstance(found, Mapping) and not isinstance(found.get("value"), str):
                    where = f"ValueSet.compose.{kind}[{i}].filter[{j}].value"
                    raise InvalidValueSetError(
                        f"The filter '{found.get('property')} {found.get('op')}' of the value "
                        f"set {canonical_of(resource) or '(inline)'} has no value ({where})",
                        expression=[where],
                    )
