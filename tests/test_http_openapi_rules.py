"""The OpenAPI document and the server agree on what a request may be (issue 38, point 2),
over real HTTP on 127.0.0.1: what JSON Schema can state is in the document and the server
accepts exactly that (vsd-1 to vsd-3, an update's id, the display language list, integral
numbers for FHIR integers); each rule between inputs that it cannot state is refused with a
400 ``required`` and stated in the input's description; a code system that is not loaded is
a 404; and the fuzz harness counts apart only the refusals it names."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from http_support import assert_outcome, served_fixtures

from workbench import Workbench

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from fuzz_openapi import allowed, outside_document, spec_fixed  # noqa: E402

GENDER = "http://hl7.org/fhir/administrative-gender"
GENDER_VS = "http://hl7.org/fhir/ValueSet/administrative-gender"
REFUSED = "400 `required`"


@pytest.fixture(scope="module")
def wb() -> Workbench:
    """A module-private Workbench: the tests write value sets and code systems."""
    bench = Workbench()
    bench.load(ROOT / "valuesets", progress=False)
    return bench


server, http = served_fixtures()


@pytest.fixture(scope="module")
def document(http: httpx.Client) -> dict[str, Any]:
    found: dict[str, Any] = http.get("/openapi.json").json()
    return found


def fits(document: dict[str, Any], schema: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` is valid against ``schema`` (its refs into the document resolved)."""
    root = {**schema, "components": document["components"]}
    return jsonschema.Draft202012Validator(root).is_valid(value)


def parameter(document: dict[str, Any], path: str, method: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(
        p for p in document["paths"][path][method]["parameters"] if p["name"] == name
    )
    return found


INCLUDES = [
    pytest.param({"system": GENDER}, True, id="system"),
    pytest.param({"valueSet": [GENDER_VS]}, True, id="import"),
    pytest.param({"system": GENDER, "concept": [{"code": "female"}]}, True, id="concepts"),
    pytest.param({}, False, id="vsd-1-empty"),
    pytest.param({"valueSet": []}, False, id="vsd-1-no-import"),
    pytest.param({"system": ""}, False, id="vsd-1-empty-system"),
    pytest.param({"concept": [{"code": "a"}]}, False, id="vsd-1-concepts-only"),
    pytest.param({"valueSet": [GENDER_VS], "concept": [{"code": "a"}]}, False, id="vsd-2"),
    pytest.param(
        {
            "system": GENDER,
            "concept": [{"code": "female"}],
            "filter": [{"property": "concept", "op": "is-a", "value": "female"}],
        },
        False,
        id="vsd-3",
    ),
]


@pytest.mark.parametrize(("include", "valid"), INCLUDES)
def test_vsd_invariants_are_stated_and_enforced(
    document: dict[str, Any], http: httpx.Client, include: dict[str, Any], valid: bool
) -> None:
    """The document's ValueSet states vsd-1, vsd-2 and vsd-3; the server agrees, for an
    include and an exclude alike."""
    for part in ("include", "exclude"):
        compose: dict[str, Any] = {"include": [{"system": GENDER}], part: [include]}
        if part == "include":
            compose = {"include": [include]}
        body = {"resourceType": "ValueSet", "status": "draft", "compose": compose}
        body["url"] = f"http://example.org/fhir/ValueSet/vsd-{part}-{abs(hash(str(include)))}"
        assert fits(document, {"$ref": "#/components/schemas/ValueSet"}, body) is valid
        response = http.post("/ValueSet", json=body)
        assert response.status_code == (201 if valid else 422), response.text


def test_an_update_states_its_id(document: dict[str, Any], http: httpx.Client) -> None:
    """The body of a PUT needs an id (stated); one that differs from the URL's is a 400
    ``required``, which the id's description states."""
    put = document["paths"]["/ValueSet/{id}"]["put"]
    schema = put["requestBody"]["content"]["application/fhir+json"]["schema"]
    body = {"resourceType": "ValueSet", "status": "draft", "url": "http://example.org/u"}
    assert not fits(document, schema, body)
    assert fits(document, schema, {**body, "id": "other"})
    assert REFUSED in parameter(document, "/ValueSet/{id}", "put", "id")["description"]
    assert REFUSED in put["requestBody"]["description"]
    response = http.put("/ValueSet/update-id", json={**body, "id": "other"})
    assert_outcome(response, 400, "required", r"The body's id \('other'\) does not match")
    assert http.put("/ValueSet/update-id", json=body).status_code == 400
    assert http.put("/ValueSet/update-id", json={**body, "id": "update-id"}).status_code == 201


@pytest.mark.parametrize(("value", "valid"), [("abc-1.2", True), ("a b", False), ("x" * 65, False)])
def test_a_cache_id_has_its_documented_form(
    document: dict[str, Any], http: httpx.Client, value: str, valid: bool
) -> None:
    """The document states the form of a cache id; the server takes one of that form and
    refuses any other."""
    schema = parameter(document, "/ValueSet/$expand", "get", "cache-id")["schema"]
    assert (re.search(schema["pattern"], value) is not None) is valid
    response = http.get("/ValueSet/$expand", params={"url": GENDER_VS, "cache-id": value})
    assert response.status_code == (200 if valid else 400), response.text


LANGUAGES = [
    ("de", True),
    ("en-GB", True),
    ("zh-Hant-TW", True),
    ("de, en;q=0.5, *;q=0", True),
    ("en, *; q=0.1", True),
    ("de;q=1.000", True),
    ("de;Q=0.5", True),
    ("0", False),
    ("-", False),
    ("de,,en", True),  # empty elements are ignored (RFC 9110 5.6.1.2)
    (", de,", True),
    (",", False),
    ("de;q=2", False),
    ("de;q=0.1234", False),
    ("de;x=1", False),
    ("abcdefghi", False),
]


@pytest.mark.parametrize(("value", "valid"), LANGUAGES)
def test_a_display_language_is_a_language_list(
    document: dict[str, Any], http: httpx.Client, value: str, valid: bool
) -> None:
    """The document's pattern of displayLanguage is the server's grammar (RFC 9110's
    Accept-Language of RFC 5646 tags): what it matches is served, the rest refused."""
    schema = parameter(document, "/ValueSet/$expand", "get", "displayLanguage")["schema"]
    assert (re.search(schema["pattern"], value) is not None) is valid
    response = http.get("/ValueSet/$expand", params={"url": GENDER_VS, "displayLanguage": value})
    assert response.status_code == (200 if valid else 400), response.text


@pytest.mark.parametrize(("number", "valid"), [(1.0, True), (1e0, True), (1.5, False)])
def test_an_integral_number_is_an_integer(http: httpx.Client, number: float, valid: bool) -> None:
    """JSON Schema's integer takes 1.0 (the JSON number 1), so the server does too, in a
    Parameters body and in a resource (kept as sent); a fraction stays refused."""
    parameters = {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "url", "valueUri": GENDER_VS},
            {"name": "count", "valueInteger": number},
        ],
    }
    expanded = http.post("/ValueSet/$expand", json=parameters)
    assert expanded.status_code == (200 if valid else 400), expanded.text
    if valid:
        assert len(expanded.json()["expansion"]["contains"]) == 1
    body = {"resourceType": "CodeSystem", "status": "draft", "content": "not-present"}
    created = http.post("/CodeSystem", json={**body, "count": number})
    assert created.status_code == (201 if valid else 400), created.text
    if valid:
        assert http.get(created.headers["Location"]).json()["count"] == number


