"""The OpenAPI 3.1 description of the server, generated, never written per operation.

Operations come from their OperationDefinitions: a path per resource type and per level the
definition's ``system``/``type``/``instance`` flags allow; GET (unless ``affectsState``) with
the simple-typed inputs as query parameters (type, cardinality and documentation from the
definition), POST with a ``Parameters`` body and an example. The REST interactions are the
ones the CapabilityStatement lists (``capability.INTERACTIONS``), each on the path the server
routes it. Every operation carries ``x-fhir-interaction`` or ``x-fhir-operation`` so that the
two descriptions can be compared. Paths are relative to the FHIR base; ``with_server`` adds
the base as the client sees it (mount point or proxy root path included).
"""

from __future__ import annotations

import re
from typing import Any

from workbench.operations import Operation
from workbench.operations.codec import AS_SENT
from workbench.operations.definitions import OperationDef, ParamDef
from workbench.registry import TERMINOLOGY_TYPES
from workbench.server.capability import INTERACTIONS, OPERATION_DEFINITION_SEARCH
from workbench.server.history_pages import INSTANT_FORM
from workbench.server.openapi_links import add_links
from workbench.server.openapi_rules import SAME_ID, between_inputs, input_rule, update_body
from workbench.server.openapi_schemas import parameters_schema, primitive, structure_schemas
from workbench.server.search import MAX_COUNT, MODIFIERS, SEARCH_PARAMETERS, SUMMARY_MODES
from workbench.terminology.versions import SYSTEM_VERSION_FORM, SYSTEM_VERSION_INPUTS

FHIR_JSON = "application/fhir+json"
SECURITY_SCHEME = "bearerAuth"
SYSTEM_TAG = "System"
GENDER_VS = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
# Example inputs by resource type and parameter name, valid against the shipped content
# (valuesets/); an operation's example takes those of its inputs that are listed here.
SAMPLES: dict[str, dict[str, Any]] = {
    "ValueSet": {
        "url": GENDER_VS,
        "system": GENDER_CS,
        "code": "female",
        "count": 10,
        "thisUrl": GENDER_VS,
        "otherUrl": GENDER_VS,
    },
    "CodeSystem": {
        "url": GENDER_CS,
        "system": GENDER_CS,
        "code": "female",
        "codeA": "female",
        "codeB": "female",
    },
    "ConceptMap": {"system": GENDER_CS, "code": "female", "name": "example-closure"},
    "": {"mode": "start", "name": "example-closure"},  # system level: $cache-control, $closure
}
# The resource-typed samples: one entry of $batch-validate-code.
SAMPLE_RESOURCES: dict[str, dict[str, Any]] = {
    "validation": {
        "resourceType": "Parameters",
        "parameter": [{"name": "coding", "valueCoding": {"system": GENDER_CS, "code": "female"}}],
    }
}
SAMPLE_IDS = {"ValueSet": "administrative-gender", "CodeSystem": "administrative-gender"}
# Where each interaction of the CapabilityStatement is routed: path (under the type) and method.
_ROUTED = {
    "read": ("/{id}", "get"),
    "vread": ("/{id}/_history/{vid}", "get"),
    "history-instance": ("/{id}/_history", "get"),
    "history-type": ("/_history", "get"),
    "create": ("", "post"),
    "update": ("/{id}", "put"),
    "delete": ("/{id}", "delete"),
    "search-type": ("", "get"),
}


def _ref(kind: str, name: str) -> dict[str, str]:
    return {"$ref": f"#/components/{kind}/{name}"}


def _body(rtype: str) -> dict[str, Any]:
    return {FHIR_JSON: {"schema": _ref("schemas", rtype)}}


def _ok(rtype: str, description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"description": description, "content": _body(rtype)}
    if headers:
        out["headers"] = headers
    return out


