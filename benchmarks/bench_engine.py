"""Benchmarks of the terminology engine: package load, expansion of a whole package, and
in-process ``validate_code`` against a large is-a value set.

Run from the repository root::

    .venv/bin/python benchmarks/bench_engine.py            # everything
    .venv/bin/python benchmarks/bench_engine.py --quick    # skip (2), the slow part

What it measures:

1. Loading the whole ``hl7.terminology.r4#7.0.1`` package with ``Workbench().load(folder)``:
   wall time (median of ``--load-runs`` fresh child processes), and peak memory of the load
   in a fresh child: ``ru_maxrss`` after the load minus the child's RSS before it (the
   interpreter and the imports), plus the tracemalloc peak (in a separate child, so tracing
   does not slow the timed runs). Targets: 2 s and 300 MB. Baseline: ``orjson.loads`` over
   every resource file of the package (bytes read first, then parsed).
2. Expanding every ValueSet of that package (``wb.expand(url, version=...)``): a tally of
   the outcomes (ok, or the error class) and the total time, against the same baseline.
3. ``wb.validate_code(url, code=..., system=...)`` against a warm ValueSet of is-a filters
   over ICD-10-CM (built from ``simple-icd-10-cm`` by ``benchmarks/icd10cm.py``) holding at
   least 50,000 codes: median, p90 and p99 per call over a mix of member, non-member and
   unknown codes. Target: 20 µs median. Baseline: the median of a bare ``dict.get`` plus
   ``frozenset`` membership loop timed the same way, for the same number of iterations.
   Also the one-off costs: building the CodeSystem, loading it, the cold first call.
4. The first use of that code system: building its index (``CodeSystemIndex``, about
   98,000 concepts) with the cyclic garbage collector paused, as the engine does, against
   the same build with the pause made a no-op (the collector running), alternately, in the
   same run. Also the package load of (1) both ways, in this process.

The machine is shared and noisy, so every figure comes with a ratio against a baseline
measured in the same run. The package is downloaded into ``~/.fhir/packages`` on first use
(from the npm-configured registry); nothing else touches the network.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from workbench import Workbench, WorkbenchError
from workbench.packages import install_package, package_files

BENCH_DIR = Path(__file__).resolve().parent
PACKAGE = ("hl7.terminology.r4", "7.0.1")
LOAD_TARGET_S = 2.0
MEMORY_TARGET_MB = 300.0
VALIDATE_TARGET_US = 20.0
MIN_VALUESET_SIZE = 50_000
BENCH_VS_URL = "http://example.org/fhir/ValueSet/bench-icd10cm-is-a"
MB = 1024 * 1024

# Run in a fresh interpreter: baseline RSS after the imports, then the load. On Linux the
# peak comes from VmHWM (reset just before the load through /proc/self/clear_refs) because
# ru_maxrss also holds the peak of the parent: exec keeps the launching process's high-water
# mark, and subprocess launches children with vfork, sharing the parent's memory map.
_CHILD = r"""
import gc, json, os, resource, sys, time, tracemalloc
from workbench import Workbench

def status(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None

def maxrss():
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale

folder, trace = sys.argv[1], sys.argv[2] == "trace"
gc.collect()
out = {"rss_before": status("VmRSS"), "maxrss_before": maxrss(), "hwm_reset": False}
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    out["hwm_reset"] = True
except OSError:
    pass
out["hwm_before"] = status("VmHWM")
if trace:
    tracemalloc.start()
start = time.perf_counter()
wb = Workbench()
summary = wb.load(folder, progress=False)
out["seconds"] = time.perf_counter() - start
if trace:
    out["traced_current"], out["traced_peak"] = tracemalloc.get_traced_memory()
    tracemalloc.stop()
out["maxrss_after"] = maxrss()
out["hwm_after"] = status("VmHWM")
out["rss_after"] = status("VmRSS")
out["valuesets"] = len(summary.valuesets)
out["codesystems"] = len(summary.codesystems)
out["files"] = summary.files
print(json.dumps(out))
"""


# --- helpers --------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values (q in 0..100)."""
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), round(q / 100 * len(sorted_values) + 0.5)))
    return sorted_values[rank - 1]


