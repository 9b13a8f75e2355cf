"""Binding checks on hand-made resources against the real FHIR R4 definitions (the R4
package's StructureDefinitions and value sets) and profiles derived from them: each rule
of ``check_bindings`` (strengths, CodeableConcepts, displays, maxValueSet, profiles,
slices, extensions, contained resources, content references) and each bad input (a wrong
JSON type, a type or profile not loaded, a baseDefinition cycle, a definition without a
snapshot, a value set not loaded, a 10 MB resource) with the row or problem naming it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest

from tests.conftest import EXAMPLES
from workbench import Workbench
from workbench.bindings.catalog import ProfileNotFoundError
from workbench.bindings.check import BindingsNotLoadedError
from workbench.errors import InvalidRequestError

pytestmark = pytest.mark.slow

BASE = "http://hl7.org/fhir/StructureDefinition/"
PROFILE = "http://example.org/fhir/StructureDefinition/"
LOINC = "http://loinc.org"
OBS_CATEGORY = "http://terminology.hl7.org/CodeSystem/observation-category"
GENDER = "http://hl7.org/fhir/administrative-gender"


def base_sd(folder: Path, name: str) -> dict[str, Any]:
    """The R4 package's StructureDefinition of ``name``."""
    return orjson.loads((folder / "package" / f"StructureDefinition-{name}.json").read_bytes())


def derived(base: dict[str, Any], name: str, edits: dict[str, dict[str, Any]],
            added: list[dict[str, Any]] = ()) -> dict[str, Any]:  # fmt: skip
    """A profile on ``base``: its snapshot with ``edits`` (by element id) and ``added``
    elements (slices) put after the element they slice."""
    sd = copy.deepcopy(base)
    sd.update(url=PROFILE + name, name=name, id=name, derivation="constraint",
              baseDefinition=base["url"])  # fmt: skip
    sd.pop("differential", None)
    elements = sd["snapshot"]["element"]
    for element in elements:
        element.update(edits.get(element["id"], {}))
    for extra in added:
        at = max(i for i, e in enumerate(elements) if extra["id"].startswith(e["id"]))
        elements.insert(at + 1, extra)
    return sd


def binding(strength: str, valueset: str) -> dict[str, Any]:
    return {"binding": {"strength": strength, "valueSet": valueset}}


@pytest.fixture(scope="module")
def wb(package_dirs: dict[str, Path]) -> Workbench:
    """The R4 package with profiles made for these tests: a category slice bound to a
    value set of its own, a status bound to a value set that is not loaded, a code bound
    extensibly to a SNOMED CT value set (SNOMED CT is not loaded), and a cycle."""
    folder = package_dirs[EXAMPLES[0]]
    wb = Workbench()
    wb.load(folder, progress=False)
    obs = base_sd(folder, "Observation")
    include = {"system": OBS_CATEGORY, "concept": [{"code": "vital-signs"}]}
    vital = {"resourceType": "ValueSet", "url": "http://example.org/vs/vital", "status": "active",
             "compose": {"include": [include]}}  # fmt: skip
    sliced = derived(obs, "sliced", {"Observation.category": {
        "slicing": {"discriminator": [{"type": "pattern", "path": "$this"}], "rules": "open"}}},
        [{"id": "Observation.category:vs", "path": "Observation.category", "sliceName": "vs",
          "min": 0, "max": "1", "type": [{"code": "CodeableConcept"}],
          "patternCodeableConcept": {"coding": [{"system": OBS_CATEGORY}]},
          **binding("required", "http://example.org/vs/vital")}])  # fmt: skip
    missing = derived(obs, "missing-vs", {"Observation.status": binding(
        "required", "http://example.org/vs/not-loaded")})  # fmt: skip
    snomed = derived(obs, "snomed", {"Observation.code": binding(
        "extensible", "http://hl7.org/fhir/ValueSet/clinical-findings")})  # fmt: skip
    cycle_a = derived(obs, "cycle-a", {})
    cycle_b = derived(obs, "cycle-b", {})
    cycle_a["baseDefinition"], cycle_b["baseDefinition"] = cycle_b["url"], cycle_a["url"]
    flat = derived(obs, "no-snapshot", {})
    flat.pop("snapshot")
    summary = wb.load([vital, sliced, missing, snomed, cycle_a, cycle_b, flat])
    assert summary.unusable and "no snapshot" in summary.unusable[0]
    return wb


