"""``workbench view VIEW.json DATA... -o OUT``, run as a real subprocess: the rows it writes
(CSV, Parquet, NDJSON, CSV on stdout) are ``Workbench.view``'s over the same data, row for
row; a mistake is one line on stderr and exit 2; data the reader refuses or the view skips
is named on stderr with exit 1, the other rows written. The data are the R4 example
Observations and Conditions (``hl7.fhir.r4.examples#4.0.1``), written here as NDJSON; the
terminology view loads that package with ``--package``, as a user would."""

from __future__ import annotations

import csv
import functools
import io
import json
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pyarrow.parquet as pq
import pytest
from test_cli import run
from test_cli_fhir_columns import resources, write_ndjson

from workbench import Workbench
from workbench.cli import view as cli_view
from workbench.fhirdata import read_fhir

EXAMPLES = "hl7.fhir.r4.examples"
PACKAGE = ["--package", f"{EXAMPLES}#4.0.1", "--no-default-content"]
BARE = ["--no-default-content"]  # a view with no terminology function needs no content
CLINICAL = "http://hl7.org/fhir/ValueSet/condition-clinical"
OBS = "Observation.ndjson"

#: One row per coding of each Observation's code (forEach), with a list and a struct.
CODINGS = {
    "resourceType": "ViewDefinition",
    "resource": "Observation",
    "select": [
        {
            "column": [
                {"name": "id", "path": "getResourceKey()"},
                {"name": "status", "path": "status"},
                {"name": "categories", "path": "category.coding.code", "collection": True},
                {"name": "quantity", "path": "value.ofType(Quantity)"},
                {"name": "value", "path": "value.ofType(Quantity).value"},
            ]
        },
        {
            "forEach": "code.coding",
            "column": [
                {"name": "system", "path": "system"},
                {"name": "code", "path": "code"},
                {"name": "display", "path": "display"},
            ],
        },
    ],
}
#: The Conditions' clinical status: in the value set (memberOf), and its display().
STATUS = {
    "resourceType": "ViewDefinition",
    "resource": "Condition",
    "select": [
        {
            "column": [
                {"name": "id", "path": "getResourceKey()"},
                {"name": "status", "path": "clinicalStatus.coding.code.first()"},
                {"name": "active", "path": f"clinicalStatus.memberOf('{CLINICAL}')"},
                {"name": "display", "path": "clinicalStatus.coding.first().display()"},
            ]
        }
    ],
}
VIEWS = {"codings": (CODINGS, BARE), "status": (STATUS, PACKAGE)}


@pytest.fixture(scope="module")
def data(package_dirs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the examples' Observations and Conditions, one NDJSON file each, and
    the two views."""
    folder = tmp_path_factory.mktemp("view-data")
    for kind in ("Observation", "Condition"):
        write_ndjson(folder / f"{kind}.ndjson", resources(package_dirs[EXAMPLES], kind))
    for name, (definition, _) in VIEWS.items():
        (folder / f"{name}.json").write_bytes(orjson.dumps(definition))
    return folder


def inputs(data: Path) -> list[Path]:
    return [data / "Observation.ndjson", data / "Condition.ndjson"]


def expected(wb: Workbench, definition: Any, paths: Any) -> pl.DataFrame:
    """What Python says: ``Workbench.view`` of the same data."""
    return wb.view(definition, paths, engine="polars")


def read_back(path: Path) -> list[dict[str, Any]]:
    """The rows of a written file as dicts (CSV cells as text)."""
    if path.suffix == ".parquet":
        return pl.read_parquet(path).to_dicts()
    if path.suffix == ".ndjson":
        return [json.loads(line) for line in path.read_text().splitlines()]
    return list(csv.DictReader(io.StringIO(path.read_text())))


def cell(value: Any, text: str) -> bool:
    """Whether a CSV cell says ``value``: empty for null, true/false, a number's text, JSON
    text for a list or struct."""
    if value is None:
        return text == ""
    if isinstance(value, bool):
        return text == str(value).lower()
    if isinstance(value, int | float):
        return float(text) == value
    if isinstance(value, list | dict):
        return bool(json.loads(text) == value)
    return bool(text == value)


def assert_rows(path: Path, want: pl.DataFrame) -> None:
    """The file holds ``want``'s rows, in order, column for column."""
    got = read_back(path)
    rows = want.to_dicts()
    assert len(got) == len(rows) > 0
    assert all(list(row) == want.columns for row in got)
    if path.suffix == ".parquet":
        assert pl.read_parquet(path).equals(want) and pl.read_parquet(path).schema == want.schema
    elif path.suffix == ".ndjson":
        assert got == rows
    else:
        for line, (text, value) in enumerate(zip(got, rows, strict=True)):
            assert all(cell(value[c], text[c]) for c in want.columns), (line, text, value)


def one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".ndjson"])
@pytest.mark.parametrize("name", list(VIEWS))
def test_the_written_rows_are_workbench_view_row_for_row(
    tmp_path: Path, data: Path, r4_wb: Workbench, name: str, suffix: str
) -> None:
    """Each output form holds what ``Workbench.view`` returns on the same files: the forEach
    over ``code.coding`` (a list column, a struct column), and ``memberOf`` + ``display()``
    answered by the package that ``--package`` loads."""
    definition, content = VIEWS[name]
    out = tmp_path / f"rows{suffix}"
    done = run("view", data / f"{name}.json", *inputs(data), "-o", out, *content)
    assert done.returncode == 0, done.stderr
    want = expected(r4_wb, definition, inputs(data))
    assert_rows(out, want)
    kind = definition["resource"]
    with read_fhir(inputs(data)) as found:
        total, own = len(found), found.counts[kind]
    assert one_line(done.stderr) == (
        f"{want.height} rows written to {out}; {total} resources read ({own} {kind}); "
        f"no read problems; no {kind} skipped"
    )
    assert done.stdout == ""
    if name == "status":
        assert want["active"].all() and "Active" in want["display"].to_list()


