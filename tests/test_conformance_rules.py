"""Terminology rules HL7's validator relies on (issue 22), each a row asked in Python and over
HTTP, with this file's own fixtures: a small multilingual code system and LOINC's release
fixture (German linguistic variants).

Each row names an operation, its inputs as the FHIR operation names them, and what the FHIR
output must show: output values, and the issues as (severity, issue code, tx-issue-type code,
expression). Python answers are turned into the same FHIR output (``to_parameters()``), so one
table checks both.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_support import TOKEN, client

from workbench import Workbench
from workbench.errors import InvalidLanguageError, TooCostlyError

LOINC = "http://loinc.org"
CS = "http://example.org/rules/colours"
GERMAN = "Glucose [Masse/Volumen] in Serum oder Plasma"
ENGLISH = "Glucose [Mass/volume] in Serum or Plasma"
TX = "http://hl7.org/fhir/tools/CodeSystem/tx-issue-type"
PREFERRED = {
    "system": "http://terminology.hl7.org/CodeSystem/hl7TermMaintInfra",
    "code": "preferredForLanguage",
}

COLOURS = {
    "resourceType": "CodeSystem",
    "url": CS,
    "version": "1.0.0",
    "name": "Colours",
    "status": "active",
    "language": "en",
    "content": "complete",
    "concept": [
        {
            "code": "red",
            "display": "Red",
            "designation": [{"language": "de", "value": "Rot"}],
        },
        {"code": "blue", "display": "Blue"},
        {
            "code": "mauve",
            "display": "Mauve",
            "extension": [
                {
                    "url": "http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status",
                    "valueCode": "deprecated",
                }
            ],
        },
    ],
}


@pytest.fixture(scope="module")
def wb(tmp_path_factory: pytest.TempPathFactory) -> Workbench:
    bench = Workbench()
    bench.load(COLOURS)
    release = Path(__file__).parent / "data" / "loinc-release"
    bench.load_release(release, cache_dir=tmp_path_factory.mktemp("loinc"), progress=False)
    return bench


@pytest.fixture(scope="module")
def http(wb: Workbench) -> Iterator[httpx.Client]:
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as c:
        yield c


@dataclass(frozen=True)
class Rule:
    """One case: inputs, the outputs it must give and its issues."""

    rule: str
    operation: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    issues: list[tuple[str, str, str, str | None]] = field(default_factory=list)


def python_answer(wb: Workbench, rule: Rule) -> dict[str, Any]:
    """The FHIR output of the row's call through the Workbench."""
    given = dict(rule.inputs)
    if rule.operation == "cs-validate":
        return wb.validate_in_codesystem(
            given.pop("url"),
            given.pop("code"),
            display=given.get("display"),
            display_language=given.get("displayLanguage"),
        ).to_parameters()
    assert rule.operation == "lookup"
    return wb.lookup(
        given["system"], given["code"], display_language=given.get("displayLanguage")
    ).to_parameters()


PATHS = {"cs-validate": "/CodeSystem/$validate-code", "lookup": "/CodeSystem/$lookup"}


def outputs(body: dict[str, Any]) -> dict[str, Any]:
    """Output parameters by name (the first value of each; parts for designations)."""
    found: dict[str, Any] = {}
    for p in body["parameter"]:
        value = next((v for k, v in p.items() if k.startswith("value")), p.get("part"))
        found.setdefault(p["name"], p.get("resource", value))
    return found


def issues_of(body: dict[str, Any]) -> list[tuple[str, str, str, str | None]]:
    """The issues as (severity, code, tx-issue-type code, expression)."""
    outcome = outputs(body).get("issues") or {"issue": []}
    return [
        (
            i["severity"],
            i["code"],
            next(c["code"] for c in i["details"]["coding"] if c["system"] == TX),
            (i.get("expression") or [None])[0],
        )
        for i in outcome["issue"]
    ]