BETWEEN = [
    pytest.param("/$cache-control", {}, "mode", id="cache-mode"),
    pytest.param("/CodeSystem/$lookup", {"code": "female"}, "system", id="lookup-system"),
    pytest.param("/CodeSystem/$subsumes", {"codeA": "a", "codeB": "b"}, "system", id="subsumes"),
    pytest.param("/ValueSet/$compare", {"otherUrl": GENDER_VS}, "thisUrl", id="compare"),
    pytest.param(
        "/ValueSet/$validate-code", {"url": GENDER_VS, "code": "female"}, "system", id="vc-system"
    ),
    pytest.param("/ValueSet/$expand", {}, "url", id="expand-url-needed"),
    pytest.param("/CodeSystem/$validate-code", {"code": "female"}, "url", id="cs-vc-url"),
    pytest.param("/$cache-control", {"mode": "start", "cache-id": "x"}, "cache-id", id="cache"),
    pytest.param(
        "/ConceptMap/$translate",
        {"code": "male", "sourceCode": "male", "system": GENDER},
        "sourceCode",
        id="translate",
    ),
    pytest.param(
        "/ValueSet/{id}/$validate-code",
        {"url": "http://example.org/other", "code": "female", "system": GENDER},
        "url",
        id="vs-instance-url",
    ),
    pytest.param(
        "/ValueSet/{id}/$expand", {"url": "http://example.org/other"}, "url", id="expand-url"
    ),
    pytest.param(
        "/CodeSystem/{id}/$validate-code",
        {"url": "http://example.org/other", "code": "female"},
        "url",
        id="cs-instance-url",
    ),
]