def obs(**elements: Any) -> dict[str, Any]:
    resource = {"resourceType": "Observation", "id": "o1", "status": "final",
                "code": {"coding": [{"system": LOINC, "code": "8867-4"}]}}  # fmt: skip
    resource.update(elements)
    return resource


def rows(wb: Workbench, resources: list[dict[str, Any]], **options: Any) -> pd.DataFrame:
    report = wb.check_bindings(resources, **options)
    return report.frame


def issues(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    """The rows with an issue: (location, issue, severity, result)."""
    found = frame[frame["severity"].notna()]
    return [(r.location, r.issue, r.severity, None if pd.isna(r.result) else bool(r.result))
            for r in found.itertuples()]  # fmt: skip


CASES = [
    ("required code", obs(status="bogus"),
     [("Observation.status", "unknown-code", "error", False)]),
    ("wrong display", obs(interpretation=[{"coding": [
        {"system": "http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation",
         "code": "H", "display": "Highish"}]}]),
     [("Observation.interpretation[0].coding[0]", "invalid-display", "error", False)]),
    ("extensible, system drawn on", obs(interpretation=[{"coding": [
        {"system": "http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation",
         "code": "bogus"}]}]),
     [("Observation.interpretation[0].coding[0]", "unknown-code", "error", False)]),
    ("extensible, another system", obs(interpretation=[{"coding": [
        {"system": "http://example.org/local", "code": "H+"}]}]),
     [("Observation.interpretation[0].coding[0]", "unknown-system", "warning", False)]),
    ("extensible, one coding in the value set", obs(interpretation=[{"coding": [
        {"system": "http://example.org/local", "code": "H+"},
        {"system": "http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation",
         "code": "H"}]}]),
     [("Observation.interpretation[0].coding[0]", "unknown-system", "information", False)]),
    ("extensible, text only", obs(interpretation=[{"text": "high"}]), []),
    ("extensible, neither text nor coding", obs(interpretation=[{}]),
     [("Observation.interpretation[0]", "required", "error", False)]),
    ("Quantity's comparator", obs(valueQuantity={"value": 1, "comparator": "<<"}),
     [("Observation.value.ofType(Quantity).comparator", "unknown-code", "error", False)]),
    ("contained resource", obs(contained=[{"resourceType": "Patient", "id": "p",
                                           "gender": "unknown-ish"}]),
     [("Observation.contained[0].gender", "unknown-code", "error", False)]),
    ("extension by url", obs(extension=[{
        "url": "http://hl7.org/fhir/StructureDefinition/data-absent-reason",
        "valueCode": "no-idea"}]),
     [("Observation.extension[0].value.ofType(code)", "unknown-code", "error", False)]),
    ("extension on a primitive", obs(_status={"extension": [{
        "url": "http://hl7.org/fhir/StructureDefinition/data-absent-reason",
        "valueCode": "no-idea"}]}),
     [("Observation.status.extension[0].value.ofType(code)", "unknown-code", "error", False)]),
    ("data type in a backbone", obs(component=[{"code": {"text": "x"},
        "valueQuantity": {"comparator": "~"}}]),
     [("Observation.component[0].value.ofType(Quantity).comparator", "unknown-code", "error",
       False)]),
    ("wrong JSON type: a code", obs(status=5),
     [("Observation.status", "structure", "error", False)]),
    ("wrong JSON type: a CodeableConcept", obs(interpretation="high"),
     [("Observation.interpretation", "structure", "error", False)]),
    ("wrong JSON type: a coding's code", obs(interpretation=[{"coding": [
        {"system": OBS_CATEGORY, "code": 7}]}]),
     [("Observation.interpretation[0].coding[0].code", "structure", "error", False)]),
    ("declared profile: a slice", obs(meta={"profile": [PROFILE + "sliced"]}, category=[
        {"coding": [{"system": OBS_CATEGORY, "code": "laboratory"}]}]),
     [("Observation.category[0].coding[0]", "not-in-vs", "error", False)]),
    ("declared profile: a value set not loaded", obs(meta={"profile": [PROFILE + "missing-vs"]}),
     [("Observation.status", "not-found", "warning", None)]),
    ("declared profile: a code system not loaded", obs(meta={"profile": [PROFILE + "snomed"]},
        code={"coding": [{"system": "http://snomed.info/sct", "code": "22298006"}]}),
     [("Observation.code.coding[0]", "not-found", "warning", None)]),
]  # fmt: skip


@pytest.mark.parametrize(("resource", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_each_rule_finds_its_issue_exactly_there(
    wb: Workbench, resource: dict[str, Any], expected: list[tuple[Any, ...]]
) -> None:
    assert issues(rows(wb, [resource])) == expected


def test_a_clean_observation_has_its_rows_valid(wb: Workbench) -> None:
    interpretation = "http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation"
    frame = rows(wb, [obs(interpretation=[{"coding": [{"system": interpretation, "code": "H",
                                                       "display": "High"}]}])])  # fmt: skip
    assert frame["result"].all() and frame["severity"].isna().all()
    assert set(frame["location"]) == {"Observation.status",
                                      "Observation.interpretation[0].coding[0]"}  # fmt: skip
    assert list(frame.columns) == [
        "resource_type", "id", "location", "element", "profile", "strength", "valueset",
        "system", "code", "display", "result", "issue", "severity", "message",
    ]  # fmt: skip


def test_a_slice_applies_only_to_the_items_its_discriminator_matches(wb: Workbench) -> None:
    other = {"coding": [{"system": "http://example.org/other", "code": "x"}]}
    vital = {"coding": [{"system": OBS_CATEGORY, "code": "vital-signs"}]}
    frame = rows(wb, [obs(meta={"profile": [PROFILE + "sliced"]}, category=[other, vital])])
    sliced = frame[frame["valueset"] == "http://example.org/vs/vital"]
    assert list(sliced["location"]) == ["Observation.category[1].coding[0]"]
    assert sliced["result"].all()


@pytest.mark.parametrize(
    ("profiles", "checked"),
    [("declared", True), (None, False), ([PROFILE + "missing-vs"], True)],
)
def test_profiles_declared_given_or_none(wb: Workbench, profiles: Any, checked: bool) -> None:
    resource = obs(meta={"profile": [PROFILE + "missing-vs"]}) if profiles == "declared" else obs()
    frame = rows(wb, [resource], profiles=profiles)
    found = set(frame["valueset"].astype(str))
    assert ("http://example.org/vs/not-loaded" in found) is checked


@pytest.mark.parametrize(
    ("url", "why"),
    [
        (PROFILE + "not-there", "is not loaded"),
        (PROFILE + "cycle-a", "baseDefinition cycle"),
        (PROFILE + "no-snapshot", "no snapshot"),
    ],
)
def test_a_profile_that_cannot_be_used_is_a_problem_and_the_base_applies(
    wb: Workbench, url: str, why: str
) -> None:
    report = wb.check_bindings([obs(meta={"profile": [url]}, status="bogus")])
    problem = next(p for p in report.problems if p.name == url)
    assert problem.kind == "profile-not-loaded" and why in problem.message
    assert problem.resources == 1
    assert issues(report.frame) == [("Observation.status", "unknown-code", "error", False)]


def test_max_valueset_bounds_a_preferred_binding(wb: Workbench) -> None:
    frame = rows(wb, [obs(language="en-US"), {**obs(language="qq-bogus-tag"), "id": "o2"}],
                 strength=["preferred"])  # fmt: skip
    language = frame[frame["location"] == "Observation.language"].set_index("id")
    assert language.loc["o1", "severity"] is None or pd.isna(language.loc["o1", "severity"])
    assert language.loc["o2", "severity"] == "error"
    assert "maxValueSet" in language.loc["o2", "message"]


def test_a_content_reference_is_followed(wb: Workbench) -> None:
    questionnaire = {"resourceType": "Questionnaire", "id": "q", "status": "draft",
                     "item": [{"linkId": "1", "type": "group",
                               "item": [{"linkId": "1.1", "type": "bogus"}]}]}  # fmt: skip
    assert issues(rows(wb, [questionnaire])) == [
        ("Questionnaire.item[0].item[0].type", "unknown-code", "error", False)
    ]


def test_a_type_without_definition_is_counted_and_skipped(package_dirs: dict[str, Path]) -> None:
    folder = package_dirs[EXAMPLES[0]]
    wb = Workbench()
    wb.load([base_sd(folder, n) for n in ("Patient", "CodeableConcept", "Coding")])
    report = wb.check_bindings([{"resourceType": "Patient", "id": "p", "gender": "x"},
                                obs(), {**obs(), "id": "o2"}])  # fmt: skip
    assert [(p.kind, p.name, p.resources) for p in report.problems] == [
        ("unknown-type", "Observation", 2)
    ]
    # (and no value set is loaded: the row is not checked, and says so)
    assert issues(report.frame) == [("Patient.gender", "not-found", "warning", None)]


def test_a_ten_megabyte_resource_is_checked(wb: Workbench, tmp_path: Path) -> None:
    big = obs(status="bogus", text={"status": "generated",
                                    "div": "<div>" + "x" * 10_000_000 + "</div>"})  # fmt: skip
    path = tmp_path / "Observation.ndjson"
    path.write_bytes(orjson.dumps(big) + b"\n" + orjson.dumps({**obs(), "id": "o2"}) + b"\n")
    report = wb.check_bindings(path)
    assert report.resources == 2 and not [p for p in report.problems if p.kind == "read"]
    assert issues(report.frame) == [("Observation.status", "unknown-code", "error", False)]


def test_bad_arguments_raise_precise_errors(wb: Workbench) -> None:
    with pytest.raises(InvalidRequestError, match="strength"):
        wb.check_bindings([obs()], strength="mandatory")
    with pytest.raises(InvalidRequestError, match="profiles"):
        wb.check_bindings([obs()], profiles=[1])
    with pytest.raises(ProfileNotFoundError, match="not-there"):
        wb.bindings([PROFILE + "not-there"])
    with pytest.raises(BindingsNotLoadedError, match=r"hl7\.fhir\.r4\.core"):
        Workbench().check_bindings([obs()])


def test_the_bindings_frame_says_where_each_binding_came_from(wb: Workbench) -> None:
    frame = wb.bindings([PROFILE + "sliced", BASE + "Quantity",
                         "http://hl7.org/fhir/StructureDefinition/data-absent-reason"])  # fmt: skip
    by = frame.set_index(["profile", "element"])
    status = by.loc[(PROFILE + "sliced", "Observation.status")]
    assert (status["strength"], status["source"]) == ("required", BASE + "Observation")
    assert status["valueset"] == "http://hl7.org/fhir/ValueSet/observation-status|4.0.1"
    sliced = by.loc[(PROFILE + "sliced", "Observation.category:vs")]
    assert sliced["discriminator"] == "pattern:$this"
    assert (sliced["slice"], sliced["source"], sliced["kind"]) == ("vs", PROFILE + "sliced",
                                                                   "profile")  # fmt: skip
    assert by.loc[(BASE + "Quantity", "Quantity.comparator")]["kind"] == "datatype"
    ext = by.loc[("http://hl7.org/fhir/StructureDefinition/data-absent-reason",
                  "Extension.value[x]")]  # fmt: skip
    assert (ext["kind"], ext["strength"]) == ("extension", "required")
    language = by.loc[(BASE + "Quantity", "Quantity.comparator")]
    assert pd.isna(language["max_valueset"])
    assert wb.bindings().query("element == 'Resource.language'")["max_valueset"].tolist() == [
        "http://hl7.org/fhir/ValueSet/all-languages"
    ]


def test_the_report_views(wb: Workbench, tmp_path: Path) -> None:
    report = wb.check_bindings([obs(status="bogus"), {**obs(), "id": "o2"}])
    summary = report.summary()["count"]
    assert (summary["resources"], summary["errors"], summary["valid"]) == (2, 1, 1)
    element = report.by_element().iloc[0]
    assert (element["element"], element["errors"], element["values"]) == (
        "Observation.status", 1, 2)  # fmt: skip
    code = report.by_code().iloc[0]
    assert (code["code"], code["errors"], code["resources"]) == ("bogus", 1, 1)
    outcome = report.outcomes()["Observation/o1"]
    assert outcome["issue"] == [{
        "severity": "error", "code": "code-invalid",
        "details": {"coding": [{"system": "http://hl7.org/fhir/tools/CodeSystem/tx-issue-type",
                                "code": "invalid-code"}],
                    "text": report.errors["message"].iloc[0]},
        "expression": ["Observation.status"]}]  # fmt: skip
    assert list(report.outcomes()) == ["Observation/o1"]
    page = report.to_html(tmp_path / "r.html").read_text()
    assert "Observation.status" in page and "bogus" in page
    book = pd.read_excel(report.to_excel(tmp_path / "r.xlsx"), sheet_name=None)
    assert set(book) == {"Summary", "By element", "By code", "Problems", "Rows"}
    assert len(book["Rows"]) == len(report.frame)
    assert "1 errors" in repr(report) or "1 error" in repr(report)


def test_the_explorer_goes_from_elements_to_codes_to_resources(wb: Workbench) -> None:
    from workbench.notebook import BindingExplorer

    report = wb.check_bindings([obs(status="bogus"), {**obs(status="bogus"), "id": "o2"},
                                {**obs(status="other"), "id": "o3"}])  # fmt: skip
    explorer = BindingExplorer(report)
    assert explorer.elements.label.startswith("Observation.status")
    assert [label.split(":")[0] for label, _ in explorer.codes.options] == [
        "(no system)#bogus", "(no system)#other"]  # fmt: skip
    assert [label for label, _ in explorer.resources.options] == ["Observation/o1",
                                                                  "Observation/o2"]  # fmt: skip
    explorer.codes.value = 1
    assert [label for label, _ in explorer.resources.options] == ["Observation/o3"]
    assert "Observation/o3" in explorer.detail.value and "other" in explorer.detail.value


def test_location_texts_are_remembered_within_their_bound() -> None:
    """Each chain's FHIRPath text is made once and kept, never more than the bound."""
    from workbench.bindings import walk

    walk._TEXTS.clear()
    coding = (("Observation", "code", -1), "coding", 1)
    assert walk.location(coding) == "Observation.code.coding[1]"
    assert walk.location(coding) is walk.location((("Observation", "code", -1), "coding", 1))
    texts = [walk.location(("Observation", "component", i)) for i in range(walk._MAX_TEXTS + 9)]
    assert texts[7] == "Observation.component[7]" and len(set(texts)) == walk._MAX_TEXTS + 9
    assert 0 < len(walk._TEXTS) <= walk._MAX_TEXTS
