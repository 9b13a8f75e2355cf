"""Issue 22, section (f): SNOMED CT conformance rules f1-f4 and f7-f11, in Python and over
HTTP, on the hand-made RF2 release of ``snomed_rf2`` (plus one orphan module concept, for
ECL ``*``). Each test is named after its rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest
import snomed_rf2
from http_support import assert_outcome, params, served_fixtures, values

from workbench import Workbench
from workbench.errors import ImplicitValueSetNotFoundError, InvalidValueSetError
from workbench.releases.snomed.loader import KIND

SCT = "http://snomed.info/sct"
TX_ISSUE_TYPE = "http://hl7.org/fhir/tools/CodeSystem/tx-issue-type"
PREFERRED_FOR_LANGUAGE = {
    "system": "http://terminology.hl7.org/CodeSystem/hl7TermMaintInfra",
    "code": "preferredForLanguage",
}
#: An active module concept without any is-a relationship in the release (ECL ``*``, f9)
ORPHAN = "449080006"

#: Expressions as a user writes them (terms of their own, spaces) and their display (f1)
DISPLAYS = [
    (
        "64572001 |x| : 363698007 |y| = 80891009 |z|",
        "64572001|Disease|:363698007|Finding site|=80891009|Heart structure|",
    ),
    (
        "64572001 : { 363698007 = 80891009 , 116676008 = 55641003 }",
        "64572001|Disease|:{363698007|Finding site|=80891009|Heart structure|,"
        "116676008|Associated morphology|=55641003|Infarct|}",
    ),
    (
        "322236009 |tablet| : 1142135004 = #250",
        "322236009|Paracetamol 500 mg oral tablet|:"
        "1142135004|Has presentation strength numerator value|=#250",
    ),
]
EXPRESSION, SHOWN = DISPLAYS[0]
REFINED_ELSEWHERE = "64572001 : 363698007 = 39607008"


def _orphan_edit() -> dict[str, str]:
    """The fixture release's concept and description files, plus ``ORPHAN``."""
    base = snomed_rf2.files()
    time, core = snomed_rf2.TIME, snomed_rf2.CORE
    concepts = f"Snapshot/Terminology/sct2_Concept_Snapshot_INT_{time}.txt"
    descriptions = f"Snapshot/Terminology/sct2_Description_Snapshot-en_INT_{time}.txt"
    term = "SNOMED CT to ICD-10 rule-based mapping module (core metadata concept)"
    return {
        concepts: base[concepts] + "\t".join([ORPHAN, time, "1", core, snomed_rf2.PRIMITIVE]),
        descriptions: base[descriptions]
        + "\t".join(
            ["8888011", time, "1", core, ORPHAN, "en", snomed_rf2.FSN, term, snomed_rf2.CASE]
        ),
    }


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return snomed_rf2.write(tmp_path_factory.mktemp("rf2"), edit=_orphan_edit())


@pytest.fixture(scope="module")
def wb(release: Path, tmp_path_factory: pytest.TempPathFactory) -> Workbench:
    bench = Workbench()
    bench.load_release(release, cache_dir=tmp_path_factory.mktemp("cache"), progress=False)
    return bench


server, http = served_fixtures()


def _ecl(text: str) -> str:
    return f"{SCT}?fhir_vs=ecl/{text}"


def _enumerated(*codes: str) -> dict[str, Any]:
    return {
        "resourceType": "ValueSet",
        "status": "active",
        "compose": {"include": [{"system": SCT, "concept": [{"code": c} for c in codes]}]},
    }


def _isa_with_expressions(flag: str) -> dict[str, Any]:
    filters = [
        {"property": "concept", "op": "is-a", "value": "64572001"},
        {"property": "expressions", "op": "=", "value": flag},
    ]
    return {
        "resourceType": "ValueSet",
        "status": "active",
        "compose": {"include": [{"system": SCT, "filter": filters}]},
    }