@pytest.mark.parametrize(("path", "query", "name"), BETWEEN)
def test_a_rule_between_inputs_is_described_and_refused_as_required(
    document: dict[str, Any], http: httpx.Client, path: str, query: dict[str, str], name: str
) -> None:
    """Each schema-valid request the server refuses for a rule between inputs: a 400
    ``required``, and the input's description (GET) and the body's (POST) state the rule."""
    assert REFUSED in parameter(document, path, "get", name)["description"]
    body = document["paths"][path]["post"]["requestBody"]["description"]
    assert f"`{name}`: " in body and REFUSED in body
    response = http.get(path.replace("{id}", "administrative-gender"), params=query)
    assert_outcome(response, 400, "required", ".")


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("/CodeSystem/$lookup", {"system": "http://example.org/none", "code": "a"}),
        ("/CodeSystem/$lookup", {"system": GENDER, "version": "0", "code": "female"}),
        (
            "/CodeSystem/$subsumes",
            {"system": "http://example.org/none", "codeA": "a", "codeB": "a"},
        ),
    ],
)
def test_a_code_system_not_loaded_is_not_found(
    http: httpx.Client, path: str, query: dict[str, str]
) -> None:
    """As REST has it for what does not exist, and as tx.fhir.org answers $lookup."""
    text = r"^CodeSystem \S+ not found( \(the loaded versions are '\S+'(, '\S+')*\))?$"
    assert_outcome(http.get(path, params=query), 404, "not-found", text)


def _outcome(code: str, text: str) -> str:
    issue = {"severity": "error", "code": code, "details": {"text": text}}
    return json.dumps({"resourceType": "OperationOutcome", "issue": [issue]})


@pytest.mark.parametrize(
    ("operation", "status", "code", "text", "rule"),
    [
        (
            "GET /ValueSet/$validate-code",
            400,
            "invalid",
            f"ValueSet {GENDER_VS}|0 not found",
            "operation-api 7.2",
        ),
        (
            "POST /ValueSet/$validate-code",
            400,
            "invalid",
            "ValueSet x not found",
            "operation-api 7.2",
        ),
        ("GET /ValueSet/$expand", 400, "invalid", "ValueSet x not found", None),
        ("GET /ValueSet/$validate-code", 404, "not-found", "ValueSet x not found", None),
        ("GET /ValueSet/$validate-code", 400, "invalid", "ValueSet x not found, and more", None),
        (
            "GET /CodeSystem/$lookup",
            400,
            "not-found",
            "The supplement http://x that the request asks for is not loaded",
            "tx ecosystem: supplement missing",
        ),
        ("GET /CodeSystem/$lookup", 400, "not-found", "CodeSystem x not found", None),
    ],
)
def test_the_harness_counts_apart_only_the_named_refusals(
    operation: str, status: int, code: str, text: str, rule: str | None
) -> None:
    """The spec-fixed refusals are narrow: operation, status, issue code and text."""
    assert spec_fixed(operation, status, _outcome(code, text)) == rule
    assert allowed(400, _outcome("required", "x")) and not allowed(422, _outcome("required", "x"))


def test_a_header_outside_its_pattern_is_no_valid_request(document: dict[str, Any]) -> None:
    from fuzz_openapi import header_patterns

    patterns = header_patterns(document)
    sent = "curl -X POST -H 'If-None-Exist: {}' -H 'Prefer;' http://127.0.0.1/fhir/ValueSet"
    assert outside_document("POST /ValueSet", sent.format("0"), patterns)
    assert not outside_document("POST /ValueSet", sent.format("url=http://x"), patterns)
    assert not outside_document("POST /CodeSystem/$lookup", sent.format("0"), patterns)


def test_a_resource_input_travels_in_resource(document: dict[str, Any]) -> None:
    """An input of a resource type (valueSet, tx-resource, ...) is a ``resource`` entry in
    every Parameters body, never a ``value[x]`` (``valueValueSet`` is no FHIR)."""
    seen = 0
    for item in document["paths"].values():
        body = item.get("post", {}).get("requestBody", {}).get("content", {})
        schema = body.get("application/fhir+json", {}).get("schema", {})
        for entry in (
            schema.get("properties", {}).get("parameter", {}).get("items", {}).get("anyOf", ())
        ):
            name = entry["properties"]["name"]["const"]
            if name in ("valueSet", "tx-resource", "conceptMap", "validation"):
                assert entry["required"] == ["name", "resource"], entry
                seen += 1
    assert seen > 10


