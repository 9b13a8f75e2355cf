"""The OpenAPI description and the /docs page, over real HTTP on 127.0.0.1: generated from the
OperationDefinitions (every level, GET query parameters with type, cardinality and
documentation, POST with a Parameters example that works), the REST interactions, tags, the
bearer scheme; in agreement with /metadata; the Swagger UI page and its assets served from
the installed package, nothing from another host, no token needed."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from fastapi import FastAPI
from http_support import FHIR_JSON, TOKEN, client, serve_app
from openapi_spec_validator import validate

from workbench import Workbench
from workbench.operations import OPERATIONS
from workbench.server import create_app
from workbench.server.embedded import ServerHandle

VALUESETS = Path(__file__).resolve().parent.parent / "valuesets"
LEVEL_PATHS = {
    "system": "/${code}",
    "type": "/{rtype}/${code}",
    "instance": "/{rtype}/{{id}}/${code}",
}


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    wb = Workbench()
    wb.load(VALUESETS, progress=False)
    with wb.serve(port=0, token=TOKEN) as handle:
        yield handle


@pytest.fixture(scope="module")
def http(server: ServerHandle) -> Iterator[httpx.Client]:
    with client(server.url) as c:
        yield c


@pytest.fixture(scope="module")
def document(server: ServerHandle) -> dict[str, Any]:
    with client(server.url, token=None) as anonymous:
        response = anonymous.get("/openapi.json")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    found: dict[str, Any] = response.json()
    return found


def operations_of(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            yield path, method, operation


def expected_operation_paths() -> dict[str, tuple[Any, str | None, str]]:
    out = {}
    for op in OPERATIONS:
        d = op.definition
        for level in ("system", "type", "instance"):
            if not d.available_at(level):
                continue
            for rtype in [None] if level == "system" else list(d.resource_types):
                path = LEVEL_PATHS[level].format(code=d.code, rtype=rtype)
                out[path] = (op, rtype, level)
    return out


def test_the_document_is_valid_openapi(document: dict[str, Any]) -> None:
    validate(document)
    assert document["openapi"].startswith("3.1")
    assert document["servers"] == [{"url": "/fhir/R4", "description": "FHIR base"}]


def schema_objects(node: Any, where: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object of an OpenAPI document (a component schema, a parameter's,
    a header's, a body's), by its place."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{where}/{key}"
            if key == "schema" and isinstance(value, dict):
                yield here, value
            elif key == "schemas" and where == "#/components":
                yield from ((f"{here}/{n}", s) for n, s in value.items())
            else:
                yield from schema_objects(value, here)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from schema_objects(value, f"{where}/{i}")


_NEVER_EMPTY = ("anyOf", "oneOf", "allOf", "enum", "required", "properties", "dependentSchemas")


def empty_keywords(node: Any, where: str) -> Iterator[str]:
    """The places of keywords whose empty value states nothing or refuses everything."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _NEVER_EMPTY and not value and not where.endswith("/properties"):
                yield f"{where}/{key}"
            yield from empty_keywords(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from empty_keywords(value, f"{where}/{i}")


def test_every_schema_is_valid_json_schema(document: dict[str, Any]) -> None:
    """Each schema object meets the JSON Schema 2020-12 meta-schema (OpenAPI 3.1's
    dialect), has no empty combinator, enumeration or list of names, and each reference
    names a component that exists."""
    found = list(schema_objects(document))
    assert len(found) > 500
    for where, schema in found:
        jsonschema.Draft202012Validator.check_schema(schema)
        assert not list(empty_keywords(schema, where))
    refs = re.findall(r'"\$ref": "#/components/(\w+)/([^"]+)"', json.dumps(document))
    assert refs
    for kind, name in refs:
        assert name in document["components"][kind], (kind, name)


def test_every_operation_at_every_declared_level(document: dict[str, Any]) -> None:
    expected = expected_operation_paths()
    assert {p for p in document["paths"] if "$" in p} == set(expected)
    for path, (op, rtype, level) in expected.items():
        item = document["paths"][path]
        d = op.definition
        assert set(item) == ({"post"} if d.affects_state else {"get", "post"}), path
        for operation in item.values():
            assert operation["tags"] == [rtype or "System"]
            assert operation["x-fhir-operation"] == {
                "code": d.code,
                "definition": d.url,
                "level": level,
            }
        body = item["post"]["requestBody"]["content"][FHIR_JSON]
        schema = body["schema"]
        assert schema["properties"]["resourceType"] == {"const": "Parameters"}
        items = schema["properties"]["parameter"]["items"].get("anyOf", [])
        names = {item["properties"]["name"]["const"] for item in items}
        assert names == {n for n in d.inputs if n in op.supported}, path
        assert body["example"]["resourceType"] == "Parameters"
        assert body["example"]["parameter"] or not any(p.min for p in d.inputs.values()), path


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.definition.id)
def test_get_parameters_come_from_the_definition(document: dict[str, Any], op: Any) -> None:
    d = op.definition
    if not d.type or d.affects_state:  # (no GET for an operation that changes state)
        return
    path = f"/{d.resource_types[0]}/${d.code}"
    declared = document["paths"][path]["get"]["parameters"]
    query = {p["name"]: p for p in declared if p["in"] == "query"}
    simple = {n for n, p in d.inputs.items() if p.is_simple and n in op.supported}
    assert set(query) == simple
    headers = {p["name"] for p in declared if p["in"] == "header"}
    assert headers == ({"X-Cache-Id"} if op.cached or op.with_caches else set()), path
    docs = {
        p["name"]: p.get("documentation", "") for p in d.resource["parameter"] if p["use"] == "in"
    }
    for name in simple:
        param, spec = d.inputs[name], query[name]
        assert spec["in"] == "query"
        assert spec["required"] is (param.min >= 1)
        assert spec["x-fhir-type"] == param.type
        assert docs[name].strip()[:40] in spec["description"]
        maximum = "*" if param.max is None else param.max
        assert f"cardinality {param.min}..{maximum}" in spec["description"]
        schema = spec["schema"]
        if param.repeats:
            assert schema["type"] == "array"
            schema = schema["items"]
        wanted = {"boolean": "boolean", "integer": "integer"}.get(param.type, "string")
        assert schema["type"] == wanted, name