def _issues(body: dict[str, Any]) -> list[tuple[str, str, str, list[str] | None]]:
    """(severity, code, tx-issue-type, expression) of each issue of a $validate-code answer."""
    outcome = next((p["resource"] for p in body["parameter"] if p["name"] == "issues"), None)
    return [
        (
            i["severity"],
            i["code"],
            next(c["code"] for c in i["details"]["coding"] if c["system"] == TX_ISSUE_TYPE),
            i.get("expression"),
        )
        for i in (outcome or {"issue": []})["issue"]
    ]


def _tx_codes(body: dict[str, Any]) -> list[str]:
    return [
        c["code"]
        for i in body["issue"]
        for c in i["details"].get("coding", ())
        if c["system"] == TX_ISSUE_TYPE
    ]


# --- f1: the display of a post-coordinated expression --------------------------------------


@pytest.mark.parametrize(("code", "shown"), DISPLAYS)
def test_f1_expression_display_python(wb: Workbench, code: str, shown: str) -> None:
    in_cs = wb.validate_in_codesystem(SCT, code)
    assert (in_cs.result, in_cs.display, in_cs.message) == (True, shown, None)
    assert [(i.severity, i.type, i.code, i.expression) for i in in_cs.issues] == [
        ("information", "informational", "process-note", "code")
    ]
    in_vs = wb.validate_code(_ecl("<< 138875005"), code=code, system=SCT)
    assert (in_vs.result, in_vs.display, in_vs.issues) == (True, shown, ())
    assert wb.lookup(SCT, code).display == shown


def test_f1_expression_display_when_not_a_member(wb: Workbench) -> None:
    found = wb.validate_code(_ecl("<< 195967001"), code=EXPRESSION, system=SCT)
    assert (found.result, found.issue, found.display) == (False, "not-in-vs", SHOWN)


@pytest.mark.parametrize(
    ("path", "query", "result", "issues"),
    [
        (
            "/CodeSystem/$validate-code",
            {"url": SCT, "code": EXPRESSION},
            True,
            [("information", "informational", "process-note", ["code"])],
        ),
        ("/ValueSet/$validate-code", {"url": _ecl("< 64572001")}, True, []),
        (
            "/ValueSet/$validate-code",
            {"url": _ecl("<< 195967001")},
            False,
            [("error", "code-invalid", "not-in-vs", ["code"])],
        ),
    ],
)
def test_f1_expression_display_http(
    http: httpx.Client,
    path: str,
    query: dict[str, str],
    result: bool,
    issues: list[Any],
) -> None:
    body = http.get(path, params={"system": SCT, "code": EXPRESSION, **query}).json()
    assert values(body, "result") == [result]
    assert values(body, "display") == [SHOWN]
    assert _issues(body) == issues
    assert bool(values(body, "message")) is not result


def test_f1_expression_display_http_coding_codeable_concept_and_lookup(http: httpx.Client) -> None:
    coding = {"system": SCT, "code": EXPRESSION}
    body = http.post(
        "/CodeSystem/$validate-code", json=params(("coding", {"valueCoding": coding}))
    ).json()
    assert values(body, "display") == [SHOWN]
    assert _issues(body) == [("information", "informational", "process-note", ["Coding.code"])]
    looked = http.get("/CodeSystem/$lookup", params={"system": SCT, "code": EXPRESSION})
    assert values(looked.json(), "display") == [SHOWN]
    concept = {"valueCodeableConcept": {"coding": [coding]}}
    body = http.post("/CodeSystem/$validate-code", json=params(("codeableConcept", concept))).json()
    assert values(body, "display") == [SHOWN]
    assert _issues(body) == [
        ("information", "informational", "process-note", ["CodeableConcept.coding[0].code"])
    ]
    body = http.post(
        "/ValueSet/$validate-code",
        json=params(("url", {"valueUri": _ecl("< 64572001")}), ("codeableConcept", concept)),
    ).json()
    assert (values(body, "result"), values(body, "display")) == ([True], [SHOWN])


# --- f2: membership of expressions -------------------------------------------------------------

