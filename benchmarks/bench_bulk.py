"""Benchmark of bulk validation: ``Workbench.validate_column`` over a million rows of
ICD-10-CM codes against a large is-a value set, against a bare ``Series.isin`` baseline.

Run from the repository root::

    .venv/bin/python benchmarks/bench_bulk.py                      # 1,000,000 rows, 5 runs
    .venv/bin/python benchmarks/bench_bulk.py --rows 100000 --repeat 7
    .venv/bin/python benchmarks/bench_bulk.py --profile            # plus a cProfile per dtype
    .venv/bin/python benchmarks/bench_bulk.py --polars-only        # only the polars figures

The case: ICD-10-CM (about 98,000 codes, built from ``simple-icd-10-cm`` by
``benchmarks/icd10cm.py``) and a ValueSet with one include, ``is-a`` chapter ``"19"`` (injury
and poisoning, S00-T88: about 54,000 codes). ``--rows`` rows (fixed seed) with a ``code``
and a ``system`` column (the ICD-10-CM URI in every row): 70% valid members (selectable
codes of chapter 19), 24% real ICD-10-CM codes outside the value set, 4% made-up codes,
1.5% members with surrounding whitespace, 0.5% missing values. The primary figures use
pandas' default string dtype (``str`` in pandas 3); the same figures follow for ``object``,
``category`` and ``string[pyarrow]`` columns, then for polars (``String`` and ``Categorical``
codes, against polars' own ``is_in`` on a precomputed Series of the valid codes; target
<= 1.2x). Every column type is timed twice in the same rounds as its baseline: the frame with
its system column, and the code Series with one ``system=``. The result's memory is also
given over the code column alone: the memory a call adds, without the answer texts shared
between calls, is the target (<= 2x, issue 24).

What it measures, per dtype:

1. Time. Baseline: ``df["code"].isin(valid)``, ``valid`` being the precomputed Python set of
   the value set's valid member codes; median of ``--repeat`` runs (after one untimed call).
   Target: ``wb.validate_column(df, url, code="code", system_column="system")``, the whole result
   frame, median of ``--repeat`` warm runs <= 1.0x that baseline. One warm-up call comes
   first (for the first dtype it compiles the value set and builds the expansion and the
   bulk indexes); its time is reported on its own. The timed runs alternate baseline and
   target, so both see the same load. Rows/s, both medians, the ratio and PASS/MISS (on
   wall time), plus the same ratio in CPU time. For an Arrow-backed column it also prints,
   for information only, a tighter reference: ``pyarrow.compute.is_in`` with a precomputed
   value-set array (``Series.isin`` on ``str`` converts the set value by value per call),
   and for every dtype, also for information, the frame against the bare test of its own
   question (``isin`` of the codes and ``==`` of the system column), which reads the system
   column as the frame must.
2. Memory of one warm call, over the input's own size (``df.memory_usage(deep=True)``):
   the tracemalloc peak in this process (numpy and Python allocations; Arrow's own memory
   pool is invisible to it), and the peak RSS growth of one call in a fresh child process
   that builds the same data: VmHWM after the call minus VmRSS before it, VmHWM being reset
   through ``/proc/self/clear_refs`` just before the call (``ru_maxrss`` where there is no
   /proc). Also the result frame's own ``memory_usage(deep=True)`` over the code column
   (information), and the memory the call adds, issue 24's figure (the target: <= 2x the
   code column): the same without the categories of the columns whose categories index is
   the very same object in a second call's result (the answer texts the workbench keeps
   once per value set and system, shared by every result that uses them, not held per
   call).
3. Sanity (asserted): the issues per kind of row (members valid, outsiders ``not-in-vs``,
   made-up and padded codes ``unknown-code``, missing ``missing``, about 70% valid), 1,000
   random rows equal to ``wb.validate_code`` on those rows (result, message, display,
   reason, system; NaN/NA taken as None; ``validate_code`` refuses a missing code, so a
   missing row is compared with the documented bulk answer: result NA, issue ``missing``),
   and the other dtypes' results (polars: a frame and a Series call each) equal to the
   primary one.

Then the same per dtype for a frame whose system column holds several systems (always run;
``--mixed-only`` runs only this part): the same rows' codes, 80% with the ICD-10-CM URI, 8%
replaced by codes of a small lab code system (LOINC-like codes, half of them in the value
set; some outside it, made up or padded with whitespace), 4% by codes of a loaded finding
code system the value set does not draw on, 4% by codes of a system nobody loaded, and 4%
ICD-10-CM codes without a system (inferred from the value set); missing codes stay missing
in every system. The value set: ICD-10-CM chapter 19 and the listed lab codes. Baseline:
``df["code"].isin(valid)`` with the value set's valid codes of both systems. Per dtype:
time (ratio and PASS/MISS, target <= 1.0), the result's memory over the code column, and
the memory the call adds. Sanity (asserted): 1,000 random rows equal to ``validate_code``,
the issues per kind of system as expected (the finding system's rows ``not-in-vs``, the
unknown system's ``unknown-system``, valid rows among ICD-10-CM, lab and system-less ones)
and every dtype's result equal to the first one's.

The machine is shared and noisy, so every time comes with a ratio against a baseline
measured in the same run.
"""

from __future__ import annotations

import argparse
import cProfile
import ctypes
import gc
import io
import json
import math
import pstats
import random
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workbench import Workbench

BENCH_DIR = Path(__file__).resolve().parent
SEED = 20240611
CHAPTER = "19"  # ICD-10-CM chapters are the codes "1" to "22"
VS_URL = "http://example.org/fhir/ValueSet/bench-bulk-icd10cm-chapter-19"
TARGET_RATIO = 1.0
POLARS_TARGET = 1.2  # polars against its own is_in (issue 24)
SAMPLE_ROWS = 1_000
DTYPES = ("default", "object", "category", "string[pyarrow]")
# Kinds of row and their shares; every kind has one expected issue (None: valid).
KINDS = ("member", "outside", "made-up", "whitespace", "missing")
SHARES = (0.70, 0.24, 0.04, 0.015, 0.005)
EXPECTED_ISSUE: dict[str, str | None] = {
    "member": None,
    "outside": "not-in-vs",
    "made-up": "unknown-code",
    "whitespace": "unknown-code",
    "missing": "missing",
}
MADE_UP_POOL = 5_000
PADDED_POOL = 2_000
MB = 1024 * 1024
# The multi-system case: one code column whose system column mixes code systems, validated
# against a value set of two of them (ICD-10-CM chapter 19 and part of a local lab system).
MIXED_VS_URL = "http://example.org/fhir/ValueSet/bench-bulk-mixed-systems"
LAB_URL = "http://example.org/fhir/CodeSystem/bench-bulk-lab"  # loaded; half in the value set
FINDING_URL = "http://example.org/fhir/CodeSystem/bench-bulk-finding"  # loaded; not in it
NOT_LOADED_URL = "http://example.org/fhir/CodeSystem/bench-bulk-not-loaded"  # unknown
LAB_CODES = 400
FINDING_CODES = 300
NOT_LOADED_POOL = 2_000
# Systems of the rows and their shares; None: the system is missing (inferred from the
# value set, the codes being ICD-10-CM's).
SYSTEM_KINDS = ("icd-10-cm", "lab", "finding", "not-loaded", "no-system")
SYSTEM_SHARES = (0.80, 0.08, 0.04, 0.04, 0.04)
# First use: ICD-10-CM loaded from its tabular XML (the release cache built beforehand), the
# first validate_column of a process against all of it.
ICD10CM = "http://hl7.org/fhir/sid/icd-10-cm"
FIRST_USE_ROWS = 200_000
FIRST_USE_KINDS = ("call", "baseline")


