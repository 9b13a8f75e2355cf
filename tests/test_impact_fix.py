"""``Impact.fix`` on pandas, polars, Dask and Spark columns (``bulk/impact_fix.py``): the
one-to-one replacement the newer SNOMED CT release records (307530000 REPLACED BY
22298006) applied in the data's own library, with the same audit everywhere."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dask.dataframe as dd
import pandas as pd
import polars as pl
import pytest

from tests import snomed_rf2
from tests.test_bulk_spark import spark  # noqa: F401  (the one Spark session)
from tests.test_impact import OLD_SCT, sct_wb  # noqa: F401  (the two SNOMED CT versions)
from workbench import Workbench
from workbench.bulk.fix import AUDIT
from workbench.errors import InvalidRequestError

SCT = "http://snomed.info/sct"
OLD, NEW, ASTHMA = "307530000", "22298006", "64572001"
CODES = [OLD, ASTHMA, OLD, None, NEW]
FIXED = [NEW, ASTHMA, NEW, None, NEW]
#: the audit every library gives: rows 0 and 2 (index labels or positions)
AUDITED = [
    [OLD, NEW, "replacement", 0, "dx", f"REPLACED BY (release {snomed_rf2.VERSION})", None],
    [OLD, NEW, "replacement", 2, "dx", f"REPLACED BY (release {snomed_rf2.VERSION})", None],
]
BASE = pd.DataFrame({"id": [10, 11, 12, 13, 14], "dx": CODES})


def _plain(values: Any) -> list[Any]:
    """A column's values as Python, nulls as None."""
    return [None if pd.isna(v) else v for v in list(values)]


#: (case, the data, the column impact() is given, the fixed column as a pandas Series)
CASES: list[tuple[str, Callable[[], Any], str | None, Callable[[Any], pd.Series]]] = [
    ("pandas series", lambda: BASE["dx"], None, lambda d: d),
    ("pandas frame", lambda: BASE.copy(), "dx", lambda d: d["dx"]),
    ("pandas categorical", lambda: BASE["dx"].astype("category"), None, lambda d: d),
    ("polars series", lambda: pl.Series("dx", CODES), None, lambda d: d.to_pandas()),
    ("polars frame", lambda: pl.from_pandas(BASE), "dx", lambda d: d["dx"].to_pandas()),
    (
        "polars categorical",
        lambda: pl.Series("dx", CODES, dtype=pl.Categorical),
        None,
        lambda d: d.to_pandas(),
    ),
    ("dask frame", lambda: dd.from_pandas(BASE, npartitions=2), "dx", lambda d: d["dx"].compute()),
    ("dask series", lambda: dd.from_pandas(BASE["dx"], npartitions=3), None, lambda d: d.compute()),
]


@pytest.mark.parametrize(("case", "make", "column", "read"), CASES, ids=[c[0] for c in CASES])
def test_fix_in_the_datas_own_library(
    sct_wb: Workbench,  # noqa: F811
    case: str,
    make: Callable[[], Any],
    column: str | None,
    read: Callable[[Any], pd.Series],
) -> None:
    data = make()
    impact = sct_wb.impact(
        data, code=column, system=SCT, from_version=OLD_SCT, to_version=snomed_rf2.VERSION
    )
    fixed = impact.fix()
    assert type(fixed.data) is type(data)  # the same library, the same kind
    assert _plain(read(fixed.data)) == FIXED
    assert _plain(read(data)) == CODES  # the data given is never changed
    audit = fixed.audit.assign(column="dx")  # a Series names no column
    assert list(fixed.audit.columns) == AUDIT
    assert audit.astype(object).where(audit.notna(), None).values.tolist() == AUDITED
    assert fixed.rows_fixed == 2 and "2 rows (1 codes replaced)" in repr(fixed)
    if case.startswith("polars") and column is None:
        assert fixed.data.dtype == data.dtype  # a categorical stays categorical
    if column is not None:
        assert _frame(fixed.data)["id"].tolist() == BASE["id"].tolist()  # the rest kept


def _frame(data: Any) -> pd.DataFrame:
    """A pandas frame of a pandas, polars or Dask frame."""
    if isinstance(data, pl.DataFrame):
        return data.to_pandas()
    if isinstance(data, dd.DataFrame):
        return data.compute()
    return pd.DataFrame(data)


def test_fix_a_spark_column(sct_wb: Workbench, spark: Any) -> None:  # noqa: F811
    frame = spark.createDataFrame(list(zip(BASE["id"], CODES, strict=True)), "id long, dx string")
    # impact() on a Spark column is test_impact's; this fixes one with the pandas impact
    impact = sct_wb.impact(
        BASE, code="dx", system=SCT, from_version=OLD_SCT, to_version=snomed_rf2.VERSION
    )
    fixed = impact.fix(frame)
    assert [tuple(r) for r in fixed.data.collect()] == list(zip(BASE["id"], FIXED, strict=True))
    assert fixed.audit.astype(object).where(fixed.audit.notna(), None).values.tolist() == AUDITED
    assert fixed.rows_fixed == 2
    with pytest.raises(InvalidRequestError, match="Spark DataFrame with the column 'dx'"):
        impact.fix(frame.withColumnRenamed("dx", "code"))


def test_other_data_is_fixed_by_the_same_impact(sct_wb: Workbench) -> None:  # noqa: F811
    impact = sct_wb.impact(
        BASE, code="dx", system=SCT, from_version=OLD_SCT, to_version=snomed_rf2.VERSION
    )
    fixed = impact.fix(pl.from_pandas(BASE.iloc[::-1]))
    assert fixed.data["dx"].to_list() == FIXED[::-1]
    assert fixed.audit["row"].tolist() == [2, 4]  # positions in the data given


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (pl.DataFrame({"code": CODES}), "polars Series or a DataFrame with the column 'dx'"),
        (pd.DataFrame({"code": CODES}), "pandas, polars, Dask or Spark"),
        (dd.from_pandas(pd.DataFrame({"code": CODES}), npartitions=1), "Dask Series"),
        ([OLD, NEW], "pandas, polars, Dask or Spark"),
    ],
)
def test_data_without_the_column(sct_wb: Workbench, data: Any, says: str) -> None:  # noqa: F811
    impact = sct_wb.impact(
        BASE, code="dx", system=SCT, from_version=OLD_SCT, to_version=snomed_rf2.VERSION
    )
    with pytest.raises(InvalidRequestError, match=says):
        impact.fix(data)


def test_two_versions_that_are_the_same_change_nothing() -> None:
    wb = Workbench()
    for version in ("1", "2"):
        wb.load(
            {
                "resourceType": "CodeSystem",
                "url": "http://example.org/cs",
                "version": version,
                "status": "active",
                "content": "complete",
                "concept": [{"code": c, "display": c.upper()} for c in "abc"],
            }
        )
    data = pd.Series(["a", "b", "a", None])
    impact = wb.impact(data, system="http://example.org/cs", from_version="1", to_version="2")
    assert impact.frame["change"].tolist() == ["unchanged", "unchanged"]
    assert impact.counts == {**dict.fromkeys(impact.counts, 0), "unchanged": 3}
    assert impact.missing == 1 and wb.diff("http://example.org/cs", "1", "2").frame.empty
    fixed = impact.fix()
    assert fixed.rows_fixed == 0 and fixed.audit.empty and fixed.data.equals(data)