def _responses(
    ok: dict[str, Any], status: str = "200", more: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {status: ok, **(more or {}), "default": _ref("responses", "Error")}


def primitive_schema(fhir_type: str | None, name: str = "", code: str = "") -> dict[str, Any]:
    """The JSON Schema of a FHIR primitive as it travels in a query string: a boolean, an
    integer in its range, else the primitive's own form (never empty, its R4 pattern; the
    ``system|version`` inputs theirs)."""
    fhir_type = fhir_type or "string"
    if fhir_type == "decimal":
        return {"type": "number"}
    found = primitive(fhir_type)
    if fhir_type in AS_SENT:  # (codes checked by the operation, ECL with spaces in urls)
        found.pop("pattern", None)
        found["minLength"] = 1
    if found["type"] == "integer":
        found["format"] = "int32"
    if name in SYSTEM_VERSION_INPUTS:
        found["pattern"] = f"^{SYSTEM_VERSION_FORM}$"
    return {**found, **input_rule(code, name)}


def _cardinality(param: ParamDef) -> str:
    return f"{param.min}..{'*' if param.max is None else param.max}"


def query_parameter(
    param: ParamDef, documentation: str, example: Any = None, code: str = "", rule: str = ""
) -> dict[str, Any]:
    """An operation input (of the operation ``code``) as an OpenAPI query parameter: type,
    cardinality, documentation, what the operation refuses beyond the type (``rule``: a
    rule between inputs, in words)."""
    schema = primitive_schema(param.type, param.name, code)
    if param.repeats:
        schema = {"type": "array", "items": schema}
        if param.max is not None:
            schema["maxItems"] = param.max
    cardinality = _cardinality(param)
    text = f"{documentation.strip()}\n\nFHIR type `{param.type}`, cardinality {cardinality}."
    if rule:
        text += f" {rule}"
    out: dict[str, Any] = {
        "name": param.name,
        "in": "query",
        "required": param.min >= 1,
        "description": text.strip(),
        "schema": schema,
        "x-fhir-type": param.type,
    }
    if param.repeats:
        out["style"], out["explode"] = "form", True
    if example is not None:
        out["example"] = [example] if param.repeats else example
    return out


def _value_key(fhir_type: str | None) -> str:
    name = fhir_type or "String"
    return "value" + name[:1].upper() + name[1:]


def example_parameters(op: Operation, rtype: str | None, instance: bool) -> dict[str, Any]:
    """A Parameters body with the sample inputs the operation takes (no ``url`` at
    instance level: the instance is the target)."""
    samples = SAMPLES.get(rtype or "", {})
    entries = [
        {"name": name, _value_key(param.type): samples[name]}
        for name, param in op.definition.inputs.items()
        if name in samples and name in op.supported and not (instance and name == "url")
    ]
    entries += [
        {"name": name, "resource": SAMPLE_RESOURCES[name]}
        for name in op.definition.inputs
        if name in SAMPLE_RESOURCES and name in op.supported
    ]
    return {"resourceType": "Parameters", "parameter": entries}


def _documentation(definition: OperationDef) -> dict[str, str]:
    return {
        str(p["name"]): str(p.get("documentation") or "")
        for p in definition.resource.get("parameter", ())
        if p.get("use") == "in"
    }


def _output_type(definition: OperationDef) -> str:
    if definition.returns_resource:
        found = definition.outputs["return"].type or "Resource"
        return found if found in _RESOURCE_SCHEMAS else "Resource"
    return "Parameters"


def _operation_pair(op: Operation, rtype: str | None, level: str) -> dict[str, Any]:
    """The GET and POST of one operation at one level of one resource type."""
    d = op.definition
    docs = _documentation(d)
    samples = SAMPLES.get(rtype or "", {})
    instance = level == "instance"
    where = f"{rtype or 'system'}-{level}"
    unsupported = sorted(set(d.inputs) - op.supported)
    rules = between_inputs(d.code, level, rtype)
    title = str(d.resource.get("title") or d.resource.get("name") or d.code)
    description = str(d.resource.get("description") or title)
    if unsupported:
        description += f"\n\nDefined but not supported here: {', '.join(unsupported)}."
    complex_inputs = sorted(n for n, p in d.inputs.items() if not p.is_simple and n in op.supported)
    common: dict[str, Any] = {
        "tags": [rtype or SYSTEM_TAG],
        "x-fhir-operation": {"code": d.code, "definition": d.url, "level": level},
        "responses": _responses(_ok(_output_type(d), "The outputs")),
    }
    if instance:
        common["parameters"] = [_id_parameter(rtype or "")]
    if op.cached or op.with_caches:
        common["parameters"] = [*common.get("parameters", []), _cache_header()]
    out: dict[str, Any] = {}
    if not d.affects_state:
        query = [
            query_parameter(
                p,
                docs.get(name, ""),
                None if instance and name == "url" else samples.get(name),
                d.code,
                rules.get(name, ""),
            )
            for name, p in d.inputs.items()
            if p.is_simple and name in op.supported
        ]
        out["get"] = {
            **common,
            "operationId": f"{d.code}-{where}-get",
            "summary": f"${d.code}: {title} (GET)",
            "description": description
            + (f"\n\nOnly by POST: {', '.join(complex_inputs)}." if complex_inputs else ""),
            "parameters": [*common.get("parameters", []), *query],
        }
    out["post"] = {
        **common,
        "operationId": f"{d.code}-{where}-post",
        "summary": f"${d.code}: {title} (POST)",
        "description": description,
        "requestBody": {
            "required": False,
            "description": "A Parameters resource with the inputs (simple types may also "
            "be given in the query string)"
            + "".join(f"\n\n`{n}`: {r}" for n, r in rules.items() if n in op.supported),
            "content": {
                FHIR_JSON: {
                    "schema": parameters_schema(
                        op, lambda p: primitive_schema(p.type, p.name, d.code)
                    ),
                    "example": example_parameters(op, rtype, instance),
                }
            },
        },
    }
    return out


def operation_paths(operations: tuple[Operation, ...]) -> dict[str, dict[str, Any]]:
    """Every operation at every level of every resource type its definition allows."""
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        d = op.definition
        if d.system:
            paths.setdefault(f"/${d.code}", {}).update(_operation_pair(op, None, "system"))
        for rtype in d.resource_types:
            if d.type:
                paths.setdefault(f"/{rtype}/${d.code}", {}).update(
                    _operation_pair(op, rtype, "type")
                )
            if d.instance:
                paths.setdefault(f"/{rtype}/{{id}}/${d.code}", {}).update(
                    _operation_pair(op, rtype, "instance")
                )
    return paths


def _id_parameter(rtype: str, name: str = "id") -> dict[str, Any]:
    param: dict[str, Any] = {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": "^[A-Za-z0-9\\-.]{1,64}$"},
        "description": "Logical id" if name == "id" else "Version id",
    }
    if name == "id" and rtype in SAMPLE_IDS:
        param["example"] = SAMPLE_IDS[rtype]
    return param


def _query(name: str, description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema or {"type": "string"},
    }


def _header(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "header",
        "required": False,
        "description": description,
        "schema": {"type": "string"},
    }


def _cache_header() -> dict[str, Any]:
    """``X-Cache-Id``: the client cache (``$cache-control``) a call works in."""
    header = _header(
        "X-Cache-Id",
        "The client cache the call works in: an id `$cache-control` started (an id the "
        "server does not hold is 404 `not-found`, tx `cache-id-unknown`); one id at most",
    )
    header["schema"] = {"type": "string", "pattern": "^[A-Za-z0-9\\-.]{1,64}$"}
    return header


# _count and _offset: at most 9 ASCII digits; a _count above MAX_COUNT is served as MAX_COUNT
_WHOLE = {"type": "integer", "minimum": 0, "maximum": 999_999_999}
_COUNT_TEXT = f"Page size (default 100); a larger value than {MAX_COUNT} is served as {MAX_COUNT}"


def _search_parameters(rtype: str) -> list[dict[str, Any]]:
    out = [
        _query(
            p.name,
            f"{p.documentation} ({p.type}; modifiers "
            + ", ".join(":" + m for m in MODIFIERS[p.type])
            + ")",
        )
        for p in SEARCH_PARAMETERS[rtype].values()
    ]
    return [
        *out,
        _query("_count", _COUNT_TEXT, _WHOLE),
        _query("_offset", "Where the page starts", _WHOLE),
        _query("_sort", "Comma-separated search parameters; '-' for descending"),
        _query("_summary", "Summary mode", {"type": "string", "enum": list(SUMMARY_MODES)}),
        _query("_elements", "Comma-separated elements to return"),
    ]


def _criteria(rtype: str) -> str:
    """The pattern of ``If-None-Exist``: ``name[:modifier]=value`` pairs of the type's
    search parameters (``:missing`` with true or false), joined by ``&``."""
    one = []
    for p in SEARCH_PARAMETERS[rtype].values():
        modifiers = "|".join(m for m in MODIFIERS[p.type] if m != "missing")
        name = re.escape(p.name)
        one.append(f"{name}(?::(?:{modifiers}))?=[^&]+" if modifiers else f"{name}=[^&]+")
        one.append(f"{name}:missing=(?:true|false)")
    pair = "(?:" + "|".join(one) + ")"
    return f"^\\??{pair}(?:&{pair})*$"


def _history_parameters(with_paging: bool) -> list[dict[str, Any]]:
    if not with_paging:
        return []
    return [
        _query("_count", _COUNT_TEXT, _WHOLE),
        _query("_offset", "Where the page starts", _WHOLE),
        _query(
            "_since",
            "Only versions written at or after this instant (with a time zone)",
            {"type": "string", "format": "date-time", "pattern": f"^{INSTANT_FORM}$"},
        ),
    ]


def _interaction(rtype: str, code: str) -> dict[str, Any]:
    """One REST interaction of a resource type, as the server routes it."""
    ident = [] if code in ("create", "search-type", "history-type") else [_id_parameter(rtype)]
    if code == "vread":
        ident.append(_id_parameter(rtype, "vid"))
    written = {
        "Location": {"description": "The new version", "schema": {"type": "string"}},
        "ETag": {"description": 'W/"version"', "schema": {"type": "string"}},
    }
    prefer = _header("Prefer", "return=minimal|representation|OperationOutcome")
    shape = [
        _query("_summary", "Summary mode", {"type": "string", "enum": list(SUMMARY_MODES)}),
        _query("_elements", "Comma-separated elements to return"),
    ]
    if_none_exist = _header(
        "If-None-Exist",
        "Conditional create: search criteria (this type's search parameters, each with a "
        "value), as a query string",
    )
    if_none_exist["schema"] = {"type": "string", "pattern": _criteria(rtype)}
    spec: dict[str, tuple[str, list[dict[str, Any]], dict[str, Any]]] = {
        "read": (
            f"Read a {rtype}",
            [*shape, _header("If-None-Match", "ETag"), _header("If-Modified-Since", "date")],
            _responses(_ok(rtype, "The resource"), more={"304": {"description": "Not modified"}}),
        ),
        "vread": (f"Read a version of a {rtype}", shape, _responses(_ok(rtype, "The version"))),
        "history-instance": (
            f"History of a {rtype}",
            [],
            _responses(_ok("Bundle", "A history Bundle, newest first")),
        ),
        "history-type": (
            f"History of every {rtype}",
            _history_parameters(True),
            _responses(_ok("Bundle", "A history Bundle, newest first")),
        ),
        "create": (
            f"Create a {rtype}",
            [if_none_exist, prefer],
            _responses(_ok(rtype, "Created", written), "201", {"200": _ok(rtype, "Matched, kept")}),
        ),
        "update": (
            f"Update (or create) a {rtype}",
            [_header("If-Match", 'W/"version"'), prefer],
            _responses(_ok(rtype, "Updated"), more={"201": _ok(rtype, "Created", written)}),
        ),
        "delete": (f"Delete a {rtype}", [], _responses({"description": "Deleted"}, "204")),
        "search-type": (
            f"Search {rtype} resources",
            _search_parameters(rtype),
            _responses(_ok("Bundle", "A searchset Bundle with paging links")),
        ),
    }
    summary, params, responses = spec[code]
    out: dict[str, Any] = {
        "tags": [rtype],
        "operationId": f"{code}-{rtype}",
        "summary": summary,
        "x-fhir-interaction": code,
        "parameters": [*ident, *params],
        "responses": responses,
    }
    if code == "create":
        out["requestBody"] = {"required": True, "content": _body(rtype)}
    if code == "update":
        out["requestBody"] = update_body(rtype, _ref("schemas", rtype), FHIR_JSON)
        out["parameters"][0] = {**ident[0], "description": f"Logical id. {SAME_ID}"}
    return out


def interaction_paths() -> dict[str, dict[str, Any]]:
    """The REST interactions the CapabilityStatement lists, on the paths they are routed."""
    paths: dict[str, dict[str, Any]] = {}
    for rtype in TERMINOLOGY_TYPES:
        for code in INTERACTIONS:
            suffix, method = _ROUTED[code]
            paths.setdefault(f"/{rtype}{suffix}", {})[method] = _interaction(rtype, code)
    definition_search = [
        _query(name, f"OperationDefinition search by {name} ({kind})")
        for name, kind in OPERATION_DEFINITION_SEARCH.items()
    ]
    paths["/OperationDefinition"] = {
        "get": {
            "tags": ["OperationDefinition"],
            "operationId": "search-type-OperationDefinition",
            "summary": "Search the operations this server defines",
            "x-fhir-interaction": "search-type",
            "parameters": definition_search,
            "responses": _responses(_ok("Bundle", "A searchset Bundle")),
        }
    }
    paths["/OperationDefinition/{id}"] = {
        "get": {
            "tags": ["OperationDefinition"],
            "operationId": "read-OperationDefinition",
            "summary": "Read an OperationDefinition",
            "x-fhir-interaction": "read",
            "parameters": [_id_parameter("OperationDefinition")],
            "responses": _responses(_ok("OperationDefinition", "The definition")),
        }
    }
    paths["/_history"] = {
        "get": {
            "tags": [SYSTEM_TAG],
            "operationId": "history-system",
            "summary": "History of every resource",
            "x-fhir-interaction": "history-system",
            "parameters": _history_parameters(True),
            "responses": _responses(_ok("Bundle", "A history Bundle, newest first")),
        }
    }
    paths["/metadata"] = {
        "get": {
            "tags": [SYSTEM_TAG],
            "operationId": "capabilities",
            "summary": "The CapabilityStatement (no token needed)",
            "x-fhir-interaction": "capabilities",
            "security": [],
            "parameters": [
                _query(
                    "mode",
                    "full (default), normative, or terminology for TerminologyCapabilities",
                    {"type": "string", "enum": ["full", "normative", "terminology"]},
                )
            ],
            "responses": _responses(
                {
                    "description": "A CapabilityStatement; with mode=terminology a "
                    "TerminologyCapabilities",
                    "content": {
                        FHIR_JSON: {
                            "schema": {
                                "oneOf": [
                                    _ref("schemas", "CapabilityStatement"),
                                    _ref("schemas", "TerminologyCapabilities"),
                                ]
                            }
                        }
                    },
                }
            ),
        }
    }
    return paths


_RESOURCE_SCHEMAS = (
    *TERMINOLOGY_TYPES,
    "Bundle",
    "CapabilityStatement",
    "TerminologyCapabilities",
    "OperationDefinition",
    "OperationOutcome",
    "Parameters",
)


_STRUCTURED = (*TERMINOLOGY_TYPES, "Parameters")  # the resources of the structure schema


def _schemas() -> dict[str, Any]:
    out: dict[str, Any] = {
        "Resource": {
            "type": "object",
            "description": "Any FHIR R4 resource, as FHIR JSON (one of a type the server "
            "does not check is taken as it is)",
            "required": ["resourceType"],
            "properties": {"resourceType": {"type": "string"}},
            "additionalProperties": True,
        }
    }
    for rtype in _RESOURCE_SCHEMAS:
        out[rtype] = {
            "type": "object",
            "description": f"A FHIR R4 {rtype}, as FHIR JSON",
            "required": ["resourceType"],
            "properties": {"resourceType": {"const": rtype}, "id": {"type": "string"}},
            "additionalProperties": True,
        }
    return {**out, **structure_schemas(_STRUCTURED)}


def openapi_document(
    operations: tuple[Operation, ...], *, title: str, version: str
) -> dict[str, Any]:
    """The whole OpenAPI document, paths relative to the FHIR base (see ``with_server``)."""
    paths = {**interaction_paths(), **operation_paths(operations)}
    add_links(paths)
    tags = [
        {"name": rtype, "description": f"{rtype}: REST interactions and operations"}
        for rtype in TERMINOLOGY_TYPES
    ]
    tags += [
        {"name": "OperationDefinition", "description": "The operations this server defines"},
        {"name": SYSTEM_TAG, "description": "Capabilities, history and system operations"},
    ]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": version,
            "description": "FHIR R4 terminology server. Every request but `GET /metadata` "
            "needs `Authorization: Bearer <token>` (the Authorize button). Errors are "
            "OperationOutcome resources.",
        },
        "tags": tags,
        "paths": paths,
        "components": {
            "schemas": _schemas(),
            "responses": {
                "Error": {
                    "description": "An error, as an OperationOutcome",
                    "content": _body("OperationOutcome"),
                }
            },
            "securitySchemes": {
                SECURITY_SCHEME: {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The server's access token",
                }
            },
        },
        "security": [{SECURITY_SCHEME: []}],
    }


def with_server(document: dict[str, Any], base_path: str) -> dict[str, Any]:
    """The document with its one server: the FHIR base path as the client reaches it."""
    return {**document, "servers": [{"url": base_path or "/", "description": "FHIR base"}]}
