"""Benchmark of bulk validation at scale, against a bare membership test in the same run:
Dask (10,000,000 rows on a local two-worker cluster) and pandas over a value set that
includes two versions of one code system (10,000,000 rows, 1,000,000 distinct codes).

Run from the repository root::

    .venv/bin/python benchmarks/bench_bulk_scale.py                  # both parts, 3 runs
    .venv/bin/python benchmarks/bench_bulk_scale.py --rows 1000000 --repeat 2
    .venv/bin/python benchmarks/bench_bulk_scale.py --only dask      # or --only versions

Dask: a CodeSystem of ``--codes`` codes (version 1) and a value set of all of it; ``--rows``
rows (90% members, 9% made-up codes, 1% missing) in 16 partitions of a Dask DataFrame,
computed on a ``distributed.LocalCluster`` of two single-threaded worker processes (as
``local[2]`` for Spark), after one untimed call. Baseline: ``ddf.code.isin(members)``
computed on the same cluster. Target: ``validate_column(...).compute()`` <= 1.5x; the
answers equal pandas on a sample of rows (asserted).

Versions: the same code system in two versions (version 2 renames half the displays and
adds codes), a value set that includes both; ``--rows`` rows over ``--distinct`` distinct
codes (as many members as the value set has, up to half of them: the code system has a
tenth as many codes as there are distinct ones). Baseline: ``Series.isin`` of the members
as a set. Target: <= 1.5x for a warm call (after one untimed call), and the peak RSS growth
of one cold call in a fresh child process <= 1.5 GB. Timed rounds alternate baseline and
call; medians.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pandas as pd

SYSTEM = "http://example.org/fhir/CodeSystem/scale"
VS = "http://example.org/fhir/ValueSet/scale"


def codesystem(version: str, n: int) -> dict[str, Any]:
    """``n`` codes ``C0000001``...; version 2 has other displays for the even ones."""
    concepts = [
        {
            "code": f"C{i:07d}",
            "display": f"Concept {i}" + (" v2" if version == "2" and i % 2 == 0 else ""),
        }
        for i in range(n)
    ]
    return {
        "resourceType": "CodeSystem",
        "url": SYSTEM,
        "version": version,
        "status": "active",
        "content": "complete",
        "concept": concepts,
    }


def valueset(versions: list[str]) -> dict[str, Any]:
    include = [{"system": SYSTEM, "version": v} for v in versions]
    return {
        "resourceType": "ValueSet",
        "url": VS,
        "status": "active",
        "compose": {"include": include},
    }


def workbench(codes: int, versions: list[str]) -> Any:
    from workbench import Workbench

    wb = Workbench()
    wb.load(
        [codesystem(v, codes + (codes // 10 if v == "2" else 0)) for v in versions], progress=False
    )
    wb.load(valueset(versions), progress=False)
    return wb


def rows(n: int, distinct: int, members: int, seed: int) -> pd.Series:
    """``n`` codes over ``distinct`` distinct values, half of them (at most ``members``)
    among the members."""
    rng = np.random.default_rng(seed)
    inside = min(distinct // 2, members)
    pool = np.array(
        [f"C{i:07d}" for i in rng.choice(members, inside, replace=False)]
        + [f"X{i:07d}" for i in range(distinct - inside)],
        dtype=object,
    )
    picked = pool[rng.integers(0, len(pool), n)]
    picked[rng.random(n) < 0.01] = None
    return pd.Series(picked, dtype=object)


def timed(call: Any) -> float:
    gc.collect()
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def alternate(baseline: Any, subject: Any, repeat: int) -> tuple[list[float], list[float]]:
    base, sub = [], []
    for i in range(repeat):
        if i % 2:
            sub.append(timed(subject))
            base.append(timed(baseline))
        else:
            base.append(timed(baseline))
            sub.append(timed(subject))
    return base, sub


def _runs(times: list[float]) -> str:
    return f"median {statistics.median(times):.3f} s (runs {', '.join(f'{t:.3f}' for t in times)})"


def shown(name: str, base: list[float], sub: list[float], target: float) -> None:
    ratio = statistics.median(sub) / statistics.median(base)
    verdict = "PASS" if ratio <= target else "MISS"
    print(f"{name}: baseline {_runs(base)}")
    print(f"{name}: validate_column {_runs(sub)}")
    print(f"{name}: ratio {ratio:.2f} (target <= {target}): {verdict}")


def dask_part(args: argparse.Namespace) -> None:
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    wb = workbench(args.codes, ["1"])
    data = pd.DataFrame({"code": rows(args.rows, args.codes + args.codes // 10, args.codes, 7)})
    members = {f"C{i:07d}" for i in range(args.codes)}
    print(f"dask: {args.rows:,} rows, {args.codes:,} members, 16 partitions, 2 workers")
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        ddf = client.persist(dd.from_pandas(data, npartitions=16))

        def baseline() -> None:
            ddf["code"].isin(members).compute()

        def subject() -> None:
            with client.as_current():
                wb.validate_column(ddf, VS, code="code", system=SYSTEM).compute()

        subject()  # untimed: the engine shipped and warmed on the workers
        sample = data.sample(2_000, random_state=1)
        with client.as_current():
            got = (
                wb.validate_column(ddf, VS, code="code", system=SYSTEM).compute().loc[sample.index]
            )
        expected = wb.validate_column(sample, VS, code="code", system=SYSTEM)
        assert got["issue"].astype(object).tolist() == expected["issue"].astype(object).tolist()
        base, sub = alternate(baseline, subject, args.repeat)
    shown("dask", base, sub, 1.5)


CHILD = """
import json, sys, resource
sys.path.insert(0, "benchmarks")
import bench_bulk_scale as b
n, distinct, codes = (int(x) for x in sys.argv[1:4])
wb = b.workbench(codes, ["1", "2"])
data = b.rows(n, distinct, codes, 11)
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"): return int(line.split()[1]) * 1024
with open("/proc/self/clear_refs", "w") as f: f.write("5")
before = rss()
wb.validate_column(data, b.VS, system=b.SYSTEM)
for line in open("/proc/self/status"):
    if line.startswith("VmHWM"): peak = int(line.split()[1]) * 1024