RULES = [
    Rule(
        "displayLanguage: a German LOINC name is valid in de-DE",
        "cs-validate",
        {"url": LOINC, "code": "2345-7", "display": GERMAN, "displayLanguage": "de-DE"},
        {"result": True, "display": GERMAN},
    ),
    Rule(
        "displayLanguage: the English name is wrong in de-DE, where there is a German one",
        "cs-validate",
        {"url": LOINC, "code": "2345-7", "display": ENGLISH, "displayLanguage": "de-DE"},
        {"result": False, "display": GERMAN},
        [("error", "invalid", "invalid-display", "display")],
    ),
    Rule(
        "a8: no display in fr, the default display is valid with an information issue",
        "cs-validate",
        {"url": LOINC, "code": "2345-7", "display": ENGLISH, "displayLanguage": "fr"},
        {
            "result": True,
            "display": ENGLISH,
            "message": f"There is no display for {LOINC}#2345-7 in the requested language(s) "
            f"'fr'; '{ENGLISH}' is valid for the code system's default language",
        },
        [("information", "invalid", "invalid-display", "display")],
    ),
    Rule(
        "a8: a FHIR code system's designation in the wanted language",
        "cs-validate",
        {"url": CS, "code": "red", "display": "Rot", "displayLanguage": "de"},
        {"result": True, "display": "Rot"},
    ),
    Rule(
        "a8: no German display for blue: Blue is valid, with an information issue",
        "cs-validate",
        {"url": CS, "code": "blue", "display": "Blue", "displayLanguage": "de"},
        {"result": True, "display": "Blue"},
        [("information", "invalid", "invalid-display", "display")],
    ),
    Rule(
        "a10: a deprecated concept is valid, flagged, with the warning as message",
        "cs-validate",
        {"url": CS, "code": "mauve"},
        {
            "result": True,
            "status": "deprecated",
            "message": "The concept 'mauve' is deprecated and its use should be reviewed",
        },
        [("warning", "business-rule", "code-comment", "code")],
    ),
    Rule(
        "lookup: system, code and abstract",
        "lookup",
        {"system": CS, "code": "blue"},
        {"system": CS, "code": "blue", "abstract": False, "display": "Blue"},
    ),
    Rule(
        "lookup: the designation chosen for displayLanguage",
        "lookup",
        {"system": CS, "code": "red", "displayLanguage": "de"},
        {
            "display": "Rot",
            "designation": [
                {"name": "language", "valueCode": "de"},
                {"name": "use", "valueCoding": PREFERRED},
                {"name": "value", "valueString": "Rot"},
            ],
        },
    ),
]


def _check(rule: Rule, body: dict[str, Any]) -> None:
    found = outputs(body)
    for name, value in rule.outputs.items():
        assert found.get(name) == value, (name, found.get(name))
    if "result" in rule.outputs:
        assert issues_of(body) == rule.issues
    if rule.outputs.get("result") is True and "message" not in rule.outputs and not rule.issues:
        assert "message" not in found


@pytest.mark.parametrize("rule", RULES, ids=[r.rule for r in RULES])
def test_python(wb: Workbench, rule: Rule) -> None:
    _check(rule, python_answer(wb, rule))


@pytest.mark.parametrize("rule", RULES, ids=[r.rule for r in RULES])
def test_http(wb: Workbench, http: httpx.Client, rule: Rule) -> None:
    response = http.get(PATHS[rule.operation], params=rule.inputs)
    assert response.status_code == 200, response.text
    _check(rule, response.json())
    assert response.json() == python_answer(wb, rule)