# --- helpers ----------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def header(title: str) -> None:
    print()
    print(f"=== {title} " + "=" * max(0, 76 - len(title)))


def interleaved(
    calls: dict[str, Callable[[], object]], repeat: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU times (``process_time``) of ``repeat`` rounds, each round calling every
    call once in turn, so that the baseline and the target see the same load on a shared
    machine. A full collection runs before each call; a call's result is dropped before the
    next one starts."""
    wall: dict[str, list[float]] = {name: [] for name in calls}
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeat):
        for name, call in calls.items():
            gc.collect()
            start, start_cpu = time.perf_counter(), time.process_time()
            out = call()
            cpu[name].append(time.process_time() - start_cpu)
            wall[name].append(time.perf_counter() - start)
            del out
    return wall, cpu


def runs(times: Sequence[float]) -> str:
    return ", ".join(f"{t:.3f}" for t in times)


def mb(n: float) -> str:
    return f"{n / MB:,.1f} MB"


def plain(value: Any) -> Any:
    """None for every kind of missing value (None, NaN, NA), Python scalars otherwise."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


# --- the data ---------------------------------------------------------------------------


@dataclass
class Case:
    """The loaded Workbench and the pools of codes the rows are drawn from."""

    wb: Workbench
    system: str
    pools: dict[str, np.ndarray]
    valid: set[str]
    chapter_size: int  # codes under the chapter, abstract ones (chapter, blocks) included
    build: dict[str, float]
    mixed_pools: dict[str, np.ndarray]  # codes per system of the multi-system case
    mixed_valid: set[str]  # the valid codes of the multi-system value set


def build_case() -> Case:
    """ICD-10-CM loaded into a Workbench with the is-a ValueSet; the value set is left cold
    (nothing here compiles or expands it)."""
    if str(BENCH_DIR) not in sys.path:
        sys.path.insert(0, str(BENCH_DIR))
    from icd10cm import ICD10CM_URL, icd10cm_codesystem, icd10cm_frame

    t0 = time.perf_counter()
    frame = icd10cm_frame()
    cs = icd10cm_codesystem(frame)
    t1 = time.perf_counter()
    wb = Workbench()
    wb.load(cs, progress=False)
    wb.load(
        {
            "resourceType": "ValueSet",
            "url": VS_URL,
            "version": "1",
            "status": "active",
            "compose": {
                "include": [
                    {
                        "system": ICD10CM_URL,
                        "filter": [{"property": "concept", "op": "is-a", "value": CHAPTER}],
                    }
                ]
            },
        },
        progress=False,
    )
    t2 = time.perf_counter()

    # Chapter of every code from the parent links (the frame lists parents first).
    chapter_of: dict[str, str] = {}
    for code, parent in zip(frame["code"].tolist(), frame["parent"].tolist(), strict=True):
        chapter_of[code] = code if not isinstance(parent, str) else chapter_of[parent]
    if CHAPTER not in chapter_of:
        raise SystemExit(f"ICD-10-CM has no chapter {CHAPTER!r}; chapters are '1' to '22'")
    abstract = dict(zip(frame["code"].tolist(), frame["abstract"].tolist(), strict=True))
    members = sorted(c for c, ch in chapter_of.items() if ch == CHAPTER and not abstract[c])
    outside = sorted(c for c, ch in chapter_of.items() if ch != CHAPTER and not abstract[c])
    chapter_size = sum(1 for ch in chapter_of.values() if ch == CHAPTER)

    rng = random.Random(SEED)
    alphabet = "0123456789ABXYZ"
    made_up: set[str] = set()
    while len(made_up) < MADE_UP_POOL:
        tail = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4)))
        code = f"{rng.choice('ABCDEFGHIJKLMNOPQRSTUVWXYZ')}{rng.randint(0, 99):02d}.{tail}"
        if code not in chapter_of:
            made_up.add(code)
    pads = (" {}", "{} ", " {} ", "{}\t", "  {}")
    padded = sorted({rng.choice(pads).format(c) for c in rng.sample(members, PADDED_POOL)})
    pools = {
        "member": np.array(members, dtype=object),
        "outside": np.array(outside, dtype=object),
        "made-up": np.array(sorted(made_up), dtype=object),
        "whitespace": np.array(padded, dtype=object),
        "missing": np.array([None], dtype=object),
    }
    build = {"icd10cm": t1 - t0, "load": t2 - t1}
    mixed_pools, mixed_valid = load_mixed(wb, ICD10CM_URL, rng)
    mixed_valid |= set(members)
    return Case(wb, ICD10CM_URL, pools, set(members), chapter_size, build, mixed_pools, mixed_valid)


def load_mixed(wb: Workbench, icd10cm: str, rng: random.Random) -> tuple[dict[str, Any], set[str]]:
    """The multi-system case's code systems and value set, loaded into ``wb``: a lab code
    system (LOINC-like codes, half of them in the value set), a finding code system
    (SNOMED-like codes, not in the value set) and the value set (ICD-10-CM chapter 19 and
    the listed lab codes). Returns the pools of codes per system of row and the lab codes
    in the value set."""

    def loinc_like(n: int) -> str:
        return f"{10000 + 37 * n}-{n % 10}"

    lab = [loinc_like(n) for n in range(LAB_CODES)]
    finding = [str(100000 + 7919 * n) for n in range(FINDING_CODES)]
    for url, codes, title in ((LAB_URL, lab, "Lab test"), (FINDING_URL, finding, "Finding")):
        wb.load(
            {
                "resourceType": "CodeSystem",
                "url": url,
                "version": "1",
                "status": "active",
                "content": "complete",
                "concept": [{"code": c, "display": f"{title} {c}"} for c in codes],
            },
            progress=False,
        )
    listed = lab[::2]
    wb.load(
        {
            "resourceType": "ValueSet",
            "url": MIXED_VS_URL,
            "version": "1",
            "status": "active",
            "compose": {
                "include": [
                    {
                        "system": icd10cm,
                        "filter": [{"property": "concept", "op": "is-a", "value": CHAPTER}],
                    },
                    {"system": LAB_URL, "concept": [{"code": c} for c in listed]},
                ]
            },
        },
        progress=False,
    )
    made_up_lab = [f"{rng.randint(1, 99999)}-{rng.randint(0, 9)}" for _ in range(200)]
    made_up_lab = sorted(set(made_up_lab) - set(lab))
    padded_lab = [f" {c}" for c in listed[:20]] + [f"{c} " for c in listed[20:40]]
    not_loaded = sorted({f"NL-{rng.randint(0, 10**6):06d}" for _ in range(NOT_LOADED_POOL)})
    pools = {
        # lab rows: mostly listed codes, some lab codes outside, made-up and padded ones
        "lab": np.array(listed * 6 + lab[1::2] * 2 + made_up_lab + padded_lab, dtype=object),
        "finding": np.array(finding, dtype=object),
        "not-loaded": np.array(not_loaded, dtype=object),
    }
    return pools, set(listed)


