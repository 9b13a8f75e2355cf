"""R5 beside R4 over HTTP (issue 49, point 5), the bad inputs: R5 content on the R4 base
without ``fhirVersion=5.0`` refused as R4 refuses it, a release not served, what R4 cannot
state; each a clear OperationOutcome (4xx), never a 5xx. The fixtures and the inline map are
``test_http_r5``'s."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests import test_http_r5 as shared
from tests.http_support import FHIR_JSON, GENDER_CS, GENDER_VS, assert_outcome, params

INLINE_R5, R5_MEDIA, MAP_URL, V2 = shared.INLINE_R5, shared.R5_MEDIA, shared.MAP_URL, shared.V2
# the served workbench and its clients, as test_http_r5 makes them (a server of this module)
wb, server, http, r5 = shared.wb, shared.server, shared.http, shared.r5

R5_ONLY_MAP = {
    **INLINE_R5,
    "group": [
        {
            **INLINE_R5["group"][0],
            "element": [
                {
                    "code": "male",
                    "target": [
                        {
                            "code": "M",
                            "relationship": "equivalent",
                            "dependsOn": [{"attribute": "age", "valueQuantity": {"value": 3}}],
                        }
                    ],
                }
            ],
        }
    ],
}
NO_RELATIONSHIP_MAP = {
    **INLINE_R5,
    "group": [{**INLINE_R5["group"][0], "element": [{"code": "male", "target": [{"code": "M"}]}]}],
}


def _translate_with(conceptmap: dict[str, Any]) -> dict[str, Any]:
    return params(
        ("conceptMap", {"resource": conceptmap}),
        ("sourceCode", {"valueCode": "male"}),
        ("system", {"valueUri": GENDER_CS}),
    )


# (id, base, method, path, body or query, headers, status, issue code, text)
BAD: list[tuple[str, str, str, str, Any, dict[str, str], int, str, str]] = [
    (
        "r5-map-on-r4",
        "R4",
        "POST",
        "/ConceptMap/$translate",
        _translate_with(INLINE_R5),
        {},
        400,
        "structure",
        r"equivalence is required",
    ),
    (
        "r5-name-on-r4-strict",
        "R4",
        "GET",
        "/ConceptMap/$translate",
        {"url": MAP_URL, "sourceCode": "male", "system": GENDER_CS, "targetScope": V2},
        {"Prefer": "handling=strict"},
        400,
        "invalid",
        r"Unknown parameter 'targetScope'",
    ),
    (
        "r5-codeable-concept-on-r4-strict",
        "R4",
        "POST",
        "/ConceptMap/$translate",
        params(
            ("url", {"valueUri": MAP_URL}), ("targetCodeableConcept", {"valueCodeableConcept": {}})
        ),
        {"Prefer": "handling=strict"},
        400,
        "invalid",
        r"Unknown parameter 'targetCodeableConcept'",
    ),
    (
        "accept-6.0",
        "R4",
        "GET",
        "/metadata",
        {},
        {"Accept": "application/fhir+json; fhirVersion=6.0"},
        406,
        "not-supported",
        r"fhirVersion=6\.0 \(Accept\) is not served",
    ),
    (
        "format-3.0",
        "R4",
        "GET",
        "/metadata",
        {"_format": "application/fhir+json;fhirVersion=3.0"},
        {"Accept": "application/fhir+json; fhirVersion=5.0"},
        406,
        "not-supported",
        r"fhirVersion=3\.0 \(_format\) is not served",
    ),
    (
        "content-type-3.0",
        "R4",
        "POST",
        "/ValueSet/$expand",
        params(("url", {"valueUri": GENDER_VS})),
        {"Content-Type": "application/fhir+json; fhirVersion=3.0"},
        415,
        "not-supported",
        r"fhirVersion=3\.0 \(Content-Type\) is not read",
    ),
    (
        "accept-4.0-on-r5",
        "R5",
        "GET",
        "/metadata",
        {},
        {"Accept": "application/fhir+json; fhirVersion=4.0"},
        406,
        "not-supported",
        r"this base answers fhirVersion 5\.0",
    ),
    (
        "not-representable",
        "R5",
        "POST",
        "/ConceptMap/$translate",
        _translate_with(R5_ONLY_MAP),
        {},
        422,
        "not-supported",
        r"valueQuantity cannot be stated in R4",
    ),
    (
        "no-relationship",
        "R5",
        "POST",
        "/ConceptMap/$translate",
        _translate_with(NO_RELATIONSHIP_MAP),
        {},
        400,
        "structure",
        r"target\[0\]\.relationship is required",
    ),
    (
        "dependency-boolean",
        "R5",
        "POST",
        "/ConceptMap/$translate",
        params(
            ("url", {"valueUri": MAP_URL}),
            ("sourceCode", {"valueCode": "male"}),
            (
                "dependency",
                {
                    "part": [
                        {"name": "attribute", "valueUri": "x"},
                        {"name": "value", "valueBoolean": True},
                    ]
                },
            ),
        ),
        {},
        422,
        "not-supported",
        r"valueBoolean cannot be stated in R4",
    ),
    (
        "not-json-on-r5",
        "R5",
        "POST",
        "/ValueSet/$expand",
        b"{nope",
        {},
        400,
        "structure",
        r"not valid JSON",
    ),
    (
        "no-token-on-r5",
        "R5",
        "GET",
        "/CodeSystem/$lookup",
        {"system": GENDER_CS, "code": "male"},
        {"Authorization": ""},
        401,
        "login",
        r".",
    ),
    (
        "unknown-operation-on-r5",
        "R5",
        "GET",
        "/ValueSet/$nope",
        {},
        {},
        404,
        "not-found",
        r"\$nope",
    ),
]


@pytest.mark.parametrize(
    ("base", "method", "path", "given", "headers", "status", "code", "text"),
    [pytest.param(*case[1:], id=case[0]) for case in BAD],
)
def test_bad_input(
    http: httpx.Client,
    r5: httpx.Client,
    base: str,
    method: str,
    path: str,
    given: Any,
    headers: dict[str, str],
    status: int,
    code: str,
    text: str,
) -> None:
    c = r5 if base == "R5" else http
    if method == "GET":
        got = c.get(path, params=given, headers=headers)
    else:
        content = given if isinstance(given, bytes) else None
        got = c.post(
            path,
            content=content,
            json=None if content else given,
            headers={"Content-Type": FHIR_JSON, **headers},
        )
    body = assert_outcome(got, status, code, text)
    assert body["resourceType"] == "OperationOutcome"
    if base == "R5" or "fhirVersion=5.0" in headers.get("Content-Type", ""):
        assert got.headers["content-type"] == R5_MEDIA
