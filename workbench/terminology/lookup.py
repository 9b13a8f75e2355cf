"""CodeSystem $lookup and $subsumes over a CodeSystemProvider."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple


@dataclass(frozen=True)
class LookupResult:
    """What $lookup says of a code: name, system, version, code, display, definition,
    abstract, designations, properties."""

    name: str
    version: str | None
    code: str
    display: str | None
    definition: str | None
    abstract: bool
    designations: tuple[dict[str, Any], ...]
    typed_properties: tuple[tuple[str, TypedValue], ...]
    system: str | None = None

    @property
    def properties(self) -> tuple[tuple[str, Any], ...]:
        """The properties as ``(code, value)`` pairs (``typed_properties`` keeps each
        value's FHIR type, ``valueCode``, ``valueInteger``…)."""
        return tuple((name, typed.value) for name, typed in self.typed_properties)

    def to_parameters(self) -> dict[str, Any]:
        """Return the $lookup output Parameters."""
        params: list[dict[str, Any]] = [{"name": "name", "valueString": self.name}]
        if self.system:
            params.append({"name": "system", "valueUri": self.system})
        if self.version:
            params.append({"name": "version", "valueString": self.version})
        params.append({"name": "code", "valueCode": self.code})
        if self.display is not None:
            params.append({"name": "display", "valueString": self.display})
        if self.definition is not None:
            params.append({"name": "definition", "valueString": self.definition})
        params.append({"name": "abstract", "valueBoolean": self.abstract})
        for d in self.designations:
            part = []
            if d.get("language"):
                part.append({"name": "language", "valueCode": d["language"]})
            if d.get("use"):
                part.append({"name": "use", "valueCoding": d["use"]})
            part.append({"name": "value", "valueString": d.get("value", "")})
            params.append({"name": "designation", "part": part})
        for code, value in self.typed_properties:
            part = [{"name": "code", "valueCode": code}, _value_part(value)]
            if value.description is not None:
                part.append({"name": "description", "valueString": value.description})
            if value.code_display is not None:
                part.append({"name": "code-display", "valueString": value.code_display})
            params.append({"name": "property", "part": part})
        return {"resourceType": "Parameters", "parameter": params}


class TypedValue(NamedTuple):
    """A property value with its FHIR ``value[x]`` key (``valueCode``, ``valueInteger``…);
    for a code, maybe its ``description`` (the display of the value) and ``code_display``
    (the display of the property's own code, when that is a concept: a SNOMED CT attribute,
    as tx.fhir.org's ``code-display`` part)."""

    key: str
    value: Any
    description: str | None = None
    code_display: str | None = None


def _value_part(value: TypedValue) -> dict[str, Any]:
    return {"name": "value", value.key: value.value}