def make_rows(case: Case, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The codes (an object array) and the kind of each row (indexes into KINDS)."""
    rng = np.random.default_rng(SEED)
    kinds = rng.choice(len(KINDS), size=rows, p=SHARES).astype(np.int8)
    codes = np.empty(rows, dtype=object)
    for k, name in enumerate(KINDS):
        where = np.flatnonzero(kinds == k)
        pool = case.pools[name]
        codes[where] = pool[rng.integers(0, len(pool), len(where))]
    return codes, kinds


def make_frame(case: Case, codes: np.ndarray, dtype: str) -> pd.DataFrame:
    """The input frame in one dtype: ``default`` is what pandas infers for strings
    (``str`` in pandas 3), else ``object`` or ``category``."""
    systems = np.full(len(codes), case.system, dtype=object)
    if dtype == "default":
        return pd.DataFrame({"code": pd.Series(codes), "system": pd.Series(systems)})
    return pd.DataFrame(
        {"code": pd.Series(codes, dtype=dtype), "system": pd.Series(systems, dtype=dtype)}
    )


def make_mixed_rows(case: Case, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The multi-system case's codes and systems (object arrays) and each row's kind of
    system (indexes into SYSTEM_KINDS). ICD-10-CM rows and rows without a system take the
    primary case's rows (whitespace, made-up and missing codes included); a missing code
    stays missing whatever the system."""
    codes, kinds = make_rows(case, rows)
    rng = np.random.default_rng(SEED + 2)
    system_kinds = rng.choice(len(SYSTEM_KINDS), size=rows, p=SYSTEM_SHARES).astype(np.int8)
    urls = np.array([case.system, LAB_URL, FINDING_URL, NOT_LOADED_URL, None], dtype=object)
    systems = urls.take(system_kinds)
    present = kinds != KINDS.index("missing")
    for k, name in enumerate(SYSTEM_KINDS):
        pool = case.mixed_pools.get(name)
        if pool is None:
            continue
        where = np.flatnonzero((system_kinds == k) & present)
        codes[where] = pool[rng.integers(0, len(pool), len(where))]
    return codes, systems, system_kinds


def make_mixed_frame(codes: np.ndarray, systems: np.ndarray, dtype: str) -> pd.DataFrame:
    """The multi-system input frame in one dtype (as ``make_frame``)."""
    if dtype == "default":
        return pd.DataFrame({"code": pd.Series(codes), "system": pd.Series(systems)})
    return pd.DataFrame(
        {"code": pd.Series(codes, dtype=dtype), "system": pd.Series(systems, dtype=dtype)}
    )


def validate_mixed(case: Case, df: pd.DataFrame) -> pd.DataFrame:
    result: pd.DataFrame = case.wb.validate_column(
        df, MIXED_VS_URL, code="code", system_column="system"
    )
    return result


def validate(case: Case, df: pd.DataFrame) -> pd.DataFrame:
    result: pd.DataFrame = case.wb.validate_column(df, VS_URL, code="code", system_column="system")
    return result


# --- memory in a fresh child ------------------------------------------------------------


def _status(field: str) -> int | None:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _maxrss() -> int:
    import resource

    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def _malloc_trim() -> bool:
    """Give the C heap's free pages back to the OS, so RSS before the call is tight."""
    try:
        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


def child_memory(dtype: str, rows: int) -> None:
    """Build the same data, warm the value set on 1,000 rows, then measure one full call.

    Prints one JSON line. On Linux the peak comes from VmHWM, reset just before the call
    through /proc/self/clear_refs, because ru_maxrss also holds the peak of building the
    data (and, through exec, the parent's).
    """
    case = build_case()
    codes, _ = make_rows(case, rows)
    df = make_frame(case, codes, dtype)
    del codes
    validate(case, df.head(SAMPLE_ROWS))  # compiles, expands, builds the bulk indexes
    pool: Any = None
    try:
        import pyarrow

        pool = pyarrow.default_memory_pool()
    except ImportError:
        pass
    gc.collect()
    if pool is not None:
        pool.release_unused()  # Arrow's allocator gives back what it holds but does not use
    out: dict[str, Any] = {
        "input_bytes": int(df.memory_usage(deep=True).sum()),
        "trimmed": _malloc_trim(),
        "hwm_reset": False,
    }
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        out["hwm_reset"] = True
    except OSError:
        pass
    out["rss_before"] = _status("VmRSS")
    out["hwm_before"] = _status("VmHWM")
    out["maxrss_before"] = _maxrss()
    if pool is not None:
        out["arrow_backend"] = pool.backend_name
        out["arrow_before"] = pool.bytes_allocated()
        out["arrow_max_before"] = pool.max_memory()
    start = time.perf_counter()
    result = validate(case, df)
    out["seconds"] = time.perf_counter() - start
    out["hwm_after"] = _status("VmHWM")
    out["maxrss_after"] = _maxrss()
    out["rss_after"] = _status("VmRSS")
    if pool is not None:
        out["arrow_after"] = pool.bytes_allocated()
        out["arrow_max_after"] = pool.max_memory()
    out["result_bytes"] = int(result.memory_usage(deep=True).sum())
    out["rows"] = len(result)
    print(json.dumps(out))


def run_child(dtype: str, rows: int) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child-memory",
            dtype,
            "--rows",
            str(rows),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"memory child failed ({done.returncode}):\n{done.stderr}")
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


# --- first use ---------------------------------------------------------------------------


def _tabular_xml() -> Path:
    """The CMS tabular XML shipped in ``simple-icd-10-cm`` (found without importing it)."""
    import importlib.util

    spec = importlib.util.find_spec("simple_icd_10_cm")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("simple-icd-10-cm is not installed")
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    return sorted(data.glob("*tabular*.xml"))[0]


