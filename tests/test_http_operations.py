"""The operation framework and the terminology operations over real HTTP (127.0.0.1 only).

Tables: ValueSet/$validate-code and $expand, CodeSystem/$lookup, $validate-code and
$subsumes, each over GET/POST x type/instance x the equivalent input forms, every answer
compared with the same call in Python; the error table (one row per rule and per error);
rules 2, 4 and 6 of the operation framework on synthetic OperationDefinitions; body limits,
unexpected exceptions, the CapabilityStatement and the served OperationDefinitions.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_support import (
    DEMO_ALL,
    DEMO_BOOKABLE,
    DEMO_CS,
    DEMO_REMOTE_LIVE,
    FHIR_JSON,
    GENDER_CS,
    GENDER_VS,
    ORDERABLE_CS,
    TOKEN,
    TX_ISSUE,
    assert_outcome,
    client,
    exactly,
    params,
    serve_app,
    without_volatile,
)

import workbench.server.app as app_module
from workbench import Workbench
from workbench.operations import OPERATIONS, Operation
from workbench.operations.definitions import OperationDef
from workbench.server import create_app
from workbench.server.embedded import ServerHandle
from workbench.terminology.validate.coding import located

ROOT = Path(__file__).resolve().parent.parent
MISSING_VS = "http://example.org/fhir/ValueSet/missing"
DEFINITIONS = ROOT / "workbench/operations/definitions"
LOOKUP = "/CodeSystem/$lookup"
VALIDATE_OUTPUTS = next(
    op.definition.outputs for op in OPERATIONS if op.definition.id == "ValueSet-validate-code"
)


@pytest.fixture(scope="module")
def server(default_wb: Workbench) -> Iterator[ServerHandle]:
    """One server over the shared default Workbench; the tests here do not write."""
    with default_wb.serve(port=0, token=TOKEN) as handle:
        yield handle


@pytest.fixture(scope="module")
def http(server: ServerHandle) -> Iterator[httpx.Client]:
    with client(server.url) as c:
        yield c


def call(
    http: httpx.Client,
    method: str,
    path: str,
    query: dict[str, Any] | list[tuple[str, str]] | None = None,
    body: Any = None,
) -> httpx.Response:
    """GET with a query, or POST a JSON body as application/fhir+json."""
    if method == "GET":
        return http.get(path, params=query)
    content = json.dumps(body).encode()
    return http.post(path, content=content, headers={"Content-Type": FHIR_JSON})


def query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def ok_body(response: httpx.Response, resource_type: str = "Parameters") -> dict[str, Any]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith(FHIR_JSON)
    body: dict[str, Any] = response.json()
    assert body["resourceType"] == resource_type, body
    return body


def values(body: dict[str, Any]) -> dict[str, Any]:
    """Parameters -> {name: the single value[x] value} (for parameters without parts)."""
    out: dict[str, Any] = {}
    for entry in body["parameter"]:
        value = [v for k, v in entry.items() if k.startswith("value") or k == "resource"]
        assert len(value) == 1, entry
        out[entry["name"]] = value[0]
    return out


# --- ValueSet/$validate-code ----------------------------------------------------------


@dataclass(frozen=True)
class VSCase:
    """One validate-code question, its expected answer, and the ValueSet's id and url."""

    vs_id: str
    url: str
    system: str
    code: str
    result: bool
    display_out: str | None
    message: str | None = None  # a fragment the message must contain; None: no message
    display: str | None = None
    abstract: bool | None = None


VS_CASES = {
    "valid": VSCase("administrative-gender", GENDER_VS, GENDER_CS, "female", True, "Female"),
    "unknown-code": VSCase(
        "administrative-gender",
        GENDER_VS,
        GENDER_CS,
        "femalex",
        False,
        None,
        "Unknown code 'femalex'",
    ),
    "right-display": VSCase(
        "administrative-gender", GENDER_VS, GENDER_CS, "male", True, "Male", display="Male"
    ),
    "wrong-display": VSCase(
        "administrative-gender",
        GENDER_VS,
        GENDER_CS,
        "female",
        False,
        "Female",
        "Wrong display 'Woman'",
        display="Woman",
    ),
    "other-system": VSCase(
        "administrative-gender", GENDER_VS, DEMO_CS, "office", False, "Office visit", "not in"
    ),
    # abstract left out: an abstract code the value set includes is taken (issue 22, a2)
    "abstract-taken-by-default": VSCase(
        "workbench-demo-all", DEMO_ALL, DEMO_CS, "in-person", True, "In-person visit"
    ),
    "abstract-false": VSCase(
        "workbench-demo-all",
        DEMO_ALL,
        DEMO_CS,
        "remote",
        False,
        "Remote visit",
        "abstract",
        abstract=False,
    ),
    "abstract-allowed": VSCase(
        "workbench-demo-all",
        DEMO_ALL,
        DEMO_CS,
        "in-person",
        True,
        "In-person visit",
        abstract=True,
    ),
    "excluded": VSCase(
        "workbench-demo-bookable",
        DEMO_BOOKABLE,
        DEMO_CS,
        "walk-in",
        False,
        "Walk-in visit",
        "not in the value set",
    ),
    "included-by-filter": VSCase(
        "workbench-demo-remote-live",
        DEMO_REMOTE_LIVE,
        DEMO_CS,
        "phone-triage",
        True,
        "Nurse telephone triage",
    ),
    "inactive-warns": VSCase(
        "workbench-demo-all", DEMO_ALL, DEMO_CS, "group", True, "Group visit", "inactive"
    ),
}
VS_FORMS = ("GET-code", "POST-valueCode", "POST-valueString", "POST-coding", "POST-cc")
LEVELS = ("type", "instance", "instance+url")


def _coding(case: VSCase) -> dict[str, Any]:
    coding = {"system": case.system, "code": case.code}
    if case.display is not None:
        coding["display"] = case.display
    return coding


def vs_request(case: VSCase, form: str, level: str) -> tuple[str, str, Any, Any]:
    """(method, path, query, body) asking ``case`` in ``form`` at ``level``."""
    path = "/ValueSet/$validate-code"
    if level != "type":
        path = f"/ValueSet/{case.vs_id}/$validate-code"
    with_url = level != "instance"
    if form == "GET-code":
        query: dict[str, str] = {"url": case.url} if with_url else {}
        query |= {"system": case.system, "code": case.code}
        if case.display is not None:
            query["display"] = case.display
        if case.abstract is not None:
            query["abstract"] = query_value(case.abstract)
        return "GET", path, query, None
    entries: list[tuple[str, dict[str, Any]]] = []
    if with_url:
        entries.append(("url", {"valueUri": case.url}))
    if form in ("POST-valueCode", "POST-valueString"):
        key = "valueCode" if form == "POST-valueCode" else "valueString"
        entries += [("code", {key: case.code}), ("system", {"valueUri": case.system})]
        if case.display is not None:
            entries.append(("display", {"valueString": case.display}))
    elif form == "POST-coding":
        entries.append(("coding", {"valueCoding": _coding(case)}))
    else:
        entries.append(("codeableConcept", {"valueCodeableConcept": {"coding": [_coding(case)]}}))
    if case.abstract is not None:
        entries.append(("abstract", {"valueBoolean": case.abstract}))
    return "POST", path, None, params(*entries)


def vs_python(wb: Workbench, case: VSCase, form: str) -> dict[str, Any]:
    """The same question asked in Python."""
    abstract = case.abstract  # None: left out, as over HTTP
    if form == "POST-coding":
        result = wb.validate_code(case.url, coding=_coding(case), abstract=abstract)
    elif form == "POST-cc":
        concept = {"coding": [_coding(case)]}
        result = wb.validate_code(case.url, codeable_concept=concept, abstract=abstract)
    else:
        result = wb.validate_code(
            case.url, code=case.code, system=case.system, display=case.display, abstract=abstract
        )
    return result.to_parameters()


