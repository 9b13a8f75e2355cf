"""What every code system provider hands the engine: a concept, a compiled filter over
concepts, an expansion entry.

A leaf module (it imports nothing of the engine), so the provider base class, the filters,
compose and the FHIR CodeSystem index can all build on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

CONCEPT_PROPERTIES = "http://hl7.org/fhir/concept-properties#"
STANDARDS_STATUS = "http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status"


@dataclass(slots=True, eq=False)
class Concept:
    """One concept of a code system, with its place in the hierarchy."""

    code: str
    display: str | None
    definition: str | None
    order: int
    designations: list[dict[str, Any]] = field(default_factory=list)
    properties: dict[str, list[Any]] = field(default_factory=dict)
    value_keys: dict[str, str] = field(default_factory=dict)
    parents: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    abstract: bool = False
    inactive: bool = False
    status: str | None = None
    note: str = ""  # what replaces an inactive concept (a release's REPLACED BY …), if known

    def property_strings(self, name: str) -> list[str]:
        """Return the values of a property as strings (codes of Codings, 'true'/'false')."""
        return [as_string(v) for v in self.properties.get(name, ())]

    def displays(self) -> list[str]:
        """Return the display and every designation value: all texts valid as a display."""
        texts = [self.display] if self.display else []
        texts += [d["value"] for d in self.designations if d.get("value")]
        return texts

    def retired_displays(self) -> list[str]:
        """Texts that were once displays of the concept (a release's inactive descriptions):
        still accepted, with a warning. None here."""
        return []


def property_value(prop: Mapping[str, Any]) -> Any:
    """Return the value of a ``concept.property`` element (its single ``value[x]``)."""
    return typed_property_value(prop)[1]


def typed_property_value(prop: Mapping[str, Any]) -> tuple[str, Any]:
    """Return ``(value[x] key, value)`` of a ``concept.property`` element."""
    for key, value in prop.items():
        if key.startswith("value"):
            return key, value
    return "valueString", None


def as_string(value: Any) -> str:
    """A property value as text: a Coding's code, ``true``/``false``, else ``str``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return str(value.get("code", ""))
    return str(value)


Predicate = Callable[[Concept], bool]


@dataclass(frozen=True, slots=True)
class CodeFilter:
    """One compiled filter: a predicate over concepts and, maybe, the codes that can match."""

    text: str
    matches: Predicate
    candidates: frozenset[str] | None = None


class Entry(NamedTuple):
    """One code of an expansion."""

    system: str
    version: str | None
    code: str
    display: str | None
    abstract: bool
    inactive: bool
    designations: tuple[dict[str, Any], ...] = ()
    definition: str | None = None