def first_use_child(kind: str, cache: str) -> None:
    """In a fresh process: open ICD-10-CM from the release cache, then time the first
    ``validate_column`` of FIRST_USE_ROWS rows against ``?fhir_vs`` (``call``; a second
    call too), or the bare membership test from the same cold start (``baseline``: the
    code column of ``wb.concepts`` as a set, then ``isin``). Prints one JSON line: wall
    times, and the first call's CPU time (``process_time``, every thread of the process: on
    a loaded machine the wall time mostly measures waiting)."""
    wb = Workbench()
    wb.load_release(_tabular_xml(), cache_dir=cache, progress=False)
    listed = sorted((_tabular_xml().parent / "code-list-April-2026.txt").read_text().split())
    pool = np.array(
        [c if len(c) <= 3 else f"{c[:3]}.{c[3:]}" for c in listed] + ["XX1", " E11.9"],
        dtype=object,
    )
    rows = pd.Series(pool[np.random.default_rng(SEED).integers(0, len(pool), FIRST_USE_ROWS)])
    rows = rows.astype("str")
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    if kind == "call":
        wb.validate_column(rows, f"{ICD10CM}?fhir_vs", system=ICD10CM)
    else:
        rows.isin(set(wb.concepts(ICD10CM)["code"].tolist()))
    t1, c1 = time.perf_counter(), time.process_time()
    if kind == "call":
        wb.validate_column(rows, f"{ICD10CM}?fhir_vs", system=ICD10CM)
    found = {"first": t1 - t0, "second": time.perf_counter() - t1, "cpu": c1 - c0}
    print(json.dumps(found))


