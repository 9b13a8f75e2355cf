"""``wb.report(result)`` on every backend: the report of a pandas result is the result
itself; a polars, Dask or Spark result (still that library's frame) gives a report with
the same counts, the same ``by_code()``, the same HTML and Excel, and ``fix()``; anything
else is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dask.dataframe as dd
import pandas as pd
import polars as pl
import pytest

from tests.test_bulk_spark import PANDAS_WARNING, spark  # noqa: F401 (the session fixture)
from workbench import InvalidRequestError, Workbench

pytestmark = pytest.mark.filterwarnings(PANDAS_WARNING)

GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
FRAME = pd.DataFrame(
    {
        "g": ["male", " male", "Male", "bogus", None, "female", "male", "unknown"],
        "s": [GENDER_CS] * 7 + ["http://example.org/other"],
    }
)


def data_of(backend: str, request: pytest.FixtureRequest) -> Any:
    if backend == "polars":
        return pl.from_pandas(FRAME)
    if backend == "dask":
        return dd.from_pandas(FRAME, npartitions=3)
    if backend == "spark":
        return request.getfixturevalue("spark").createDataFrame(FRAME)
    return FRAME


@pytest.mark.parametrize("backend", ["polars", "dask", "spark"])
def test_every_backend_reports_the_pandas_counts(
    default_wb: Workbench, request: pytest.FixtureRequest, backend: str, tmp_path: Path
) -> None:
    expected = default_wb.validate_column(FRAME, GENDER, code="g", system_column="s")
    result = default_wb.validate_column(
        data_of(backend, request), GENDER, code="g", system_column="s"
    )
    assert type(result).__module__.split(".")[0] != "workbench"  # the library's own frame
    report = default_wb.report(result)
    assert report.summary().counts.to_dict() == expected.summary().counts.to_dict()
    assert report.summary().valid == expected.summary().valid
    by_code, want = report.by_code(), expected.by_code()
    assert by_code["code"].tolist() == want["code"].tolist()
    assert by_code["suggestion"].tolist() == want["suggestion"].tolist()
    report.to_html(tmp_path / "got.html")
    expected.to_html(tmp_path / "want.html")
    assert (tmp_path / "got.html").read_text() == (tmp_path / "want.html").read_text()
    report.to_excel(tmp_path / "report.xlsx")
    fixed = report.fix()
    assert fixed.audit["after"].tolist() == expected.fix().audit["after"].tolist()


def test_a_pandas_result_is_its_own_report(default_wb: Workbench) -> None:
    result = default_wb.validate_column(FRAME, GENDER, code="g", system_column="s")
    assert default_wb.report(result) is result


@pytest.mark.parametrize("value", [FRAME, pl.from_pandas(FRAME), 5], ids=["data", "polars", "int"])
def test_anything_but_a_result_is_refused(default_wb: Workbench, value: Any) -> None:
    with pytest.raises(InvalidRequestError, match="report\\(\\) takes what validate_column"):
        default_wb.report(value)
