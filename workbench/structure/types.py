"""The element model of every FHIR R4 type: what a FHIRPath step may name, and its type.

``r4-types.json`` is derived from the R4 StructureDefinitions by ``workbench.structure.build``
(a test checks it is exactly what the package derives). Complex types are named as FHIR names
them (``Coding``, ``Observation``); backbone elements by their path (``Observation.component``),
which is also what ``contentReference`` points at (``Questionnaire.item.item`` has the type
``Questionnaire.item``).

>>> model().child("Observation", "component").type
'Observation.component'
>>> [c.json for c in model().child("Observation", "value").choices][:2]
['valueQuantity', 'valueCodeableConcept']
>>> model().child("Patient", "nickname") is None
True
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources as package_data
from typing import Any

import orjson

#: The primitive types whose JSON value is a number or a boolean; every other one is a string.
NUMERIC = {"integer": "integer", "positiveInt": "integer", "unsignedInt": "integer"}
NUMERIC_DECIMAL = {"decimal"}
BOOLEAN = {"boolean"}


@dataclass(frozen=True)
class Child:
    """One element a type has: ``name`` as FHIRPath names it, ``json`` as JSON names it
    (``valueQuantity`` for one type of the choice ``value``), its ``type``, and whether it
    ``repeats``. A choice element has ``choices`` (one Child per type) and no json/type."""

    name: str
    json: str
    type: str
    repeats: bool
    choices: tuple[Child, ...] = ()

    @property
    def is_choice(self) -> bool:
        """True for a choice element (``value[x]``)."""
        return bool(self.choices)

    def choice(self, type_name: str) -> Child | None:
        """The option of a choice element for ``type_name`` (``Quantity``), or None."""
        return next((c for c in self.choices if c.type == type_name), None)


class TypeModel:
    """The elements of each R4 type, read from the shipped ``r4-types.json``."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self._types: dict[str, Any] = raw["types"]
        #: The names of the concrete resource types.
        self.resources: frozenset[str] = frozenset(raw["resources"])
        self.primitives: frozenset[str] = frozenset(raw["primitives"])
        self._children: dict[tuple[str, str], Child | None] = {}

    def has_type(self, name: str) -> bool:
        """True for a complex type, a resource type or a backbone element path."""
        return name in self._types

    def is_primitive(self, name: str) -> bool:
        """True for a FHIR primitive type (``string``, ``code``, ``dateTime`` ...)."""
        return name in self.primitives

    def child(self, owner: str, name: str) -> Child | None:
        """The element ``name`` of the type ``owner``; a choice element by its FHIRPath name
        (``value``), one of its types by its JSON name (``valueQuantity``); None when the type
        has no such element."""
        key = (owner, name)
        if key not in self._children:
            self._children[key] = self._find(owner, name)
        return self._children[key]

    def _find(self, owner: str, name: str) -> Child | None:
        table = self._types.get(owner)
        if table is None:
            return None
        choice = table.get("choices", {}).get(name)
        if choice is not None:
            options = tuple(
                Child(name, json, *_spec(table["elements"][json])) for json in choice["names"]
            )
            return Child(name, "", "", options[0].repeats, options)
        spec = table["elements"].get(name)
        return None if spec is None else Child(name, name, *_spec(spec))

    def names(self, owner: str) -> list[str]:
        """The FHIRPath names of the elements of ``owner`` (choice elements once, by their
        base name), sorted: what an error message offers instead of an unknown name."""
        table = self._types.get(owner, {})
        choices = table.get("choices", {})
        expanded = {json for c in choices.values() for json in c["names"]}
        return sorted({*choices, *(n for n in table.get("elements", {}) if n not in expanded)})


def _spec(spec: list[Any]) -> tuple[str, bool]:
    return str(spec[0]), bool(spec[1])


@lru_cache(maxsize=1)
def model() -> TypeModel:
    """The R4 element model (read once)."""
    data = package_data.files("workbench.structure").joinpath("r4-types.json").read_bytes()
    return TypeModel(orjson.loads(data))