@pytest.mark.parametrize(
    ("case", "form", "level"),
    [
        pytest.param(VS_CASES[name], form, level, id=f"{name}-{form}-{level}")
        for name, form, level in itertools.product(VS_CASES, VS_FORMS, LEVELS)
    ],
)
def test_valueset_validate_code(
    http: httpx.Client, default_wb: Workbench, case: VSCase, form: str, level: str
) -> None:
    method, path, query, body = vs_request(case, form, level)
    answer = ok_body(call(http, method, path, query, body))
    got = values(answer)
    assert got["result"] is case.result
    assert got.get("display") == case.display_out
    if case.message is None:
        assert "message" not in got
    else:
        assert case.message in got["message"]
    # Rule 5: one entry per output parameter, nothing else; the same answer as in Python.
    assert set(got) <= set(VALIDATE_OUTPUTS)
    assert answer == vs_python(default_wb, case, form)


def test_validate_code_display_with_coding_is_not_ignored(http: httpx.Client) -> None:
    """A given display "is validated in addition to the code" (spec 4.2)."""
    body = params(
        ("url", {"valueUri": GENDER_VS}),
        ("coding", {"valueCoding": {"system": GENDER_CS, "code": "female"}}),
        ("display", {"valueString": "Woman"}),
    )
    response = call(http, "POST", "/ValueSet/$validate-code", body=body)
    if response.status_code == 200:
        assert values(response.json())["result"] is False
    else:
        assert_outcome(response, 400, response.json()["issue"][0]["code"], "display")


def test_validate_code_inline_valueset(http: httpx.Client, default_wb: Workbench) -> None:
    """``valueSet`` given whole in the request (POST only)."""
    inline = {
        "resourceType": "ValueSet",
        "url": "http://example.org/fhir/ValueSet/inline",
        "compose": {"include": [{"system": DEMO_CS, "concept": [{"code": "video"}]}]},
    }
    for code, expected in (("video", True), ("phone", False)):
        body = params(
            ("valueSet", {"resource": inline}),
            ("code", {"valueCode": code}),
            ("system", {"valueUri": DEMO_CS}),
        )
        answer = ok_body(call(http, "POST", "/ValueSet/$validate-code", body=body))
        assert values(answer)["result"] is expected
        py = default_wb.validate_code(valueset=inline, code=code, system=DEMO_CS)
        assert answer == py.to_parameters()


def test_get_is_post(http: httpx.Client) -> None:
    """Rule 3: a GET with simple parameters is the POST with the same parameters."""
    query = {
        "url": GENDER_VS,
        "system": GENDER_CS,
        "code": "female",
        "display": "Woman",
        "abstract": "true",
    }
    body = params(
        ("url", {"valueUri": GENDER_VS}),
        ("system", {"valueUri": GENDER_CS}),
        ("code", {"valueCode": "female"}),
        ("display", {"valueString": "Woman"}),
        ("abstract", {"valueBoolean": True}),
    )
    get = call(http, "GET", "/ValueSet/$validate-code", query)
    post = call(http, "POST", "/ValueSet/$validate-code", body=body)
    assert get.status_code == post.status_code == 200
    assert get.json() == post.json()
    assert values(get.json())["result"] is False


def test_post_accepts_fhir_json_with_charset(http: httpx.Client) -> None:
    body = params(
        ("url", {"valueUri": GENDER_VS}),
        ("system", {"valueUri": GENDER_CS}),
        ("code", {"valueCode": "other"}),
    )
    response = http.post(
        "/ValueSet/$validate-code",
        content=json.dumps(body).encode(),
        headers={"Content-Type": "application/fhir+json; charset=utf-8"},
    )
    assert values(ok_body(response)) == {
        "result": True,
        "display": "Other",
        "code": "other",
        "system": GENDER_CS,
        "version": "4.0.1",
    }


def test_spec_examples_shapes(http: httpx.Client) -> None:
    """Section 4.2: the coding-check request shape, and the result/display response shape."""
    body = {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "url", "valueUri": GENDER_VS},
            {"name": "coding", "valueCoding": {"system": GENDER_CS, "code": "male"}},
        ],
    }
    answer = ok_body(call(http, "POST", "/ValueSet/$validate-code", body=body))
    # result and display as the spec shows them, then the outputs the reference servers add
    # (each one declared in the shipped definition, so rule 5 holds).
    assert answer == {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "result", "valueBoolean": True},
            {"name": "display", "valueString": "Male"},
            {"name": "code", "valueCode": "male"},
            {"name": "system", "valueUri": GENDER_CS},
            {"name": "version", "valueString": "4.0.1"},
        ],
    }


# --- ValueSet/$expand -----------------------------------------------------------------

EXPAND_INPUTS = {
    "plain": {},
    "filter": {"filter": "office"},
    "page": {"offset": 2, "count": 3},
    "count-0": {"count": 0},
    "activeOnly": {"activeOnly": True},
    "includeDesignations": {"includeDesignations": True},
    "combined": {
        "filter": "visit",
        "activeOnly": True,
        "includeDesignations": True,
        "offset": 1,
        "count": 2,
    },
}
EXPAND_FORMS = ("GET-type", "GET-instance", "POST-type", "POST-instance", "POST-inline")
_VALUE_KEYS = {
    "filter": "valueString",
    "offset": "valueInteger",
    "count": "valueInteger",
    "activeOnly": "valueBoolean",
    "includeDesignations": "valueBoolean",
}
_PY_NAMES = {
    "filter": "filter",
    "offset": "offset",
    "count": "count",
    "activeOnly": "active_only",
    "includeDesignations": "include_designations",
}


def demo_all_resource() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (ROOT / "valuesets/demo/ValueSet-workbench-demo-all.json").read_text()
    )
    return data


@pytest.mark.parametrize(
    ("inputs", "form"),
    [
        pytest.param(EXPAND_INPUTS[name], form, id=f"{name}-{form}")
        for name, form in itertools.product(EXPAND_INPUTS, EXPAND_FORMS)
    ],
)
def test_valueset_expand(
    http: httpx.Client, default_wb: Workbench, inputs: dict[str, Any], form: str
) -> None:
    method = form.split("-")[0]
    path = "/ValueSet/workbench-demo-all/$expand" if form.endswith("instance") else None
    path = path or "/ValueSet/$expand"
    if method == "GET":
        query = {n: query_value(v) for n, v in inputs.items()}
        if form == "GET-type":
            query["url"] = DEMO_ALL
        response = call(http, "GET", path, query)
    else:
        entries = [(n, {_VALUE_KEYS[n]: v}) for n, v in inputs.items()]
        if form == "POST-type":
            entries.insert(0, ("url", {"valueUri": DEMO_ALL}))
        elif form == "POST-inline":
            entries.insert(0, ("valueSet", {"resource": demo_all_resource()}))
        response = call(http, "POST", path, body=params(*entries))
    # Rule 6: $expand's single required out 'return' is a ValueSet: the body is that resource.
    answer = ok_body(response, "ValueSet")
    kwargs = {_PY_NAMES[n]: v for n, v in inputs.items()}
    target: Any = demo_all_resource() if form == "POST-inline" else DEMO_ALL
    expected = default_wb.expand(target, **kwargs).to_valueset()
    assert without_volatile(answer) == without_volatile(expected)
    expansion = answer["expansion"]
    assert expansion["identifier"] and expansion["timestamp"]
    assert "compose" not in answer
    contains = expansion.get("contains", [])
    if inputs.get("count") == 0:
        assert "contains" not in expansion
        assert expansion["total"] > 0
    if "count" in inputs:
        assert len(contains) <= inputs["count"]
    if inputs.get("activeOnly"):
        assert not any(c.get("inactive") for c in contains)
    if "filter" in inputs:
        assert all(inputs["filter"] in (c["code"] + c["display"]).lower() for c in contains)
    if inputs.get("includeDesignations"):
        assert contains and all(c["designation"] for c in contains)
    else:
        assert not any("designation" in c for c in contains)


