"""Benchmark of the ``workbench validate`` command on a large Parquet file of ICD-10-CM codes,
against reading the same column with pyarrow and a bare ``is_in``, in the same run.

Run from the repository root::

    .venv/bin/python benchmarks/bench_cli.py                   # 10,000,000 rows, 7 runs
    .venv/bin/python benchmarks/bench_cli.py --rows 1000000 --repeat 5

The case: the ICD-10-CM release that ``simple-icd-10-cm`` ships (its tabular XML, imported
once into a release cache in a temporary folder before timing), and a Parquet file of
``--rows`` rows (fixed seed, row groups of 1,000,000) in a temporary folder: a ``code``
column of 90% selectable ICD-10-CM codes, 8% made-up codes shaped like them, 1% codes with a
trailing space and 1% missing values.

Baseline: the same work as a script of its own, run as a subprocess as the command is
(``BASELINE``: a Python process that imports pyarrow, reads the valid codes from a
Parquet file of them, reads the column with ``pyarrow.dataset`` in batches of 256,000 rows
and counts ``pyarrow.compute.is_in`` of each batch against the valid codes); both are
pipeline steps started fresh, each paying its own start-up and a cold allocator.
Target: ``workbench validate FILE --column code --system ICD10CM --release XML
--release-cache CACHE --no-default-content --fail-under 0``, run as a subprocess as a
pipeline runs it (start-up, opening the release from its cache, streamed batches, summary),
wall time, the best of ``--repeat`` runs <= 1.5x the baseline script's best (medians printed
beside: other jobs on this shared machine only ever add time, and move a median by up to
2x), and its peak RSS (the child's ``ru_maxrss``) <= 1.5 GB. Runs alternate baseline and
target. Sanity (asserted): the command's valid count equals the baseline's.

The same pair is also measured warm, in this process: the baseline's loop, and the command
called through its Click entry point (``cli.main([...], standalone_mode=False)``: a new
Workbench, the release opened from its cache, the file streamed), each after the earlier
runs (the allocator keeps its pages); their ratio is the second target, <= 1.5x. Printed
beside them, and not a target: the command as a process against the warm loop, which sets a
fresh process's start-up and cold allocator against a loop that pays neither.

Before timing, the package's modules are compiled to bytecode (``compileall``, as an install
does: a checkout run with ``PYTHONDONTWRITEBYTECODE`` would otherwise compile them in every
run). Also printed, to tell the fixed cost from the per-row one: the command's start-up, its
median wall time on a one-row file of the same kind (imports, the release opened from its
cache, one distinct code validated).
And the CPU times (user and system, every thread, of each child from ``getrusage``), which
other jobs on the machine disturb less than wall times.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import importlib.util
import io
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

import workbench
from workbench import Workbench
from workbench.cli.main import cli

ICD10CM = "http://hl7.org/fhir/sid/icd-10-cm"
MAX_RATIO = 1.5
MAX_RSS = 1.5 * 2**30


def icd10cm_xml() -> Path:
    """The ICD-10-CM tabular XML that ``simple-icd-10-cm`` ships."""
    spec = importlib.util.find_spec("simple_icd_10_cm")
    assert spec is not None and spec.submodule_search_locations
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    return sorted(data.glob("*tabular*.xml"))[0]


def valid_codes(xml: Path, cache: Path) -> np.ndarray:
    """Import the release into ``cache`` and return its selectable codes."""
    wb = Workbench()
    wb.load_release(xml, cache_dir=cache, progress=False)
    concepts = wb.concepts(ICD10CM)
    if "abstract" in concepts:
        concepts = concepts[~concepts["abstract"].fillna(False).astype(bool)]
    return concepts["code"].astype(str).to_numpy(dtype=object)


def write_rows(path: Path, valid: np.ndarray, rows: int) -> None:
    """The Parquet file: 90% valid, 8% made up, 1% padded, 1% missing, in row groups."""
    rng = np.random.default_rng(40)
    made_up = np.array([f"Z{n:02d}.{n % 7}X{n % 5}" for n in range(500)], dtype=object)
    with pq.ParquetWriter(path, pa.schema([("code", pa.string())])) as writer:
        for start in range(0, rows, 1_000_000):
            n = min(1_000_000, rows - start)
            kind = rng.random(n)
            codes = valid[rng.integers(0, len(valid), n)].copy()
            bogus = kind >= 0.90
            codes[bogus] = made_up[rng.integers(0, len(made_up), int(bogus.sum()))]
            padded = (kind >= 0.98) & (kind < 0.99)
            codes[padded] = [c + " " for c in codes[padded]]
            array = pa.array(codes, type=pa.string(), mask=kind >= 0.99)
            writer.write_table(pa.table({"code": array}))


def baseline(path: Path, valid: pa.Array) -> tuple[float, int, float]:
    """Read the column in batches and count the valid codes with ``pc.is_in``: wall time,
    the count, CPU time (of every thread)."""
    start, cpu = time.perf_counter(), time.process_time()
    found = 0
    for batch in ds.dataset(path).scanner(columns=["code"], batch_size=256_000).to_batches():
        found += pc.sum(pc.is_in(batch.column(0), value_set=valid)).as_py() or 0
    return time.perf_counter() - start, found, time.process_time() - cpu


#: the baseline as a script: argv[1] the Parquet file, argv[2] the valid codes' Parquet file
BASELINE = """
import sys
import pyarrow.compute as pc, pyarrow.dataset as ds, pyarrow.parquet as pq
valid = pq.read_table(sys.argv[2]).column(0).combine_chunks()
found = 0
for batch in ds.dataset(sys.argv[1]).scanner(columns=["code"], batch_size=256_000).to_batches():
    found += pc.sum(pc.is_in(batch.column(0), value_set=valid)).as_py() or 0
