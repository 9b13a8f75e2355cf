"""VersionDiff: pick a code system or value set loaded in several versions, two of its
versions, and see what changed (``Workbench.diff``): counts per kind and the
codes of the kind chosen."""

from __future__ import annotations

import html

import ipywidgets as w

from workbench.errors import WorkbenchError
from workbench.notebook import views
from workbench.terminology.diff import KINDS, Diff
from workbench.workbench import Workbench


def versioned(wb: Workbench) -> dict[str, list[str]]:
    """The code systems and value sets loaded in two versions or more: url -> versions."""
    found: dict[str, list[str]] = {}
    for frame in (wb.codesystems, wb.valuesets):
        for url, versions in frame.dropna(subset=["version"]).groupby("url")["version"]:
            distinct = sorted({str(v) for v in versions if v})
            if len(distinct) > 1:
                found.setdefault(str(url), distinct)
    return found


class VersionDiff(w.VBox):
    """Two versions of one code system or value set side by side: ``url``, ``from_version``
    and ``to_version`` choose them (``versioned``: those loaded in several versions),
    ``kind`` the change shown in ``table`` (its first ``limit`` codes). ``.diff`` holds the
    last Diff (None when the choice is refused, ``summary`` then says why; its counts per
    kind are in ``summary``, ``widget.diff.chart()`` draws them).

    In a notebook::

        VersionDiff(wb, "http://hl7.org/fhir/sid/icd-10-cm", "2025", "2026")
    """

    def __init__(
        self,
        wb: Workbench,
        url: str | None = None,
        from_version: str | None = None,
        to_version: str | None = None,
        *,
        limit: int = 50,
    ) -> None:
        self.wb = wb
        self.limit = limit
        self.diff: Diff | None = None
        self.choices = versioned(wb)
        wide = w.Layout(width="98%")
        self.url = w.Dropdown(options=sorted(self.choices), description="Resource", layout=wide)
        self.from_version = w.Dropdown(description="From")
        self.to_version = w.Dropdown(description="To")
        self.kind = w.ToggleButtons(options=list(KINDS), value=KINDS[0])
        self.summary = w.HTML(layout=wide)
        self.table = w.HTML(layout=wide)
        if url is not None:
            self.choices.setdefault(url, [])
            self.url.options = sorted(self.choices)
            self.url.value = url
        self._versions()
        if from_version is not None:
            self.from_version.value = from_version
        if to_version is not None:
            self.to_version.value = to_version
        self.url.observe(lambda _: self._versions(), names="value")
        for widget in (self.from_version, self.to_version):
            widget.observe(lambda _: self.refresh(), names="value")
        self.kind.observe(lambda _: self._show_table(), names="value")
        super().__init__(
            [
                self.url,
                w.HBox([self.from_version, self.to_version]),
                self.summary,
                self.kind,
                self.table,
            ]
        )
        self.refresh()

    def _versions(self) -> None:
        """The chosen url's versions in both pickers: the last two, oldest first."""
        versions = self.choices.get(self.url.value or "", [])
        self.from_version.options = versions
        self.to_version.options = versions
        if len(versions) > 1:
            self.from_version.value, self.to_version.value = versions[-2], versions[-1]
        self.refresh()

    def refresh(self) -> None:
        """Diff the chosen versions and show the counts and the table."""
        url, a, b = self.url.value, self.from_version.value, self.to_version.value
        if not url or a is None or b is None:
            self.diff, self.summary.value, self.table.value = None, "", ""
            return
        try:
            self.diff = self.wb.diff(url, a, b)
        except WorkbenchError as exc:
            self.diff, self.table.value = None, ""
            self.summary.value = views.message(str(exc))
            return
        counts = self.diff.counts
        self.kind.options = list(KINDS)
        self.kind.tooltips = [f"{counts[k]:,} codes" for k in KINDS]
        self.summary.value = self.diff._repr_html_()
        self._show_table()

    def _show_table(self) -> None:
        if self.diff is None:
            self.table.value = ""
            return
        rows = self.diff.of(self.kind.value)
        more = len(rows) - self.limit
        note = f"<p>… and {more:,} more</p>" if more > 0 else ""
        shown = rows.drop(columns=["system", "change"])
        self.table.value = (
            f"<b>{html.escape(self.kind.value)}</b>: {len(rows):,} codes"
            + views.frame_table(shown, self.limit)
            + note
        )
