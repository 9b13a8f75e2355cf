"""ColumnReport: which codes fail, how often, why, and what they probably should be; then the
failing rows, a chart, and exports."""

from __future__ import annotations

import base64
import warnings
from collections.abc import Mapping
from typing import Any

import ipywidgets as w
import pandas as pd
from itables.widget import ITable

from workbench.bulk.report import EXPORTS, ValidationFrame, VegaLite, visible
from workbench.errors import InvalidRequestError
from workbench.notebook import views

ALL = "all failures"
FORMATS = [("CSV", "csv"), ("Excel", "xlsx"), ("Parquet", "parquet")]
WHAT = [("distinct codes", "by_code"), ("failing rows", "failures")]
# the widget shows what was probably meant next to the code; by_code() keeps its own order
SHOWN_COLUMNS = [
    "code",
    "count",
    "share",
    "issue",
    "suggestion",
    "suggested_display",
    "display",
    "message",
    "result",
    "system",
]
TABLE_OPTIONS: dict[str, Any] = {
    "pageLength": 10,
    "lengthMenu": [10, 25, 50, 100],
    "buttons": ["pageLength", "copyHtml5", "csvHtml5", "excelHtml5"],
    # no "nowrap": long messages wrap (columnDefs below keep codes and numbers on one line)
    "classes": "display compact",
    "showIndex": False,
    "maxBytes": "256KB",
    "autoWidth": False,
}
#: The width a wrapping message column takes in the tables.
MESSAGE_WIDTH = "28em"
#: The width a wrapping display column takes in the tables.
DISPLAY_WIDTH = "14em"
_WIDTHS = {
    "message": MESSAGE_WIDTH,
    "display": DISPLAY_WIDTH,
    "suggested_display": DISPLAY_WIDTH,
    "system": DISPLAY_WIDTH,
}


def column_defs(columns: list[str]) -> list[dict[str, Any]]:
    """DataTables column settings: messages, displays and systems wrap (within
    ``MESSAGE_WIDTH`` and ``DISPLAY_WIDTH``) so that the table fits the output area; the
    other columns stay on one line (a code never breaks)."""
    defs: list[dict[str, Any]] = [
        {
            "targets": [i for i, c in enumerate(columns) if c == name],
            "width": width,
            "className": "dt-body-left",
        }
        for name, width in _WIDTHS.items()
    ]
    rest = [i for i, c in enumerate(columns) if c not in _WIDTHS]
    return [*(d for d in defs if d["targets"]), {"targets": rest, "className": "dt-nowrap"}]