MEMBERSHIP: list[tuple[str, Any, str, bool]] = [
    ("listed exactly", _enumerated("64572001 : 363698007 = 80891009"), EXPRESSION, True),
    ("listed, other terms", _enumerated("64572001|Disease|:363698007=80891009"), EXPRESSION, True),
    ("other refinement listed", _enumerated(REFINED_ELSEWHERE), EXPRESSION, False),
    ("only the focus listed", _enumerated("64572001"), EXPRESSION, False),
    ("is-a, expressions = false", _isa_with_expressions("false"), EXPRESSION, False),
    ("is-a, expressions = true", _isa_with_expressions("true"), EXPRESSION, True),
    ("descendant", _ecl("< 64572001"), EXPRESSION, True),
    ("descendant or self", _ecl("<< 64572001"), EXPRESSION, True),
    ("child", _ecl("<! 64572001"), EXPRESSION, False),
    ("child or self", _ecl("<<! 64572001"), EXPRESSION, False),
    ("ancestor", _ecl("> 64572001"), EXPRESSION, False),
    ("ancestor or self", _ecl(">> 64572001"), EXPRESSION, False),
    ("parent", _ecl(">! 64572001"), EXPRESSION, False),
    ("parent or self", _ecl(">>! 64572001"), EXPRESSION, False),
    ("refinement holds", _ecl("< 64572001 : 363698007 = << 123037004"), EXPRESSION, True),
    ("refinement fails", _ecl("< 64572001 : 363698007 = 39607008"), EXPRESSION, False),
    ("group wanted, none given", _ecl("< 64572001 : { 363698007 = 80891009 }"), EXPRESSION, False),
    (
        "group wanted and given",
        _ecl("< 64572001 : { 363698007 = 80891009 }"),
        "64572001 : { 363698007 = 80891009 }",
        True,
    ),
    ("minus removes refinements", _ecl("<< 404684003 MINUS << 64572001"), EXPRESSION, False),
    ("minus of something else", _ecl("<< 404684003 MINUS << 195967001"), EXPRESSION, True),
]


@pytest.mark.parametrize(
    ("valueset", "code", "result"),
    [case[1:] for case in MEMBERSHIP],
    ids=[case[0] for case in MEMBERSHIP],
)
def test_f2_expression_membership(wb: Workbench, valueset: Any, code: str, result: bool) -> None:
    found = (
        wb.validate_code(valueset, code=code, system=SCT)
        if isinstance(valueset, str)
        else wb.validate_code(valueset=valueset, code=code, system=SCT)
    )
    assert found.result is result, found.message
    if not result:
        assert [(i.code, i.expression) for i in found.issues] == [("not-in-vs", "code")]


@pytest.mark.parametrize(
    ("valueset", "code", "result"),
    [case[1:] for case in MEMBERSHIP],
    ids=[case[0] for case in MEMBERSHIP],
)
def test_f2_expression_membership_http(
    http: httpx.Client, valueset: Any, code: str, result: bool
) -> None:
    coding = {"valueCoding": {"system": SCT, "code": code}}
    vs = ("url", {"valueUri": valueset}) if isinstance(valueset, str) else None
    given = vs or ("valueSet", {"resource": valueset})
    body = http.post("/ValueSet/$validate-code", json=params(given, ("coding", coding))).json()
    assert values(body, "result") == [result]
    if not result:
        assert _issues(body) == [("error", "code-invalid", "not-in-vs", ["Coding.code"])]


def test_f2_bulk_validation_agrees(wb: Workbench) -> None:
    """A column of expressions against value sets that list them, or their focus only."""
    codes = [case[2] for case in MEMBERSHIP] + [REFINED_ELSEWHERE, "64572001", "22298006"]
    column = pd.Series(codes * 2)
    for valueset in (
        _enumerated("64572001 : 363698007 = 80891009", "22298006"),
        _ecl("<! 64572001"),
    ):
        report = wb.validate_column(column, valueset, system=SCT)
        for code, row in zip(column, report.itertuples(), strict=True):
            single = (
                wb.validate_code(valueset, code=code, system=SCT)
                if isinstance(valueset, str)
                else wb.validate_code(valueset=valueset, code=code, system=SCT)
            )
            assert bool(row.result) is single.result, code


