"""Benchmark of LOINC from its release files on a synthetic release of a real one's size
(``benchmarks/loinc_synthetic.py``: 100,000 terms, 60,000 parts, 5,000 answer lists, two
linguistic variants).

Run from the repository root::

    .venv/bin/python benchmarks/bench_loinc.py                  # generates into /tmp once
    .venv/bin/python benchmarks/bench_loinc.py --release DIR --rows 1000000

Figures, each measured in this run:

1. import: ``wb.load_release(DIR)`` into an empty cache folder, in a fresh child process;
2. reopen: the same call on the built cache in a fresh child process (wall time including the
   workbench's import, and peak RSS);
3. ``wb.validate_code`` against ``http://loinc.org/vs`` (median of 2,000 warm calls);
4. expanding ``http://loinc.org/vs`` (every term) and a ``concept is-a`` filter;
5. ``wb.validate_column`` of ``--rows`` LOINC codes (90% terms, 10% made up) against
   ``http://loinc.org/vs``, against a bare ``Series.isin`` with the set of term codes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import loinc_synthetic  # noqa: E402

LOINC = "http://loinc.org"

CHILD = """
import json, resource, sys, time
started = time.perf_counter()
from workbench import Workbench
wb = Workbench()
summary = wb.load_release(sys.argv[1], cache_dir=sys.argv[2], progress=False)
elapsed = time.perf_counter() - started
wb.validate_code("http://loinc.org/vs", code="10000-8", system="http://loinc.org")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": elapsed, "rss_mb": peak, "imported": summary.imported,
                  "concepts": summary.concepts}))
"""


def child(release: Path, cache: Path) -> dict[str, float]:
    """Load the release in a fresh process; its wall time, peak RSS and summary."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(release), str(cache)],
        check=True,
        capture_output=True,
        text=True,
    )
    found: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--release", type=Path, default=Path(tempfile.gettempdir()) / "loinc-synthetic"
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    if not (args.release / "LoincTable" / "Loinc.csv").is_file():
        started = time.perf_counter()
        loinc_synthetic.write(args.release)
        print(f"generated {args.release} in {time.perf_counter() - started:.1f} s")
    size = sum(f.stat().st_size for f in args.release.rglob("*") if f.is_file())
    print(f"release: {args.release} ({size / 1e6:.0f} MB)")
    with tempfile.TemporaryDirectory() as cache:
        first = child(args.release, Path(cache))
        print(
            f"import: {first['seconds']:.1f} s, peak RSS {first['rss_mb']:.0f} MB, "
            f"{int(first['concepts']):,} concepts"
        )
        again = child(args.release, Path(cache))
        print(
            f"reopen (fresh process): {again['seconds']:.2f} s, peak RSS {again['rss_mb']:.0f} MB"
        )

        from workbench import Workbench

        wb = Workbench()
        wb.load_release(args.release, cache_dir=cache, progress=False)
        concepts = wb.concepts(LOINC)
        terms = concepts.loc[concepts["kind"] == "term", "code"].to_numpy()
        rng = np.random.default_rng(3)
        sample = rng.choice(terms, 2000)
        for code in sample:
            wb.validate_code(f"{LOINC}/vs", code=str(code), system=LOINC)
        times = []
        for code in sample:
            started = time.perf_counter()
            wb.validate_code(f"{LOINC}/vs", code=str(code), system=LOINC)
            times.append(time.perf_counter() - started)
        median = statistics.median(times) * 1e6
        print(f"validate_code against {LOINC}/vs, warm median: {median:.1f} µs")
        started = time.perf_counter()
        everything = wb.expand(f"{LOINC}/vs", count=200_000)
        print(
            f"expand {LOINC}/vs ({len(everything.entries):,} terms): "
            f"{time.perf_counter() - started:.2f} s"
        )
        group = concepts.loc[concepts["kind"] == "group", "code"].iloc[1]
        started = time.perf_counter()
        below = wb.expand(
            {
                "resourceType": "ValueSet",
                "status": "active",
                "compose": {
                    "include": [
                        {
                            "system": LOINC,
                            "filter": [{"property": "concept", "op": "is-a", "value": group}],
                        }
                    ]
                },
            },
            count=200_000,
        )
        print(
            f"expand concept is-a {group} ({len(below.entries):,} members): "
            f"{time.perf_counter() - started:.2f} s"
        )
        made_up = np.array([f"{n}-0" for n in range(1, args.rows // 10 + 1)], dtype=object)
        column = pd.Series(
            np.concatenate([rng.choice(terms, args.rows - len(made_up)), made_up]), dtype=object
        )
        members = set(terms.tolist())
        wb.validate_column(column.head(1000), f"{LOINC}/vs", system=LOINC)
        ours, bare = [], []
        for _ in range(3):
            started = time.perf_counter()
            wb.validate_column(column, f"{LOINC}/vs", system=LOINC)
            ours.append(time.perf_counter() - started)
            started = time.perf_counter()
            column.isin(members)
            bare.append(time.perf_counter() - started)
        ratio = statistics.median(ours) / statistics.median(bare)
        print(
            f"validate_column, {args.rows:,} codes against {LOINC}/vs: "
            f"{statistics.median(ours):.2f} s = {ratio:.2f}x "
            f"a bare Series.isin ({statistics.median(bare):.2f} s)"
        )


if __name__ == "__main__":
    main()
