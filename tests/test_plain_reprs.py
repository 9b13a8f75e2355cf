"""Plain text shows what the HTML shows: the ``repr``/``to_string`` of ``by_code()``,
``summary()``, the report and ``ValidationResult`` mark odd whitespace and invisible
characters as the HTML does, and the data keeps them exactly. Then the theme and the
tables: ``summary().plot()`` for both JupyterLab themes, wrapping messages and the
suggested display in ColumnReport."""

from __future__ import annotations

import io
from typing import Any

import pandas as pd
import pytest
from matplotlib.colors import to_rgba

from workbench import Workbench
from workbench.bulk.report import BAR_COLOURS, NEUTRAL, CodeTable
from workbench.marks import frame_html, has_marks, visible
from workbench.notebook import ColumnReport
from workbench.notebook.column_report import DISPLAY_WIDTH, MESSAGE_WIDTH, SHOWN_COLUMNS
from workbench.terminology.result import Suggestion, ValidationResult

GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"

MARKS = [
    pytest.param(" male", "␣male", id="leading-space"),
    pytest.param("I10 ", "I10␣", id="trailing-space"),
    pytest.param("E11  9", "E11␣␣9", id="doubled-space"),
    pytest.param("a\tb", "a⇥b", id="tab"),
    pytest.param("a\nb", "a↵b", id="newline"),
    pytest.param("a\rb", "a␍b", id="carriage-return"),
    pytest.param("a\u00a0b", "a⍽b", id="no-break-space"),
    pytest.param("I10\u200b", "I10␣", id="zero-width-space"),
    pytest.param("\ufeffI10", "␣I10", id="byte-order-mark"),
    pytest.param("E1\u00ad1", "E1␣1", id="soft-hyphen"),
    pytest.param("a\u2060b", "a␣b", id="word-joiner"),
    pytest.param("male", "male", id="plain"),
    pytest.param("Type 2 diabetes", "Type 2 diabetes", id="single-inner-spaces"),
]


@pytest.mark.parametrize(("code", "shown"), MARKS)
def test_the_marks(code: str, shown: str) -> None:
    assert visible(code) == shown
    assert has_marks(code) == (code != shown)


@pytest.mark.parametrize(("code", "shown"), MARKS)
def test_by_code_prints_what_its_html_shows(default_wb: Workbench, code: str, shown: str) -> None:
    report = default_wb.validate_column(pd.Series([code, "female"]), GENDER)
    table = report.by_code()
    assert isinstance(table, CodeTable)
    with pd.option_context("display.width", 400, "display.max_columns", 20):
        text = repr(table)
    html = table._repr_html_() or ""
    assert shown in text
    assert shown in repr(table[["code", "count"]])
    assert shown in html
    assert table.to_string() == table.to_string(buf=None)
    assert code in table["code"].tolist()  # the data keeps the code exactly
    buffer = io.StringIO()
    assert table.to_string(buf=buffer) is None and buffer.getvalue() == table.to_string()


def test_summary_prints_its_codes_with_marks(default_wb: Workbench) -> None:
    report = default_wb.validate_column(pd.Series([" male", "I10\u200b", "male"]), GENDER)
    text = repr(report.summary())
    assert "␣male" in text and "I10␣" in text
    assert " male" in report.summary().top_invalid["code"].tolist()


def test_a_suggestion_and_its_display_are_marked() -> None:
    table = CodeTable(
        {
            "code": ["e11 9"],
            "suggestion": ["E11  9"],
            "suggested_display": ["Diabetes\t"],
            "count": [1],
        }
    )
    assert table.to_string(index=False).split("\n")[1].split() == [
        "e11",
        "9",
        "E11␣␣9",
        "Diabetes⇥",
        "1",
    ]
    assert table["suggestion"].tolist() == ["E11  9"]


def test_the_report_prints_displays_with_marks() -> None:
    wb = Workbench()
    wb.load(
        [
            {
                "resourceType": "CodeSystem",
                "url": "http://example.org/odd",
                "status": "active",
                "content": "complete",
                "concept": [{"code": "a", "display": "Alpha  one"}],
            },
            {
                "resourceType": "ValueSet",
                "url": "http://example.org/odd-vs",
                "status": "active",
                "compose": {"include": [{"system": "http://example.org/odd"}]},
            },
        ],
        progress=False,
    )
    report = wb.validate_column(pd.Series(["a", "b"]), "http://example.org/odd-vs")
    assert "Alpha␣␣one" in report.to_string()
    with pd.option_context("display.width", 400, "display.max_columns", 20):
        assert "Alpha␣␣one" in repr(report)
    assert report["display"].tolist()[0] == "Alpha  one"


RESULT_CASES = [
    pytest.param(" male", "code='␣male'", id="leading"),
    pytest.param("I10\u200b", "code='I10␣'", id="zero-width"),
    pytest.param("a\tb", "code='a⇥b'", id="tab"),
]


@pytest.mark.parametrize(("code", "shown"), RESULT_CASES)
def test_a_validation_result_prints_its_code_with_marks(
    default_wb: Workbench, code: str, shown: str
) -> None:
    found = default_wb.validate_code(GENDER, code=code)
    assert shown in repr(found)
    assert visible(code) in found._repr_html_()
    assert found.code == code  # the data is exact


