"""$expand parameters as the tx ecosystem asks (issue 9, point 9): version parameters, every
parameter echoed, used-codesystem/used-valueset with versions, includeDefinition and concept
properties (as R4 cross-version extensions), in Python and over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from http_support import TOKEN, assert_outcome, client, params

from workbench import Workbench
from workbench.errors import VersionCheckError

S = "http://example.org/fhir/CodeSystem/expand-params"
VS = "http://example.org/fhir/ValueSet/expand-params"
OUTER = "http://example.org/fhir/ValueSet/expand-params-outer"
R5 = "http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.expansion."


def codesystem(version: str) -> dict[str, Any]:
    return {
        "resourceType": "CodeSystem",
        "url": S,
        "version": version,
        "status": "active",
        "content": "complete",
        "property": [{"code": "weight", "type": "integer"}],
        "concept": [
            {
                "code": "a",
                "display": f"A {version}",
                "definition": "The first",
                "property": [{"code": "weight", "valueInteger": 3}],
                "concept": [{"code": "a1", "display": "A one"}],
            }
        ],
    }


RESOURCES = [
    codesystem("1.0.0"),
    codesystem("2.0.0"),
    {
        "resourceType": "ValueSet",
        "url": VS,
        "version": "3",
        "status": "active",
        "compose": {"include": [{"system": S}]},
    },
    {
        "resourceType": "ValueSet",
        "url": OUTER,
        "status": "active",
        "compose": {"include": [{"valueSet": [VS]}]},
    },
]


@pytest.fixture(scope="module")
def ewb() -> Workbench:
    wb = Workbench()
    wb.load(RESOURCES)
    return wb


@pytest.fixture(scope="module")
def http(ewb: Workbench) -> Iterator[httpx.Client]:
    with ewb.serve(port=0, token=TOKEN) as handle, client(handle.url) as session:
        yield session


def echoed(expansion: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        (p["name"], next(v for k, v in p.items() if k.startswith("value")))
        for p in expansion["parameter"]
    ]


CASES = [
    pytest.param(
        {},
        "A 2.0.0",
        [("used-codesystem", f"{S}|2.0.0"), ("used-valueset", f"{VS}|3")],
        id="latest",
    ),
    pytest.param(
        {"system_version": f"{S}|1.x"},
        "A 1.0.0",
        [("system-version", f"{S}|1.x"), ("used-codesystem", f"{S}|1.0.0")],
        id="system-version",
    ),
    pytest.param(
        {"force_system_version": f"{S}|1.0.0"},
        "A 1.0.0",
        [("force-system-version", f"{S}|1.0.0"), ("used-codesystem", f"{S}|1.0.0")],
        id="force-system-version",
    ),
    pytest.param(
        {"check_system_version": f"{S}|2.x"},
        "A 2.0.0",
        [("check-system-version", f"{S}|2.x"), ("used-codesystem", f"{S}|2.0.0")],
        id="check-passes",
    ),
]

_WIRE = {
    "system_version": "system-version",
    "force_system_version": "force-system-version",
    "check_system_version": "check-system-version",
}


@pytest.mark.parametrize(("kwargs", "display", "echo"), CASES)
def test_versions_and_echo(
    ewb: Workbench,
    http: httpx.Client,
    kwargs: dict[str, Any],
    display: str,
    echo: list[tuple[str, Any]],
) -> None:
    expansion = ewb.expand(OUTER, **kwargs).to_fhir()
    assert expansion["contains"][0]["display"] == display
    got = echoed(expansion)
    assert got[:3] == [
        ("activeOnly", False),
        ("includeDesignations", False),
        ("includeDefinition", False),
    ]
    assert all(item in got for item in echo), got
    query = {"url": OUTER, **{_WIRE[k]: v for k, v in kwargs.items()}}
    answer = http.get("/ValueSet/$expand", params=query).json()
    assert echoed(answer["expansion"]) == got


def test_check_system_version_refuses_another_version(ewb: Workbench, http: httpx.Client) -> None:
    """A pinned include whose version the check does not allow (a versionless include takes
    the check's latest match instead: test_conformance_versions, b2)."""
    text = r"The version '2\.0\.0' is not allowed for system '.*': required to be '1\.x'"
    pinned = {
        "resourceType": "ValueSet",
        "compose": {"include": [{"system": S, "version": "2.0.0"}]},
    }
    with pytest.raises(VersionCheckError, match=text):
        ewb.expand(pinned, check_system_version=f"{S}|1.x")
    body = params(
        ("valueSet", {"resource": pinned}), ("check-system-version", {"valueUri": f"{S}|1.x"})
    )
    response = http.post("/ValueSet/$expand", json=body)
    outcome = assert_outcome(response, 422, "exception", text)
    assert outcome["issue"][0]["details"]["coding"][0] == {
        "system": "http://hl7.org/fhir/tools/CodeSystem/tx-issue-type",
        "code": "version-error",
    }


def test_definition_and_properties(ewb: Workbench, http: httpx.Client) -> None:
    expansion = ewb.expand(
        VS, include_definition=True, properties=["weight", "parent", "inactive"]
    ).to_fhir()
    first, second = expansion["contains"]
    assert first["extension"] == [
        {
            "url": "http://hl7.org/fhir/StructureDefinition/valueset-concept-definition",
            "valueString": "The first",
        },
        {
            "url": R5 + "contains.property",
            "extension": [
                {"url": "code", "valueCode": "weight"},
                {"url": "value", "valueInteger": 3},
            ],
        },
        {
            "url": R5 + "contains.property",
            "extension": [
                {"url": "code", "valueCode": "inactive"},
                {"url": "value", "valueBoolean": False},
            ],
        },
    ]
    assert {"url": "code", "valueCode": "parent"} in second["extension"][1]["extension"]
    assert {"url": "value", "valueCode": "a"} in second["extension"][1]["extension"]
    declared = [e["extension"][0]["valueCode"] for e in expansion["extension"]]
    assert declared == ["inactive", "parent", "weight"]
    body = params(
        ("url", {"valueUri": VS}),
        ("includeDefinition", {"valueBoolean": True}),
        ("property", {"valueString": "weight"}),
        ("property", {"valueString": "parent"}),
        ("property", {"valueString": "inactive"}),
    )
    answer = http.post("/ValueSet/$expand", json=body).json()["expansion"]
    assert answer["contains"] == expansion["contains"]


def test_nested_contains_when_nesting_is_allowed(ewb: Workbench, http: httpx.Client) -> None:
    flat = ewb.expand(VS).to_fhir()["contains"]
    assert [c["code"] for c in flat] == ["a", "a1"]
    nested = ewb.expand(VS, exclude_nested=False).to_fhir()["contains"]
    assert [c["code"] for c in nested] == ["a"]
    assert [c["code"] for c in nested[0]["contains"]] == ["a1"]
    answer = http.get("/ValueSet/$expand", params={"url": VS, "excludeNested": "false"}).json()
    assert answer["expansion"]["contains"] == nested
    paged = ewb.expand(VS, exclude_nested=False, count=5).to_fhir()["contains"]
    assert [c["code"] for c in paged] == ["a", "a1"]  # a page stays flat


def test_a_parent_cycle_nests_nothing() -> None:
    wb = Workbench()
    wb.load(
        {
            "resourceType": "CodeSystem",
            "url": "http://example.org/fhir/CodeSystem/cycle",
            "content": "complete",
            "property": [{"code": "parent", "type": "code"}],
            "concept": [
                {"code": "x", "property": [{"code": "parent", "valueCode": "y"}]},
                {"code": "y", "property": [{"code": "parent", "valueCode": "x"}]},
            ],
        }
    )
    vs = {
        "resourceType": "ValueSet",
        "compose": {"include": [{"system": "http://example.org/fhir/CodeSystem/cycle"}]},
    }
    contains = wb.expand(vs, exclude_nested=False).to_fhir()["contains"]
    assert sorted(c["code"] for c in contains) == ["x", "y"]


@pytest.mark.parametrize(
    "compose",
    [
        {"include": [{"system": S, "concept": [{"code": "a"}]}],
         "exclude": [{"system": S, "concept": [{"code": "a"}]}]},
        {"include": [{"system": S, "filter": [{"property": "code", "op": "regex",
                                                "value": "z+"}]}]},
    ],
    ids=["everything-excluded", "a-filter-that-finds-none"],
)  # fmt: skip
def test_a_code_system_drawn_on_is_used_when_no_code_of_it_is_left(
    ewb: Workbench, http: httpx.Client, compose: dict[str, Any]
) -> None:
    """An empty expansion still names the code system its includes drew on (as
    tx.fhir.org's; HL7's tx-ecosystem test exclude-zero), in Python and over HTTP."""
    vs = {"resourceType": "ValueSet", "status": "active", "compose": compose}
    expansion = ewb.expand(vs).to_fhir()
    assert expansion["total"] == 0 and "contains" not in expansion
    assert ("used-codesystem", f"{S}|2.0.0") in echoed(expansion)
    body = params(("valueSet", {"resource": vs}))
    answer = http.post("/ValueSet/$expand", json=body).json()
    assert ("used-codesystem", f"{S}|2.0.0") in echoed(answer["expansion"])


@pytest.mark.parametrize(
    ("versions", "named"),
    [(["1.0.0"], False), (["2.0.0"], False), (["1.0.0", "2.0.0"], True)],
    ids=["one-version", "the-other-version", "both-versions"],
)
def test_an_item_names_its_version_only_beside_another_version_of_its_system(
    ewb: Workbench, http: httpx.Client, versions: list[str], named: bool
) -> None:
    """As tx.fhir.org's expansions: ``used-codesystem`` names the version of each system;
    an item repeats it only where the expansion holds several versions of its system."""
    vs = {
        "resourceType": "ValueSet",
        "status": "active",
        "compose": {"include": [{"system": S, "version": v} for v in versions]},
    }
    for expansion in (
        ewb.expand(vs).to_fhir(),
        http.post("/ValueSet/$expand", json=params(("valueSet", {"resource": vs}))).json()[
            "expansion"
        ],
    ):
        items = expansion["contains"]
        assert {c["code"] for c in items} == {"a", "a1"}
        if named:
            assert sorted(c["version"] for c in items) == sorted(versions * 2)
        else:
            assert all("version" not in c for c in items)
            assert ("used-codesystem", f"{S}|{versions[0]}") in echoed(expansion)
