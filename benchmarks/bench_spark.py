"""Benchmark of column validation on Spark: ``Workbench.validate_column`` on a Spark
DataFrame against a plain Spark ``isin`` over the value set's codes, on the same column, in
the same run, on a local ``local[2]`` session.

Run from the repository root::

    .venv/bin/python benchmarks/bench_spark.py                   # 10,000,000 rows
    .venv/bin/python benchmarks/bench_spark.py --rows 2000000 --repeat 3

The case: a generated code system of ``--codes`` codes, a value set of all of them,
``--rows`` rows of those codes plus 5% unknown codes and 1% missing values, written once to
Parquet in a temporary folder and read from there by every run. Each run writes its whole
result to Spark's ``noop`` sink: the baseline one boolean column (``isin``), validate_column
its five columns, translate_column (through a ConceptMap of every code) its seven (the
distinct codes answered inside the plan, then a broadcast hash join), each timed from the
call. ``--map-in-arrow`` also times the alternative the
backend did not choose: the answers looked up per Arrow batch in Python (``mapInArrow``).
Medians of ``--repeat`` runs after one warm-up; the goal is validate_column <= 1.5x ``isin``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from workbench import Workbench

SYSTEM = "http://example.org/fhir/CodeSystem/bench-spark"
VS = "http://example.org/fhir/ValueSet/bench-spark"
MAP = "http://example.org/fhir/ConceptMap/bench-spark"
TARGET = "http://example.org/fhir/CodeSystem/bench-spark-target"


def workbench(codes: int) -> Workbench:
    """A code system of ``codes`` codes and a value set of all of them."""
    wb = Workbench()
    concepts = [{"code": f"C{i}", "display": f"Concept {i}"} for i in range(codes)]
    wb.load(
        {
            "resourceType": "CodeSystem",
            "url": SYSTEM,
            "status": "active",
            "content": "complete",
            "concept": concepts,
        }
    )
    wb.load(
        {
            "resourceType": "ValueSet",
            "url": VS,
            "status": "active",
            "compose": {"include": [{"system": SYSTEM}]},
        }
    )
    wb.load(
        {
            "resourceType": "ConceptMap",
            "url": MAP,
            "status": "active",
            "group": [
                {"source": SYSTEM, "target": TARGET, "element": [
                    {"code": f"C{i}", "target": [{"code": f"T{i}", "equivalence": "equivalent"}]}
                    for i in range(codes)
                ]}
            ],
        }
    )  # fmt: skip
    return wb


def session(memory: str) -> Any:
    """A local Spark session on two cores, without UI or progress bars."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # pyspark on pandas 3
        from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # mapInArrow's Python workers
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench-spark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", memory)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def write_data(spark: Any, rows: int, codes: int, folder: str) -> None:
    """``rows`` codes (5% unknown, 1% missing; fixed, spread evenly) as Parquet."""
    from pyspark.sql import functions as F

    i = F.col("id")
    code = (
        F.when(i % 100 == 0, F.lit(None))
        .when(i % 20 == 1, F.concat(F.lit("U"), (i % 997).cast("string")))
        .otherwise(F.concat(F.lit("C"), ((i * 7919) % codes).cast("string")))
    )
    spark.range(rows).select(i, code.alias("code")).write.mode("overwrite").parquet(folder)


def timed(run: Callable[[], Any], repeat: int) -> float:
    """The median seconds of ``repeat`` runs, after one warm-up."""
    run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def map_in_arrow(wb: Workbench, data: Any) -> Any:
    """The alternative: the distinct codes answered on the driver as the backend does, the
    answers broadcast as Arrow and looked up per batch in Python (``index_in``, ``take``)."""
    from workbench.bulk.schema import VALIDATION
    from workbench.bulk.spark_backend import spark_schema

    codes = data.select("code").distinct().toArrow().column(0).combine_chunks()
    frame = wb.validate_column(codes.to_pandas().astype(object), VS, system=SYSTEM)
    columns = {n: frame[n].astype(object).where(frame[n].notna(), None) for n in VALIDATION.names}
    answers = pa.table({"key": codes, **{n: pa.array(v.tolist()) for n, v in columns.items()}})
    shipped = data.sparkSession.sparkContext.broadcast(answers)

    def lookup(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        answered = shipped.value
        keys = answered.column("key").combine_chunks()
        for batch in batches:
            at = pc.index_in(batch.column(0), value_set=keys, skip_nulls=False)
            yield pa.RecordBatch.from_arrays(
                [answered.column(n).combine_chunks().take(at) for n in VALIDATION.names],
                names=VALIDATION.names,
            )

    return data.select("code").mapInArrow(lookup, spark_schema(VALIDATION))


def main() -> None:
    """Run the benchmark and print the row count, the figures and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--codes", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--memory", default="2g", help="the driver's memory (local mode)")
    parser.add_argument("--map-in-arrow", action="store_true", help="time mapInArrow too")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas", FutureWarning)
    wb = workbench(args.codes)
    spark = session(args.memory)
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as folder:
        write_data(spark, args.rows, args.codes, folder)
        data = spark.read.parquet(folder)
        members = [f"C{i}" for i in range(args.codes)]

        def baseline() -> None:
            result = data.select(data["code"].isin(members).alias("result"))
            result.write.format("noop").mode("overwrite").save()

        def validated() -> None:
            result = wb.validate_column(data, VS, code="code", system=SYSTEM)
            result.write.format("noop").mode("overwrite").save()

        def translated() -> None:
            result = wb.translate_column(data, MAP, code="code", system=SYSTEM)
            result.write.format("noop").mode("overwrite").save()

        isin = timed(baseline, args.repeat)
        ours = timed(validated, args.repeat)
        mapped = timed(translated, args.repeat)
        print(f"rows: {args.rows:,} ({args.codes:,} codes, 5% unknown, 1% missing), local[2]")
        print(f"isin:             {isin:7.2f} s")
        print(f"validate_column:  {ours:7.2f} s   ratio {ours / isin:.2f}x (goal <= 1.5x)")
        print(f"translate_column: {mapped:7.2f} s   ratio {mapped / isin:.2f}x (goal <= 1.5x)")
        if args.map_in_arrow:
            arrow = timed(
                lambda: map_in_arrow(wb, data).write.format("noop").mode("overwrite").save(),
                args.repeat,
            )
            print(f"mapInArrow:      {arrow:7.2f} s   ratio {arrow / isin:.2f}x")
    spark.stop()


if __name__ == "__main__":
    main()
