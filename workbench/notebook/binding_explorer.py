"""BindingExplorer: a binding check's findings, from the bound elements with issues to
their codes, and from a code to the resources (and places in them) that hold it."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as w
import pandas as pd

from workbench.bindings.report import BindingReport
from workbench.marks import frame_html

#: How many elements, codes and resources the lists show (the most errors first).
SHOWN = 200


class BindingExplorer(w.VBox):
    """Explore a ``BindingReport``: ``elements`` lists the bound elements with an issue
    (errors first), ``codes`` the codes of the element chosen, ``resources`` the resources
    holding the code chosen, and ``detail`` the rows of the resource chosen. In a notebook:
    ``BindingExplorer(wb.check_bindings("export/"))``.
    """

    def __init__(
        self, report: BindingReport, *, severities: tuple[str, ...] = ("error", "warning")
    ) -> None:
        self.report = report
        frame = report.frame
        self.issues = frame[frame["severity"].isin(severities)]
        self.head = w.HTML(f"<b>{html.escape(repr(report))}</b>")
        self._keys: dict[str, list[tuple[str, str]]] = {
            "elements": [],
            "codes": [],
            "resources": [],
        }
        self.elements = w.Select(options=self._elements(), rows=8, description="Elements")
        self.codes = w.Select(options=[], rows=8, description="Codes")
        self.resources = w.Select(options=[], rows=8, description="Resources")
        self.detail = w.HTML()
        layout = w.Layout(width="100%")
        for part in (self.elements, self.codes, self.resources):
            part.layout = layout
        self.elements.observe(self._on_element, names="value")
        self.codes.observe(self._on_code, names="value")
        self.resources.observe(self._on_resource, names="value")
        super().__init__([self.head, self.elements, self.codes, self.resources, self.detail])
        self.elements.value = 0 if self.elements.options else None
        self._on_element()

    def _options(
        self, kind: str, found: list[tuple[str, tuple[str, str]]]
    ) -> list[tuple[str, int]]:
        """Options of a list (labels, and their positions as values: ipywidgets takes no
        tuples as values), the keys kept by position."""
        self._keys[kind] = [key for _, key in found]
        return [(label, i) for i, (label, _) in enumerate(found)]

    def _key(self, kind: str, chosen: int | None) -> tuple[str, str] | None:
        return None if chosen is None else self._keys[kind][chosen]

    def _elements(self) -> list[tuple[str, int]]:
        tally = (
            self.issues.groupby(["element", "valueset"], observed=True)
            .agg(errors=("severity", lambda s: int((s == "error").sum())), rows=("id", "size"))
            .reset_index()
            .sort_values(["errors", "rows"], ascending=False, kind="stable")
            .head(SHOWN)
        )
        found = [
            (
                f"{r.element} ({r.valueset}): {r.errors} errors, {r.rows} rows",
                (str(r.element), str(r.valueset)),
            )
            for r in tally.itertuples()
        ]
        return self._options("elements", found)

    def _chosen(self) -> pd.DataFrame:
        key = self._key("elements", self.elements.value)
        if key is None:
            return self.issues.iloc[:0]
        element, valueset = key
        f = self.issues
        return f[(f["element"] == element) & (f["valueset"] == valueset)]

    def _on_element(self, _: Any = None) -> None:
        rows = self._chosen()
        codes = (
            rows.assign(
                system=rows["system"].astype(object).fillna(""),
                code=rows["code"].astype(object).fillna(""),
            )
            .groupby(["system", "code", "issue"], observed=True)
            .size()
            .sort_values(ascending=False, kind="stable")
            .head(SHOWN)
        )
        options: list[tuple[str, tuple[str, str]]] = []
        for key, n in codes.items():
            system, code, issue = (str(part) for part in key)  # type: ignore[attr-defined]
            label = f"{system or '(no system)'}#{code or '(no code)'}: {issue}, {n} rows"
            options.append((label, (system, code)))
        self._refill(self.codes, self._options("codes", options), self._on_code)

    def _with_code(self) -> pd.DataFrame:
        rows = self._chosen()
        key = self._key("codes", self.codes.value)
        if key is None:
            return rows.iloc[:0]
        system, code = key
        same_system = rows["system"].astype(object).fillna("") == system
        return rows[same_system & (rows["code"].astype(object).fillna("") == code)]

    def _on_code(self, _: Any = None) -> None:
        rows = self._with_code()
        keys = rows[["resource_type", "id"]].astype(str).drop_duplicates().head(SHOWN)
        found = [(f"{t}/{i}", (str(t), str(i))) for t, i in keys.itertuples(index=False)]
        self._refill(self.resources, self._options("resources", found), self._on_resource)

    def _refill(self, select: w.Select, options: list[tuple[str, int]], then: Any) -> None:
        """New options, the first chosen, and ``then`` run once."""
        select.unobserve(then, names="value")
        select.options = options
        select.value = 0 if options else None
        select.observe(then, names="value")
        then()

    def _on_resource(self, _: Any = None) -> None:
        key = self._key("resources", self.resources.value)
        if key is None:
            self.detail.value = "<p>No issues.</p>" if not len(self.issues) else ""
            return
        kind, rid = key
        f = self.report.frame
        rows = f[
            (f["resource_type"] == kind) & (f["id"].astype(str) == rid) & f["severity"].notna()
        ]
        shown = rows[["location", "code", "display", "result", "severity", "message"]]
        self.detail.value = f"<h4>{html.escape(kind)}/{html.escape(rid)}</h4>" + frame_html(shown)