def test_expand_count_zero_gives_total_only(http: httpx.Client, default_wb: Workbench) -> None:
    answer = ok_body(call(http, "GET", EXP, {"url": DEMO_ALL, "count": "0"}), "ValueSet")
    assert answer["expansion"]["total"] == default_wb.expand(DEMO_ALL).total == 15
    assert "contains" not in answer["expansion"]


def test_expand_bare_valueset_body(http: httpx.Client, default_wb: Workbench) -> None:
    """POSTing the ValueSet itself (not wrapped in Parameters) expands it."""
    inline = json.loads(
        (ROOT / "valuesets/demo/ValueSet-workbench-demo-remote-live.json").read_text()
    )
    answer = ok_body(call(http, "POST", "/ValueSet/$expand", body=inline), "ValueSet")
    expected = default_wb.expand(inline).to_valueset()
    assert without_volatile(answer) == without_volatile(expected)
    assert [c["code"] for c in answer["expansion"]["contains"]] == [
        "video",
        "phone",
        "phone-triage",
    ]


# --- CodeSystem/$lookup ---------------------------------------------------------------

LOOKUP_CASES = [
    pytest.param(GENDER_CS, "female", (), id="gender-female-all"),
    pytest.param(DEMO_CS, "office-new", ("duration-minutes",), id="demo-property-selected"),
    pytest.param(DEMO_CS, "e-visit", ("designation",), id="demo-designations-only"),
    pytest.param(DEMO_CS, "video", ("duration-minutes", "designation"), id="demo-two-selected"),
    pytest.param(DEMO_CS, "group", ("inactive",), id="demo-inactive-selected"),
    pytest.param(DEMO_CS, "office-new", (), id="demo-all-properties"),
    pytest.param(DEMO_CS, "group", ("status",), id="demo-status"),
    pytest.param(DEMO_CS, "in-person", ("child",), id="demo-children"),
]
LOOKUP_FORMS = ("GET-code", "POST-code", "POST-coding")


@pytest.mark.parametrize(("system", "code", "props"), LOOKUP_CASES)
@pytest.mark.parametrize("form", LOOKUP_FORMS)
def test_codesystem_lookup(
    http: httpx.Client,
    default_wb: Workbench,
    form: str,
    system: str,
    code: str,
    props: tuple[str, ...],
) -> None:
    if form == "GET-code":
        query = [("system", system), ("code", code)] + [("property", p) for p in props]
        response = call(http, "GET", LOOKUP, query)
    else:
        entries: list[tuple[str, dict[str, Any]]]
        if form == "POST-code":
            entries = [("system", {"valueUri": system}), ("code", {"valueCode": code})]
        else:
            entries = [("coding", {"valueCoding": {"system": system, "code": code}})]
        entries += [("property", {"valueCode": p}) for p in props]
        response = call(http, "POST", LOOKUP, body=params(*entries))
    answer = ok_body(response)
    expected = default_wb.lookup(system, code, properties=list(props) or None).to_parameters()
    assert answer == expected


def test_lookup_content(http: httpx.Client) -> None:
    """name, version, display, designation parts and property parts; ``property`` selects."""
    query = {"system": DEMO_CS, "code": "office-new"}
    full = ok_body(call(http, "GET", "/CodeSystem/$lookup", query))["parameter"]
    by_name: dict[str, list[dict[str, Any]]] = {}
    for entry in full:
        by_name.setdefault(entry["name"], []).append(entry)
    assert by_name["name"] == [{"name": "name", "valueString": "WorkbenchDemo"}]
    assert by_name["version"] == [{"name": "version", "valueString": "1.0.0"}]
    assert by_name["display"] == [{"name": "display", "valueString": "New patient office visit"}]
    use = {"system": "http://terminology.hl7.org/CodeSystem/designation-usage", "code": "display"}
    assert by_name["designation"][0]["part"] == [
        {"name": "language", "valueCode": "de"},
        {"name": "use", "valueCoding": use},
        {"name": "value", "valueString": "Erstbesuch in der Praxis"},
    ]
    assert len(by_name["designation"]) == 2
    props = {
        p["part"][0]["valueCode"]: {k: v for k, v in p["part"][1].items() if k != "name"}
        for p in by_name["property"]
    }
    assert props["duration-minutes"] == {"valueInteger": 30}
    assert props["inactive"] == {"valueBoolean": False}
    assert "parent" in props
    selected = call(
        http,
        "GET",
        "/CodeSystem/$lookup",
        [("system", DEMO_CS), ("code", "office-new"), ("property", "duration-minutes")],
    )
    entries = ok_body(selected)["parameter"]
    assert [e["name"] for e in entries] == [
        "name",
        "system",
        "version",
        "code",
        "display",
        "definition",
        "abstract",
        "property",
    ]
    assert entries[-1]["part"] == [
        {"name": "code", "valueCode": "duration-minutes"},
        {"name": "value", "valueInteger": 30},
    ]


# --- CodeSystem/$subsumes -------------------------------------------------------------

SUBSUMES_CASES = [
    pytest.param(DEMO_CS, "workbench-demo", "office", "office", "equivalent", id="equivalent"),
    pytest.param(DEMO_CS, "workbench-demo", "office", "office-new", "subsumes", id="subsumes"),
    pytest.param(
        DEMO_CS, "workbench-demo", "office-new", "office", "subsumed-by", id="subsumed-by"
    ),
    pytest.param(DEMO_CS, "workbench-demo", "home", "video", "not-subsumed", id="not-subsumed"),
    pytest.param(
        DEMO_CS, "workbench-demo", "in-person", "office-procedure", "subsumes", id="via-parent"
    ),
    pytest.param(
        ORDERABLE_CS, "v3-orderableDrugForm", "ERTAB", "ERECTAB", "subsumes", id="polyhierarchy"
    ),
]
SUBSUMES_FORMS = ("GET-type", "POST-type-code", "POST-type-coding", "GET-instance", "POST-instance")


@pytest.mark.parametrize(("system", "cs_id", "code_a", "code_b", "outcome"), SUBSUMES_CASES)
@pytest.mark.parametrize("form", SUBSUMES_FORMS)
def test_codesystem_subsumes(
    http: httpx.Client,
    default_wb: Workbench,
    form: str,
    system: str,
    cs_id: str,
    code_a: str,
    code_b: str,
    outcome: str,
) -> None:
    instance = form.endswith("instance")
    path = f"/CodeSystem/{cs_id}/$subsumes" if instance else "/CodeSystem/$subsumes"
    if form.startswith("GET"):
        query = {"codeA": code_a, "codeB": code_b}
        if not instance:
            query["system"] = system
        response = call(http, "GET", path, query)
    elif form == "POST-type-code":
        body = params(
            ("system", {"valueUri": system}),
            ("codeA", {"valueCode": code_a}),
            ("codeB", {"valueCode": code_b}),
        )
        response = call(http, "POST", path, body=body)
    else:
        body = params(
            ("codingA", {"valueCoding": {"system": system, "code": code_a}}),
            ("codingB", {"valueCoding": {"system": system, "code": code_b}}),
        )
        response = call(http, "POST", path, body=body)
    answer = ok_body(response)
    assert answer["parameter"] == [{"name": "outcome", "valueCode": outcome}]
    assert default_wb.subsumes(system, code_a, code_b) == outcome


# --- CodeSystem/$validate-code --------------------------------------------------------


@dataclass(frozen=True)
class CSCase:
    code: str
    result: bool
    display_out: str | None
    message: str | None = None
    display: str | None = None
    abstract: bool | None = None


