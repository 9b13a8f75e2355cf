"""Issue 22: structure and cost rules e2, e3 and c4, and the TerminologyCapabilities point
("lists every parameter above as supported"), in Python and over HTTP. Each test is named
after its rule."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from http_support import TOKEN, assert_outcome, client, params, values

from workbench import Workbench
from workbench.errors import InvalidRequestError, InvalidValueSetError
from workbench.operations import OPERATIONS
from workbench.server.call_headers import too_costly_threshold

CS = "http://example.org/fhir/CodeSystem/conformance-structure"
VS = "http://example.org/fhir/ValueSet/conformance-structure"
TX_ISSUE_TYPE = "http://hl7.org/fhir/tools/CodeSystem/tx-issue-type"
ABSENT = "http://hl7.org/fhir/StructureDefinition/data-absent-reason"


def codesystem(url: str = CS, **extra: Any) -> dict[str, Any]:
    """A small hierarchy a > b, a > c (without ``status`` unless ``extra`` gives one)."""
    return {
        "resourceType": "CodeSystem",
        "url": url,
        "content": "complete",
        "concept": [
            {
                "code": "a",
                "display": "A",
                "concept": [{"code": "b", "display": "B"}, {"code": "c", "display": "C"}],
            }
        ],
        **extra,
    }


def valueset(url: str = VS, *, include: Any = None, **extra: Any) -> dict[str, Any]:
    """A value set of the whole code system (without ``status`` unless given)."""
    return {
        "resourceType": "ValueSet",
        "url": url,
        "compose": {"include": [include or {"system": CS}]},
        **extra,
    }


#: filters without a value: absent, and only a ``_value`` with a data-absent-reason
NO_VALUE = [
    {"property": "concept", "op": "is-a"},
    {
        "property": "concept",
        "op": "is-a",
        "_value": {"extension": [{"url": ABSENT, "valueCode": "unknown"}]},
    },
]


def no_value_valueset(url: str, filter_: dict[str, Any], *, exclude: bool = False) -> Any:
    """A value set whose include (or exclude, after a plain include) has ``filter_``."""
    clause = {"system": CS, "filter": [filter_]}
    compose: dict[str, Any] = {"include": [clause]}
    if exclude:
        compose = {"include": [{"system": CS}], "exclude": [clause]}
    return {"resourceType": "ValueSet", "url": url, "status": "active", "compose": compose}


@pytest.fixture
def wb() -> Workbench:
    bench = Workbench()
    bench.load([codesystem(status="active"), valueset(status="active")], progress=False)
    return bench


@pytest.fixture
def http(wb: Workbench) -> Iterator[httpx.Client]:
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as session:
        yield session


def _warnings(outcome: dict[str, Any]) -> list[tuple[str, str, list[str], list[str]]]:
    return [
        (i["severity"], i["code"], i.get("expression", []), i.get("location", []))
        for i in outcome["issue"]
        if i["severity"] == "warning"
    ]


def _tx(outcome: dict[str, Any]) -> list[str]:
    return [
        c["code"]
        for i in outcome["issue"]
        for c in i["details"].get("coding", ())
        if c["system"] == TX_ISSUE_TYPE
    ]


# --- e2: no rejection for defects that do not matter to the request ------------------------


@pytest.mark.parametrize(
    ("rtype", "resource"),
    [
        ("CodeSystem", codesystem("http://example.org/fhir/CodeSystem/no-status")),
        ("ValueSet", valueset("http://example.org/fhir/ValueSet/no-status")),
    ],
)
def test_e2_put_without_status_is_stored_with_a_warning(
    http: httpx.Client, rtype: str, resource: dict[str, Any]
) -> None:
    answer = http.put(
        f"/{rtype}/no-status",
        json={**resource, "id": "no-status"},
        headers={"Prefer": "return=OperationOutcome"},
    )
    assert answer.status_code == 201, answer.text
    outcome = answer.json()
    assert outcome["issue"][0]["severity"] == "information"
    where = f"{rtype}.status"
    assert _warnings(outcome) == [("warning", "structure", [where], [where])]
    stored = http.get(f"/{rtype}/no-status").json()
    assert "status" not in stored
    assert stored["url"] == resource["url"]
    plain = http.put(f"/{rtype}/no-status", json={**resource, "id": "no-status"})
    assert plain.status_code == 200 and plain.json()["resourceType"] == rtype


def test_e2_resources_without_status_answer_as_any_other(http: httpx.Client) -> None:
    cs_url = "http://example.org/fhir/CodeSystem/no-status"
    vs_url = "http://example.org/fhir/ValueSet/no-status"
    http.put("/CodeSystem/cs", json={**codesystem(cs_url), "id": "cs"})
    http.put("/ValueSet/vs", json={**valueset(vs_url, include={"system": cs_url}), "id": "vs"})
    checked = http.get("/CodeSystem/$validate-code", params={"url": cs_url, "code": "b"}).json()
    assert values(checked, "result") == [True] and values(checked, "display") == ["B"]
    expanded = http.get("/ValueSet/$expand", params={"url": vs_url}).json()
    assert [c["code"] for c in expanded["expansion"]["contains"]] == ["a", "b", "c"]


@pytest.mark.parametrize(
    "body",
    [
        {**codesystem("http://example.org/fhir/CodeSystem/bad"), "status": 5},
        {**codesystem("http://example.org/fhir/CodeSystem/bad"), "status": "active", "count": "3"},
        {"resourceType": "CodeSystem", "url": "http://example.org/fhir/CodeSystem/bad"},
    ],
    ids=["status not a code", "count not an integer", "no content"],
)
def test_e2_other_structure_errors_stay_400(http: httpx.Client, body: dict[str, Any]) -> None:
    answer = http.put("/CodeSystem/bad", json={**body, "id": "bad"})
    assert_outcome(answer, 400, "structure", "CodeSystem")
    assert http.get("/CodeSystem/bad").status_code == 404


def test_e2_load_without_status_python() -> None:
    bench = Workbench()
    summary = bench.load([codesystem(), valueset()], progress=False)
    assert summary.warnings == (
        f"{CS}: CodeSystem.status is missing (required in R4); the CodeSystem is kept as it "
        "is, since its status changes no terminology answer",
        f"{VS}: ValueSet.status is missing (required in R4); the ValueSet is kept as it is, "
        "since its status changes no terminology answer",
    )
    assert "2 warnings" in repr(summary)
    assert bench.validate_code(VS, code="c", system=CS).result
    assert [e.code for e in bench.expand(VS).entries] == ["a", "b", "c"]


def test_e2_tx_resource_without_status(http: httpx.Client, wb: Workbench) -> None:
    other = "http://example.org/fhir/CodeSystem/sent-without-status"
    sent = [codesystem(other), valueset(include={"system": other})]
    found = wb.validate_code(VS, code="b", system=other, tx_resources=sent)
    assert (found.result, found.display) == (True, "B")
    body = http.post(
        "/ValueSet/$validate-code",
        json=params(
            ("url", {"valueUri": VS}),
            ("code", {"valueCode": "b"}),
            ("system", {"valueUri": other}),
            *(("tx-resource", {"resource": r}) for r in sent),
        ),
    ).json()
    assert values(body, "result") == [True]


@pytest.mark.parametrize("filter_", NO_VALUE, ids=["absent", "data-absent-reason"])
def test_e2_filter_without_value_is_storable(http: httpx.Client, filter_: dict[str, Any]) -> None:
    resource = {**no_value_valueset(f"{VS}-no-value", filter_), "id": "no-value"}
    answer = http.put(
        "/ValueSet/no-value", json=resource, headers={"Prefer": "return=OperationOutcome"}
    )
    assert answer.status_code == 201, answer.text
    where = "ValueSet.compose.include[0].filter[0].value"
    assert _warnings(answer.json()) == [("warning", "structure", [where], [where])]
    assert http.get("/ValueSet/no-value").json()["compose"] == resource["compose"]


@pytest.mark.parametrize("filter_", NO_VALUE, ids=["absent", "data-absent-reason"])
def test_e2_unused_tx_resource_with_a_filter_without_value(
    http: httpx.Client, wb: Workbench, filter_: dict[str, Any]
) -> None:
    unused = no_value_valueset(f"{VS}-unused", filter_)
    assert wb.validate_code(VS, code="a", system=CS, tx_resources=[unused]).result
    body = http.post(
        "/ValueSet/$validate-code",
        json=params(
            ("url", {"valueUri": VS}),
            ("code", {"valueCode": "a"}),
            ("system", {"valueUri": CS}),
            ("tx-resource", {"resource": unused}),
        ),
    ).json()
    assert values(body, "result") == [True]


def test_e2_load_of_a_filter_without_value_python() -> None:
    bench = Workbench()
    summary = bench.load(no_value_valueset(VS, NO_VALUE[0]), progress=False)
    assert summary.valuesets == (VS,)
    assert summary.warnings == (
        f"{VS}: ValueSet.compose.include[0].filter[0].value is missing (required in R4); the "
        "value set is kept, but expanding it or validating against it fails",
    )


# --- e3: a filter without a value, when used -----------------------------------------------

USED = [
    (NO_VALUE[0], False, "ValueSet.compose.include[0].filter[0].value"),
    (NO_VALUE[1], False, "ValueSet.compose.include[0].filter[0].value"),
    (NO_VALUE[0], True, "ValueSet.compose.exclude[0].filter[0].value"),
]
USED_IDS = ["absent", "data-absent-reason", "in an exclude"]


@pytest.mark.parametrize(("filter_", "exclude", "where"), USED, ids=USED_IDS)
def test_e3_filter_without_value_when_used(
    wb: Workbench, filter_: dict[str, Any], exclude: bool, where: str
) -> None:
    wb.load(no_value_valueset(f"{VS}-used", filter_, exclude=exclude), progress=False)
    sent = [no_value_valueset(f"{VS}-sent", filter_, exclude=exclude)]
    for call in (
        lambda: wb.expand(f"{VS}-used"),
        lambda: wb.validate_code(f"{VS}-used", code="a", system=CS),
        lambda: wb.expand(f"{VS}-sent", tx_resources=sent),
        lambda: wb.validate_code(f"{VS}-sent", code="a", system=CS, tx_resources=sent),
    ):
        with pytest.raises(InvalidValueSetError, match="has no value") as raised:
            call()
        assert raised.value.expression == [where]
        assert (raised.value.code, raised.value.tx) == ("invalid", "vs-invalid")


@pytest.mark.parametrize(("filter_", "exclude", "where"), USED, ids=USED_IDS)
@pytest.mark.parametrize("how", ["stored", "tx-resource"])
@pytest.mark.parametrize("operation", ["$expand", "$validate-code"])
def test_e3_filter_without_value_when_used_http(
    http: httpx.Client,
    filter_: dict[str, Any],
    exclude: bool,
    where: str,
    how: str,
    operation: str,
) -> None:
    used = no_value_valueset(f"{VS}-used", filter_, exclude=exclude)
    inputs: list[tuple[str, dict[str, Any]]] = [("url", {"valueUri": f"{VS}-used"})]
    if how == "stored":
        assert http.put("/ValueSet/used", json={**used, "id": "used"}).status_code == 201
    else:
        inputs.append(("tx-resource", {"resource": used}))
    if operation == "$validate-code":
        inputs += [("code", {"valueCode": "a"}), ("system", {"valueUri": CS})]
    answer = http.post(f"/ValueSet/{operation}", json=params(*inputs))
    outcome = assert_outcome(answer, 400, "invalid", "has no value")
    issue = outcome["issue"][0]
    assert (issue["expression"], issue["location"]) == ([where], [where])
    assert _tx(outcome) == ["vs-invalid"]


# --- c4: X-TOO-COSTLY-THRESHOLD ------------------------------------------------------------


@pytest.mark.parametrize(
    ("threshold", "query", "status"),
    [
        ("2", {}, 422),
        ("2", {"count": "2"}, 200),
        ("2", {"count": "10"}, 200),
        ("3", {}, 200),
        ("0", {"count": "0"}, 200),
        (None, {}, 200),
    ],
)
def test_c4_too_costly_threshold_http(
    http: httpx.Client, threshold: str | None, query: dict[str, str], status: int
) -> None:
    headers = {"X-TOO-COSTLY-THRESHOLD": threshold} if threshold is not None else {}
    answer = http.get("/ValueSet/$expand", params={"url": VS, **query}, headers=headers)
    if status == 422:
        assert_outcome(answer, 422, "too-costly", r"3 codes, more than the 2 the request allows")
        return
    assert answer.status_code == 200, answer.text
    assert answer.json()["expansion"]["total"] == 3


def test_c4_threshold_applies_to_expand_only(http: httpx.Client) -> None:
    answer = http.get(
        "/ValueSet/$validate-code",
        params={"url": VS, "code": "a", "system": CS},
        headers={"X-TOO-COSTLY-THRESHOLD": "1"},
    )
    assert values(answer.json(), "result") == [True]


@pytest.mark.parametrize("text", ["many", "-1", "2.5", ""])
def test_c4_threshold_must_be_a_whole_number(http: httpx.Client, text: str) -> None:
    with pytest.raises(InvalidRequestError, match="whole number"):
        too_costly_threshold(text)
    answer = http.get(
        "/ValueSet/$expand", params={"url": VS}, headers={"X-TOO-COSTLY-THRESHOLD": text}
    )
    assert_outcome(answer, 400, "invalid", "X-TOO-COSTLY-THRESHOLD header must be a whole")


def test_c4_threshold_python() -> None:
    assert (too_costly_threshold(None), too_costly_threshold("25")) == (None, 25)


# --- TerminologyCapabilities: every parameter of issue 22 is supported ---------------------

#: The operation inputs issue 22's rules use, per operation
ISSUE_22_INPUTS = {
    "ValueSet-expand": {
        "url",
        "valueSet",
        "valueSetVersion",
        "tx-resource",
        "displayLanguage",
        "useSupplement",
        "system-version",
        "check-system-version",
        "force-system-version",
        "default-valueset-version",
        "activeOnly",
        "count",
        "offset",
        "allowMaximumSizeExpansion",
        "excludePostCoordinated",
        "includeDesignations",
        "property",
    },
    "ValueSet-validate-code": {
        "url",
        "valueSet",
        "code",
        "system",
        "version",
        "systemVersion",
        "display",
        "coding",
        "codeableConcept",
        "abstract",
        "activeOnly",
        "inferSystem",
        "displayLanguage",
        "useSupplement",
        "tx-resource",
        "system-version",
        "check-system-version",
        "force-system-version",
        "default-valueset-version",
        "lenient-display-validation",
        "valueset-membership-only",
    },
    "CodeSystem-validate-code": {
        "url",
        "code",
        "system",
        "version",
        "display",
        "coding",
        "codeableConcept",
        "abstract",
        "displayLanguage",
        "tx-resource",
    },
    "CodeSystem-lookup": {
        "system",
        "code",
        "coding",
        "version",
        "displayLanguage",
        "property",
        "useSupplement",
        "tx-resource",
    },
}


def test_capabilities_list_every_parameter_of_issue_22(http: httpx.Client) -> None:
    caps = http.get("/metadata", params={"mode": "terminology"}).json()
    listed = {p["name"] for p in caps["expansion"]["parameter"]}
    assert ISSUE_22_INPUTS["ValueSet-expand"] <= listed
    statement = http.get("/metadata").json()
    declared = {
        op["definition"].rsplit("/", 1)[-1]
        for resource in statement["rest"][0]["resource"]
        for op in resource.get("operation", ())
    }
    honoured = {op.definition.id: op.supported for op in OPERATIONS}
    for op_id, inputs in ISSUE_22_INPUTS.items():
        assert op_id in declared
        assert inputs <= honoured[op_id], (op_id, inputs - honoured[op_id])
        definition = http.get(f"/OperationDefinition/{op_id}").json()
        names = {p["name"] for p in definition["parameter"] if p["use"] == "in"}
        assert inputs <= names, (op_id, inputs - names)