@pytest.mark.parametrize(
    ("curl", "operation"),
    [
        (
            "curl -X POST -d '{}' 'http://127.0.0.1:1/fhir/R4/ValueSet/a1/$expand'",
            "POST /ValueSet/{id}/$expand",
        ),
        (
            "curl -X GET 'http://127.0.0.1:1/fhir/R4/ValueSet/$validate-code?url=x'",
            "GET /ValueSet/$validate-code",
        ),
        ("curl -X PUT -d '{}' http://127.0.0.1:1/fhir/R4/ValueSet/abc", "PUT /ValueSet/{id}"),
        ("no request here", "GET /heading"),
        (
            "curl -X GET http://127.0.0.1:1/fhir/R4/ValueSet\n"
            "    curl -X GET 'http://127.0.0.1:1/fhir/R4/ValueSet/a/$expand?count=1'",
            "GET /ValueSet/{id}/$expand",
        ),
    ],
)
def test_a_failure_is_named_by_its_request(
    document: dict[str, Any], curl: str, operation: str
) -> None:
    """A stateful failure has no heading of its own: its curl names the operation."""
    from fuzz_openapi import Operations

    assert Operations(document).of(curl, "GET /heading") == operation


def test_an_input_states_its_cardinality_in_a_body(
    document: dict[str, Any], http: httpx.Client
) -> None:
    """A Parameters body may carry an input at most ``max`` times (stated as maxContains);
    the server refuses more."""
    post = document["paths"]["/ValueSet/$expand"]["post"]["requestBody"]
    schema = post["content"]["application/fhir+json"]["schema"]
    once = {"name": "displayLanguage", "valueCode": "de"}
    body = {"resourceType": "Parameters", "parameter": [{"name": "url", "valueUri": GENDER_VS}]}
    assert fits(document, schema, {**body, "parameter": [*body["parameter"], once]})
    twice = {**body, "parameter": [*body["parameter"], once, once]}
    assert not fits(document, schema, twice)
    assert_outcome(http.post("/ValueSet/$expand", json=twice), 400, "invalid", "only once")


def test_a_version_with_a_space_names_no_canonical(
    document: dict[str, Any], http: httpx.Client
) -> None:
    """A version may hold a space (a FHIR string); the unknown version it names is in the
    message, not in x-caused-by-unknown-system (a canonical has no space)."""
    query = {"code": "male", "version": "1 beta"}
    found = http.get("/CodeSystem/administrative-gender/$validate-code", params=query).json()
    names = [p["name"] for p in found["parameter"]]
    assert "x-caused-by-unknown-system" not in names and "message" in names
    assert fits(document, {"$ref": "#/components/schemas/Parameters"}, found)
    query["version"] = "1-beta"
    found = http.get("/CodeSystem/administrative-gender/$validate-code", params=query).json()
    caused = [p for p in found["parameter"] if p["name"] == "x-caused-by-unknown-system"]
    assert caused == [{"name": "x-caused-by-unknown-system", "valueCanonical": f"{GENDER}|1-beta"}]


def test_a_stored_language_that_is_no_list_is_passed_over(http: httpx.Client) -> None:
    """A value set whose own language is no language list (``en_GB``, a FHIR code) expands:
    only a list the request gives is refused."""
    body = {
        "resourceType": "ValueSet",
        "id": "odd-language",
        "language": "en_GB",
        "url": "http://example.org/fhir/ValueSet/odd-language",
        "status": "draft",
        "compose": {"include": [{"system": GENDER}]},
    }
    assert http.put("/ValueSet/odd-language", json=body).status_code == 201
    expanded = http.get("/ValueSet/odd-language/$expand")
    assert expanded.status_code == 200, expanded.text
    refused = http.get("/ValueSet/odd-language/$expand", params={"displayLanguage": "en_GB"})
    assert refused.status_code == 400, refused.text


TX_RESOURCES = [
    pytest.param({"resourceType": "ValueSet", "url": "http://example.org/tx"}, True, id="vs"),
    pytest.param({"resourceType": "", "url": "http://example.org/tx"}, False, id="no-type"),
    pytest.param({"resourceType": "ConceptMap", "url": "http://x"}, False, id="map"),
    pytest.param({"resourceType": "ValueSet"}, False, id="no-url"),
    pytest.param({"resourceType": "ValueSet", "url": ""}, False, id="empty-url"),
]


@pytest.mark.parametrize(("resource", "valid"), TX_RESOURCES)
def test_a_tx_resource_states_what_it_may_be(
    document: dict[str, Any], http: httpx.Client, resource: dict[str, Any], valid: bool
) -> None:
    """A tx-resource is a CodeSystem or a ValueSet with a url: stated, and enforced."""
    post = document["paths"]["/ValueSet/$expand"]["post"]["requestBody"]
    schema = post["content"]["application/fhir+json"]["schema"]
    entries = [
        {"name": "url", "valueUri": GENDER_VS},
        {"name": "tx-resource", "resource": resource},
    ]
    body = {"resourceType": "Parameters", "parameter": entries}
    assert fits(document, schema, body) is valid
    response = http.post("/ValueSet/$expand", json=body)
    assert response.status_code == (200 if valid else 400), response.text