CS_CASES = [
    pytest.param(CSCase("office", True, "Office visit"), id="valid"),
    pytest.param(CSCase("nope", False, None, "Unknown code 'nope'"), id="unknown"),
    pytest.param(
        CSCase("office", False, "Office visit", "Wrong display 'Wrong'", "Wrong"),
        id="wrong-display",
    ),
    pytest.param(CSCase("office", True, "Office visit", None, "Office visit"), id="right-display"),
    pytest.param(CSCase("in-person", True, "In-person visit"), id="abstract-default"),
    pytest.param(CSCase("in-person", True, "In-person visit", abstract=True), id="abstract-true"),
    pytest.param(
        CSCase("in-person", False, "In-person visit", "abstract", abstract=False),
        id="abstract-false",
    ),
    pytest.param(CSCase("fax-consult", True, "Fax consultation", "inactive"), id="inactive"),
]
CS_FORMS = ("GET-code", "POST-code", "POST-coding", "POST-cc")


@pytest.mark.parametrize("case", CS_CASES)
@pytest.mark.parametrize("level", ("type", "instance"))
@pytest.mark.parametrize("form", CS_FORMS)
def test_codesystem_validate_code(
    http: httpx.Client, default_wb: Workbench, form: str, level: str, case: CSCase
) -> None:
    path = "/CodeSystem/$validate-code"
    if level == "instance":
        path = "/CodeSystem/workbench-demo/$validate-code"
    coding = {"system": DEMO_CS, "code": case.code}
    if case.display is not None:
        coding["display"] = case.display
    if form == "GET-code":
        query = {"code": case.code}
        if level == "type":
            query["url"] = DEMO_CS
        if case.display is not None:
            query["display"] = case.display
        if case.abstract is not None:
            query["abstract"] = query_value(case.abstract)
        response = call(http, "GET", path, query)
    else:
        entries: list[tuple[str, dict[str, Any]]] = []
        if level == "type":
            entries.append(("url", {"valueUri": DEMO_CS}))
        if form == "POST-code":
            entries.append(("code", {"valueCode": case.code}))
            if case.display is not None:
                entries.append(("display", {"valueString": case.display}))
        elif form == "POST-coding":
            entries.append(("coding", {"valueCoding": coding}))
        else:
            entries.append(("codeableConcept", {"valueCodeableConcept": {"coding": [coding]}}))
        if case.abstract is not None:
            entries.append(("abstract", {"valueBoolean": case.abstract}))
        response = call(http, "POST", path, body=params(*entries))
    answer = ok_body(response)
    got = values(answer)
    assert got["result"] is case.result
    assert got.get("display") == case.display_out
    if case.message is None:
        assert "message" not in got
    else:
        assert case.message in got["message"]
    if form != "POST-cc":
        py = default_wb.validate_in_codesystem(
            DEMO_CS,
            case.code,
            display=case.display,
            abstract=True if case.abstract is None else case.abstract,
        )
        # The issues name where the problem is: the code parameters, or the Coding.
        expected = located(py, "Coding" if form == "POST-coding" else "")
        assert answer == expected.to_parameters()


# --- the error table ------------------------------------------------------------------


@dataclass(frozen=True)
class Err:
    """A request that must fail: status, issue code, and a pattern for details.text."""

    method: str
    path: str
    status: int
    code: str
    text: str
    query: dict[str, str] | list[tuple[str, str]] | None = None
    body: Any = None
    raw: bytes | None = None
    content_type: str | None = FHIR_JSON
    one_issue: bool = False
    own_server: bool = False  # the request makes the server log a traceback
    headers: dict[str, str] | None = None


STRICT = {"Prefer": "handling=strict"}
VC = "/ValueSet/$validate-code"
EXP = "/ValueSet/$expand"
SUBSUMES = "/CodeSystem/$subsumes"
GENDER_VC = "/ValueSet/administrative-gender/$validate-code"
DEMO_ALL_VC = "/ValueSet/workbench-demo-all/$validate-code"
GENDER_Q = {"url": GENDER_VS, "system": GENDER_CS, "code": "female"}
URL_P = ("url", {"valueUri": GENDER_VS})
SYS_P = ("system", {"valueUri": GENDER_CS})
CODE_P = ("code", {"valueCode": "female"})
ALL_P = ("url", {"valueUri": DEMO_ALL})
MISSING_P = ("url", {"valueUri": MISSING_VS})
MALE = {"system": GENDER_CS, "code": "male"}
NOT_FOUND = exactly(f"ValueSet {MISSING_VS} not found")
EXPAND_NOT_FOUND = exactly(f"A definition for the value Set '{MISSING_VS}' could not be found")


def get(
    id_: str,
    query: dict[str, str] | list[tuple[str, str]] | None,
    status: int,
    code: str,
    text: str,
    path: str = VC,
    **extra: Any,
) -> Any:
    """A GET row of the error table."""
    marks = extra.pop("marks", ())
    return pytest.param(Err("GET", path, status, code, text, query, **extra), id=id_, marks=marks)


def post(
    id_: str, body: Any, status: int, code: str, text: str, path: str = VC, **extra: Any
) -> Any:
    """A POST row (the body is sent as JSON unless ``raw`` is given)."""
    marks = extra.pop("marks", ())
    err = Err(extra.pop("method", "POST"), path, status, code, text, body=body, **extra)
    return pytest.param(err, id=id_, marks=marks)


def cc(*codings: dict[str, str]) -> tuple[str, dict[str, Any]]:
    return ("codeableConcept", {"valueCodeableConcept": {"coding": list(codings)}})


