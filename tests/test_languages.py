"""Display languages (issue 9, point 5): the displayLanguage parameter with weights, the value
set's expansion-parameter extension, the Accept-Language header and ValueSet.language, in that
priority; fallbacks as the weights allow; displays valid in another language in validation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from http_support import TOKEN, TX_ISSUE, assert_outcome, client, params

from workbench import Workbench
from workbench.errors import InvalidRequestError
from workbench.terminology.definition import EXPANSION_PARAMETER

EN = "http://example.org/fhir/CodeSystem/lang-en"
DE = "http://example.org/fhir/CodeSystem/lang-de"
VS = "http://example.org/fhir/ValueSet/lang-"


def designation(language: str, value: str) -> dict[str, Any]:
    return {"language": language, "value": value}


RESOURCES = [
    {
        "resourceType": "CodeSystem",
        "url": EN,
        "language": "en",
        "status": "active",
        "content": "complete",
        "concept": [
            {"code": "one", "display": "One", "designation": [designation("de", "Eins")]},
            {"code": "two", "display": "Two"},
        ],
    },
    {
        "resourceType": "CodeSystem",
        "url": DE,
        "language": "de",
        "status": "active",
        "content": "complete",
        "concept": [{"code": "one", "display": "Eins", "designation": [designation("en", "One")]}],
    },
    {"resourceType": "ValueSet", "url": VS + "en", "compose": {"include": [{"system": EN}]}},
    {"resourceType": "ValueSet", "url": VS + "de", "compose": {"include": [{"system": DE}]}},
    {
        "resourceType": "ValueSet",
        "url": VS + "en-as-de",
        "language": "de",
        "compose": {"include": [{"system": EN}]},
    },
    {
        "resourceType": "ValueSet",
        "url": VS + "en-ext-de",
        "extension": [
            {
                "url": EXPANSION_PARAMETER,
                "extension": [
                    {"url": "name", "valueCode": "displayLanguage"},
                    {"url": "value", "valueCode": "de"},
                ],
            }
        ],
        "compose": {"include": [{"system": EN}]},
    },
]


@pytest.fixture(scope="module")
def lwb() -> Workbench:
    wb = Workbench()
    wb.load(RESOURCES)
    return wb


@pytest.fixture(scope="module")
def http(lwb: Workbench) -> Iterator[httpx.Client]:
    with lwb.serve(port=0, token=TOKEN) as handle, client(handle.url) as session:
        yield session


EXPANSIONS = [
    pytest.param("en", None, None, ["One", "Two"], id="echo-en-none"),
    pytest.param("de", None, None, ["Eins"], id="echo-de-none"),
    pytest.param("en", "de", None, ["Eins", "Two"], id="en-to-de-falls-back-per-code"),
    pytest.param("en", "de, *;q=0", None, ["Eins", None], id="en-to-de-hard"),
    pytest.param("en", "fr", None, ["One", "Two"], id="unknown-language-default-fallback"),
    pytest.param("de", "en", None, ["One"], id="de-to-en"),
    pytest.param("en", None, "de", ["Eins", "Two"], id="header"),
    pytest.param("en", "en", "de", ["One", "Two"], id="parameter-beats-header"),
    pytest.param("en-as-de", None, None, ["Eins", "Two"], id="valueset-language"),
    pytest.param("en-ext-de", None, None, ["Eins", "Two"], id="valueset-extension"),
    pytest.param("en-ext-de", "en", None, ["One", "Two"], id="parameter-beats-extension"),
    pytest.param("en-ext-de", None, "en", ["Eins", "Two"], id="extension-beats-header"),
    pytest.param("en-as-de", None, "en", ["One", "Two"], id="header-beats-valueset-language"),
]


@pytest.mark.parametrize(("vs", "param", "header", "displays"), EXPANSIONS)
def test_expansion_displays(
    lwb: Workbench,
    http: httpx.Client,
    vs: str,
    param: str | None,
    header: str | None,
    displays: list[str | None],
) -> None:
    expansion = lwb.expand(VS + vs, display_language=param, accept_language=header)
    assert [e.display for e in expansion.entries] == displays
    query = {"url": VS + vs, **({"displayLanguage": param} if param else {})}
    headers = {"Accept-Language": header} if header else {}
    answer = http.get("/ValueSet/$expand", params=query, headers=headers).json()
    assert [c.get("display") for c in answer["expansion"]["contains"]] == displays
    echoed = {p["name"] for p in answer["expansion"]["parameter"]}
    assert ("displayLanguage" in echoed) is bool(param or header or vs not in ("en", "de"))


VALIDATIONS = [
    pytest.param(None, "Eins", (True, "One", ()), id="no-language-any-designation"),
    pytest.param("de", "Eins", (True, "Eins", ()), id="display-in-requested-language"),
    pytest.param(
        "de",
        "One",
        (False, "Eins", (("error", "invalid-display", "display"),)),
        id="display-in-another-language-no-fallback",
    ),
    pytest.param(
        "de, *;q=0.1",
        "One",
        (True, "Eins", (("warning", "display-comment", "display"),)),
        id="display-in-another-language-with-fallback",
    ),
    pytest.param(
        "de",
        "Zwei",
        (False, "Eins", (("error", "invalid-display", "display"),)),
        id="wrong-display",
    ),
    pytest.param("de", None, (True, "Eins", ()), id="display-returned-in-language"),
]


@pytest.mark.parametrize(("language", "display", "expected"), VALIDATIONS)
def test_validation_with_languages(
    lwb: Workbench,
    http: httpx.Client,
    language: str | None,
    display: str | None,
    expected: tuple[Any, ...],
) -> None:
    result = lwb.validate_code(
        VS + "en", code="one", system=EN, display=display, display_language=language
    )
    issues = tuple((i.severity, i.code, i.expression) for i in result.issues)
    assert (result.result, result.display, issues) == expected
    entries = [("url", {"valueUri": VS + "en"}), ("code", {"valueCode": "one"})]
    entries.append(("system", {"valueUri": EN}))
    if display is not None:
        entries.append(("display", {"valueString": display}))
    # the same over HTTP, with the language as the Accept-Language header
    headers = {"Accept-Language": language} if language else {}
    answer = http.post("/ValueSet/$validate-code", json=params(*entries), headers=headers)
    assert answer.json() == result.to_parameters()


@pytest.mark.parametrize(
    ("text", "code"),
    [("de;q=x", "invalid"), ("de;w=1", "invalid"), ("d e", "processing"), ("-", "processing")],
)
def test_malformed_language_lists(lwb: Workbench, http: httpx.Client, text: str, code: str) -> None:
    """A malformed weight is an invalid request; a value that is not a language tag cannot be
    processed (error/processing, tx invalid-display, as tx.fhir.org answers)."""
    with pytest.raises(InvalidRequestError, match="language"):
        lwb.expand(VS + "en", display_language=text)
    response = http.get("/ValueSet/$expand", params={"url": VS + "en", "displayLanguage": text})
    issue = assert_outcome(response, 400, code, "language")["issue"][0]
    tx = [c["code"] for c in issue["details"].get("coding", ()) if c["system"] == TX_ISSUE]
    assert tx == (["invalid-display"] if code == "processing" else [])


@pytest.mark.parametrize(
    ("tokens", "values"),
    [
        pytest.param(["de"], ["Eins"], id="language"),
        pytest.param(["urn:ietf:bcp:47|de"], ["Eins"], id="language-token"),
        pytest.param(["urn:ietf:bcp:47|fr"], [], id="no-match"),
    ],
)
def test_designation_parameter_chooses_designations(
    lwb: Workbench, http: httpx.Client, tokens: list[str], values: list[str]
) -> None:
    expansion = lwb.expand(VS + "en", include_designations=True, designations=tokens)
    assert [d["value"] for d in expansion.entries[0].designations] == values
    query = [("url", VS + "en"), ("includeDesignations", "true")]
    query += [("designation", t) for t in tokens]
    answer = http.get("/ValueSet/$expand", params=query).json()
    first = answer["expansion"]["contains"][0]
    assert [d["value"] for d in first.get("designation", [])] == values


LISTED = {
    "resourceType": "ValueSet",
    "url": VS + "listed",
    "compose": {
        "include": [
            {
                "system": EN,
                "concept": [
                    {"code": "one"},
                    {"code": "two", "designation": [designation("de", "Zwei")]},
                ],
            }
        ]
    },
}


@pytest.mark.parametrize(
    ("language", "displays"),
    [
        pytest.param("de", ["Eins", "Zwei"], id="de-from-code-system-and-value-set"),
        pytest.param("en", ["One", "Two"], id="en"),
        pytest.param("fr, *;q=0", [None, None], id="none-in-fr"),
    ],
)
def test_designations_listed_in_the_value_set(
    lwb: Workbench, http: httpx.Client, language: str, displays: list[str | None]
) -> None:
    """compose.include.concept.designation adds displays in other languages."""
    expansion = lwb.expand(LISTED, display_language=language)
    assert [e.display for e in expansion.entries] == displays
    body = params(("valueSet", {"resource": LISTED}), ("displayLanguage", {"valueCode": language}))
    answer = http.post("/ValueSet/$expand", json=body).json()
    assert [c.get("display") for c in answer["expansion"]["contains"]] == displays
    result = lwb.validate_code(LISTED, code="two", system=EN, display="Zwei", display_language="de")
    assert (result.result, result.display) == (True, "Zwei")
