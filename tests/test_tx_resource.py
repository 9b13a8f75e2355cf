"""Resources passed with a request (``tx-resource``), inline and contained value sets
(issue 9, point 7): used for that request only, preferred over stored ones, nothing stored,
and concurrent requests never see each other's."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from http_support import TOKEN, assert_outcome, client, params

from workbench import Workbench
from workbench.errors import InvalidRequestError, ValueSetNotFoundError

CS = "http://example.org/fhir/CodeSystem/sent"
VS = "http://example.org/fhir/ValueSet/sent"
IMPORTER = "http://example.org/fhir/ValueSet/sent-importer"
TREE = {
    "resourceType": "CodeSystem",
    "url": "http://example.org/fhir/CodeSystem/sent-tree",
    "status": "active",
    "content": "complete",
    "concept": [{"code": "a", "concept": [{"code": "b"}]}],
}


def codesystem(display: str, version: str = "1") -> dict[str, Any]:
    return {
        "resourceType": "CodeSystem",
        "url": CS,
        "version": version,
        "status": "active",
        "content": "complete",
        "concept": [{"code": "a", "display": display}, {"code": "b", "display": "B"}],
    }


def valueset(url: str = VS, **include: Any) -> dict[str, Any]:
    return {
        "resourceType": "ValueSet",
        "url": url,
        "status": "active",
        "compose": {"include": [include or {"system": CS}]},
    }


@pytest.fixture
def twb() -> Workbench:
    wb = Workbench()
    wb.load(codesystem("Stored"))
    return wb


@pytest.fixture
def http(twb: Workbench) -> Iterator[httpx.Client]:
    with twb.serve(port=0, token=TOKEN) as handle, client(handle.url) as session:
        yield session


def test_value_set_and_code_system_only_sent(twb: Workbench) -> None:
    other = {**codesystem("Other"), "url": CS + "-other"}
    sent = [other, valueset(system=CS + "-other")]
    result = twb.validate_code(VS, code="a", system=CS + "-other", tx_resources=sent)
    assert (result.result, result.display) == (True, "Other")
    assert twb.registry.get("ValueSet", VS) is None  # nothing stored
    assert twb.registry.get("CodeSystem", CS + "-other") is None
    with pytest.raises(ValueSetNotFoundError):
        twb.validate_code(VS, code="a", system=CS)


def test_sent_resources_are_preferred_over_stored_ones(twb: Workbench) -> None:
    sent = [codesystem("Sent"), valueset()]
    assert twb.validate_code(VS, code="a", system=CS, tx_resources=sent).display == "Sent"
    assert twb.lookup(CS, "a", tx_resources=[codesystem("Sent")]).display == "Sent"
    assert twb.lookup(CS, "a").display == "Stored"
    expansion = twb.expand(VS, tx_resources=sent)
    assert expansion.frame["display"].tolist() == ["Sent", "B"]


def test_imports_resolve_through_sent_value_sets(twb: Workbench) -> None:
    sent = [valueset(), valueset(IMPORTER, valueSet=[VS])]
    result = twb.validate_code(IMPORTER, code="b", system=CS, tx_resources=sent)
    assert (result.result, result.display) == (True, "B")


def test_contained_value_sets_by_reference(twb: Workbench) -> None:
    outer = {
        "resourceType": "ValueSet",
        "url": IMPORTER,
        "contained": [{**valueset(), "id": "inner", "url": None}],
        "compose": {"include": [{"valueSet": ["#inner"]}]},
    }
    outer["contained"][0].pop("url")
    assert twb.validate_code(valueset=outer, code="a", system=CS).result is True
    assert [e.code for e in twb.expand(outer).entries] == ["a", "b"]
    broken = {**outer, "compose": {"include": [{"valueSet": ["#missing"]}]}}
    with pytest.raises(ValueSetNotFoundError, match="#missing"):
        twb.expand(broken)
    # $validate-code: the import cannot be evaluated, so the code is not valid (issue 22, a11)
    result = twb.validate_code(valueset=broken, code="a", system=CS)
    assert (result.result, result.issue) == (False, "unknown-valueset")
    assert "'#missing' could not be found (no contained ValueSet" in str(result.message)


BAD = [
    pytest.param(
        {"resourceType": "Patient", "id": "p"}, r"must be a CodeSystem or a ValueSet", id="patient"
    ),
    pytest.param({k: v for k, v in valueset().items() if k != "url"}, r"needs a url", id="no-url"),
    pytest.param(
        {**valueset(), "compose": {"include": [{"concept": [{"code": "a"}]}]}},  # vsd-2
        r"tx-resource is not valid",
        id="malformed-valueset",
    ),
]


@pytest.mark.parametrize(("resource", "text"), BAD)
def test_bad_tx_resources(twb: Workbench, http: httpx.Client, resource: Any, text: str) -> None:
    with pytest.raises(InvalidRequestError, match=text):
        twb.validate_code(VS, code="a", system=CS, tx_resources=[resource])
    body = params(
        ("url", {"valueUri": VS}),
        ("system", {"valueUri": CS}),
        ("code", {"valueCode": "a"}),
        ("tx-resource", {"resource": resource}),
    )
    assert_outcome(http.post("/ValueSet/$validate-code", json=body), 400, "invalid", text)
    assert twb.registry.get("ValueSet", VS) is None


def test_every_operation_takes_tx_resource(http: httpx.Client) -> None:
    sent = [
        ("tx-resource", {"resource": codesystem("Sent")}),
        ("tx-resource", {"resource": valueset()}),
    ]
    answer = http.post(
        "/ValueSet/$validate-code",
        json=params(
            ("url", {"valueUri": VS}),
            ("code", {"valueCode": "a"}),
            ("system", {"valueUri": CS}),
            *sent,
        ),
    ).json()
    assert {"name": "display", "valueString": "Sent"} in answer["parameter"]
    expanded = http.post("/ValueSet/$expand", json=params(("url", {"valueUri": VS}), *sent)).json()
    assert [c["display"] for c in expanded["expansion"]["contains"]] == ["Sent", "B"]
    looked = http.post(
        "/CodeSystem/$lookup",
        json=params(("system", {"valueUri": CS}), ("code", {"valueCode": "a"}), sent[0]),
    ).json()
    assert {"name": "display", "valueString": "Sent"} in looked["parameter"]
    checked = http.post(
        "/CodeSystem/$validate-code",
        json=params(("url", {"valueUri": CS}), ("code", {"valueCode": "a"}), sent[0]),
    ).json()
    assert {"name": "display", "valueString": "Sent"} in checked["parameter"]
    subsumed = http.post(
        "/CodeSystem/$subsumes",
        json=params(
            ("system", {"valueUri": CS + "-tree"}),
            ("codeA", {"valueCode": "a"}),
            ("codeB", {"valueCode": "b"}),
            ("tx-resource", {"resource": TREE}),
        ),
    ).json()
    assert subsumed["parameter"] == [{"name": "outcome", "valueCode": "subsumes"}]
    # and nothing of it was stored
    assert http.get("/ValueSet", params={"url": VS}).json().get("total") == 0


def test_concurrent_requests_do_not_see_each_others_resources(http: httpx.Client) -> None:
    def ask(n: int) -> str:
        body = params(
            ("url", {"valueUri": VS}),
            ("system", {"valueUri": CS}),
            ("code", {"valueCode": "a"}),
            ("tx-resource", {"resource": codesystem(f"Sent {n}")}),
            ("tx-resource", {"resource": valueset()}),
        )
        with client(str(http.base_url)) as own:
            found = own.post("/ValueSet/$validate-code", json=body).json()["parameter"]
        return next(p["valueString"] for p in found if p["name"] == "display")

    with ThreadPoolExecutor(max_workers=8) as pool:
        displays = list(pool.map(ask, range(64)))
    assert displays == [f"Sent {n}" for n in range(64)]


def test_default_valueset_version_for_imports(twb: Workbench) -> None:
    sent = [
        {
            **valueset(),
            "version": "1",
            "compose": {"include": [{"system": CS, "concept": [{"code": "a"}]}]},
        },
        {
            **valueset(),
            "version": "2",
            "compose": {"include": [{"system": CS, "concept": [{"code": "b"}]}]},
        },
        valueset(IMPORTER, valueSet=[VS]),
    ]
    latest = twb.validate_code(IMPORTER, code="a", system=CS, tx_resources=sent)
    assert latest.result is False  # version 2 (the latest) has only b
    pinned = twb.validate_code(
        IMPORTER, code="a", system=CS, tx_resources=sent, default_valueset_version=f"{VS}|1"
    )
    assert pinned.result is True


def test_unresolved_contained_reference_over_http(http: httpx.Client) -> None:
    broken = {
        "resourceType": "ValueSet",
        "url": IMPORTER,
        "compose": {"include": [{"valueSet": ["#missing"]}]},
    }
    body = params(
        ("valueSet", {"resource": broken}),
        ("system", {"valueUri": CS}),
        ("code", {"valueCode": "a"}),
    )
    response = http.post("/ValueSet/$validate-code", json=body)
    assert response.status_code == 200, response.text  # result=false (issue 22, a11)
    issue = response.json()["parameter"][-1]["resource"]["issue"][0]
    shape = (issue["severity"], issue["code"], "expression" in issue)
    assert shape == ("error", "not-found", False)
    expanded = http.post("/ValueSet/$expand", json=params(("valueSet", {"resource": broken})))
    assert 400 <= expanded.status_code < 500
    assert "#missing (no contained ValueSet" in expanded.json()["issue"][0]["details"]["text"]