print(found)
"""


def baseline_process(path: Path, valid_file: Path) -> tuple[float, int, float]:
    """``BASELINE`` as a subprocess: wall time, the count, CPU time (user and system)."""
    start, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(
        [sys.executable, "-c", BASELINE, str(path), str(valid_file)],
        capture_output=True,
        text=True,
        timeout=1800,
        check=True,
    )
    return time.perf_counter() - start, int(done.stdout), _children_cpu() - cpu


def command(path: Path, xml: Path, cache: Path) -> tuple[float, int, str, float]:
    """Run ``workbench validate``; its wall time, its valid count, its output and its CPU
    time (user and system, of every thread)."""
    args = [sys.executable, "-m", "workbench.cli", "validate", str(path), "--column", "code"]
    args += ["--system", ICD10CM, "--release", str(xml), "--release-cache", str(cache)]
    args += ["--no-default-content", "--fail-under", "0"]
    start, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(args, capture_output=True, text=True, timeout=1800)
    elapsed, cpu = time.perf_counter() - start, _children_cpu() - cpu
    assert done.returncode == 0, done.stderr
    match = re.search(r"^valid: (\d+)", done.stdout, re.M)
    assert match, done.stdout
    return elapsed, int(match.group(1)), done.stdout, cpu


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def command_in_process(path: Path, xml: Path, cache: Path) -> tuple[float, int]:
    """The same command run in this process (warm, as the loop it is compared with): its
    wall time and its valid count."""
    args = ["validate", str(path), "--column", "code", "--system", ICD10CM, "--release"]
    args += [str(xml), "--release-cache", str(cache), "--no-default-content"]
    out = io.StringIO()
    start = time.perf_counter()
    code: object = 0
    with contextlib.redirect_stdout(out):
        try:
            cli.main([*args, "--fail-under", "0"], standalone_mode=False)
        except SystemExit as exited:  # the command's exit code
            code = exited.code
    elapsed = time.perf_counter() - start
    assert code in (0, None), (code, out.getvalue())
    match = re.search(r"^valid: (\d+)", out.getvalue(), re.M)
    assert match, out.getvalue()
    return elapsed, int(match.group(1))


def main() -> None:
    """Build the case, run baseline and target alternately, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        folder = Path(tmp)
        xml, cache, path = icd10cm_xml(), folder / "cache", folder / "codes.parquet"
        valid = valid_codes(xml, cache)
        write_rows(path, valid, options.rows)
        size = path.stat().st_size
        print(f"{options.rows:,} rows, {len(valid):,} valid codes, Parquet {size / 1e6:.1f} MB")
        valid_array = pa.array(valid, type=pa.string())
        valid_file = folder / "valid.parquet"
        pq.write_table(pa.table({"code": valid_array}), valid_file)
        compileall.compile_dir(Path(workbench.__file__).parent, quiet=1)
        one = folder / "one.parquet"
        write_rows(one, valid, 1)
        runs: dict[str, list[float]] = defaultdict(list)
        for _ in range(options.repeat):
            out = one_round(runs, (path, one, valid_file, valid_array), xml, cache)
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    print(out)
    report({name: (min(times), times) for name, times in runs.items()}, rss)