def test_examples_work_when_tried_out(document: dict[str, Any], http: httpx.Client) -> None:
    """What "Try it out" sends, with its examples filled in, is answered with 200."""
    tried = 0
    for path, method, operation in operations_of(document):
        if "x-fhir-operation" not in operation:
            continue
        url = path
        query: dict[str, Any] = {}
        for param in operation.get("parameters", []):
            if "example" not in param:
                continue
            if param["in"] == "path":
                url = url.replace("{" + param["name"] + "}", param["example"])
            else:
                query[param["name"]] = param["example"]
        if "{" in url:
            continue  # no example instance of this type in the default content
        if method == "get":
            response = http.get(url, params=query)
        else:
            example = operation["requestBody"]["content"][FHIR_JSON]["example"]
            response = http.post(url, json=example, headers={"Content-Type": FHIR_JSON})
        assert response.status_code == 200, (method, url, response.text)
        tried += 1
    assert tried >= 15


def test_rest_interactions_tags_and_security(document: dict[str, Any]) -> None:
    scheme = document["components"]["securitySchemes"]["bearerAuth"]
    assert scheme == {"type": "http", "scheme": "bearer", "description": scheme["description"]}
    assert document["security"] == [{"bearerAuth": []}]
    assert document["paths"]["/metadata"]["get"]["security"] == []
    routed = {
        ("read", "get", "/ValueSet/{id}"),
        ("vread", "get", "/ValueSet/{id}/_history/{vid}"),
        ("history-instance", "get", "/ValueSet/{id}/_history"),
        ("history-type", "get", "/ValueSet/_history"),
        ("create", "post", "/ValueSet"),
        ("update", "put", "/ValueSet/{id}"),
        ("delete", "delete", "/ValueSet/{id}"),
        ("search-type", "get", "/ValueSet"),
    }
    found = {
        (op["x-fhir-interaction"], method, path)
        for path, method, op in operations_of(document)
        if op.get("x-fhir-interaction") and op["tags"] == ["ValueSet"]
    }
    assert found == routed
    tags = {t["name"] for t in document["tags"]}
    assert tags == {"ValueSet", "CodeSystem", "ConceptMap", "OperationDefinition", "System"}
    for _, _, op in operations_of(document):
        assert set(op["tags"]) <= tags
        assert "default" in op["responses"]


