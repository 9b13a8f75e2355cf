"""``workbench validate`` on FHIR resources: a column of JSON objects (Codings,
CodeableConcepts, arrays of them) is read as objects and a dotted path (``code.coding``)
walks into them by the rule of ``workbench.bulk.paths``, so the command answers what
``Workbench.validate_column`` answers on the same rows. The data are the R4 example
Conditions and Observations (``hl7.fhir.r4.examples#4.0.1``), written here as NDJSON and
Parquet; the value sets are that package's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_cli import run

from workbench import Workbench
from workbench.cli import reading, validate

EXAMPLES = "hl7.fhir.r4.examples"
CLINICAL = "http://hl7.org/fhir/ValueSet/condition-clinical"
CONDITION_CODE = "http://hl7.org/fhir/ValueSet/condition-code"
CATEGORY = "http://hl7.org/fhir/ValueSet/observation-category"
INTERPRETATION = "http://hl7.org/fhir/ValueSet/observation-interpretation"
GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"

#: (resource type, column or path, value set): the cases the command and Python agree on
CASES = [
    ("Condition", "clinicalStatus", CLINICAL),
    ("Condition", "clinicalStatus.coding", CLINICAL),
    ("Condition", "code", CONDITION_CODE),  # SNOMED CT is not-present: unknown-system
    ("Condition", "code.coding", CONDITION_CODE),
    ("Observation", "code", CATEGORY),  # LOINC is not loaded: unknown-system
    ("Observation", "category", CATEGORY),  # an array of CodeableConcepts
    ("Observation", "category.coding", CATEGORY),
    ("Observation", "component.code", CATEGORY),  # the codes of every component
    ("Observation", "interpretation", INTERPRETATION),
    ("Observation", "valueCodeableConcept", INTERPRETATION),
    ("Observation", "status", "http://hl7.org/fhir/ValueSet/observation-status"),  # codes
]


def resources(folder: Path, kind: str) -> list[dict[str, Any]]:
    """The package's example resources of one type, in file order."""
    found = [json.loads(p.read_text()) for p in sorted(folder.rglob(f"{kind}-*.json"))]
    return [r for r in found if r.get("resourceType") == kind]


