"""A missing optional library says which extra installs it: in Python a ``MissingExtraError``
(an ``ImportError``) naming the library, what needs it and ``pip install 'workbench[EXTRA]'``;
on the command line one line and exit code 2. The library is hidden the way Python itself
refuses a module: ``sys.modules[name] = None`` makes importing it raise ImportError (in this
process through monkeypatch, in a real ``workbench`` process through a ``-c`` wrapper)."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from http_support import HOST, free_port
from packaging.requirements import Requirement
from test_cli import GENDER, ROWS, write

from workbench import MissingExtraError, Workbench
from workbench.extras import require
from workbench.server.database import open_caches, open_database

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "workbench"
POSTGRES = f"postgresql://{HOST}:1/none"


def hide(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make importing each of ``names`` fail, for this test only."""
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)


def _report(wb: Workbench) -> Any:
    return wb.validate_column(pd.Series(["male", "mail"]), GENDER)


def _fresh(module: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delitem(sys.modules, module, raising=False)  # imported afresh
    return importlib.import_module(module)


def _widget(name: str) -> Any:
    from workbench import notebook

    return getattr(notebook, name)


Call = Callable[[Workbench, Path, pytest.MonkeyPatch], Any]
CASES: list[tuple[str, str, str, str, Call]] = [
    (
        "excel-report", "openpyxl", "quality", "Excel reports",
        lambda wb, tmp, mp: _report(wb).to_excel(tmp / "r.xlsx"),
    ),
    (
        "excel-export", "openpyxl", "quality", "Excel exports",
        lambda wb, tmp, mp: _report(wb).export("xlsx"),
    ),
    (
        "plot", "matplotlib", "notebook", "the summary's plot",
        lambda wb, tmp, mp: _report(wb).summary().plot(),
    ),
    (
        "pandera", "pandera", "quality", "workbench.pandera",
        lambda wb, tmp, mp: _fresh("workbench.pandera", mp),
    ),
    (
        "great-expectations", "great_expectations", "quality", "workbench.great_expectations",
        lambda wb, tmp, mp: _fresh("workbench.great_expectations", mp),
    ),
    (
        "widget", "ipywidgets", "notebook", "the notebook widget CodeValidator",
        lambda wb, tmp, mp: _widget("CodeValidator"),
    ),
    (
        "column-report", "itables", "notebook", "the notebook widget ColumnReport",
        lambda wb, tmp, mp: _widget("ColumnReport"),
    ),
    (
        "database", "psycopg", "fleet", "a PostgreSQL --database",
        lambda wb, tmp, mp: open_database(None, POSTGRES),
    ),
    (
        "caches", "psycopg", "fleet", "a PostgreSQL --database",
        lambda wb, tmp, mp: open_caches(None, POSTGRES),
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("library", "extra", "purpose", "call"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_missing_library_names_its_extra(
    default_wb: Workbench,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    library: str,
    extra: str,
    purpose: str,
    call: Call,
) -> None:
    hide(monkeypatch, library)
    with pytest.raises(MissingExtraError) as caught:
        call(default_wb, tmp_path, monkeypatch)
    text = str(caught.value)
    assert text.startswith(f"{library} is not installed: it is needed for {purpose}; "), text
    assert text.endswith(f"install it with pip install 'workbench[{extra}]'"), text
    assert isinstance(caught.value, ImportError) and caught.value.name == library
    assert (caught.value.module, caught.value.extra) == (library, extra)


def test_with_the_library_there_nothing_is_raised(default_wb: Workbench, tmp_path: Path) -> None:
    assert _report(default_wb).to_excel(tmp_path / "r.xlsx").stat().st_size > 0
    assert require("openpyxl.cell", "quality", "Excel reports").__name__ == "openpyxl.cell"


def test_a_library_that_fails_for_another_reason_raises_its_own_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A library that is there but cannot import one of its own dependencies is not called
    missing: its own error, naming that dependency, is raised."""
    importlib.import_module("openpyxl")  # its modules, put back afterwards as they were
    before = set(sys.modules)
    hide(monkeypatch, "et_xmlfile")
    for name in [m for m in sys.modules if m == "openpyxl" or m.startswith("openpyxl.")]:
        monkeypatch.delitem(sys.modules, name)
    try:
        with pytest.raises(ImportError) as caught:
            require("openpyxl", "quality", "Excel reports")
    finally:  # what the failed import left half-made
        for name in set(sys.modules) - before:
            del sys.modules[name]
    assert not isinstance(caught.value, MissingExtraError)
    assert caught.value.name == "et_xmlfile"


# --- each require names the extra that brings the library ---------------------------------


def _requires() -> list[tuple[str, str, str]]:
    """Every ``require(module, extra, purpose)`` in the package, with literal arguments."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "require"
            ):
                module, extra = (ast.literal_eval(a) for a in node.args[:2])
                found.append((str(path.relative_to(ROOT)), module, extra))
    return found


def _extra(extra: str) -> set[str]:
    """The distributions an extra lists (by normalised name)."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    return {re.sub(r"[-_.]+", "-", Requirement(r).name).lower() for r in extras[extra]}


def test_every_require_names_the_extra_that_brings_the_library() -> None:
    found = _requires()
    assert {module for _, module, _ in found} >= {
        "openpyxl", "matplotlib", "pandera", "great_expectations", "ipywidgets", "psycopg",
    }  # fmt: skip
    by_module = importlib.metadata.packages_distributions()
    for where, module, extra in found:
        dists = {re.sub(r"[-_.]+", "-", d).lower() for d in by_module[module.split(".")[0]]}
        assert dists & _extra(extra), f"{where}: {module} is not in workbench[{extra}]"


# --- the command line ----------------------------------------------------------------------

WRAPPER = (
    "import sys\n"
    "for name in sys.argv[1].split(','):\n"
    "    sys.modules[name] = None\n"
    "from workbench.cli.main import main\n"
    "sys.argv = ['workbench', *sys.argv[2:]]\n"
    "main()\n"
)


def run_without(hidden: str, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command, in a real process in which importing ``hidden`` fails."""
    return subprocess.run(
        [sys.executable, "-c", WRAPPER, hidden, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def _one_line(done: subprocess.CompletedProcess[str], library: str, extra: str) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: {library} is not installed: it is needed for "), line
    assert line.endswith(f"install it with pip install 'workbench[{extra}]'"), line
    return line


def test_validate_of_an_excel_file_without_openpyxl(tmp_path: Path) -> None:
    data = write(tmp_path / "data.xlsx", ROWS)
    args = ["validate", data, "--column", "gender", "--valueset", GENDER]
    done = run_without("openpyxl", *args, cwd=tmp_path)
    assert "reading Excel files such as" in _one_line(done, "openpyxl", "quality")
    assert done.stdout == ""


def test_an_excel_report_without_openpyxl(tmp_path: Path) -> None:
    data = write(tmp_path / "data.csv", ROWS)
    report = tmp_path / "out.xlsx"
    args = ["validate", data, "--column", "gender", "--valueset", GENDER, "--report", report]
    done = run_without("openpyxl", *args, cwd=tmp_path)
    assert "Excel reports" in _one_line(done, "openpyxl", "quality")
    assert "rows: 3" in done.stdout  # the summary came first
    assert not report.exists()


def test_serve_with_a_database_without_psycopg(tmp_path: Path) -> None:
    args = ["serve", "--no-default-content", "--port", str(free_port()), "--database", POSTGRES]
    done = run_without("psycopg", *args, cwd=tmp_path)
    assert "PostgreSQL --database" in _one_line(done, "psycopg", "fleet")
