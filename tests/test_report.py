"""The column report: ``by_code()``, suggestions, faithful codes, visible whitespace,
exports and the chart spec."""

from __future__ import annotations

import io
import pickle
from typing import Any

import numpy as np
import pandas as pd
import pytest

from workbench import Workbench
from workbench.bulk.report import CodeTable, log_scale, visible
from workbench.bulk.suggest import CodeIndex, nearest_urls

GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
ICD = "http://example.org/icd-like"
ICD_VS = "http://example.org/icd-like-vs"


@pytest.fixture(scope="module")
def icd_wb() -> Workbench:
    wb = Workbench()
    wb.load(
        [
            {
                "resourceType": "CodeSystem",
                "url": ICD,
                "status": "active",
                "content": "complete",
                "caseSensitive": True,
                "concept": [
                    {"code": "E11.9", "display": "Type 2 diabetes mellitus without complications"},
                    {"code": "E11.65", "display": "Type 2 diabetes mellitus with hyperglycemia"},
                    {"code": "I10", "display": "Essential (primary) hypertension"},
                    {"code": "J45.909", "display": "Unspecified asthma, uncomplicated"},
                ],
            },
            {
                "resourceType": "ValueSet",
                "url": ICD_VS,
                "status": "active",
                "compose": {"include": [{"system": ICD}]},
            },
        ],
        progress=False,
    )
    return wb


BY_CODE_COLUMNS = [
    "code",
    "count",
    "issue",
    "suggestion",
    "result",
    "display",
    "suggested_display",
    "share",
    "system",
    "message",
]


def test_by_code_one_row_per_distinct_code(default_wb: Workbench) -> None:
    codes = pd.Series(["male"] * 5 + ["Female"] * 3 + [" male"] * 2 + [None] + ["zzzz"])
    table = default_wb.validate_column(codes, GENDER).by_code()
    assert isinstance(table, CodeTable)
    assert list(table.columns) == BY_CODE_COLUMNS
    rows = table[["code", "count", "issue", "suggestion"]].astype(object)
    rows = rows.where(rows.notna(), None).values.tolist()
    assert rows == [
        ["male", 5, None, None],
        ["Female", 3, "unknown-code", "female"],
        [" male", 2, "unknown-code", "male"],
        ["zzzz", 1, "unknown-code", None],
        [None, 1, "missing", None],
    ]
    assert table["share"].tolist() == pytest.approx([5 / 12, 3 / 12, 2 / 12, 1 / 12, 1 / 12])
    assert table["count"].sum() == 12
    assert table.loc[1, "message"].endswith("did you mean 'female' (Female)? (case variant)")
    assert "without the surrounding whitespace" in table.loc[2, "message"]
    assert table["display"].tolist()[0] == "Male"


def test_by_code_failures_only_and_no_suggestions(default_wb: Workbench) -> None:
    report = default_wb.validate_column(pd.Series(["male", "Female", "Female"]), GENDER)
    table = report.by_code(failures_only=True, suggest=False)
    assert table["code"].tolist() == ["Female"]
    assert table["suggestion"].isna().all()
    assert "did you mean" not in table["message"].iloc[0]


SUGGESTION_CASES = [
    pytest.param("E119", "E11.9", "dotted/undotted variant", id="undotted-icd"),
    pytest.param("e11.9", "E11.9", "case variant", id="lower-case"),
    pytest.param("E11.9 ", "E11.9", "without the surrounding whitespace", id="trailing-space"),
    pytest.param("I1O", "I10", "nearest code", id="letter-o-for-zero"),
    pytest.param("J45.90", "J45.909", "a more specific code", id="one-digit-short"),
    pytest.param("E11", "E11.9", "a more specific code", id="header-code"),
    pytest.param("X11.9", None, None, id="other-chapter-is-not-near"),
    pytest.param("essential hypertension", "I10", "nearest display", id="display-given"),
    pytest.param(
        "Essential (primary) hypertension", "I10", "the code with this display", id="display"
    ),
    pytest.param("Z99.99", None, None, id="nothing-close"),
]


@pytest.mark.parametrize(("code", "suggestion", "why"), SUGGESTION_CASES)
def test_suggestions_in_by_code(
    icd_wb: Workbench, code: str, suggestion: str | None, why: str | None
) -> None:
    table = icd_wb.validate_column(pd.Series([code]), ICD_VS).by_code()
    [row] = table.to_dict("records")
    assert row["result"] is False or row["result"] == False  # noqa: E712
    if suggestion is None:
        assert row["suggestion"] is None
        assert "did you mean" not in row["message"]
    else:
        assert row["suggestion"] == suggestion
        assert f"did you mean '{suggestion}'" in row["message"]
        assert f"({why})" in row["message"]