def header(title: str) -> None:
    print()
    print(f"=== {title} " + "=" * max(0, 76 - len(title)))


def run_child(folder: Path, trace: bool) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(folder), "trace" if trace else "time"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"load child failed ({done.returncode}):\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --- (1) load ---------------------------------------------------------------------------


def orjson_baseline(folder: Path, runs: int = 3) -> tuple[float, int, int]:
    """Median seconds to orjson.loads every resource file; also file count and bytes."""
    blobs = [path.read_bytes() for path in package_files(folder)]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for blob in blobs:
            orjson.loads(blob)
        times.append(time.perf_counter() - start)
    return statistics.median(times), len(blobs), sum(map(len, blobs))


def bench_load(folder: Path, runs: int) -> float:
    header(f"(1) load {PACKAGE[0]}#{PACKAGE[1]} (fresh child processes)")
    base_s, n_files, n_bytes = orjson_baseline(folder)
    print(
        f"baseline orjson.loads of {n_files} resource files ({n_bytes / MB:.1f} MB), "
        f"median of 3: {base_s:.3f} s"
    )
    timed = [run_child(folder, trace=False) for _ in range(runs)]
    seconds = sorted(r["seconds"] for r in timed)
    load_s = statistics.median(seconds)
    first = timed[0]
    print(
        f"loaded {first['valuesets']} ValueSets, {first['codesystems']} CodeSystems "
        f"from {first['files']} files"
    )
    shown = ", ".join(f"{s:.3f}" for s in seconds)
    print(
        f"load time, median of {runs} fresh children: {load_s:.3f} s  (runs: {shown})  "
        f"target <= {LOAD_TARGET_S:.1f} s  {verdict(load_s <= LOAD_TARGET_S)}"
    )
    print(f"ratio load / orjson baseline = {load_s / base_s:.2f}")
    if first["rss_before"] is None:  # no /proc: ru_maxrss is all there is
        for r in timed:
            r["rss_before"], r["hwm_after"], r["rss_after"] = (
                r["maxrss_before"],
                r["maxrss_after"],
                r["maxrss_after"],
            )
    print(
        f"child baseline RSS (interpreter + imports): {first['rss_before'] / MB:.1f} MB; "
        f"VmHWM reset before the load: {'yes' if first['hwm_reset'] else 'no'}"
    )
    maxrss_peaks = [(r["maxrss_after"] - r["rss_before"]) / MB for r in timed]
    print(
        f"ru_maxrss after the load - baseline RSS: "
        f"{', '.join(f'{p:.1f}' for p in maxrss_peaks)} MB (ru_maxrss before the load: "
        f"{first['maxrss_before'] / MB:.1f} MB, inherited from this parent process, so "
        "this is only an upper bound)"
    )
    peaks = [(r["hwm_after"] - r["rss_before"]) / MB for r in timed]
    peak = max(peaks)
    print(
        f"peak RSS of the load (VmHWM after - baseline RSS), max of {runs}: {peak:.1f} MB "
        f"(runs: {', '.join(f'{p:.1f}' for p in peaks)})  target <= {MEMORY_TARGET_MB:.0f} MB  "
        f"{verdict(peak <= MEMORY_TARGET_MB)}"
    )
    kept = statistics.median((r["rss_after"] - r["rss_before"]) / MB for r in timed)
    print(f"RSS still held after the load (current - baseline), median: {kept:.1f} MB")
    traced = run_child(folder, trace=True)
    traced_peak = traced["traced_peak"] / MB
    print(
        f"tracemalloc peak of the load: {traced_peak:.1f} MB (still held: "
        f"{traced['traced_current'] / MB:.1f} MB; load under tracing {traced['seconds']:.2f} s)"
        f"  target <= {MEMORY_TARGET_MB:.0f} MB  {verdict(traced_peak <= MEMORY_TARGET_MB)}"
    )
    return base_s