class ColumnReport(w.VBox):
    """Show a ``validate_column`` result, distinct codes first.

    ``ColumnReport(result)`` takes what ``validate_column`` (or ``df.fhir.validate``)
    returned. Given a raw DataFrame or Series instead, it validates it when told against
    what (``ColumnReport(df, valueset=URL, code="column")``), and otherwise says what to do.

    The parts: ``counts`` (rows valid, rows per reason); ``issue``, the reason filter
    (``reason`` is its deprecated name); ``codes``, an interactive table of
    ``result.by_code()`` (paged, sortable, searchable; odd whitespace made visible);
    ``chart``, a Vega-Lite chart that follows the filter; ``table``, the failing rows; and
    an export of either table as CSV, Excel or Parquet (``export_format``, ``export_what``,
    ``export_button``, ``download``).
    """

    def __init__(
        self,
        result: Any,
        valueset: str | Mapping[str, Any] | None = None,
        *,
        code: str | None = None,
        system: str | None = None,
        system_column: str | None = None,
        display: str | None = None,
        workbench: Any = None,
        top: int = 10,
        rows: int = 50,
    ) -> None:
        systems = (system, system_column)
        self.report = _as_report(result, valueset, code, systems, display, workbench)
        self.top = top
        self.rows = rows
        self.summary = self.report.summary(top=top)
        self.by_code = self.report.by_code()
        self.counts = w.HTML(self._counts_html())
        failing = set(self.report.failure_cases["issue"].dropna().astype(str))
        reasons = [str(r) for r in self.summary.counts.index if str(r) in failing]
        self.issue = w.Dropdown(options=[ALL, *reasons], description="Reason")
        self.show_valid = w.Checkbox(value=False, description="show valid codes too")
        self.codes_caption = w.HTML()
        self.codes = ITable(
            self._codes_shown(), **TABLE_OPTIONS, columnDefs=column_defs(SHOWN_COLUMNS)
        )
        self.chart = w.Output()
        self.rows_caption = w.HTML()
        rows_shown = self._rows_shown()
        self.table = ITable(
            rows_shown,
            **{**TABLE_OPTIONS, "showIndex": True},
            # with the index shown, DataTables counts it as the first column
            columnDefs=column_defs(["", *map(str, rows_shown.columns)]),
        )
        self.export_format = w.Dropdown(options=FORMATS, value="csv", description="Export")
        self.export_what = w.ToggleButtons(options=WHAT, value="by_code")
        self.export_button = w.Button(description="Download", icon="download")
        self.download = w.HTML()
        failing_rows = w.Accordion(children=[w.VBox([self.rows_caption, self.table])])
        failing_rows.set_title(0, "Failing rows")
        super().__init__(
            [
                self.counts,
                w.HBox([self.issue, self.show_valid]),
                self.codes_caption,
                self.codes,
                self.chart,
                failing_rows,
                w.HBox([self.export_format, self.export_what, self.export_button]),
                self.download,
            ]
        )
        self.add_class("workbench-column-report")
        self.issue.observe(self._refresh, "value")
        self.show_valid.observe(self._refresh, "value")
        self.export_button.on_click(self._export)
        for control in (self.export_format, self.export_what):
            control.observe(self._clear_download, "value")
        self._refresh()

    @property
    def reason(self) -> w.Dropdown:
        """Deprecated name of ``issue`` (the reason filter)."""
        warnings.warn(
            "ColumnReport.reason is deprecated: use ColumnReport.issue (the name the report's "
            "columns use)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.issue

    # --- what is shown --------------------------------------------------------------

    def _counts_html(self) -> str:
        s = self.summary
        share = f"{s.valid / s.rows:.1%}" if s.rows else "n/a"
        rows = "".join(
            f"<tr><td>{views.esc(k)}</td><td style='text-align:right'>{v:,}</td></tr>"
            for k, v in s.counts.items()
        )
        return (
            f"<p><b>{s.valid:,}</b> of {s.rows:,} rows valid ({share})</p>"
            f"<table class='workbench-counts'>{rows}</table>"
        )

    def _selected_codes(self) -> pd.DataFrame:
        """The rows of ``by_code()`` the filters select (data as it is, not for showing)."""
        frame = pd.DataFrame(self.by_code)
        if not self.show_valid.value:
            frame = frame[~frame["result"].fillna(False).astype(bool)]
        if self.issue.value != ALL:
            frame = frame[frame["issue"] == self.issue.value]
        return frame.reset_index(drop=True)

    def _codes_shown(self) -> pd.DataFrame:
        shown = self._selected_codes().astype(object)
        for column in ("code", "suggestion", "suggested_display", "display"):
            shown[column] = shown[column].map(visible)
        shown["share"] = [f"{v:.1%}" for v in self._selected_codes()["share"]]
        return shown.where(shown.notna(), "")[SHOWN_COLUMNS]

    def _rows_shown(self) -> pd.DataFrame:
        failures = self.report.failure_cases
        if self.issue.value != ALL:
            failures = failures[failures["issue"] == self.issue.value]
        self.shown = failures
        shown = pd.DataFrame(failures).astype(object)  # a plain frame for itables
        shown["code"] = shown["code"].map(visible)
        return shown.where(shown.notna(), "")

    def _refresh(self, _: Any = None) -> None:
        selected = self._selected_codes()
        self.selected = selected
        what = "codes" if self.show_valid.value else "failing codes"
        self.codes_caption.value = (
            f"<b>{len(selected):,} distinct {what}</b>"
            + (f" ({views.esc(self.issue.value)})" if self.issue.value != ALL else "")
            + ", most frequent first"
        )
        # itables drops columnDefs on update unless they are given again
        self.codes.update(self._codes_shown(), columnDefs=column_defs(SHOWN_COLUMNS))
        rows_shown = self._rows_shown()
        self.table.update(rows_shown, columnDefs=column_defs(["", *map(str, rows_shown.columns)]))
        self.rows_caption.value = f"<div>{len(self.shown):,} rows</div>"
        issue = None if self.issue.value == ALL else str(self.issue.value)
        self.chart_spec = self.summary.chart(top=self.top, issue=issue, by_code=self.by_code)
        self.chart.outputs = (_display_data(self.chart_spec),)
        self._clear_download()

    # --- export ---------------------------------------------------------------------

    def export(self, fmt: str | None = None, what: str | None = None) -> bytes:
        """The chosen table (distinct codes as filtered, or failing rows as filtered) as
        ``csv``, ``xlsx`` or ``parquet`` bytes; codes exactly as given."""
        from workbench.bulk.report import export_frame

        fmt = fmt or self.export_format.value
        what = what or self.export_what.value
        frame = self._selected_codes() if what == "by_code" else self.shown
        return export_frame(pd.DataFrame(frame), str(fmt))

    def _export(self, _: Any = None) -> None:
        fmt, what = str(self.export_format.value), str(self.export_what.value)
        data = base64.b64encode(self.export(fmt, what)).decode()
        name = f"{'codes' if what == 'by_code' else 'failing-rows'}.{fmt}"
        self.download.value = (
            f"<a download='{name}' href='data:{EXPORTS[fmt]};base64,{data}'>⬇ {views.esc(name)}</a>"
        )

    def _clear_download(self, _: Any = None) -> None:
        self.download.value = ""


def _display_data(chart: VegaLite) -> dict[str, Any]:
    return {"output_type": "display_data", "data": chart._repr_mimebundle_(), "metadata": {}}


def _as_report(
    result: Any,
    valueset: str | Mapping[str, Any] | None,
    code: str | None,
    systems: tuple[str | None, str | None],
    display: str | None,
    workbench: Any,
) -> ValidationFrame:
    """The validation to show: ``result`` itself, or ``result`` validated when it is raw
    data and a value set is given."""
    if isinstance(result, ValidationFrame) and result._is_complete():
        return result
    if isinstance(result, (pd.DataFrame, pd.Series)):
        if valueset is not None:
            from workbench.selection import current

            wb = workbench if workbench is not None else current()
            validated = wb.validate_column(
                result,
                valueset,
                code=code,
                system=systems[0],
                system_column=systems[1],
                display=display,
            )
            assert isinstance(validated, ValidationFrame)
            return validated
        columns = list(result.columns) if isinstance(result, pd.DataFrame) else None
        call = (
            f"df.fhir.validate(VALUESET, code={str(columns[0])!r})"
            if columns
            else "s.fhir.validate(VALUESET)"
        )
        raise InvalidRequestError(
            "ColumnReport shows the result of validate_column, and this is raw data"
            + (f" (columns {[str(c) for c in columns]})" if columns else "")
            + f". Validate it first: ColumnReport({call}), or let the report do it: "
            "ColumnReport(data, valueset=VALUESET, code=COLUMN)."
        )
    raise InvalidRequestError(
        f"ColumnReport takes the result of validate_column, not {type(result).__name__}"
    )