def test_suggestion_is_never_applied(icd_wb: Workbench) -> None:
    report = icd_wb.validate_column(pd.Series(["E119"]), ICD_VS)
    assert report["result"].tolist() == [False]
    assert report["issue"].tolist() == ["unknown-code"]
    assert "did you mean" not in report["message"].iloc[0]


def test_unknown_system_suggests_the_nearest_loaded_one(icd_wb: Workbench) -> None:
    frame = pd.DataFrame({"c": ["I10"], "s": ["http://example.org/icd-likes"]})
    table = icd_wb.validate_column(frame, ICD_VS, code="c", system_column="s").by_code()
    assert table["issue"].tolist() == ["unknown-system"]
    assert table["suggestion"].tolist() == [ICD]


def test_nearest_urls_by_url_and_title() -> None:
    known = {
        "http://hl7.org/fhir/ValueSet/administrative-gender": "AdministrativeGender",
        "http://hl7.org/fhir/ValueSet/encounter-status": "EncounterStatus",
    }
    assert nearest_urls("http://hl7.org/fhir/ValueSet/administrativ-gender", known) == [
        "http://hl7.org/fhir/ValueSet/administrative-gender"
    ]
    assert nearest_urls("EncounterStatuses", known) == [
        "http://hl7.org/fhir/ValueSet/encounter-status"
    ]
    assert nearest_urls("http://example.org/something-else", known) == []


def test_code_index_prefers_exact_variants_over_edit_distance() -> None:
    index = CodeIndex([("AB", None), ("ab1", None), ("A.B", None)])
    assert index.suggest("ab") is not None
    assert index.suggest("ab").code == "AB"  # type: ignore[union-attr]


# Keys made in Arrow for ASCII texts and by Python for the others (casefold, whitespace):
# each case a text that takes one way or the other, and the suggestion it gives.
VARIANT_CASES = [
    pytest.param([("AB", None), ("ab", None)], "Ab", "AB", "case variant", id="first-in-order"),
    pytest.param([("STRASSE", None)], "straße", "STRASSE", "case variant", id="casefold-query"),
    pytest.param([("Straße", None)], "STRASSE", "Straße", "case variant", id="casefold-code"),
    pytest.param([("E11.9", None)], "e 119", "E11.9", "dotted/undotted variant", id="dots"),
    pytest.param([("Ä.1", None)], "ä1", "Ä.1", "dotted/undotted variant", id="dots-not-ascii"),
    pytest.param(
        [("X1", "Heart\tattack")], "heart attack", "X1", "the code with this display", id="tab"
    ),
    pytest.param(
        [("X1", "Acute  MI ")], "ACUTE MI", "X1", "the code with this display", id="spaces"
    ),
    pytest.param([("X1", "a\x1cb")], "A B", "X1", "the code with this display", id="separator"),
    pytest.param(
        [("X1", "Sézary\xa0disease")],
        "SÉZARY DISEASE",
        "X1",
        "the code with this display",
        id="nbsp",
    ),
    pytest.param([("X1", None), ("X2", "")], "x3", None, None, id="no-displays"),
    pytest.param([("\ud800x", None)], "\ud800X", "\ud800x", "case variant", id="surrogate"),
]


@pytest.mark.parametrize(("entries", "code", "suggested", "why"), VARIANT_CASES)
def test_code_index_variants(
    entries: list[tuple[str, str | None]], code: str, suggested: str | None, why: str | None
) -> None:
    found = CodeIndex(entries).suggest(code)
    got = (found.code, found.why) if found is not None else (None, None)
    assert got == (suggested, why)


def test_code_index_suggest_many_is_suggest_of_each() -> None:
    entries = [("E11.9", "Type 2 diabetes"), ("E11.65", None), ("R05.9", "Cough, unspecified")]
    entries += [(f"Z{n:02d}.{n % 7}", f"Encounter {n}") for n in range(60)]
    index = CodeIndex(entries)
    codes = ["E119", "e11.66", "R05", "Z01.9", "Z0.2", "type 2 diabetis", "zzz", "", " R05.9"]
    assert index.suggest_many(codes) == [CodeIndex(entries).suggest(c) for c in codes]
    found = [(s.code, s.why) if s is not None else None for s in index.suggest_many(codes)]
    assert found == [
        ("E11.9", "dotted/undotted variant"),
        None,  # E11.65 is 2 edits away, but its first character is another
        ("R05.9", "a more specific code"),
        ("Z01.1", "nearest code"),
        ("Z02.2", "nearest code"),
        ("E11.9", "nearest display"),
        None,
        None,
        ("R05.9", "without the surrounding whitespace"),
    ]


FAITHFUL_CASES = [
    pytest.param(pd.Series([1, 2, None, 3]), id="float-with-missing"),
    pytest.param(pd.Series([1, 2, None, 3], dtype="Int64"), id="Int64"),
    pytest.param(pd.Series([1, 2, None, 3], dtype="object"), id="object-ints"),
    pytest.param(pd.Series([1, 2, None, 3], dtype="Int64").astype("category"), id="category"),
]


