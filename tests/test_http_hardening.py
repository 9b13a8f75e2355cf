"""Every malformed input is a 4xx OperationOutcome (issue 13, point 1), over real HTTP on
127.0.0.1: bodies that are not UTF-8 or hold lone surrogates, deep nesting, huge numbers or
NaN; integers out of range and non-ASCII digits; wrong JSON types inside Codings,
CodeableConcepts and inline resources; resources that break the R4 structure; ids with a
trailing newline; requests the HTTP layer itself cannot parse; parent cycles. A rejected write
changes nothing, and an error never drops the keep-alive connection.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_support import (
    DEMO_CS,
    FHIR_JSON,
    GENDER_CS,
    GENDER_VS,
    HOST,
    TOKEN,
    assert_outcome,
    client,
    params,
)

from workbench import Workbench
from workbench.server.embedded import ServerHandle

VALUESETS = Path(__file__).resolve().parent.parent / "valuesets"
VS_URL = "http://example.org/fhir/ValueSet/hardening"
CS_URL = "http://example.org/fhir/CodeSystem/hardening"


def valueset(**changes: Any) -> dict[str, Any]:
    vs: dict[str, Any] = {
        "resourceType": "ValueSet",
        "url": VS_URL,
        "status": "draft",
        "compose": {"include": [{"system": DEMO_CS}]},
    }
    vs.update(changes)
    return vs


def codesystem(**changes: Any) -> dict[str, Any]:
    cs: dict[str, Any] = {
        "resourceType": "CodeSystem",
        "url": CS_URL,
        "status": "draft",
        "content": "complete",
        "property": [{"code": "parent", "type": "code"}, {"code": "rank", "type": "Coding"}],
        "concept": [{"code": "a", "display": "Alpha"}, {"code": "b", "display": "Beta"}],
    }
    cs.update(changes)
    return cs


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    """A module-private Workbench and server: rejected writes must leave it unchanged."""
    wb = Workbench()
    wb.load(VALUESETS, progress=False)
    with wb.serve(port=0, token=TOKEN) as handle:
        yield handle


@pytest.fixture
def http(server: ServerHandle) -> Iterator[httpx.Client]:
    with client(server.url) as c:
        yield c


@dataclass(frozen=True)
class Bad:
    """A request that must get a 4xx OperationOutcome with this issue code and text."""

    method: str
    path: str
    status: int
    code: str
    text: str
    raw: bytes | None = None
    body: Any = None
    query: dict[str, str] | None = None


def raw(rid: str, data: bytes, *, path: str = "/ValueSet", method: str = "POST") -> Any:
    return {"method": method, "path": path, "raw": data}


BODY_ERRORS = [
    pytest.param(b'{"resourceType": "ValueSet", "name": "\xff"}', "not valid UTF-8", id="non-utf8"),
    pytest.param(json.dumps(valueset()).encode("utf-16"), "not valid UTF-8", id="utf16"),
    pytest.param(
        b'{"resourceType": "ValueSet", "status": "draft", "name": "\\ud800"}',
        "surrogate",
        id="lone-surrogate",
    ),
    pytest.param(
        b'{"resourceType": "ValueSet", "status": "draft", "extension": '
        + b"[" * 5000
        + b"]" * 5000
        + b"}",
        "depth",
        id="nesting-5000",
    ),
    pytest.param(
        b'{"resourceType": "ValueSet", "status": "draft", "x": ' + b"[" * 150 + b"]" * 150 + b"}",
        "nest more than 100 levels",
        id="nesting-150",
    ),
    pytest.param(
        b'{"resourceType": "ValueSet", "status": "draft", "x": ' + b"9" * 5000 + b"}",
        "infinity",
        id="huge-integer",
    ),
    pytest.param(
        b'{"resourceType": "ValueSet", "status": "draft", "x": 1e400}',
        "infinity",
        id="huge-exponent",
    ),
    pytest.param(
        b'{"resourceType": "ValueSet", "status": "draft", "x": NaN}', "expected", id="nan"
    ),
    pytest.param(
        b'{"resourceType": "ValueSet", "status": "draft", "x": Infinity}',
        "expected",
        id="infinity",
    ),
]


@pytest.mark.parametrize(("data", "text"), BODY_ERRORS)
@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_undecodable_bodies_are_400(
    http: httpx.Client, server: ServerHandle, method: str, data: bytes, text: str
) -> None:
    path = "/ValueSet" if method == "POST" else "/ValueSet/hardening-body"
    response = http.request(method, path, content=data, headers={"Content-Type": FHIR_JSON})
    assert_outcome(response, 400, "structure", "^The body is not valid JSON: .*" + text)
    assert http.get("/ValueSet/hardening-body").status_code == 404
    assert http.get("/ValueSet", params={"url": VS_URL}).json()["total"] == 0
    # the connection is still usable after the error
    assert http.get("/metadata").status_code == 200


def test_operation_bodies_are_decoded_strictly(http: httpx.Client) -> None:
    body = (
        b'{"resourceType": "Parameters", "parameter": [{"name": "code", "valueCode": "\\udfff"}]}'
    )
    response = http.post(
        "/ValueSet/$validate-code", content=body, headers={"Content-Type": FHIR_JSON}
    )
    assert_outcome(response, 400, "structure", "surrogate")


def test_utf8_bom_is_accepted(http: httpx.Client) -> None:
    body = b"\xef\xbb\xbf" + json.dumps(valueset(url=VS_URL + "-bom")).encode()
    response = http.post("/ValueSet", content=body, headers={"Content-Type": FHIR_JSON})
    assert response.status_code == 201, response.text
    assert http.delete(f"/ValueSet/{response.json()['id']}").status_code == 204


def test_nan_is_never_stored_as_null(http: httpx.Client) -> None:
    body = json.dumps(valueset(extension=[{"url": "http://x/e", "valueDecimal": float("nan")}]))
    assert "NaN" in body
    response = http.post("/ValueSet", content=body.encode(), headers={"Content-Type": FHIR_JSON})
    assert_outcome(response, 400, "structure", "not valid JSON")
    assert http.get("/ValueSet", params={"url": VS_URL}).json()["total"] == 0


def test_big_decimals_are_kept_digit_for_digit(http: httpx.Client) -> None:
    big = "123456789012345678901234567890"
    resource = valueset(url=VS_URL + "-big", extension=[{"url": "http://x/e", "valueDecimal": 0}])
    text = json.dumps(resource).replace('"valueDecimal": 0', f'"valueDecimal": {big}')
    response = http.post("/ValueSet", content=text.encode(), headers={"Content-Type": FHIR_JSON})
    assert response.status_code == 201, response.text
    assert '"valueDecimal":123456789012345678901234567890' in response.text
    assert http.delete(f"/ValueSet/{response.json()['id']}").status_code == 204


# --- query strings --------------------------------------------------------------------

TEN_TO_20 = "1" + "0" * 20
QUERY_ERRORS = [
    pytest.param("/ValueSet/$expand", {"url": GENDER_VS, "count": TEN_TO_20}, "32-bit", id="count"),
    pytest.param(
        "/ValueSet/$expand", {"url": GENDER_VS, "offset": TEN_TO_20}, "32-bit", id="offset"
    ),
    pytest.param(
        "/ValueSet/$expand", {"url": GENDER_VS, "count": "2147483648"}, "32-bit", id="count-2^31"
    ),
    pytest.param(
        "/ValueSet/$expand", {"url": GENDER_VS, "count": "9" * 5000}, "32-bit", id="count-5000"
    ),
    pytest.param("/ValueSet/$expand", {"url": GENDER_VS, "count": "²"}, "integer", id="count-²"),
    pytest.param("/ValueSet/$expand", {"url": GENDER_VS, "count": "٣"}, "integer", id="count-٣"),
    pytest.param("/ValueSet", {"_count": "²"}, "_count must be a whole number", id="_count-²"),
    pytest.param("/ValueSet", {"_count": "٣"}, "_count must be a whole number", id="_count-٣"),
    pytest.param("/ValueSet", {"_count": TEN_TO_20}, "_count must be a whole number", id="_count"),
]


@pytest.mark.parametrize(("path", "query", "text"), QUERY_ERRORS)
def test_bad_numbers_in_queries_are_400(
    http: httpx.Client, path: str, query: dict[str, str], text: str
) -> None:
    assert_outcome(http.get(path, params=query), 400, "invalid", text)


def test_count_at_the_32_bit_limit_works(http: httpx.Client) -> None:
    response = http.get("/ValueSet/$expand", params={"url": GENDER_VS, "offset": "2147483647"})
    assert response.status_code == 200, response.text
    assert "contains" not in response.json()["expansion"]


# --- complex types inside operation inputs ----------------------------------------------

CODING = {"system": GENDER_CS, "code": "male"}
URL_P = ("url", {"valueUri": GENDER_VS})
INPUT_ERRORS = [
    pytest.param(
        "/ValueSet/$validate-code",
        params(URL_P, ("coding", {"valueCoding": {**CODING, "code": 5}})),
        r"coding.code must be a code \(a JSON string\), not a number",
        id="coding-code-number",
    ),
    pytest.param(
        "/ValueSet/$validate-code",
        params(URL_P, ("coding", {"valueCoding": {**CODING, "system": ["x"]}})),
        "coding.system must be a single value, not an array",
        id="coding-system-array",
    ),
    pytest.param(
        "/ValueSet/$validate-code",
        params(URL_P, ("coding", {"valueCoding": {**CODING, "userSelected": "yes"}})),
        "coding.userSelected must be a boolean",
        id="coding-userSelected-string",
    ),
    pytest.param(
        "/ValueSet/$validate-code",
        params(URL_P, ("codeableConcept", {"valueCodeableConcept": {"coding": CODING}})),
        "codeableConcept.coding must be an array",
        id="cc-coding-object",
    ),
    pytest.param(
        "/ValueSet/$validate-code",
        params(URL_P, ("codeableConcept", {"valueCodeableConcept": {"coding": ["male"]}})),
        r"codeableConcept.coding\[0\] must be a Coding \(a JSON object\), not a string",
        id="cc-coding-string",
    ),
    pytest.param(
        "/ValueSet/$validate-code",
        params(URL_P, ("codeableConcept", {"valueCodeableConcept": {"coding": [None]}})),
        r"codeableConcept.coding\[0\] must be a Coding",
        id="cc-coding-null",
    ),
    pytest.param(
        "/ValueSet/$validate-code",
        params(
            ("valueSet", {"resource": valueset(compose={"include": [{"system": 1}]})}),
            ("code", {"valueCode": "male"}),
            ("system", {"valueUri": GENDER_CS}),
        ),
        r"valueSet.compose.include\[0\].system must be a uri",
        id="inline-vs-system-number",
    ),
    pytest.param(
        "/ValueSet/$expand",
        params(
            (
                "valueSet",
                {
                    "resource": valueset(
                        compose={"include": [{"system": DEMO_CS, "filter": [{"op": []}]}]}
                    )
                },
            )
        ),
        r"valueSet.compose.include\[0\].filter\[0\].op must be a single value",
        id="inline-vs-filter-op-array",
    ),
    pytest.param(
        "/ValueSet/$expand",
        valueset(compose={"include": [{"system": DEMO_CS, "concept": [{"code": {}}]}]}),
        r"ValueSet.compose.include\[0\].concept\[0\].code must be a code",
        id="bare-valueset-body",
    ),
    pytest.param(
        "/CodeSystem/$lookup",
        params(("coding", {"valueCoding": {**CODING, "code": 5}})),
        "coding.code must be a code",
        id="lookup-coding",
    ),
    pytest.param(
        "/ConceptMap/$translate",
        params(("coding", {"valueCoding": {**CODING, "code": []}})),
        "coding.code must be a single value",
        id="translate-coding",
    ),
    pytest.param(
        "/CodeSystem/$subsumes",
        params(
            ("codingA", {"valueCoding": {**CODING, "version": 1}}),
            ("codingB", {"valueCoding": CODING}),
        ),
        "codingA.version must be a string",
        id="subsumes-coding",
    ),
    pytest.param(
        "/ValueSet/$validate-code",
        params(
            URL_P,
            ("coding", {"valueCoding": CODING}),
            ("tx-resource", {"resource": codesystem(concept=[{"code": "a", "designation": {}}])}),
        ),
        r"tx-resource.concept\[0\].designation must be an array",
        id="tx-resource",
    ),
]


@pytest.mark.parametrize(("path", "body", "text"), INPUT_ERRORS)
def test_wrong_types_inside_inputs_are_400(
    http: httpx.Client, path: str, body: Any, text: str
) -> None:
    assert_outcome(http.post(path, json=body), 400, "structure", text)


# --- structural validation of stored resources ------------------------------------------

STRUCTURE_ERRORS = [
    pytest.param(
        "CodeSystem",
        codesystem(
            concept=[{"code": "a", "property": [{"code": "rank", "valueCoding": 5}]}],
        ),
        r"CodeSystem.concept\[0\].property\[0\].valueCoding must be a Coding \(a JSON object\), "
        "not a number",
        "CodeSystem.concept[0].property[0].valueCoding",
        id="property-value-number",
    ),
    pytest.param(
        "CodeSystem",
        codesystem(concept=[{"code": "a", "property": [{"code": "rank"}]}]),
        r"CodeSystem.concept\[0\].property\[0\].value\[x\] is required",
        "CodeSystem.concept[0].property[0].value[x]",
        id="property-without-value",
    ),
    pytest.param(
        "CodeSystem",
        codesystem(
            concept=[
                {"code": "a", "property": [{"code": "rank", "valueCode": "x", "valueInteger": 1}]}
            ]
        ),
        "has valueCode and valueInteger",
        "CodeSystem.concept[0].property[0]",
        id="two-values",
    ),
    pytest.param(
        "CodeSystem",
        codesystem(content=None),
        r"CodeSystem.content must be a code \(a JSON string\), not null",
        "CodeSystem.content",
        id="content-null",
    ),
    pytest.param(  # a missing status is stored with a warning (issue 22, e2)
        "CodeSystem",
        {k: v for k, v in codesystem().items() if k != "content"},
        "CodeSystem.content is required",
        "CodeSystem.content",
        id="content-missing",
    ),
    pytest.param(
        "CodeSystem",
        codesystem(concept=[{"code": "a", "concept": {"code": "b"}}]),
        r"CodeSystem.concept\[0\].concept must be an array",
        "CodeSystem.concept[0].concept",
        id="nested-concept-object",
    ),
    pytest.param(
        "CodeSystem",
        codesystem(concept=[{"code": "a b  c"}]),
        r"CodeSystem.concept\[0\].code: 'a b  c' is not a valid code",
        "CodeSystem.concept[0].code",
        id="code-double-space",
    ),
    pytest.param(
        "CodeSystem",
        codesystem(count=-1),
        "CodeSystem.count must be an unsignedInt from 0",
        "CodeSystem.count",
        id="count-negative",
    ),
    pytest.param(
        "ValueSet",
        valueset(
            compose={
                "include": [
                    {"system": DEMO_CS, "concept": [{"code": "x", "designation": [{"value": 1}]}]}
                ]
            }
        ),
        r"ValueSet.compose.include\[0\].concept\[0\].designation\[0\].value must be a string",
        "ValueSet.compose.include[0].concept[0].designation[0].value",
        id="designation-value-number",
    ),
    pytest.param(
        "ValueSet",
        valueset(date="yesterday"),
        "'yesterday' is not a valid dateTime",
        "ValueSet.date",
        id="date",
    ),
    pytest.param(
        "ValueSet",
        valueset(experimental="true"),
        "ValueSet.experimental must be a boolean",
        "ValueSet.experimental",
        id="boolean-string",
    ),
    pytest.param(
        "ValueSet",
        valueset(contained=[{"resourceType": "ValueSet", "status": 1}]),
        r"ValueSet.contained\[0\].status must be a code",
        "ValueSet.contained[0].status",
        id="contained-valueset",
    ),
    pytest.param(
        "ValueSet",
        valueset(extension=[{"url": "http://x/e", "valueCoding": {"code": 1}}]),
        r"ValueSet.extension\[0\].valueCoding.code must be a code",
        "ValueSet.extension[0].valueCoding.code",
        id="extension-value",
    ),
    pytest.param(
        "ValueSet",
        valueset(_status={"extension": {"url": "http://x/e"}}),
        "ValueSet._status.extension must be an array",
        "ValueSet._status.extension",
        id="primitive-extension",
    ),
    pytest.param(
        "ConceptMap",
        {
            "resourceType": "ConceptMap",
            "status": "draft",
            "group": [{"element": [{"code": "a", "target": [{"code": "b", "equivalence": 3}]}]}],
        },
        r"ConceptMap.group\[0\].element\[0\].target\[0\].equivalence must be a code",
        "ConceptMap.group[0].element[0].target[0].equivalence",
        id="conceptmap-equivalence",
    ),
]


@pytest.mark.parametrize(("rtype", "resource", "text", "expression"), STRUCTURE_ERRORS)
@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_resources_breaking_the_r4_structure_are_rejected(
    http: httpx.Client,
    method: str,
    rtype: str,
    resource: dict[str, Any],
    text: str,
    expression: str,
) -> None:
    path = f"/{rtype}" if method == "POST" else f"/{rtype}/hardening-structure"
    body = resource if method == "POST" else {**resource, "id": "hardening-structure"}
    response = http.request(method, path, json=body, headers={"Content-Type": FHIR_JSON})
    outcome = assert_outcome(response, 400, "structure", text)
    assert outcome["issue"][0]["expression"] == [expression]
    assert http.get(f"/{rtype}/hardening-structure").status_code == 404
    if resource.get("url"):
        assert http.get(f"/{rtype}", params={"url": resource["url"]}).json()["total"] == 0


def test_bad_property_value_never_reaches_operations(http: httpx.Client) -> None:
    """The defect: a concept property that is a number was stored, then $lookup gave a 500."""
    bad = codesystem(
        id="hardening-prop",
        concept=[{"code": "a", "property": [{"code": "rank", "valueCoding": 5}]}],
    )
    assert http.put("/CodeSystem/hardening-prop", json=bad).status_code == 400
    query = {"system": CS_URL, "code": "a", "property": "rank"}
    assert_outcome(http.get("/CodeSystem/$lookup", params=query), 404, "not-found", "not found")


# --- ids, the HTTP layer, keep-alive ----------------------------------------------------


@pytest.mark.parametrize("rid", ["abc%0A", "abc%0D%0A", "abc%00", "a%20b", "%C3%A9"])
def test_ids_with_control_characters_are_400(http: httpx.Client, rid: str) -> None:
    from urllib.parse import unquote

    body = valueset(id=unquote(rid), url=VS_URL + "-id")
    response = http.put(f"/ValueSet/{rid}", json=body)
    assert_outcome(response, 400, "invalid", "is not a valid FHIR id")
    assert http.get("/ValueSet", params={"url": VS_URL + "-id"}).json()["total"] == 0


RAW_REQUESTS = [
    pytest.param(b"GARBAGE\r\n\r\n", id="no-request-line"),
    pytest.param(b"GET /fhir/R4/meta data HTTP/1.1\r\nHost: x\r\n\r\n", id="space-in-target"),
    pytest.param(
        b"GET /fhir/R4/metadata HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
        id="bad-content-length",
    ),
    pytest.param(
        b"POST /fhir/R4/ValueSet HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n",
        id="length-and-chunked",
    ),
    pytest.param(b"GET /fhir/R4/metadata HTTP/1.1\r\nHo st: x\r\n\r\n", id="bad-header-name"),
]


@pytest.mark.parametrize("data", RAW_REQUESTS)
def test_requests_the_http_layer_rejects_get_an_outcome(server: ServerHandle, data: bytes) -> None:
    port = int(server.url.split(":")[2].split("/")[0])
    with socket.create_connection((HOST, port), timeout=10) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), received
    assert b"content-type: application/fhir+json" in head.lower()
    outcome = json.loads(body)
    assert outcome["resourceType"] == "OperationOutcome"
    assert outcome["issue"][0]["code"] == "structure"
    assert outcome["issue"][0]["details"]["text"].startswith("The HTTP request could not be parsed")


WEBSOCKET = (
    b"GET /fhir/R4/nowhere HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
)


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param(
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n",
            id="full",
        ),
        pytest.param(b"", id="no-key"),
    ],
)
def test_websocket_upgrades_are_answered_as_http(server: ServerHandle, extra: bytes) -> None:
    """The WebSocket library used to answer these in plain text (403, or 400 "Failed to open
    a WebSocket connection"); the server speaks HTTP only, so they get the FHIR answer."""
    port = int(server.url.split(":")[2].split("/")[0])
    with socket.create_connection((HOST, port), timeout=10) as sock:
        sock.sendall(
            WEBSOCKET + b"Authorization: Bearer " + TOKEN.encode() + b"\r\n" + extra + b"\r\n"
        )
        received = sock.recv(65536)
        head, _, body = received.partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        while len(body) < length:
            body += sock.recv(65536)
    assert head.startswith(b"HTTP/1.1 404 "), head
    assert b"content-type: application/fhir+json" in head.lower()
    assert json.loads(body)["resourceType"] == "OperationOutcome"


def test_unexpected_error_keeps_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 500 used to drop the keep-alive connection; now it is an answer like any other."""
    wb = Workbench()
    wb.load(VALUESETS, progress=False)

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(wb.service, "validate", explode)  # what the server calls
    ports = []
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as http:
        query = {"url": GENDER_VS, "system": GENDER_CS, "code": "male"}
        for _ in range(3):
            response = http.get("/ValueSet/$validate-code", params=query, extensions={})
            assert_outcome(response, 500, "exception", "Internal server error")
            ports.append(response.extensions["network_stream"].get_extra_info("client_addr"))
        assert http.get("/metadata").status_code == 200
    assert len(set(ports)) == 1, ports


# --- parent cycles ----------------------------------------------------------------------

CYCLE = codesystem(
    id="hardening-cycle",
    url=CS_URL + "-cycle",
    concept=[
        {"code": "a", "property": [{"code": "parent", "valueCode": "b"}]},
        {"code": "b", "property": [{"code": "parent", "valueCode": "c"}]},
        {"code": "c", "property": [{"code": "parent", "valueCode": "a"}]},
    ],
)


def test_parent_cycle_is_rejected_on_write(http: httpx.Client) -> None:
    response = http.put("/CodeSystem/hardening-cycle", json=CYCLE)
    assert_outcome(response, 422, "invariant", "hierarchy has a cycle: ")
    assert http.get("/CodeSystem/hardening-cycle").status_code == 404


def test_parent_cycle_loaded_in_python_never_subsumes_both_ways() -> None:
    wb = Workbench()
    wb.load(CYCLE)
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as http:
        for a, b in (("a", "b"), ("b", "a")):
            query = {"system": CS_URL + "-cycle", "codeA": a, "codeB": b}
            response = http.get("/CodeSystem/$subsumes", params=query)
            assert_outcome(response, 422, "invariant", "cycle")


INLINE_INCLUDES = [
    pytest.param({}, 422, "invariant", "breaks vsd-1", id="empty-include"),
    pytest.param({"valueSet": []}, 422, "invariant", "breaks vsd-1", id="no-import"),
    pytest.param({"concept": [{"code": "a"}]}, 422, "invariant", "breaks vsd-1", id="no-system"),
    pytest.param(
        {"system": GENDER_CS, "filter": [{}]},
        400,
        "structure",
        r"valueSet.compose.include\[0\].filter\[0\].op is required",
        id="filter-without-op",
    ),
    pytest.param(
        {"system": GENDER_CS, "concept": [{}]},
        400,
        "structure",
        r"valueSet.compose.include\[0\].concept\[0\].code is required",
        id="concept-without-code",
    ),
]


@pytest.mark.parametrize(("include", "status", "code", "text"), INLINE_INCLUDES)
@pytest.mark.parametrize("path", ["/ValueSet/$expand", "/ValueSet/$validate-code"])
def test_inline_value_sets_keep_the_invariants(
    http: httpx.Client, path: str, include: dict[str, Any], status: int, code: str, text: str
) -> None:
    """Found by the fuzz tests: an inline include with neither system nor valueSet was a 500
    (and would have matched every code)."""
    vs = {"resourceType": "ValueSet", "compose": {"include": [include]}}
    body = params(
        ("valueSet", {"resource": vs}),
        ("code", {"valueCode": "male"}),
        ("system", {"valueUri": GENDER_CS}),
    )
    if path.endswith("$expand"):
        body["parameter"] = body["parameter"][:1]
    assert_outcome(http.post(path, json=body), status, code, text)
