"""The general behaviours of tx.fhir.org that the HL7 validator relies on (issue 36, point 8):
several included versions of one code system, ``inferSystem`` that cannot infer, a
CodeableConcept of an unknown code system, and a Coding without a system. In Python and
over HTTP (uvicorn on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from http_support import TOKEN, client, params

from workbench import Workbench

CS = "http://example.org/cs/multi"
MULTI = "http://example.org/vs/multi"
ONE = "http://example.org/vs/one"
OTHER_CS = "http://example.org/cs/other"
OTHER = "http://example.org/vs/other"


def codesystem(version: str, concepts: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "resourceType": "CodeSystem",
        "url": CS,
        "version": version,
        "status": "active",
        "content": "complete",
        "concept": concepts,
    }


def valueset(url: str, *versions: str) -> dict[str, Any]:
    includes = [{"system": CS, "version": v} for v in versions]
    return {
        "resourceType": "ValueSet",
        "url": url,
        "status": "active",
        "compose": {"include": includes},
    }


@pytest.fixture(scope="module")
def wb() -> Workbench:
    made = Workbench()
    made.load(
        [
            codesystem("1", [{"code": "a", "display": "Alpha"}, {"code": "b", "display": "Beta"}]),
            codesystem(
                "2", [{"code": "a", "display": "Alpha two"}, {"code": "c", "display": "Gamma"}]
            ),
            valueset(MULTI, "1", "2"),
            valueset(ONE, "1"),
            {**codesystem("1", [{"code": "o"}]), "url": OTHER_CS},
            {
                "resourceType": "ValueSet",
                "url": OTHER,
                "status": "active",
                "compose": {"include": [{"system": OTHER_CS}]},
            },
        ]
    )
    return made


@pytest.fixture(scope="module")
def http(wb: Workbench) -> Iterator[httpx.Client]:
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as session:
        yield session


def outputs(body: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for p in body["parameter"]:
        value = p.get("resource") or next(v for k, v in p.items() if k.startswith("value"))
        found.setdefault(p["name"], []).append(value)
    return {k: v[0] if len(v) == 1 else v for k, v in found.items()}


def issues(out: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (i["severity"], i["code"], i["details"]["coding"][0]["code"])
        for i in out.get("issues", {}).get("issue", [])
    ]


@pytest.mark.parametrize(
    ("coding", "version", "display"),
    [
        ({"code": "a", "display": "Alpha"}, "1", "Alpha"),
        ({"code": "a", "display": "Alpha two"}, "2", "Alpha two"),
        ({"code": "b", "display": "Beta"}, "1", "Beta"),
        ({"code": "c", "display": "Gamma"}, "2", "Gamma"),
    ],
    ids=["a-as-in-1", "a-as-in-2", "b-only-in-1", "c-only-in-2"],
)
@pytest.mark.parametrize("form", ["coding", "codeableConcept"])
def test_a_coding_without_version_matches_the_version_that_has_its_display(
    http: httpx.Client, coding: dict[str, str], version: str, display: str, form: str
) -> None:
    given = {"system": CS, **coding}
    value = (
        {"valueCoding": given}
        if form == "coding"
        else {"valueCodeableConcept": {"coding": [given]}}
    )
    body = http.post(
        "/ValueSet/$validate-code", json=params(("url", {"valueUri": MULTI}), (form, value))
    )
    out = outputs(body.json())
    assert out["result"] is True
    assert (out["version"], out["display"]) == (version, display)
    assert "message" not in out and "issues" not in out


def test_a_wrong_display_in_every_version_is_still_wrong(wb: Workbench) -> None:
    result = wb.validate_code(MULTI, system=CS, code="a", display="Omega")
    assert result.result is False and result.issue == "invalid-display"


@pytest.mark.parametrize("url", [ONE, MULTI])
def test_infer_system_of_a_code_no_system_has(http: httpx.Client, url: str) -> None:
    query = {"url": url, "code": "zzz", "inferSystem": "true"}
    out = outputs(http.get("/ValueSet/$validate-code", params=query).json())
    assert out["result"] is False
    assert issues(out) == [
        ("error", "not-found", "cannot-infer"),
        ("error", "code-invalid", "not-in-vs"),
    ]
    assert "system" not in out


def test_infer_system_still_infers(wb: Workbench) -> None:
    result = wb.validate_code(ONE, code="b")  # no system: inferred from the value set
    assert (result.result, result.system, result.version) == (True, CS, "1")


@pytest.mark.parametrize(
    ("coding", "unknown"),
    [
        ({"system": "http://unknown.example.org/cs", "code": "x"}, "http://unknown.example.org/cs"),
        ({"system": CS, "version": "9", "code": "a"}, f"{CS}|9"),
    ],
    ids=["unknown-system", "unknown-version-of-a-known-one"],
)
def test_a_codeable_concept_of_an_unknown_code_system(
    http: httpx.Client, coding: dict[str, str], unknown: str
) -> None:
    concept = {"coding": [coding]}
    body = params(
        ("url", {"valueUri": OTHER}), ("codeableConcept", {"valueCodeableConcept": concept})
    )
    out = outputs(http.post("/ValueSet/$validate-code", json=body).json())
    assert out["result"] is False
    assert issues(out) == [
        ("error", "code-invalid", "not-in-vs"),
        ("error", "not-found", "not-found"),
        ("information", "code-invalid", "this-code-not-in-vs"),
    ]
    assert out["x-unknown-system"] == unknown
    assert "x-caused-by-unknown-system" not in out


@pytest.mark.parametrize(
    ("form", "value", "where"),
    [
        ("coding", {"valueCoding": {"code": "x"}}, "Coding.system"),
        (
            "codeableConcept",
            {"valueCodeableConcept": {"coding": [{"code": "x", "display": "X"}]}},
            "CodeableConcept.coding[0].system",
        ),
    ],
)
def test_codesystem_validate_code_of_a_coding_without_system(
    http: httpx.Client, form: str, value: dict[str, Any], where: str
) -> None:
    response = http.post("/CodeSystem/$validate-code", json=params((form, value)))
    assert response.status_code == 200, response.text
    out = outputs(response.json())
    assert out["result"] is False
    (issue,) = out["issues"]["issue"]
    assert (issue["severity"], issue["code"]) == ("warning", "invalid")
    assert issue["details"]["coding"][0]["code"] == "invalid-data"
    assert issue["expression"] == [where]
    assert "no defined meaning" in issue["details"]["text"]


@pytest.mark.parametrize(
    ("path", "url", "codings", "result", "named"),
    [
        ("ValueSet", ONE, [{"system": CS, "code": "a"}], True, ("a", CS, "1")),
        ("ValueSet", OTHER, [{"system": CS, "code": "a"}], False, ("a", CS, "2")),
        ("ValueSet", ONE, [{"system": CS, "code": "zz"}], False, None),
        ("ValueSet", ONE, [{"system": CS, "code": "zz"}, {"system": CS, "code": "b"}], False,
         ("b", CS, "1")),
        ("ValueSet", ONE, [{"system": "http://example.org/none", "code": "x"}], False, None),
        ("CodeSystem", CS, [{"system": CS, "code": "b", "version": "1"}], True, ("b", CS, "1")),
    ],
    ids=["valid", "known-not-in-the-value-set", "unknown-code", "unknown-beside-a-valid-one",
         "unknown-system", "codesystem"],
)  # fmt: skip
def test_a_codeable_concept_is_echoed_and_the_answer_names_the_coding_it_is_about(
    http: httpx.Client,
    path: str,
    url: str,
    codings: list[dict[str, str]],
    result: bool,
    named: tuple[str, str, str] | None,
) -> None:
    """As tx.fhir.org: the CodeableConcept validated comes back as ``codeableConcept`` (R5's
    output); ``code``, ``system`` and ``version`` name the coding the answer is about (the
    valid one, or one whose code is known), none when no code of it is known."""
    concept = {"coding": codings, "text": "as given"}
    body = params(
        ("url", {"valueUri": url}), ("codeableConcept", {"valueCodeableConcept": concept})
    )
    out = outputs(http.post(f"/{path}/$validate-code", json=body).json())
    assert out["result"] is result
    assert out["codeableConcept"] == concept
    found = tuple(out.get(k) for k in ("code", "system", "version"))
    assert found == (named or (None, None, None))
