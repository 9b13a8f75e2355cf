"""The pure HTML helpers behind the widgets (workbench.notebook.views), as tables."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import pytest

from workbench import Workbench
from workbench.notebook import views
from workbench.terminology.validate.coding import Issue, ValidationResult

S = "http://example.org/cs"
S2 = "http://example.org/cs2"
VS1 = "http://example.org/vs/one"
VS2 = "http://example.org/vs/two"
TEN = [f"c{i}" for i in range(1, 11)]


def concepts(*codes: str) -> list[dict[str, str]]:
    return [{"code": c} for c in codes]


COMPOSE_CASES = [
    pytest.param({}, [], id="no-compose"),
    pytest.param({"include": []}, [], id="empty-include"),
    pytest.param({"include": [{"system": S}]}, [f"include all codes of {S}"], id="whole-system"),
    pytest.param(
        {"include": [{"system": S, "version": "2.0"}]},
        [f"include all codes of {S} version 2.0"],
        id="whole-system-version",
    ),
    pytest.param(
        {"include": [{"system": S, "concept": concepts("a", "b", "c")}]},
        [f"include codes a, b, c from {S}"],
        id="concepts",
    ),
    pytest.param(
        {"include": [{"system": S, "concept": concepts(*TEN[:8])}]},
        [f"include codes c1, c2, c3, c4, c5, c6, c7, c8 from {S}"],
        id="concepts-8-not-truncated",
    ),
    pytest.param(
        {"include": [{"system": S, "concept": concepts(*TEN[:9])}]},
        [f"include codes c1, c2, c3, c4, c5, c6, c7, c8 … (9 codes) from {S}"],
        id="concepts-9-truncated",
    ),
    pytest.param(
        {"include": [{"system": S, "version": "1", "concept": concepts(*TEN)}]},
        [f"include codes c1, c2, c3, c4, c5, c6, c7, c8 … (10 codes) from {S} version 1"],
        id="concepts-10-truncated-version",
    ),
    pytest.param(
        {
            "include": [
                {"system": S, "filter": [{"property": "concept", "op": "is-a", "value": "A"}]}
            ]
        },
        [f"include codes of {S} where concept is-a A"],
        id="one-filter",
    ),
    pytest.param(
        {
            "include": [
                {
                    "system": S,
                    "filter": [
                        {"property": "concept", "op": "is-a", "value": "A"},
                        {"property": "status", "op": "=", "value": "active"},
                        {"property": "concept", "op": "is-not-a", "value": "B"},
                    ],
                }
            ]
        },
        [f"include codes of {S} where concept is-a A and status = active and concept is-not-a B"],
        id="filters-anded",
    ),
    pytest.param({"include": [{"valueSet": [VS1]}]}, [f"include the codes of {VS1}"], id="import"),
    pytest.param(
        {"include": [{"valueSet": [VS1, VS2]}]},
        [f"include the codes of {VS1}; the codes of {VS2}"],
        id="two-imports",
    ),
    pytest.param(
        {"include": [{"system": S, "valueSet": [VS1]}]},
        [f"include all codes of {S}; codes also in {VS1}"],
        id="import-with-system",
    ),
    pytest.param(
        {"include": [{"system": S, "concept": concepts("a"), "valueSet": [VS1]}]},
        [f"include codes a from {S}; codes also in {VS1}"],
        id="import-with-concepts",
    ),
    pytest.param(
        {"include": [{"system": S}], "exclude": [{"system": S, "concept": concepts("x", "y")}]},
        [f"include all codes of {S}", f"exclude codes x, y from {S}"],
        id="exclude-concepts",
    ),
    pytest.param(
        {
            "include": [{"system": S}],
            "exclude": [
                {"system": S, "filter": [{"property": "concept", "op": "is-a", "value": "G"}]}
            ],
        },
        [f"include all codes of {S}", f"exclude codes of {S} where concept is-a G"],
        id="exclude-filter",
    ),
    pytest.param(
        {"include": [{"system": S}], "exclude": [{"valueSet": [VS2]}]},
        [f"include all codes of {S}", f"exclude the codes of {VS2}"],
        id="exclude-import",
    ),
    pytest.param(
        {"exclude": [{"system": S2}], "include": [{"system": S}, {"valueSet": [VS1]}]},
        [f"include all codes of {S}", f"include the codes of {VS1}", f"exclude all codes of {S2}"],
        id="includes-in-order-then-excludes",
    ),
    pytest.param(
        {"inactive": False, "include": [{"system": S}]},
        [f"include all codes of {S}", "inactive codes are excluded"],
        id="inactive-false",
    ),
    pytest.param(
        {"inactive": True, "include": [{"system": S}]},
        [f"include all codes of {S}"],
        id="inactive-true",
    ),
]


@pytest.mark.parametrize(("compose", "expected"), COMPOSE_CASES)
def test_compose_lines(compose: dict[str, Any], expected: list[str]) -> None:
    resource = {"resourceType": "ValueSet", "url": VS1}
    if compose:
        resource["compose"] = compose
    assert views.compose_lines(resource) == expected


def test_compose_lines_of_the_shipped_v3_act_encounter_code(default_wb: Workbench) -> None:
    resource = default_wb.resource(
        "ValueSet", "http://terminology.hl7.org/ValueSet/v3-ActEncounterCode"
    )
    act = "http://terminology.hl7.org/CodeSystem/v3-ActCode"
    assert views.compose_lines(resource) == [
        f"include codes of {act} where concept is-a _ActEncounterCode",
        f"exclude codes _ActEncounterCode from {act}",
    ]


def warning(text: str) -> Issue:
    return Issue("warning", "code-comment", text, "inactive")


def error(text: str, reason: str) -> Issue:
    return Issue("error", "invalid-code", text, reason)


RESULT_CASES = [
    pytest.param(
        ValidationResult(True, None, "Office visit", code="office"),
        "true",
        views.GREEN,
        "valid",
        ["display: <b>Office visit</b>"],
        ["<code>"],
        id="valid",
    ),
    pytest.param(
        ValidationResult(True, None, None, code="office"),
        "true",
        views.GREEN,
        "valid",
        [],
        ["display:", "<code>"],
        id="valid-no-display",
    ),
    pytest.param(
        ValidationResult(
            True,
            "The code is inactive",
            "Group visit",
            issue="inactive",
            issues=(warning("The code is inactive"),),
        ),
        "true",
        views.AMBER,
        "valid, with a warning",
        ["<code>inactive</code>", "display: <b>Group visit</b>", "The code is inactive</div>"],
        [],
        id="valid-with-warning",
    ),
    pytest.param(
        ValidationResult(
            False,
            "Wrong display 'Bogus'",
            "Office visit",
            issue="invalid-display",
            issues=(error("Wrong display 'Bogus'", "invalid-display"),),
        ),
        "false",
        views.RED,
        "invalid",
        [
            "<code>invalid-display</code>",
            "display: <b>Office visit</b>",
            "Wrong display &#x27;Bogus&#x27;",
        ],
        [],
        id="invalid-display",
    ),
    pytest.param(
        ValidationResult(
            False, "Unknown code 'zz'", None, issue="unknown-code", issues=(error("u", "x"),)
        ),
        "false",
        views.RED,
        "invalid",
        ["<code>unknown-code</code>", "Unknown code &#x27;zz&#x27;"],
        ["display:"],
        id="invalid-no-display",
    ),
    pytest.param(
        ValidationResult(False, "<script>alert(1)</script>", "<b>x</b>", issue="not-in-vs"),
        "false",
        views.RED,
        "invalid",
        ["&lt;script&gt;alert(1)&lt;/script&gt;", "display: <b>&lt;b&gt;x&lt;/b&gt;</b>"],
        ["<script>"],
        id="escaped",
    ),
]


@pytest.mark.parametrize(
    ("result", "data_result", "colour", "word", "present", "absent"), RESULT_CASES
)
def test_result_html(
    result: ValidationResult,
    data_result: str,
    colour: str,
    word: str,
    present: list[str],
    absent: list[str],
) -> None:
    out = views.result_html(result)
    assert f"data-result='{data_result}'" in out
    assert f"border-left:6px solid {colour}" in out
    assert f"<b style='color:{colour}'>{word}</b>" in out
    for text in present:
        assert text in out
    for text in absent:
        assert text not in out


def test_result_colours_are_distinct() -> None:
    assert len({views.GREEN, views.AMBER, views.RED, views.GREY}) == 4


def expansion_frame(rows: list[tuple[str, str | None, bool, bool]]) -> pd.DataFrame:
    return pd.DataFrame(
        [(code, display, S, "1", abstract, inactive) for code, display, abstract, inactive in rows],
        columns=["code", "display", "system", "version", "abstract", "inactive"],
    )


ROW = re.compile(r"<tr style='([^']*)'><td><code>([^<]*)</code>(.*?)</td><td>(.*?)</td>")

MARK_CASES = [
    pytest.param(False, False, "", [], id="plain"),
    pytest.param(True, False, "font-style:italic;", ["abstract"], id="abstract"),
    pytest.param(False, True, "text-decoration:line-through;", ["inactive"], id="inactive"),
    pytest.param(
        True,
        True,
        "font-style:italic;text-decoration:line-through;",
        ["abstract", "inactive"],
        id="abstract-and-inactive",
    ),
]


@pytest.mark.parametrize(("abstract", "inactive", "style", "badges"), MARK_CASES)
def test_expansion_table_marks(
    abstract: bool, inactive: bool, style: str, badges: list[str]
) -> None:
    out = views.expansion_table(
        expansion_frame([("plain", "Plain", False, False), ("x", "X", abstract, inactive)])
    )
    assert out.startswith("<table class='workbench-expansion'>")
    rows = {
        code: (row_style, flags, display) for row_style, code, flags, display in ROW.findall(out)
    }
    assert rows["plain"] == ("", "", "Plain")
    row_style, row_flags, display = rows["x"]
    assert row_style == style
    assert display == "X"
    assert re.findall(r">(abstract|inactive)</span>", row_flags) == badges
    assert (f"color:{views.GREY}" in row_flags) is abstract
    assert (f"color:{views.AMBER}" in row_flags) is inactive


def test_expansion_table_escapes() -> None:
    out = views.expansion_table(
        expansion_frame([("<a>", "x&y", False, False), ("b", "<i>B</i>", False, False)])
    )
    assert "<code>&lt;a&gt;</code>" in out
    assert "<td>x&amp;y</td>" in out
    assert "<td>&lt;i&gt;B&lt;/i&gt;</td>" in out


def test_expansion_table_shows_a_missing_display_as_empty() -> None:
    # Expansion.frame has a pandas string column: a concept without a display is NaN there.
    frame = expansion_frame([("a", "A", False, False), ("b", None, False, False)])
    assert frame["display"].isna().tolist() == [False, True]
    rows = {code: display for _, code, _, display in ROW.findall(views.expansion_table(frame))}
    assert rows == {"a": "A", "b": ""}


def test_expansion_table_empty() -> None:
    out = views.expansion_table(expansion_frame([]))
    assert "No codes." in out
    assert f"color:{views.GREY}" in out
    assert "<table" not in out


FLAG_CASES = [
    pytest.param(False, False, [], id="none"),
    pytest.param(True, False, ["abstract"], id="abstract"),
    pytest.param(False, True, ["inactive"], id="inactive"),
    pytest.param(True, True, ["abstract", "inactive"], id="both"),
]


@pytest.mark.parametrize(("abstract", "inactive", "words"), FLAG_CASES)
def test_flags(abstract: bool, inactive: bool, words: list[str]) -> None:
    assert re.findall(r">(\w+)</span>", views.flags(abstract, inactive)) == words


ESC_CASES = [
    pytest.param(None, "", id="none"),
    pytest.param("a<b>&'\"", "a&lt;b&gt;&amp;&#x27;&quot;", id="html"),
    pytest.param(3, "3", id="int"),
    pytest.param("", "", id="empty"),
]


@pytest.mark.parametrize(("value", "expected"), ESC_CASES)
def test_esc(value: Any, expected: str) -> None:
    assert views.esc(value) == expected


def test_message_is_coloured_and_escaped() -> None:
    assert views.message("bad <x>") == (
        f"<div style='color:{views.RED};padding:4px 0'>bad &lt;x&gt;</div>"
    )
    assert f"color:{views.GREY}" in views.message("hint", views.GREY)


METADATA_CASES = [
    pytest.param(
        {"title": "T", "name": "N", "id": "i", "url": VS1, "version": "2", "status": "active"},
        ["<h4 style='margin:4px 0'>T</h4>", f"<code>{VS1}</code>", "<b>2</b>", "<b>active</b>"],
        ["<ul>"],
        id="title",
    ),
    pytest.param(
        {"name": "N", "id": "i", "url": VS1, "status": "draft"},
        ["<h4 style='margin:4px 0'>N</h4>", "version <b>-</b>", "<b>draft</b>"],
        [],
        id="name-no-version",
    ),
    pytest.param(
        {"id": "i", "url": VS1},
        ["<h4 style='margin:4px 0'>i</h4>"],
        [],
        id="id-only",
    ),
    pytest.param(
        {"id": "i", "description": "d" * 500},
        [f">{'d' * 400}</div>"],
        ["d" * 401],
        id="description-cut",
    ),
    pytest.param(
        {"id": "i", "compose": {"include": [{"system": S}], "exclude": [{"valueSet": [VS1]}]}},
        [f"<ul><li>include all codes of {S}</li><li>exclude the codes of {VS1}</li></ul>"],
        [],
        id="compose",
    ),
    pytest.param(
        {"id": "i", "title": "<T>"},
        ["<h4 style='margin:4px 0'>&lt;T&gt;</h4>"],
        ["<T>"],
        id="escaped",
    ),
]


@pytest.mark.parametrize(("resource", "present", "absent"), METADATA_CASES)
def test_metadata_html(resource: dict[str, Any], present: list[str], absent: list[str]) -> None:
    out = views.metadata_html(resource)
    for text in present:
        assert text in out
    for text in absent:
        assert text not in out


def test_frame_table() -> None:
    frame = pd.DataFrame({"code": [f"c{i}" for i in range(5)], "issue": ["x", None, "y", "z", "w"]})
    out = views.frame_table(frame, limit=3)
    assert "<table" in out
    assert "c2" in out
    assert "c3" not in out
    assert "No rows." in views.frame_table(frame.iloc[0:0])
