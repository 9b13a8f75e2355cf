"""Benchmark of SNOMED CT from RF2 on a synthetic release with the shape and size of the
International Edition (``benchmarks/snomed_synthetic.py``: 370,000 concepts, 1.6 million
descriptions, 3 million relationships, US and GB language refsets, a few refsets).

Run from the repository root::

    .venv/bin/python benchmarks/bench_snomed.py                  # generates into /tmp once
    .venv/bin/python benchmarks/bench_snomed.py --release DIR --rows 1000000

Figures (targets from issue 10), each measured in this run:

1. import: ``wb.load_release(DIR)`` into an empty cache folder, in a fresh child process
   (target <= 120 s);
2. reopen: the same call on the built cache in a fresh child process: wall time including
   the workbench's import and the peak RSS of that process (targets <= 3 s, <= 1 GB);
   first use: in ``--first-use`` fresh children (median and range), ``load_release`` on the
   built cache plus the first ``validate_code`` against ``<< 404684003`` (targets <= 0.5 s,
   peak RSS <= 500 MB), against the baseline of the same child right after ``import
   workbench``. Peaks are the child's own ``VmHWM`` (``ru_maxrss`` would also hold the
   parent's peak: exec keeps the launching process's high-water mark, so a bench that has just
   generated the release in-process reported 1.7 GB for a child that used 170 MB);
3. ``wb.validate_code`` against the ECL value set ``<< 404684003`` (median of 2,000 warm
   calls, 1,000 members and 1,000 other concepts, each touched once before; target
   <= 20 µs); baseline: a dict look-up;
4. expanding an ECL with about 100,000 members (``<< 404684003``, every member; target
   <= 1 s), and the first expansion of an ECL never compiled before (about as large);
5. ``wb.validate_column`` of ``--rows`` SNOMED CT codes (70% members, 25% other concepts,
   5% made-up codes) against that ECL value set, against a bare ``Series.isin`` with the
   precomputed set of member codes (median of 5; target <= 1.0x): once with every row drawn
   independently (about 340,000 distinct codes, the worst case: each distinct non-member
   gets its own message), once drawn from ``--distinct`` codes (100,000, like the ICD-10-CM
   bulk benchmark's column).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import snomed_synthetic  # noqa: E402

SCT = "http://snomed.info/sct"
ECL = "<< 404684003"
VS_URL = f"{SCT}?fhir_vs=ecl/{ECL}"

CHILD = """
import json, resource, sys, time
started = time.perf_counter()
from workbench import Workbench
imported = time.perf_counter()

def peak_mb():
    # the child's own high-water mark (ru_maxrss also holds the launching parent's)
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

