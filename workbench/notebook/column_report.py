"""ColumnReport: counts per reason, a chart of the top invalid codes, and the failing rows."""

from __future__ import annotations

import io
from typing import Any

import ipywidgets as w

from workbench.notebook import views
from workbench.report import ValidationFrame


class ColumnReport(w.VBox):
    """Show a ``validate_column`` result: counts, a bar chart, failing rows by reason."""

    def __init__(self, result: ValidationFrame, *, top: int = 10, rows: int = 50) -> None:
        self.report = result
        self.rows = rows
        self.top = top
        self.summary = result.summary(top=top)
        self.counts = w.HTML(self._counts_html())
        self.chart = w.Image(format="png", value=self._chart_png())
        failing = set(result.failure_cases["issue"].dropna().astype(str))
        reasons = [str(r) for r in self.summary.counts.index if str(r) in failing]
        self.reason = w.Dropdown(options=["all failures", *reasons], description="Reason")
        self.table = w.HTML()
        super().__init__([self.counts, self.chart, self.reason, self.table])
        self.add_class("workbench-column-report")
        self.reason.observe(self._show_rows, "value")
        self._show_rows()

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

    def _chart_png(self) -> bytes:
        figure = self.summary.plot(top=self.top)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=80)
        return buffer.getvalue()

    def _show_rows(self, _: Any = None) -> None:
        failures = self.report.failure_cases
        if self.reason.value != "all failures":
            failures = failures[failures["issue"] == self.reason.value]
        self.shown = failures
        self.table.value = f"<div>{len(failures):,} rows</div>" + views.frame_table(
            failures, self.rows
        )
