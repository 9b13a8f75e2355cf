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


#: A profile no package defines.
ABSENT = "http://example.org/StructureDefinition/never-loaded"
#: JSON texts that are no resource, and the reason each one's row gives.
UNREADABLE = [
    ('{"resourceType": "Observation", "id": "cut"', "not valid JSON"),
    ("[1, 2]", "a JSON array, not an object"),
    ('{"resourceType": "Nope"}', "resourceType 'Nope' is not a FHIR R4 resource type"),
    ('"a string"', "a JSON string, not an object"),
]


@pytest.mark.parametrize("backend", ["spark", "dask"])
def test_what_a_report_counts_as_problems_are_rows_of_a_lazy_check(
    request: pytest.FixtureRequest,
    r4_wb: Workbench,
    examples: list[dict[str, Any]],
    backend: str,
) -> None:
    """One unreadable text never fails the lazy check: each is a row of its own (nothing
    checked, issue ``structure``, the reader's reason), and so is a declared profile that
    is not loaded (issue ``not-found``: the pandas report's problems); the rest are the
    pandas rows. A Bundle's resources are checked as the reader opens Bundles."""
    bundle = {"resourceType": "Bundle", "type": "collection",
              "entry": [{"resource": examples[1]}, {"resource": [1]}]}  # fmt: skip
    declared = {**copy.deepcopy(examples[0]), "id": "declared", "meta": {"profile": [ABSENT]}}
    texts = [orjson.dumps(r).decode() for r in [*examples, bundle, declared]]
    texts[3:3] = [text for text, _ in UNREADABLE]
    if backend == "spark":
        session = request.getfixturevalue("spark")
        data = session.createDataFrame([(t,) for t in texts], "resource string").repartition(2)
        rows = pd.DataFrame([r.asDict() for r in r4_wb.check_bindings(data).collect()])
    else:
        frame = pd.DataFrame({"resource": texts})
        rows = r4_wb.check_bindings(dd.from_pandas(frame, npartitions=3)).compute()
        rows = rows.reset_index(drop=True)  # (each partition's rows are numbered from 0)
    unread = rows[rows["issue"] == "structure"]
    unread = unread[unread["resource_type"].isna()]
    expected = [why for _, why in UNREADABLE] + ["entry[1].resource: a JSON array"]
    assert len(unread) == len(expected) and unread["result"].isna().all()
    assert all(any(why in m for m in unread["message"]) for why in expected)
    assert (unread["severity"] == "error").all()
    missing = rows[(rows["issue"] == "not-found") & (rows["profile"] == ABSENT)]
    assert len(missing) == 1 and "is not loaded" in missing["message"].iloc[0]
    local = r4_wb.check_bindings([*examples, examples[1], declared])
    assert [p.name for p in local.problems if p.kind == "profile-not-loaded"] == [ABSENT]
    assert ordered(rows.drop([*unread.index, *missing.index])) == ordered(local.frame)


def test_a_frame_without_one_json_column_is_refused(
    spark: SparkSession,  # noqa: F811
    r4_wb: Workbench,
) -> None:
    two = spark.createDataFrame([("{}", "{}")], "a string, b string")
    with NoJob(spark), pytest.raises(InvalidRequestError, match="JSON text in one string"):
        r4_wb.check_bindings(two)
