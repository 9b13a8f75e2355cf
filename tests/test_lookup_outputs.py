"""$lookup outputs (issue 9, point 10): name is CodeSystem.name, version, display (in the
requested language, with the weights of languages.md, also from the Accept-Language header;
display is required in R4, so it falls back to the concept's own), definition, designations
with language and use, every property plus parent, child, inactive, status and notSelectable,
chosen by ``property``; supplements applied and ``useSupplement`` refusing an unknown one.
Python and HTTP give the same outputs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from http_support import TOKEN, assert_outcome, client

from workbench import Workbench
from workbench.errors import SupplementNotFoundError

CS = "http://example.org/fhir/CodeSystem/lookup-animals"
SUPP = "http://example.org/fhir/CodeSystem/lookup-animals-fr"
USE = {"system": "http://snomed.info/sct", "code": "900000000000013009"}

RESOURCES: list[dict[str, Any]] = [
    {
        "resourceType": "CodeSystem",
        "url": CS,
        "version": "2.0.0",
        "name": "LookupAnimals",
        "title": "Animals for lookup",
        "language": "en",
        "status": "active",
        "content": "complete",
        "hierarchyMeaning": "is-a",
        "property": [
            {"code": "legs", "type": "integer"},
            {
                "code": "status",
                "uri": "http://hl7.org/fhir/concept-properties#status",
                "type": "code",
            },
            {"code": "notSelectable", "type": "boolean"},
        ],
        "concept": [
            {
                "code": "animal",
                "display": "Animal",
                "property": [{"code": "notSelectable", "valueBoolean": True}],
                "concept": [
                    {
                        "code": "dog",
                        "display": "Dog",
                        "definition": "A domesticated canine",
                        "designation": [
                            {"language": "de", "use": USE, "value": "Hund"},
                            {"language": "en", "value": "Doggy"},
                        ],
                        "property": [{"code": "legs", "valueInteger": 4}],
                    },
                    {
                        "code": "dodo",
                        "display": "Dodo",
                        "property": [{"code": "status", "valueCode": "retired"}],
                    },
                ],
            }
        ],
    },
    {
        "resourceType": "CodeSystem",
        "url": SUPP,
        "version": "1",
        "status": "active",
        "content": "supplement",
        "supplements": CS,
        "concept": [{"code": "dog", "designation": [{"language": "fr", "value": "Chien"}]}],
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


def outputs(body: dict[str, Any], name: str) -> list[Any]:
    return [p for p in body["parameter"] if p["name"] == name]


def parts(param: dict[str, Any]) -> dict[str, Any]:
    return {
        p["name"]: next(v for k, v in p.items() if k.startswith("value")) for p in param["part"]
    }


def http_properties(body: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(parts(p)["code"], parts(p)["value"]) for p in outputs(body, "property")]


PROPERTIES = [
    pytest.param(
        "dog",
        None,
        [("legs", 4), ("parent", "animal"), ("inactive", False)],
        id="dog-all",
    ),
    pytest.param(
        "animal",
        None,
        [("notSelectable", True), ("child", "dog"), ("child", "dodo"), ("inactive", False)],
        id="abstract-parent",
    ),
    pytest.param(
        "dodo",
        None,
        [("status", "retired"), ("parent", "animal"), ("inactive", True)],
        id="retired",
    ),
    pytest.param("dog", ["legs"], [("legs", 4)], id="only-legs"),
    pytest.param("dog", ["parent", "child"], [("parent", "animal")], id="hierarchy-only"),
    pytest.param("dog", ["nothing-such"], [], id="unknown-property-selects-none"),
]


@pytest.mark.parametrize(("code", "wanted", "expected"), PROPERTIES)
def test_properties_in_python_and_over_http(
    lwb: Workbench,
    http: httpx.Client,
    code: str,
    wanted: list[str] | None,
    expected: list[tuple[str, Any]],
) -> None:
    found = lwb.lookup(CS, code, properties=wanted)
    assert sorted(found.properties) == sorted(expected)
    query: dict[str, Any] = {"system": CS, "code": code}
    if wanted:
        query["property"] = wanted
    response = http.get("/CodeSystem/$lookup", params=query)
    assert response.status_code == 200, response.text
    assert sorted(http_properties(response.json())) == sorted(expected)


def test_name_version_display_definition_and_designations(
    lwb: Workbench, http: httpx.Client
) -> None:
    found = lwb.lookup(CS, "dog")
    assert (found.name, found.version, found.display, found.definition) == (
        "LookupAnimals",
        "2.0.0",
        "Dog",
        "A domesticated canine",
    )
    assert {"language": "de", "use": USE, "value": "Hund"} in found.designations
    assert {"language": "fr", "value": "Chien"} in found.designations  # from the supplement
    body = http.get("/CodeSystem/$lookup", params={"system": CS, "code": "dog"}).json()
    single = {p["name"]: p.get("valueString") for p in body["parameter"] if "valueString" in p}
    assert single == {
        "name": "LookupAnimals",
        "version": "2.0.0",
        "display": "Dog",
        "definition": "A domesticated canine",
    }
    designations = [parts(p) for p in outputs(body, "designation")]
    assert {"language": "de", "use": USE, "value": "Hund"} in designations
    assert {"language": "fr", "value": "Chien"} in designations


LANGUAGES = [
    pytest.param("de", None, "Hund", id="de"),
    pytest.param("fr", None, "Chien", id="fr-from-supplement"),
    pytest.param("es, fr;q=0.5", None, "Chien", id="weights-fall-to-fr"),
    pytest.param("en", None, "Dog", id="codesystem-language"),
    pytest.param("es", None, "Dog", id="fallback-allowed"),
    # $lookup's display is 1..1 in R4: with fallback forbidden it is still the concept's own
    pytest.param("es, *;q=0", None, "Dog", id="fallback-forbidden-display-required"),
    pytest.param(None, "de", "Hund", id="accept-language-header"),
    pytest.param("fr", "de", "Chien", id="displayLanguage-before-header"),
    pytest.param(None, "es, *;q=0", "Dog", id="header-forbids-fallback"),
]


@pytest.mark.parametrize(("language", "header", "display"), LANGUAGES)
def test_display_in_the_requested_language(
    lwb: Workbench,
    http: httpx.Client,
    language: str | None,
    header: str | None,
    display: str,
) -> None:
    found = lwb.lookup(CS, "dog", display_language=language, accept_language=header)
    assert found.display == display
    query = {"system": CS, "code": "dog"} | ({"displayLanguage": language} if language else {})
    headers = {"Accept-Language": header} if header else {}
    body = http.get("/CodeSystem/$lookup", params=query, headers=headers).json()
    assert [p["valueString"] for p in outputs(body, "display")] == [display]


def test_use_supplement_must_be_loaded(lwb: Workbench, http: httpx.Client) -> None:
    assert lwb.lookup(CS, "dog", use_supplements=[SUPP]).display == "Dog"
    with pytest.raises(SupplementNotFoundError, match="is not loaded"):
        lwb.lookup(CS, "dog", use_supplements=["http://example.org/none"])
    ok = http.get(
        "/CodeSystem/$lookup", params={"system": CS, "code": "dog", "useSupplement": SUPP}
    )
    assert ok.status_code == 200, ok.text
    response = http.get(
        "/CodeSystem/$lookup",
        params={"system": CS, "code": "dog", "useSupplement": "http://example.org/none"},
    )
    assert_outcome(response, 400, "not-found", "is not loaded")
