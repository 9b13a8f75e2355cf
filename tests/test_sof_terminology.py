"""Pathling's terminology functions in views (memberOf, display, translate, subsumes,
subsumedBy, property, designation), answered by the workbench through its own calls, on the
real example Conditions of R4 and on small code systems written here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest

from workbench import Workbench
from workbench.views import ViewDefinitionError

CLINICAL = "http://hl7.org/fhir/ValueSet/condition-clinical"
GENDER_MAP = "http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v2"
HIERARCHY = "http://example.org/cs/shapes"


@pytest.fixture(scope="module")
def conditions(package_dirs: dict[str, Path]) -> list[dict[str, Any]]:
    folder = package_dirs["hl7.fhir.r4.examples"]
    package = folder / "package" if (folder / "package").is_dir() else folder
    found = [orjson.loads(p.read_bytes()) for p in sorted(package.glob("Condition-*.json"))]
    assert len(found) >= 12
    return found


def conditions_view(*columns: tuple[str, str], collection: bool = False) -> dict[str, Any]:
    return {
        "resource": "Condition",
        "select": [{"column": [{"name": "id", "path": "id"}] + [
            {"name": n, "path": p, "collection": collection} for n, p in columns
        ]}],
    }  # fmt: skip


def test_member_of_a_codeable_concept_is_validate_column_row_for_row(
    r4_wb: Workbench, conditions: list[dict[str, Any]]
) -> None:
    rows = r4_wb.view(
        conditions_view(("member", f"clinicalStatus.memberOf('{CLINICAL}')")), conditions
    )
    column = pd.Series([c.get("clinicalStatus") for c in conditions])
    expected = r4_wb.validate_column(column, CLINICAL)["result"]
    assert rows["id"].tolist() == [c["id"] for c in conditions]
    assert rows["member"].tolist() == [bool(r) for r in expected]
    assert rows["member"].all()


def test_member_of_codings_gives_one_answer_per_coding(
    r4_wb: Workbench, conditions: list[dict[str, Any]]
) -> None:
    other = {"resourceType": "Condition", "id": "x", "subject": {"reference": "Patient/p"},
             "clinicalStatus": {"coding": [
                 {"system": "http://terminology.hl7.org/CodeSystem/condition-clinical",
                  "code": "nonsense"},
                 {"system": "http://terminology.hl7.org/CodeSystem/condition-clinical",
                  "code": "active"}]}}  # fmt: skip
    rows = r4_wb.view(
        conditions_view(
            ("each", f"clinicalStatus.coding.memberOf('{CLINICAL}')"),
            ("concept", f"clinicalStatus.memberOf('{CLINICAL}')"),
            collection=True,
        ),
        [other, conditions[0]],
    )
    assert rows["each"].tolist() == [[False, True], [True]]
    assert rows["concept"].tolist() == [[True], [True]]


def test_each_distinct_coding_is_answered_once(
    r4_wb: Workbench, conditions: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[int] = []
    original = Workbench.validate_column

    def counting(self: Workbench, data: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(len(data))
        return original(self, data, *args, **kwargs)

    monkeypatch.setattr(Workbench, "validate_column", counting)
    r4_wb.view(conditions_view(("m", f"clinicalStatus.coding.first().memberOf('{CLINICAL}')")),
               conditions * 50)  # fmt: skip
    distinct = {c["clinicalStatus"]["coding"][0]["code"] for c in conditions}
    assert sum(asked) == len(distinct)  # each distinct coding once, whatever the batches


def test_display_and_translate_through_the_loaded_content(r4_wb: Workbench) -> None:
    observations = [
        {"resourceType": "Observation", "id": f"o{i}", "status": "final",
         "code": {"coding": [{"system": "http://hl7.org/fhir/administrative-gender",
                              "code": code}]}}
        for i, code in enumerate(["male", "other", "nonsense"])
    ]  # fmt: skip
    definition = {
        "resource": "Observation",
        "select": [{"column": [
            {"name": "id", "path": "id"},
            {"name": "display", "path": "code.coding.display().first()"},
            {"name": "v2", "path": f"code.coding.translate('{GENDER_MAP}').code.first()"},
            {"name": "v2_wider", "path":
                f"code.translate('{GENDER_MAP}', false, 'wider').code.first()"},
        ]}],
    }  # fmt: skip
    rows = r4_wb.view(definition, observations, engine="polars")
    assert rows["display"].to_list() == ["Male", "Other", None]
    assert rows["v2"].to_list() == ["M", None, None]  # other -> A is wider, not equivalent
    assert rows["v2_wider"].to_list() == [None, "A", None]


@pytest.fixture(scope="module")
def shapes() -> Workbench:
    wb = Workbench()
    wb.load({
        "resourceType": "CodeSystem", "url": HIERARCHY, "status": "active",
        "content": "complete", "hierarchyMeaning": "is-a",
        "property": [{"code": "sides", "type": "integer"}],
        "concept": [{"code": "shape", "display": "Shape", "concept": [
            {"code": "polygon", "display": "Polygon", "concept": [
                {"code": "square", "display": "Square",
                 "designation": [{"language": "fr", "value": "Carré"}],
                 "property": [{"code": "sides", "valueInteger": 4}]}]},
            {"code": "circle", "display": "Circle"}]}],
    })  # fmt: skip
    return wb


def test_subsumes_subsumed_by_property_and_designation(shapes: Workbench) -> None:
    resources = [
        {"resourceType": "Observation", "id": c, "status": "final",
         "code": {"coding": [{"system": HIERARCHY, "code": c}]}}
        for c in ("square", "circle", "polygon")
    ]  # fmt: skip
    definition = {
        "resource": "Observation",
        "select": [{"column": [
            {"name": "id", "path": "id"},
            {"name": "is_polygon", "path": f"code.subsumedBy({HIERARCHY}|polygon)"},
            {"name": "above_square", "path": f"code.subsumes({HIERARCHY}|square)"},
            {"name": "sides", "path": "code.coding.property('sides').first()"},
            {"name": "french", "path": "code.coding.designation().first()"},
        ]}],
    }  # fmt: skip
    rows = shapes.view(definition, resources, engine="polars")
    assert rows.to_dicts() == [
        {"id": "square", "is_polygon": True, "above_square": True, "sides": "4",
         "french": "Carré"},
        {"id": "circle", "is_polygon": False, "above_square": False, "sides": None,
         "french": None},
        {"id": "polygon", "is_polygon": True, "above_square": True, "sides": None,
         "french": None},
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("code.memberOf('http://example.org/vs/none')", "value set is not loaded"),
        ("code.translate('http://example.org/cm/none')", "ConceptMap is not loaded"),
        ("status.memberOf('http://example.org/vs/none')", "applies to Codings"),
        ("code.subsumes('square')", "Coding literal"),
    ],
)
def test_terminology_mistakes_name_the_column(shapes: Workbench, path: str, message: str) -> None:
    definition = {"resource": "Observation",
                  "select": [{"column": [{"name": "c", "path": path}]}]}  # fmt: skip
    with pytest.raises(ViewDefinitionError) as raised:
        shapes.view(definition, [])
    assert message in str(raised.value) and "column 'c'" in str(raised.value)


def test_without_a_workbench_the_functions_say_what_they_need() -> None:
    from workbench.views import view

    definition = {
        "resource": "Observation",
        "select": [{"column": [{"name": "c", "path": "code.coding.display()"}]}],
    }
    with pytest.raises(ViewDefinitionError, match=r"wb\.view"):
        view(definition, [])
