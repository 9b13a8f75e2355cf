"""Column validation and translation on Spark DataFrames: every row equals the pandas
result on the same data (codes, Coding and CodeableConcept structs, several systems,
displays, missing values), lazily, and bad input fails on the driver before any job runs.

One local Spark session (``local[2]``, no UI, two shuffle partitions) serves the module;
the data are small, so its start (several seconds) is most of the cost.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench.spark
from tests.test_bulk_systems import DX, LAB, OTHER, UNKNOWN, VS, loaded
from tests.test_conceptmap import ALL, FIXED, LOOP1, MAIN, A, B
from tests.test_conceptmap import OTHER as OTHER_MAP
from workbench import InvalidRequestError, ValueSetNotFoundError, Workbench
from workbench.bulk import spark_backend
from workbench.bulk.schema import TRANSLATION, VALIDATION
from workbench.bulk.translate import strongest
from workbench.terminology.conceptmap import ConceptMapNotFoundError

# pyspark 4 warns that it does not yet fully support pandas 3 (the backend itself goes
# through Arrow, not through pyspark's pandas conversions)
PANDAS_WARNING = "ignore:PySpark does not yet fully support pandas:FutureWarning"
pytestmark = pytest.mark.filterwarnings(PANDAS_WARNING)

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas", FutureWarning)
    from pyspark.sql import DataFrame, SparkSession

CODING = "struct<system:string,code:string,display:string>"
CONCEPT = f"struct<coding:array<{CODING}>,text:string>"
SCHEMA = f"id long, code string, system string, display string, coding {CODING}"


def rows_of(system: str) -> dict[str, str]:
    """The keyword that says what ``system`` is: the column ``s``, else a URI."""
    return {"system_column": system} if system == "s" else {"system": system}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The one local Spark session of the test run (two cores, no UI); its Python workers
    (which answer the distinct keys inside the plan) run this interpreter."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("workbench-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def swb() -> Workbench:
    """Two code systems in one value set, a third outside it, and the test ConceptMaps."""
    wb = loaded()
    wb.registry.add_many([dict(m) for m in ALL])
    return wb


def norm(value: Any) -> Any:
    """A cell as Python: NA, NaN and None are None; numpy scalars are Python ones."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def pandas_rows(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    return [tuple(norm(v) for v in row) for row in frame.itertuples(index=False)]


def spark_rows(frame: DataFrame) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in frame.collect()]


# --- the property ---------------------------------------------------------------------------

CODES = ["1000-1", "1002-3", "panel", "9999-9", " 1000-1", "A01", "A02", "B01", "X9", "", None]
SYSTEMS = [LAB, DX, OTHER, UNKNOWN, " " + DX, "", None]
DISPLAYS = ["Glucose", "Typh", "Typhoid", "wrong", "", None]
ROW = st.tuples(st.sampled_from(CODES), st.sampled_from(SYSTEMS), st.sampled_from(DISPLAYS))
MAPPED = ["1", "2", "3", "x", "y", "zz", "", None]


def frames(spark: SparkSession, rows: list[tuple[Any, Any, Any]]) -> tuple[pd.DataFrame, Any]:
    """The same rows as pandas (object columns, Coding dicts) and as Spark (a struct)."""
    codings = [
        None if c is None and s is None else {"system": s, "code": c, "display": d}
        for c, s, d in rows
    ]
    local = pd.DataFrame(
        {
            "id": list(range(len(rows))),
            "code": [r[0] for r in rows],
            "system": [r[1] for r in rows],
            "display": [r[2] for r in rows],
            "coding": codings,
        },
        dtype=object,
    )
    data = [
        (i, c, s, d, coding)
        for i, ((c, s, d), coding) in enumerate(zip(rows, codings, strict=True))
    ]
    return local, spark.createDataFrame(data, SCHEMA)