def test_without_an_output_the_rows_are_csv_on_stdout(
    tmp_path: Path, data: Path, r4_wb: Workbench
) -> None:
    """No ``-o``: CSV on stdout (a header, then the rows), the summary on stderr."""
    done = run("view", data / "codings.json", data / "Observation.ndjson", *BARE)
    assert done.returncode == 0, done.stderr
    want = expected(r4_wb, CODINGS, data / "Observation.ndjson")
    path = tmp_path / "stdout.csv"
    path.write_text(done.stdout)
    assert_rows(path, want)
    assert one_line(done.stderr).startswith(f"{want.height} rows written to stdout; ")


def test_a_malformed_line_is_named_and_the_other_rows_written(
    tmp_path: Path, data: Path, r4_wb: Workbench
) -> None:
    """A line that is not JSON: exit 1, ``file:line: reason`` on stderr, every other
    resource's rows written."""
    lines = (data / "Observation.ndjson").read_bytes().splitlines(keepends=True)
    broken = tmp_path / "Observation.ndjson"
    broken.write_bytes(b"".join([*lines[:3], b'{"resourceType": "Observation",\n', *lines[3:]]))
    out = tmp_path / "rows.parquet"
    done = run("view", data / "codings.json", broken, "-o", out, *BARE)
    assert done.returncode == 1, done.stderr
    line = one_line(done.stderr)
    assert f"; 1 read problem: {broken}:4: not valid JSON" in line, line
    assert line.endswith("; no Observation skipped")
    assert_rows(out, expected(r4_wb, CODINGS, data / "Observation.ndjson"))


def test_a_resource_the_view_skips_is_named_with_exit_1(tmp_path: Path, data: Path) -> None:
    """A resource with the wrong JSON type in an element the view reads is skipped (named,
    exit 1); the others' rows are written."""
    good = resources_of(data / "Observation.ndjson")[:2]
    bad = {"resourceType": "Observation", "id": "bad", "status": "final", "code": {"coding": 1}}
    path = write_ndjson(tmp_path / "Observation.ndjson", [*good, bad])
    out = tmp_path / "rows.ndjson"
    done = run("view", data / "codings.json", path, "-o", out, *BARE)
    assert done.returncode == 1, done.stderr
    line = one_line(done.stderr)
    assert "no read problems; 1 Observation skipped: Observation/bad: " in line, line
    assert {row["id"] for row in read_back(out)} == {r["id"] for r in good}


