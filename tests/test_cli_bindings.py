"""``workbench check-bindings DATA... --package P#V [--profile URL] [--strength S]
[--report OUT]``, run as a real subprocess on the R4 example Patients and Observations
written as NDJSON (one Patient given a gender outside its required value set): the JSON
report is the list of ``Workbench.check_bindings``' rows, exit 1 when an error is found and
0 when not; each report form by its extension; a mistake is one line and exit 2."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest
from test_cli import run

from tests.binding_examples import example_resources
from tests.conftest import EXAMPLES
from workbench import Workbench
from workbench.cli.bindings import write_report

pytestmark = pytest.mark.slow

PACKAGE = ["--package", f"{EXAMPLES[0]}#{EXAMPLES[1]}", "--no-default-content"]


def _ndjson(path: Path, resources: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in resources))
    return path


@pytest.fixture(scope="module")
def data(package_dirs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder: the examples' Patients and Observations, one Patient's gender wrong."""
    folder = tmp_path_factory.mktemp("bindings-data")
    found = example_resources(package_dirs[EXAMPLES[0]] / "package")
    patients = [r for r in found if r["resourceType"] == "Patient"]
    bad = copy.deepcopy(patients[0])
    bad["id"], bad["gender"] = "wrong-gender", "boy"
    _ndjson(folder / "Patient.ndjson", [*patients, bad])
    _ndjson(folder / "Observation.ndjson", [r for r in found if r["resourceType"] == "Observation"])
    return folder


@pytest.fixture(scope="module")
def wb(package_dirs: dict[str, Path]) -> Workbench:
    wb = Workbench()
    wb.load(package_dirs[EXAMPLES[0]], progress=False)
    return wb


def test_the_json_report_is_the_rows_and_an_error_exits_1(
    data: Path, wb: Workbench, tmp_path: Path
) -> None:
    out = tmp_path / "report.json"
    done = run("check-bindings", data, *PACKAGE, "--report", out)
    assert done.returncode == 1, done.stderr
    rows = orjson.loads(out.read_bytes())
    expected = wb.check_bindings(str(data)).frame
    assert len(rows) == len(expected)
    assert rows[0].keys() == set(expected.columns)
    wrong = [r for r in rows if r["id"] == "wrong-gender" and r["severity"] == "error"]
    assert [(r["location"], r["issue"], r["result"]) for r in wrong] == [
        ("Patient.gender", "unknown-code", False)
    ]
    line = done.stderr.strip().splitlines()[-1]
    assert "resources" in line and "errors" in line and f"report written to {out}" in line


def test_clean_data_exits_0_and_without_a_report_the_issues_are_csv_on_stdout(
    data: Path, tmp_path: Path
) -> None:
    clean = _ndjson(tmp_path / "Patient.ndjson", [
        {"resourceType": "Patient", "id": "p", "gender": "female"}])  # fmt: skip
    done = run("check-bindings", clean, *PACKAGE, "--strength", "required")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[0].startswith("resource_type,id,location")
    assert len(done.stdout.strip().splitlines()) == 1  # the header: no issues


def test_a_profile_given_applies_and_one_not_loaded_is_named(data: Path) -> None:
    url = "http://example.org/StructureDefinition/nowhere"
    done = run("check-bindings", data / "Patient.ndjson", *PACKAGE, "--profile", url)
    assert done.returncode == 1
    assert f"profile {url}" in done.stderr and "is not loaded" in done.stderr


@pytest.mark.parametrize("suffix", [".html", ".xlsx", ".csv", ".parquet", ".json"])
def test_each_report_form(wb: Workbench, tmp_path: Path, suffix: str) -> None:
    report = wb.check_bindings([{"resourceType": "Patient", "id": "p", "gender": "boy"}])
    path = tmp_path / f"r{suffix}"
    write_report(report, path)
    if suffix == ".csv":
        assert pd.read_csv(path)["location"].tolist() == ["Patient.gender"]
    elif suffix == ".parquet":
        assert pd.read_parquet(path)["issue"].tolist() == ["unknown-code"]
    elif suffix == ".xlsx":
        assert pd.read_excel(path, sheet_name="Rows")["code"].tolist() == ["boy"]
    elif suffix == ".json":
        assert orjson.loads(path.read_bytes())[0]["result"] is False
    else:
        assert "Patient.gender" in path.read_text()
    assert [p.name for p in tmp_path.iterdir()] == [f"r{suffix}"]  # no temporary left


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--strength", "mandatory"], "--strength mandatory"),
        (["--report", "out.txt"], "--report out.txt: write one of"),
        (["--report", "no/such/folder/r.json"], "does not exist"),
        (["--no-default-content"], "No StructureDefinitions are loaded"),
    ],
)
def test_a_mistake_is_one_line_and_exit_2(data: Path, args: list[str], message: str) -> None:
    done = run("check-bindings", data, *args)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_missing_data_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = run("check-bindings", tmp_path / "nothing.ndjson", *PACKAGE)
    assert done.returncode == 2 and "no such file or folder" in done.stderr