# --- (2) expand every value set ---------------------------------------------------------


def bench_expand_all(folder: Path, base_s: float) -> None:
    header(f"(2) expand every ValueSet of {PACKAGE[0]}#{PACKAGE[1]}")
    wb = Workbench()
    wb.load(folder, progress=False)
    valuesets = wb.registry.all("ValueSet")
    tally: Counter[str] = Counter()
    samples: dict[str, str] = {}
    slowest: list[tuple[float, str, str]] = []
    codes = 0
    gc.collect()
    start = time.perf_counter()
    for vs in valuesets:
        url, version = vs.get("url"), vs.get("version")
        label = f"{url}|{version}" if version else str(url)
        t0 = time.perf_counter()
        try:
            expansion = wb.expand(url, version=version) if url else wb.expand(vs)
        except WorkbenchError as exc:
            outcome = type(exc).__name__
            samples.setdefault(outcome, f"{label}: {exc}")
        except Exception as exc:  # an engine bug: count it, keep going
            outcome = f"{type(exc).__name__} (unexpected)"
            samples.setdefault(outcome, f"{label}: {exc!r}")
        else:
            outcome = "ok"
            codes += expansion.total
        elapsed = time.perf_counter() - t0
        tally[outcome] += 1
        slowest.append((elapsed, label, outcome))
    total_s = time.perf_counter() - start
    print(f"value sets: {len(valuesets)}")
    for outcome, n in tally.most_common():
        print(f"  {outcome:<40} {n:>6}")
    print(f"codes in the successful expansions: {codes:,}")
    print(
        f"total expansion time: {total_s:.3f} s "
        f"(mean {total_s / max(1, len(valuesets)) * 1e3:.2f} ms per value set)"
    )
    print(f"ratio expand-all / orjson baseline of (1) = {total_s / base_s:.2f}")
    print("slowest 5:")
    for elapsed, label, outcome in sorted(slowest, reverse=True)[:5]:
        print(f"  {elapsed * 1e3:8.1f} ms  {outcome:<10} {label}")
    if samples:
        print("first error of each kind:")
        for outcome, text in samples.items():
            print(f"  {outcome}: {text[:160]}")


# --- (3) validate_code over ICD-10-CM ---------------------------------------------------


def chapter_of_codes(frame: Any) -> dict[str, str]:
    """Map each code to its chapter, from the frame (pre-ordered: parents come first)."""
    chapter_of: dict[str, str] = {}
    for code, parent in zip(frame["code"].tolist(), frame["parent"].tolist(), strict=True):
        chapter_of[code] = code if not isinstance(parent, str) else chapter_of[parent]
    return chapter_of


def time_calls(
    codes: Sequence[str], call: Callable[[str], object]
) -> tuple[list[int], list[object]]:
    """Time each call with perf_counter_ns; return the nanoseconds and the results."""
    clock = time.perf_counter_ns
    out: list[int] = []
    results: list[object] = []
    for code in codes:
        t0 = clock()
        result = call(code)
        t1 = clock()
        out.append(t1 - t0)
        results.append(result)
    return out, results


def summarize(label: str, ns: Sequence[int]) -> float:
    values = sorted(v / 1000 for v in ns)
    median = statistics.median(values)
    print(
        f"{label}: median {median:.2f} µs, p90 {percentile(values, 90):.2f} µs, "
        f"p99 {percentile(values, 99):.2f} µs  (n={len(values):,})"
    )
    return median


def summarize_kinds(mix: Sequence[str], ns: Sequence[int]) -> None:
    by_kind: dict[str, list[int]] = defaultdict(list)
    for kind, value in zip(mix, ns, strict=True):
        by_kind[kind].append(value)
    for kind in ("member", "non-member", "unknown"):
        summarize(f"    {kind:<10}", by_kind[kind])


