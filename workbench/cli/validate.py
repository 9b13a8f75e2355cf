"""``workbench validate``: a column of a file checked in streamed batches, the counts summed."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
import pandas as pd

from workbench.bulk.charting import BY_CODE
from workbench.cli import reading
from workbench.cli.distinct import KEPT_KEYS, Distinct
from workbench.workbench import Workbench

if TYPE_CHECKING:  # (imported where used: the progress bar on a terminal, the reports)
    from rich.progress import Progress

    from workbench.bulk.sharing import ReportContent


@dataclass
class Tally:
    """What the batches said: rows, valid rows, rows per reason, failing codes."""

    rows: int = 0
    valid: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    invalid: Counter[tuple[Any, Any, Any]] = field(default_factory=Counter)
    messages: dict[tuple[Any, Any, Any], Any] = field(default_factory=dict)
    suggester: Any = None
    #: The suggestion found for a failing code (None: none), each looked for once.
    suggested: dict[tuple[Any, Any, Any], Any] = field(default_factory=dict)

    def add(self, result: Any, counts: np.ndarray | None = None) -> None:
        """Count a ValidationFrame (and keep each failing code's message): each of its rows
        stands for ``counts`` rows of the file (one each when not given)."""
        rows = np.ones(len(result), np.int64) if counts is None else counts
        self.rows += int(rows.sum())
        self.valid += int(rows[result["result"].fillna(False).astype(bool).to_numpy()].sum())
        ids, reasons = pd.factorize(result.reason)
        for reason, count in zip(reasons, np.bincount(ids, weights=rows), strict=True):
            self.reasons[reason] += int(count)
        failures = result.failure_cases
        failures = pd.DataFrame(failures[(failures["issue"] != "missing").to_numpy()])
        if len(failures):
            failures["rows"] = rows[failures.index.to_numpy()]  # the result's index: 0..n-1
            grouped = failures.groupby(["code", "system", "issue"], dropna=False, sort=False)
            counted = grouped.agg(size=("rows", "sum"), first=("message", "first"))
            for key, count, message in zip(
                counted.index, counted["size"], counted["first"], strict=True
            ):
                self.invalid[key] += int(count)
                self.messages.setdefault(key, message)
        self.suggester = self.suggester or result.suggester

    @property
    def percent(self) -> float:
        """The valid share in percent (100 for no rows)."""
        return 100.0 if self.rows == 0 else 100.0 * self.valid / self.rows

    def passed(self, fail_under: float) -> bool:
        """Whether the valid share reached ``fail_under`` percent (the exit code 0)."""
        return self.percent >= fail_under

    @property
    def empty(self) -> bool:
        """True when there is no code to validate: no rows, or every row missing its code."""
        return self.rows == self.reasons.get("missing", 0)

    def suggestion(self, key: tuple[Any, Any, Any]) -> Any:
        """What the column report suggests for a failing (code, system, issue) key, the
        report's own suggester asked once per key (None when it has none)."""
        self.suggest([key])
        return self.suggested[key]

    def suggest(self, keys: list[tuple[Any, Any, Any]]) -> None:
        """Ask the suggester about the keys not asked yet, all at once (``Suggester.many``:
        the codes of a system are compared with its candidates in one pass)."""
        wanted = [key for key in dict.fromkeys(keys) if key not in self.suggested]
        if not wanted:
            return
        if self.suggester is None:
            found = [None] * len(wanted)
        else:
            found = self.suggester.many([(system, code, issue) for code, system, issue in wanted])
        self.suggested.update(zip(wanted, found, strict=True))

    def to_json(self, **about: Any) -> dict[str, Any]:
        """The summary as a JSON object (``about`` names the file, column and value set)."""
        top = [
            {"code": code, "system": system, "issue": issue, "count": count}
            for (code, system, issue), count in self.invalid.most_common(20)
        ]
        return {
            **about,
            "rows": self.rows,
            "valid": self.valid,
            "valid_percent": round(self.percent, 4),
            "reasons": dict(self.reasons.most_common()),
            "top_invalid": top,
        }

    def content(self, title: str, about: dict[str, Any]) -> ReportContent:
        """The summary as a shared report's content: its by-code table lists the failing
        codes (missing values are a reason), suggestions for the SUGGESTED most frequent."""
        from workbench.bulk.sharing import ReportContent

        rows = []
        self.suggest([key for key, _ in self.invalid.most_common(SUGGESTED)])
        for rank, ((code, system, issue), count) in enumerate(self.invalid.most_common()):
            message = self.messages.get((code, system, issue))
            found = self.suggestion((code, system, issue)) if rank < SUGGESTED else None
            if found is not None:
                text = found.text()
                message = f"{message}; {text}" if message else text.capitalize()
            rows.append(
                {
                    "code": code,
                    "count": count,
                    "issue": issue,
                    "suggestion": found.code if found is not None else None,
                    "result": False,
                    "display": None,
                    "suggested_display": found.display if found is not None else None,
                    "share": count / max(self.rows, 1),
                    "system": system,
                    "message": message,
                }
            )
        table = pd.DataFrame.from_records(rows, columns=BY_CODE).astype(object)
        table["count"] = table["count"].astype("int64")
        table["share"] = table["share"].astype("float64")
        about = {k: str(v) for k, v in about.items() if v is not None}
        reasons = {str(k): int(v) for k, v in self.reasons.most_common()}
        return ReportContent(title, self.rows, self.valid, reasons, table, about)

    def lines(self, fail_under: float = 100.0) -> list[str]:
        """The summary printed on stdout: the rows, the valid ones, the rows per reason, the
        most frequent invalid codes with what the column report suggests for each, and one
        last PASS or FAIL line (``--fail-under``). A column with no code to validate (no
        rows, or every row missing) says so instead of a valid share."""
        out = [f"rows: {self.rows}"]
        if self.rows == 0:
            out.append("valid: none (the column has no rows: nothing to validate)")
        elif self.empty:
            out.append(f"valid: none (the column is empty: all {self.rows} rows lack a code)")
        else:
            out.append(f"valid: {self.valid} ({_percent(self.percent)})")
        out += [f"  {reason}: {count}" for reason, count in self.reasons.most_common()]
        if self.invalid:
            out.append("most frequent invalid codes:")
            shown = self.invalid.most_common(10)
            self.suggest([key for key, _ in shown])
            out += [self._failing(key, count) for key, count in shown]
        return [*out, self.verdict(fail_under)]

    def _failing(self, key: tuple[Any, Any, Any], count: int) -> str:
        """One failing code's line, with the suggestion beside it (its display elided to
        keep the line within WIDTH; the codes are never cut)."""
        code, _, issue = key
        line = f"  {code!r} {issue} ({count})"
        found = self.suggestion(key)
        if found is None:
            return line
        hint = f"{line}: did you mean {found.code!r}"
        display = str(found.display or "")
        room = WIDTH - len(hint) - len(" ()?")
        if display and len(display) > room:
            display = display[: room - 1] + "…" if room > 8 else ""
        return f"{hint} ({display})?" if display else f"{hint}?"

    def verdict(self, fail_under: float) -> str:
        """The last line: PASS when the valid share reached ``fail_under`` (exit code 0),
        else FAIL (exit code 1)."""
        limit = f"--fail-under {fail_under:g}"
        if self.rows == 0:
            return f"PASS: no rows to validate ({limit})"
        share = f"{self.valid} of {self.rows} rows valid ({_percent(self.percent)})"
        if self.passed(fail_under):
            return f"PASS: {share}, at least {limit}"
        return f"FAIL: {share}, below {limit}"


#: The width the summary's lines keep within (a terminal's).
WIDTH = 80


def _percent(value: float) -> str:
    """A share in percent with two decimals; a share short of 100 never shows as 100.00%
    (99.999% is 99.99%: 100.00% reads as all valid)."""
    return "99.99%" if 99.99 < value < 100 else f"{value:.2f}%"


@dataclass(frozen=True)
class Job:
    """What to validate: the file's column, the value set, the optional columns."""

    table: reading.Table
    column: str
    valueset: Any
    system: str | None
    system_column: str | None
    display_column: str | None


def run(wb: Workbench, job: Job) -> Tally:
    """Validate the file batch by batch: the rows are counted per distinct key (code,
    system, display), and each key is decided once by ``wb.validate_column`` (at the end,
    or whenever KEPT_KEYS are held), its answer counted for all its rows."""
    columns = list(
        dict.fromkeys(c for c in (job.column, job.system_column, job.display_column) if c)
    )
    tally, distinct = Tally(), Distinct(columns)
    with _progress(reading.count_rows(job.table)) as (progress, task):
        for batch in reading.arrow_batches(job.table, columns):
            distinct.add(batch)
            if len(distinct) >= KEPT_KEYS:
                _decide(wb, job, distinct, tally)
            if progress is not None:
                progress.advance(task, batch.num_rows)
        _decide(wb, job, distinct, tally)
    return tally


def _decide(wb: Workbench, job: Job, distinct: Distinct, tally: Tally) -> None:
    """Validate the distinct keys held (one row each) and count each answer for its rows."""
    values, counts = distinct.take()
    if not len(values):
        return
    frame = reading.frame(values)
    if reading.marks_objects(job.table, values.column(job.column)):  # Codings and the like
        frame[job.column] = pd.Series(reading.objects(values.column(job.column)), dtype=object)
    result = wb.validate_column(
        frame,
        job.valueset,
        code=job.column,
        system=job.system,
        system_column=job.system_column,
        display=job.display_column,
    )
    tally.add(result, counts)


class _progress:
    """A rich progress bar on stderr when it is a terminal, nothing when piped."""

    def __init__(self, total: int | None) -> None:
        self.bar: Progress | None = None
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            columns = (TextColumn("validating"), BarColumn(), MofNCompleteColumn())
            # on stderr, whatever stdout is: the summary on stdout can be piped or redirected
            self.bar = Progress(*columns, transient=True, console=Console(stderr=True))
        self.total = total

    def __enter__(self) -> tuple[Progress | None, Any]:
        if self.bar is None:
            return None, None
        self.bar.start()
        return self.bar, self.bar.add_task("rows", total=self.total)

    def __exit__(self, *_: object) -> None:
        if self.bar is not None:
            self.bar.stop()


#: The report forms ``--report`` writes, by the file's extension.
REPORTS = (".json", ".html", ".xlsx")
#: How many of the most frequent failing codes get a suggestion in a report.
SUGGESTED = 1000


def write_report(path: Path, tally: Tally, about: dict[str, Any]) -> None:
    """Write the summary as JSON, as a self-contained HTML page or as an Excel workbook
    (summary and by-code sheets), chosen by the extension of ``path`` (one of REPORTS)."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        path.write_bytes(orjson.dumps(tally.to_json(**about), option=orjson.OPT_INDENT_2))
        return
    content = tally.content(f"workbench validate {about.get('file', '')}".strip(), about)
    if suffix == ".html":
        from workbench.bulk.page import write_html

        write_html(content, path)
    else:
        from workbench.bulk.sharing import write_excel

        write_excel(content, path)