def test_a_validation_result_prints_its_suggestion(default_wb: Workbench) -> None:
    found = default_wb.validate_code(GENDER, code=" male")
    assert repr(found).endswith("suggestion='male' (Male; without the surrounding whitespace))")
    assert "did you mean" in found._repr_html_()
    plain = ValidationResult(
        False,
        "x",
        None,
        code="E11  9",
        suggestion=Suggestion("E11.9", None, "dotted/undotted variant"),
    )
    assert repr(plain) == (
        "ValidationResult(result=False, code='E11␣␣9', message='x', "
        "suggestion='E11.9' (dotted/undotted variant))"
    )


def test_frame_html_marks_only_the_columns_named() -> None:
    frame = pd.DataFrame({"code": [" a"], "message": [" a"]})
    html = frame_html(frame, ("code",))
    assert "<td>␣a</td>" in html and html.count("␣") == 1


# --- theme and tables --------------------------------------------------------------------


def test_plot_reads_on_both_themes(default_wb: Workbench) -> None:
    report = default_wb.validate_column(pd.Series([" male", "Female", "male", "inactive"]), GENDER)
    figure = report.summary().plot()
    assert figure.get_facecolor()[3] == 0.0  # transparent: the theme's background shows
    left, right = figure.axes
    neutral = to_rgba(NEUTRAL)
    for axes in (left, right):
        assert axes.get_facecolor()[3] == 0.0
        assert to_rgba(axes.title.get_color()) == neutral
        assert to_rgba(axes.xaxis.label.get_color()) == neutral
        assert all(to_rgba(t.get_color()) == neutral for t in axes.get_yticklabels())
    labels = [t.get_text() for t in left.get_yticklabels()]
    assert any(label.startswith("␣male") for label in labels)  # marks, as in the HTML
    bars = {p.get_facecolor() for p in left.patches}
    assert bars == {to_rgba(BAR_COLOURS["invalid"])}
    chart = report.chart().spec
    assert chart["hconcat"][0]["encoding"]["color"]["scale"]["range"] == [
        BAR_COLOURS["valid"],
        BAR_COLOURS["warning"],
        BAR_COLOURS["invalid"],
    ]


def _widths(table: Any) -> dict[int, str | None]:
    """Column index -> the width it wraps within (None: kept on one line), from an ITable's
    columnDefs."""
    found: dict[int, str | None] = {}
    for d in table._dt_args["columnDefs"]:
        for i in d["targets"]:
            found[i] = d.get("width") if d["className"] == "dt-body-left" else None
    return found


def test_column_report_messages_wrap_and_codes_do_not(default_wb: Workbench) -> None:
    long = "x" * 30 + " Female"
    report = ColumnReport(default_wb.validate_column(pd.Series([long, " male", "male"]), GENDER))
    assert "nowrap" not in report.codes.classes.split()
    assert "nowrap" not in report.table.classes.split()
    codes = _widths(report.codes)
    assert codes[SHOWN_COLUMNS.index("message")] == MESSAGE_WIDTH
    assert codes[SHOWN_COLUMNS.index("display")] == DISPLAY_WIDTH
    assert codes[SHOWN_COLUMNS.index("suggested_display")] == DISPLAY_WIDTH
    assert codes[SHOWN_COLUMNS.index("system")] == DISPLAY_WIDTH
    assert codes[SHOWN_COLUMNS.index("code")] is None
    assert codes[SHOWN_COLUMNS.index("suggestion")] is None
    rows = ["", *report._rows_shown().columns]  # the index is column 0
    assert _widths(report.table)[rows.index("message")] == MESSAGE_WIDTH
    report.issue.value = "unknown-code"  # a refresh keeps the settings
    assert _widths(report.codes)[SHOWN_COLUMNS.index("message")] == MESSAGE_WIDTH


def test_column_report_shows_the_suggested_display_next_to_the_code(
    default_wb: Workbench,
) -> None:
    report = ColumnReport(
        default_wb.validate_column(pd.Series([" male", "Female", "zzzz"]), GENDER)
    )
    shown = report.codes.df
    columns = list(shown.columns)
    assert columns.index("suggested_display") == columns.index("suggestion") + 1
    rows = shown.set_index("code")
    assert rows.loc["␣male", "suggested_display"] == "Male"
    assert rows.loc["Female", "suggested_display"] == "Female"
    assert rows.loc["zzzz", "suggested_display"] == ""
    table = report.by_code.set_index("code")
    assert table.loc["Female", "suggested_display"] == "Female"
    assert pd.isna(table.loc["Female", "display"])  # the failing code itself has none


def test_failure_cases_print_and_show_their_codes_with_marks(default_wb: Workbench) -> None:
    report = default_wb.validate_column(pd.Series([" male", "x\t", "male"] * 40), GENDER)
    failures = report.failure_cases
    assert "␣male" in repr(failures[["code", "issue"]]) and "x⇥" in repr(failures)
    html = failures._repr_html_() or ""
    assert "␣male" in html and "x⇥" in html and "80 rows" in html  # pandas' own dimensions
    assert failures["code"].tolist()[:2] == [" male", "x\t"]
    assert "␣male" in repr(failures.head(2))  # slices keep the marks
