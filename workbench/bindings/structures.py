"""StructureDefinitions as the binding check reads them: each snapshot element reduced to
what decides a binding (its id, types, binding, slicing, fixed or pattern value, content
reference), so a whole FHIR package of definitions costs little memory.

>>> sd = structure_of({"resourceType": "StructureDefinition", "url": "http://x/Obs",
...     "type": "Observation", "kind": "resource", "derivation": "constraint",
...     "baseDefinition": "http://hl7.org/fhir/StructureDefinition/Observation",
...     "snapshot": {"element": [{"id": "Observation", "path": "Observation"},
...         {"id": "Observation.status", "path": "Observation.status", "max": "1",
...          "type": [{"code": "code"}], "binding": {"strength": "required",
...          "valueSet": "http://hl7.org/fhir/ValueSet/observation-status|4.0.1"}}]}})
>>> sd.element("Observation.status").binding.valueset
'http://hl7.org/fhir/ValueSet/observation-status|4.0.1'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workbench.errors import InvalidResourceError

MAX_VALUESET = "http://hl7.org/fhir/StructureDefinition/elementdefinition-maxValueSet"
BASE = "http://hl7.org/fhir/StructureDefinition/"


@dataclass(frozen=True)
class Binding:
    """An element's binding: ``strength``, ``valueset`` (canonical, maybe ``|version``) and
    the ``max_valueset`` extension's value set (what an extensible binding is bounded by)."""

    strength: str
    valueset: str | None
    max_valueset: str | None = None


@dataclass(frozen=True)
class TypeRef:
    """One of an element's types: its ``code`` and the ``profiles`` it must conform to
    (an extension's definition, a constrained data type)."""

    code: str
    profiles: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fixed:
    """A ``fixed[x]`` (``exact``) or ``pattern[x]`` value of an element."""

    value: Any
    exact: bool


@dataclass(frozen=True)
class ElementDef:
    """One snapshot element, reduced: ``id`` (``Observation.code.coding:loinc.system``),
    ``path``, ``slice_name``, whether it ``repeats`` (``max`` other than 0 or 1), ``types``,
    ``binding``, ``discriminators`` (``(type, path)`` of its slicing), ``fixed`` and the
    ``content_reference`` (the id, without ``#``, whose definition it reuses)."""

    id: str
    path: str
    slice_name: str | None
    repeats: bool
    types: tuple[TypeRef, ...]
    binding: Binding | None
    discriminators: tuple[tuple[str, str], ...] | None
    fixed: Fixed | None
    content_reference: str | None

    @property
    def name(self) -> str:
        """The element's name: the last part of its path (``value[x]``)."""
        return self.path.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class StructureDef:
    """A StructureDefinition, reduced: ``url``, ``version``, ``name``, the ``type`` it
    defines or constrains, ``kind``, ``derivation``, ``base`` (``baseDefinition``),
    ``abstract``, and its snapshot ``elements`` in order."""

    url: str
    version: str | None
    name: str
    type: str
    kind: str
    derivation: str
    base: str | None
    abstract: bool
    elements: tuple[ElementDef, ...]

    def element(self, element_id: str) -> ElementDef | None:
        """The element of ``element_id``, or None."""
        return self._by_id.get(element_id)

    @property
    def _by_id(self) -> dict[str, ElementDef]:
        found: dict[str, ElementDef] | None = self.__dict__.get("_ids")
        if found is None:
            found = {e.id: e for e in self.elements}
            object.__setattr__(self, "_ids", found)
        return found

    @property
    def role(self) -> str:
        """What it is for the binding check: ``resource``, ``datatype``, ``extension`` or
        ``profile`` (a constraint on a resource or a data type)."""
        if self.type == "Extension" and self.derivation == "constraint":
            return "extension"
        if self.derivation == "constraint":
            return "profile"
        return "resource" if self.kind == "resource" else "datatype"


def structure_of(resource: Mapping[str, Any]) -> StructureDef:
    """The reduced form of a StructureDefinition resource. Raises InvalidResourceError for
    one without a snapshot (the binding check reads snapshots; none is generated) or
    without ``url`` and ``type``."""
    url, kind = resource.get("url"), resource.get("type")
    if not isinstance(url, str) or not isinstance(kind, str):
        raise InvalidResourceError(
            f"StructureDefinition {resource.get('id')!r}: it needs a url and a type"
        )
    snapshot = resource.get("snapshot")
    elements = snapshot.get("element") if isinstance(snapshot, Mapping) else None
    if not isinstance(elements, list) or not elements:
        raise InvalidResourceError(
            f"StructureDefinition {url}: it has no snapshot, so it cannot be used for "
            "binding checks (load it as published, with its snapshot)"
        )
    return StructureDef(
        url=url,
        version=_text(resource.get("version")),
        name=str(resource.get("name") or url.rsplit("/", 1)[-1]),
        type=kind,
        kind=str(resource.get("kind") or ""),
        derivation=str(resource.get("derivation") or "specialization"),
        base=_text(resource.get("baseDefinition")),
        abstract=bool(resource.get("abstract")),
        elements=tuple(_element(e) for e in elements if isinstance(e, Mapping)),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _element(raw: Mapping[str, Any]) -> ElementDef:
    path = str(raw.get("path") or "")
    slicing = raw.get("slicing")
    discriminators = None
    if isinstance(slicing, Mapping):
        discriminators = tuple(
            (str(d.get("type")), str(d.get("path")))
            for d in slicing.get("discriminator") or ()
            if isinstance(d, Mapping)
        )
    reference = _text(raw.get("contentReference"))
    return ElementDef(
        id=str(raw.get("id") or path),
        path=path,
        slice_name=_text(raw.get("sliceName")),
        repeats=str(raw.get("max") or "1") not in ("0", "1"),
        types=tuple(_type(t) for t in raw.get("type") or () if isinstance(t, Mapping)),
        binding=_binding(raw.get("binding")),
        discriminators=discriminators,
        fixed=_fixed(raw),
        content_reference=reference.split("#", 1)[-1] if reference else None,
    )


def _type(raw: Mapping[str, Any]) -> TypeRef:
    code = str(raw.get("code") or "")
    if code.startswith("http://hl7.org/fhirpath/System."):  # a primitive's own value
        code = ""
    profiles = tuple(p for p in raw.get("profile") or () if isinstance(p, str))
    return TypeRef(code, profiles)


def _binding(raw: Any) -> Binding | None:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("strength"), str):
        return None
    maximum = None
    for ext in raw.get("extension") or ():
        if isinstance(ext, Mapping) and ext.get("url") == MAX_VALUESET:
            maximum = _text(ext.get("valueCanonical") or ext.get("valueUri"))
    return Binding(str(raw["strength"]), _text(raw.get("valueSet")), maximum)


def _fixed(raw: Mapping[str, Any]) -> Fixed | None:
    for key, value in raw.items():
        if key.startswith("fixed") and len(key) > 5:
            return Fixed(value, exact=True)
        if key.startswith("pattern") and len(key) > 7:
            return Fixed(value, exact=False)
    return None