ERRORS = [
    # Section 7 rule 2: an unknown ValueSet url is 400 invalid, "ValueSet <url> not found".
    get(
        "unknown-vs-GET", {**GENDER_Q, "url": MISSING_VS}, 400, "invalid", NOT_FOUND, one_issue=True
    ),
    post(
        "unknown-vs-POST-code",
        params(MISSING_P, SYS_P, CODE_P),
        400,
        "invalid",
        NOT_FOUND,
        one_issue=True,
    ),
    post(
        "unknown-vs-POST-coding",
        params(MISSING_P, ("coding", {"valueCoding": MALE})),
        400,
        "invalid",
        NOT_FOUND,
        one_issue=True,
    ),
    post(
        "unknown-vs-POST-cc", params(MISSING_P, cc(MALE)), 400, "invalid", NOT_FOUND, one_issue=True
    ),
    get(
        "unknown-vs-version",
        {**GENDER_Q, "valueSetVersion": "9.9"},
        400,
        "invalid",
        exactly(f"ValueSet {GENDER_VS}|9.9 not found"),
        one_issue=True,
    ),
    # $expand answers an unknown value set 404 not-found, as tx.fhir.org does (issue 22, e1).
    get(
        "unknown-vs-expand-GET",
        {"url": MISSING_VS},
        404,
        "not-found",
        EXPAND_NOT_FOUND,
        EXP,
        one_issue=True,
    ),
    post(
        "unknown-vs-expand-POST",
        params(MISSING_P),
        404,
        "not-found",
        EXPAND_NOT_FOUND,
        EXP,
        one_issue=True,
    ),
    # Input rule 1: url is required at type level.
    get("no-url-GET", {"system": GENDER_CS, "code": "x"}, 400, "required", r"'url' is required"),
    post("no-url-POST", params(SYS_P, CODE_P), 400, "required", r"'url' is required"),
    get("no-url-expand", {}, 400, "required", r"'url' is required", EXP),
    get(
        "no-url-cs-validate",
        {"code": "a"},
        400,
        "required",
        r"'url' is required",
        "/CodeSystem/$validate-code",
    ),
    # Input rule 2: something to validate (code+system, coding, or a codeableConcept).
    get("nothing-GET", {"url": GENDER_VS}, 400, "required", "Nothing to validate"),
    post("nothing-POST-instance", params(), 400, "required", "Nothing to validate", GENDER_VC),
    post(
        "display-only",
        params(URL_P, ("display", {"valueString": "Female"})),
        400,
        "required",
        "Nothing to validate",
    ),
    get("code-no-system-GET", {"url": GENDER_VS, "code": "f"}, 400, "required", r"'system' is"),
    post("code-no-system-POST", params(URL_P, CODE_P), 400, "required", r"'system' is required"),
    post("cc-without-coding", params(URL_P, cc()), 400, "invalid", "codeableConcept has no coding"),
    post(
        "code-and-coding",
        params(URL_P, SYS_P, CODE_P, ("coding", {"valueCoding": MALE})),
        400,
        "required",
        r"only one of code, coding",
    ),
    get("lookup-nothing", {"system": DEMO_CS}, 400, "required", "Nothing to look up", LOOKUP),
    get("lookup-no-system", {"code": "office"}, 400, "required", "system", LOOKUP),
    get("subsumes-no-system", {"codeA": "a", "codeB": "b"}, 400, "required", "'system'", SUBSUMES),
    get(
        "subsumes-no-codeB",
        {"system": DEMO_CS, "codeA": "office"},
        400,
        "required",
        "codeB",
        SUBSUMES,
    ),
    # Rule 2: complex types cannot go in a GET query.
    get(
        "GET-coding", {"coding": "x"}, 400, "not-supported", r"'coding' has the complex type Coding"
    ),
    get(
        "GET-codeableConcept",
        {"url": GENDER_VS, "codeableConcept": "x"},
        400,
        "not-supported",
        r"'codeableConcept' has the complex type",
    ),
    get(
        "GET-valueSet", {"valueSet": "{}"}, 400, "not-supported", r"'valueSet' has the complex", EXP
    ),
    get("GET-instance-coding", {"coding": "x"}, 400, "not-supported", r"'coding' has", GENDER_VC),
    get("GET-lookup-coding", {"coding": "x"}, 400, "not-supported", r"'coding' has", LOOKUP),
    get("GET-subsumes-codingA", {"codingA": "x"}, 400, "not-supported", r"'codingA' has", SUBSUMES),
    # Section 2.2 and input rule 3: the value[x] must match the type in the definition.
    post(
        "code-as-valueBoolean",
        params(URL_P, SYS_P, ("code", {"valueBoolean": True})),
        400,
        "invalid",
        r"'code' has type code, so it must be sent as valueCode or valueString, not "
        r"valueBoolean",
    ),
    post(
        "system-as-valueCode",
        params(URL_P, ("system", {"valueCode": GENDER_CS}), CODE_P),
        400,
        "invalid",
        r"'system' has type uri, so it must be sent as valueUri or valueCanonical or "
        r"valueUrl or valueString, not valueCode",
    ),
    post(
        "display-as-valueBoolean",
        params(URL_P, SYS_P, CODE_P, ("display", {"valueBoolean": True})),
        400,
        "invalid",
        r"'display' has type string, so it must be sent as valueString or valueCode, not "
        r"valueBoolean",
    ),
    post(
        "coding-as-valueString",
        params(URL_P, ("coding", {"valueString": "female"})),
        400,
        "invalid",
        r"'coding' has type Coding, so it must be sent as valueCoding, not valueString",
    ),
    post(
        "coding-not-object",
        params(URL_P, ("coding", {"valueCoding": "female"})),
        400,
        "invalid",
        r"'coding' must be a Coding \(a JSON object\)",
    ),
    post(
        "code-not-string",
        params(URL_P, SYS_P, ("code", {"valueCode": 5})),
        400,
        "invalid",
        r"'code' must be a JSON string",
    ),
    post(
        "two-values",
        params(URL_P, SYS_P, ("code", {"valueCode": "female", "valueString": "female"})),
        400,
        "invalid",
        r"'code' has type code, .* not valueCode, valueString",
    ),
    post(
        "no-value",
        params(URL_P, SYS_P, ("code", {})),
        400,
        "invalid",
        r"'code' has type code, .* not no value",
    ),
    post(
        "valueSet-as-value",
        params(("valueSet", {"valueString": GENDER_VS}), SYS_P, CODE_P),
        400,
        "invalid",
        r"'valueSet' must carry a ValueSet in 'resource'",
    ),
    post(
        "valueSet-wrong-resource",
        params(("valueSet", {"resource": {"resourceType": "CodeSystem"}}), SYS_P, CODE_P),
        400,
        "invalid",
        r"'valueSet' must be a ValueSet, not 'CodeSystem'",
    ),
    # Repeated 0..1 parameters.
    get(
        "repeated-url-GET",
        [("url", GENDER_VS), ("url", GENDER_VS), ("system", GENDER_CS), ("code", "female")],
        400,
        "invalid",
        r"'url' may appear only once \(its cardinality is 0..1\)",
    ),
    get(
        "repeated-abstract-GET",
        [*GENDER_Q.items(), ("abstract", "true"), ("abstract", "true")],
        400,
        "invalid",
        r"'abstract' may appear only once",
    ),
    post(
        "repeated-code-POST",
        params(URL_P, SYS_P, CODE_P, ("code", {"valueCode": "male"})),
        400,
        "invalid",
        r"'code' may appear only once",
    ),
    # Unknown parameters, under Prefer: handling=strict (else ignored, with an issue).
    get(
        "unknown-param-GET",
        {**GENDER_Q, "foo": "1"},
        400,
        "invalid",
        r"Unknown parameter 'foo'",
        headers=STRICT,
    ),
    post(
        "unknown-param-POST",
        params(URL_P, SYS_P, CODE_P, ("foo", {"valueString": "1"})),
        400,
        "invalid",
        r"Unknown parameter 'foo' for \$validate-code",
        headers=STRICT,
    ),
    get(
        "unknown-param-lookup",
        {"system": DEMO_CS, "code": "office", "bar": "x"},
        400,
        "invalid",
        r"Unknown parameter 'bar' for \$lookup",
        LOOKUP,
        headers=STRICT,
    ),
    # Booleans and integers are parsed strictly.
    get(
        "bad-boolean-GET",
        {**GENDER_Q, "abstract": "yes"},
        400,
        "invalid",
        r"'abstract' must be true or false, not 'yes'",
    ),
    get(
        "bad-boolean-capital",
        {**GENDER_Q, "abstract": "True"},
        400,
        "invalid",
        r"'abstract' must be true or false, not 'True'",
    ),
    get(
        "bad-boolean-expand",
        {"url": DEMO_ALL, "activeOnly": "1"},
        400,
        "invalid",
        r"'activeOnly' must be true or false, not '1'",
        EXP,
    ),
    post(
        "bad-boolean-POST",
        params(URL_P, SYS_P, CODE_P, ("abstract", {"valueBoolean": "true"})),
        400,
        "invalid",
        r"'abstract' must be a JSON boolean",
    ),
    post(
        "boolean-as-valueString",
        params(URL_P, SYS_P, CODE_P, ("abstract", {"valueString": "true"})),
        400,
        "invalid",
        r"'abstract' has type boolean, so it must be sent as valueBoolean, not valueString",
    ),
    get(
        "bad-integer-GET",
        {"url": DEMO_ALL, "count": "x"},
        400,
        "invalid",
        r"'count' must be an integer, not 'x'",
        EXP,
    ),
    get(
        "bad-integer-decimal",
        {"url": DEMO_ALL, "offset": "1.5"},
        400,
        "invalid",
        r"'offset' must be an integer, not '1.5'",
        EXP,
    ),
    post(
        "bad-integer-POST-string",
        params(ALL_P, ("count", {"valueInteger": "3"})),
        400,
        "invalid",
        r"'count' must be a JSON integer",
        EXP,
    ),
    post(
        "bad-integer-POST-boolean",
        params(ALL_P, ("offset", {"valueInteger": True})),
        400,
        "invalid",
        r"'offset' must be a JSON integer",
        EXP,
    ),
    get(
        "negative-offset",
        {"url": DEMO_ALL, "offset": "-1"},
        400,
        "invalid",
        r"'offset' and 'count' must be 0 or more",
        EXP,
    ),
    # Defined by FHIR but not supported: refused, not silently ignored.
    get(
        "unsupported-date",
        {**GENDER_Q, "date": "2020-01-01"},
        400,
        "not-supported",
        r"parameter\(s\) date are defined by FHIR but not supported",
    ),
    get(
        "unsupported-excludeNotForUI",
        {"url": DEMO_ALL, "excludeNotForUI": "true"},
        400,
        "not-supported",
        r"parameter\(s\) excludeNotForUI are defined by FHIR but not supported",
        EXP,
    ),
    get(
        "unsupported-lookup-date",
        {"system": DEMO_CS, "code": "office", "date": "2020-01-01"},
        400,
        "not-supported",
        r"parameter\(s\) date are defined by FHIR but not supported",
        LOOKUP,
    ),
    # url and an instance that disagree; valueSet together with url or an instance.
    get(
        "instance-url-mismatch",
        GENDER_Q,
        400,
        "required",
        r"'url' parameter \(http://hl7.org/fhir/ValueSet/administrative-gender\) does not "
        r"match the ValueSet instance \(http://example.org/fhir/ValueSet/workbench-demo-all\)",
        DEMO_ALL_VC,
    ),
    get(
        "instance-url-mismatch-expand",
        {"url": GENDER_VS},
        400,
        "required",
        r"does not match the ValueSet instance",
        "/ValueSet/workbench-demo-all/$expand",
    ),
    get(
        "cs-instance-url-mismatch",
        {"url": GENDER_CS, "code": "office"},
        400,
        "required",
        r"does not match the CodeSystem instance",
        "/CodeSystem/workbench-demo/$validate-code",
    ),
    post(
        "valueSet-and-url",
        params(ALL_P, ("valueSet", {"resource": {"resourceType": "ValueSet"}})),
        400,
        "required",
        r"Give the value set once",
        EXP,
    ),
    post(
        "valueSet-and-instance",
        {"resourceType": "ValueSet", "compose": {"include": [{"system": DEMO_CS}]}},
        400,
        "required",
        r"Give the value set once",
        "/ValueSet/workbench-demo-all/$expand",
    ),
    # Rule 1: the body is a Parameters resource.
    post(
        "body-wrong-resource",
        {"resourceType": "Bundle"},
        400,
        "invalid",
        r"must be a Parameters resource or a ValueSet, not 'Bundle'",
    ),
    post(
        "parameter-not-list",
        {"resourceType": "Parameters", "parameter": {}},
        400,
        "invalid",
        r"Parameters.parameter must be a list",
    ),
    post(
        "entry-without-name",
        {"resourceType": "Parameters", "parameter": [{"valueUri": GENDER_VS}]},
        400,
        "invalid",
        r"Parameters.parameter\[0\] needs a name",
    ),
    post(
        "body-json-array",
        [URL_P],
        400,
        "invalid",
        "Parameters",
        own_server=True,
    ),
    post(
        "body-json-string",
        "x",
        400,
        "invalid",
        "Parameters",
        EXP,
        own_server=True,
    ),
    # Malformed JSON: 400 structure.
    post("malformed-json", None, 400, "structure", "^The body is not valid JSON", raw=b"{x"),
    # An empty body is the operation called without inputs (as with GET): url is missing.
    post("empty-body", None, 400, "required", "^Parameter 'url' is required", EXP, raw=b""),
    # Unsupported content types: 415.
    post(
        "text-plain",
        None,
        415,
        "not-supported",
        r"Content-Type text/plain is not supported",
        raw=b"url=x",
        content_type="text/plain",
    ),
    post(
        "fhir-xml",
        None,
        415,
        "not-supported",
        r"Content-Type application/fhir\+xml is not supported",
        EXP,
        raw=b"<Parameters/>",
        content_type="application/fhir+xml",
    ),
    post(
        "no-content-type",
        None,
        415,
        "not-supported",
        r"Content-Type none is not supported",
        raw=b"{}",
        content_type=None,
    ),
    # Unknown instances (404); unknown codes and code systems.
    get(
        "unknown-instance-validate",
        {"system": GENDER_CS, "code": "female"},
        404,
        "not-found",
        exactly("ValueSet/missing not found"),
        "/ValueSet/missing/$validate-code",
    ),
    post(
        "unknown-instance-expand-POST",
        params(),
        404,
        "not-found",
        exactly("ValueSet/missing not found"),
        "/ValueSet/missing/$expand",
    ),
    get(
        "unknown-instance-cs-validate",
        {"code": "a"},
        404,
        "not-found",
        exactly("CodeSystem/missing not found"),
        "/CodeSystem/missing/$validate-code",
    ),
    get(
        "unknown-instance-subsumes",
        {"codeA": "a", "codeB": "b"},
        404,
        "not-found",
        exactly("CodeSystem/missing not found"),
        "/CodeSystem/missing/$subsumes",
    ),
    get(
        "lookup-unknown-code",
        {"system": DEMO_CS, "code": "nope"},
        404,
        "not-found",
        r"Unknown code 'nope'",
        LOOKUP,
    ),
    get(
        "subsumes-unknown-code",
        {"system": DEMO_CS, "codeA": "office", "codeB": "nope"},
        404,
        "not-found",
        r"Unknown code 'nope'",
        SUBSUMES,
    ),
    get(
        "lookup-unknown-system",
        {"system": "http://nope", "code": "x"},
        404,
        "not-found",
        exactly("CodeSystem http://nope not found"),
        LOOKUP,
    ),
    get(
        "unknown-operation", None, 404, "not-found", r"Unknown operation \$nope", "/ValueSet/$nope"
    ),
    get(
        "operation-on-other-type",
        None,
        404,
        "not-found",
        r"Unknown operation \$expand on CodeSystem",
        "/CodeSystem/$expand",
    ),
    get(
        "unknown-OperationDefinition",
        None,
        404,
        "not-found",
        exactly("OperationDefinition/nope not found"),
        "/OperationDefinition/nope",
    ),
    # Rule 4: the level flags of the definition; wrong methods are 405.
    get(
        "lookup-instance-GET",
        {"code": "office"},
        405,
        "not-supported",
        r"\$lookup is not available at instance level \(only at type\)",
        "/CodeSystem/workbench-demo/$lookup",
    ),
    post(
        "lookup-instance-POST",
        params(CODE_P),
        405,
        "not-supported",
        r"\$lookup is not available at instance level",
        "/CodeSystem/workbench-demo/$lookup",
    ),
    get("lookup-system-level", None, 405, "not-supported", r"at system level", "/$lookup"),
    post(
        "validate-system-level",
        params(),
        405,
        "not-supported",
        "at system level",
        "/$validate-code",
    ),
    post(
        "PATCH-operation", {}, 405, "not-supported", r"Method PATCH is not allowed", method="PATCH"
    ),
    post(
        "PUT-instance-operation",
        params(),
        405,
        "not-supported",
        r"Method PUT is not allowed",
        GENDER_VC,
        method="PUT",
    ),
    post("PUT-operation", params(), 405, "not-supported", "PUT", method="PUT"),
    post(
        "DELETE-operation",
        None,
        405,
        "not-supported",
        "DELETE",
        EXP,
        method="DELETE",
    ),
    post(
        "POST-metadata",
        {"resourceType": "Parameters"},
        405,
        "not-supported",
        "POST",
        "/metadata",
    ),
    post(
        "PUT-OperationDefinition",
        {"resourceType": "OperationDefinition", "id": "ValueSet-validate-code"},
        405,
        "not-supported",
        "PUT",
        "/OperationDefinition/ValueSet-validate-code",
        method="PUT",
    ),
    post(
        "DELETE-OperationDefinition",
        None,
        405,
        "not-supported",
        "DELETE",
        "/OperationDefinition/ValueSet-validate-code",
        method="DELETE",
    ),
]


