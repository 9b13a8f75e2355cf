"""The ConceptMap checks and the R4 ``$translate`` engine, as tables of cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES
from workbench.errors import InvalidResourceError, RequiredError
from workbench.terminology.conceptmap import (
    ConceptMapNotFoundError,
    check_conceptmap,
    register_implicit_maps,
    translate,
)

A, B, C = "http://ex/a", "http://ex/b", "http://ex/c"


def cm(url: str, groups: list[dict[str, Any]], version: str | None = None) -> dict[str, Any]:
    res: dict[str, Any] = {"resourceType": "ConceptMap", "url": url, "group": groups}
    if version:
        res["version"] = version
    return res


def el(code: str, *targets: dict[str, Any]) -> dict[str, Any]:
    return {"code": code, "target": list(targets)}


def tg(code: str | None, eq: str = "equivalent", **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"equivalence": eq, **more}
    if code is not None:
        out["code"] = code
    return out


MAIN = cm(
    "http://ex/cm/main",
    [
        {
            "source": A,
            "target": B,
            "element": [
                el("1", tg("x")),
                el("2", tg("y", "wider"), tg("z", "narrower", comment="c")),
                el("3", tg(None, "unmatched")),
                el("4", tg("w", "disjoint", comment="no")),
                el(
                    "5",
                    tg(
                        "d1",
                        dependsOn=[{"property": "http://ex/p", "value": "on"}],
                        product=[{"property": "http://ex/q", "system": C, "value": "pv"}],
                    ),
                    tg("d2", dependsOn=[{"property": "http://ex/p", "value": "off"}]),
                ),
            ],
            "unmapped": {"mode": "provided"},
        },
    ],
)
FIXED = cm(
    "http://ex/cm/fixed",
    [
        {
            "source": A,
            "target": B,
            "element": [el("1", tg("x"))],
            "unmapped": {"mode": "fixed", "code": "UNK"},
        }
    ],
)
OTHER = cm(
    "http://ex/cm/other",
    [
        {
            "source": A,
            "target": B,
            "element": [el("1", tg("x"))],
            "unmapped": {"mode": "other-map", "url": "http://ex/cm/v"},
        }
    ],
)
V1 = cm("http://ex/cm/v", [{"source": A, "target": B, "element": [el("9", tg("old"))]}], "1.0.0")
V2 = cm("http://ex/cm/v", [{"source": A, "target": B, "element": [el("9", tg("new"))]}], "2.0.0")
LOOP1 = cm(
    "http://ex/cm/l1",
    [
        {
            "source": A,
            "target": B,
            "element": [el("1", tg("x"))],
            "unmapped": {"mode": "other-map", "url": "http://ex/cm/l2"},
        }
    ],
)
LOOP2 = cm(
    "http://ex/cm/l2",
    [
        {
            "source": A,
            "target": B,
            "element": [el("2", tg("y"))],
            "unmapped": {"mode": "other-map", "url": "http://ex/cm/l1"},
        }
    ],
)
ALL = [MAIN, FIXED, OTHER, V1, V2, LOOP1, LOOP2]
DEP = "http://ex/p"


@pytest.mark.parametrize(
    ("kwargs", "result", "matches"),
    [
        ({"code": "1", "url": MAIN["url"]}, True, [("equivalent", "x")]),
        ({"code": "2", "url": MAIN["url"]}, True, [("wider", "y"), ("narrower", "z")]),
        ({"code": "3", "url": MAIN["url"]}, False, [("unmatched", None)]),
        ({"code": "4", "url": MAIN["url"]}, False, [("disjoint", "w")]),
        # dependsOn: left out when the supplied dependency contradicts it
        ({"code": "5", "url": MAIN["url"]}, True, [("equivalent", "d1"), ("equivalent", "d2")]),
        (
            {"code": "5", "url": MAIN["url"], "dependencies": [(DEP, [{"code": "on"}])]},
            True,
            [("equivalent", "d1")],
        ),
        ({"code": "5", "url": MAIN["url"], "dependencies": [(DEP, [{"code": "none"}])]}, False, []),
        # unmapped modes
        ({"code": "zz", "url": MAIN["url"]}, True, [("equal", "zz")]),
        ({"code": "zz", "url": FIXED["url"]}, True, [("inexact", "UNK")]),
        ({"code": "9", "url": OTHER["url"]}, True, [("equivalent", "new")]),
        ({"code": "zz", "url": OTHER["url"]}, False, []),
        # latest version unless pinned
        ({"code": "9", "url": "http://ex/cm/v"}, True, [("equivalent", "new")]),
        ({"code": "9", "url": "http://ex/cm/v|1.0.0"}, True, [("equivalent", "old")]),
        (
            {"code": "9", "url": "http://ex/cm/v", "conceptmap_version": "1.0.0"},
            True,
            [("equivalent", "old")],
        ),
        # reverse: target to source, no unmapped
        ({"code": "x", "url": MAIN["url"], "reverse": True}, True, [("equivalent", "1")]),
        ({"code": "zz", "url": MAIN["url"], "reverse": True}, False, []),
        # system / target_system narrow the groups
        ({"code": "1", "url": MAIN["url"], "system": C}, False, []),
        ({"code": "1", "url": MAIN["url"], "system": A, "target_system": C}, False, []),
    ],
)
def test_translate_table(
    kwargs: dict[str, Any], result: bool, matches: list[tuple[str, Any]]
) -> None:
    t = translate(ALL, **kwargs)
    assert t.result is result
    assert [(m.equivalence, m.code) for m in t.match_list] == matches
    assert (t.message is None) is result or not matches


def test_without_url_every_fitting_map_is_used_and_named() -> None:
    t = translate([MAIN, FIXED], code="1", system=A)
    assert [m.source for m in t.match_list] == ["http://ex/cm/main", "http://ex/cm/fixed"]
    assert translate([MAIN, FIXED], code="1", system=A, target=B).result


def test_other_map_cycle_is_bounded_with_a_message() -> None:
    t = translate(ALL, code="zz", url=LOOP1["url"])
    assert t.result is False
    assert t.message is not None and "other-map cycle" in t.message
    assert "http://ex/cm/l1 -> http://ex/cm/l2 -> http://ex/cm/l1" in t.message


def test_product_and_display_and_parameters() -> None:
    t = translate([MAIN], code="5", url=MAIN["url"], display_of=lambda s, c: f"{s}#{c}")
    frame = t.matches
    assert list(frame.columns) == ["code", "display", "system", "source", "equivalence"]
    assert frame.loc[0, "display"] == f"{B}#d1"
    params = t.to_parameters()
    assert params["parameter"][0] == {"name": "result", "valueBoolean": True}
    first = params["parameter"][1]["part"]
    assert {"name": "equivalence", "valueCode": "equivalent"} in first
    product = next(p for p in first if p["name"] == "product")
    assert product["part"][1]["valueCoding"] == {"system": C, "code": "pv"}
    assert first[-2:] == [
        {"name": "source", "valueUri": "http://ex/cm/main"},
        {"name": "originMap", "valueCanonical": "http://ex/cm/main"},  # R5's name
    ]


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"code": "1", "url": "http://ex/none"}, ConceptMapNotFoundError, "http://ex/none"),
        ({"code": "1", "url": "http://ex/cm/v|3"}, ConceptMapNotFoundError, "http://ex/cm/v|3"),
        ({"code": None, "url": MAIN["url"]}, RequiredError, "code"),
    ],
)
def test_bad_requests(kwargs: dict[str, Any], error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text.replace("|", r"\|")) as info:
        translate(ALL, **kwargs)
    assert info.value.code in ("not-found", "required")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("group", "path"),
    [
        ({"element": []}, "ConceptMap.group[0].element"),
        (
            {"element": [{"code": "a", "target": [{"code": "b"}]}]},
            "ConceptMap.group[0].element[0].target[0].equivalence",
        ),
        (
            {"element": [el("a", tg("b", "bogus"))]},
            "ConceptMap.group[0].element[0].target[0].equivalence",
        ),
        (
            {"element": [el("a", tg("b", "inexact"))]},
            "ConceptMap.group[0].element[0].target[0].comment",
        ),
        (
            {"element": [el("a", tg("b", dependsOn=[{"value": "v"}]))]},
            "ConceptMap.group[0].element[0].target[0].dependsOn[0]",
        ),
        (
            {"element": [el("a")], "unmapped": {"mode": "fixed"}},
            "ConceptMap.group[0].unmapped.code",
        ),
        (
            {"element": [el("a")], "unmapped": {"mode": "other-map"}},
            "ConceptMap.group[0].unmapped.url",
        ),
        (
            {"element": [el("a")], "unmapped": {"mode": "guess"}},
            "ConceptMap.group[0].unmapped.mode",
        ),
    ],
)
def test_malformed_maps_name_the_element(group: dict[str, Any], path: str) -> None:
    with pytest.raises(InvalidResourceError) as info:
        check_conceptmap(cm("http://ex/bad", [group]))
    assert info.value.expression == [path]


def test_implicit_map_provider() -> None:
    implied = cm(
        "http://ex/sct?fhir_cm=1",
        [{"source": A, "target": A, "element": [el("old", tg("new", "equal"))]}],
    )
    remove = register_implicit_maps(
        r"http://ex/sct\?fhir_cm=\d+", lambda url: implied if url == implied["url"] else None
    )
    try:
        assert translate([], code="old", url="http://ex/sct?fhir_cm=1").match_list[0].code == "new"
        with pytest.raises(ConceptMapNotFoundError):
            translate([], code="old", url="http://ex/sct?fhir_cm=2")
    finally:
        remove()
    with pytest.raises(ConceptMapNotFoundError):
        translate([], code="old", url="http://ex/sct?fhir_cm=1")


def _package_maps(package_dirs: dict[str, Path]) -> list[dict[str, Any]]:
    folder = package_dirs[EXAMPLES[0]]
    return [
        json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(folder.glob("**/ConceptMap-*.json"))
    ]


def test_every_r4_example_map_passes_the_checks(package_dirs: dict[str, Path]) -> None:
    maps = _package_maps(package_dirs)
    assert len(maps) > 20
    for resource in maps:
        check_conceptmap(resource)


@pytest.mark.parametrize(
    ("kwargs", "result", "matches"),
    [
        (
            {
                "code": "other",
                "system": "http://hl7.org/fhir/administrative-gender",
                "url": "http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v2",
            },
            True,
            [("wider", "A"), ("wider", "O")],
        ),
        (
            {
                "code": "M",
                "reverse": True,
                "url": "http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v2",
            },
            True,
            [("equal", "male")],
        ),
        (
            {"code": "both", "url": "http://hl7.org/fhir/ConceptMap/101"},
            True,
            [("inexact", "temp")],
        ),
        (
            {"code": "old", "url": "http://hl7.org/fhir/ConceptMap/101"},
            False,
            [("disjoint", "BAD")],
        ),
        (
            {
                "code": "code",
                "url": "http://hl7.org/fhir/ConceptMap/example2",
                "dependencies": [
                    (
                        "http://example.org/fhir/property-value/example",
                        [{"system": "http://example.org/fhir/example3", "code": "some-code"}],
                    )
                ],
            },
            True,
            [("equivalent", "code2")],
        ),
    ],
)
def test_r4_example_maps(
    package_dirs: dict[str, Path],
    kwargs: dict[str, Any],
    result: bool,
    matches: list[tuple[str, str]],
) -> None:
    t = translate(_package_maps(package_dirs), **kwargs)
    assert t.result is result
    assert [(m.equivalence, m.code) for m in t.match_list] == matches


def test_workbench_loads_frames_and_translates(package_dirs: dict[str, Path]) -> None:
    from workbench import Workbench

    wb = Workbench()
    wb.load(package_dirs[EXAMPLES[0]], progress=False)
    frame = wb.conceptmaps
    assert "http://hl7.org/fhir/ConceptMap/101" in set(frame["url"])
    rows = wb.mappings("http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v2")
    assert list(rows.loc[rows["source_code"] == "other", "target_code"]) == ["A", "O"]
    t = wb.translate(
        "male",
        system="http://hl7.org/fhir/administrative-gender",
        url="http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v2",
    )
    assert t.result is True
    assert t.matches[["equivalence", "system", "code"]].values.tolist() == [
        ["equal", "http://terminology.hl7.org/CodeSystem/v2-0001", "M"]
    ]
    assert t.matches.loc[0, "display"] == "Male"  # from the loaded v2-0001 code system
    coded = wb.translate(
        coding={"system": "http://hl7.org/fhir/administrative-gender", "code": "male"},
        target_system="http://terminology.hl7.org/CodeSystem/v2-0001",
    )
    assert "M" in set(coded.matches["code"])
    with pytest.raises(ConceptMapNotFoundError, match="http://ex/missing"):
        wb.translate("x", url="http://ex/missing")


def test_malformed_conceptmap_is_not_loaded(tmp_path: Path) -> None:
    from workbench import Workbench

    bad = cm("http://ex/bad", [{"element": [{"code": "a", "target": [{"code": "b"}]}]}])
    (tmp_path / "bad.json").write_text(json.dumps(bad), encoding="utf-8")
    wb = Workbench()
    with pytest.raises(InvalidResourceError, match=r"group\[0\]\.element\[0\]\.target\[0\]"):
        wb.load(tmp_path, progress=False)
    assert wb.conceptmaps.empty
