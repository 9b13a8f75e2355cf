"""workbench.pandera.in_value_set in real pandera schemas, pandas and polars: the failing
rows, their code and reason, the summary in the error, and the Workbench it answers with."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import polars as pl
import pytest

import workbench
from workbench import Workbench
from workbench.bulk.verdicts import Verdicts
from workbench.pandera import in_value_set, summary_line

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "PySpark does not yet fully support", FutureWarning)
    import pandera.pandas as pa
    import pandera.polars as pap
    from pandera.api.polars.types import PolarsData

GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
CODES = ["male", "mail", None, " female", "female"]
SUMMARY = f"in value set {GENDER}: 2 of 5 rows valid (40.00%); unknown-code 2, missing 1"


def _pandas(check: pa.Check) -> tuple[pa.DataFrameSchema, pd.DataFrame]:
    schema = pa.DataFrameSchema({"gender": pa.Column(str, check, nullable=True)})
    return schema, pd.DataFrame({"id": range(5), "gender": CODES}, index=[10, 11, 12, 13, 14])


def _polars(check: pa.Check) -> tuple[pap.DataFrameSchema, pl.DataFrame]:
    schema = pap.DataFrameSchema({"gender": pap.Column(pl.String, check, nullable=True)})
    return schema, pl.DataFrame({"id": range(5), "gender": CODES})  # the column, not the first


@pytest.mark.parametrize(
    ("make", "rows"), [(_pandas, [11, 13]), (_polars, [1, 3])], ids=["pandas", "polars"]
)
def test_failure_cases_name_each_row_with_code_and_reason(
    default_wb: Workbench, make, rows: list[int]
) -> None:
    schema, data = make(in_value_set(GENDER, workbench=default_wb))
    with pytest.raises((pa.errors.SchemaErrors, pap.errors.SchemaErrors)) as raised:
        schema.validate(data, lazy=True)
    cases = raised.value.failure_cases
    cases = cases if isinstance(cases, pd.DataFrame) else cases.to_pandas()
    assert cases["index"].tolist() == rows
    assert cases["failure_case"].tolist() == ["'mail' unknown-code", "' female' unknown-code"]
    assert set(cases["column"]) == {"gender"}


def test_a_schema_error_reports_the_summary(default_wb: Workbench) -> None:
    # the check sees every row (pandera's ignore_na is kept off: it would copy the column)
    for make, error in [(_polars, pap.errors.SchemaError), (_pandas, pa.errors.SchemaError)]:
        schema, data = make(in_value_set(GENDER, workbench=default_wb))
        with pytest.raises(error) as raised:
            schema.validate(data)
        assert SUMMARY in str(raised.value)
    schema, frame = _pandas(in_value_set(GENDER, workbench=default_wb))
    assert schema.validate(frame.iloc[[0, 4]]) is not None  # all valid: passes


def test_missing_codes_fail_unless_ignored_and_a_frame_wide_check(default_wb: Workbench) -> None:
    check = in_value_set(
        GENDER, workbench=default_wb, code="c", system_column="s", display="d", ignore_na=False
    )
    schema = pa.DataFrameSchema(checks=[check])
    frame = pd.DataFrame(
        {
            "c": ["male", "female", None],
            "s": [GENDER_CS, "http://other", GENDER_CS],
            "d": ["Male", "Female", None],
        }
    )
    with pytest.raises(pa.errors.SchemaErrors) as raised:
        schema.validate(frame, lazy=True)
    cases = raised.value.failure_cases
    assert cases["index"].tolist() == [1, 2]
    assert cases["failure_case"].tolist() == ["'female' unknown-system", "missing"]


def test_the_workbench_is_chosen_as_the_accessor_chooses(default_wb: Workbench) -> None:
    with workbench.use(default_wb):
        check = in_value_set(GENDER)
    schema, frame = _pandas(check)
    with pytest.raises(pa.errors.SchemaError, match="'mail' unknown-code"):
        schema.validate(frame)
    with pytest.raises(TypeError, match="takes a Workbench"):
        in_value_set(GENDER, workbench="wb")  # type: ignore[arg-type]


def test_import_workbench_imports_neither_pandera_nor_great_expectations() -> None:
    code = (
        "import sys, workbench; "
        "print([m for m in ('pandera', 'great_expectations') if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


MIXED = ["male", "mail", None, " female", "female", "", "mail", "other", None, "unknown"]


@pytest.mark.parametrize(
    "column",
    [
        pd.Series(MIXED, dtype=object),
        pd.Series(MIXED, dtype="str"),
        pd.Series(MIXED, dtype="category"),
        pd.Series(MIXED, dtype="string[pyarrow]"),
        pl.Series(MIXED),
    ],
    ids=["object", "str", "category", "arrow", "polars"],
)
@pytest.mark.parametrize(("ignore_na", "system"), [(True, GENDER_CS), (False, None)])
def test_a_column_check_answers_as_validate_column(
    default_wb: Workbench, column: object, ignore_na: bool, system: str | None
) -> None:
    """A column check reads the answer table without a result frame; its rows, failure
    cases and summary are validate_column's."""
    check = in_value_set(GENDER, workbench=default_wb, system=system, ignore_na=ignore_na)
    data = PolarsData(pl.LazyFrame({"g": column}), "g") if isinstance(column, pl.Series) else column
    passed, rows, cases = check.verdicts(data)
    report = default_wb.validate_column(column, GENDER, system=system)
    frame = report if isinstance(report, pd.DataFrame) else report.to_pandas()
    result = frame["result"].to_numpy(dtype=bool, na_value=ignore_na)
    assert passed.tolist() == result.tolist()
    assert rows.tolist() == np.flatnonzero(~result).tolist()
    codes = pd.Series(MIXED, dtype=object)[~result]
    expected = [
        "missing" if c is None or c == "" else f"{c!r} {i}"
        for c, i in zip(codes, frame["issue"][~result], strict=True)
    ]
    assert list(cases) == expected
    assert check.error == summary_line(frame, GENDER)


@pytest.mark.parametrize("skip_missing", [True, False])
def test_verdicts_count_valid_rows_that_have_an_issue(skip_missing: bool) -> None:
    """A valid entry with an issue (a warning) is counted among the reasons, its rows too."""
    flags = np.array([-1, 1, 1, 0], dtype=np.int8)
    issues = np.array(["missing", None, "inactive", "unknown-code"], dtype=object)
    position = np.array([1, 2, 2, 3, 0, 1])
    for noted in (np.array([2]), np.array([], dtype=np.int64)):
        found = Verdicts(
            position, np.array(["", "a", "b", "c"], dtype=object), flags, issues, noted
        )
        passed = found.passing(skip_missing).take(position)
        valid, reasons = found.summary(position[~passed], skip_missing)
        assert valid == 4
        expected = {"inactive": 2, "unknown-code": 1, "missing": 1}
        if not len(noted):  # (told there is none: the valid entries' issues are not read)
            del expected["inactive"]
        assert reasons == expected