def test_openapi_and_metadata_agree(document: dict[str, Any], http: httpx.Client) -> None:
    caps = http.get("/metadata").json()
    rest = caps["rest"][0]
    in_caps: set[tuple[str, str, str]] = {("System", "interaction", "capabilities")}
    for resource in rest["resource"]:
        for interaction in resource["interaction"]:
            in_caps.add((resource["type"], "interaction", interaction["code"]))
        for operation in resource.get("operation", []):
            in_caps.add((resource["type"], "operation", operation["name"]))
    for interaction in rest.get("interaction", []):
        in_caps.add(("System", "interaction", interaction["code"]))
    for operation in rest.get("operation", []):
        in_caps.add(("System", "operation", operation["name"]))
    in_openapi: set[tuple[str, str, str]] = set()
    for _, _, op in operations_of(document):
        [tag] = op["tags"]
        if "x-fhir-interaction" in op:
            in_openapi.add((tag, "interaction", op["x-fhir-interaction"]))
        else:
            in_openapi.add((tag, "operation", op["x-fhir-operation"]["code"]))
    assert in_openapi == in_caps


def test_docs_page_is_served_offline_without_a_token(server: ServerHandle) -> None:
    with client(server.url, token=None) as anonymous:
        page = anonymous.get("/docs")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        # nothing is fetched from any host: every reference is a path on this server
        assert not re.search(r"https?://", page.text), page.text
        assert "url: '/fhir/R4/openapi.json'" in page.text
        assets = dict.fromkeys(re.findall(r'(?:src|href)="([^"]+)"', page.text))
        kinds = {}
        for asset in assets:
            assert asset.startswith("/fhir/R4/docs/assets/"), asset
            fetched = anonymous.get(server.url[: -len("/fhir/R4")] + asset)
            assert fetched.status_code == 200, asset
            assert len(fetched.content) > 500, asset
            kinds[asset.rsplit(".", 1)[1]] = fetched.headers["content-type"].split(";")[0]
        assert kinds == {"css": "text/css", "png": "image/png", "js": "text/javascript"}


def test_the_app_root_redirects_to_the_docs(server: ServerHandle) -> None:
    origin = server.url[: -len("/fhir/R4")]
    with httpx.Client(trust_env=False, timeout=10.0) as plain:
        for name in ("docs", "openapi.json"):
            moved = plain.get(f"{origin}/{name}", follow_redirects=False)
            assert moved.status_code == 307
            assert moved.headers["location"] == f"/fhir/R4/{name}"


def test_create_app_is_a_fastapi_app_without_detail_bodies() -> None:
    """``create_app`` returns FastAPI; ``app.openapi()`` is the generated document; a route a
    user adds with FastAPI's own validation still answers an OperationOutcome (400), never
    FastAPI's 422 ``{"detail": …}``."""
    wb = Workbench()
    app = create_app(wb, token=TOKEN)
    assert isinstance(app, FastAPI)
    assert {p for p in app.openapi()["paths"] if "$" in p} == set(expected_operation_paths())

    @app.get("/custom/{number}")
    def custom(number: int) -> dict[str, int]:
        return {"number": number}

    with serve_app(app, base="") as running, client(running.url) as http:
        assert http.get("/custom/3").json() == {"number": 3}
        refused = http.get("/custom/three")
    assert refused.status_code == 400
    body = refused.json()
    assert body["resourceType"] == "OperationOutcome"
    assert body["issue"][0]["code"] == "invalid"
    assert "number" in body["issue"][0]["details"]["text"]


# --- what the document states is what the server does (issue 38, point 1) --------------------


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("TRACE", "/metadata", "GET, HEAD"),
        ("PUT", "/ValueSet/_history", "GET, HEAD"),
        ("POST", "/_history", "GET, HEAD"),
        ("DELETE", "/ValueSet", "GET, HEAD, POST"),
        ("PATCH", "/ValueSet/administrative-gender", "GET, HEAD, PUT, DELETE"),
        ("GET", "/ValueSet/$batch-validate-code", "POST"),
    ],
)
def test_every_405_names_the_allowed_methods(
    document: dict[str, Any], http: httpx.Client, method: str, path: str, allow: str
) -> None:
    response = http.request(method, path)
    assert response.status_code == 405, response.text
    assert response.headers["allow"] == allow
    assert response.json()["resourceType"] == "OperationOutcome"


