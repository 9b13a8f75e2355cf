"""Views on Spark (local[2]): a DataFrame of resources as JSON text gives a lazy Spark
DataFrame (no job when it is built) whose rows are the pandas view's, row for row, on the
real R4 example Observations and Conditions, terminology functions included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest
from pyspark.sql import SparkSession

from tests.test_bulk_spark import PANDAS_WARNING, NoJob, spark  # noqa: F401  (the session's Spark)
from workbench import Workbench
from workbench.views import ViewDefinitionError

CLINICAL = "http://hl7.org/fhir/ValueSet/condition-clinical"
pytestmark = pytest.mark.filterwarnings(PANDAS_WARNING)

CODINGS = {
    "resource": "Observation",
    "select": [
        {"column": [{"name": "id", "path": "getResourceKey()"},
                    {"name": "subject", "path": "subject.getReferenceKey(Patient)"},
                    {"name": "status", "path": "status"}]},
        {"forEach": "code.coding", "column": [
            {"name": "system", "path": "system"}, {"name": "code", "path": "code"},
            {"name": "i", "path": "%rowIndex"}]},
    ],
}  # fmt: skip
CONDITIONS = {
    "resource": "Condition",
    "select": [{"column": [
        {"name": "id", "path": "id"},
        {"name": "member", "path": f"clinicalStatus.memberOf('{CLINICAL}')"},
        {"name": "display", "path": "clinicalStatus.coding.display().first()"},
        {"name": "onset", "path": "onset.ofType(dateTime).lowBoundary()"},
    ]}],
}  # fmt: skip


@pytest.fixture(scope="module")
def examples(package_dirs: dict[str, Path]) -> list[dict[str, Any]]:
    folder = package_dirs["hl7.fhir.r4.examples"]
    package = folder / "package" if (folder / "package").is_dir() else folder
    files = [*package.glob("Observation-*.json"), *package.glob("Condition-*.json")]
    return [orjson.loads(p.read_bytes()) for p in sorted(files)]


def as_text(spark: SparkSession, resources: list[dict[str, Any]]) -> Any:  # noqa: F811
    rows = [(orjson.dumps(r).decode(),) for r in resources]
    return spark.createDataFrame(rows, "resource string").repartition(2)


def ordered(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    plain = frame.astype(object).where(frame.notna(), None)
    return sorted((tuple(r) for r in plain.itertuples(index=False)), key=repr)


def collected(lazy: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(row) for row in lazy.collect()), key=repr)


@pytest.mark.parametrize("definition", [CODINGS, CONDITIONS], ids=["forEach", "terminology"])
def test_spark_rows_are_the_pandas_rows_and_nothing_runs_at_build(
    spark: SparkSession,  # noqa: F811
    r4_wb: Workbench,
    examples: list[dict[str, Any]],
    definition: dict[str, Any],
) -> None:
    data = as_text(spark, examples)
    with NoJob(spark):
        lazy = r4_wb.view(definition, data)
    local = r4_wb.view(definition, examples)
    assert len(local) > 10
    assert lazy.columns == list(local.columns)
    assert collected(lazy) == ordered(local)


def test_a_mistake_is_named_when_the_spark_view_is_built(
    spark: SparkSession,  # noqa: F811
    r4_wb: Workbench,
) -> None:
    data = as_text(spark, [{"resourceType": "Patient", "id": "p"}])
    definition = {
        "resource": "Patient",
        "select": [{"column": [{"name": "n", "path": "name.nickname"}]}],
    }
    with NoJob(spark), pytest.raises(ViewDefinitionError, match="column 'n'"):
        r4_wb.view(definition, data)
    two = data.selectExpr("resource as a", "resource as b")
    with pytest.raises(ViewDefinitionError, match="JSON text in one string column"):
        r4_wb.view({"resource": "Patient",
                    "select": [{"column": [{"name": "id", "path": "id"}]}]}, two)  # fmt: skip


def test_a_collection_column_of_nothing_is_an_empty_list_on_spark(
    spark: SparkSession,  # noqa: F811
    r4_wb: Workbench,
) -> None:
    """Spark runs the same compiled view: ``[]``, not null, where the array is absent."""
    resources = [{"resourceType": "Patient", "id": "p"},
                 {"resourceType": "Patient", "id": "q", "name": [{"family": "F"}]}]  # fmt: skip
    definition = {"resource": "Patient", "select": [{"column": [
        {"name": "id", "path": "id"},
        {"name": "v", "path": "name.family", "collection": True},
    ]}]}  # fmt: skip
    assert collected(r4_wb.view(definition, as_text(spark, resources))) == [("p", []), ("q", ["F"])]