def resources_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".ndjson"])
def test_a_view_with_no_rows_writes_its_columns(tmp_path: Path, data: Path, suffix: str) -> None:
    """No resource of the view's type: exit 0, a CSV header, a Parquet file with the
    view's schema, an empty NDJSON file."""
    out = tmp_path / f"none{suffix}"
    done = run("view", data / "codings.json", data / "Condition.ndjson", "-o", out, *BARE)
    assert done.returncode == 0, done.stderr
    assert one_line(done.stderr).startswith(f"0 rows written to {out}; 12 resources read")
    if suffix == ".csv":
        assert out.read_text().splitlines() == [",".join(CODINGS_COLUMNS)]
    elif suffix == ".parquet":
        assert pq.read_schema(out).names == CODINGS_COLUMNS
    else:
        assert out.read_bytes() == b""


CODINGS_COLUMNS = ["id", "status", "categories", "quantity", "value", "system", "code", "display"]

#: An invalid view (a choice element without ofType), and one the data shows is invalid
#: (several values in a column that is not a collection, found as the rows are made).
INVALID = {"resource": "Observation", "select": [{"column": [{"name": "u", "path": "value.unit"}]}]}
SEVERAL = {
    "resource": "Observation",
    "select": [{"column": [{"name": "c", "path": "code.coding.code"}]}],
}


@pytest.mark.parametrize(
    ("view", "data_paths", "output", "message"),
    [
        ("absent.json", [OBS], "rows.csv", "absent.json: no such file"),
        ("notjson.json", [OBS], "rows.csv", "notjson.json: not JSON ("),
        ("invalid.json", [OBS], "rows.csv", "column 'u' (select[0].column[0]): in 'value.unit'"),
        ("several.json", [OBS], "rows.csv", "column 'c' (select[0].column[0]): several values"),
        ("status.json", [OBS], "rows.csv", "column 'active' (select[0].column[2]): in "),
        ("codings.json", ["absent.ndjson"], "rows.csv", "absent.ndjson: no such file or folder"),
        ("codings.json", [], "rows.csv", "give the data after the view"),
        ("codings.json", [OBS], "rows.txt", "rows.txt: write one of .csv, .parquet, .ndjson"),
        ("codings.json", [OBS], "absent/rows.csv", "/absent does not exist"),
        ("codings.json", [OBS], "folder.csv", "folder.csv: is a folder"),
    ],
)
def test_each_mistake_is_one_line_and_exit_2(
    tmp_path: Path, data: Path, view: str, data_paths: list[str], output: str, message: str
) -> None:
    """A missing or non-JSON view, an invalid view (its message names the column: a choice
    without ofType, several values in a column that is not a collection, found as the rows
    are made, a value set that is not loaded), a missing data path, no data, an unknown
    output extension, an output folder that does not exist: one line, exit 2, no file
    written (and the file that was there left as it was, no temporary file behind)."""
    (tmp_path / "notjson.json").write_text("{not json")
    (tmp_path / "invalid.json").write_bytes(orjson.dumps(INVALID))
    (tmp_path / "several.json").write_bytes(orjson.dumps(SEVERAL))
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "rows.csv").write_text("older\n")
    for name in ("codings.json", "status.json", OBS):
        (tmp_path / name).write_bytes((data / name).read_bytes())
    paths = [tmp_path / name for name in data_paths]
    done = run("view", tmp_path / view, *paths, "-o", tmp_path / output, *BARE)
    assert done.returncode == 2, done.stderr
    line = one_line(done.stderr)
    assert line.startswith("error: ") and message in line, line
    assert (tmp_path / "rows.csv").read_text() == "older\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_rows_are_written_batch_by_batch(
    tmp_path: Path, data: Path, r4_wb: Workbench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With small batches the command writes each as it comes (a Parquet row group each),
    and the file is the whole view's rows."""
    import workbench.views.api as api

    monkeypatch.setattr(api, "_coalesced", lambda chunks: iter(chunks))
    monkeypatch.setattr(cli_view, "read_fhir", functools.partial(read_fhir, batch_bytes=4096))
    out = tmp_path / "rows.parquet"
    outcome = cli_view.run(r4_wb, CODINGS, inputs(data), out)
    want = expected(r4_wb, CODINGS, inputs(data))
    assert outcome.clean and outcome.rows == want.height
    assert pq.ParquetFile(out).num_row_groups > 1
    assert_rows(out, want)


def test_help_names_the_command_its_outputs_and_exit_codes() -> None:
    done = run("--help")
    assert "view " in done.stdout
    done = run("view", "--help")
    assert done.returncode == 0
    for text in ("example: workbench view", ".parquet", ".ndjson", "Exit 0", "--package"):
        assert text in done.stdout