FORMS: list[dict[str, Any]] = [
    {"code": "code", "system_column": "system", "display": "display"},
    {"code": "code", "system_column": "system"},
    {"code": "code", "system": DX},
    {"code": "code"},  # the system inferred from the value set
    {"code": "coding"},
]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ROW, min_size=1, max_size=12))
def test_every_row_equals_pandas(
    spark: SparkSession, swb: Workbench, rows: list[tuple[Any, Any, Any]]
) -> None:
    """Each input form, on the same rows: one struct column per form (``transform``), the
    rows collected once."""
    local, data = frames(spark, rows)
    for k, form in enumerate(FORMS):
        data = data.transform(workbench.spark.validate(swb, VS, **form, into=f"v{k}"))
    got = data.orderBy("id").collect()
    for k, form in enumerate(FORMS):
        expected = pandas_rows(swb.validate_column(local, VS, **form))
        assert [tuple(row[f"v{k}"]) for row in got] == expected, form


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.sampled_from(MAPPED), st.sampled_from([A, B, None])), max_size=12),
    st.booleans(),
)
def test_translation_equals_pandas(
    spark: SparkSession, swb: Workbench, rows: list[tuple[Any, Any]], reverse: bool
) -> None:
    """Forward and ``reverse=True``, with a system column and one system, as pandas."""
    local = pd.DataFrame({"c": [r[0] for r in rows], "s": [r[1] for r in rows]}, dtype=object)
    data = spark.createDataFrame(
        [(i, *r) for i, r in enumerate(rows)], "id long, c string, s string"
    )
    systems = ("s", B if reverse else A)
    for k, system in enumerate(systems):
        data = data.transform(
            workbench.spark.translate(
                swb, MAIN["url"], code="c", **rows_of(system), reverse=reverse, into=f"t{k}"
            )
        )
    got = data.orderBy("id").collect()
    for k, system in enumerate(systems):
        expected = swb.translate_column(
            local, MAIN["url"], code="c", **rows_of(system), reverse=reverse
        )
        assert [tuple(row[f"t{k}"]) for row in got] == pandas_rows(expected)


def test_translate_column_reverse_equals_translate(spark: SparkSession, swb: Workbench) -> None:
    """``translate_column(reverse=True)`` on Spark: each row as ``wb.translate(reverse=True)``."""
    codes = ["x", "y", "w", "zz", "1", None]
    data = spark.createDataFrame([(c,) for c in codes], "c string")
    got = spark_rows(swb.translate_column(data, MAIN["url"], code="c", system=B, reverse=True))
    for row, c in zip(got, codes, strict=True):
        if c is None:
            assert row == (None, None, None, None, None, 0, None)
        else:
            assert row == tuple(
                strongest(swb.translate(c, system=B, url=MAIN["url"], reverse=True))
            )


# --- types, forms -----------------------------------------------------------------------------


def test_result_types_are_the_pandas_ones(spark: SparkSession, swb: Workbench) -> None:
    data = spark.createDataFrame([("1000-1",), (None,)], "code string")
    result = swb.validate_column(data, VS, code="code", system=LAB)
    assert result.schema == spark_backend.spark_schema(VALIDATION)
    assert [f.simpleString() for f in result.schema.fields] == [
        "result:boolean",
        "message:string",
        "display:string",
        "issue:string",
        "system:string",
    ]
    assert spark_rows(result)[1] == (None, "No code was given", None, "missing", LAB)
    mapped = swb.translate_column(data, MAIN["url"], code="code", system=A)
    assert mapped.schema == spark_backend.spark_schema(TRANSLATION)
    assert mapped.columns == TRANSLATION.names


def test_codeable_concepts_and_numbers(spark: SparkSession, swb: Workbench) -> None:
    coding = {"system": DX, "code": "A01", "display": None}
    wrong = {"system": DX, "code": "B01", "display": None}
    concepts = [
        {"coding": [wrong, coding], "text": "x"},
        {"coding": [wrong], "text": None},
        {"coding": [], "text": "only text"},
        None,
    ]
    data = spark.createDataFrame([(c,) for c in concepts], f"cc {CONCEPT}")
    local = pd.DataFrame({"cc": concepts}, dtype=object)
    expected = pandas_rows(swb.validate_column(local, VS, code="cc"))
    assert spark_rows(swb.validate_column(data, VS, code="cc")) == expected
    assert [r[0] for r in expected] == [True, False, None, None]
    numbers = spark.createDataFrame([(1.0,), (2.5,), (None,), (float("nan"),)], "n double")
    local_numbers = pd.DataFrame({"n": [1.0, 2.5, None, float("nan")]})
    expected = pandas_rows(swb.validate_column(local_numbers, VS, code="n", system=DX))
    assert spark_rows(swb.validate_column(numbers, VS, code="n", system=DX)) == expected
    assert "'1'" in str(expected[0][1])  # 1.0 is the code "1"


