"""GET /metadata?mode=terminology and the CapabilityStatement's ecosystem fields (issue 9.12)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from http_support import TOKEN, assert_outcome, client

from workbench import Workbench
from workbench.operations import OPERATIONS

S = "http://example.org/fhir/CodeSystem/caps"
ONE = "http://example.org/fhir/CodeSystem/caps-unversioned"


def codesystem(version: str | None, url: str = S, **extra: Any) -> dict[str, Any]:
    resource: dict[str, Any] = {
        "resourceType": "CodeSystem",
        "url": url,
        "status": "active",
        "content": "complete",
        "concept": [{"code": "a"}],
        **extra,
    }
    if version is not None:
        resource["version"] = version
    return resource


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    wb = Workbench()
    wb.load(
        [
            codesystem("1.0.0"),
            codesystem("2.0.0"),
            codesystem("1.5.0"),
            codesystem(None, ONE),
            {
                "resourceType": "CodeSystem",
                "url": "http://example.org/fhir/CodeSystem/caps-de",
                "status": "active",
                "content": "supplement",
                "supplements": S,
                "concept": [{"code": "a"}],
            },
        ]
    )
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as session:
        yield session


def test_every_code_system_with_all_its_versions(http: httpx.Client) -> None:
    caps = http.get("/metadata", params={"mode": "terminology"}).json()
    assert caps["resourceType"] == "TerminologyCapabilities"
    assert caps["kind"] == "instance" and caps["status"] == "active"
    by_uri = {entry["uri"]: entry for entry in caps["codeSystem"]}
    assert by_uri[S]["version"] == [
        {"code": "1.0.0", "isDefault": False},
        {"code": "2.0.0", "isDefault": True},
        {"code": "1.5.0", "isDefault": False},
    ]
    assert by_uri[ONE] == {"uri": ONE}
    assert "http://example.org/fhir/CodeSystem/caps-de" not in by_uri  # a supplement


def test_expansion_parameters_are_the_ones_expand_honours(http: httpx.Client) -> None:
    caps = http.get("/metadata", params={"mode": "terminology"}).json()
    expand = next(op for op in OPERATIONS if op.definition.id == "ValueSet-expand")
    names = [p["name"] for p in caps["expansion"]["parameter"]]
    assert names == sorted(expand.supported)
    assert caps["expansion"]["paging"] is True


def test_needs_no_token(http: httpx.Client) -> None:
    with client(str(http.base_url), token=None) as anonymous:
        answer = anonymous.get("/metadata", params={"mode": "terminology"})
    assert answer.status_code == 200
    assert answer.json()["resourceType"] == "TerminologyCapabilities"


@pytest.mark.parametrize("mode", [None, "full", "normative"])
def test_capability_statement_names_the_terminology_server_profile(
    http: httpx.Client, mode: str | None
) -> None:
    query = {"mode": mode} if mode else {}
    caps = http.get("/metadata", params=query).json()
    assert caps["resourceType"] == "CapabilityStatement"
    assert caps["fhirVersion"] == "4.0.1"
    assert caps["instantiates"] == ["http://hl7.org/fhir/CapabilityStatement/terminology-server"]
    (rest,) = caps["rest"]
    assert rest["security"]["service"] == [{"text": "Bearer token (RFC 6750)"}]


def test_unknown_mode(http: httpx.Client) -> None:
    response = http.get("/metadata", params={"mode": "everything"})
    assert_outcome(response, 400, "invalid", r"'mode' must be full, normative or terminology")


def test_translate_is_listed_with_its_definition(http: httpx.Client) -> None:
    caps = http.get("/metadata").json()
    (conceptmap,) = [r for r in caps["rest"][0]["resource"] if r["type"] == "ConceptMap"]
    translate = {
        "name": "translate",
        "definition": "http://hl7.org/fhir/OperationDefinition/ConceptMap-translate",
    }
    assert translate in conceptmap["operation"]
    served = http.get("/OperationDefinition/ConceptMap-translate")
    assert served.status_code == 200
    assert served.json()["url"] == translate["definition"]
    names = {p["name"] for p in conceptmap["searchParam"]}
    assert {"source", "target", "source-system", "target-system"} <= names
    terminology = http.get("/metadata", params={"mode": "terminology"}).json()
    assert terminology["translation"] == {"needsMap": False}


def feature_value(caps: dict[str, Any], definition: str) -> Any:
    """The value of the application-feature extension with this definition."""
    found = []
    for ext in caps.get("extension", []):
        if ext["url"] != "http://hl7.org/fhir/uv/application-feature/StructureDefinition/feature":
            continue
        parts = {e["url"]: e for e in ext["extension"]}
        if parts["definition"]["valueCanonical"] == definition:
            value = parts["value"]
            found.append(next(v for k, v in value.items() if k.startswith("value")))
    assert len(found) == 1, f"{definition}: {found}"
    return found[0]


def test_the_features_the_hl7_validator_reads_at_start(http: httpx.Client) -> None:
    caps = http.get("/metadata").json()
    version = feature_value(caps, "http://hl7.org/fhir/uv/tx-tests/FeatureDefinition/test-version")
    assert tuple(int(n) for n in version.split(".")) >= (1, 7, 8)  # batches from 1.7.8
    as_parameter = "http://hl7.org/fhir/uv/tx-ecosystem/FeatureDefinition/CodeSystemAsParameter"
    assert feature_value(caps, as_parameter) is True


def test_both_statements_give_the_same_software_version(http: httpx.Client) -> None:
    full = http.get("/metadata").json()
    terminology = http.get("/metadata", params={"mode": "terminology"}).json()
    assert full["software"]["version"]
    assert terminology["software"] == full["software"]


def test_built_in_code_systems_are_listed_with_their_versions(http: httpx.Client) -> None:
    caps = http.get("/metadata", params={"mode": "terminology"}).json()
    by_uri = {entry["uri"]: entry for entry in caps["codeSystem"]}
    assert by_uri["http://unitsofmeasure.org"]["version"] == [{"code": "2.2", "isDefault": True}]