# --- f3: $lookup of an expression ---------------------------------------------------------------

LOOKED_UP = "56265001 |Heart disease| : 116676008 = 55641003"
LOOKED_UP_SHOWN = "56265001|Heart disease|:116676008|Associated morphology|=55641003|Infarct|"
#: the focus concept's properties (56265001), then the expression's own refinement, as
#: (code, value, description, code-display)
LOOKED_UP_PROPERTIES = [
    ("inactive", False, None, None),
    ("moduleId", snomed_rf2.CORE, None, None),
    ("effectiveTime", snomed_rf2.TIME, None, None),
    ("parent", "49601007", "Disorder of cardiovascular system", None),
    ("child", "22298006", "Myocardial infarction", None),
    ("363698007", "80891009", "Heart structure", "Finding site"),
    ("116676008", "55641003", "Infarct", "Associated morphology"),
]


def test_f3_lookup_of_an_expression(wb: Workbench) -> None:
    found = wb.lookup(SCT, LOOKED_UP)
    assert (found.code, found.display, found.abstract) == (LOOKED_UP, LOOKED_UP_SHOWN, False)
    assert found.designations == (
        {"language": "en-US", "use": PREFERRED_FOR_LANGUAGE, "value": LOOKED_UP_SHOWN},
    )
    assert [
        (name, v.value, v.description, v.code_display) for name, v in found.typed_properties
    ] == LOOKED_UP_PROPERTIES
    assert [name for name, _ in wb.lookup(SCT, LOOKED_UP, properties=["parent"]).properties] == [
        "parent"
    ]


def test_f3_lookup_of_an_expression_http(http: httpx.Client) -> None:
    answer = http.get("/CodeSystem/$lookup", params={"system": SCT, "code": LOOKED_UP})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert values(body, "code") == [LOOKED_UP]
    assert values(body, "display") == [LOOKED_UP_SHOWN]
    designations = [p["part"] for p in body["parameter"] if p["name"] == "designation"]
    assert designations == [
        [
            {"name": "language", "valueCode": "en-US"},
            {"name": "use", "valueCoding": PREFERRED_FOR_LANGUAGE},
            {"name": "value", "valueString": LOOKED_UP_SHOWN},
        ]
    ]
    props = []
    for p in body["parameter"]:
        if p["name"] == "property":
            parts = {part["name"]: part for part in p["part"]}
            value = next(v for k, v in parts["value"].items() if k != "name")
            props.append(
                (
                    parts["code"]["valueCode"],
                    value,
                    parts.get("description", {}).get("valueString"),
                    parts.get("code-display", {}).get("valueString"),
                )
            )
    assert props == LOOKED_UP_PROPERTIES


def test_f3_concept_properties_carry_their_terms_http(http: httpx.Client) -> None:
    """The same parts for a concept: the value's term, and the attribute's (code-display)."""
    body = http.get("/CodeSystem/$lookup", params={"system": SCT, "code": "22298006"}).json()
    parts = [
        {part["name"]: part for part in p["part"]}
        for p in body["parameter"]
        if p["name"] == "property"
    ]
    parent = next(p for p in parts if p["code"]["valueCode"] == "parent")
    assert parent["description"]["valueString"] == "Heart disease"
    site = next(p for p in parts if p["code"]["valueCode"] == "363698007")
    assert (site["value"]["valueCode"], site["code-display"]["valueString"]) == (
        "80891009",
        "Finding site",
    )
    assert site["description"]["valueString"] == "Heart structure"


# --- f4: expanding enumerated expressions -------------------------------------------------------

LISTED = ["64572001 |x| : 363698007 |y| = 80891009 |z|", "22298006", DISPLAYS[2][0]]
LISTED_ENTRIES = [
    (LISTED[0], SHOWN),
    ("22298006", "Myocardial infarction"),
    (LISTED[2], DISPLAYS[2][1]),
]


def test_f4_expanding_enumerated_expressions(wb: Workbench) -> None:
    expansion = wb.expand(_enumerated(*LISTED))
    assert [(e.code, e.display) for e in expansion.entries] == LISTED_ENTRIES
    assert expansion.total == 3


