"""ConceptMap over HTTP: CRUD of maps, rejected malformed maps, and $translate (GET/POST)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from http_support import TOKEN, client

from workbench import Workbench

GENDER = "http://hl7.org/fhir/administrative-gender"
V2 = "http://ex/v2-sex"
MAP = {
    "resourceType": "ConceptMap",
    "id": "sex",
    "url": "http://ex/cm/sex",
    "version": "1.0.0",
    "status": "active",
    "group": [
        {
            "source": GENDER,
            "target": V2,
            "element": [
                {"code": "male", "target": [{"code": "M", "equivalence": "equal"}]},
                {"code": "other", "target": [{"equivalence": "unmatched"}]},
            ],
            "unmapped": {"mode": "fixed", "code": "U"},
        }
    ],
}


@pytest.fixture
def http(wb: Workbench) -> Iterator[httpx.Client]:
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as c:
        created = c.put("/ConceptMap/sex", json=MAP)
        assert created.status_code == 201, created.text
        yield c


def _matches(body: dict[str, Any]) -> list[tuple[str, str | None]]:
    out = []
    for p in body["parameter"]:
        if p["name"] == "match":
            parts = {q["name"]: q for q in p["part"]}
            concept = parts.get("concept", {}).get("valueCoding", {})
            out.append((parts["equivalence"]["valueCode"], concept.get("code")))
    return out


def _result(body: dict[str, Any]) -> bool:
    return next(p["valueBoolean"] for p in body["parameter"] if p["name"] == "result")


@pytest.mark.parametrize(
    ("method", "path", "params", "result", "matches"),
    [
        (
            "GET",
            "/ConceptMap/$translate",
            {"url": MAP["url"], "code": "male", "system": GENDER},
            True,
            [("equal", "M")],
        ),
        ("GET", "/ConceptMap/sex/$translate", {"code": "male"}, True, [("equal", "M")]),
        (
            "GET",
            "/ConceptMap/$translate",
            {"code": "other", "system": GENDER},
            False,
            [("unmatched", None)],
        ),
        (
            "GET",
            "/ConceptMap/$translate",
            {"code": "zz", "url": MAP["url"]},
            True,
            [("inexact", "U")],
        ),
        (
            "GET",
            "/ConceptMap/$translate",
            {"code": "M", "url": MAP["url"], "reverse": "true"},
            True,
            [("equal", "male")],
        ),
        (
            "POST",
            "/ConceptMap/$translate",
            {"url": MAP["url"], "coding": {"system": GENDER, "code": "male"}},
            True,
            [("equal", "M")],
        ),
        (
            "POST",
            "/ConceptMap/$translate",
            {"conceptMap": {**MAP, "url": "http://ex/inline"}, "code": "male"},
            True,
            [("equal", "M")],
        ),
    ],
)
def test_translate(
    http: httpx.Client,
    method: str,
    path: str,
    params: dict[str, Any],
    result: bool,
    matches: list[tuple[str, str | None]],
) -> None:
    if method == "GET":
        response = http.get(path, params=params)
    else:
        body = []
        for name, value in params.items():
            key = {"url": "valueUri", "code": "valueCode", "coding": "valueCoding"}.get(name)
            body.append(
                {"name": name, "resource": value} if key is None else {"name": name, key: value}
            )
        response = http.post(path, json={"resourceType": "Parameters", "parameter": body})
    assert response.status_code == 200, response.text
    assert _result(response.json()) is result
    assert _matches(response.json()) == matches


R5_CASES = [
    ({"sourceCode": "male", "sourceSystem": GENDER, "url": MAP["url"]}, [("equal", "M")]),
    ({"sourceCoding": {"system": GENDER, "code": "male"}}, [("equal", "M")]),
    (
        {"sourceCodeableConcept": {"coding": [{"system": GENDER, "code": "male"}]}},
        [("equal", "M")],
    ),
    ({"sourceCode": "male", "sourceSystem": GENDER, "targetSystem": V2}, [("equal", "M")]),
    ({"targetCode": "M", "url": MAP["url"]}, [("equal", "male")]),
    ({"targetCoding": {"system": V2, "code": "M"}, "url": MAP["url"]}, [("equal", "male")]),
]
_KEYS = {
    "url": "valueUri",
    "sourceCode": "valueCode",
    "targetCode": "valueCode",
    "sourceSystem": "valueUri",
    "targetSystem": "valueUri",
    "sourceCoding": "valueCoding",
    "targetCoding": "valueCoding",
    "sourceCodeableConcept": "valueCodeableConcept",
}


@pytest.mark.parametrize(("given", "matches"), R5_CASES)
def test_translate_takes_r5_names_and_names_the_map(
    http: httpx.Client, given: dict[str, Any], matches: list[tuple[str, str | None]]
) -> None:
    body = [{"name": name, _KEYS[name]: value} for name, value in given.items()]
    response = http.post(
        "/ConceptMap/$translate", json={"resourceType": "Parameters", "parameter": body}
    )
    assert response.status_code == 200, response.text
    assert _matches(response.json()) == matches
    for p in response.json()["parameter"]:
        if p["name"] == "match":
            parts = {q["name"]: q for q in p["part"]}
            origin = f"{MAP['url']}|{MAP['version']}"
            assert parts["originMap"] == {"name": "originMap", "valueCanonical": origin}


def test_a_code_given_under_both_names_is_refused(http: httpx.Client) -> None:
    query = {"code": "male", "sourceCode": "male", "system": GENDER}
    response = http.get("/ConceptMap/$translate", params=query)
    assert response.status_code == 400
    assert "'sourceCode' stands for 'code'" in response.text


def test_inline_map_is_not_stored(http: httpx.Client) -> None:
    body = {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "conceptMap", "resource": {**MAP, "id": "inline", "url": "http://ex/inline"}},
            {"name": "code", "valueCode": "male"},
        ],
    }
    assert http.post("/ConceptMap/$translate", json=body).status_code == 200
    assert http.get("/ConceptMap/inline").status_code == 404


@pytest.mark.parametrize(
    ("params", "status", "code", "text"),
    [
        ({"url": "http://ex/none", "code": "x"}, 404, "not-found", "http://ex/none"),
        ({"url": MAP["url"]}, 400, "required", "code"),
    ],
)
def test_translate_errors(
    http: httpx.Client, params: dict[str, str], status: int, code: str, text: str
) -> None:
    response = http.get("/ConceptMap/$translate", params=params)
    assert response.status_code == status, response.text
    issue = response.json()["issue"][0]
    assert issue["code"] == code
    assert text in issue["details"]["text"]


def test_malformed_map_rejected_and_nothing_stored(http: httpx.Client) -> None:
    bad = {
        **MAP,
        "id": "bad",
        "url": "http://ex/bad",
        "group": [{"element": [{"code": "a", "target": [{"code": "b"}]}]}],
    }
    response = http.put("/ConceptMap/bad", json=bad)
    assert 400 <= response.status_code < 500
    issue = response.json()["issue"][0]
    assert issue["expression"] == ["ConceptMap.group[0].element[0].target[0].equivalence"]
    assert http.get("/ConceptMap/bad").status_code == 404
    assert http.get("/ConceptMap", params={"url": "http://ex/cm/sex"}).json()["total"] == 1