@pytest.mark.parametrize("codes", FAITHFUL_CASES)
def test_integer_codes_stay_integers(icd_wb: Workbench, codes: pd.Series) -> None:
    wb = Workbench()
    wb.load(
        [
            {
                "resourceType": "CodeSystem",
                "url": "http://example.org/n",
                "status": "active",
                "content": "complete",
                "concept": [{"code": "1"}, {"code": "2"}],
            },
            {
                "resourceType": "ValueSet",
                "url": "http://example.org/n-vs",
                "status": "active",
                "compose": {"include": [{"system": "http://example.org/n"}]},
            },
        ],
        progress=False,
    )
    frame = pd.DataFrame({"c": codes})
    report = wb.validate_column(frame, "http://example.org/n-vs", code="c")
    assert report["result"].tolist() == [True, True, pd.NA, False]
    assert report.failure_cases["code"].tolist()[-1] == "3"
    assert "'3'" in report["message"].iloc[3]
    assert "3" in report.by_code()["code"].tolist()
    assert "3.0" not in report._repr_html_()


VISIBLE_CASES = [
    (" male", "␣male"),
    ("male  ", "male␣␣"),
    ("a  b", "a␣␣b"),
    ("a b", "a b"),
    ("a\tb", "a⇥b"),
    ("a\nb", "a↵b"),
    ("a\u00a0b", "a⍽b"),
    ("E11.9", "E11.9"),
    (None, None),
]


@pytest.mark.parametrize(("code", "shown"), VISIBLE_CASES)
def test_visible(code: Any, shown: Any) -> None:
    assert visible(code) == shown


def test_html_repr_shows_whitespace(default_wb: Workbench) -> None:
    report = default_wb.validate_column(pd.Series([" male", "male"]), GENDER)
    html = report._repr_html_()
    assert "␣male" in html
    assert "By code" in html
    assert "did you mean" in html


def test_exports_keep_codes_exactly(default_wb: Workbench) -> None:
    report = default_wb.validate_column(pd.Series([" male", "1", "male"]), GENDER)
    csv = pd.read_csv(io.BytesIO(report.export("csv")), dtype=str, keep_default_na=False)
    parquet = pd.read_parquet(io.BytesIO(report.export("parquet")))
    excel = pd.read_excel(io.BytesIO(report.export("xlsx")), dtype=str, keep_default_na=False)
    for frame in (csv, parquet, excel):
        assert sorted(frame["code"]) == [" male", "1", "male"]
    failures = pd.read_csv(io.BytesIO(report.export("csv", what="failures")), dtype=str)
    assert len(failures) == 2
    with pytest.raises(ValueError, match="Unknown export format"):
        report.export("docx")


def test_log_scale() -> None:
    assert log_scale([1, 2, 50]) is False
    assert log_scale([1, 101]) is True
    assert log_scale([]) is False


def test_chart_spec(default_wb: Workbench) -> None:
    codes = pd.Series(["male"] * 1000 + ["Female"] * 3 + ["x"])
    spec = default_wb.validate_column(codes, GENDER).chart().spec
    reasons, top = spec["hconcat"]
    assert spec["$schema"].endswith("vega-lite/v5.json")
    assert reasons["encoding"]["x"]["scale"] == {"type": "log"}
    assert [v["code"].split()[0] for v in top["data"]["values"]] == ["Female", "x"]
    assert top["data"]["values"][0]["suggestion"] == "female"


def test_report_pickles_without_its_suggester(default_wb: Workbench) -> None:
    report = default_wb.validate_column(pd.Series(["Female"]), GENDER)
    again = pickle.loads(pickle.dumps(report))
    assert again["issue"].tolist() == ["unknown-code"]
    assert np.asarray(again.by_code()["suggestion"].isna()).all()


# --- rich reprs ------------------------------------------------------------------------------


def test_workbench_html_repr(wb: Workbench) -> None:
    html = wb._repr_html_()
    assert "<th style='text-align:left;padding-right:1em'>ValueSets</th>" in html
    assert f"<td style='text-align:left'>{len(wb.registry.all('ValueSet'))}</td>" in html
    assert "not running" in html
    for provider in wb.terminology.providers():  # the built-in systems among them
        (row,) = [r for r in html.split("<tr>") if f">{provider.url}</th>" in r]
        held = f"{len(provider):,} concepts" if provider.enumerable else "codes by grammar"
        assert f"<td style='text-align:left'>{held}, version" in row
    assert "urn:ietf:bcp:47</th><td style='text-align:left'>codes by grammar" in html
    assert "urn:iso:std:iso:3166</th><td style='text-align:left'>0 concepts" not in html
    wb.load(
        [
            {
                "resourceType": "CodeSystem",
                "url": "http://example.org/v",
                "version": v,
                "status": "active",
                "content": "complete",
                "concept": [{"code": "a"}],
            }
            for v in ("1.0.0", "2.0.0")
        ],
        progress=False,
    )
    assert "(1 with several versions)" in wb._repr_html_()
    with wb.serve(port=0, token="repr-test-token-0123456789") as server:
        html = wb._repr_html_()
        assert f"running at <code>{server.url}</code>" in html
        assert server.token not in html
        assert server.token not in server._repr_html_()
    assert "not running" in wb._repr_html_()