def test_f4_expanding_enumerated_expressions_http(http: httpx.Client) -> None:
    body = http.post(
        "/ValueSet/$expand", json=params(("valueSet", {"resource": _enumerated(*LISTED)}))
    ).json()
    contains = body["expansion"]["contains"]
    assert [(c["code"], c["display"]) for c in contains] == LISTED_ENTRIES
    assert {c["system"] for c in contains} == {SCT}
    assert body["expansion"]["total"] == 3


def test_f4_exclude_post_coordinated_leaves_expressions_out_http(http: httpx.Client) -> None:
    body = http.post(
        "/ValueSet/$expand",
        json=params(
            ("valueSet", {"resource": _enumerated(*LISTED)}),
            ("excludePostCoordinated", {"valueBoolean": True}),
        ),
    ).json()
    assert [c["code"] for c in body["expansion"]["contains"]] == ["22298006"]
    assert body["expansion"]["total"] == 1


# --- f7: an implicit value set whose root does not exist ---------------------------------------

MISSING_ROOTS = [
    (f"{SCT}?fhir_vs=isa/999999001", "'999999001' is not in this SNOMED CT release"),
    (f"{SCT}?fhir_vs=refset/22298006", "'22298006' is a concept of this release, but not"),
    (f"{SCT}?fhir_vs=refset/999999001", "'999999001' is not a concept of this release"),
]


@pytest.mark.parametrize(("url", "why"), MISSING_ROOTS)
def test_f7_implicit_value_set_without_its_root(wb: Workbench, url: str, why: str) -> None:
    with pytest.raises(ImplicitValueSetNotFoundError, match=why) as raised:
        wb.validate_code(url, code="22298006", system=SCT)
    assert (raised.value.code, raised.value.tx) == ("not-found", "not-found")
    with pytest.raises(ImplicitValueSetNotFoundError, match="could not be found"):
        wb.expand(url)


@pytest.mark.parametrize(("url", "why"), MISSING_ROOTS)
@pytest.mark.parametrize("path", ["/ValueSet/$validate-code", "/ValueSet/$expand"])
def test_f7_implicit_value_set_without_its_root_http(
    http: httpx.Client, path: str, url: str, why: str
) -> None:
    coding = {} if path.endswith("$expand") else {"code": "22298006", "system": SCT}
    answer = http.get(path, params={"url": url, **coding})
    assert 400 <= answer.status_code < 500
    body = assert_outcome(answer, answer.status_code, "not-found", "could not be found")
    assert _tx_codes(body) == ["not-found"]


def test_f7_existing_roots_still_work(wb: Workbench) -> None:
    assert wb.validate_code(f"{SCT}?fhir_vs=isa/56265001", code="22298006", system=SCT).result
    assert wb.validate_code(f"{SCT}?fhir_vs=refset/723264001", code="80891009", system=SCT)


@pytest.mark.parametrize("edition", [snomed_rf2.VERSION, f"{SCT}/{snomed_rf2.CORE}"])
def test_f7_with_this_release_s_edition(wb: Workbench, edition: str) -> None:
    with pytest.raises(ImplicitValueSetNotFoundError):
        wb.expand(f"{edition}?fhir_vs=isa/999999001")
    assert wb.expand(f"{edition}?fhir_vs=isa/56265001").total == 3


# --- f8: ECL naming an unknown concept -----------------------------------------------------------

UNKNOWN_IN_ECL = [
    "<< 999999001",
    "< 404684003 : 363698007 = 999999001",
    "<< 64572001 OR 999999001",
]


@pytest.mark.parametrize("text", UNKNOWN_IN_ECL)
def test_f8_ecl_with_an_unknown_concept(wb: Workbench, text: str) -> None:
    with pytest.raises(InvalidValueSetError, match="999999001") as raised:
        wb.expand(_ecl(text))
    assert (raised.value.code, raised.value.tx) == ("invalid", "vs-invalid")
    stored = {
        "resourceType": "ValueSet",
        "compose": {
            "include": [
                {"system": SCT, "filter": [{"property": "constraint", "op": "=", "value": text}]}
            ]
        },
    }
    with pytest.raises(InvalidValueSetError):
        wb.expand(stored)


