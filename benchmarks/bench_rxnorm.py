"""Benchmark of RxNorm from RRF on a synthetic full release with the shape and size of a real
one (``benchmarks/rxnorm_synthetic.py``: 300,000 RXCUIs, about 600,000 atoms, 2.4 million
relationship rows, 700,000 attribute rows, 100,000 retired RXCUIs), and of UCUM.

Run from the repository root::

    .venv/bin/python benchmarks/bench_rxnorm.py                  # generates into /tmp once
    .venv/bin/python benchmarks/bench_rxnorm.py --concepts 30000 --rows 100000   # quick

Figures, each measured in this run:

1. import: ``wb.load_release(DIR)`` into an empty cache folder, in a fresh child process;
2. reopen: the same call on the built cache in a fresh child process (wall time including
   the workbench's import, and the peak RSS of that process);
3. ``wb.validate_code`` against the value set ``TTY = SCD`` (median of 2,000 warm calls);
4. expanding that value set (about a third of the RXCUIs);
5. ``wb.validate_column`` of ``--rows`` RXCUIs drawn from 50,000 distinct ones against it,
   against a bare ``Series.isin`` with the set of member codes;
6. UCUM: ``wb.validate_column`` of ``--rows`` units drawn from 40 distinct ones (valid,
   equal-to-listed and invalid) against a value set listing 20 units, per distinct unit.
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
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rxnorm_synthetic  # noqa: E402

RX = "http://www.nlm.nih.gov/research/umls/rxnorm"
UCUM = "http://unitsofmeasure.org"
SCD: dict[str, Any] = {
    "resourceType": "ValueSet",
    "url": "http://example.org/vs/scd",
    "status": "active",
    "compose": {
        "include": [{"system": RX, "filter": [{"property": "TTY", "op": "=", "value": "SCD"}]}]
    },
}

CHILD = """
import json, resource, sys, time
started = time.perf_counter()
from workbench import Workbench
wb = Workbench()
summary = wb.load_release(sys.argv[1], cache_dir=sys.argv[2], progress=False)
elapsed = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": elapsed, "peak_mb": peak, "summary": str(summary)}))
"""


def child(release: Path, cache: Path) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(release), str(cache)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def timed(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", type=Path, default=None)
    parser.add_argument("--concepts", type=int, default=300_000)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    release = args.release or Path(tempfile.gettempdir()) / f"RxNorm_full_{args.concepts}"
    if not (release / "rrf" / "RXNCUI.RRF").exists():
        print(f"generating the synthetic release into {release} …", flush=True)
        rxnorm_synthetic.generate(release, args.concepts)
    sizes = sum(p.stat().st_size for p in release.rglob("*.RRF"))
    print(f"release: {release} ({sizes / 2**20:.0f} MiB of RRF)")
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        first = child(release, cache)
        print(f"1. import          {first['seconds']:8.1f} s   peak RSS {first['peak_mb']:.0f} MB")
        print(f"   {first['summary']}")
        again = child(release, cache)
        print(f"2. reopen          {again['seconds']:8.2f} s   peak RSS {again['peak_mb']:.0f} MB")

        from workbench import Workbench

        wb = Workbench()
        wb.load_release(release, cache_dir=cache, progress=False)
        wb.load(SCD)
        url = SCD["url"]
        t = time.perf_counter()
        members = [e.code for e in wb.expand(url, count=10**7).entries]
        cold = time.perf_counter() - t
        warm = timed(lambda: wb.expand(url, count=10**7), 3)
        rng = np.random.default_rng(1)
        everything = wb.concepts(RX)["code"].to_numpy()
        sample = list(rng.choice(members, 1000)) + list(rng.choice(everything, 1000))
        for code in sample:
            wb.validate_code(url, code=code, system=RX)
        times = []
        for code in sample:
            t = time.perf_counter()
            wb.validate_code(url, code=code, system=RX)
            times.append(time.perf_counter() - t)
        print(f"3. validate_code   {statistics.median(times) * 1e6:8.1f} µs (median, warm)")
        print(
            f"4. expand {len(members):,} members: {warm:.3f} s warm, {cold:.3f} s the first "
            "time (filter compiled)"
        )

        pool = np.concatenate(
            [rng.choice(members, 35_000), rng.choice(everything, 14_000), ["junk"] * 1000]
        )
        df = pd.DataFrame({"code": rng.choice(pool, args.rows)})
        valid = set(members)
        wb.validate_column(df["code"], url, system=RX)
        base = timed(lambda: df["code"].isin(valid), args.repeat)
        ours = timed(lambda: wb.validate_column(df["code"], url, system=RX), args.repeat)
        print(
            f"5. validate_column {args.rows:,} RXCUIs ({df['code'].nunique():,} distinct): "
            f"{ours:.3f} s vs isin {base:.3f} s = {ours / base:.2f}x"
        )

    listed = ["mL", "L", "mg", "g", "kg", "mg/dL", "g/dL", "mmol/L", "umol/L", "10*3/uL"]
    listed += ["10*9/L", "%", "/min", "mm[Hg]", "Cel", "[degF]", "cm", "m", "kg/m2", "[IU]/L"]
    units = [*listed, "ml", "cm3", "10*6/L", "min-1", "g.dL-1", "mg/dl", "umol/l", "Kg", "mmHg"]
    units += ["sec", "hr", "mcg", "degC", "IU/L", "mg%", "mEq/L", "bpm", "x10^9/L", "ug", "dL"]
    wb2 = Workbench()
    vs: dict[str, Any] = {
        "resourceType": "ValueSet",
        "url": "http://example.org/vs/units",
        "status": "active",
        "compose": {"include": [{"system": UCUM, "concept": [{"code": c} for c in listed]}]},
    }
    wb2.load(vs)
    column = pd.Series(np.random.default_rng(2).choice(units, args.rows))
    t = time.perf_counter()
    first_result = wb2.validate_column(column, vs["url"], system=UCUM)
    cold = time.perf_counter() - t
    warm = timed(lambda: wb2.validate_column(column, vs["url"], system=UCUM), args.repeat)
    share = float(first_result["result"].fillna(False).astype(bool).mean())
    print(
        f"6. UCUM validate_column {args.rows:,} units ({column.nunique()} distinct, "
        f"{share:.0%} valid): {warm:.3f} s warm, {cold:.3f} s the first time (grammar built)"
    )


if __name__ == "__main__":
    main()