@pytest.mark.parametrize("text", ["-", "de--", "en_GB", "d e"])
def test_e4_a_display_language_that_is_not_a_tag(
    wb: Workbench, http: httpx.Client, text: str
) -> None:
    """e4: a request error (error/processing, tx invalid-display), never result=false."""
    with pytest.raises(InvalidLanguageError, match="Invalid displayLanguage"):
        wb.validate_in_codesystem(CS, "red", display="Rot", display_language=text)
    response = http.get(
        PATHS["cs-validate"],
        params={"url": CS, "code": "red", "display": "Rot", "displayLanguage": text},
    )
    assert response.status_code == 400
    issue = response.json()["issue"][0]
    assert (issue["severity"], issue["code"]) == ("error", "processing")
    assert {"system": TX, "code": "invalid-display"} in issue["details"]["coding"]


def test_f5_version_is_taken_as_system_version(wb: Workbench, http: httpx.Client) -> None:
    """f5: ValueSet/$validate-code accepts ``version`` as ``systemVersion``."""
    valueset = {"resourceType": "ValueSet", "compose": {"include": [{"system": CS}]}}
    for name, status in (("version", 200), ("systemVersion", 200)):
        body = {
            "resourceType": "Parameters",
            "parameter": [
                {"name": "valueSet", "resource": valueset},
                {"name": "code", "valueCode": "red"},
                {"name": "system", "valueUri": CS},
                {"name": name, "valueString": "1.0.0"},
            ],
        }
        response = http.post("/ValueSet/$validate-code", json=body)
        assert response.status_code == status, response.text
        assert (outputs(response.json())["result"], outputs(response.json())["version"]) == (
            True,
            "1.0.0",
        )
    body["parameter"][-1] = {"name": "version", "valueString": "9.9"}
    assert outputs(http.post("/ValueSet/$validate-code", json=body).json())["result"] is False


def test_f6_allow_maximum_size_expansion() -> None:
    """f6: allowMaximumSizeExpansion lets an unpaged expansion pass the default limit."""
    small = Workbench(max_expansion=1)
    small.load(COLOURS)
    valueset = {"resourceType": "ValueSet", "compose": {"include": [{"system": CS}]}}
    with pytest.raises(TooCostlyError, match="more than the limit of 1"):
        small.expand(valueset).to_fhir()
    assert small.expand(valueset, allow_maximum_size=True).to_fhir()["total"] == 3
    with small.serve(port=0, token=TOKEN) as handle, client(handle.url) as c:
        query = {"url": "http://example.org/rules/all"}
        small.load({**valueset, "url": query["url"], "status": "active"})
        assert c.get("/ValueSet/$expand", params=query).status_code == 422
        allowed = c.get("/ValueSet/$expand", params={**query, "allowMaximumSizeExpansion": "true"})
        assert allowed.status_code == 200
        assert allowed.json()["expansion"]["total"] == 3


SUPPLEMENT = {
    "resourceType": "CodeSystem",
    "url": "http://example.org/rules/colours-fr",
    "version": "1.0.0",
    "status": "active",
    "content": "supplement",
    "supplements": f"{CS}|1.0.0",
    "concept": [{"code": "red", "designation": [{"language": "fr", "value": "Rouge"}]}],
}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            [{"name": "coding", "valueCoding": {"system": CS, "code": "red"}}],
            (True, CS, []),
            id="coding",
        ),
        pytest.param(
            [{"name": "code", "valueCode": "red"}, {"name": "system", "valueUri": CS}],
            (True, CS, []),
            id="code-and-system",
        ),
        pytest.param(
            [
                {
                    "name": "codeableConcept",
                    "valueCodeableConcept": {"coding": [{"system": CS, "code": "blue"}]},
                }
            ],
            (True, CS, []),
            id="codeable-concept",
        ),
        pytest.param(
            [{"name": "coding", "valueCoding": {"system": SUPPLEMENT["url"], "code": "red"}}],
            (False, SUPPLEMENT["url"], [("error", "invalid", "invalid-data", "Coding.system")]),
            id="a-supplement-is-no-system",
        ),
    ],
)
def test_a12_codesystem_validate_code_without_url(
    wb: Workbench, http: httpx.Client, body: list[dict[str, Any]], expected: tuple[Any, ...]
) -> None:
    """a12: without url, the system comes from the coding (or system beside code)."""
    wb.load(SUPPLEMENT)
    response = http.post(
        "/CodeSystem/$validate-code", json={"resourceType": "Parameters", "parameter": body}
    )
    assert response.status_code == 200, response.text
    found = outputs(response.json())
    assert (found["result"], found["system"], issues_of(response.json())) == expected