def send(http: httpx.Client, err: Err) -> httpx.Response:
    headers = {} if err.content_type is None else {"Content-Type": err.content_type}
    headers.update(err.headers or {})
    content = err.raw
    if content is None and err.body is not None:
        content = json.dumps(err.body).encode()
    if err.method in ("GET", "HEAD") or content is None:
        return http.request(err.method, err.path, params=err.query, headers=err.headers)
    return http.request(err.method, err.path, params=err.query, content=content, headers=headers)


@pytest.mark.parametrize("err", ERRORS)
def test_errors(server: ServerHandle, default_wb: Workbench, err: Err) -> None:
    if err.own_server:
        # The server thread logs a traceback; stopping the server waits for that, so no
        # traceback is formatted in two threads at once (CPython 3.11's ast.parse is not
        # thread-safe there: "AST constructor recursion depth mismatch").
        with default_wb.serve(port=0, token=TOKEN) as own, client(own.url) as http:
            response = send(http, err)
    else:
        # A fresh connection per row: some failures close the connection on the server side.
        with client(server.url) as http:
            response = send(http, err)
    body = assert_outcome(response, err.status, err.code, err.text)
    if err.one_issue:
        assert len(body["issue"]) == 1
    if err.text is NOT_FOUND:  # tx.fhir.org's tx-issue-type beside operation-api.md's code
        tx = {"system": TX_ISSUE, "code": "not-found"}
        assert body["issue"][0]["details"]["coding"] == [tx]


