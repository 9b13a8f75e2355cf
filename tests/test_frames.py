"""Terminology resources as pandas frames, and CodeSystems built from frames."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from workbench import CodeSystem, Workbench, codesystem_from_frame

DEMO = "http://example.org/fhir/CodeSystem/workbench-demo"
BOOKABLE = "http://example.org/fhir/ValueSet/workbench-demo-bookable"
URL = "http://example.org/fhir/CodeSystem/from-frame"


def row(frame: pd.DataFrame, column: str, value: str) -> dict[str, Any]:
    found = frame[frame[column] == value].to_dict("records")
    assert len(found) == 1
    return found[0]


def test_valuesets_frame(default_wb: Workbench) -> None:
    frame = default_wb.valuesets
    assert list(frame.columns) == [
        "url",
        "name",
        "title",
        "version",
        "id",
        "systems",
        "publisher",
        "status",
    ]
    assert len(frame) == len(default_wb.registry.all("ValueSet"))
    assert row(frame, "url", BOOKABLE) == {
        "url": BOOKABLE,
        "version": "1.0.0",
        "name": "WorkbenchDemoBookable",
        "title": "Workbench demo: bookable visit types",
        "status": "active",
        "id": "workbench-demo-bookable",
        "systems": [DEMO],
        "publisher": "Workbench demo",
    }
    marital = row(frame, "id", "marital-status")["systems"]
    assert marital == [
        "http://terminology.hl7.org/CodeSystem/v3-MaritalStatus",
        "http://terminology.hl7.org/CodeSystem/v3-NullFlavor",
    ]


def test_codesystems_frame(default_wb: Workbench) -> None:
    frame = default_wb.codesystems
    assert list(frame.columns) == [
        "url",
        "name",
        "title",
        "version",
        "status",
        "id",
        "content",
        "count",
        "concepts",
    ]
    assert frame["concepts"].dtype == "int64"
    assert row(frame, "url", DEMO) == {
        "url": DEMO,
        "version": "1.0.0",
        "name": "WorkbenchDemo",
        "title": "Workbench demo: clinic visit types",
        "status": "active",
        "content": "complete",
        "count": 15,
        "concepts": 15,
        "id": "workbench-demo",
    }


CONCEPT_COLUMNS = [
    "code",
    "display",
    "definition",
    "parents",
    "abstract",
    "inactive",
    "status",
    "duration-minutes",
]


def test_concepts_frame_columns(default_wb: Workbench) -> None:
    frame = default_wb.concepts(DEMO)
    assert list(frame.columns) == CONCEPT_COLUMNS
    assert len(frame) == 15
    assert frame["code"].tolist()[:3] == ["in-person", "office", "office-new"]
    assert frame.dtypes[["abstract", "inactive"]].tolist() == [bool, bool]
    assert frame.loc[frame["abstract"], "code"].tolist() == ["in-person", "remote"]
    assert frame.loc[frame["inactive"], "code"].tolist() == ["group", "fax-consult"]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        pytest.param(
            "office-new",
            ("New patient office visit", ["office"], False, False, None),
            id="nested",
        ),
        pytest.param(
            "home-hospital",
            ("Hospital-at-home visit", ["home"], False, False, None),
            id="parent-property",
        ),
        pytest.param("remote", ("Remote visit", [], True, False, None), id="abstract-root"),
        pytest.param(
            "fax-consult", ("Fax consultation", ["remote"], False, True, "retired"), id="retired"
        ),
    ],
)
def test_concepts_frame_rows(default_wb: Workbench, code: str, expected: tuple[Any, ...]) -> None:
    found = row(default_wb.concepts(DEMO), "code", code)
    status = found["status"] if isinstance(found["status"], str) else None
    assert (found["display"], found["parents"], found["abstract"], found["inactive"], status) == (
        expected
    )
    assert found["definition"].startswith(("A ", "An ", "Grouping "))


@pytest.mark.parametrize(
    ("code", "minutes"),
    [
        pytest.param("office-new", 30, id="nested"),
        pytest.param("home-hospital", 60, id="parent-property"),
        pytest.param(
            "phone-triage",
            5,
            id="deep",
        ),
    ],
)
def test_concepts_frame_integer_property(default_wb: Workbench, code: str, minutes: int) -> None:
    value = row(default_wb.concepts(DEMO), "code", code)["duration-minutes"]
    assert (type(value), value) == (int, minutes)


@pytest.mark.parametrize(
    ("code", "minutes"),
    [
        pytest.param("office-new", "30", id="nested"),
        pytest.param("home-hospital", "60", id="parent-property"),
    ],
)
def test_concepts_frame_property_values(default_wb: Workbench, code: str, minutes: str) -> None:
    value = row(default_wb.concepts(DEMO), "code", code)["duration-minutes"]
    assert str(value) == minutes
    missing = row(default_wb.concepts(DEMO), "code", "remote")["duration-minutes"]
    assert pd.isna(missing)


def test_designations_frame(default_wb: Workbench) -> None:
    frame = default_wb.designations(DEMO)
    assert list(frame.columns) == ["code", "language", "use_system", "use_code", "value"]
    assert len(frame) == 30
    assert frame[frame["code"] == "video"].values.tolist() == [
        [
            "video",
            "de",
            "http://terminology.hl7.org/CodeSystem/designation-usage",
            "display",
            "Videosprechstunde",
        ],
        [
            "video",
            "fr",
            "http://terminology.hl7.org/CodeSystem/designation-usage",
            "display",
            "Téléconsultation vidéo",
        ],
    ]
    assert sorted(frame["language"].unique()) == ["de", "fr"]


def table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "code": ["root", "a", "b", "ab", "old"],
            "label": ["Root", "A", "B", "AB", None],
            "up": [None, "root", "root", ["a", "b"], "root"],
            "grouping": [True, False, False, False, False],
            "retired": [False, False, False, False, True],
            "minutes": [None, 10, 20, 30, None],
            "colour": ["red", None, "blue", "green", ""],
        }
    )


def build(**kwargs: Any) -> dict[str, Any]:
    return codesystem_from_frame(
        table(),
        url=URL,
        display="label",
        parent="up",
        abstract="grouping",
        inactive="retired",
        properties={"minutes": "integer", "colour": "code"},
        version="1.0.0",
        name="FromFrame",
        **kwargs,
    )


def test_codesystem_from_frame_resource() -> None:
    cs = build(id="ff")
    assert {k: v for k, v in cs.items() if k not in ("concept", "property")} == {
        "resourceType": "CodeSystem",
        "id": "ff",
        "url": URL,
        "version": "1.0.0",
        "name": "FromFrame",
        "status": "active",
        "content": "complete",
        "count": 5,
        "hierarchyMeaning": "is-a",
    }
    assert [p["code"] for p in cs["property"]] == [
        "parent",
        "notSelectable",
        "inactive",
        "minutes",
        "colour",
    ]
    assert cs["concept"][3] == {
        "code": "ab",
        "display": "AB",
        "property": [
            {"code": "parent", "valueCode": "a"},
            {"code": "parent", "valueCode": "b"},
            {"code": "minutes", "valueInteger": 30},
            {"code": "colour", "valueCode": "green"},
        ],
    }
    assert cs["concept"][4] == {
        "code": "old",
        "property": [
            {"code": "parent", "valueCode": "root"},
            {"code": "inactive", "valueBoolean": True},
        ],
    }
    assert CodeSystem.from_frame is codesystem_from_frame


@pytest.mark.parametrize(
    ("filter_", "expected"),
    [
        pytest.param(("concept", "is-a", "a"), ["a", "ab"], id="is-a-list-parent"),
        pytest.param(("concept", "is-a", "b"), ["b", "ab"], id="is-a-other-parent"),
        pytest.param(("concept", "descendent-of", "root"), ["a", "b", "ab", "old"], id="desc"),
        pytest.param(("minutes", "=", "20"), ["b"], id="integer-property"),
        pytest.param(("colour", "exists", "false"), ["a", "old"], id="empty-values-dropped"),
        pytest.param(("notSelectable", "=", "true"), ["root"], id="abstract"),
        pytest.param(("inactive", "=", "true"), ["old"], id="inactive"),
    ],
)
def test_codesystem_from_frame_loads_and_expands(
    filter_: tuple[str, str, str], expected: list[str]
) -> None:
    wb = Workbench()
    wb.load(build())
    prop, op, value = filter_
    vs = {
        "resourceType": "ValueSet",
        "compose": {
            "include": [{"system": URL, "filter": [{"property": prop, "op": op, "value": value}]}]
        },
    }
    assert wb.expand(vs).frame["code"].tolist() == expected


def test_codesystem_from_frame_concepts_frame() -> None:
    wb = Workbench()
    wb.load(build())
    frame = wb.concepts(URL)
    assert list(frame.columns) == [
        "code",
        "display",
        "definition",
        "parents",
        "abstract",
        "inactive",
        "status",
        "minutes",
        "colour",
    ]
    assert frame["code"].tolist() == ["root", "a", "b", "ab", "old"]
    assert frame["parents"].tolist() == [[], ["root"], ["root"], ["a", "b"], ["root"]]
    assert frame["abstract"].tolist() == [True, False, False, False, False]
    assert frame["inactive"].tolist() == [False, False, False, False, True]
    assert [v if isinstance(v, str) else None for v in frame["colour"]] == [
        "red",
        None,
        "blue",
        "green",
        None,
    ]
    assert wb.subsumes(URL, "root", "ab") == "subsumes"


def test_codesystem_from_frame_integer_round_trip() -> None:
    wb = Workbench()
    wb.load(build())
    values = wb.concepts(URL)["minutes"].tolist()
    assert values[1:4] == [10, 20, 30]


@pytest.mark.parametrize(
    ("kwargs", "missing"),
    [
        pytest.param({"parent": "parents"}, ["parents"], id="parent"),
        pytest.param({"code": "id"}, ["id"], id="code"),
        pytest.param({"display": "name", "properties": ["weight"]}, ["name", "weight"], id="two"),
        pytest.param({"properties": {"size": "integer"}}, ["size"], id="property-mapping"),
        pytest.param({"inactive": "deleted"}, ["deleted"], id="inactive"),
    ],
)
def test_codesystem_from_frame_missing_column(kwargs: dict[str, Any], missing: list[str]) -> None:
    frame = pd.DataFrame({"code": ["a"], "display": ["A"]})
    with pytest.raises(KeyError) as info:
        codesystem_from_frame(frame, url=URL, **kwargs)
    assert info.value.args[0] == (
        f"Columns {missing} are not in the frame; it has ['code', 'display']"
    )


# --- mappings: displays from the loaded code systems ----------------------------------------

_CS = "http://ex/cs"
_OTHER = "http://ex/not-loaded"


@pytest.mark.parametrize(
    ("target_system", "map_display", "expected"),
    [
        pytest.param(_CS, None, "Alpha", id="filled-from-the-code-system"),
        pytest.param(_CS, "the map's own", "Alpha", id="the-code-system-first-as-translate"),
        pytest.param(_OTHER, "the map's own", "the map's own", id="system-not-loaded"),
        pytest.param(_OTHER, None, None, id="nothing-to-show"),
    ],
)
def test_mappings_take_displays_from_loaded_code_systems(
    target_system: str, map_display: str | None, expected: str | None
) -> None:
    wb = Workbench()
    wb.load(
        [
            {
                "resourceType": "CodeSystem",
                "url": _CS,
                "content": "complete",
                "concept": [{"code": "a", "display": "Alpha"}, {"code": "s", "display": "Source"}],
            },
            {
                "resourceType": "ConceptMap",
                "url": "http://ex/cm",
                "group": [
                    {
                        "source": _CS,
                        "target": target_system,
                        "element": [
                            {
                                "code": "s",
                                "target": [
                                    {
                                        "code": "a",
                                        "equivalence": "equal",
                                        **({"display": map_display} if map_display else {}),
                                    }
                                ],
                            }
                        ],
                    }
                ],
            },
        ],
        progress=False,
    )
    row = wb.mappings("http://ex/cm").iloc[0]
    assert row["target_display"] == expected
    assert row["source_display"] == "Source"
    translated = wb.translate("s", system=_CS, url="http://ex/cm").match_list[0]
    assert translated.display == expected
