"""CodeSystem supplements (issue 9, point 6): designations and properties added to the code
system they supplement (with its version rules), for display languages, $lookup and
validation; useSupplement and the value set extension refuse an unknown or mismatched
supplement; a supplement is never a code system; sent as tx-resource it lasts one request."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from http_support import TOKEN, assert_outcome, client, params

from workbench import Workbench
from workbench.errors import SupplementNotFoundError
from workbench.terminology.supplements import SUPPLEMENT_EXTENSION

BASE = "http://example.org/fhir/CodeSystem/supp-base"
DE = "http://example.org/fhir/CodeSystem/supp-de"
FR2 = "http://example.org/fhir/CodeSystem/supp-fr-v2"
VS = "http://example.org/fhir/ValueSet/supp"


def supplement(url: str, target: str, language: str, value: str) -> dict[str, Any]:
    return {
        "resourceType": "CodeSystem",
        "url": url,
        "version": "1",
        "status": "active",
        "content": "supplement",
        "supplements": target,
        "property": [{"code": "weight", "type": "integer"}],
        "concept": [
            {
                "code": "one",
                "designation": [{"language": language, "value": value}],
                "property": [{"code": "weight", "valueInteger": 2}],
            }
        ],
    }


RESOURCES = [
    {
        "resourceType": "CodeSystem",
        "url": BASE,
        "version": "1.0.0",
        "language": "en",
        "status": "active",
        "content": "complete",
        "concept": [{"code": "one", "display": "One"}, {"code": "two", "display": "Two"}],
    },
    supplement(DE, f"{BASE}|1.0.0", "de", "Eins"),
    supplement(FR2, f"{BASE}|2.x", "fr", "Un"),
    {"resourceType": "ValueSet", "url": VS, "compose": {"include": [{"system": BASE}]}},
]


@pytest.fixture
def swb() -> Workbench:
    wb = Workbench()
    wb.load(RESOURCES)
    return wb


@pytest.fixture
def http(swb: Workbench) -> Iterator[httpx.Client]:
    with swb.serve(port=0, token=TOKEN) as handle, client(handle.url) as session:
        yield session


def test_designations_and_properties_come_from_the_matching_supplement(swb: Workbench) -> None:
    assert [e.display for e in swb.expand(VS, display_language="de").entries] == ["Eins", "Two"]
    # the fr supplement is for version 2.x: not applied to 1.0.0
    assert [e.display for e in swb.expand(VS, display_language="fr").entries] == ["One", "Two"]
    found = swb.lookup(BASE, "one")
    assert {"language": "de", "value": "Eins"} in found.designations
    assert ("weight", 2) in found.properties
    # $validate-code takes a supplement's displays only when it is in scope (issue 22, a7)
    result = swb.validate_code(
        VS, code="one", system=BASE, display="Eins", display_language="de", use_supplements=[DE]
    )
    assert (result.result, result.display) == (True, "Eins")
    result = swb.validate_code(VS, code="one", system=BASE, display="Eins", display_language="de")
    assert (result.result, result.display, result.issue) == (False, "One", "invalid-display")


def test_a_supplement_is_not_a_code_system(swb: Workbench) -> None:
    result = swb.validate_code(
        valueset={
            "resourceType": "ValueSet",
            "compose": {"include": [{"system": DE, "concept": [{"code": "one"}]}]},
        },
        code="one",
        system=DE,
    )
    assert swb.terminology.codesystem(DE) is None
    assert result.issues[0].code == "not-found"


def test_a_supplement_loaded_later_is_seen(swb: Workbench) -> None:
    assert swb.expand(VS, display_language="es").entries[0].display == "One"
    swb.load(supplement(BASE + "-es", BASE, "es", "Uno"))
    assert swb.expand(VS, display_language="es").entries[0].display == "Uno"


BAD = [
    pytest.param({"useSupplement": "http://example.org/nothing"}, "is not loaded", id="unknown"),
    pytest.param({"useSupplement": FR2}, "not loaded in a version it applies to", id="mismatch"),
    pytest.param({"useSupplement": BASE}, "not a CodeSystem supplement", id="not-a-supplement"),
]


@pytest.mark.parametrize(("query", "text"), BAD)
def test_requested_supplements_must_be_there(
    swb: Workbench, http: httpx.Client, query: dict[str, str], text: str
) -> None:
    with pytest.raises(SupplementNotFoundError, match=text):
        swb.expand(VS, use_supplements=[query["useSupplement"]])
    with pytest.raises(SupplementNotFoundError, match=text):
        swb.validate_code(VS, code="one", system=BASE, use_supplements=[query["useSupplement"]])
    response = http.get("/ValueSet/$expand", params={"url": VS, **query})
    assert_outcome(response, 400, "not-found", text)
    response = http.get(
        "/ValueSet/$validate-code", params={"url": VS, "code": "one", "system": BASE, **query}
    )
    assert_outcome(response, 400, "not-found", text)


def test_value_set_supplement_extension(swb: Workbench, http: httpx.Client) -> None:
    vs = {
        "resourceType": "ValueSet",
        "url": VS + "-ext",
        "extension": [{"url": SUPPLEMENT_EXTENSION, "valueCanonical": DE}],
        "compose": {"include": [{"system": BASE}]},
    }
    assert swb.expand(vs, display_language="de").entries[0].display == "Eins"
    missing = {**vs, "extension": [{"url": SUPPLEMENT_EXTENSION, "valueCanonical": DE + "x"}]}
    with pytest.raises(SupplementNotFoundError):
        swb.expand(missing)
    response = http.post("/ValueSet/$expand", json=params(("valueSet", {"resource": missing})))
    assert_outcome(response, 400, "not-found", "is not loaded")


def test_supplement_sent_with_a_request(swb: Workbench, http: httpx.Client) -> None:
    sent = supplement(BASE + "-it", BASE, "it", "Uno (it)")
    expansion = swb.expand(VS, display_language="it", tx_resources=[sent])
    assert expansion.entries[0].display == "Uno (it)"
    assert swb.expand(VS, display_language="it").entries[0].display == "One"
    body = params(
        ("url", {"valueUri": VS}),
        ("displayLanguage", {"valueCode": "it"}),
        ("tx-resource", {"resource": sent}),
    )
    answer = http.post("/ValueSet/$expand", json=body).json()
    assert answer["expansion"]["contains"][0]["display"] == "Uno (it)"
