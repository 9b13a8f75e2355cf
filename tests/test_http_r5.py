"""R5 beside R4 over HTTP (issue 49, point 5): ``/fhir/R5`` and ``fhirVersion=5.0`` media
types on ``/fhir/R4`` answer the same data in R5 form, through the same operations."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.http_support import (
    FHIR_JSON,
    GENDER_CS,
    GENDER_VS,
    TOKEN,
    client,
    params,
    served_fixtures,
    values,
    without_volatile,
)
from workbench import Workbench
from workbench.r5 import to_r4

R5_MEDIA = "application/fhir+json; fhirVersion=5.0"
R5_HEADERS = {"Content-Type": R5_MEDIA, "Accept": R5_MEDIA}
V2 = "http://example.org/v2-sex"
MAP_URL = "http://example.org/ConceptMap/sex"
# The same map in both releases (what ConceptMap40_50 makes of one from the other).
MAP_R4 = {
    "resourceType": "ConceptMap",
    "id": "sex",
    "url": MAP_URL,
    "status": "active",
    "sourceUri": GENDER_VS,
    "group": [
        {
            "source": GENDER_CS,
            "target": V2,
            "element": [
                {"code": "male", "target": [{"code": "M", "equivalence": "equivalent"}]},
                {"code": "female", "target": [{"code": "F", "equivalence": "wider"}]},
                {"code": "other", "target": [{"equivalence": "unmatched"}]},
            ],
            "unmapped": {"mode": "provided"},
        }
    ],
}
MAP_R5 = {
    "resourceType": "ConceptMap",
    "id": "sex",
    "url": MAP_URL,
    "status": "active",
    "sourceScopeUri": GENDER_VS,
    "group": [
        {
            "source": GENDER_CS,
            "target": V2,
            "element": [
                {"code": "male", "target": [{"code": "M", "relationship": "equivalent"}]},
                {
                    "code": "female",
                    "target": [{"code": "F", "relationship": "source-is-narrower-than-target"}],
                },
                {"code": "other", "noMap": True},
            ],
            "unmapped": {"mode": "use-source-code"},
        }
    ],
}
INLINE_R5 = {**MAP_R5, "url": "http://example.org/ConceptMap/inline"}
INLINE_R4 = {**MAP_R4, "url": "http://example.org/ConceptMap/inline"}
VS_R5 = {  # R5-only elements: versionAlgorithmString, compose.include.copyright
    "resourceType": "ValueSet",
    "url": "http://example.org/ValueSet/r5-only",
    "version": "1.0.0",
    "versionAlgorithmString": "semver",
    "status": "active",
    "compose": {
        "include": [{"system": GENDER_CS, "copyright": "HL7", "concept": [{"code": "male"}]}]
    },
}


@pytest.fixture(scope="module")
def wb() -> Iterator[Workbench]:
    from tests.conftest import VALUESETS

    bench = Workbench()
    bench.load(VALUESETS, progress=False)
    yield bench


server, http = served_fixtures()


@pytest.fixture(scope="module")
def r5(server: Any, http: httpx.Client) -> Iterator[httpx.Client]:
    """A client on the R5 base (the stored map written through R4 first)."""
    written = http.put("/ConceptMap/sex", json=MAP_R4)
    assert written.status_code in (200, 201), written.text
    with client(server.url.replace("/fhir/R4", "/fhir/R5")) as c:
        yield c


def _r5_answer(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == R5_MEDIA
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.parametrize(
    ("where", "query", "accept", "kind", "fhir_version", "media"),
    [
        ("R5", {}, None, "CapabilityStatement", "5.0.0", R5_MEDIA),
        ("R5", {"mode": "terminology"}, None, "TerminologyCapabilities", None, R5_MEDIA),
        ("R4", {}, R5_MEDIA, "CapabilityStatement", "5.0.0", R5_MEDIA),
        ("R4", {"mode": "terminology"}, R5_MEDIA, "TerminologyCapabilities", None, R5_MEDIA),
        ("R4", {}, None, "CapabilityStatement", "4.0.1", FHIR_JSON),
        (
            "R4",
            {},
            "application/fhir+json; fhirVersion=4.0",
            "CapabilityStatement",
            "4.0.1",
            "application/fhir+json; fhirVersion=4.0",
        ),
        ("R4", {"_format": R5_MEDIA}, None, "CapabilityStatement", "5.0.0", R5_MEDIA),
        (
            "R4",
            {"_format": "application/fhir+json;fhirVersion=5.0", "mode": "terminology"},
            "application/fhir+json; fhirVersion=4.0",  # (``_format`` wins)
            "TerminologyCapabilities",
            None,
            R5_MEDIA,
        ),
    ],
    ids=[
        "r5",
        "r5-terminology",
        "r4-accept-5",
        "r4-accept-5-terminology",
        "r4",
        "r4-accept-4",
        "r4-format-5",
        "r4-format-5-over-accept-4",
    ],
)
def test_metadata(
    http: httpx.Client,
    r5: httpx.Client,
    where: str,
    query: dict[str, str],
    accept: str | None,
    kind: str,
    fhir_version: str | None,
    media: str,
) -> None:
    c = r5 if where == "R5" else http
    got = c.get("/metadata", params=query, headers={"Accept": accept} if accept else {})
    assert got.status_code == 200, got.text
    assert got.headers["content-type"] == media
    body = got.json()
    assert body["resourceType"] == kind
    assert body.get("fhirVersion") == fhir_version
    assert body["implementation"]["url"].endswith(f"/fhir/{where}")


# (id, method, path, R5 request, R4 request): the R5 one on /fhir/R5 and on /fhir/R4 with
# fhirVersion=5.0 answers what the R4 one answers, in R5.
OPERATIONS: list[tuple[str, str, str, dict[str, Any], dict[str, Any]]] = [
    (
        "vs-validate-code",
        "GET",
        "/ValueSet/$validate-code",
        {"url": GENDER_VS, "system": GENDER_CS, "code": "male"},
        {},
    ),
    (
        "cs-validate-code-bad",
        "GET",
        "/CodeSystem/$validate-code",
        {"url": GENDER_CS, "code": "nope"},
        {},
    ),
    ("lookup", "GET", "/CodeSystem/$lookup", {"system": GENDER_CS, "code": "female"}, {}),
    (
        "subsumes",
        "GET",
        "/CodeSystem/$subsumes",
        {"system": GENDER_CS, "codeA": "male", "codeB": "male"},
        {},
    ),
    (
        "expand-property",
        "POST",
        "/ValueSet/$expand",
        params(("url", {"valueUri": GENDER_VS}), ("property", {"valueString": "definition"})),
        {},
    ),
    (
        "translate-stored",
        "GET",
        "/ConceptMap/$translate",
        {"url": MAP_URL, "sourceCode": "female", "system": GENDER_CS, "targetScope": V2},
        {"url": MAP_URL, "code": "female", "system": GENDER_CS, "target": V2},
    ),
    (
        "translate-reverse",
        "GET",
        "/ConceptMap/$translate",
        {"url": MAP_URL, "targetCode": "M", "targetSystem": V2},
        {},
    ),
    (
        "translate-inline",
        "POST",
        "/ConceptMap/$translate",
        params(
            ("conceptMap", {"resource": INLINE_R5}),
            ("sourceCode", {"valueCode": "female"}),
            ("system", {"valueUri": GENDER_CS}),
        ),
        params(
            ("conceptMap", {"resource": INLINE_R4}),
            ("code", {"valueCode": "female"}),
            ("system", {"valueUri": GENDER_CS}),
        ),
    ),
    (
        "translate-codeable-concept",
        "POST",
        "/ConceptMap/$translate",
        params(
            ("url", {"valueUri": MAP_URL}),
            (
                "targetCodeableConcept",
                {"valueCodeableConcept": {"coding": [{"system": V2, "code": "F"}]}},
            ),
        ),
        params(
            ("url", {"valueUri": MAP_URL}),
            (
                "codeableConcept",
                {"valueCodeableConcept": {"coding": [{"system": V2, "code": "F"}]}},
            ),
            ("reverse", {"valueBoolean": True}),
        ),
    ),
    (
        "tx-resource-valueset",
        "POST",
        "/ValueSet/$validate-code",
        params(
            ("url", {"valueUri": VS_R5["url"]}),
            ("tx-resource", {"resource": VS_R5}),
            ("code", {"valueCode": "male"}),
            ("system", {"valueUri": GENDER_CS}),
        ),
        params(
            ("url", {"valueUri": VS_R5["url"]}),
            ("tx-resource", {"resource": to_r4(VS_R5)}),
            ("code", {"valueCode": "male"}),
            ("system", {"valueUri": GENDER_CS}),
        ),
    ),
]


def _send(
    c: httpx.Client, method: str, path: str, given: dict[str, Any], **headers: str
) -> httpx.Response:
    if method == "GET":
        return c.get(path, params=given, headers=headers)
    return c.post(
        path,
        json=given,
        headers={"Content-Type": headers.pop("Content-Type", FHIR_JSON), **headers},
    )


def _comparable(body: dict[str, Any]) -> dict[str, Any]:
    return without_volatile(body) if body["resourceType"] == "ValueSet" else body


@pytest.mark.parametrize(
    ("method", "path", "r5_request", "r4_request"),
    [pytest.param(*case[1:], id=case[0]) for case in OPERATIONS],
)
@pytest.mark.parametrize("route", ["r5-base", "r4-base-fhirversion", "r4-base-format"])
def test_operations_answer_as_r4_does(
    http: httpx.Client,
    r5: httpx.Client,
    route: str,
    method: str,
    path: str,
    r5_request: dict[str, Any],
    r4_request: dict[str, Any],
) -> None:
    if route == "r5-base":
        got = _send(
            r5, method, path, r5_request, **({} if method == "GET" else {"Content-Type": FHIR_JSON})
        )
    elif route == "r4-base-fhirversion":
        got = _send(http, method, path, r5_request, **R5_HEADERS)
    else:  # ``_format`` naming the release: the answer's, and with no Content-Type's, the body's
        asked = {"_format": "application/fhir+json;fhirVersion=5.0"}
        if method == "GET":
            got = _send(http, method, path, {**r5_request, **asked})
        else:
            got = http.post(path, params=asked, json=r5_request)
    answer = _r5_answer(got)
    expected = _send(http, method, path, r4_request or r5_request)
    assert expected.status_code == 200, expected.text
    if "$translate" in path:
        assert answer == _translate_in_r5(expected.json())
    else:
        assert _comparable(to_r4(answer)) == _comparable(expected.json())


# R4's equivalence (of the target) as R5's relationship (of the source), FHIR's table
RELATIONSHIPS = {
    "equivalent": "equivalent",
    "wider": "source-is-narrower-than-target",
    "narrower": "source-is-broader-than-target",
}


def _translate_in_r5(body: dict[str, Any]) -> dict[str, Any]:
    """A $translate answer of R4 as R5 states it: relationship, no ``source`` (originMap)."""
    out = []
    for param in body["parameter"]:
        if param["name"] == "match":
            parts = [
                {"name": "relationship", "valueCode": RELATIONSHIPS[p["valueCode"]]}
                if p["name"] == "equivalence"
                else p
                for p in param["part"]
                if p["name"] != "source"
            ]
            param = {**param, "part": parts}
        out.append(param)
    return {**body, "parameter": out}


@pytest.mark.parametrize(
    ("path", "given", "relationship", "code"),
    [
        (
            "/ConceptMap/$translate",
            {"url": MAP_URL, "sourceCode": "female", "system": GENDER_CS},
            "source-is-narrower-than-target",
            "F",
        ),
        (
            "/ConceptMap/$translate",
            {"url": MAP_URL, "sourceCode": "male", "system": GENDER_CS},
            "equivalent",
            "M",
        ),
    ],
    ids=["wider-is-narrower-than-target", "equivalent"],
)
def test_translate_answers_relationship(
    r5: httpx.Client, path: str, given: dict[str, str], relationship: str, code: str
) -> None:
    body = _r5_answer(r5.get(path, params=given))
    [match] = (
        values(body, "match") if False else [p for p in body["parameter"] if p["name"] == "match"]
    )
    parts = {p["name"]: p for p in match["part"]}
    assert parts["relationship"]["valueCode"] == relationship
    assert parts["concept"]["valueCoding"]["code"] == code
    assert "equivalence" not in parts and "source" not in parts
    assert parts["originMap"]["valueCanonical"] == MAP_URL


def test_expansion_properties_are_r5_elements(r5: httpx.Client) -> None:
    body = _r5_answer(
        r5.get("/ValueSet/$expand", params={"url": GENDER_VS, "property": "definition"})
    )
    expansion = body["expansion"]
    assert {
        "code": "definition",
        "uri": "http://hl7.org/fhir/concept-properties#definition",
    } in expansion["property"]
    male = next(c for c in expansion["contains"] if c["code"] == "male")
    assert male["property"] == [{"code": "definition", "valueString": "Male."}]
    assert "extension" not in male


def test_rest_read_and_write_in_r5(http: httpx.Client, r5: httpx.Client) -> None:
    read = _r5_answer(r5.get("/ConceptMap/sex"))
    assert {k: v for k, v in read.items() if k != "meta"} == MAP_R5
    written = r5.put(
        "/ConceptMap/written",
        json={**MAP_R5, "id": "written", "url": MAP_URL + "-2"},
        headers=R5_HEADERS,
    )
    assert written.status_code == 201, written.text
    assert written.headers["content-type"] == R5_MEDIA
    assert "/fhir/R5/ConceptMap/written/_history/1" in written.headers["location"]
    as_r4 = http.get("/ConceptMap/written").json()
    assert as_r4["group"] == MAP_R4["group"] and as_r4["sourceUri"] == GENDER_VS
    found = _r5_answer(r5.get("/ConceptMap", params={"url": MAP_URL}))
    [entry] = found["entry"]
    assert "/fhir/R5/ConceptMap/sex" in entry["fullUrl"]
    assert entry["resource"]["group"] == MAP_R5["group"]


def test_r5_base_beside_other_bases(wb: Workbench) -> None:
    with wb.serve(port=0, token=TOKEN, base="/tx") as handle, client(handle.url + "/R5") as c:
        assert handle.r5_url == handle.url + "/R5"
        got = c.get("/metadata")
        assert got.status_code == 200 and got.json()["fhirVersion"] == "5.0.0"
        assert got.json()["implementation"]["url"].endswith("/tx/R5")


def test_r5_behind_a_proxy_prefix(wb: Workbench) -> None:
    """Behind a proxy that strips ``/proxy`` (uvicorn's root path), R5 links carry it."""
    from tests.http_support import serve_app
    from workbench.server.app import create_app

    app = create_app(wb.service, token=TOKEN)
    with serve_app(app, base="/fhir/R5", root_path="/proxy") as running, client(running.url) as c:
        body = _r5_answer(c.get("/CodeSystem", params={"url": GENDER_CS}))
        public = f"http://127.0.0.1:{running.port}/proxy/fhir/R5/CodeSystem"
        assert body["link"][0]["url"].startswith(public)
        assert body["entry"][0]["fullUrl"].startswith(public + "/")
