"""FHIR JSON typing on every body (issue 38, point 3): an element of the wrong JSON type
anywhere in a Parameters (its own elements, an entry's, a value, a part, an inline resource)
or in a resource written by REST is a 400 OperationOutcome naming the element's path, on
every endpoint; the same bodies well typed pass. Over HTTP, against uvicorn on 127.0.0.1."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_support import GENDER_CS, GENDER_VS, TOKEN, assert_outcome, client

from workbench import Workbench

VALUESETS = Path(__file__).resolve().parent.parent / "valuesets"
Body = dict[str, Any]
FEMALE = {"system": GENDER_CS, "code": "female"}
MAP = {
    "resourceType": "ConceptMap",
    "id": "typing",
    "url": "http://example.org/cm/typing",
    "status": "active",
    "group": [
        {
            "source": GENDER_CS,
            "target": "http://example.org/v2-sex",
            "element": [{"code": "male", "target": [{"code": "M", "equivalence": "equal"}]}],
        }
    ],
}


def _params(*entries: Body) -> Body:
    return {"resourceType": "Parameters", "parameter": list(entries)}


#: (id, path, a well-typed body): every operation, at type and instance level
OPERATIONS: list[tuple[str, str, Body]] = [
    (
        "vs-validate-code",
        "/ValueSet/$validate-code",
        _params({"name": "url", "valueUri": GENDER_VS}, {"name": "coding", "valueCoding": FEMALE}),
    ),
    ("vs-expand", "/ValueSet/$expand", _params({"name": "url", "valueUri": GENDER_VS})),
    (
        "vs-instance-expand",
        "/ValueSet/administrative-gender/$expand",
        _params({"name": "count", "valueInteger": 1}),
    ),
    (
        "cs-lookup",
        "/CodeSystem/$lookup",
        _params({"name": "system", "valueUri": GENDER_CS}, {"name": "code", "valueCode": "male"}),
    ),
    (
        "cs-validate-code",
        "/CodeSystem/$validate-code",
        _params({"name": "url", "valueUri": GENDER_CS}, {"name": "code", "valueCode": "male"}),
    ),
    (
        "cs-subsumes",
        "/CodeSystem/$subsumes",
        _params(
            {"name": "system", "valueUri": GENDER_CS},
            {"name": "codeA", "valueCode": "male"},
            {"name": "codeB", "valueCode": "male"},
        ),
    ),
    (
        "cm-translate",
        "/ConceptMap/$translate",
        _params(
            {"name": "url", "valueUri": MAP["url"]},
            {"name": "system", "valueUri": GENDER_CS},
            {"name": "code", "valueCode": "male"},
            {"name": "targetsystem", "valueUri": "http://example.org/v2-sex"},
        ),
    ),
]


def _set(where: Callable[[Body], Body], key: str, value: Any) -> Callable[[Body], None]:
    def change(body: Body) -> None:
        where(body)[key] = value

    return change


def _add(entry: Body) -> Callable[[Body], None]:
    return lambda body: body["parameter"].append(entry)


def _top(body: Body) -> Body:
    return body


def _first(body: Body) -> Body:
    first: Body = body["parameter"][0]
    return first


#: (id, change to a well-typed Parameters, the path and problem the answer names)
PARAMETERS_ERRORS: list[tuple[str, Callable[[Body], None], str]] = [
    ("id-object", _set(_top, "id", {"x": 1}), r"Parameters\.id must be a string .*an object"),
    ("language-number", _set(_top, "language", 5), r"Parameters\.language must be a code"),
    ("meta-string", _set(_top, "meta", "m"), r"Parameters\.meta must be a Meta .*a string"),
    (
        "meta-versionId-number",
        _set(_top, "meta", {"versionId": 1}),
        r"Parameters\.meta\.versionId must be an id \(a JSON string\), not a number",
    ),
    (
        "meta-tag-object",
        _set(_top, "meta", {"tag": {"code": "x"}}),
        r"Parameters\.meta\.tag must be an array",
    ),
    (
        "meta-tag-code-boolean",
        _set(_top, "meta", {"tag": [{"code": True}]}),
        r"Parameters\.meta\.tag\[0\]\.code must be a code .*a boolean",
    ),
    (
        "implicitRules-array",
        _set(_top, "implicitRules", ["http://x"]),
        r"Parameters\.implicitRules must be a single value",
    ),
    (
        "entry-id-number",
        _set(_first, "id", 3),
        r"Parameters\.parameter\[0\]\.id must be a string .*a number",
    ),
    (
        "entry-extension-url-number",
        _set(_first, "extension", [{"url": 1, "valueString": "x"}]),
        r"Parameters\.parameter\[0\]\.extension\[0\]\.url must be a uri",
    ),
    (
        "entry-extension-value-array",
        _set(_first, "extension", [{"url": "http://x/e", "valueBoolean": [True]}]),
        r"Parameters\.parameter\[0\]\.extension\[0\]\.valueBoolean must be a single value",
    ),
    (
        "entry-modifierExtension-string",
        _set(_first, "modifierExtension", "x"),
        r"Parameters\.parameter\[0\]\.modifierExtension must be an array",
    ),
    (
        "unknown-boolean-string",
        _add({"name": "x-unknown", "valueBoolean": "yes"}),
        r"Parameters\.parameter\[\d+\]\.valueBoolean must be a boolean .*a string",
    ),
    (
        "unknown-coding-code-number",
        _add({"name": "x-unknown", "valueCoding": {"code": 5}}),
        r"Parameters\.parameter\[\d+\]\.valueCoding\.code must be a code .*a number",
    ),
    (
        "unknown-part-object",
        _add({"name": "x-unknown", "part": {"name": "a"}}),
        r"Parameters\.parameter\[\d+\]\.part must be an array",
    ),
    (
        "unknown-part-value-number",
        _add({"name": "x-unknown", "part": [{"name": "a", "valueString": 1}]}),
        r"Parameters\.parameter\[\d+\]\.part\[0\]\.valueString must be a string",
    ),
    (
        "unknown-resource-valueset",
        _add({"name": "x-unknown", "resource": {"resourceType": "ValueSet", "url": ["u"]}}),
        r"Parameters\.parameter\[\d+\]\.resource\.url must be a single value",
    ),
    (
        "general-format-number",
        _add({"name": "_format", "valueString": 1}),
        r"Parameters\.parameter\[\d+\]\.valueString must be a string",
    ),
]


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    wb = Workbench()
    wb.load(VALUESETS, progress=False)
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as session:
        created = session.put(f"/ConceptMap/{MAP['id']}", json=MAP)
        assert created.status_code == 201, created.text
        yield session


@pytest.mark.parametrize(("op_id", "path", "body"), OPERATIONS, ids=[o[0] for o in OPERATIONS])
def test_a_well_typed_operation_body_passes(
    http: httpx.Client, op_id: str, path: str, body: Body
) -> None:
    response = http.post(path, json=body)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(("op_id", "path", "body"), OPERATIONS, ids=[o[0] for o in OPERATIONS])
@pytest.mark.parametrize(
    ("case", "change", "text"), PARAMETERS_ERRORS, ids=[c[0] for c in PARAMETERS_ERRORS]
)
def test_a_wrong_json_type_in_a_parameters_is_a_400_naming_its_path(
    http: httpx.Client,
    op_id: str,
    path: str,
    body: Body,
    case: str,
    change: Callable[[Body], None],
    text: str,
) -> None:
    sent = copy.deepcopy(body)
    change(sent)
    # lenient (the default) and strict handling alike
    for headers in ({}, {"Prefer": "handling=strict"}):
        response = http.post(path, json=sent, headers=headers)
        body_out = assert_outcome(response, 400, "structure", text)
        assert "/work" not in response.text and "/tmp" not in response.text
        assert body_out["issue"][0]["expression"][0].startswith("Parameters")


VS = {
    "resourceType": "ValueSet",
    "url": "http://example.org/vs/typing",
    "status": "active",
    "compose": {"include": [{"system": GENDER_CS, "concept": [{"code": "male"}]}]},
}
CS = {
    "resourceType": "CodeSystem",
    "url": "http://example.org/cs/typing",
    "status": "active",
    "content": "complete",
    "concept": [{"code": "a", "display": "A"}],
}


def _put(rtype: str, rid: str) -> Callable[[httpx.Client, Body], httpx.Response]:
    return lambda http, body: http.put(f"/{rtype}/{rid}", json={"id": rid, **body})


def _create(
    rtype: str, conditional: bool = False
) -> Callable[[httpx.Client, Body], httpx.Response]:
    def send(http: httpx.Client, body: Body) -> httpx.Response:
        headers = {"If-None-Exist": f"url={body.get('url')}"} if conditional else {}
        return http.post(f"/{rtype}", json=body, headers=headers)

    return send


def _as_param(
    path: str, name: str, *, by_url: bool = False, extra: tuple[Body, ...] = ()
) -> Callable[[httpx.Client, Body], httpx.Response]:
    def send(http: httpx.Client, body: Body) -> httpx.Response:
        url = [{"name": "url", "valueUri": body.get("url")}] if by_url else []
        return http.post(path, json=_params({"name": name, "resource": body}, *url, *extra))

    return send


def _as_body(path: str) -> Callable[[httpx.Client, Body], httpx.Response]:
    return lambda http, body: http.post(path, json=body)


def _changed(resource: Body, where: tuple[str | int, ...], value: Any) -> Body:
    out = copy.deepcopy(resource)
    target: Any = out
    for step in where[:-1]:
        target = target[step]
    target[where[-1]] = value
    return out


#: (id, how the resource is sent, its well-typed form, where a wrong type goes, the value,
#: the path the answer names: the resource type, or the operation's parameter name, first)
SENDERS: list[tuple[str, Callable[[httpx.Client, Body], httpx.Response], Body, str]] = [
    ("vs-put", _put("ValueSet", "typing"), VS, "ValueSet"),
    ("vs-create", _create("ValueSet"), VS, "ValueSet"),
    ("vs-conditional-create", _create("ValueSet", conditional=True), VS, "ValueSet"),
    ("vs-expand-body", _as_body("/ValueSet/$expand"), VS, "ValueSet"),
    ("vs-expand-valueSet", _as_param("/ValueSet/$expand", "valueSet"), VS, "valueSet"),
    (
        "vs-tx-resource",
        _as_param("/ValueSet/$expand", "tx-resource", by_url=True),
        VS,
        "tx-resource",
    ),
    ("cs-put", _put("CodeSystem", "typing"), CS, "CodeSystem"),
    ("cs-conditional-create", _create("CodeSystem", conditional=True), CS, "CodeSystem"),
    (
        "cs-validate-tx-resource",
        _as_param(
            "/CodeSystem/$validate-code",
            "tx-resource",
            by_url=True,
            extra=({"name": "code", "valueCode": "a"},),
        ),
        CS,
        "tx-resource",
    ),
    ("cm-put", _put("ConceptMap", "typing"), MAP, "ConceptMap"),
    ("cm-create", _create("ConceptMap"), MAP, "ConceptMap"),
]
#: (id, resource type, where, wrong value, the path and problem after the resource's name)
RESOURCE_ERRORS: list[tuple[str, str, tuple[str | int, ...], Any, str]] = [
    ("id-object", "*", ("id",), {"x": 1}, r"\.id must be a string .*an object"),
    ("meta-tag-object", "*", ("meta",), {"tag": {}}, r"\.meta\.tag must be an array"),
    ("extension-object", "*", ("extension",), {}, r"\.extension must be an array"),
    ("experimental-string", "*", ("experimental",), "true", r"\.experimental must be a boolean"),
    ("url-array", "*", ("url",), ["u"], r"\.url must be a single value"),
    (
        "include-object",
        "ValueSet",
        ("compose", "include"),
        {"system": GENDER_CS},
        r"\.compose\.include must be an array",
    ),
    (
        "include-concept-code-number",
        "ValueSet",
        ("compose", "include", 0, "concept", 0, "code"),
        7,
        r"\.compose\.include\[0\]\.concept\[0\]\.code must be a code .*a number",
    ),
    ("concept-object", "CodeSystem", ("concept",), {"code": "a"}, r"\.concept must be an array"),
    ("count-string", "CodeSystem", ("count",), "1", r"\.count must be an unsignedInt"),
    (
        "concept-display-array",
        "CodeSystem",
        ("concept", 0, "display"),
        ["A"],
        r"\.concept\[0\]\.display must be a single value",
    ),
    (
        "target-equivalence-number",
        "ConceptMap",
        ("group", 0, "element", 0, "target", 0, "equivalence"),
        1,
        r"\.group\[0\]\.element\[0\]\.target\[0\]\.equivalence must be a code",
    ),
]
RESOURCE_CASES = [
    pytest.param(send, resource, where, value, name + text, id=f"{case}-{sid}")
    for case, rtype, where, value, text in RESOURCE_ERRORS
    for sid, send, resource, name in SENDERS
    if rtype in ("*", resource["resourceType"])
]


@pytest.mark.parametrize(("sid", "send", "resource", "name"), SENDERS, ids=[s[0] for s in SENDERS])
def test_a_well_typed_resource_passes(
    http: httpx.Client,
    sid: str,
    send: Callable[[httpx.Client, Body], httpx.Response],
    resource: Body,
    name: str,
) -> None:
    response = send(http, {**resource, "url": f"{resource['url']}/{sid}"})  # (its own url)
    assert response.status_code in (200, 201), response.text


@pytest.mark.parametrize(("send", "resource", "where", "value", "text"), RESOURCE_CASES)
def test_a_wrong_json_type_in_a_resource_is_a_400_naming_its_path(
    http: httpx.Client,
    send: Callable[[httpx.Client, Body], httpx.Response],
    resource: Body,
    where: tuple[str | int, ...],
    value: Any,
    text: str,
) -> None:
    response = send(http, _changed(resource, where, value))
    assert_outcome(response, 400, "structure", text)


#: (id, path, a body whose known parameter's value has the wrong JSON type, what the 400
#: names): the values the definition types, checked by the codec as before
VALUE_ERRORS = [
    (
        "coding-code-number",
        "/ValueSet/$validate-code",
        _params(
            {"name": "url", "valueUri": GENDER_VS}, {"name": "coding", "valueCoding": {"code": 5}}
        ),
        r"coding\.code must be a code \(a JSON string\), not a number",
    ),
    (
        "codeableConcept-coding-object",
        "/ValueSet/$validate-code",
        _params(
            {"name": "url", "valueUri": GENDER_VS},
            {"name": "codeableConcept", "valueCodeableConcept": {"coding": FEMALE}},
        ),
        r"codeableConcept\.coding must be an array",
    ),
    (
        "boolean-string",
        "/CodeSystem/$validate-code",
        _params(
            {"name": "url", "valueUri": GENDER_CS},
            {"name": "code", "valueCode": "male"},
            {"name": "abstract", "valueBoolean": "true"},
        ),
        r"'abstract' must be a JSON boolean",
    ),
    (
        "integer-string",
        "/ValueSet/$expand",
        _params({"name": "url", "valueUri": GENDER_VS}, {"name": "count", "valueInteger": "1"}),
        r"'count' must be a JSON integer",
    ),
    (
        "code-number",
        "/CodeSystem/$lookup",
        _params({"name": "system", "valueUri": GENDER_CS}, {"name": "code", "valueCode": 1}),
        r"'code' must be a JSON string",
    ),
    (
        "dependency-part-concept-string",
        "/ConceptMap/$translate",
        _params(
            {"name": "url", "valueUri": MAP["url"]},
            {"name": "system", "valueUri": GENDER_CS},
            {"name": "code", "valueCode": "male"},
            {
                "name": "dependency",
                "part": [{"name": "concept", "valueCodeableConcept": {"text": ["x"]}}],
            },
        ),
        r"dependency\.concept\.text must be a single value",
    ),
    (
        "dependency-part-extension-object",
        "/ConceptMap/$translate",
        _params(
            {"name": "url", "valueUri": MAP["url"]},
            {"name": "system", "valueUri": GENDER_CS},
            {"name": "code", "valueCode": "male"},
            {
                "name": "dependency",
                "part": [{"name": "element", "valueUri": "http://x", "extension": {}}],
            },
        ),
        r"Parameters\.parameter\[3\]\.part\[0\]\.extension must be an array",
    ),
]


@pytest.mark.parametrize(
    ("case", "path", "body", "text"), VALUE_ERRORS, ids=[v[0] for v in VALUE_ERRORS]
)
def test_a_wrong_json_type_in_a_known_value_is_a_400_naming_it(
    http: httpx.Client, case: str, path: str, body: Body, text: str
) -> None:
    response = http.post(path, json=body)
    assert response.status_code == 400, response.text
    issue = response.json()["issue"][0]
    assert issue["code"] in ("structure", "invalid"), issue
    assert re.search(text, issue["details"]["text"]), issue