def one_round(
    runs: dict[str, list[float]], case: tuple[Path, Path, Path, pa.Array], xml: Path, cache: Path
) -> str:
    """One run of each, in turn (each count asserted equal to the baseline's); the command's
    output."""
    path, one, valid_file, valid_array = case
    runs["start"].append(command(one, xml, cache)[0])
    seconds, expected, cpu = baseline_process(path, valid_file)
    runs["base"].append(seconds)
    runs["base cpu"].append(cpu)
    seconds, counted, _ = baseline(path, valid_array)
    runs["warm"].append(seconds)
    assert counted == expected, (counted, expected)
    seconds, counted, out, cpu = command(path, xml, cache)
    runs["cli"].append(seconds)
    runs["cli cpu"].append(cpu)
    assert counted == expected, (counted, expected)
    seconds, counted = command_in_process(path, xml, cache)
    runs["cli warm"].append(seconds)
    assert counted == expected, (counted, expected)
    return out


def report(found: dict[str, tuple[float, list[float]]], rss: float) -> None:
    """Print the figures (each the best run, and all the runs) and the verdicts (on the
    best runs; the ratios of the medians beside them)."""
    (base, base_runs), (cli, cli_runs) = found["base"], found["cli"]
    (warm, warm_runs), (inside, inside_runs) = found["warm"], found["cli warm"]
    start, start_runs = found["start"]
    print("best runs (all runs in order):")
    print(f"baseline (pyarrow read + is_in, a script): {base:.2f} s  runs {_runs(base_runs)}")
    print(f"workbench validate:              {cli:.2f} s  runs {_runs(cli_runs)}")
    print(f"  of which start-up (one row):   {start:.2f} s  runs {_runs(start_runs)}")
    print(f"  the rest, against the baseline: {(cli - start) / base:.2f}x")
    print(f"the same loop in this process (warm): {warm:.2f} s  runs {_runs(warm_runs)}")
    print(f"the command in this process (warm):   {inside:.2f} s  runs {_runs(inside_runs)}")
    print(f"  the command as a process against the warm loop: {cli / warm:.2f}x")
    (cpu_base, base_cpu), (cpu_cli, cli_cpu) = found["base cpu"], found["cli cpu"]
    print(
        f"CPU time (less sensitive to other jobs): baseline script {cpu_base:.2f} s, command "
        f"{cpu_cli:.2f} s: {cpu_cli / cpu_base:.2f}x  runs {_runs(base_cpu)} / {_runs(cli_cpu)}"
    )
    for label, (target, baseline_runs) in (
        ("process against process", (cli_runs, base_runs)),
        ("warm against warm", (inside_runs, warm_runs)),
    ):
        ratio = min(target) / min(baseline_runs)
        medians = statistics.median(target) / statistics.median(baseline_runs)
        paired = statistics.median(t / b for t, b in zip(target, baseline_runs, strict=True))
        verdict = "PASS" if ratio <= MAX_RATIO else "MISS"
        print(
            f"ratio, {label}: best {ratio:.2f}x (target <= {MAX_RATIO}x): {verdict}; "
            f"medians {medians:.2f}x; median of each round's ratio {paired:.2f}x"
        )
    print(
        f"peak RSS of the command {rss / 2**30:.2f} GB (target <= 1.5 GB): "
        f"{'PASS' if rss <= MAX_RSS else 'MISS'}"
    )


def _runs(times: list[float]) -> str:
    return ", ".join(f"{t:.2f}" for t in times)


if __name__ == "__main__":
    main()
