"""OperationDefinitions as typed views: what an operation takes and gives, and where it lives.

The official R4 definitions ship as package data in ``definitions/``; everything the
server does with an operation (its routes, how inputs are parsed, how outputs are built) is
read from them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from importlib import resources as package_data
from typing import Any

import orjson


@dataclass(frozen=True)
class ParamDef:
    """One ``OperationDefinition.parameter`` (or one of its parts)."""

    name: str
    use: str
    min: int
    max: int | None
    type: str | None
    parts: tuple[ParamDef, ...] = ()

    @property
    def repeats(self) -> bool:
        """True when more than one value is allowed."""
        return self.max is None or self.max > 1

    @property
    def is_simple(self) -> bool:
        """True for a primitive type (its name starts with a lower-case letter)."""
        return self.type is not None and self.type[:1].islower()

    @property
    def is_resource(self) -> bool:
        """True when the value is a whole resource (``resource`` in Parameters)."""
        return self.type is not None and self.type in RESOURCE_TYPES

    @classmethod
    def from_json(cls, raw: dict[str, Any], use: str | None = None) -> ParamDef:
        """Build from the JSON of a parameter element."""
        maximum = str(raw.get("max", "1"))
        return cls(
            name=str(raw["name"]),
            use=str(raw.get("use", use or "in")),
            min=int(raw.get("min", 0)),
            max=None if maximum == "*" else int(maximum),
            type=raw.get("type"),
            parts=tuple(cls.from_json(p, raw.get("use", use)) for p in raw.get("part", ())),
        )


RESOURCE_TYPES = frozenset(
    {"Resource", "ValueSet", "CodeSystem", "Parameters", "Bundle", "ConceptMap", "OperationOutcome"}
)


@dataclass(frozen=True)
class OperationDef:
    """The parts of an OperationDefinition the framework needs, plus the resource itself."""

    resource: dict[str, Any]
    id: str
    url: str
    code: str
    resource_types: tuple[str, ...]
    system: bool
    type: bool
    instance: bool
    affects_state: bool
    inputs: dict[str, ParamDef]
    outputs: dict[str, ParamDef]
    #: Inputs whose Parameters entries the codec hands over as they were sent (one
    #: ``{"name": …, …}`` dict each), untyped: the operation answers each entry in its
    #: place, a bad one with an error of its own (``$batch-validate-code``'s validations).
    as_given: frozenset[str] = frozenset()

    @classmethod
    def from_json(cls, raw: dict[str, Any], as_given: frozenset[str] = frozenset()) -> OperationDef:
        """Read an OperationDefinition resource (``as_given``: see the field)."""
        params = [ParamDef.from_json(p) for p in raw.get("parameter", ())]
        return cls(
            resource=raw,
            id=str(raw["id"]),
            url=str(raw["url"]),
            code=str(raw["code"]),
            resource_types=tuple(raw.get("resource", ())),
            system=bool(raw.get("system")),
            type=bool(raw.get("type")),
            instance=bool(raw.get("instance")),
            affects_state=bool(raw.get("affectsState")),
            inputs={p.name: p for p in params if p.use == "in"},
            outputs={p.name: p for p in params if p.use == "out"},
            as_given=as_given,
        )

    @property
    def returns_resource(self) -> bool:
        """Rule 6: a single required ``out`` named ``return`` of a resource type."""
        if list(self.outputs) != ["return"]:
            return False
        only = self.outputs["return"]
        return only.min == 1 and only.max == 1 and only.is_resource

    @cached_property
    def resource_input(self) -> ParamDef | None:
        """The single resource-typed input that does not repeat, when there is exactly one
        (the resource a POST may send as its whole body; ``tx-resource`` repeats)."""
        found = [p for p in self.inputs.values() if p.is_resource and not p.repeats]
        return found[0] if len(found) == 1 else None

    def available_at(self, level: str) -> bool:
        """True when the operation exists at ``system``, ``type`` or ``instance`` level."""
        return bool(getattr(self, level))


def load_definition(file_name: str, *, as_given: Iterable[str] = ()) -> OperationDef:
    """Load one of the shipped OperationDefinitions by file name (``as_given``: the inputs
    whose entries the codec hands over as sent, see ``OperationDef.as_given``)."""
    data = package_data.files("workbench.operations").joinpath("definitions", file_name)
    return OperationDef.from_json(orjson.loads(data.read_bytes()), frozenset(as_given))