baseline = peak_mb()
wb = Workbench()
summary = wb.load_release(sys.argv[1], cache_dir=sys.argv[2], progress=False)
opened = time.perf_counter()
wb.validate_code(sys.argv[3], code="404684003", system="http://snomed.info/sct")
validated = time.perf_counter()
print(json.dumps({
    "seconds": opened - started, "import_s": imported - started,
    "open_s": opened - imported, "first_validate_s": validated - opened,
    "baseline_mb": baseline, "peak_mb": peak_mb(), "summary": str(summary),
}))
"""


def child(release: Path, cache: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(release), str(cache), VS_URL],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def median_us(fn: object, args: Sequence[tuple[str, ...]]) -> float:
    times = []
    for a in args:
        t = time.perf_counter()
        fn(*a)  # type: ignore[operator]
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", type=Path, default=Path(tempfile.gettempdir()) / "sct-rf2")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--distinct",
        type=int,
        default=100_000,
        help="distinct codes of the second column (the first draws every row: ~340,000)",
    )
    parser.add_argument(
        "--scale", type=float, default=1.0, help="size of a release generated now (1.0: 370,000)"
    )
    parser.add_argument(
        "--first-use", type=int, default=3, help="fresh children for the first-use figure"
    )
    parser.add_argument(
        "--only-first-use", action="store_true", help="stop after the first-use figure"
    )
    args = parser.parse_args()
    if not (args.release / "Snapshot").exists():
        print(f"generating the synthetic release into {args.release} …", flush=True)
        print(snomed_synthetic.generate(args.release, args.scale))
    sizes = sum(p.stat().st_size for p in args.release.rglob("*.txt"))
    print(f"release: {args.release} ({sizes / 2**20:.0f} MiB of RF2 text)")
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        first = child(args.release, cache)
        print(
            f"1. import            {first['seconds']:8.1f} s   (target <= 120 s)  "
            f"peak RSS {first['peak_mb']:.0f} MB"
        )
        print(f"   {first['summary']}")
        again = child(args.release, cache)
        print(
            f"2. reopen            {again['seconds']:8.2f} s   (target <= 3 s)    "
            f"peak RSS {again['peak_mb']:.0f} MB (target <= 1024 MB)"
        )
        first_use(args.release, cache, args.first_use)
        if args.only_first_use:
            return

        from workbench import Workbench

        wb = Workbench()
        wb.load_release(args.release, cache_dir=cache, progress=False)
        members = [e.code for e in wb.expand(VS_URL).entries]
        rng = np.random.default_rng(1)
        everything = wb.concepts(SCT)["code"].to_numpy()
        member_set = set(members)
        outside = [c for c in rng.choice(everything, 5000) if c not in member_set]
        sample = [(VS_URL, c) for c in rng.choice(members, 1000)] + [
            (VS_URL, c) for c in outside[:1000]
        ]
        rng.shuffle(sample)

        def validate(url: str, code: str) -> object:
            return wb.validate_code(url, code=code, system=SCT)

        median_us(validate, sample)  # every sampled code touched once: warm
        vc = median_us(validate, sample)
        lookup = {c: True for c in members}
        base = median_us(lambda _u, c: lookup.get(c), sample)
        print(f"3. validate_code     {vc:8.1f} µs  (target <= 20 µs; dict look-up {base:.2f} µs)")

        fresh = f"{SCT}?fhir_vs=ecl/{ECL} {{{{ C active = true }}}}"  # never compiled before
        t = time.perf_counter()
        expanded = wb.expand(fresh, count=len(members))
        cold = time.perf_counter() - t
        t = time.perf_counter()
        full = wb.expand(VS_URL, count=len(members))
        warm = time.perf_counter() - t
        print(
            f"4. expand {len(full.entries):,} members  {warm:8.3f} s   (target <= 1 s; a "
            f"never-compiled ECL of {len(expanded.entries):,} members: {cold:.3f} s)"
        )

        for distinct in (None, args.distinct):
            column(wb, rng, members, everything, args.rows, distinct, args.repeat)


def first_use(release: Path, cache: Path, runs: int) -> None:
    """Reopening the built cache plus the first ``validate_code`` against ``<< 404684003``,
    in ``runs`` fresh children: seconds and peak RSS, beside each child's own baseline (its
    peak right after ``import workbench``, and the import's seconds)."""
    results = [child(release, cache) for _ in range(max(runs, 1))]
    total = [float(r["open_s"]) + float(r["first_validate_s"]) for r in results]
    peaks = [float(r["peak_mb"]) for r in results]
    bases = [float(r["baseline_mb"]) for r in results]
    opens = [float(r["open_s"]) for r in results]
    imports = [float(r["import_s"]) for r in results]
    print(
        f"   first use (reopen + first validate_code, {len(results)} fresh children): "
        f"{statistics.median(total):.3f} s (range {min(total):.3f}-{max(total):.3f}; "
        f"target <= 0.5 s), of which reopen {statistics.median(opens):.3f} s; peak RSS "
        f"{statistics.median(peaks):.0f} MB (range {min(peaks):.0f}-{max(peaks):.0f}; target "
        f"<= 500 MB) = {statistics.median([p - b for p, b in zip(peaks, bases, strict=True)]):.0f}"
        f" MB above the baseline: the same child after `import workbench`, "
        f"{statistics.median(bases):.0f} MB in {statistics.median(imports):.3f} s"
    )


def column(
    wb: object,
    rng: np.random.Generator,
    members: list[str],
    everything: np.ndarray,
    n: int,
    distinct: int | None,
    repeat: int,
) -> None:
    """Figure 5 for one column: ``distinct`` None draws every row independently (about
    340,000 distinct codes); a number draws the rows from a pool of that many codes."""
    size = n if distinct is None else distinct
    kinds = rng.random(size)
    pool = np.where(
        kinds < 0.70,
        rng.choice(members, size),
        np.where(
            kinds < 0.95,
            rng.choice(everything, size),
            rng.integers(10**8, 10**9, size).astype(str),
        ),
    )
    codes = pool if distinct is None else rng.choice(pool, n)
    df = pd.DataFrame({"code": codes, "system": SCT})
    df["code"] = df["code"].astype(str)
    valid = set(members)
    df["code"].isin(valid)
    wb.validate_column(df, VS_URL, code="code", system_column="system")  # type: ignore[attr-defined]
    bases, targets = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        df["code"].isin(valid)
        bases.append(time.perf_counter() - t)
        t = time.perf_counter()
        result = wb.validate_column(df, VS_URL, code="code", system_column="system")  # type: ignore[attr-defined]
        targets.append(time.perf_counter() - t)
    b, v = statistics.median(bases), statistics.median(targets)
    share = float(pd.Series(result["result"]).fillna(False).astype(bool).mean())
    print(
        f"5. validate_column {n:,} rows, {df['code'].nunique():,} distinct codes: {v:6.3f} s "
        f"vs isin {b:6.3f} s = {v / b:.2f}x (target <= 1.0x) {'PASS' if v <= b else 'MISS'}; "
        f"{share:.0%} valid"
    )


if __name__ == "__main__":
    main()