def write_ndjson(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


@pytest.fixture(scope="module")
def examples(package_dirs: dict[str, Path]) -> Path:
    return package_dirs[EXAMPLES]


def expected_tally(wb: Workbench, frame: pd.DataFrame, column: str, valueset: str) -> Any:
    """What ``validate_column`` says of the whole frame, summed as the command sums it."""
    tally = validate.Tally()
    tally.add(wb.validate_column(frame, valueset, code=column))
    return tally


@pytest.mark.parametrize(("kind", "column", "valueset"), CASES)
def test_the_command_counts_what_validate_column_says(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    r4_wb: Workbench,
    examples: Path,
    kind: str,
    column: str,
    valueset: str,
) -> None:
    """In small batches with the distinct keys decided in parts, the streamed count of an
    NDJSON file is ``validate_column`` of the frame of its records."""
    monkeypatch.setattr(reading, "BATCH_ROWS", 5)
    monkeypatch.setattr(validate, "KEPT_KEYS", 3)
    records = resources(examples, kind)
    table = reading.open_table(write_ndjson(tmp_path / "data.ndjson", records))
    streamed = validate.run(r4_wb, validate.Job(table, column, valueset, None, None, None))
    expected = expected_tally(r4_wb, pd.DataFrame(records), column, valueset)
    assert streamed.to_json() == expected.to_json()
    assert streamed.messages == expected.messages
    assert streamed.lines() == expected.lines()
    assert streamed.rows == len(records) and streamed.rows > streamed.reasons["missing"]


@pytest.mark.parametrize(("kind", "column", "valueset"), CASES)
def test_the_command_reads_each_row_as_python_does(
    tmp_path: Path, r4_wb: Workbench, examples: Path, kind: str, column: str, valueset: str
) -> None:
    """Row for row: the rows as the command reads them (objects back as dicts) are answered
    as the records' frame is, the path walked by the same rule."""
    records = resources(examples, kind)
    table = reading.open_table(write_ndjson(tmp_path / "data.ndjson", records))
    read = pd.concat(reading.batches(table, [column]), ignore_index=True)
    got = r4_wb.validate_column(read, valueset, code=column)
    want = r4_wb.validate_column(pd.DataFrame(records), valueset, code=column)
    assert got["result"].astype(object).tolist() == want["result"].astype(object).tolist()
    assert got.reason.tolist() == want.reason.tolist()
    assert got.failure_cases.reset_index(drop=True).equals(
        want.failure_cases.reset_index(drop=True)
    )


def test_clinical_status_of_the_example_conditions_is_valid_from_the_command(
    tmp_path: Path, r4_wb: Workbench, examples: Path
) -> None:
    """The real command on the Conditions: clinicalStatus (CodeableConcepts) as Python says
    (every one valid), code.coding with SNOMED CT not-present (unknown-system, false)."""
    records = resources(examples, "Condition")
    path = write_ndjson(tmp_path / "conditions.ndjson", records)
    frame = pd.DataFrame(records)
    for column, valueset, code in [
        ("clinicalStatus", CLINICAL, 0),
        ("code.coding", CONDITION_CODE, 1),
    ]:
        done = run(
            "validate", path, "--column", column, "--valueset", valueset,
            "--load", examples, "--no-default-content", "--report", tmp_path / "out.json",
        )  # fmt: skip
        assert done.returncode == code, done.stderr
        expected = expected_tally(r4_wb, frame, column, valueset)
        assert done.stdout.splitlines() == expected.lines()
        summary = json.loads((tmp_path / "out.json").read_text())
        assert summary["valid"] == expected.valid and summary["rows"] == len(records)
    python = r4_wb.validate_column(frame, CLINICAL, code="clinicalStatus")
    assert bool(python.result.all())
    snomed = r4_wb.validate_column(frame, CONDITION_CODE, code="code.coding")
    assert set(snomed.reason) == {"unknown-system", "missing"}


@pytest.mark.parametrize("column", ["clinicalStatus", "code", "code.coding"])
def test_a_parquet_struct_column_is_read_as_objects(
    tmp_path: Path, r4_wb: Workbench, examples: Path, column: str
) -> None:
    """Parquet struct and list columns (what pyarrow writes of the Conditions' clinicalStatus
    and code) are objects, walked by the same paths; the command counts what
    ``validate_column`` says of the file read by pandas."""
    records = resources(examples, "Condition")
    table = pa.Table.from_pylist(
        [{"id": r["id"], "clinicalStatus": r["clinicalStatus"], "code": r["code"]} for r in records]
    )
    assert pa.types.is_struct(table.schema.field("code").type)
    path = tmp_path / "conditions.parquet"
    pq.write_table(table, path)
    valueset = CLINICAL if column == "clinicalStatus" else CONDITION_CODE
    done = run(
        "validate", path, "--column", column, "--valueset", valueset,
        "--load", examples, "--no-default-content", "--fail-under", "0",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    expected = expected_tally(r4_wb, pd.read_parquet(path), column, valueset)
    assert done.stdout.splitlines() == expected.lines(0)
    assert expected.lines(0) == expected_tally(
        r4_wb, pd.DataFrame(records), column, valueset
    ).lines(0)


def test_a_csv_cell_that_looks_like_json_stays_text(tmp_path: Path) -> None:
    """A CSV cell is text: a Coding written as JSON in it is a code (not found)."""
    coding = json.dumps({"system": "http://hl7.org/fhir/administrative-gender", "code": "male"})
    path = tmp_path / "d.csv"
    pd.DataFrame({"gender": [coding, "male"]}).to_csv(path, index=False)
    done = run("validate", path, "--column", "gender", "--valueset", GENDER)
    assert done.returncode == 1, done.stderr
    assert "valid: 1 (50.00%)" in done.stdout.splitlines()
    assert f"  {coding!r} unknown-code (1)" in done.stdout.splitlines()


def bad_inputs(tmp_path: Path, examples: Path) -> dict[str, Path]:
    """The files of the bad-input table."""
    conditions = write_ndjson(tmp_path / "c.ndjson", resources(examples, "Condition"))
    numbers = write_ndjson(tmp_path / "n.ndjson", [{"codes": [1, 2]}, {"codes": [3]}])
    csv = tmp_path / "c.csv"
    pd.DataFrame({"code": ['{"coding": []}']}).to_csv(csv, index=False)
    flat = tmp_path / "f.parquet"
    pq.write_table(pa.table({"code": ["a"]}), flat)
    coding = {"system": "http://snomed.info/sct", "code": "39065001"}
    codes_first = write_ndjson(tmp_path / "m1.ndjson", [{"code": "a"}, {"code": coding}])
    codings_first = write_ndjson(tmp_path / "m2.ndjson", [{"code": coding}, {"code": 12}])
    return {
        "conditions": conditions,
        "numbers": numbers,
        "csv": csv,
        "parquet": flat,
        "codes, then a Coding": codes_first,
        "a Coding, then a number": codings_first,
    }


@pytest.mark.parametrize(
    ("file", "column", "message"),
    [
        ("conditions", "nothere", "error: {path}: no column 'nothere'; the columns are "),
        ("conditions", "nothere.coding", "error: {path}: no column 'nothere.coding'; the "),
        (
            "conditions",
            "id.coding",
            "error: The path 'id.coding' goes into a string at 'coding': 'id' holds ",
        ),
        (
            "conditions",
            "code.coding.code.x",
            "error: The path 'code.coding.code.x' goes into a string at 'x': "
            "'code.coding.code' holds '39065001'",
        ),
        (
            "conditions",
            "code.coding.code",
            "error: The path 'code.coding.code' gives a list of strings in a row, not Codings",
        ),
        ("numbers", "codes", "error: The path 'codes' gives a list of numbers in a row, not "),
        (
            "csv",
            "code.coding",
            "error: {path}: the path 'code.coding' goes into the column 'code', whose cells "
            "are text (a CSV cell is never read as JSON)",
        ),
        (
            "parquet",
            "code.coding",
            "error: {path}: the path 'code.coding' goes into the column 'code', which holds "
            "no objects (it is no struct or list column)",
        ),
        (  # as validate_column answers a column of both
            "codes, then a Coding",
            "code",
            "error: The code column holds a dict ({{'code': '39065001', 'system': "
            "'http://snomed.info/sct'}}) among its codes: a column holds codes, or Codings "
            "and CodeableConcepts (dicts), not both",
        ),
        (
            "a Coding, then a number",
            "code",
            "error: The code column holds a str ('12') among its Codings: a column holds codes, "
            "or Codings and CodeableConcepts (dicts), not both",
        ),
    ],
)
def test_a_bad_column_is_one_line_and_exit_2(
    tmp_path: Path, examples: Path, file: str, column: str, message: str
) -> None:
    path = bad_inputs(tmp_path, examples)[file]
    done = run(
        "validate", path, "--column", column, "--valueset", CONDITION_CODE,
        "--load", examples, "--no-default-content",
    )  # fmt: skip
    assert done.returncode == 2, done.stdout
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(message.format(path=path)), line