def bench_validate(calls: int) -> dict[str, Any]:
    """(3); returns the ICD-10-CM CodeSystem it built."""
    header("(3) validate_code against an is-a ValueSet over ICD-10-CM")
    if str(BENCH_DIR) not in sys.path:
        sys.path.insert(0, str(BENCH_DIR))
    t0 = time.perf_counter()
    import simple_icd_10_cm  # noqa: F401  (parses the tabular XML on import)

    t1 = time.perf_counter()
    from icd10cm import ICD10CM_URL, icd10cm_codesystem, icd10cm_frame

    frame = icd10cm_frame()
    t2 = time.perf_counter()
    cs = icd10cm_codesystem(frame)
    t3 = time.perf_counter()
    print(
        f"one-off: import simple_icd_10_cm {t1 - t0:.2f} s, icd10cm_frame() {t2 - t1:.2f} s "
        f"({len(frame):,} rows), codesystem_from_frame {t3 - t2:.2f} s "
        f"-> build total {t3 - t0:.2f} s"
    )
    wb = Workbench()
    t4 = time.perf_counter()
    wb.load(cs, progress=False)
    t5 = time.perf_counter()

    chapter_of = chapter_of_codes(frame)
    sizes = Counter(chapter_of.values())
    chosen: list[str] = []
    for chapter, _ in sorted(sizes.items(), key=lambda item: -item[1]):
        if sum(sizes[c] for c in chosen) >= MIN_VALUESET_SIZE:
            break
        chosen.append(chapter)
    valueset = {
        "resourceType": "ValueSet",
        "url": BENCH_VS_URL,
        "version": "1",
        "status": "active",
        "compose": {
            "include": [
                {
                    "system": ICD10CM_URL,
                    "filter": [{"property": "concept", "op": "is-a", "value": c}],
                }
                for c in chosen
            ]
        },
    }
    t6 = time.perf_counter()
    wb.load(valueset, progress=False)
    t7 = time.perf_counter()
    print(
        f"one-off: load the CodeSystem {t5 - t4:.3f} s, load the ValueSet {t7 - t6:.4f} s "
        f"(is-a chapter(s) {', '.join(chosen)})"
    )

    # Code samples: members, real codes outside the value set, codes not in ICD-10-CM.
    selectable = frame.loc[~frame["abstract"], "code"].tolist()
    inside = set(chosen)
    members = [c for c in selectable if chapter_of[c] in inside]
    outsiders = [c for c in selectable if chapter_of[c] not in inside]
    known = set(chapter_of)
    rng = random.Random(20240611)
    unknown = [c + "Q9" for c in rng.sample(selectable, 5000) if c + "Q9" not in known]
    kinds = ["member"] * 60 + ["non-member"] * 25 + ["unknown"] * 15
    pools = {"member": members, "non-member": outsiders, "unknown": unknown}
    mix = [rng.choice(kinds) for _ in range(calls)]
    codes = [rng.choice(pools[kind]) for kind in mix]

    def validate(code: str) -> object:
        return wb.validate_code(BENCH_VS_URL, code=code, system=ICD10CM_URL)

    probe = members[len(members) // 2]
    c0 = time.perf_counter_ns()
    first = validate(probe)
    c1 = time.perf_counter_ns()
    print(
        f"cold first validate_code ({probe}, compiles the ValueSet and indexes the "
        f"CodeSystem): {(c1 - c0) / 1e6:.1f} ms -> result {bool(first)}"
    )
    for code in rng.sample(codes, 50):  # warm: a few calls
        validate(code)
    distinct = len(set(codes))
    print(
        f"mix: {calls:,} calls, {mix.count('member'):,} members, "
        f"{mix.count('non-member'):,} non-members, {mix.count('unknown'):,} unknown codes "
        f"({distinct:,} distinct codes, drawn at random from {len(members):,} members, "
        f"{len(outsiders):,} non-members, {len(unknown):,} unknown)"
    )
    gc.collect()
    base_ns, _ = time_calls(codes, _baseline_call(members, known))
    gc.collect()
    first_ns, results = time_calls(codes, validate)
    gc.collect()
    second_ns, _ = time_calls(codes, validate)
    outcomes: dict[str, Counter[str]] = defaultdict(Counter)
    for kind, result in zip(mix, results, strict=True):
        outcomes[kind][str(getattr(result, "issue", None))] += 1
    print(
        "outcomes (issue per kind): "
        + "; ".join(f"{kind} {dict(counter)}" for kind, counter in outcomes.items())
    )
    base_med = summarize("baseline dict.get + frozenset membership", base_ns)
    median = summarize("validate_code, warm value set, first sight of most codes", first_ns)
    summarize_kinds(mix, first_ns)
    again = summarize("validate_code, same codes again (ancestors memoised)", second_ns)
    summarize_kinds(mix, second_ns)
    print(
        f"validate_code median {median:.2f} µs, target <= {VALIDATE_TARGET_US:.0f} µs  "
        f"{verdict(median <= VALIDATE_TARGET_US)}"
    )
    print(f"ratio = median_validate / baseline = {median / base_med:.1f}")
    print(
        f"second pass: median {again:.2f} µs  {verdict(again <= VALIDATE_TARGET_US)}, "
        f"ratio = {again / base_med:.1f}"
    )
    # Expanded last: the expansion memoises the ancestors of every member, which would
    # otherwise make the first timed pass look warmer than a validator meeting new codes.
    e0 = time.perf_counter()
    size = len(wb.expand(BENCH_VS_URL))
    e1 = time.perf_counter()
    print(
        f"value set size len(wb.expand(...)) = {size:,} codes (first expand {e1 - e0:.3f} s)  "
        f"{verdict(size >= MIN_VALUESET_SIZE)} (>= {MIN_VALUESET_SIZE:,})"
    )
    return cs


def _baseline_call(members: Sequence[str], known: set[str]) -> Callable[[str], object]:
    table = dict.fromkeys(known, True)
    member_set = frozenset(members)
    get = table.get

    def call(code: str) -> object:
        return get(code), code in member_set

    return call


# --- main -------------------------------------------------------------------------------


def bench_first_use(cs: dict[str, Any], folder: Path, runs: int) -> None:
    """(4): index builds and package loads, paused and with the collector running."""
    import contextlib

    from workbench import collector
    from workbench.terminology.codesystem import CodeSystemIndex

    header("(4) first use: the collector paused while the engine builds")
    paused = collector.paused
    builds: dict[str, Callable[[], object]] = {
        "index": lambda: CodeSystemIndex(cs),
        "package": lambda: Workbench().load(folder, progress=False),
    }
    for name, build in builds.items():
        times: dict[bool, list[float]] = {True: [], False: []}
        for k in range(2 * runs):
            pause = k % 2 == 0
            # the module's function swapped for the run (what the engine's builds call)
            collector.paused = paused if pause else contextlib.nullcontext  # type: ignore[assignment]
            gc.collect()
            start = time.perf_counter()
            out = build()
            times[pause].append(time.perf_counter() - start)
            del out
        collector.paused = paused
        on, off = statistics.median(times[True]), statistics.median(times[False])
        print(
            f"{name}: paused {on:.3f} s (runs: {', '.join(f'{t:.3f}' for t in times[True])}); "
            f"collector running {off:.3f} s (runs: {', '.join(f'{t:.3f}' for t in times[False])})"
            f"; ratio {on / off:.2f}"
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="skip (2), expanding every VS")
    parser.add_argument("--calls", type=int, default=20_000, help="validate_code calls in (3)")
    parser.add_argument("--load-runs", type=int, default=3, help="fresh children timed in (1)")
    parser.add_argument("--first-runs", type=int, default=5, help="builds each way in (4)")
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]} on {sys.platform}")
    folder = install_package(*PACKAGE)
    print(f"package folder: {folder}")
    base_s = bench_load(folder, args.load_runs)
    if args.quick:
        header("(2) skipped (--quick)")
    else:
        bench_expand_all(folder, base_s)
    cs = bench_validate(args.calls)
    bench_first_use(cs, folder, args.first_runs)


if __name__ == "__main__":
    main()