def test_result_and_report_html_use_theme_colours(default_wb: Workbench) -> None:
    good = default_wb.validate_code(GENDER, code="male")._repr_html_()
    bad = default_wb.validate_code(GENDER, code="x")._repr_html_()
    assert "var(--jp-success-color1" in good
    assert "var(--jp-error-color1" in bad
    summary = default_wb.validate_column(pd.Series(["male", "x"]), GENDER).summary()
    assert "var(--jp-success-color1" in summary._repr_html_()


def test_validate_code_names_the_value_set_valueset(default_wb: Workbench) -> None:
    """One name per concept: ``valueset`` (positional or keyword) everywhere; ``url=`` still
    works but warns."""
    assert default_wb.validate_code(GENDER, code="male").result is True
    assert default_wb.validate_code(valueset=GENDER, code="male").result is True
    with pytest.warns(DeprecationWarning, match=r"valueset=\.\.\."):
        assert default_wb.validate_code(url=GENDER, code="male").result is True


def test_validation_result_issue_is_the_reason(default_wb: Workbench) -> None:
    """One name per concept: ``issue``, as in column reports; ``reason`` still works but
    warns."""
    result = default_wb.validate_code(GENDER, code="nope")
    assert result.issue == "unknown-code"
    with pytest.warns(DeprecationWarning, match=r"use ValidationResult\.issue"):
        assert result.reason == "unknown-code"


def test_unknown_value_set_error_says_did_you_mean(default_wb: Workbench) -> None:
    typo = GENDER.replace("gender", "gendr")
    with pytest.raises(Exception) as raised:
        default_wb.validate_code(typo, code="male")
    assert str(raised.value) == f"ValueSet {typo} not found"  # the error itself is unchanged
    assert raised.value.__notes__ == [f"Did you mean {GENDER}?"]  # type: ignore[attr-defined]
    with pytest.raises(Exception) as raised:
        default_wb.expand(typo)
    assert raised.value.__notes__ == [f"Did you mean {GENDER}?"]  # type: ignore[attr-defined]
    with pytest.raises(Exception) as raised:
        default_wb.validate_column(pd.Series(["male"]), typo)
    assert raised.value.__notes__ == [f"Did you mean {GENDER}?"]  # type: ignore[attr-defined]
    with pytest.raises(Exception) as raised:
        default_wb.validate_code("http://example.org/nothing-like-it", code="x")
    assert getattr(raised.value, "__notes__", []) == []


GENDER_VS = "http://hl7.org/fhir/ValueSet/administrative-gender"


@pytest.mark.parametrize("max_columns", [0, 20])  # 0: fitted to the terminal, as pandas does
def test_plain_text_leads_with_code_count_issue_suggestion(
    default_wb: Workbench, max_columns: int
) -> None:
    """In an 80-column terminal, ``print`` of ``by_code()``, ``summary()`` and the report
    shows the code (odd whitespace marked), count, issue and suggestion on its first lines;
    messages come last and elided; ``to_string()`` keeps every column and whole messages."""
    report = default_wb.validate_column(pd.Series([" male", "femal", "female"]), GENDER_VS)
    codes = report.by_code()
    with pd.option_context("display.width", 80, "display.max_columns", max_columns):
        printed = {"by_code": repr(codes), "summary": repr(report.summary()), "rows": repr(report)}
    for name, text in printed.items():
        assert max(len(line) for line in text.splitlines()) <= 80, name
    head = printed["by_code"].splitlines()[0].split()
    assert head[:4] == ["code", "count", "issue", "suggestion"]
    first_block = printed["by_code"].split("\n\n")[0]
    assert "␣male" in first_block and "unknown-code" in first_block and "female" in first_block
    assert printed["summary"].split("Most frequent invalid codes:\n")[1].split()[:4] == [
        "code", "count", "issue", "system"
    ]  # fmt: skip
    assert "␣male" in printed["summary"]
    assert printed["rows"].splitlines()[0].split()[:2] == ["code", "issue"]
    message = codes.loc[codes["code"] == " male", "message"].iloc[0]
    assert len(message) > 40 and message not in printed["by_code"]
    full = codes.to_string()
    assert message in full and all(column in full for column in codes.columns)
