"""A column validation as a file to share: what it holds (``ReportContent``: the summary, the
rows per reason and the by-code table with suggestions), written as an Excel workbook of two
sheets here and as a self-contained HTML page in ``page.py``.

The Excel file is written with openpyxl (the library that also reads ``.xlsx`` input, so one
dependency does both) in its write-only mode, one row in memory at a time. Every text cell is
written as text: a code such as ``=1+1`` stays a string, never a formula, and ``0012`` keeps
its zeros.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workbench.bulk.charting import BY_CODE
from workbench.extras import require

#: Characters XML 1.0 (and so a workbook) cannot hold: written as ``\x01``.
_NOT_IN_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
#: The most rows a sheet holds (Excel's limit, less the header).
MAX_SHEET_ROWS = 1_048_575


@dataclass(frozen=True)
class ReportContent:
    """What a shared report shows: a title, what was validated (``about``: file, column,
    value set…), the row counts, the rows per reason and the by-code table (``BY_CODE``
    columns, most frequent first)."""

    title: str
    rows: int
    valid: int
    reasons: Mapping[str, int]
    by_code: pd.DataFrame
    about: Mapping[str, str] = field(default_factory=dict)

    @property
    def percent(self) -> float:
        """The valid share in percent (100 for no rows)."""
        return 100.0 if self.rows == 0 else 100.0 * self.valid / self.rows

    def failing(self) -> pd.DataFrame:
        """The by-code rows that failed (not valid, and not a missing value)."""
        table = self.by_code
        failed = ~table["result"].fillna(False).astype(bool) & (table["issue"] != "missing")
        return table[failed.to_numpy()]


def content_of(report: Any, title: str, suggest_limit: int) -> ReportContent:
    """The content of a ValidationFrame (``validate_column``'s result)."""
    counts = report.reason.value_counts()
    valid = int(report["result"].fillna(False).astype(bool).sum())
    table = pd.DataFrame(report.by_code(suggest_limit=suggest_limit))
    reasons = {str(k): int(v) for k, v in counts.items()}
    return ReportContent(title, len(report), valid, reasons, table)


def write_excel(content: ReportContent, path: str | Path) -> Path:
    """Write ``content`` as an ``.xlsx`` workbook: a ``Summary`` sheet (what was validated,
    rows, valid, the valid share and the rows per reason) and a ``By code`` sheet (the by-code
    table, at most MAX_SHEET_ROWS rows). Returns the path."""
    require("openpyxl", "quality", "Excel reports")
    from openpyxl import Workbook

    path = Path(path)
    book = Workbook(write_only=True)
    summary = book.create_sheet("Summary")
    for row in _summary_rows(content):
        summary.append(_cells(summary, row))
    codes = book.create_sheet("By code")
    codes.append(_cells(codes, BY_CODE))
    table = content.by_code[BY_CODE].head(MAX_SHEET_ROWS)
    for values in table.itertuples(index=False, name=None):
        codes.append(_cells(codes, values))
    book.save(path)
    return path


def _summary_rows(content: ReportContent) -> list[list[Any]]:
    rows: list[list[Any]] = [["report", content.title]]
    rows += [[key, value] for key, value in content.about.items() if value is not None]
    rows += [
        ["rows", content.rows],
        ["valid", content.valid],
        ["valid %", round(content.percent, 4)],
        [],
        ["reason", "rows"],
    ]
    rows += [[reason, count] for reason, count in content.reasons.items()]
    return rows


def _cells(sheet: Any, values: Iterable[Any]) -> list[Any]:
    """One row of write-only cells: text as text (never a formula), missing values empty."""
    from openpyxl.cell import WriteOnlyCell

    cells = []
    for value in values:
        if value is None or value is pd.NA or (isinstance(value, float) and value != value):
            cells.append(WriteOnlyCell(sheet, value=None))
        elif isinstance(value, str):
            cell = WriteOnlyCell(sheet, value=_NOT_IN_XML.sub(_escaped, value))
            cell.data_type = "s"
            cells.append(cell)
        else:
            cells.append(WriteOnlyCell(sheet, value=_plain(value)))
    return cells


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value openpyxl writes."""
    return value.item() if isinstance(value, np.generic) else value


def _escaped(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"