def test_lazy_and_in_order_on_several_partitions(spark: SparkSession, swb: Workbench) -> None:
    codes = ["A01", "B01", None, "", "1000-1", "nope"] * 50
    data = spark.createDataFrame([(i, c) for i, c in enumerate(codes)], "id long, code string")
    data = data.repartition(3, "id").sortWithinPartitions("id")
    order = [r["id"] for r in data.select("id").collect()]
    result = swb.validate_column(data, VS, code="code", system=DX)
    assert result.rdd.getNumPartitions() == data.rdd.getNumPartitions()
    expected = pandas_rows(
        swb.validate_column(pd.Series([codes[i] for i in order], dtype=object), VS, system=DX)
    )
    assert spark_rows(result) == expected


def test_empty_frame(spark: SparkSession, swb: Workbench) -> None:
    data = spark.createDataFrame([], "code string, system string")
    assert swb.validate_column(data, VS, code="code", system_column="system").collect() == []
    assert swb.translate_column(data, MAIN["url"], code="code", system_column="system").count() == 0


def test_a_coding_struct_is_translated_by_its_system_and_code(
    spark: SparkSession, swb: Workbench
) -> None:
    rows = [
        ({"system": A, "code": "1", "display": None},),
        ({"system": None, "code": "1"},),
        (None,),
    ]
    data = spark.createDataFrame(rows, f"coding {CODING}")
    result = spark_rows(swb.translate_column(data, MAIN["url"], code="coding"))
    expected = swb.translate_column(
        pd.DataFrame({"c": ["1", "1", None], "s": [A, None, None]}, dtype=object),
        MAIN["url"],
        code="c",
        system_column="s",
    )
    assert result == pandas_rows(expected)


def test_validate_column_starts_no_job_during_the_call(spark: SparkSession, swb: Workbench) -> None:
    """The call only builds a plan (no job of its job group, none at all); the answers
    are computed when the caller's action runs, and equal the pandas ones."""
    codes = ["A01", "B01", None, "", "nope", "1000-1"] * 20
    data = spark.createDataFrame([(i, c) for i, c in enumerate(codes)], "id long, code string")
    context = spark.sparkContext
    context.setJobGroup("workbench-lazy", "validate_column builds a plan only")
    try:
        with NoJob(spark):
            result = swb.validate_column(data, VS, code="code", system=DX)
        assert context.statusTracker().getJobIdsForGroup("workbench-lazy") == []
        rows = spark_rows(result.select(*VALIDATION.names))
        assert context.statusTracker().getJobIdsForGroup("workbench-lazy") != []
    finally:
        context.setJobGroup(None, None)  # type: ignore[arg-type]
    expected = pandas_rows(swb.validate_column(pd.Series(codes, dtype=object), VS, system=DX))
    assert rows == expected


@pytest.mark.parametrize(
    ("url", "reverse"),
    [(MAIN["url"], False), (MAIN["url"], True), (FIXED["url"], False), (OTHER_MAP["url"], False),
     (LOOP1["url"], False)],
)  # fmt: skip
def test_translate_column_starts_no_job_during_the_call(
    spark: SparkSession, swb: Workbench, url: str, reverse: bool
) -> None:
    """The maps travel as plain data (picklable, to the Python workers): the call starts
    no job, and the answers, computed by the caller's action, equal the pandas ones."""
    codes = ["1", "2", None, "", "nope", "3", "9", "x"] * 20
    data = spark.createDataFrame([(i, c) for i, c in enumerate(codes)], "id long, code string")
    context = spark.sparkContext
    group = f"workbench-lazy-translate-{url}-{reverse}"  # one group per case
    context.setJobGroup(group, "translate_column builds a plan only")
    try:
        with NoJob(spark):
            result = swb.translate_column(
                data, url, code="code", system=B if reverse else A, reverse=reverse
            )
        assert context.statusTracker().getJobIdsForGroup(group) == []
        rows = spark_rows(result.select(*TRANSLATION.names))
    finally:
        context.setJobGroup(None, None)  # type: ignore[arg-type]
    expected = swb.translate_column(
        pd.Series(codes, dtype=object), url, system=B if reverse else A, reverse=reverse
    )
    assert rows == pandas_rows(expected)


