"""The JSON Schemas of the OpenAPI document, derived from the structure schema the server
checks bodies with (``workbench.structure``), never written by hand per type.

A FHIR primitive is its JSON kind with the R4 regular expression (anchored) and, for a
string, at least one character unless its regular expression matches the empty string (as
the structure check does: a ``uri`` may be empty); an integer has its range. A data type
or resource is an object of its elements (each of its type,
an array where it repeats), its required elements required (but those the server
tolerates, ``structure.TOLERATED``), unknown elements and extensions allowed (FHIR JSON
stays lossless). An operation's ``Parameters`` body lists the operation's inputs, each
with the ``value[x]`` of its declared type (or ``resource``, or ``part``).

A choice element (``value[x]``) is stated without a union the tools walk: each of its
names, when present, has its type and brings the rule of the choice, that exactly one of its
names is present (``dependentSchemas``; the rule is the ``<type>.<choice>-one`` schema, a
``oneOf`` of one ``required`` per name), and a required choice states that rule itself. The
same values pass and fail as with a ``oneOf`` of one typed branch per name, but the tools that
walk a document (schemathesis' coverage phase, client generators) are not led into every data
type under every extension: an Extension's ``value[x]`` reaches 50 types, each with
extensions, and the walks through that graph grew past 24 GB.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from workbench.operations import Operation
from workbench.operations.definitions import ParamDef
from workbench.registry import TERMINOLOGY_TYPES
from workbench.structure import TOLERATED, schema
from workbench.terminology.conceptmap import UNMAPPED_MODES

GENERIC = ("Resource",)
# The resources among the structure schema's types (an input of one travels in ``resource``).
RESOURCES = frozenset({*TERMINOLOGY_TYPES, "Parameters"})
SimpleSchema = Callable[[ParamDef], dict[str, Any]]
PRIMITIVE_PREFIX = "fhir-"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


# FHIR's regular expressions are Java's, where \s and \S are ASCII classes (the structure
# check compiles them with re.ASCII); JSON Schema's are ECMA-262's, where they are Unicode.
_SPACE = " \\t\\n\\r\\f\\v"
TRIVIAL = frozenset({r"[ \r\n\t\S]+"})  # (what any non-empty string matches: minLength 1)


def ascii_classes(regex: str) -> str:
    """``regex`` with ``\\s`` and ``\\S`` spelled as the ASCII classes they are in Java."""
    regex = regex.replace("[^\\s]", f"[^{_SPACE}]")
    return regex.replace("\\s", f"[{_SPACE}]").replace("\\S", f"[^{_SPACE}]")


def primitive(name: str) -> dict[str, Any]:
    """The JSON Schema of the FHIR primitive ``name`` as FHIR JSON holds it."""
    spec = schema()["primitives"][name]
    kind = spec["json"]
    out: dict[str, Any] = {"type": kind}
    if kind == "string":
        regex = spec.get("regex")
        if regex is None or regex in TRIVIAL or re.fullmatch(regex, "", re.ASCII) is None:
            out["minLength"] = 1  # (the structure check refuses an empty string)
        if regex is not None and regex not in TRIVIAL:
            out["pattern"] = f"^(?:{ascii_classes(regex)})$"
    if "min" in spec:
        out["minimum"] = spec["min"]
    if "max" in spec:
        out["maximum"] = spec["max"]
    return out


def element_schema(fhir_type: str) -> dict[str, Any]:
    """A reference to the schema of an element's type (a primitive, a data type, a
    backbone element, or any resource)."""
    if fhir_type in schema()["primitives"]:
        return _ref(PRIMITIVE_PREFIX + fhir_type)
    if fhir_type in schema()["types"]:
        return _ref(fhir_type)
    return _ref("Resource")


_NONE: dict[str, Any] = {"maxItems": 0}  # (an element that is absent or an empty list)
_SYSTEM = {"required": ["system"], "properties": {"system": {"minLength": 1}}}
# The invariants between elements that JSON Schema states, by type, as the loader checks
# them (``loading.check_valueset``); vsd-1 to vsd-3 hold for include and exclude alike.
INVARIANTS: dict[str, list[dict[str, Any]]] = {
    "ValueSet.compose.include": [
        {  # vsd-1: a system or a value set
            "anyOf": [
                _SYSTEM,
                {"required": ["valueSet"], "properties": {"valueSet": {"minItems": 1}}},
            ]
        },
        {"anyOf": [_SYSTEM, {"properties": {"concept": _NONE, "filter": _NONE}}]},  # vsd-2
        {"anyOf": [{"properties": {"concept": _NONE}}, {"properties": {"filter": _NONE}}]},  # vsd-3
    ],
    # the required binding of unmapped.mode, cmd-2 (fixed: a code) and cmd-3 (other-map: a
    # url), as ``conceptmap.check_conceptmap`` checks them
    "ConceptMap.group.unmapped": [
        {
            "anyOf": [
                {"properties": {"mode": {"const": mode}}, "required": ["mode", *needs]}
                for mode, needs in zip(UNMAPPED_MODES, ((), ("code",), ("url",)), strict=True)
            ]
        }
    ],
}


def type_schema(name: str, *, resource: bool = False) -> dict[str, Any]:
    """The schema of the data type, backbone element or resource ``name``."""
    spec = schema()["types"][name]
    tolerated = TOLERATED.get(name, frozenset())
    properties: dict[str, Any] = {}
    required = []
    for element, (fhir_type, repeats, needed) in spec["elements"].items():
        item = element_schema(fhir_type)
        if repeats:
            item = {"type": "array", "items": item, **({"minItems": 1} if needed else {})}
        properties[element] = item
        if needed and element not in tolerated:
            required.append(element)
    if resource:
        properties = {"resourceType": {"const": name}, **properties}
        required.insert(0, "resourceType")
    out: dict[str, Any] = {
        "type": "object",
        "description": f"FHIR R4 {name}, as FHIR JSON",
        "properties": properties,
        "additionalProperties": True,
    }
    if required:
        out["required"] = required
    rules: list[dict[str, Any]] = []
    for base, choice in spec.get("choices", {}).items():
        one = _ref(choice_rule(name, base))
        dependent = {n: {"properties": {n: properties.pop(n)}, **one} for n in choice["names"]}
        out.setdefault("dependentSchemas", {}).update(dependent)
        if choice["required"]:
            rules.append(one)
    rules += INVARIANTS.get(name, ())
    if rules:
        out["allOf"] = rules
    return out


def choice_rule(tname: str, base: str) -> str:
    """The name of the schema of the choice ``base[x]`` of ``tname``: exactly one name."""
    return f"{tname}.{base}-one"


def structure_schemas(resources: tuple[str, ...]) -> dict[str, Any]:
    """Every primitive, data type and backbone element of the structure schema, and the
    ``resources`` among its types as resources."""
    out: dict[str, Any] = {
        PRIMITIVE_PREFIX + name: primitive(name) for name in schema()["primitives"]
    }
    for name, spec in schema()["types"].items():
        out[name] = type_schema(name, resource=name in resources)
        for base, choice in spec.get("choices", {}).items():
            names = choice["names"]
            out[choice_rule(name, base)] = {"oneOf": [{"required": [n]} for n in names]}
    return out


def _value_key(fhir_type: str) -> str:
    return "value" + fhir_type[:1].upper() + fhir_type[1:]


def _input_item(name: str, param: ParamDef, simple: SimpleSchema) -> dict[str, Any]:
    """One ``parameter`` entry for the input ``name``: its value of the declared type
    (``simple(param)`` for a primitive: its form and what the operation refuses)."""
    fhir_type = param.type or "string"
    item: dict[str, Any] = {"type": "object", "properties": {"name": {"const": name}}}
    if param.parts:
        item["properties"]["part"] = {"type": "array", "items": _ref("Parameters.parameter")}
        item["required"] = ["name", "part"]
    elif fhir_type not in RESOURCES and (
        fhir_type in schema()["primitives"] or fhir_type in schema()["types"]
    ):
        key = _value_key(fhir_type)
        item["properties"][key] = simple(param) if param.is_simple else element_schema(fhir_type)
        item["required"] = ["name", key]
    else:
        held = RESOURCE_INPUTS.get(name)
        item["properties"]["resource"] = held if held else element_schema(fhir_type)
        item["required"] = ["name", "resource"]
    return item


def _with_url(rtype: str) -> dict[str, Any]:
    return {"allOf": [_ref(rtype), {"required": ["url"], "properties": {"url": {"minLength": 1}}}]}


# Inputs of the type Resource that take only some resources: a tx-resource is a CodeSystem
# or a ValueSet with a url, so that it can be referred to (``engine.Terminology.with_resources``).
RESOURCE_INPUTS: dict[str, dict[str, Any]] = {
    "tx-resource": {"anyOf": [_with_url("CodeSystem"), _with_url("ValueSet")]},
}


def parameters_schema(op: Operation, simple: SimpleSchema) -> dict[str, Any]:
    """The ``Parameters`` body of ``op``: each supported input with its ``value[x]`` type
    (``simple(param)``: the schema of a primitive input's value)."""
    inputs = {n: p for n, p in op.definition.inputs.items() if n in op.supported}
    body = type_schema("Parameters", resource=True)
    body["description"] = f"The inputs of ${op.definition.code}, as a Parameters resource"
    items = [_input_item(name, param, simple) for name, param in inputs.items()]
    # (an operation without inputs, $versions, ignores the entries it is sent: any entry)
    entry = {"anyOf": items} if items else _ref("Parameters.parameter")
    entries: dict[str, Any] = {"type": "array", "items": entry}
    bounds = [_at_most(name, param.max) for name, param in inputs.items() if param.max]
    if bounds:  # (an input's cardinality: at most ``max`` entries of that name)
        entries["allOf"] = bounds
    body["properties"]["parameter"] = entries
    return body


def _at_most(name: str, most: int) -> dict[str, Any]:
    named = {"type": "object", "properties": {"name": {"const": name}}, "required": ["name"]}
    return {"contains": named, "minContains": 0, "maxContains": most}
