"""Derive the compact structure schemas from the FHIR R4 StructureDefinitions: ``r4.json`` (the
terminology resources, for the structural check) and ``r4-types.json`` (every resource type,
with the list of them, for FHIRPath over FHIR data: ``workbench.structure.types``).

The schema keeps what a structural check needs and nothing else: for every complex type and
backbone element reachable from the terminology resources, each element's type(s), whether it
repeats and whether it is required; for every primitive type its JSON kind and its regular
expression (or its integer range). ``python -m workbench.structure.build PACKAGE_FOLDER`` writes
it again from the R4 core package (``hl7.fhir.r4.examples#4.0.1`` in the FHIR package cache has
the StructureDefinitions); a test checks that the shipped file is exactly what this derives.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

ROOTS = ("ValueSet", "CodeSystem", "ConceptMap", "Parameters")
FHIR_TYPE = "http://hl7.org/fhir/StructureDefinition/structuredefinition-fhir-type"
REGEX = "http://hl7.org/fhir/StructureDefinition/regex"
SYSTEM = "http://hl7.org/fhirpath/System."
INT32 = (-(2**31), 2**31 - 1)
_JSON_KINDS = {"boolean": "boolean", "integer": "integer", "decimal": "number"}
_INTEGER_MIN = {"integer": INT32[0], "positiveInt": 1, "unsignedInt": 0}


def _type_code(raw: dict[str, Any]) -> str:
    code = str(raw["code"])
    if code.startswith(SYSTEM):
        for ext in raw.get("extension", ()):
            if ext.get("url") == FHIR_TYPE:
                return str(ext["valueUrl"])
        return "string"
    return code


def _regex(raw: dict[str, Any]) -> str | None:
    for ext in raw.get("extension", ()):
        if ext.get("url") == REGEX:
            return str(ext["valueString"])
    return None


def read_definitions(folder: Path) -> dict[str, dict[str, Any]]:
    """The base (specialization) StructureDefinitions of a package folder, by type name."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("StructureDefinition-*.json")):
        sd = orjson.loads(path.read_bytes())
        if sd.get("kind") not in ("primitive-type", "complex-type", "resource"):
            continue
        if sd.get("derivation", "specialization") != "specialization":
            continue
        found[str(sd["type"])] = sd
    return found


def _primitive(sd: dict[str, Any]) -> dict[str, Any]:
    name = str(sd["type"])
    value = next(e for e in sd["snapshot"]["element"] if e["path"] == f"{name}.value")
    spec: dict[str, Any] = {"json": _JSON_KINDS.get(name, "string")}
    if name in _INTEGER_MIN:
        spec.update(json="integer", min=_INTEGER_MIN[name], max=INT32[1])
    elif spec["json"] == "string":
        regex = _regex(value["type"][0])
        if regex:
            spec["regex"] = regex
    return spec


def _elements(sd: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The element table of one type: ``{type or backbone path: {element: spec}}``."""
    root = str(sd["type"])
    tables: dict[str, dict[str, Any]] = {}
    for element in sd["snapshot"]["element"][1:]:
        path = str(element["path"])
        owner, _, name = path.rpartition(".")
        owner = root if owner == root else owner
        repeats = element.get("max", "1") != "1"
        required = int(element.get("min", 0)) > 0
        if "contentReference" in element:
            types = [str(element["contentReference"]).lstrip("#")]
        else:
            types = [_type_code(t) for t in element.get("type", ())]
            types = [
                path
                if t in ("BackboneElement", "Element")
                and path.count(".") > 0
                and _has_children(sd, path)
                else t
                for t in types
            ]
        table = tables.setdefault(owner, {"elements": {}})
        if name.endswith("[x]"):
            base = name[:-3]
            table.setdefault("choices", {})[base] = {
                "required": required,
                "names": [base + t[:1].upper() + t[1:] for t in types],
            }
            for t in types:
                table["elements"][base + t[:1].upper() + t[1:]] = [t, repeats, False]
        else:
            table["elements"][name] = [types[0], repeats, required]
    return tables


def _has_children(sd: dict[str, Any], path: str) -> bool:
    return any(str(e["path"]).startswith(path + ".") for e in sd["snapshot"]["element"])


def resource_types(definitions: dict[str, dict[str, Any]]) -> tuple[str, ...]:
    """The concrete (not abstract) resource types among ``definitions``, sorted."""
    return tuple(
        sorted(
            name
            for name, sd in definitions.items()
            if sd["kind"] == "resource" and not sd.get("abstract")
        )
    )


def build_schema(folder: Path, roots: tuple[str, ...] | None = ROOTS) -> dict[str, Any]:
    """Build the schema from the StructureDefinitions in ``folder``: the types reachable from
    ``roots`` (the terminology resources by default; None: every resource type)."""
    definitions = read_definitions(folder)
    every = roots is None
    roots = resource_types(definitions) if roots is None else roots
    primitives = {
        name: _primitive(sd)
        for name, sd in sorted(definitions.items())
        if sd["kind"] == "primitive-type"
    }
    types: dict[str, Any] = {}
    todo = [*roots, "Element"]
    while todo:
        name = todo.pop()
        if name in types or name in primitives or name == "Resource":
            continue
        sd = definitions[name]
        for owner, table in _elements(sd).items():
            types[owner] = table
            todo += [spec[0] for spec in table["elements"].values()]
    built = {
        "fhirVersion": "4.0.1",
        "primitives": primitives,
        "types": {k: types[k] for k in sorted(types)},
    }
    return {**built, "resources": list(roots)} if every else built


def dumps(schema: dict[str, Any]) -> bytes:
    """The schema as it is shipped (sorted, one type per line for readable diffs)."""
    return orjson.dumps(schema, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"


def dumps_compact(schema: dict[str, Any]) -> bytes:
    """The schema of every resource type as it is shipped (``r4-types.json``: sorted, compact;
    it is large)."""
    return orjson.dumps(schema, option=orjson.OPT_SORT_KEYS) + b"\n"


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    here = Path(__file__)
    here.with_name("r4.json").write_bytes(dumps(build_schema(Path(sys.argv[1]))))
    here.with_name("r4-types.json").write_bytes(
        dumps_compact(build_schema(Path(sys.argv[1]), roots=None))
    )
    print(f"wrote r4.json and r4-types.json beside {here}")