# --- rules 2, 4 and 6 on synthetic definitions ----------------------------------------


def _definition(
    code: str,
    *,
    system: bool = False,
    type_: bool = False,
    instance: bool = False,
    affects_state: bool = False,
    out: dict[str, Any] | None = None,
) -> OperationDef:
    raw: dict[str, Any] = {
        "resourceType": "OperationDefinition",
        "id": f"ValueSet-{code}",
        "url": f"http://example.org/fhir/OperationDefinition/ValueSet-{code}",
        "status": "active",
        "kind": "operation",
        "code": code,
        "resource": ["ValueSet"],
        "system": system,
        "type": type_,
        "instance": instance,
        "parameter": [
            {"name": "note", "use": "in", "min": 0, "max": "1", "type": "string"},
            {"name": "coding", "use": "in", "min": 0, "max": "1", "type": "Coding"},
            out or {"name": "result", "use": "out", "min": 1, "max": "1", "type": "boolean"},
        ],
    }
    if affects_state:
        raw["affectsState"] = True
    return OperationDef.from_json(raw)


def _op(definition: OperationDef, runner: Callable[..., dict[str, Any]]) -> Operation:
    return Operation(definition, runner, frozenset({"note", "coding"}))


def _touched(wb: Workbench, inputs: dict[str, Any], resource: Any) -> dict[str, Any]:
    return {"result": resource is not None and resource.get("id") == "administrative-gender"}


def _echo(wb: Workbench, inputs: dict[str, Any], resource: Any) -> dict[str, Any]:
    made = {"resourceType": "ValueSet", "status": "draft", "title": inputs.get("note", "")}
    return {"return": made}


SYNTHETIC = (
    _op(_definition("touch", instance=True, affects_state=True), _touched),
    _op(_definition("ping", system=True), lambda wb, i, r: {"result": "note" in i}),
    _op(_definition("peek", instance=True), _touched),
    _op(
        _definition(
            "echo",
            type_=True,
            out={"name": "return", "use": "out", "min": 1, "max": "1", "type": "ValueSet"},
        ),
        _echo,
    ),
    _op(
        _definition(
            "maybe",
            type_=True,
            out={"name": "return", "use": "out", "min": 0, "max": "1", "type": "ValueSet"},
        ),
        _echo,
    ),
    _op(
        _definition(
            "text",
            type_=True,
            out={"name": "return", "use": "out", "min": 1, "max": "1", "type": "string"},
        ),
        lambda wb, i, r: {"return": i.get("note", "")},
    ),
)


SYNTHETIC_CALLS = [
    # Rule 2: affectsState forbids GET; rule 4: instance only.
    pytest.param("POST", "/ValueSet/administrative-gender/$touch", None, 200, id="touch-POST"),
    pytest.param("GET", "/ValueSet/administrative-gender/$touch", None, 405, id="touch-GET"),
    pytest.param("POST", "/ValueSet/$touch", None, 405, id="touch-type-level"),
    pytest.param("GET", "/ValueSet/$touch", None, 405, id="touch-type-level-GET"),
    pytest.param("POST", "/$touch", None, 405, id="touch-system-level"),
    pytest.param("POST", "/CodeSystem/x/$touch", None, 404, id="touch-other-type"),
    # Rule 4: instance level only, GET allowed (no affectsState).
    pytest.param("GET", "/ValueSet/administrative-gender/$peek", {"note": "x"}, 200, id="peek-GET"),
    pytest.param("POST", "/ValueSet/administrative-gender/$peek", None, 200, id="peek-POST"),
    pytest.param("GET", "/ValueSet/$peek", None, 405, id="peek-type-level-GET"),
    pytest.param("POST", "/ValueSet/$peek", None, 405, id="peek-type-level-POST"),
    pytest.param("GET", "/ValueSet/missing/$peek", None, 404, id="peek-unknown-instance"),
    # Rule 4: system level only.
    pytest.param("GET", "/$ping", {"note": "hi"}, 200, id="ping-GET"),
    pytest.param("POST", "/$ping", None, 200, id="ping-POST"),
    pytest.param("GET", "/ValueSet/$ping", None, 405, id="ping-type-level"),
    pytest.param("GET", "/ValueSet/administrative-gender/$ping", None, 405, id="ping-instance"),
    # Rule 2: complex inputs only by POST, also for a synthetic operation.
    pytest.param("GET", "/$ping", {"coding": "x"}, 400, id="ping-GET-complex"),
]