def bench_first_use(repeat: int) -> None:
    """The first use figure: children alternating call and baseline, medians."""
    import tempfile

    header(f"first use: ICD-10-CM release, {FIRST_USE_ROWS:,} rows, fresh processes")
    with tempfile.TemporaryDirectory(prefix="bench-bulk-icd10cm-") as cache:
        t0 = time.perf_counter()
        Workbench().load_release(_tabular_xml(), cache_dir=cache, progress=False)
        print(f"release cache built in {time.perf_counter() - t0:.2f} s (not timed below)")
        times: dict[str, list[float]] = {k: [] for k in FIRST_USE_KINDS}
        cpu: dict[str, list[float]] = {k: [] for k in FIRST_USE_KINDS}
        second: list[float] = []
        for _ in range(repeat):
            for kind in FIRST_USE_KINDS:
                child = [str(Path(__file__).resolve()), "--first-use-child", kind]
                done = subprocess.run(
                    [sys.executable, *child, "--cache", cache],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                found = json.loads(done.stdout.strip().splitlines()[-1])
                times[kind].append(found["first"])
                cpu[kind].append(found["cpu"])
                if kind == "call":
                    second.append(found["second"])
    call, base = statistics.median(times["call"]), statistics.median(times["baseline"])
    print(
        f"first validate_column against {ICD10CM}?fhir_vs: {call:.3f} s median "
        f"({runs(times['call'])}), second call {statistics.median(second):.3f} s; baseline "
        f"(cold: the codes as a set, then isin) {base:.3f} s ({runs(times['baseline'])}); "
        f"ratio {call / base:.2f}"
    )
    call_cpu, base_cpu = statistics.median(cpu["call"]), statistics.median(cpu["baseline"])
    print(
        f"  CPU time of the first call {call_cpu:.3f} s median ({runs(cpu['call'])}); "
        f"baseline {base_cpu:.3f} s ({runs(cpu['baseline'])}); ratio {call_cpu / base_cpu:.2f}"
    )


def report_child(found: dict[str, Any]) -> float:
    """Print the child's figures; return the peak RSS growth of the call in bytes."""
    before = found["rss_before"]
    after = found["hwm_after"]
    if before is None or after is None:  # no /proc: ru_maxrss is all there is
        before, after = found["maxrss_before"], found["maxrss_after"]
        print("  (no /proc/self/status: ru_maxrss after - before, an under-estimate)")
    peak = float(after - before)
    size = found["input_bytes"]
    held = (found["rss_after"] or 0) - (found["rss_before"] or 0)
    print(
        f"  peak RSS growth of one call, fresh child (VmHWM after - VmRSS before): {mb(peak)}"
        f" = {peak / size:.2f}x the input ({mb(size)})"
    )
    print(
        f"    VmHWM reset before the call: {'yes' if found['hwm_reset'] else 'no'}; "
        f"malloc_trim before: {'yes' if found['trimmed'] else 'no'}; RSS before "
        f"{mb(found['rss_before'] or 0)}, still held after {mb(held)}"
        f"; call took {found['seconds']:.3f} s"
    )
    if "arrow_before" in found:
        arrow_peak = found["arrow_max_after"] - found["arrow_before"]
        if found["arrow_max_after"] > found["arrow_max_before"]:
            peak_text = f"peak during the call {mb(arrow_peak)} above 'before'"
        else:
            peak_text = f"its peak was not exceeded during the call (<= {mb(arrow_peak)})"
        print(
            f"    Arrow pool ({found['arrow_backend']}): {mb(found['arrow_before'])} before, "
            f"{mb(found['arrow_after'])} after; {peak_text}"
        )
    return peak


# --- the benchmark ----------------------------------------------------------------------


@dataclass
class Figures:
    dtype: str
    label: str
    base_s: float
    call_s: float  # a frame with a system column
    first_s: float
    input_bytes: int
    result_bytes: int
    traced_peak: float
    series_s: float = math.nan  # the code Series with one system=
    bare_s: float = math.nan  # the code Series alone (the value set's one system inferred)
    column_bytes: int = 0  # the code column alone
    rss_peak: float | None = None
    added_bytes: int | None = None  # the result without categories shared across calls
    target: float = TARGET_RATIO  # the time ratio to reach

    @property
    def ratio(self) -> float:
        return self.call_s / self.base_s

    @property
    def series_ratio(self) -> float:
        return self.series_s / self.base_s

    @property
    def bare_ratio(self) -> float:
        return self.bare_s / self.base_s


def arrow_reference(column: pd.Series, valid: set[str]) -> Callable[[], object] | None:
    """``pyarrow.compute.is_in`` with the value set already an Arrow array, when the column
    is Arrow-backed (information only: what ``Series.isin`` costs without converting the
    set value by value on every call)."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return None
    if "pyarrow" not in str(getattr(column.dtype, "storage", "")):
        return None
    arrow = pa.array(column.array)
    value_set = pa.array(sorted(valid), type=arrow.type)

    def call() -> object:
        return pc.is_in(arrow, value_set=value_set).to_numpy(zero_copy_only=False)

    return call


def shared_bytes(frame: pd.DataFrame) -> int:
    """The frame's memory counting each distinct Python object once (what it really holds):
    the object columns' pointers plus every distinct object, the other columns as usual."""
    total = int(frame.index.memory_usage(deep=True))
    for name in frame.columns:
        column = frame[name]
        if column.dtype != object:
            total += int(column.memory_usage(index=False, deep=True))
            continue
        values = column.to_numpy()
        distinct = {id(v): v for v in values.tolist()}
        total += values.nbytes + sum(sys.getsizeof(v) for v in distinct.values())
    return total


def traced_peak(case: Case, df: pd.DataFrame) -> tuple[float, float, float]:
    """tracemalloc peak and still-held bytes over one call, and the call's time under it."""
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    start_bytes, _ = tracemalloc.get_traced_memory()
    start = time.perf_counter()
    result = validate(case, df)
    seconds = time.perf_counter() - start
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return float(peak - start_bytes), float(current - start_bytes), seconds


def profile_call(
    case: Case, df: pd.DataFrame, call: Callable[[Case, pd.DataFrame], object] | None = None
) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    (call or validate)(case, df)
    profiler.disable()
    for order, limit in (("tottime", 15), ("cumulative", 25)):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(limit)
        print(f"  cProfile of one warm call, by {order}:")
        for line in text.getvalue().splitlines():
            if line.strip() and not line.startswith(("   Ordered", "   List reduced")):
                print(f"    {line}")


def bench_dtype(
    case: Case, df: pd.DataFrame, dtype: str, repeat: int, primary: bool
) -> tuple[Figures, pd.DataFrame]:
    rows = len(df)
    column = df["code"]
    label = f"{dtype} ({column.dtype})" if dtype == "default" else dtype
    header(f"{'primary' if primary else 'secondary'}: code and system columns of dtype {label}")
    input_bytes = int(df.memory_usage(deep=True).sum())
    print(f"input frame: {rows:,} rows, memory_usage(deep=True) {mb(input_bytes)}")

    gc.collect()
    start = time.perf_counter()
    result = validate(case, df)
    first_s = time.perf_counter() - start
    what = (
        "compiles the value set, builds the expansion and the bulk indexes"
        if primary
        else "value set already warm"
    )
    print(f"warm-up validate_column (one-off, {what}): {first_s:.3f} s")
    del result

    calls: dict[str, Callable[[], object]] = {
        "isin": lambda: column.isin(case.valid),
        "validate": lambda: validate(case, df),
        "series": lambda: case.wb.validate_column(column, VS_URL, system=case.system),
        "bare": lambda: case.wb.validate_column(column, VS_URL),
        # what a pandas user writes for the frame's question: information, not the target
        "both": lambda: column.isin(case.valid) & (df["system"] == case.system),
    }
    reference = arrow_reference(column, case.valid)
    if reference is not None:
        calls["arrow"] = reference
    for call in calls.values():  # untimed first calls (validate_column's was the warm-up)
        if call is not calls["validate"]:
            call()
    times, cpu = interleaved(calls, repeat)
    base_s = statistics.median(times["isin"])
    call_s = statistics.median(times["validate"])
    print(
        f"baseline Series.isin(set of {len(case.valid):,} valid codes): median of {repeat} "
        f"{base_s:.3f} s = {rows / base_s:,.0f} rows/s  (runs: {runs(times['isin'])})"
    )
    arrow_s = statistics.median(times["arrow"]) if "arrow" in times else None
    if arrow_s is not None:
        print(
            f"  reference only, not the target: pyarrow.compute.is_in with a precomputed "
            f"value-set array {arrow_s:.3f} s = {rows / arrow_s:,.0f} rows/s (runs: "
            f"{runs(times['arrow'])}): Series.isin spends ~{max(0.0, base_s - arrow_s):.3f} s "
            "turning the set into Arrow scalars, one by one, on every call"
        )
    print(
        f"validate_column, whole result frame: median of {repeat} warm runs {call_s:.3f} s "
        f"= {rows / call_s:,.0f} rows/s  (runs: {runs(times['validate'])})"
    )
    ratio = call_s / base_s
    print(
        f"ratio validate_column / isin baseline = {ratio:.2f}  target <= {TARGET_RATIO:.1f}  "
        f"{verdict(ratio <= TARGET_RATIO)}"
        + ("" if arrow_s is None else f"  (vs the pyarrow reference: {call_s / arrow_s:.2f})")
    )
    series_s = statistics.median(times["series"])
    print(
        f"validate_column on the code Series with one system=: median {series_s:.3f} s "
        f"(runs: {runs(times['series'])}); ratio to isin {series_s / base_s:.2f}  "
        f"{verdict(series_s / base_s <= TARGET_RATIO)}"
    )
    bare_s = statistics.median(times["bare"])
    print(
        f"validate_column on the code Series alone (no system=; the value set has one): median "
        f"{bare_s:.3f} s (runs: {runs(times['bare'])}); ratio to isin {bare_s / base_s:.2f}  "
        f"{verdict(bare_s / base_s <= TARGET_RATIO)}"
    )
    both_s = statistics.median(times["both"])
    print(
        f"information: isin & system == (the frame's question in pandas) {both_s:.3f} s "
        f"(runs: {runs(times['both'])}); the frame over it: {call_s / both_s:.2f}"
    )
    base_cpu, call_cpu = statistics.median(cpu["isin"]), statistics.median(cpu["validate"])
    print(
        f"  CPU time (process_time, less sensitive to other load on the machine): isin "
        f"{base_cpu:.3f} s, validate_column {call_cpu:.3f} s, ratio {call_cpu / base_cpu:.2f}"
    )

    peak, held, traced_s = traced_peak(case, df)
    print(
        f"tracemalloc peak of one call: {mb(peak)} = {peak / input_bytes:.2f}x the input "
        f"(held after: {mb(held)}; call under tracing {traced_s:.3f} s; Arrow's pool unseen)"
    )
    result = validate(case, df)
    usage = result.memory_usage(deep=True)
    result_bytes = int(usage.sum())
    per_column = ", ".join(f"{name} {mb(n)}" for name, n in usage.items() if name != "Index")
    print(
        f"result frame memory_usage(deep=True): {mb(result_bytes)} = "
        f"{result_bytes / input_bytes:.2f}x the input ({per_column}; index {mb(usage['Index'])})"
    )
    shared = shared_bytes(result)
    print(
        f"  (deep counts a string once per row; rows share their message and display objects:"
        f" counting each object once, the result holds {mb(shared)} = "
        f"{shared / input_bytes:.2f}x the input)"
    )
    column_bytes = int(column.memory_usage(index=False, deep=True))
    print(
        f"  over the code column alone ({mb(column_bytes)}): "
        f"{result_bytes / column_bytes:.2f}x (information: the shared categories counted)"
    )
    added = report_added(result, validate(case, df), column_bytes)
    figures = Figures(
        dtype,
        label,
        base_s,
        call_s,
        first_s,
        input_bytes,
        result_bytes,
        peak,
        series_s=series_s,
        bare_s=bare_s,
        column_bytes=column_bytes,
        added_bytes=added,
    )
    return figures, result


def shares_categories(column: pd.Series, other: pd.Series) -> bool:
    """True when two results' categorical columns hold the very same categories index."""
    return (
        isinstance(column.dtype, pd.CategoricalDtype)
        and isinstance(other.dtype, pd.CategoricalDtype)
        and column.cat.categories is other.cat.categories
    )


def report_added(result: pd.DataFrame, again: pd.DataFrame, column_bytes: int) -> int:
    """Print and return the memory a call adds: ``result``'s deep memory without the
    categories it shares with ``again`` (a second call's result on the same input)."""
    added = added_bytes(result, again)
    shared_names = [n for n in result.columns if shares_categories(result[n], again[n])]
    print(
        f"  memory the call adds (issue 24's figure): {mb(added)} = "
        f"{added / column_bytes:.2f}x the code column  target <= 2.0  "
        f"{verdict(added <= 2 * column_bytes)}; deep memory_usage minus the categories "
        f"of {', '.join(shared_names) or 'no column'}, which are the same index object in "
        f"two calls' results (held once by the workbench's cached answer table, not per call)"
    )
    return added


def added_bytes(result: pd.DataFrame, again: pd.DataFrame) -> int:
    """``result``'s deep memory, counting for a categorical column only its codes when
    its categories are the same object in ``again`` (a second call's result): those are
    held by the workbench's cached answer table, once, whatever the number of calls."""
    total = int(result.index.memory_usage(deep=True))
    for name in result.columns:
        column = result[name]
        if shares_categories(column, again[name]):
            total += int(column.cat.codes.to_numpy().nbytes)
        else:
            total += int(column.memory_usage(index=False, deep=True))
    return total


# --- sanity -------------------------------------------------------------------------------


def check_counts(result: pd.DataFrame, kinds: np.ndarray) -> None:
    """Counts per issue, per kind of row; asserts that every kind got its expected issue."""
    issue = result["issue"].astype(object).where(result["issue"].notna(), "(valid)")
    kind = pd.Series(np.asarray(KINDS, dtype=object)[kinds], index=result.index, name="kind")
    table = pd.crosstab(kind, issue.rename("issue")).reindex(list(KINDS), fill_value=0)
    print("rows per kind of input (down) and issue (across):")
    for line in table.to_string().splitlines():
        print(f"  {line}")
    rows = len(result)
    counts = issue.value_counts()
    print("issues: " + ", ".join(f"{name} {n:,} ({n / rows:.1%})" for name, n in counts.items()))
    for name, expected in EXPECTED_ISSUE.items():
        mask = kinds == KINDS.index(name)
        got = issue[mask].unique().tolist()
        want = "(valid)" if expected is None else expected
        assert got in ([want], []), f"{name} rows got issues {got}, expected {want}"
    result_values = result["result"]
    valid = int(result_values.fillna(False).astype(bool).sum())
    missing = int(result_values.isna().sum())
    share = valid / rows
    tolerance = max(0.01, 5 * math.sqrt(SHARES[0] * (1 - SHARES[0]) / rows))
    assert abs(share - SHARES[0]) <= tolerance, f"{share:.1%} valid, expected about 70%"
    assert missing == int((kinds == KINDS.index("missing")).sum()), "missing rows are not NA"
    print(
        f"valid rows {valid:,} = {share:.2%} (expected {SHARES[0]:.0%} +- {tolerance:.1%}); "
        f"result NA {missing:,}  PASS"
    )


def check_sample(
    case: Case,
    df: pd.DataFrame,
    result: pd.DataFrame,
    kinds: np.ndarray,
    url: str = VS_URL,
    names: Sequence[str] = KINDS,
) -> None:
    """SAMPLE_ROWS random rows equal validate_code on those rows (``kinds``: each row's
    kind, an index into ``names``, to say which kinds the sample holds)."""
    rng = random.Random(SEED + 1)
    picked = sorted(rng.sample(range(len(df)), min(SAMPLE_ROWS, len(df))))
    columns = {
        name: result[name].iloc[picked].astype(object).tolist()
        for name in ("result", "message", "display", "issue", "system")
    }
    codes = df["code"].iloc[picked].astype(object).tolist()
    systems = df["system"].iloc[picked].astype(object).tolist()
    compared = 0
    missing = 0
    mismatches: list[str] = []
    for j, row in enumerate(picked):
        got = tuple(plain(columns[name][j]) for name in columns)
        code, system = plain(codes[j]), plain(systems[j])
        if code is None:  # validate_code refuses a missing code: the documented bulk answer
            expected: tuple[Any, ...] = (None, "No code was given", None, "missing", system)
            missing += 1
        else:
            single = case.wb.validate_code(url, code=str(code), system=system)
            expected = (
                single.result,
                single.message,
                single.display,
                single.issue,
                single.system,
            )
            compared += 1
        if tuple(plain(v) for v in expected) != got:
            mismatches.append(f"row {row} ({names[kinds[row]]}) {code!r}: {got} != {expected}")
    sampled = pd.Series(np.asarray(names, dtype=object)[kinds[picked]]).value_counts()
    by_kind = ", ".join(f"{k} {n}" for k, n in sampled.items())
    print(
        f"{len(picked):,} random rows: {compared:,} equal to validate_code, {missing} missing "
        f"rows equal to the bulk 'missing' answer ({by_kind})"
        f"  {verdict(not mismatches)}"
    )
    assert not mismatches, "\n".join(mismatches[:10])


def check_same(primary: pd.DataFrame, other: pd.DataFrame, dtype: str) -> None:
    left = pd.DataFrame(primary, copy=False).astype(object)
    right = pd.DataFrame(other, copy=False).astype(object)
    same = bool(left.isna().equals(right.isna())) and bool(
        left.where(left.notna(), None).equals(right.where(right.notna(), None))
    )
    print(f"{dtype} result equals the primary result: {verdict(same)}")
    assert same, f"the {dtype} result differs from the primary one"


# --- main ---------------------------------------------------------------------------------


def bench_polars(case: Case, df: pd.DataFrame, repeat: int) -> tuple[list[Figures], dict[str, Any]]:
    """polars, with String and with Categorical code columns: a frame with a system column
    and a Series with one ``system=``, each against ``is_in`` on a precomputed polars Series
    of the valid codes (on the same column), in the same rounds. Also the results of one
    frame call and one Series call per kind (checked against the primary one later)."""
    import polars as pl

    valid = pl.Series(sorted(case.valid)).implode()
    found: list[Figures] = []
    results: dict[str, Any] = {}
    for kind in (pl.String, pl.Categorical):
        frame = pl.from_pandas(df.astype(object)).with_columns(pl.col("code").cast(kind))
        column = frame["code"]
        label = f"polars {kind}"
        header(f"polars {pl.__version__}: code and system columns, codes {kind}")
        input_bytes = int(frame.estimated_size())
        column_bytes = int(column.estimated_size())
        calls: dict[str, Callable[[], object]] = {
            "is_in": partial(column.is_in, valid),
            "frame": partial(
                case.wb.validate_column, frame, VS_URL, code="code", system_column="system"
            ),
            "series": partial(case.wb.validate_column, column, VS_URL, system=case.system),
            "bare": partial(case.wb.validate_column, column, VS_URL),
            # what a polars user writes for the frame's question: information, not the target
            "is_in+system": partial(
                frame.select, pl.col("code").is_in(valid) & (pl.col("system") == case.system)
            ),
        }
        start = time.perf_counter()
        result = calls["frame"]()
        first_s = time.perf_counter() - start
        result_bytes = int(result.estimated_size())  # type: ignore[attr-defined]
        print(
            f"result {mb(result_bytes)}: {result_bytes / column_bytes:.2f}x the code column "
            f"({mb(column_bytes)}), {result_bytes / input_bytes:.2f}x the frame "
            f"({mb(input_bytes)})  {verdict(result_bytes <= 2 * column_bytes)}"
        )
        results[f"{label} frame"] = result
        results[f"{label} Series"] = calls["series"]()
        del result
        calls["is_in"]()
        calls["bare"]()
        wall, _cpu = interleaved(calls, repeat)
        base_s = statistics.median(wall["is_in"])
        call_s, series_s = statistics.median(wall["frame"]), statistics.median(wall["series"])
        print(
            f"is_in {base_s:.3f} s (runs: {runs(wall['is_in'])}); frame {call_s:.3f} s "
            f"(runs: {runs(wall['frame'])}): ratio {call_s / base_s:.2f} "
            f"{verdict(call_s / base_s <= POLARS_TARGET)}; Series {series_s:.3f} s (runs: "
            f"{runs(wall['series'])}): ratio {series_s / base_s:.2f} "
            f"{verdict(series_s / base_s <= POLARS_TARGET)}"
        )
        bare_s = statistics.median(wall["bare"])
        print(
            f"Series alone (no system=) {bare_s:.3f} s (runs: {runs(wall['bare'])}): ratio "
            f"{bare_s / base_s:.2f} {verdict(bare_s / base_s <= POLARS_TARGET)}"
        )
        both_s = statistics.median(wall["is_in+system"])
        print(
            f"information: is_in & system == (the frame's question in polars) {both_s:.3f} s "
            f"(runs: {runs(wall['is_in+system'])}); the frame over it: {call_s / both_s:.2f}"
        )
        found.append(
            Figures(
                label,
                label,
                base_s,
                call_s,
                first_s,
                input_bytes,
                result_bytes,
                math.nan,
                series_s=series_s,
                bare_s=bare_s,
                column_bytes=column_bytes,
                target=POLARS_TARGET,
            )
        )
    return found, results


def bench_mixed(
    case: Case, frames: dict[str, pd.DataFrame], repeat: int, profile: bool
) -> tuple[list[Figures], dict[str, pd.DataFrame]]:
    """The multi-system frame per dtype: ``validate_column`` against ``isin`` on the same
    code column with the multi-system value set's valid codes, in the same rounds; the
    result memory over the code column; one result per dtype (checked later)."""
    found: list[Figures] = []
    results: dict[str, pd.DataFrame] = {}
    for n, (dtype, df) in enumerate(frames.items()):
        column = df["code"]
        label = f"mixed {dtype} ({column.dtype})" if dtype == "default" else f"mixed {dtype}"
        header(f"several systems in one column: code and system columns of dtype {label[6:]}")
        input_bytes = int(df.memory_usage(deep=True).sum())
        gc.collect()
        start = time.perf_counter()
        results[dtype] = validate_mixed(case, df)
        first_s = time.perf_counter() - start
        what = "compiles the value set, builds the bulk indexes" if n == 0 else "warm"
        print(f"warm-up validate_column (one-off, {what}): {first_s:.3f} s")
        calls: dict[str, Callable[[], object]] = {
            "isin": partial(column.isin, case.mixed_valid),
            "validate": partial(validate_mixed, case, df),
        }
        calls["isin"]()
        wall, cpu = interleaved(calls, repeat)
        base_s, call_s = statistics.median(wall["isin"]), statistics.median(wall["validate"])
        print(
            f"baseline Series.isin(set of {len(case.mixed_valid):,} valid codes): median "
            f"{base_s:.3f} s (runs: {runs(wall['isin'])})"
        )
        print(
            f"validate_column, whole result frame: median {call_s:.3f} s = "
            f"{len(df) / call_s:,.0f} rows/s (runs: {runs(wall['validate'])})"
        )
        base_cpu, call_cpu = statistics.median(cpu["isin"]), statistics.median(cpu["validate"])
        print(
            f"ratio validate_column / isin baseline = {call_s / base_s:.2f}  target <= "
            f"{TARGET_RATIO:.1f}  {verdict(call_s / base_s <= TARGET_RATIO)}  (CPU time: "
            f"{call_cpu / base_cpu:.2f})"
        )
        result_bytes = int(results[dtype].memory_usage(deep=True).sum())
        column_bytes = int(column.memory_usage(index=False, deep=True))
        print(
            f"result frame memory_usage(deep=True): {mb(result_bytes)} = "
            f"{result_bytes / column_bytes:.2f}x the code column ({mb(column_bytes)}) "
            f"(information: the shared categories counted)"
        )
        added = report_added(results[dtype], validate_mixed(case, df), column_bytes)
        if profile:
            profile_call(case, df, validate_mixed)
        found.append(
            Figures(
                dtype,
                label,
                base_s,
                call_s,
                first_s,
                input_bytes,
                result_bytes,
                math.nan,
                column_bytes=column_bytes,
                added_bytes=added,
            )
        )
    return found, results


def check_mixed(
    case: Case,
    frames: dict[str, pd.DataFrame],
    results: dict[str, pd.DataFrame],
    system_kinds: np.ndarray,
) -> None:
    """The multi-system results: a random sample equal to validate_code row by row, the
    issues per kind of system as expected, and every dtype's result equal to the first."""
    primary_dtype = next(iter(results))
    primary = results[primary_dtype]
    check_sample(case, frames[primary_dtype], primary, system_kinds, MIXED_VS_URL, SYSTEM_KINDS)
    issue = primary["issue"].astype(object).where(primary["issue"].notna(), "(valid)")
    kind = pd.Series(np.asarray(SYSTEM_KINDS, dtype=object)[system_kinds], name="kind")
    table = pd.crosstab(kind.set_axis(primary.index), issue.rename("issue"))
    print("rows per kind of system (down) and issue (across):")
    for line in table.reindex(list(SYSTEM_KINDS), fill_value=0).to_string().splitlines():
        print(f"  {line}")
    expected = {
        "finding": {"not-in-vs", "missing"},
        "not-loaded": {"unknown-system", "missing"},
    }
    for name, allowed in expected.items():
        got = set(issue[system_kinds == SYSTEM_KINDS.index(name)].unique().tolist())
        assert got <= allowed, f"{name} rows got issues {got}, expected {allowed}"
    for name in ("icd-10-cm", "lab", "no-system"):
        got = set(issue[system_kinds == SYSTEM_KINDS.index(name)].unique().tolist())
        assert "(valid)" in got, f"{name} rows: none valid ({got})"
    for dtype in list(results)[1:]:
        check_same(primary, results[dtype], f"mixed {dtype}")


def bench_single(case: Case, rows: int, repeat: int, profile: bool) -> list[Figures]:
    """The one-system case per dtype and polars, its sanity checks and the peak RSS of one
    call per dtype; the figures (polars' last)."""
    t0 = time.perf_counter()
    codes, kinds = make_rows(case, rows)
    frames = {dtype: make_frame(case, codes, dtype) for dtype in DTYPES}
    t1 = time.perf_counter()
    shares = ", ".join(f"{name} {int((kinds == k).sum()):,}" for k, name in enumerate(KINDS))
    distinct = int(pd.Series(codes).nunique(dropna=True))
    print(
        f"rows: {rows:,} (seed {SEED}): {shares}; {distinct:,} distinct codes; "
        f"built in {t1 - t0:.2f} s"
    )
    del codes

    figures: list[Figures] = []
    results: dict[str, pd.DataFrame] = {}
    for dtype in DTYPES:
        found, results[dtype] = bench_dtype(
            case, frames[dtype], dtype, repeat, primary=dtype == DTYPES[0]
        )
        figures.append(found)
        if profile:
            profile_call(case, frames[dtype])

    polars_figures, polars_results = bench_polars(case, frames["object"], repeat)

    header("sanity")
    primary = results[DTYPES[0]]
    check_counts(primary, kinds)
    check_sample(case, frames[DTYPES[0]], primary, kinds)
    for dtype in DTYPES[1:]:
        check_same(primary, results[dtype], dtype)
    for label in list(polars_results):
        check_same(primary, polars_results.pop(label).to_pandas(), label)
    print("the code Series alone (no system=), each row as validate_code infers its system:")
    bare = case.wb.validate_column(frames[DTYPES[0]]["code"], VS_URL)
    check_sample(case, frames[DTYPES[0]].assign(system=None), bare, kinds)
    del bare
    size = len(case.wb.expand(VS_URL))
    print(
        f"len(wb.expand(...)) = {size:,}, the codes under chapter {CHAPTER!r}: "
        f"{verdict(size == case.chapter_size)}"
    )
    assert size == case.chapter_size
    results.clear()
    del primary

    header("peak RSS of one warm call, in a fresh child per dtype")
    for found in figures:
        print(f"{found.label}:")
        found.rss_peak = report_child(run_child(found.dtype, rows))

    return figures + polars_figures


def bench_polars_only(case: Case, rows: int, repeat: int) -> list[Figures]:
    """The one-system polars figures alone, each result checked against pandas ``object``."""
    codes, kinds = make_rows(case, rows)
    frame = make_frame(case, codes, "object")
    print(f"rows: {rows:,} (seed {SEED}); {int(pd.Series(codes).nunique()):,} distinct codes")
    del codes
    figures, results = bench_polars(case, frame, repeat)
    header("sanity")
    primary = validate(case, frame)
    check_counts(primary, kinds)
    for label in list(results):
        check_same(primary, results.pop(label).to_pandas(), label)
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of input")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per figure (>= 5)")
    parser.add_argument("--profile", action="store_true", help="cProfile one call per dtype")
    parser.add_argument(
        "--mixed-only",
        action="store_true",
        help="only the frame whose system column holds several systems",
    )
    parser.add_argument("--first-use-only", action="store_true", help="only the first-use figure")
    parser.add_argument(
        "--polars-only", action="store_true", help="only the one-system polars figures"
    )
    parser.add_argument("--child-memory", choices=DTYPES, help=argparse.SUPPRESS)
    parser.add_argument("--first-use-child", choices=FIRST_USE_KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_memory:
        child_memory(args.child_memory, args.rows)
        return
    if args.first_use_child:
        first_use_child(args.first_use_child, args.cache)
        return
    if args.first_use_only:
        bench_first_use(args.repeat)
        return
    if args.repeat < 5:
        parser.error("--repeat must be at least 5 (medians of >= 5 runs)")

    import pyarrow

    print(
        f"python {sys.version.split()[0]} on {sys.platform}; pandas {pd.__version__}, "
        f"numpy {np.__version__}, pyarrow {pyarrow.__version__}"
    )
    case = build_case()
    print(
        f"one-off: ICD-10-CM CodeSystem built in {case.build['icd10cm']:.2f} s, loaded with "
        f"the ValueSet in {case.build['load']:.2f} s"
    )
    print(
        f"value set: is-a chapter {CHAPTER!r}, {case.chapter_size:,} codes "
        f"({len(case.valid):,} valid, i.e. not abstract); pools: "
        + ", ".join(f"{k} {len(v):,}" for k, v in case.pools.items() if k != "missing")
    )
    figures: list[Figures] = []
    if args.polars_only:
        print_summary(bench_polars_only(case, args.rows, args.repeat))
        return
    if not args.mixed_only:
        figures = bench_single(case, args.rows, args.repeat, args.profile)

    t0 = time.perf_counter()
    codes, systems, system_kinds = make_mixed_rows(case, args.rows)
    mixed_frames = {dtype: make_mixed_frame(codes, systems, dtype) for dtype in DTYPES}
    t1 = time.perf_counter()
    shares = ", ".join(
        f"{name} {int((system_kinds == k).sum()):,}" for k, name in enumerate(SYSTEM_KINDS)
    )
    distinct = len(pd.DataFrame({"c": codes, "s": systems}).drop_duplicates())
    print()
    print(
        f"several systems in one column: {args.rows:,} rows (seed {SEED + 2}): {shares}; "
        f"{distinct:,} distinct (system, code) pairs; built in {t1 - t0:.2f} s"
    )
    del codes, systems
    mixed_figures, mixed_results = bench_mixed(case, mixed_frames, args.repeat, args.profile)
    header("sanity: several systems in one column")
    check_mixed(case, mixed_frames, mixed_results, system_kinds)
    mixed_results.clear()
    mixed_frames.clear()
    figures += mixed_figures
    bench_first_use(args.repeat)

    print_summary(figures)


def print_summary(figures: Sequence[Figures]) -> None:
    """The table of every figure: time ratios, memory ratios, verdicts."""
    header("summary")
    print(
        "ratio = validate_column / the bare membership test on the same column (isin(set) "
        "for pandas, is_in for polars); result/col = result memory over the code column "
        "(information where added/col is given); no sys= = the code Series alone, its system "
        "inferred from the value set (information); added/col = the same without the "
        "categories shared with the workbench's cached answer tables: the memory the call "
        "adds, issue 24's figure (target <= 2; polars: result/col, the target there)"
    )
    print(
        f"{'column':<26} {'base s':>7} {'frame s':>8} {'ratio':>6} {'':4} {'Series s':>8} "
        f"{'ratio':>6} {'':4} {'no sys=':>7} {'':4} {'RSS/in':>7} {'result/col':>10} "
        f"{'added/col':>9} {'':4}"
    )
    for f in figures:
        rss = "n/a" if f.rss_peak is None else f"{f.rss_peak / f.input_bytes:.2f}"
        added = "n/a" if f.added_bytes is None else f"{f.added_bytes / f.column_bytes:.2f}"
        held = f.result_bytes if f.added_bytes is None else f.added_bytes
        series = (
            f"{'n/a':>8} {'':>6} {'':4}"
            if math.isnan(f.series_s)
            else f"{f.series_s:>8.3f} {f.series_ratio:>6.2f} "
            f"{verdict(f.series_ratio <= f.target):4}"
        )
        bare = (
            f"{'n/a':>7} {'':4}"
            if math.isnan(f.bare_s)
            else f"{f.bare_ratio:>7.2f} {verdict(f.bare_ratio <= f.target):4}"
        )
        print(
            f"{f.label:<26} {f.base_s:>7.3f} {f.call_s:>8.3f} {f.ratio:>6.2f} "
            f"{verdict(f.ratio <= f.target):4} {series} {bare} {rss:>7} "
            f"{f.result_bytes / f.column_bytes:>10.2f} {added:>9} "
            f"{verdict(held <= 2 * f.column_bytes):4}"
        )


if __name__ == "__main__":
    main()