print(json.dumps({"growth": peak - before}))
"""


def versions_part(args: argparse.Namespace) -> None:
    codes = max(args.distinct // 10, 1000)
    wb = workbench(codes, ["1", "2"])
    data = rows(args.rows, args.distinct, codes, 11)
    members = {f"C{i:07d}" for i in range(codes + codes // 10)}
    print(
        f"versions: {args.rows:,} rows, {args.distinct:,} distinct codes, "
        f"two versions of {codes:,}+ codes"
    )

    def subject() -> None:
        wb.validate_column(data, VS, system=SYSTEM)

    first = timed(subject)
    print(f"versions: first call (compiles, answers every distinct code) {first:.2f} s")
    base, sub = alternate(lambda: data.isin(members), subject, args.repeat)
    shown("versions", base, sub, 1.5)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(args.rows), str(args.distinct), str(codes)],
        capture_output=True,
        text=True,
        timeout=3600,
        check=True,
    )
    growth = json.loads(done.stdout.strip().splitlines()[-1])["growth"] / 2**30
    print(
        f"versions: peak RSS growth of one cold call {growth:.2f} GB (target <= 1.5 GB): "
        + ("PASS" if growth <= 1.5 else "MISS")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--codes", type=int, default=50_000, help="members (Dask)")
    parser.add_argument("--distinct", type=int, default=1_000_000, help="distinct codes (versions)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=["dask", "versions"])
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; pandas {pd.__version__}")
    if args.only in (None, "dask"):
        dask_part(args)
    if args.only in (None, "versions"):
        versions_part(args)


if __name__ == "__main__":
    main()