def test_a_conditional_read_checks_its_query_first(http: httpx.Client) -> None:
    """A malformed _summary is refused even when If-None-Match would answer 304."""
    headers = {"If-None-Match": "*"}
    path = "/ValueSet/administrative-gender"
    assert http.get(path, headers=headers).status_code == 304
    refused = http.get(path, params={"_summary": "nope"}, headers=headers)
    assert refused.status_code == 400, refused.text


_EXT = "http://example.org/fhir/StructureDefinition/x"
_CONTEXT = {"system": "http://terminology.hl7.org/CodeSystem/usage-context-type", "code": "focus"}
CHOICES = [
    pytest.param({"extension": [{"url": _EXT, "valueString": "a"}]}, True, id="one-value"),
    pytest.param({"extension": [{"url": _EXT}]}, True, id="no-value"),
    pytest.param({"extension": [{"url": _EXT, "valueCode": "a", "valueFoo": 1}]}, True, id="other"),
    pytest.param(
        {"extension": [{"url": _EXT, "valueString": "a", "valueCode": "b"}]}, False, id="two"
    ),
    pytest.param({"extension": [{"url": _EXT, "valueCoding": {"system": 5}}]}, False, id="type"),
    pytest.param(
        {"extension": [{"url": _EXT, "extension": [{"url": _EXT, "valueInteger": "1"}]}]},
        False,
        id="nested",
    ),
    pytest.param(
        {"useContext": [{"code": _CONTEXT, "valueCodeableConcept": {"text": "a"}}]}, True, id="req"
    ),
    pytest.param({"useContext": [{"code": _CONTEXT}]}, False, id="required-missing"),
    pytest.param(
        {"useContext": [{"code": _CONTEXT, "valueReference": {}, "valueRange": {}}]},
        False,
        id="required-two",
    ),
]


@pytest.mark.parametrize(("content", "valid"), CHOICES)
def test_a_choice_is_stated_as_the_server_checks_it(
    document: dict[str, Any], http: httpx.Client, content: dict[str, Any], valid: bool
) -> None:
    """A choice element (``value[x]``, without a union in the document): one name at most
    (one exactly when required), of its type, at any depth; a name outside the choice is an
    unknown element. The document and the server agree."""
    body = {"resourceType": "ValueSet", "status": "draft", **content}
    digest = hashlib.sha256(json.dumps(content).encode()).hexdigest()[:16]
    body["url"] = f"http://example.org/fhir/ValueSet/choice-{digest}"
    assert fits(document, {"$ref": "#/components/schemas/ValueSet"}, body) is valid
    response = http.post("/ValueSet", json=body)
    assert response.status_code == (201 if valid else 400), response.text


UNMAPPED = [
    pytest.param({"mode": "provided"}, True, id="provided"),
    pytest.param({"mode": "fixed", "code": "x"}, True, id="fixed"),
    pytest.param({"mode": "other-map", "url": "http://example.org/cm"}, True, id="other-map"),
    pytest.param({"mode": "0"}, False, id="unknown-mode"),
    pytest.param({"mode": "fixed"}, False, id="cmd-2"),
    pytest.param({"mode": "other-map"}, False, id="cmd-3"),
]


@pytest.mark.parametrize(("unmapped", "valid"), UNMAPPED)
def test_an_unmapped_mode_is_stated_as_checked(
    document: dict[str, Any], http: httpx.Client, unmapped: dict[str, Any], valid: bool
) -> None:
    """``ConceptMap.group.unmapped``: its mode's required binding, cmd-2 and cmd-3, in the
    document as the server checks them."""
    element = {"code": "a", "target": [{"code": "b", "equivalence": "equivalent"}]}
    group = {"source": GENDER, "element": [element], "unmapped": unmapped}
    digest = hashlib.sha256(json.dumps(unmapped).encode()).hexdigest()[:16]
    body = {"resourceType": "ConceptMap", "status": "draft", "group": [group]}
    body["url"] = f"http://example.org/fhir/ConceptMap/unmapped-{digest}"
    assert fits(document, {"$ref": "#/components/schemas/ConceptMap"}, body) is valid
    response = http.post("/ConceptMap", json=body)
    assert response.status_code == (201 if valid else 422), response.text
