"""Reports as one file: ``report.to_excel`` (two sheets, codes as text) and
``report.to_html`` (one page that loads nothing, every value escaped). What the page shows in
a browser, in both colour schemes, is checked in tests/browser/test_report_page.py."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from openpyxl import load_workbook

from workbench import Workbench

GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"
#: codes a spreadsheet or a page could misread: a formula, leading zeros, a control
#: character, markup, odd whitespace
CODES = ["male", "male", "female", " male", "=1+1", "0012", "fem\x01ale", "<b>x</b>", None]


@pytest.fixture(scope="module")
def report(default_wb: Workbench) -> pd.DataFrame:
    return default_wb.validate_column(pd.Series(CODES, dtype=object), GENDER)


def test_excel_has_the_summary_and_the_codes_as_text(report: pd.DataFrame, tmp_path: Path) -> None:
    path = report.to_excel(tmp_path / "r.xlsx", title="Nightly gender check")
    book = load_workbook(path)
    assert book.sheetnames == ["Summary", "By code"]
    summary = dict(row for row in book["Summary"].iter_rows(values_only=True) if row[0])
    assert summary["report"] == "Nightly gender check"
    assert (summary["rows"], summary["valid"], summary["unknown-code"]) == (9, 3, 5)
    assert summary["missing"] == 1
    sheet = book["By code"]
    header, *rows = list(sheet.iter_rows(values_only=True))
    assert header[:5] == ("code", "count", "issue", "suggestion", "result")
    by_code = {row[0]: row for row in rows}
    assert by_code["male"][1] == 2 and by_code["male"][4] is True
    assert by_code[" male"][3] == "male"  # the suggestion
    cells = {c.value: c.data_type for row in sheet.iter_rows(min_col=1, max_col=1) for c in row}
    assert cells["=1+1"] == "s" and cells["0012"] == "s"  # text, never a formula or a number
    assert "fem\\x01ale" in by_code  # XML cannot hold \x01: written visibly


def test_html_is_one_file_that_loads_nothing(report: pd.DataFrame, tmp_path: Path) -> None:
    page = report.to_html(tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script" not in page.lower()  # the code <script>-like input is escaped too
    assert not re.search(r"""(src|href)\s*=|@import|url\(""", page)
    assert "prefers-color-scheme: dark" in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page
    assert "␣male" in page  # odd whitespace made visible
    assert "3</b> of 9 rows valid (33.33%)" in page
    assert page.count("<rect class='bar") == 3 + 5  # 3 reasons, 5 failing codes
