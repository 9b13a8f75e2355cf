"""ConceptMap over HTTP with the real R4 example maps and the project's own: search
parameters, ``dependency`` (POST only), what /metadata says, and every bad input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_support import TOKEN, assert_outcome, client

from tests.conftest import EXAMPLES, VALUESETS
from tests.test_conceptmap import LOOP1, LOOP2, MAIN, A
from workbench import Workbench

GENDER = "http://hl7.org/fhir/administrative-gender"
V2_0001 = "http://terminology.hl7.org/CodeSystem/v2-0001"
EXAMPLE2 = "http://hl7.org/fhir/ConceptMap/example2"
DEP_ELEMENT = "http://example.org/fhir/property-value/example"
DEP_SYSTEM = "http://example.org/fhir/example3"
OWN = [
    {**MAIN, "id": "main", "status": "active", "name": "MainTestMap"},
    {**LOOP1, "id": "loop1", "status": "active"},
    {**LOOP2, "id": "loop2", "status": "active"},
]


def r4_maps(package_dirs: dict[str, Path]) -> list[dict[str, Any]]:
    folder = package_dirs[EXAMPLES[0]]
    return [
        json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(folder.glob("**/ConceptMap-*.json"))
    ]


@pytest.fixture(scope="module")
def http(package_dirs: dict[str, Path]) -> Iterator[httpx.Client]:
    wb = Workbench()
    wb.load(VALUESETS, progress=False)
    wb.load([*r4_maps(package_dirs), *(dict(m) for m in OWN)], progress=False)
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as session:
        yield session


def ids(http: httpx.Client, params: dict[str, str]) -> set[str]:
    response = http.get("/ConceptMap", params=params)
    assert response.status_code == 200, response.text
    bundle = response.json()
    entries = bundle.get("entry", [])
    assert bundle["total"] == len(entries)
    return {e["resource"]["id"] for e in entries}


# --- search -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (
            {"source": "http://hl7.org/fhir/ValueSet/administrative-gender"},
            {"cm-administrative-gender-v2", "cm-administrative-gender-v3"},
        ),
        # a version in the search value must match; the maps' scopes carry none
        ({"source": "http://hl7.org/fhir/ValueSet/administrative-gender|4.0.1"}, set()),
        (
            {"target": "http://terminology.hl7.org/ValueSet/v2-0001"},
            {"cm-administrative-gender-v2"},
        ),
        ({"target": "http://snomed.info/sct?fhir_vs"}, {"102"}),
        ({"source": "http://example.org/fhir/example1"}, {"example2"}),
        ({"source-uri": "http://example.org/fhir/example1"}, {"example2"}),
        ({"source-uri": "http://hl7.org/fhir/ValueSet/administrative-gender"}, set()),
        ({"target-uri": "http://example.org/fhir/example2"}, {"example2"}),
        (
            {"source-system": GENDER},
            {"cm-administrative-gender-v2", "cm-administrative-gender-v3"},
        ),
        ({"source-system": "http://snomed.info/sct"}, {"103"}),
        ({"target-system": "http://snomed.info/sct"}, {"102"}),
        ({"target-system": V2_0001}, {"cm-administrative-gender-v2"}),
        ({"source-system": A}, {"main", "loop1", "loop2"}),
        ({"source-system": A, "url": MAIN["url"]}, {"main"}),
        ({"source-system": A, "name": "maintest"}, {"main"}),
        ({"source-system": A, "status": "draft"}, set()),
        (
            {"source-system": "http://snomed.info/sct,http://example.org/fhir/example1"},
            {"103", "example2"},
        ),
        ({"source-code": "5", "source-system": A}, {"main"}),
        ({"target-code": f"{V2_0001}|A"}, {"cm-administrative-gender-v2"}),
        ({"target-code": "d2"}, {"main"}),
        ({"url": EXAMPLE2, "version": "4.0.1"}, {"example2"}),
        ({"url": EXAMPLE2, "version": "9"}, set()),
    ],
)
def test_search(http: httpx.Client, params: dict[str, str], expected: set[str]) -> None:
    assert ids(http, params) == expected


def test_search_parameters_checked_when_strict(http: httpx.Client) -> None:
    response = http.get(
        "/ConceptMap", params={"product": "x"}, headers={"Prefer": "handling=strict"}
    )
    assert_outcome(response, 400, "invalid", r"Unknown search parameter 'product'.*target-system")
    ok = http.get(
        "/ConceptMap", params={"target-system": V2_0001}, headers={"Prefer": "handling=strict"}
    )
    assert ok.status_code == 200 and ok.json()["total"] == 1
    # ValueSets have no source-system: with strict handling that is refused
    refused = http.get(
        "/ValueSet", params={"source-system": GENDER}, headers={"Prefer": "handling=strict"}
    )
    assert refused.status_code == 400


# --- dependency ---------------------------------------------------------------------------


def dependency(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"name": "dependency", "part": list(parts)}


ELEMENT = {"name": "element", "valueUri": DEP_ELEMENT}


def concept(code: str, system: str = DEP_SYSTEM) -> dict[str, Any]:
    return {
        "name": "concept",
        "valueCodeableConcept": {"coding": [{"system": system, "code": code}]},
    }


def post_translate(http: httpx.Client, *extra: dict[str, Any]) -> httpx.Response:
    body = {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "url", "valueUri": EXAMPLE2},
            {"name": "code", "valueCode": "code"},
            {"name": "system", "valueUri": "http://example.org/fhir/example1"},
            *extra,
        ],
    }
    return http.post("/ConceptMap/$translate", json=body)


def matched(body: dict[str, Any]) -> list[str | None]:
    out = []
    for p in body["parameter"]:
        if p["name"] == "match":
            parts = {q["name"]: q for q in p["part"]}
            out.append(parts.get("concept", {}).get("valueCoding", {}).get("code"))
    return out


def result_of(body: dict[str, Any]) -> bool:
    return next(p["valueBoolean"] for p in body["parameter"] if p["name"] == "result")


@pytest.mark.parametrize(
    ("deps", "result", "codes"),
    [
        ([], True, ["code2"]),
        ([dependency(ELEMENT, concept("some-code"))], True, ["code2"]),
        ([dependency(ELEMENT, concept("other-code"))], False, []),
        # another system for the dependency's code does not hold either
        ([dependency(ELEMENT, concept("some-code", "http://ex/else"))], False, []),
        # a dependency on an element the map does not name narrows nothing
        (
            [dependency({"name": "element", "valueUri": "http://ex/other"}, concept("x"))],
            True,
            ["code2"],
        ),
        # repeated: each must hold
        (
            [
                dependency(ELEMENT, concept("some-code")),
                dependency({"name": "element", "valueUri": "http://ex/other"}, concept("x")),
            ],
            True,
            ["code2"],
        ),
    ],
)
def test_dependency_over_post(
    http: httpx.Client, deps: list[dict[str, Any]], result: bool, codes: list[str]
) -> None:
    response = post_translate(http, *deps)
    assert response.status_code == 200, response.text
    assert result_of(response.json()) is result
    assert matched(response.json()) == codes


def test_dependency_with_the_project_map_and_product(http: httpx.Client) -> None:
    body = {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "url", "valueUri": MAIN["url"]},
            {"name": "code", "valueCode": "5"},
            {"name": "system", "valueUri": A},
            dependency(
                {"name": "element", "valueUri": "http://ex/p"},
                {"name": "concept", "valueCodeableConcept": {"coding": [{"code": "on"}]}},
            ),
        ],
    }
    response = http.post("/ConceptMap/main/$translate", json=body)
    assert response.status_code == 200, response.text
    (match,) = [p for p in response.json()["parameter"] if p["name"] == "match"]
    product = next(p for p in match["part"] if p["name"] == "product")
    assert product["part"] == [
        {"name": "element", "valueUri": "http://ex/q"},
        {"name": "concept", "valueCoding": {"system": "http://ex/c", "code": "pv"}},
    ]


@pytest.mark.parametrize(
    ("entry", "status", "code", "text"),
    [
        (
            dependency(ELEMENT),
            400,
            "required",
            r"needs both element and concept; concept is missing",
        ),
        (dependency(concept("x")), 400, "required", r"element is missing"),
        (
            dependency(ELEMENT, {"name": "concept", "valueCodeableConcept": {"text": "t"}}),
            400,
            "required",
            r"concept has no coding",
        ),
        (
            dependency(ELEMENT, {"name": "concept", "valueCoding": {"code": "x"}}),
            400,
            "invalid",
            r"'dependency.concept' has type CodeableConcept",
        ),
        (
            dependency(ELEMENT, {"name": "attribute", "valueUri": "x"}),
            400,
            "invalid",
            r"no part 'attribute'",
        ),
        (
            dependency(ELEMENT, ELEMENT, concept("x")),
            400,
            "invalid",
            r"'dependency.element' may appear only once",
        ),
        ({"name": "dependency", "valueString": "x"}, 400, "invalid", r"made of parts"),
        ({"name": "dependency"}, 400, "invalid", r"needs its parts: element, concept"),
    ],
)
def test_bad_dependency(
    http: httpx.Client, entry: dict[str, Any], status: int, code: str, text: str
) -> None:
    assert_outcome(post_translate(http, entry), status, code, text)


def test_dependency_cannot_be_sent_with_get(http: httpx.Client) -> None:
    response = http.get(
        "/ConceptMap/$translate",
        params={"url": EXAMPLE2, "code": "code", "dependency": "x"},
    )
    assert_outcome(response, 400, "not-supported", r"'dependency'.*cannot be sent in a GET.*POST")


# --- metadata -----------------------------------------------------------------------------


def test_capability_statement_lists_translate_and_the_search_parameters(
    http: httpx.Client,
) -> None:
    caps = http.get("/metadata").json()
    (entry,) = [r for r in caps["rest"][0]["resource"] if r["type"] == "ConceptMap"]
    assert {
        "name": "translate",
        "definition": "http://hl7.org/fhir/OperationDefinition/ConceptMap-translate",
    } in entry["operation"]
    params = {p["name"]: p["type"] for p in entry["searchParam"]}
    for name, kind in (
        ("url", "uri"),
        ("version", "token"),
        ("name", "string"),
        ("status", "token"),
        ("source", "reference"),
        ("target", "reference"),
        ("source-system", "uri"),
        ("target-system", "uri"),
    ):
        assert params[name] == kind
    (valueset,) = [r for r in caps["rest"][0]["resource"] if r["type"] == "ValueSet"]
    assert "source-system" not in {p["name"] for p in valueset["searchParam"]}


def test_the_translate_definition_is_served(http: httpx.Client) -> None:
    definition = http.get("/OperationDefinition/ConceptMap-translate")
    assert definition.status_code == 200, definition.text
    body = definition.json()
    assert body["url"] == "http://hl7.org/fhir/OperationDefinition/ConceptMap-translate"
    assert {p["name"] for p in body["parameter"]} >= {"url", "code", "dependency", "reverse"}


def test_terminology_capabilities_describe_translation(http: httpx.Client) -> None:
    """R4 TerminologyCapabilities has ``translation.needsMap`` for $translate (the operation
    and its definition are listed in the CapabilityStatement): no map is needed, because
    without ``url`` every fitting map is used."""
    caps = http.get("/metadata", params={"mode": "terminology"}).json()
    assert caps["translation"] == {"needsMap": False}
    without_url = http.get(
        "/ConceptMap/$translate", params={"code": "male", "system": GENDER}
    ).json()
    assert result_of(without_url) is True


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "params", "status", "code", "text"),
    [
        (
            "GET",
            "/ConceptMap/$translate",
            {"url": "http://ex/none", "code": "x"},
            404,
            "not-found",
            r"ConceptMap http://ex/none not found",
        ),
        (
            "GET",
            "/ConceptMap/$translate",
            {"url": f"{EXAMPLE2}|9.9", "code": "x"},
            404,
            "not-found",
            r"example2\|9\.9",
        ),
        (
            "GET",
            "/ConceptMap/$translate",
            {"url": EXAMPLE2, "conceptMapVersion": "9.9", "code": "x"},
            404,
            "not-found",
            r"example2\|9\.9",
        ),
        ("GET", "/ConceptMap/nothing/$translate", {"code": "x"}, 404, "not-found", r"nothing"),
        (
            "POST",
            "/ConceptMap/$translate",
            {"url": "http://ex/none", "code": "x"},
            404,
            "not-found",
            r"http://ex/none",
        ),
        ("GET", "/ConceptMap/$translate", {"url": EXAMPLE2}, 400, "required", r"needs a code"),
        ("POST", "/ConceptMap/$translate", {"url": EXAMPLE2}, 400, "required", r"needs a code"),
        (
            "POST",
            "/ConceptMap/$translate",
            {"url": EXAMPLE2, "coding": {"system": "http://x"}},
            400,
            "required",
            r"needs a code",
        ),
        ("GET", "/ConceptMap/main/$translate", {}, 400, "required", r"needs a code"),
    ],
)
def test_translate_errors(
    http: httpx.Client,
    method: str,
    path: str,
    params: dict[str, Any],
    status: int,
    code: str,
    text: str,
) -> None:
    if method == "GET":
        response = http.get(path, params=params)
    else:
        kinds = {"url": "valueUri", "code": "valueCode", "coding": "valueCoding"}
        body = [{"name": k, kinds[k]: v} for k, v in params.items()]
        response = http.post(path, json={"resourceType": "Parameters", "parameter": body})
    assert_outcome(response, status, code, text)


def test_other_map_cycle_is_bounded_with_a_clear_message(http: httpx.Client) -> None:
    response = http.get("/ConceptMap/$translate", params={"url": LOOP1["url"], "code": "zz"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert result_of(body) is False
    message = next(p["valueString"] for p in body["parameter"] if p["name"] == "message")
    assert (
        message == "other-map cycle: http://ex/cm/l1 -> http://ex/cm/l2 -> http://ex/cm/l1; stopped"
    )
    # a code found along the way is still translated through the other map
    found = http.get("/ConceptMap/$translate", params={"url": LOOP1["url"], "code": "2"}).json()
    assert matched(found) == ["y"]


def test_missing_other_map_is_named(http: httpx.Client) -> None:
    response = post_translate(http)  # example2 maps "code"; another code falls through
    assert response.status_code == 200
    other = http.get(
        "/ConceptMap/$translate", params={"url": EXAMPLE2, "code": "nothing-like-it"}
    ).json()
    message = next(p["valueString"] for p in other["parameter"] if p["name"] == "message")
    assert (
        "unmapped other-map ConceptMap http://example.org/fhir/ConceptMap/map2 not found" in message
    )


def _malformed(group: dict[str, Any]) -> dict[str, Any]:
    return {
        "resourceType": "ConceptMap",
        "id": "malformed",
        "url": "http://ex/cm/malformed",
        "status": "active",
        "group": [group],
    }


MALFORMED = [
    ({"source": A}, "ConceptMap.group[0].element"),
    ({"element": "x"}, "ConceptMap.group[0].element"),
    (
        {"element": [{"code": "a", "target": [{"code": "b"}]}]},
        "ConceptMap.group[0].element[0].target[0].equivalence",
    ),
    (
        {"element": [{"code": "a", "target": [{"code": "b", "equivalence": "same"}]}]},
        "ConceptMap.group[0].element[0].target[0].equivalence",
    ),
    (
        {"element": [{"code": "a", "target": [{"code": "b", "equivalence": "narrower"}]}]},
        "ConceptMap.group[0].element[0].target[0].comment",
    ),
    (
        {
            "element": [
                {
                    "code": "a",
                    "target": [
                        {"code": "b", "equivalence": "equal", "dependsOn": [{"property": "p"}]}
                    ],
                }
            ]
        },
        "ConceptMap.group[0].element[0].target[0].dependsOn[0].value",
    ),
    ({"element": [{"code": "a", "target": "b"}]}, "ConceptMap.group[0].element[0].target"),
    ({"element": [{"code": 1}]}, "ConceptMap.group[0].element[0].code"),
    (
        {"element": [{"code": "a"}], "unmapped": {"mode": "fixed"}},
        "ConceptMap.group[0].unmapped.code",
    ),
    (
        {"element": [{"code": "a"}], "unmapped": {"mode": "other-map"}},
        "ConceptMap.group[0].unmapped.url",
    ),
    (
        {"element": [{"code": "a"}], "unmapped": {"mode": "guess"}},
        "ConceptMap.group[0].unmapped.mode",
    ),
]


@pytest.mark.parametrize(("group", "path"), MALFORMED)
@pytest.mark.parametrize("how", ["create", "update-new", "update-existing"])
def test_malformed_map_is_refused_and_nothing_changes(
    http: httpx.Client, group: dict[str, Any], path: str, how: str
) -> None:
    before = http.get("/ConceptMap/main").json()
    bad = _malformed(group)
    if how == "create":
        response = http.post("/ConceptMap", json=bad)
    elif how == "update-new":
        response = http.put("/ConceptMap/malformed", json=bad)
    else:
        response = http.put("/ConceptMap/main", json={**bad, "id": "main", "url": MAIN["url"]})
    assert 400 <= response.status_code < 500, response.text
    outcome = response.json()
    assert outcome["resourceType"] == "OperationOutcome"
    assert outcome["issue"][0]["expression"] == [path]
    assert http.get("/ConceptMap/malformed").status_code == 404
    assert ids(http, {"url": "http://ex/cm/malformed"}) == set()
    after = http.get("/ConceptMap/main").json()
    assert after == before
