"""Binding checks beyond one machine: a Spark (local[2]) or Dask DataFrame of the R4
example resources as JSON text gives a lazy DataFrame (no Spark job when it is built)
whose rows are the pandas report's, row for row."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import dask.dataframe as dd
import orjson
import pandas as pd
import pytest
from pyspark.sql import SparkSession

from tests.binding_examples import example_resources
from tests.conftest import EXAMPLES
from tests.test_bulk_spark import PANDAS_WARNING, NoJob, spark  # noqa: F401  (the session's Spark)
from workbench import Workbench
from workbench.errors import InvalidRequestError

pytestmark = [pytest.mark.filterwarnings(PANDAS_WARNING), pytest.mark.slow]


@pytest.fixture(scope="module")
def examples(package_dirs: dict[str, Path]) -> list[dict[str, Any]]:
    """The R4 examples of a few types, and one with a defect."""
    found = example_resources(package_dirs[EXAMPLES[0]] / "package")
    kept = [r for r in found if r["resourceType"] in ("Patient", "Observation", "Condition")]
    bad = copy.deepcopy(kept[0])
    bad["id"] = "defect"
    bad["status" if bad["resourceType"] == "Observation" else "gender"] = "boy"
    return [*kept, bad]


def ordered(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    plain = frame.astype(object).where(frame.notna(), None)
    return sorted((tuple(r) for r in plain.itertuples(index=False)), key=repr)


def test_spark_rows_are_the_pandas_rows_and_nothing_runs_at_build(
    spark: SparkSession,  # noqa: F811
    r4_wb: Workbench,
    examples: list[dict[str, Any]],
) -> None:
    texts = [(orjson.dumps(r).decode(),) for r in examples]
    data = spark.createDataFrame(texts, "resource string").repartition(2)
    with NoJob(spark):
        lazy = r4_wb.check_bindings(data)
    local = r4_wb.check_bindings(examples).frame
    assert len(local) > 100 and (local["severity"] == "error").any()
    assert lazy.columns == list(local.columns)
    assert sorted((tuple(r) for r in lazy.collect()), key=repr) == ordered(local)


def test_dask_rows_are_the_pandas_rows(r4_wb: Workbench, examples: list[dict[str, Any]]) -> None:
    texts = pd.DataFrame({"id": range(len(examples)),
                          "resource": [orjson.dumps(r).decode() for r in examples]})  # fmt: skip
    lazy = r4_wb.check_bindings(dd.from_pandas(texts, npartitions=3))
    local = r4_wb.check_bindings(examples).frame
    assert ordered(lazy.compute()) == ordered(local)


def test_a_frame_without_one_json_column_is_refused(
    spark: SparkSession,  # noqa: F811
    r4_wb: Workbench,
) -> None:
    two = spark.createDataFrame([("{}", "{}")], "a string, b string")
    with NoJob(spark), pytest.raises(InvalidRequestError, match="JSON text in one string"):
        r4_wb.check_bindings(two)
