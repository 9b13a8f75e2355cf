"""Benchmark of binding checks (issue 48's figures), each against a baseline in the same run.

Run from the repository root::

    .venv/bin/python benchmarks/bench_bindings.py     # 1,000,000 resources (the issue's size)
    .venv/bin/python benchmarks/bench_bindings.py --resources 100000 --spark 20000 --repeat 1

The definitions and value sets: hl7.fhir.r4.examples 4.0.1 and hl7.fhir.uv.ips 2.0.0 loaded
(from the FHIR package cache, installed through the registry npm names when missing). The
data: their example resources (``tests/binding_examples.py``: the packages' JSON files that
are not definitions, Bundles opened; 1,511 resources).

1. The examples checked once the packages are loaded (``wb.check_bindings(resources)``),
   the first check (plans compiled, value sets expanded) and the next. Target <= 1 s.
2. The examples replicated to ``--resources`` (new ids) as NDJSON files per type:
   ``wb.check_bindings(folder)`` (read_fhir, walk, answers, report) against ``orjson.loads``
   of every line alone. Target <= 2x; the check's peak memory (a process that loads the
   packages and runs it alone) <= 2 GB.
3. Spark (local[2], ``--spark`` resources as JSON text): the lazy rows collected equal the
   pandas report's rows.

Runs alternate; the best of each is the figure (other jobs on a shared machine only ever
add time), the medians are printed beside.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_views import line, timed  # noqa: E402  (the same timing and printing)

from tests.binding_examples import example_resources  # noqa: E402
from workbench import Workbench, packages  # noqa: E402

PACKAGES = (("hl7.fhir.r4.examples", "4.0.1"), ("hl7.fhir.uv.ips", "2.0.0"))


def workbench() -> tuple[Workbench, list[dict[str, Any]]]:
    """The Workbench with both packages, and their example resources."""
    r4, ips = (packages.install_package(*p) for p in PACKAGES)
    wb = Workbench()
    for folder in (r4, ips):
        wb.load(folder, progress=False)
    return wb, example_resources(r4 / "package", ips / "package" / "example")


def write(folder: Path, examples: list[dict[str, Any]], count: int) -> int:
    """``count`` copies of the examples, round robin, with new ids, as NDJSON per type."""
    files: dict[str, Any] = {}
    size = 0
    try:
        for i in range(count):
            resource = dict(examples[i % len(examples)])
            resource["id"] = f"{resource.get('id', 'r')}-{i}"
            kind = resource["resourceType"]
            out = files.get(kind)
            if out is None:
                out = files[kind] = (folder / f"{kind}.ndjson").open("wb")
            text = orjson.dumps(resource) + b"\n"
            size += len(text)
            out.write(text)
    finally:
        for out in files.values():
            out.close()
    return size


def parse_every_line(folder: Path) -> int:
    """The baseline: ``orjson.loads`` of every line of every file."""
    n = 0
    for path in sorted(folder.glob("*.ndjson")):
        with path.open("rb") as source:
            for line in source:
                orjson.loads(line)
                n += 1
    return n


def peak_memory(folder: Path) -> float:
    """The peak resident set (GB) of a process that loads the packages and checks the
    folder alone (``VmHWM``)."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[2]); sys.path.insert(0, sys.argv[3]);"
        "from bench_bindings import workbench; wb, _ = workbench(); wb.check_bindings(sys.argv[1]);"
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code, str(folder), str(ROOT), str(ROOT / "benchmarks")],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return int(found.stdout.split()[-1]) / 1024 / 1024


def example_figures(wb: Workbench, examples: list[dict[str, Any]]) -> None:
    start = time.perf_counter()
    report = wb.check_bindings(examples)
    first = time.perf_counter() - start
    again = timed({"check": lambda: wb.check_bindings(examples)}, 3)["check"]
    met = "yes" if first <= 1 else "NO"
    print(f"1. {report.resources:,} example resources, {len(report):,} bound values: first "
          f"check {first:.2f} s, then {min(again):.2f} s; target <= 1 s: {met}")  # fmt: skip


def scale_figures(wb: Workbench, folder: Path, count: int, repeat: int) -> None:
    times = timed({"orjson": lambda: parse_every_line(folder),
                   "check": lambda: wb.check_bindings(folder)}, repeat)  # fmt: skip
    line(f"2. {count:,} resources read and checked, against orjson.loads of every line",
         times["check"], times["orjson"], 2.0)  # fmt: skip
    gigabytes = peak_memory(folder)
    print(f"   peak memory (packages loaded, then the check): {gigabytes:.2f} GB, "
          f"target <= 2 GB: {'yes' if gigabytes <= 2 else 'NO'}")  # fmt: skip


def spark_figures(wb: Workbench, folder: Path, count: int) -> None:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())  # fmt: skip
    spark.sparkContext.setLogLevel("ERROR")
    small = folder / "spark"
    small.mkdir()
    lines = []
    for path in sorted(folder.glob("*.ndjson")):
        with path.open("rb") as source:
            lines += [t for _, t in zip(range(count // 20 + 1), source, strict=False)]
    lines = lines[:count]
    (small / "all.ndjson").write_bytes(b"".join(lines))
    data = spark.read.text(str(small / "all.ndjson")).repartition(2)
    start = time.perf_counter()
    rows = sorted((tuple(r) for r in wb.check_bindings(data).collect()), key=repr)
    took = time.perf_counter() - start
    local = wb.check_bindings(small).frame
    plain = local.astype(object).where(local.notna(), None)
    same = rows == sorted((tuple(r) for r in plain.itertuples(index=False)), key=repr)
    print(f"3. Spark over {len(lines):,} resources: {len(rows):,} rows in {took:.1f} s; "
          f"equal to pandas: {'yes' if same else 'NO'}")  # fmt: skip
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--resources", type=int, default=1_000_000)
    parser.add_argument("--spark", type=int, default=200_000, help="resources for Spark (0: none)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    wb, examples = workbench()
    example_figures(wb, examples)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        size = write(folder, examples, args.resources)
        print(f"   ({args.resources:,} resources, {size / 1e9:.2f} GB of NDJSON)")
        scale_figures(wb, folder, args.resources, args.repeat)
        if args.spark:
            spark_figures(wb, folder, args.spark)


if __name__ == "__main__":
    main()