@pytest.mark.parametrize("text", UNKNOWN_IN_ECL)
def test_f8_ecl_with_an_unknown_concept_http(http: httpx.Client, text: str) -> None:
    answer = http.get("/ValueSet/$expand", params={"url": _ecl(text)})
    body = assert_outcome(answer, 400, "invalid", "999999001, which this SNOMED CT release")
    assert _tx_codes(body) == ["vs-invalid"]


# --- f9: ECL * ---------------------------------------------------------------------------------


def _wildcard_codes() -> set[str]:
    """The root, and every active concept of the fixture with an (active) is-a parent."""
    return {
        code
        for code, (_fsn, _pt, _defined, active, parents) in snomed_rf2.CONCEPTS.items()
        if active and (parents or code == "138875005")
    }


def test_f9_ecl_wildcard(wb: Workbench, release: Path, tmp_path: Path) -> None:
    sct, _ = snomed_rf2.opened(KIND.load(release, tmp_path / "cache"))
    found = {str(sct.store.ids[r]) for r in np.flatnonzero(sct.evaluate("*"))}
    assert found == _wildcard_codes()
    assert sct.row(ORPHAN) >= 0 and sct.is_active(sct.row(ORPHAN))
    assert ORPHAN not in found and "307530000" not in found  # orphan, inactive
    assert {e.code for e in wb.expand(_ecl("*")).entries} == _wildcard_codes()
    assert wb.lookup(SCT, ORPHAN).display is not None  # it exists; it is only outside ``*``


def test_f9_ecl_wildcard_http(http: httpx.Client) -> None:
    body = http.get("/ValueSet/$expand", params={"url": _ecl("*")}).json()
    assert {c["code"] for c in body["expansion"]["contains"]} == _wildcard_codes()
    assert body["expansion"]["total"] == len(_wildcard_codes())
    orphan = http.get("/CodeSystem/$lookup", params={"system": SCT, "code": ORPHAN})
    assert orphan.status_code == 200  # the concept exists; it is only outside ``*``


# --- f10: a display that is an inactive description ---------------------------------------------


def test_f10_inactive_description_display(wb: Workbench) -> None:
    found = wb.validate_in_codesystem(SCT, "4147007", display="Tumour mass")
    assert (found.result, found.display) == (True, "Mass")
    assert [(i.severity, i.type, i.code, i.expression) for i in found.issues] == [
        ("warning", "invalid", "display-comment", "display")
    ]


def test_f10_inactive_description_display_http(http: httpx.Client) -> None:
    body = http.get(
        "/CodeSystem/$validate-code",
        params={"url": SCT, "code": "4147007", "display": "Tumour mass"},
    ).json()
    assert values(body, "result") == [True]
    assert values(body, "display") == ["Mass"]
    assert _issues(body) == [("warning", "invalid", "display-comment", ["display"])]


def test_f10_inactive_description_display_has_no_message(wb: Workbench) -> None:
    assert wb.validate_in_codesystem(SCT, "4147007", display="Tumour mass").message is None


# --- f11: the name output of $lookup ------------------------------------------------------------


def test_f11_lookup_name_is_system_and_edition_version(wb: Workbench, http: httpx.Client) -> None:
    """``name`` is ``http://snomed.info/sct|<edition version URI>``, as tx.fhir.org answers,
    for a concept and for an expression; ``version`` is the edition version URI."""
    named = f"{SCT}|{snomed_rf2.VERSION}"
    for code in ("22298006", LOOKED_UP):
        found = wb.lookup(SCT, code)
        assert (found.name, found.version) == (named, snomed_rf2.VERSION)
        body = http.get("/CodeSystem/$lookup", params={"system": SCT, "code": code}).json()
        assert values(body, "name") == [named]
        assert values(body, "version") == [snomed_rf2.VERSION]
