"""``workbench check-bindings``: every bound coded value of FHIR data files checked against
the value sets their elements are bound to, a report written by its extension, the rows
with an issue as CSV on stdout when no report is asked for, and one line on stderr."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from workbench.bindings.check import STRENGTHS
from workbench.bindings.report import BindingReport
from workbench.cli.reading import InputError

#: The report forms ``--report`` writes, by the file's extension.
REPORTS = (".html", ".json", ".xlsx", ".csv", ".parquet")


def check_arguments(data: tuple[Path, ...], strength: str, report: Path | None) -> list[str]:
    """The strengths asked for; InputError for a mistake, before anything is loaded."""
    if not data:
        raise InputError("give the data: files or folders of FHIR resources")
    for path in data:
        if not path.exists():
            raise InputError(f"{path}: no such file or folder")
    wanted = [s.strip() for s in strength.split(",") if s.strip()]
    wrong = [s for s in wanted if s not in STRENGTHS]
    if wrong or not wanted:
        raise InputError(f"--strength {strength}: a list of {', '.join(STRENGTHS)}")
    if report is not None:
        if report.suffix.lower() not in REPORTS:
            raise InputError(f"--report {report}: write one of " + ", ".join(REPORTS))
        if report.is_dir():
            raise InputError(f"--report {report}: is a folder (name a file)")
        if not report.parent.is_dir():
            raise InputError(f"--report {report}: the folder {report.parent} does not exist")
    return wanted


def run(
    wb: Any, data: list[Path], strengths: list[str], profiles: list[str], report: Path | None
) -> BindingReport:
    """Check ``data`` (all paths read together) and write the report (under a temporary
    name, renamed when whole) or, without one, the rows with an issue as CSV on stdout."""
    found = wb.check_bindings(
        [str(p) for p in data], strength=strengths, profiles=profiles or "declared"
    )
    if report is None:
        issues = found.frame[found.frame["severity"].isin(["error", "warning"])]
        issues.to_csv(sys.stdout, index=False)
    else:
        write_report(found, report)
    return found


def write_report(found: BindingReport, path: Path) -> None:
    """Write ``found`` in the form ``path``'s extension names, whole or not at all."""
    kind = path.suffix.lower()
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=kind, dir=path.parent)
    os.close(handle)
    temporary = Path(name)
    try:
        if kind == ".html":
            found.to_html(temporary)
        elif kind == ".xlsx":
            found.to_excel(temporary)
        elif kind == ".json":
            rows = found.frame.astype(object).where(found.frame.notna(), None)
            temporary.write_bytes(orjson.dumps(rows.to_dict("records")))
        elif kind == ".csv":
            found.frame.to_csv(temporary, index=False)
        else:
            found.frame.to_parquet(temporary, index=False)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def summary_line(found: BindingReport, report: Path | None) -> str:
    """``1,511 resources, 6,313 bound values: 184 errors, 231 warnings, 7 unchecked;
    4 problems, the first: ...; report written to r.html``."""
    s = found.summary()["count"]
    parts = [
        f"{s['resources']:,} resources, {s['bound values']:,} bound values: "
        f"{s['errors']:,} errors, {s['warnings']:,} warnings, {s['unchecked']:,} unchecked"
    ]
    if found.problems:
        first = found.problems[0].message
        parts.append(f"{len(found.problems)} problems, the first: {first}")
    else:
        parts.append("no problems")
    parts.append(f"report written to {report}" if report else "rows with issues on stdout")
    return "; ".join(parts)
