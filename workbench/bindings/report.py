"""``BindingReport``: what a binding check found, one row per bound coded value, with the
views people ask of it: a summary, per element, per code, an OperationOutcome per
resource (as the HL7 validator gives them), an HTML page and an Excel workbook."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
import pyarrow as pa

from workbench.bindings.judge import Verdict
from workbench.extras import require
from workbench.fhirdata import ReadError
from workbench.marks import frame_html

#: The columns of ``BindingReport.frame``, in order.
COLUMNS = (
    "resource_type", "id", "location", "element", "profile", "strength", "valueset",
    "system", "code", "display", "result", "issue", "severity", "message",
)  # fmt: skip
_CATEGORIES = ("resource_type", "element", "profile", "strength", "valueset", "system",
               "issue", "severity")  # fmt: skip
_TX_ISSUE = "http://hl7.org/fhir/tools/CodeSystem/tx-issue-type"
_OUTCOME_CODE = {"not-found": "not-found", "structure": "structure", "required": "required"}
#: The tx-issue-type of an engine's reason, where the two differ.
_TX_TYPE = {"unknown-code": "invalid-code", "unknown-system": "not-found"}


class Problem(NamedTuple):
    """Something that kept part of the data from being checked: its ``kind``
    (``read``, ``unknown-type``, ``profile-not-loaded``, ``profile-of-another-type``,
    ``unusable-definition``), what it is about (``name``), how many resources it touched
    (``resources``) and a ``message``."""

    kind: str
    name: str
    resources: int
    message: str


#: The Arrow schema of the rows (what Spark and Dask results hold).
SCHEMA = pa.schema(
    [pa.field(name, pa.bool_() if name == "result" else pa.string()) for name in COLUMNS]
)


def report_table(rows: Sequence[tuple[Any, ...]], verdicts: Sequence[Verdict]) -> pa.Table:
    """The report's rows (``SCHEMA``) from walked rows (``walk.FIELDS``: texts, ids made
    text by the walk) and their verdicts."""
    fields = list(zip(*rows, strict=True)) if rows else [()] * 15
    judged = list(zip(*verdicts, strict=True)) if verdicts else [()] * 4
    picks = (0, 1, 2, 3, 4, 5, 6, 8, 9, 10)
    arrays = [pa.array(fields[i], pa.string()) for i in picks]
    arrays.append(pa.array(judged[0], pa.bool_()))
    arrays += [pa.array(judged[i], pa.string()) for i in (1, 2, 3)]
    return pa.table(arrays, schema=SCHEMA)


def unread_table(records: Sequence[ReadError], texts: Sequence[bytes]) -> pa.Table:
    """A row for each record of reading ``texts`` (JSON texts of a lazy check, numbered from
    1): nothing checked (``result`` missing), issue ``structure``, the record's severity and
    reason, with the start of the text it is about. A lazy check has no ``problems``: a
    text that is no resource is named in its rows."""
    messages = []
    for record in records:
        text = texts[record.line - 1] if record.line and record.line <= len(texts) else None
        shown = "" if text is None else text[:80].decode("utf-8", "replace")
        more = "..." if text is not None and len(text) > 80 else ""
        messages.append(f"{record.reason} (the text {shown}{more})" if shown else record.reason)
    return _unchecked(
        issue=["structure"] * len(records),
        severity=[r.severity for r in records],
        message=messages,
    )


#: The problems of a walk that a lazy check gives as rows.
_PROBLEM_ROWS = ("unknown-type", "profile-not-loaded", "profile-of-another-type")


def problem_table(problems: Sequence[Problem]) -> pa.Table:
    """A row for each problem of a lazy check's walk that touched resources (a resource type
    without a definition, a declared profile not loaded or of another type): nothing
    checked, issue ``not-found``, severity ``warning``, the problem's message (which counts
    the resources), the type or the profile not loaded in its column. The pandas report
    lists them in ``problems``; a lazy result has its rows only."""
    kept = [p for p in problems if p.kind in _PROBLEM_ROWS and p.resources]
    return _unchecked(
        resource_type=[p.name if p.kind == "unknown-type" else None for p in kept],
        profile=[p.name if p.kind == "profile-not-loaded" else None for p in kept],
        issue=["not-found"] * len(kept),
        severity=["warning"] * len(kept),
        message=[p.message for p in kept],
    )


def _unchecked(**given: Sequence[str | None]) -> pa.Table:
    """Rows of nothing checked (``SCHEMA``): the text columns ``given``, every other one
    (``result`` too) empty."""
    n = len(given["message"])
    columns = [
        pa.array(given[name], pa.string())
        if name in given
        else pa.nulls(n, pa.bool_() if name == "result" else pa.string())
        for name in COLUMNS
    ]
    return pa.table(columns, schema=SCHEMA)


def report_frame(table: pa.Table) -> pd.DataFrame:
    """The report's pandas frame of a table of rows: repeated texts as categories, the
    result as a nullable boolean."""
    frame = table.to_pandas()
    frame["result"] = frame["result"].astype("boolean")
    for name in COLUMNS:
        if name in _CATEGORIES and str(frame[name].dtype) != "category":
            frame[name] = frame[name].astype("category")
        elif name not in _CATEGORIES and str(frame[name].dtype) == "category":
            frame[name] = frame[name].astype(object)
    return frame


@dataclass
class BindingReport:
    """What ``Workbench.check_bindings`` found: ``frame`` (one row per bound coded value,
    ``COLUMNS``), ``problems`` (what could not be checked) and how many ``resources``
    were read."""

    frame: pd.DataFrame
    problems: tuple[Problem, ...]
    resources: int

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def errors(self) -> pd.DataFrame:
        """The rows at error severity."""
        return self.frame[self.frame["severity"] == "error"]

    def summary(self) -> pd.DataFrame:
        """Counts: resources read, bound values, valid, not valid, unchecked, and the rows
        per severity; one column ``count``."""
        f = self.frame
        counts = {
            "resources": self.resources,
            "bound values": len(f),
            "valid": int((f["result"] == True).sum()),  # noqa: E712 (a nullable column)
            "not valid": int((f["result"] == False).sum()),  # noqa: E712
            "unchecked": int(f["result"].isna().sum()),
        }
        for severity in ("error", "warning", "information"):
            counts[severity + "s"] = int((f["severity"] == severity).sum())
        counts["problems"] = len(self.problems)
        return pd.DataFrame({"count": counts})

    def by_element(self) -> pd.DataFrame:
        """Per bound element (type, element, profile, strength, value set): values, valid,
        not valid, unchecked, errors and warnings; the most errors first."""
        keys = ["resource_type", "element", "profile", "strength", "valueset"]
        return _tallied(self.frame, keys, ["errors", "values"])

    def by_code(self) -> pd.DataFrame:
        """Per value set and code (system, code, display): how often, the result, the
        issue and message of its first row, and in how many resources; the most
        frequent problems first."""
        keys = ["valueset", "system", "code", "display"]
        firsts = {"result": "first", "issue": "first", "severity": "first", "message": "first"}
        return _tallied(self.frame, keys, ["errors", "values"], firsts)

    def outcomes(self) -> dict[str, dict[str, Any]]:
        """An OperationOutcome per resource with an issue (``"Type/id"`` keys), each issue
        shaped like the HL7 validator's: severity, code, a tx-issue-type coding, the
        message as text and the location as ``expression``."""
        found: dict[str, dict[str, Any]] = {}
        issues = self.frame[self.frame["severity"].notna()]
        for row in issues.itertuples(index=False):
            key = f"{row.resource_type}/{row.id}"
            outcome = found.setdefault(key, {"resourceType": "OperationOutcome", "issue": []})
            outcome["issue"].append(_issue(row))
        return found

    def to_html(self, path: str | Path, *, title: str = "Binding check") -> Path:
        """Write a self-contained HTML page: the summary, the problems, the elements and
        the codes with issues. Returns the path."""
        path = Path(path)
        problems = pd.DataFrame(self.problems, columns=list(Problem._fields))
        codes = self.by_code()
        parts = [
            f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
            "</title></head><body>",
            f"<h1>{html.escape(title)}</h1>",
            self.summary().to_html(),
            "<h2>Problems</h2>", problems.to_html(index=False) if len(problems) else "<p>None.</p>",
            "<h2>By element</h2>", frame_html(self.by_element().head(1000)),
            "<h2>Codes with issues</h2>", frame_html(codes[codes["errors"] > 0].head(1000)),
            "</body></html>",
        ]  # fmt: skip
        path.write_text("\n".join(parts), encoding="utf-8")
        return path

    def to_excel(self, path: str | Path) -> Path:
        """Write an ``.xlsx`` workbook (needs openpyxl): sheets ``Summary``, ``By element``,
        ``By code``, ``Problems`` and ``Rows`` (at most a million). Returns the path."""
        require("openpyxl", "quality", "Excel reports")
        path = Path(path)
        problems = pd.DataFrame(self.problems, columns=list(Problem._fields))
        with pd.ExcelWriter(path, engine="openpyxl") as book:
            self.summary().to_excel(book, sheet_name="Summary")
            _plain(self.by_element()).to_excel(book, sheet_name="By element", index=False)
            _plain(self.by_code()).to_excel(book, sheet_name="By code", index=False)
            problems.to_excel(book, sheet_name="Problems", index=False)
            _plain(self.frame.head(1_000_000)).to_excel(book, sheet_name="Rows", index=False)
        return path

    def __repr__(self) -> str:
        s = self.summary()["count"]
        return (
            f"<BindingReport {s['resources']:,} resources, {s['bound values']:,} bound values: "
            f"{s['errors']:,} errors, {s['warnings']:,} warnings, {s['unchecked']:,} unchecked; "
            f"{len(self.problems)} problems>"
        )

    def _repr_html_(self) -> str:
        head = html.escape(repr(self))
        return f"<p>{head}</p>" + frame_html(self.by_element().head(20))


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.astype({c: object for c in frame.columns if str(frame[c].dtype) == "category"})


def _tallied(
    frame: pd.DataFrame, keys: list[str], order: list[str], firsts: dict[str, str] | None = None
) -> pd.DataFrame:
    """Rows counted per ``keys`` (values, valid, not valid, unchecked, errors, warnings;
    with ``firsts``: those columns' first value, and the resources), ``order`` first."""
    f = frame.assign(
        values=1,
        valid=(frame["result"] == True).fillna(False).astype(int),  # noqa: E712
        not_valid=(frame["result"] == False).fillna(False).astype(int),  # noqa: E712
        unchecked=frame["result"].isna().astype(int),
        errors=(frame["severity"] == "error").astype(int),
        warnings=(frame["severity"] == "warning").astype(int),
    )
    counted = ["values", "valid", "not_valid", "unchecked", "errors", "warnings"]
    how: dict[str, Any] = {name: (name, "sum") for name in counted}
    how.update({name: (name, first) for name, first in (firsts or {}).items()})
    if firsts:
        f = f.assign(resource=f["resource_type"].astype(str) + "/" + f["id"].astype(str))
        how["resources"] = ("resource", "nunique")
    grouped = f.assign(**{k: f[k].astype(object) for k in keys})
    out = grouped.groupby(keys, dropna=False, sort=False).agg(**how)
    return (
        out.reset_index().sort_values(order, ascending=False, kind="stable").reset_index(drop=True)
    )


def _issue(row: Any) -> dict[str, Any]:
    code = _OUTCOME_CODE.get(str(row.issue), "code-invalid")
    if row.severity == "information":
        code = "informational"
    issue: dict[str, Any] = {"severity": row.severity, "code": code}
    if row.issue not in (None, "structure", "required"):
        tx_type = _TX_TYPE.get(str(row.issue), str(row.issue))
        issue["details"] = {"coding": [{"system": _TX_ISSUE, "code": tx_type}],
                            "text": row.message}  # fmt: skip
    else:
        issue["details"] = {"text": row.message}
    issue["expression"] = [row.location]
    return issue
