"""validate_column on polars data: a polars DataFrame back, row for row equal to pandas."""

from __future__ import annotations

import pandas as pd
import polars as pl
import pytest

from workbench import Workbench

SYSTEM = "http://example.org/cs"
OTHER = "http://example.org/other"
VS = "http://example.org/vs"


@pytest.fixture(scope="module")
def wb() -> Workbench:
    wb = Workbench()
    for url in (SYSTEM, OTHER):
        wb.load(
            {
                "resourceType": "CodeSystem",
                "url": url,
                "content": "complete",
                "concept": [{"code": "a", "display": "A"}, {"code": "b", "display": "B"}],
            }
        )
    wb.load(
        {
            "resourceType": "ValueSet",
            "url": VS,
            "compose": {
                "include": [{"system": SYSTEM}, {"system": OTHER, "concept": [{"code": "a"}]}]
            },
        }
    )
    return wb


CODES = ["a", "b", "zz", None, "", " a ", "a"]
SYSTEMS = [SYSTEM, OTHER, SYSTEM, SYSTEM, OTHER, SYSTEM, "http://unknown"]


@pytest.mark.parametrize("dtype", [pl.Utf8, pl.Categorical])
def test_polars_frame_with_system_column_matches_pandas(wb: Workbench, dtype: object) -> None:
    frame = pl.DataFrame({"code": CODES, "system": SYSTEMS}).with_columns(
        pl.col("code").cast(dtype)
    )
    got = wb.validate_column(frame, VS, code="code", system="system")
    assert isinstance(got, pl.DataFrame)
    expected = wb.validate_column(
        pd.DataFrame({"code": CODES, "system": SYSTEMS}), VS, code="code", system="system"
    )
    assert got.height == len(CODES)
    assert got.columns == list(pd.DataFrame(expected).columns)
    assert got["result"].to_list() == [None if pd.isna(v) else bool(v) for v in expected["result"]]
    assert got["issue"].cast(pl.Utf8).to_list() == [
        None if pd.isna(v) else v for v in expected["issue"]
    ]
    for row, (c, s) in enumerate(zip(CODES, SYSTEMS, strict=True)):
        single = wb.validate_code(VS, code=c or "", system=s)
        assert got["message"].cast(pl.Utf8)[row] == single.message
        assert got["issue"].cast(pl.Utf8)[row] == single.issue
        assert got["result"][row] == (single.result if c else None)


def test_polars_series_with_one_system(wb: Workbench) -> None:
    got = wb.validate_column(pl.Series("code", ["a", "b", None]), VS, system=OTHER)
    assert isinstance(got, pl.DataFrame)
    assert got["result"].to_list() == [True, False, None]
