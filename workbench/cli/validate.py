"""``workbench validate``: a column of a file checked in streamed batches, the counts summed."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from workbench.cli import reading
from workbench.workbench import Workbench


@dataclass
class Tally:
    """What the batches said: rows, valid rows, rows per reason, failing codes."""

    rows: int = 0
    valid: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    invalid: Counter[tuple[Any, Any, Any]] = field(default_factory=Counter)

    def add(self, result: Any) -> None:
        """Count one batch's ValidationFrame."""
        self.rows += len(result)
        self.valid += int(result["result"].fillna(False).astype(bool).sum())
        self.reasons.update(result.reason.value_counts().to_dict())
        failures = result.failure_cases
        failures = failures[failures["issue"] != "missing"]
        keys = zip(failures["code"], failures["system"], failures["issue"], strict=True)
        self.invalid.update(keys)

    @property
    def percent(self) -> float:
        """The valid share in percent (100 for no rows)."""
        return 100.0 if self.rows == 0 else 100.0 * self.valid / self.rows

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
            "reasons": dict(self.reasons),
            "top_invalid": top,
        }

    def lines(self) -> list[str]:
        """The summary printed on stdout."""
        out = [f"rows: {self.rows}", f"valid: {self.valid} ({self.percent:.2f}%)"]
        out += [f"  {reason}: {count}" for reason, count in self.reasons.most_common()]
        if self.invalid:
            out.append("most frequent invalid codes:")
            out += [
                f"  {code!r} {issue} ({count})"
                for (code, _, issue), count in self.invalid.most_common(10)
            ]
        return out


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
    """Validate the file batch by batch with ``wb.validate_column``."""
    columns = [c for c in (job.column, job.system_column, job.display_column) if c]
    tally = Tally()
    with _progress(reading.count_rows(job.table)) as (progress, task):
        for frame in reading.batches(job.table, list(dict.fromkeys(columns))):
            result = wb.validate_column(
                frame,
                job.valueset,
                code=job.column,
                system=job.system_column or job.system,
                display=job.display_column,
            )
            tally.add(result)
            if progress is not None:
                progress.advance(task, len(frame))
    return tally


class _progress:
    """A rich progress bar on stderr when it is a terminal, nothing when piped."""

    def __init__(self, total: int | None) -> None:
        self.bar = (
            Progress(TextColumn("validating"), BarColumn(), MofNCompleteColumn(), transient=True)
            if sys.stderr.isatty()
            else None
        )
        self.total = total

    def __enter__(self) -> tuple[Progress | None, Any]:
        if self.bar is None:
            return None, None
        self.bar.start()
        return self.bar, self.bar.add_task("rows", total=self.total)

    def __exit__(self, *_: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def write_report(path: Path, summary: dict[str, Any]) -> None:
    """Write the summary as JSON (the only report form so far)."""
    path.write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))