def test_metadata_is_documented_per_mode(document: dict[str, Any], http: httpx.Client) -> None:
    schema = document["paths"]["/metadata"]["get"]["responses"]["200"]["content"][FHIR_JSON]
    refs = [s["$ref"].rpartition("/")[2] for s in schema["schema"]["oneOf"]]
    assert refs == ["CapabilityStatement", "TerminologyCapabilities"]
    schemas = document["components"]["schemas"]
    for mode, rtype in [("full", refs[0]), ("terminology", refs[1])]:
        body = http.get("/metadata", params={"mode": mode}).json()
        assert body["resourceType"] == schemas[rtype]["properties"]["resourceType"]["const"]


def test_create_and_read_link_to_the_instance(document: dict[str, Any]) -> None:
    for rtype in ("ValueSet", "CodeSystem", "ConceptMap"):
        created = document["paths"][f"/{rtype}"]["post"]["responses"]["201"]["links"]
        read = document["paths"][f"/{rtype}/{{id}}"]["get"]["responses"]["200"]["links"]
        instance_ops = {
            op["operationId"]
            for path, item in document["paths"].items()
            if path.startswith(f"/{rtype}/{{id}}")
            for op in item.values()
        }
        assert set(created) == instance_ops
        assert set(read) == instance_ops - {f"read-{rtype}"}
        assert created[f"vread-{rtype}"]["parameters"] == {
            "id": "$response.body#/id",
            "vid": "$response.body#/meta/versionId",
        }


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ({"url": "http://x", "code": ""}, "'code' must not be an empty string"),
        (
            {"url": "http://x", "code": "female", "display": ""},
            "'display' must not be an empty string",
        ),
    ],
)
def test_query_values_have_their_documented_form(
    document: dict[str, Any], http: httpx.Client, query: dict[str, str], text: str
) -> None:
    params = {
        p["name"]: p["schema"]
        for p in document["paths"]["/ValueSet/$validate-code"]["get"]["parameters"]
    }
    for name, value in query.items():
        schema = params[name]
        documented = len(value) >= schema.get("minLength", 0) and (
            "pattern" not in schema or re.search(schema["pattern"], value) is not None
        )
        if not documented:
            break
    else:
        pytest.fail(f"{query} fits the document")
    response = http.get("/ValueSet/$validate-code", params=query)
    assert response.status_code == 400, response.text
    assert re.search(text, response.json()["issue"][0]["details"]["text"])


@pytest.mark.parametrize("code", ["male ", "a  b", "22298006 : 363698007 = "])
def test_a_code_as_sent_is_documented_and_answered(
    document: dict[str, Any], http: httpx.Client, code: str
) -> None:
    """A code that breaks FHIR's pattern is a validation result, not a refused request."""
    params = {
        p["name"]: p["schema"]
        for p in document["paths"]["/ValueSet/$validate-code"]["get"]["parameters"]
    }
    assert "pattern" not in params["code"] and params["code"]["minLength"] == 1
    gender = "http://hl7.org/fhir/administrative-gender"
    query = {"url": "http://hl7.org/fhir/ValueSet/administrative-gender", "code": code}
    query["system"] = gender
    response = http.get("/ValueSet/$validate-code", params=query)
    assert response.status_code == 200, response.text
    result = [p for p in response.json()["parameter"] if p["name"] == "result"]
    assert result == [{"name": "result", "valueBoolean": False}]


def test_count_states_its_clamp(document: dict[str, Any], http: httpx.Client) -> None:
    count = next(
        p for p in document["paths"]["/ValueSet"]["get"]["parameters"] if p["name"] == "_count"
    )
    assert "served as 1000" in count["description"]
    assert count["schema"]["maximum"] == 999_999_999
    bundle = http.get("/ValueSet", params={"_count": "1001"}).json()
    assert "_count=1000" in bundle["link"][0]["url"]