# --- bad input, on the driver -----------------------------------------------------------------


class NoJob:
    """Fails the test when a Spark job starts inside the block."""

    def __init__(self, spark: SparkSession) -> None:
        self.tracker = spark.sparkContext.statusTracker()

    def __enter__(self) -> None:
        self.before = self.tracker.getJobIdsForGroup(None)

    def __exit__(self, *exc: object) -> None:
        assert self.tracker.getJobIdsForGroup(None) == self.before, "a Spark job ran"


@pytest.mark.parametrize(
    ("kind", "value", "name"),
    [
        ("array<string>", ["a"], "array<string>"),
        ("map<string,string>", {"a": "b"}, "map<string,string>"),
        ("binary", bytearray(b"a"), "binary"),
        ("struct<a:string>", {"a": "x"}, "struct"),
        ("date", None, "date"),
    ],
)
def test_a_column_of_the_wrong_type_is_refused_by_name(
    spark: SparkSession, swb: Workbench, kind: str, value: Any, name: str
) -> None:
    data = spark.createDataFrame([(value, "x")], f"bad {kind}, ok string")
    with NoJob(spark):
        with pytest.raises(InvalidRequestError, match=rf"'bad'.*{name}|{name}.*'bad'"):
            swb.validate_column(data, VS, code="bad", system=DX)
        with pytest.raises(InvalidRequestError, match="'bad'"):
            swb.validate_column(data, VS, code="ok", system_column="bad")
        with pytest.raises(InvalidRequestError, match="'bad'"):
            swb.validate_column(data, VS, code="ok", system=DX, display="bad")
        with pytest.raises(InvalidRequestError, match="'bad'"):
            swb.translate_column(data, MAIN["url"], code="bad", system=A)


def test_unknown_value_set_map_or_column_fail_on_the_driver(
    spark: SparkSession, swb: Workbench
) -> None:
    data = spark.createDataFrame([("A01",)], "code string")
    with NoJob(spark):
        with pytest.raises(ValueSetNotFoundError):
            swb.validate_column(data, "http://example.org/fhir/ValueSet/none", code="code")
        with pytest.raises(ConceptMapNotFoundError, match="http://ex/none"):
            swb.translate_column(data, "http://ex/none", code="code")
        with pytest.raises(KeyError, match="'nope'"):
            swb.validate_column(data, VS, code="nope")
        with pytest.raises(InvalidRequestError, match="code="):
            swb.validate_column(data, VS)
        with pytest.raises(InvalidRequestError, match="'nope'"):
            swb.translate_column(data, MAIN["url"], code="nope")


def test_columns_named_like_the_results(spark: SparkSession, swb: Workbench) -> None:
    """Input columns called ``system``, ``display``, ``result`` do not clash."""
    data = spark.createDataFrame(
        [("A01", DX, "Cholera", 1)], "code string, system string, display string, result int"
    )
    rows = spark_rows(
        swb.validate_column(data, VS, code="code", system_column="system", display="display")
    )
    assert rows == [(True, None, "Cholera", None, DX)]
    kept = data.transform(workbench.spark.validate(swb, VS, code="code", system_column="system"))
    assert kept.columns == [*data.columns, "validation"]
    assert kept.select("result", "validation.result").first() == (1, True)
    with pytest.raises(InvalidRequestError, match="'result'"):
        data.transform(workbench.spark.validate(swb, VS, code="code", into="result"))
