"""What the HL7 validator's terminology client sends is taken (issue 36, point 2): its extra
parameters with the value types it uses, unknown parameters ignored (or refused under
``Prefer: handling=strict``), ``diagnostics``, ``_limit`` and ``_incomplete``, and the
media types, ``_format`` and empty query it sends. Over HTTP, against uvicorn on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from http_support import (
    GENDER_CS,
    GENDER_VS,
    TOKEN,
    assert_outcome,
    client,
    params,
    values,
)

from workbench import Workbench
from workbench.operations import OPERATIONS, Operation

VC = "/ValueSet/$validate-code"
CS_VC = "/CodeSystem/$validate-code"
EXPAND = "/ValueSet/$expand"
LOOKUP = "/CodeSystem/$lookup"
PROFILE = "http://hl7.org/fhir/ExpansionProfile/dc8fd4bc-091a-424a-8a3b-6198ef146891"
FEMALE = {"system": GENDER_CS, "code": "female", "display": "Female"}
WRONG_DISPLAY = {**FEMALE, "display": "Woman"}

#: What the validator adds to every $validate-code, with the value types it sends.
VALIDATOR_EXTRAS = [
    ("diagnostics", {"valueBoolean": True}),
    ("default-to-latest-version", {"valueBoolean": True}),
    ("profile-url", {"valueString": PROFILE}),
    ("x-system-cache-id", {"valueString": "dc8fd4bc-091a-424a-8a3b-6198ef146891"}),
    ("displayLanguage", {"valueString": "en-US"}),
    ("valueset-membership-only", {"valueBoolean": False}),
]


@pytest.fixture(scope="module")
def http(default_wb: Workbench) -> Iterator[httpx.Client]:
    with default_wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as session:
        yield session


def ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    return response.json()


def issue_texts(body: dict[str, Any]) -> list[str]:
    (outcome,) = [p["resource"] for p in body["parameter"] if p["name"] == "issues"]
    return [i["details"]["text"] for i in outcome["issue"]]


@pytest.mark.parametrize(
    ("path", "target"),
    [
        (VC, ("url", {"valueUri": GENDER_VS})),
        (CS_VC, ("url", {"valueUri": GENDER_CS})),
    ],
    ids=["ValueSet", "CodeSystem"],
)
def test_a_validator_shaped_validate_code_is_answered(
    http: httpx.Client, path: str, target: tuple[str, dict[str, Any]]
) -> None:
    body = ok(
        http.post(path, json=params(target, ("coding", {"valueCoding": FEMALE}), *VALIDATOR_EXTRAS))
    )
    assert values(body, "result") == [True]
    (diagnostics,) = values(body, "diagnostics")
    assert f"{GENDER_CS}|4.0.1#female: valid" in diagnostics
    assert "Time: " in diagnostics


def test_diagnostics_name_the_value_set_and_the_cache(http: httpx.Client) -> None:
    query = {"url": GENDER_VS, "system": GENDER_CS, "code": "male", "diagnostics": "true"}
    first = values(ok(http.get(VC, params=query)), "diagnostics")[0]
    again = values(ok(http.get(VC, params=query)), "diagnostics")[0]
    assert f"Value set: {GENDER_VS}|4.0.1 (stored)" in first
    assert f"Code systems of the value set: {GENDER_CS}|4.0.1" in first
    assert "Compiled value set: from the cache" in again
    assert "tx-resource: none" in again


def test_diagnostics_name_a_tx_resource(http: httpx.Client) -> None:
    cs = {
        "resourceType": "CodeSystem",
        "url": "http://example.org/cs/diag",
        "version": "2",
        "status": "active",
        "content": "complete",
        "concept": [{"code": "a", "display": "A"}],
    }
    body = ok(
        http.post(
            CS_VC,
            json=params(
                ("url", {"valueUri": cs["url"]}),
                ("code", {"valueCode": "a"}),
                ("diagnostics", {"valueBoolean": True}),
                ("tx-resource", {"resource": cs}),
            ),
        )
    )
    (diagnostics,) = values(body, "diagnostics")
    assert "Code system: http://example.org/cs/diag|2" in diagnostics
    assert "tx-resource: CodeSystem http://example.org/cs/diag|2" in diagnostics


def test_no_diagnostics_unless_asked(http: httpx.Client) -> None:
    body = ok(http.get(VC, params={"url": GENDER_VS, "system": GENDER_CS, "code": "male"}))
    assert values(body, "diagnostics") == []


@pytest.mark.parametrize(
    ("path", "target"),
    [(VC, ("url", {"valueUri": GENDER_VS})), (CS_VC, ("url", {"valueUri": GENDER_CS}))],
    ids=["ValueSet", "CodeSystem"],
)
@pytest.mark.parametrize(
    ("lenient", "result"),
    [
        ([], False),
        ([("mode", {"valueString": "lenient-display-validation"})], True),
        ([("mode", {"valueCode": "lenient-display-validation"})], True),
        ([("lenient-display-validation", {"valueBoolean": True})], True),
    ],
    ids=["strict-display", "mode-string", "mode-code", "lenient-parameter"],
)
def test_mode_lenient_display_validation(
    http: httpx.Client,
    path: str,
    target: tuple[str, dict[str, Any]],
    lenient: list[tuple[str, dict[str, Any]]],
    result: bool,
) -> None:
    body = ok(
        http.post(path, json=params(target, ("coding", {"valueCoding": WRONG_DISPLAY}), *lenient))
    )
    assert values(body, "result") == [result]
    (outcome,) = [p["resource"] for p in body["parameter"] if p["name"] == "issues"]
    severities = {i["severity"] for i in outcome["issue"]}
    assert severities == ({"warning"} if result else {"error"})


def test_an_unknown_mode_is_refused_naming_the_known_one(http: httpx.Client) -> None:
    query = {"url": GENDER_VS, "system": GENDER_CS, "code": "male", "mode": "everything"}
    assert_outcome(
        http.get(VC, params=query), 400, "invalid", r"'mode' must be lenient-display-validation"
    )


@pytest.mark.parametrize(
    ("path", "query"),
    [
        (VC, {"url": GENDER_VS, "system": GENDER_CS, "code": "male"}),
        (CS_VC, {"url": GENDER_CS, "code": "male"}),
        (LOOKUP, {"system": GENDER_CS, "code": "male"}),
    ],
    ids=["ValueSet-validate-code", "CodeSystem-validate-code", "lookup"],
)
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_unknown_parameters_are_ignored_and_named(
    http: httpx.Client, path: str, query: dict[str, str], method: str
) -> None:
    asked = {**query, "frobnicate": "1", "x-other": "2"}
    if method == "GET":
        response = http.get(path, params=asked)
    else:
        entries = [(k, {"valueString": v}) for k, v in asked.items()]
        response = http.post(path, json=params(*entries))
    texts = issue_texts(ok(response))
    assert any("'frobnicate', 'x-other'" in t and "ignored" in t for t in texts), texts
    strict = {"Prefer": "handling=strict"}
    if method == "GET":
        refused = http.get(path, params=asked, headers=strict)
    else:
        refused = http.post(path, json=params(*entries), headers=strict)
    assert_outcome(refused, 400, "invalid", r"Unknown parameter 'frobnicate'")


def test_an_expansion_names_the_parameters_it_ignored(http: httpx.Client) -> None:
    valueset = ok(http.get(EXPAND, params={"url": GENDER_VS, "frobnicate": "1"}))
    (warning,) = [
        e
        for e in valueset.get("extension", [])
        if e["url"] == "http://hl7.org/fhir/StructureDefinition/valueset-warning"
    ]
    assert "'frobnicate'" in warning["valueMarkdown"]
    assert len(valueset["expansion"]["contains"]) == 4


TOO_COSTLY = "http://hl7.org/fhir/StructureDefinition/valueset-toocostly"


@pytest.mark.parametrize(
    ("extra", "status", "codes", "marked"),
    [
        ({"_limit": "10"}, 200, 4, False),
        ({"_limit": "4"}, 200, 4, False),
        ({"_limit": "2"}, 422, None, False),
        ({"_limit": "2", "_incomplete": "true"}, 200, 2, True),
        ({"_limit": "2", "incomplete-ok": "true"}, 200, 2, True),
        ({"_limit": "2", "_incomplete": "false"}, 422, None, False),
        ({"_limit": "3", "count": "2"}, 200, 2, False),
    ],
    ids=["under", "equal", "over", "incomplete", "incomplete-ok", "incomplete-false", "count"],
)
def test_limit_and_incomplete(
    http: httpx.Client, extra: dict[str, str], status: int, codes: int | None, marked: bool
) -> None:
    response = http.get(EXPAND, params={"url": GENDER_VS, **extra})
    if status != 200:
        assert_outcome(response, status, "too-costly", r"more than the 2 the request allows")
        return
    expansion = ok(response)["expansion"]
    assert len(expansion["contains"]) == codes
    flagged = [e for e in expansion.get("extension", []) if e["url"] == TOO_COSTLY]
    assert flagged == ([{"url": TOO_COSTLY, "valueBoolean": True}] if marked else [])


def test_a_validator_shaped_expand_is_answered(http: httpx.Client) -> None:
    body = params(
        ("url", {"valueUri": GENDER_VS}),
        ("_limit", {"valueInteger": 10000}),
        ("_incomplete", {"valueBoolean": True}),
        ("count", {"valueInteger": 3}),
        ("offset", {"valueInteger": 0}),
        ("excludeNested", {"valueBoolean": True}),
        ("includeDefinition", {"valueBoolean": False}),
        ("displayLanguage", {"valueString": "en"}),
        ("default-to-latest-version", {"valueBoolean": True}),
        ("profile-url", {"valueString": PROFILE}),
        ("x-system-cache-id", {"valueString": "abc"}),
    )
    valueset = ok(http.post(EXPAND, json=body))
    assert len(valueset["expansion"]["contains"]) == 3
    assert valueset["expansion"]["total"] == 4


@pytest.mark.parametrize(
    "content_type",
    [
        "application/fhir+json; fhirVersion=4.0; charset=UTF-8",
        "application/fhir+json;charset=utf-8",
        "application/json",
    ],
)
def test_media_types_with_parameters(http: httpx.Client, content_type: str) -> None:
    body = params(("url", {"valueUri": GENDER_VS}), ("coding", {"valueCoding": FEMALE}))
    response = http.post(
        VC + "?",
        content=httpx.Request("POST", "http://x", json=body).content,
        headers={"Content-Type": content_type, "Accept": content_type},
    )
    assert values(ok(response), "result") == [True]


def test_format_json(http: httpx.Client) -> None:
    query = {"url": GENDER_VS, "system": GENDER_CS, "code": "male", "_format": "json"}
    response = http.get(VC, params=query, headers={"Accept": "*/*"})
    assert values(ok(response), "result") == [True]


UNKNOWN = "http://unknown.example.org/cs"
INLINE_VS = {
    "resourceType": "ValueSet",
    "url": "http://example.org/vs/inline-mixed",
    "status": "active",
    "compose": {"include": [{"system": GENDER_CS}, {"system": UNKNOWN}]},
}
GENDER_ONLY = {
    "resourceType": "ValueSet",
    "url": "http://example.org/vs/inline-gender",
    "status": "active",
    "compose": {"include": [{"system": GENDER_CS}]},
}


@pytest.mark.parametrize(
    ("target", "coding", "caused_by", "unknown"),
    [
        # the value set includes the unknown system: the answer depends on it
        (("valueSet", {"resource": INLINE_VS}), {"system": UNKNOWN, "code": "x"}, [UNKNOWN], []),
        (
            ("valueSet", {"resource": INLINE_VS}),
            {"system": UNKNOWN, "version": "3", "code": "x"},
            [f"{UNKNOWN}|3"],
            [],
        ),
        # the value set does not use that system: the answer does not depend on it
        (("valueSet", {"resource": GENDER_ONLY}), {"system": UNKNOWN, "code": "x"}, [], [UNKNOWN]),
        (("url", {"valueUri": GENDER_VS}), {"system": UNKNOWN, "code": "x"}, [], [UNKNOWN]),
        # the same value set sent as a tx-resource and named by url
        (
            ("url", {"valueUri": INLINE_VS["url"]}),
            {"system": UNKNOWN, "code": "x"},
            [UNKNOWN],
            [],
        ),
    ],
    ids=["vs-uses-it", "vs-uses-it-versioned", "vs-does-not", "stored-vs-does-not", "tx-resource"],
)
def test_unknown_systems_in_the_validators_forms(
    http: httpx.Client,
    target: tuple[str, dict[str, Any]],
    coding: dict[str, str],
    caused_by: list[str],
    unknown: list[str],
) -> None:
    body = params(
        target,
        ("coding", {"valueCoding": coding}),
        ("tx-resource", {"resource": INLINE_VS}),
        *VALIDATOR_EXTRAS,
    )
    out = ok(http.post(VC, json=body))
    assert values(out, "result") == [False]
    assert values(out, "x-caused-by-unknown-system") == caused_by
    assert values(out, "x-unknown-system") == unknown


@pytest.mark.parametrize(
    ("query", "caused_by"),
    [
        ({"url": UNKNOWN, "code": "x"}, [UNKNOWN]),
        ({"url": UNKNOWN, "code": "x", "version": "2"}, [f"{UNKNOWN}|2"]),
        ({"url": GENDER_CS, "code": "male", "version": "9.9"}, [f"{GENDER_CS}|9.9"]),
    ],
    ids=["system", "system-version", "known-system-unknown-version"],
)
def test_codesystem_validation_against_an_unknown_system(
    http: httpx.Client, query: dict[str, str], caused_by: list[str]
) -> None:
    out = ok(http.get(CS_VC, params={**query, "diagnostics": "true"}))
    assert values(out, "result") == [False]
    assert values(out, "x-caused-by-unknown-system") == caused_by


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.definition.id)
def test_every_operation_can_name_what_it_ignored(op: Operation) -> None:
    """An ignored parameter is named in ``issues`` (a Parameters answer) or on the returned
    ValueSet: every definition declares one of the two outputs."""
    assert {"issues", "return"} & set(op.definition.outputs)


@pytest.mark.parametrize(
    ("method", "path", "query", "body"),
    [
        ("GET", "/$versions", {"foo": "1"}, None),
        (
            "GET",
            "/ValueSet/$compare",
            {"thisUrl": GENDER_VS, "otherUrl": GENDER_VS, "foo": "1"},
            None,
        ),
        (
            "POST",
            "/ValueSet/$batch-validate-code",
            {},
            params(
                ("url", {"valueUri": GENDER_VS}),
                ("foo", {"valueString": "1"}),
                ("validation", {"resource": params(("coding", {"valueCoding": FEMALE}))}),
            ),
        ),
        (
            "GET",
            "/CodeSystem/$subsumes",
            {"system": GENDER_CS, "codeA": "male", "codeB": "male", "foo": "1"},
            None,
        ),
    ],
    ids=["versions", "compare", "batch", "subsumes"],
)
def test_the_other_operations_name_an_ignored_parameter(
    http: httpx.Client, method: str, path: str, query: dict[str, str], body: Any
) -> None:
    response = http.request(method, path, params=query, json=body)
    texts = issue_texts(ok(response))
    assert any("'foo'" in t and "ignored" in t for t in texts), texts