A1 = "http://example.org/rules/selectable"


@pytest.mark.parametrize(("value", "members"), [("false", ["X"]), ("true", ["Y"])])
def test_a1_a_property_filter_matches_only_concepts_with_that_value(
    http: httpx.Client, value: str, members: list[str]
) -> None:
    """a1: ``notSelectable = false`` selects X (false), not Y (true) nor Z (no property),
    whether the property is declared by its code, by its URI under another code, or not."""
    for code, declared in (("notSelectable", True), ("ns", True), ("notSelectable", False)):
        concepts = [
            {"code": c, "property": [{"code": code, "valueBoolean": v}]}
            for c, v in (("X", False), ("Y", True))
        ] + [{"code": "Z"}]
        cs = {
            "resourceType": "CodeSystem",
            "url": A1,
            "status": "active",
            "content": "complete",
            "concept": concepts,
        }
        if declared:
            uri = "http://hl7.org/fhir/concept-properties#notSelectable"
            cs["property"] = [{"code": code, "uri": uri, "type": "boolean"}]
        include = {
            "system": A1,
            "filter": [{"property": "notSelectable", "op": "=", "value": value}],
        }
        vs = {"resourceType": "ValueSet", "status": "active", "compose": {"include": [include]}}
        common = [{"name": "tx-resource", "resource": cs}, {"name": "valueSet", "resource": vs}]
        expanded = http.post(
            "/ValueSet/$expand", json={"resourceType": "Parameters", "parameter": common}
        )
        assert [c["code"] for c in expanded.json()["expansion"].get("contains", [])] == members
        for probe in ("X", "Y", "Z"):
            checked = http.post(
                "/ValueSet/$validate-code",
                json={
                    "resourceType": "Parameters",
                    "parameter": [
                        *common,
                        {"name": "code", "valueCode": probe},
                        {"name": "system", "valueUri": A1},
                        {"name": "abstract", "valueBoolean": True},
                    ],
                },
            )
            assert outputs(checked.json())["result"] is (probe in members), (code, probe)


@pytest.mark.parametrize("form", ["coding", "codeableConcept"])
def test_a5_a_coding_without_a_system_is_no_member(
    wb: Workbench, http: httpx.Client, form: str
) -> None:
    """a5: never inferred for a Coding (only code + inferSystem is): not-in-vs at the code,
    invalid-data at the coding."""
    valueset = {"resourceType": "ValueSet", "compose": {"include": [{"system": CS}]}}
    coding = {"code": "red"}
    if form == "coding":
        result = wb.validate_code(valueset, coding=coding)
        value: dict[str, Any] = {"valueCoding": coding}
        at = "Coding"
    else:
        result = wb.validate_code(valueset, codeable_concept={"coding": [coding]})
        value = {"valueCodeableConcept": {"coding": [coding]}}
        at = "CodeableConcept.coding[0]"
    body = {
        "resourceType": "Parameters",
        "parameter": [{"name": "valueSet", "resource": valueset}, {"name": form, **value}],
    }
    answer = http.post("/ValueSet/$validate-code", json=body).json()
    assert answer == result.to_parameters()
    assert outputs(answer)["result"] is False
    found = issues_of(answer)
    code_issue = "not-in-vs" if form == "coding" else "this-code-not-in-vs"
    severity = "error" if form == "coding" else "information"
    assert (severity, "code-invalid", code_issue, f"{at}.code") in found
    assert ("warning", "invalid", "invalid-data", at) in found