@pytest.fixture(scope="class")
def synthetic_url(default_wb: Workbench) -> Iterator[str]:
    """A server whose OPERATIONS include the synthetic ones, only while a class runs."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(app_module, "OPERATIONS", (*OPERATIONS, *SYNTHETIC))
        with serve_app(create_app(default_wb, token=TOKEN)) as running:
            yield running.url


class TestFrameworkRules:
    """Routes and bodies come from the definitions: rules 2, 4 and 6 on synthetic ones.

    The synthetic operations are added to ``OPERATIONS`` only while this class runs.
    """

    @pytest.mark.parametrize(("method", "path", "query", "status"), SYNTHETIC_CALLS)
    def test_levels_and_methods(
        self,
        synthetic_url: str,
        method: str,
        path: str,
        query: dict[str, str] | None,
        status: int,
    ) -> None:
        with client(synthetic_url) as http:
            if method == "GET":
                response = http.get(path, params=query)
            else:
                body = params(("coding", {"valueCoding": {"system": "http://x", "code": "y"}}))
                response = http.post(path, json=body, headers={"Content-Type": FHIR_JSON})
        if status == 200:
            assert ok_body(response)["parameter"][0]["name"] == "result"
            assert values(response.json())["result"] is (
                "administrative-gender" in path or (query is not None and "note" in query)
            )
        elif status == 405:
            assert_outcome(response, 405, "not-supported", r"changes state|not available at")
        elif status == 404:
            assert_outcome(response, 404, "not-found", r"Unknown operation|ValueSet/missing")
        else:
            assert_outcome(response, 400, "not-supported", r"'coding' has the complex type Coding")

    def test_rule_6(self, synthetic_url: str) -> None:
        """Only a single *required* resource-typed 'return' is sent bare; else Parameters."""
        with client(synthetic_url) as http:
            bare = ok_body(http.get("/ValueSet/$echo", params={"note": "hi"}), "ValueSet")
            assert bare == {"resourceType": "ValueSet", "status": "draft", "title": "hi"}
            optional = ok_body(http.get("/ValueSet/$maybe", params={"note": "hi"}))
            assert optional["parameter"] == [{"name": "return", "resource": bare}]
            text = ok_body(http.get("/ValueSet/$text", params={"note": "hi"}))
            assert text["parameter"] == [{"name": "return", "valueString": "hi"}]

    def test_definitions_are_served(self, synthetic_url: str) -> None:
        with client(synthetic_url) as http:
            caps = ok_body(http.get("/metadata"), "CapabilityStatement")
            found = ok_body(http.get("/OperationDefinition/ValueSet-touch"), "OperationDefinition")
        valueset = next(r for r in caps["rest"][0]["resource"] if r["type"] == "ValueSet")
        ops = {o["name"]: o["definition"] for o in valueset["operation"]}
        assert ops["touch"] == "http://example.org/fhir/OperationDefinition/ValueSet-touch"
        assert {"ping"} <= {o["name"] for o in caps["rest"][0].get("operation", [])}
        assert found["affectsState"] is True


# --- body size limit and unexpected exceptions ----------------------------------------


@pytest.fixture(scope="module")
def small_url(default_wb: Workbench) -> Iterator[str]:
    """A server built by hand with a 1000-byte body limit."""
    with serve_app(create_app(default_wb, token=TOKEN, max_body=1000)) as running:
        yield running.url


def _padded(size: int) -> bytes:
    """A valid $validate-code Parameters body of exactly ``size`` bytes."""
    base = params(URL_P, SYS_P, CODE_P, ("display", {"valueString": ""}))
    empty = len(json.dumps(base).encode())
    base["parameter"][-1]["valueString"] = "F" * (size - empty)
    data = json.dumps(base).encode()
    assert len(data) == size
    return data


@pytest.mark.parametrize(
    ("size", "chunked", "status"),
    [
        pytest.param(1000, False, 200, id="at-limit"),
        pytest.param(1001, False, 413, id="over-limit"),
        pytest.param(5000, False, 413, id="far-over"),
        pytest.param(1000, True, 200, id="at-limit-chunked"),
        pytest.param(1500, True, 413, id="over-limit-chunked"),
    ],
)
def test_body_size_limit(small_url: str, size: int, chunked: bool, status: int) -> None:
    data = _padded(size)
    content: Any = data
    if chunked:
        content = iter([data[:400], data[400:800], data[800:]])
    with client(small_url) as http:
        response = http.post(VC, content=content, headers={"Content-Type": FHIR_JSON})
    if status == 200:
        # The display is wrong (all F's), so the answer is result=false, but it is an answer.
        assert values(ok_body(response))["result"] is False
    else:
        assert_outcome(response, 413, "too-long", r"larger than the limit of 1000 bytes")


@pytest.mark.parametrize(
    ("method_name", "path", "query"),
    [
        pytest.param("validate", VC, GENDER_Q, id="validate-code"),
        pytest.param("expand", EXP, {"url": DEMO_ALL}, id="expand-in-threadpool"),
        pytest.param(
            "lookup", "/CodeSystem/$lookup", {"system": DEMO_CS, "code": "office"}, id="lookup"
        ),
    ],
)
def test_unexpected_exception_is_500(
    wb: Workbench,
    monkeypatch: pytest.MonkeyPatch,
    method_name: str,
    path: str,
    query: dict[str, str],
) -> None:
    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("kaboom: secret internal detail")

    monkeypatch.setattr(wb.service, method_name, explode)  # what the server calls
    # Assert only after the server has stopped: it logs the traceback in its own thread.
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as http:
        response = http.get(path, params=query)
    assert_outcome(
        response, 500, "exception", exactly("Internal server error; the server log has the details")
    )
    for leak in ("Traceback", "kaboom", "RuntimeError", "secret", 'File "'):
        assert leak not in response.text


# --- metadata and the OperationDefinitions --------------------------------------------

EXPECTED_OPERATIONS = {
    "ValueSet": {
        "validate-code": "http://hl7.org/fhir/OperationDefinition/ValueSet-validate-code",
        "expand": "http://hl7.org/fhir/OperationDefinition/ValueSet-expand",
        "batch-validate-code": (
            "http://hl7.org/fhir/uv/tx-ecosystem/OperationDefinition/ValueSet-batch-validate-code"
        ),
        "compare": "http://hl7.org/fhir/OperationDefinition/ValueSet-compare",
    },
    "CodeSystem": {
        "lookup": "http://hl7.org/fhir/OperationDefinition/CodeSystem-lookup",
        "validate-code": "http://hl7.org/fhir/OperationDefinition/CodeSystem-validate-code",
        "subsumes": "http://hl7.org/fhir/OperationDefinition/CodeSystem-subsumes",
        "batch-validate-code": (
            "http://hl7.org/fhir/uv/tx-ecosystem/OperationDefinition/CodeSystem-batch-validate-code"
        ),
    },
}


def test_metadata_without_token(server: ServerHandle) -> None:
    with client(server.url, token=None) as anonymous:
        caps = ok_body(anonymous.get("/metadata"), "CapabilityStatement")
    assert caps["fhirVersion"] == "4.0.1"
    assert caps["kind"] == "instance"
    assert caps["implementation"]["url"] == server.url
    resources = {r["type"]: r for r in caps["rest"][0]["resource"]}
    for rtype, operations in EXPECTED_OPERATIONS.items():
        interactions = {i["code"] for i in resources[rtype]["interaction"]}
        assert interactions >= {"read", "create", "update", "delete", "search-type"}
        listed = {o["name"]: o["definition"] for o in resources[rtype]["operation"]}
        assert listed == operations


def test_listed_definitions_resolve(http: httpx.Client) -> None:
    """Every operation's definition canonical is served under /OperationDefinition/<id>."""
    for operations in EXPECTED_OPERATIONS.values():
        for name, canonical in operations.items():
            found = ok_body(
                http.get(f"/OperationDefinition/{canonical.rsplit('/', 1)[1]}"),
                "OperationDefinition",
            )
            assert found["url"] == canonical
            shipped = DEFINITIONS / f"OperationDefinition-{canonical.rsplit('/', 1)[1]}.json"
            assert found == json.loads(shipped.read_text())
            assert found["code"] == name
            assert found["kind"] == "operation"


def test_base_url_ends_with_release(server: ServerHandle) -> None:
    """Section 9: the base address ends with the release segment R4."""
    assert server.url.startswith("http://127.0.0.1:")
    assert server.url.endswith("/R4")


def test_validate_code_definition_matches_spec(http: httpx.Client) -> None:
    """Sections 2.1 and 4.2: flags, inputs and outputs of ValueSet validate-code."""
    found = ok_body(http.get("/OperationDefinition/ValueSet-validate-code"), "OperationDefinition")
    assert found["url"] == "http://hl7.org/fhir/OperationDefinition/ValueSet-validate-code"
    assert found["kind"] == "operation"
    assert found["code"] == "validate-code"
    assert found["resource"] == ["ValueSet"]
    assert (found["system"], found["type"], found["instance"]) == (False, True, True)
    assert not found.get("affectsState", False)
    by_use = {
        (p["use"], p["name"]): (p["min"], p["max"], p.get("type")) for p in found["parameter"]
    }
    for name, kind in (
        ("url", "uri"),
        ("valueSet", "ValueSet"),
        ("code", "code"),
        ("system", "uri"),
        ("coding", "Coding"),
        ("codeableConcept", "CodeableConcept"),
        ("display", "string"),
        ("abstract", "boolean"),
    ):
        assert by_use[("in", name)] == (0, "1", kind), name
    assert by_use[("out", "result")] == (1, "1", "boolean")
    assert by_use[("out", "message")] == (0, "1", "string")
    assert by_use[("out", "display")] == (0, "1", "string")


def test_validate_code_definition_status_active(http: httpx.Client) -> None:
    found = ok_body(http.get("/OperationDefinition/ValueSet-validate-code"), "OperationDefinition")
    assert found["status"] == "active"


def test_pretty_and_format_are_general_parameters(http: httpx.Client) -> None:
    """_pretty/_format are not operation inputs; _pretty indents the same answer."""
    plain = http.get(VC, params=GENDER_Q)
    pretty = http.get(VC, params={**GENDER_Q, "_pretty": "true", "_format": "json"})
    assert pretty.status_code == plain.status_code == 200
    assert pretty.json() == plain.json()
    assert "\n" in pretty.text and "\n" not in plain.text
