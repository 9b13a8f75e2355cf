"""R5-only elements, carried in R4 as cross-version extensions.

An element R5 added (``ValueSet.expansion.property``, ``CodeSystem.versionAlgorithm[x]``,
``ConceptMap.group.unmapped.valueSet``…) travels in R4 as the extension
``http://hl7.org/fhir/5.0/StructureDefinition/extension-{Type}.{path}`` on the element's
parent: a value as its ``value[x]``, a backbone element as one sub-extension per child
(named for the child, ``value`` for a ``value[x]`` child), as the tx ecosystem's R4 page shows
for expansion properties. ``lower`` moves the elements of ``TABLE`` into these extensions,
``lift`` moves them back; the engine reads and writes the R4 form (``resources.
version_algorithm``, ``expand.expansion``). An element not in ``TABLE`` is left where it is
(R4 JSON here is kept losslessly, unknown elements included).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

BASE = "http://hl7.org/fhir/5.0/StructureDefinition/extension-"
CHOICE = "[x]"


@dataclass(frozen=True)
class Leaf:
    """A value: ``kind`` is its FHIR type as ``value[x]`` spells it (``String``,
    ``Coding``), or ``[x]`` for a choice element (the type is the key's suffix)."""

    kind: str
    many: bool = False


@dataclass(frozen=True)
class Backbone:
    """A backbone element: its children by name (``value`` for a ``value[x]``)."""

    children: dict[str, Leaf | Backbone] = field(default_factory=dict)
    many: bool = False


Spec = Leaf | Backbone

_METADATA: dict[str, Spec] = {
    "versionAlgorithm": Leaf(CHOICE),
    "copyrightLabel": Leaf("String"),
    "approvalDate": Leaf("Date"),
    "lastReviewDate": Leaf("Date"),
    "effectivePeriod": Leaf("Period"),
    "topic": Leaf("CodeableConcept", many=True),
    "author": Leaf("ContactDetail", many=True),
    "editor": Leaf("ContactDetail", many=True),
    "reviewer": Leaf("ContactDetail", many=True),
    "endorser": Leaf("ContactDetail", many=True),
    "relatedArtifact": Leaf("RelatedArtifact", many=True),
}
_ADDITIONAL_USE: dict[str, Spec] = {"additionalUse": Leaf("Coding", many=True)}
_SUB_PROPERTY = Backbone({"code": Leaf("Code"), "value": Leaf(CHOICE)}, many=True)

#: Element path (recursive elements at their first level) -> the R5-only children there.
TABLE: dict[str, dict[str, Spec]] = {
    "CodeSystem": _METADATA,
    "ValueSet": {
        **_METADATA,
        "scope": Backbone(
            {"inclusionCriteria": Leaf("String"), "exclusionCriteria": Leaf("String")}
        ),
    },
    "ConceptMap": {
        **_METADATA,
        "property": Backbone(
            {
                "code": Leaf("Code"),
                "uri": Leaf("Uri"),
                "description": Leaf("String"),
                "type": Leaf("Code"),
                "system": Leaf("Canonical"),
            },
            many=True,
        ),
        "additionalAttribute": Backbone(
            {
                "code": Leaf("Code"),
                "uri": Leaf("Uri"),
                "description": Leaf("String"),
                "type": Leaf("Code"),
            },
            many=True,
        ),
    },
    "CodeSystem.concept.designation": _ADDITIONAL_USE,
    "ValueSet.compose.include": {"copyright": Leaf("String")},
    "ValueSet.compose.exclude": {"copyright": Leaf("String")},
    "ValueSet.compose.include.concept.designation": _ADDITIONAL_USE,
    "ValueSet.compose.exclude.concept.designation": _ADDITIONAL_USE,
    "ValueSet.expansion": {
        "next": Leaf("Uri"),
        "property": Backbone({"code": Leaf("Code"), "uri": Leaf("Uri")}, many=True),
    },
    "ValueSet.expansion.contains": {
        "property": Backbone(
            {"code": Leaf("Code"), "value": Leaf(CHOICE), "subProperty": _SUB_PROPERTY},
            many=True,
        ),
    },
    "ValueSet.expansion.contains.designation": _ADDITIONAL_USE,
    "ConceptMap.group.unmapped": {
        "valueSet": Leaf("Canonical"),
        "relationship": Leaf("Code"),
    },
    "ConceptMap.group.element": {"valueSet": Leaf("Canonical")},
    "ConceptMap.group.element.target": {
        "valueSet": Leaf("Canonical"),
        "property": Backbone({"code": Leaf("Code"), "value": Leaf(CHOICE)}, many=True),
    },
}
#: Elements that nest in themselves: their children keep the first level's path.
RECURSIVE = frozenset({"concept", "contains"})


def nodes(resource: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object of a resource with its element path (``ValueSet.expansion.contains``;
    nested ``contains`` and ``concept`` at their first level's path), the resource first.
    Extensions and contained resources are not entered."""
    todo: list[tuple[str, dict[str, Any]]] = [(str(resource.get("resourceType")), resource)]
    while todo:
        path, node = todo.pop()
        yield path, node
        for key, value in node.items():
            if key in ("extension", "modifierExtension", "contained") or key.startswith("_"):
                continue
            child = path if key in RECURSIVE and path.endswith("." + key) else f"{path}.{key}"
            items = value if isinstance(value, list) else [value]
            todo += [(child, item) for item in items if isinstance(item, dict)]


def _choice_key(node: dict[str, Any], name: str) -> str | None:
    for key in node:
        rest = key[len(name) :]
        if key.startswith(name) and rest[:1].isupper():
            return key
    return None


def _to_extension(url: str, spec: Spec, value: Any, suffix: str) -> dict[str, Any]:
    """The extension ``url`` holding ``value`` (``suffix``: a choice element's type)."""
    if isinstance(spec, Leaf):
        return {"url": url, f"value{suffix if spec.kind == CHOICE else spec.kind}": value}
    parts: list[dict[str, Any]] = []
    for name, child in spec.children.items():
        key = _choice_key(value, name) if _is_choice(child) else name
        if key is None or key not in value:
            continue
        items = value[key] if child.many and isinstance(value[key], list) else [value[key]]
        parts += [_to_extension(name, child, item, key[len(name) :]) for item in items]
    return {"url": url, "extension": parts}


def _is_choice(spec: Spec) -> bool:
    return isinstance(spec, Leaf) and spec.kind == CHOICE


def _from_extension(spec: Spec, ext: dict[str, Any], name: str) -> tuple[str, Any] | None:
    """(the element's key, its value) from an extension, None when it holds no value."""
    if isinstance(spec, Leaf):
        key = next((k for k in ext if k.startswith("value")), None)
        if key is None:
            return None
        return (name + key[len("value") :] if spec.kind == CHOICE else name), ext[key]
    out: dict[str, Any] = {}
    for part in ext.get("extension") or ():
        child = spec.children.get(part.get("url"))
        if child is None:
            continue
        found = _from_extension(child, part, part["url"])
        if found is None:
            continue
        if child.many:
            out.setdefault(found[0], []).append(found[1])
        else:
            out[found[0]] = found[1]
    return name, out


def lower(resource: dict[str, Any]) -> None:
    """Move the R5-only elements of ``resource`` (in place) into their R4 extensions."""
    for path, node in list(nodes(resource)):
        specs = TABLE.get(path)
        if not specs:
            continue
        added: list[dict[str, Any]] = []
        for name, spec in specs.items():
            key = _choice_key(node, name) if _is_choice(spec) else name
            if key is None or key not in node:
                continue
            items = node[key] if spec.many and isinstance(node[key], list) else [node[key]]
            if isinstance(spec, Backbone) and not all(isinstance(i, dict) for i in items):
                continue  # not the element R5 defines: left as it is
            del node[key]
            url = f"{BASE}{path}.{name}"
            for item in items:
                added.append(_to_extension(url, spec, item, key[len(name) :]))
        if added:
            node["extension"] = [*(node.get("extension") or []), *added]


def lift(resource: dict[str, Any]) -> None:
    """Move the R4 cross-version extensions of ``resource`` (in place) back to the R5
    elements they stand for; an extension whose element is already there stays."""
    for path, node in list(nodes(resource)):
        specs = TABLE.get(path)
        exts = node.get("extension")
        if not specs or not isinstance(exts, list):
            continue
        prefix = f"{BASE}{path}."
        kept: list[Any] = []
        for ext in exts:
            url = ext.get("url") if isinstance(ext, dict) else None
            name = url[len(prefix) :] if isinstance(url, str) and url.startswith(prefix) else ""
            spec = specs.get(name)
            found = _from_extension(spec, ext, name) if spec is not None else None
            if found is None or (not spec.many and found[0] in node):  # type: ignore[union-attr]
                kept.append(ext)
                continue
            key, value = found
            if spec.many:  # type: ignore[union-attr]
                node.setdefault(key, []).append(value)
            else:
                node[key] = value
        if len(kept) != len(exts):
            if kept:
                node["extension"] = kept
            else:
                del node["extension"]
