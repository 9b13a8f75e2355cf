"""Benchmark of two versions side by side: ``wb.diff`` of ICD-10-CM April 2025 against
April 2026 (about 98,000 codes each), after both are loaded, and ``wb.impact`` of a column
of 1,000,000 rows against ``validate_column`` of the same column in the same run (the
baseline).

The releases are the CMS tabular XML the ``simple-icd-10-cm`` wheels 1.4.0 and 1.5.0 ship,
taken from the release cache's download folder (fetched there by ``pip download`` when
missing, as ``tests/icd10cm_years.py`` does). Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_versions.py            # 1M rows, 3 runs
    PYTHONPATH=. .venv/bin/python benchmarks/bench_versions.py --rows 200000 --repeat 2

Medians of ``--repeat`` runs after one warm-up; goals: the diff <= 1 s, the impact <= 2x
``validate_column``. The first call of each is printed too (the diff's with the CPU time
it took, which a machine busy with other jobs does not inflate; the first impact and
validate_column build their kept tables: the classification of the pair of versions, the
answer table of the value set).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from tests.icd10cm_years import wheel
from workbench import Workbench

ICD = "http://hl7.org/fhir/sid/icd-10-cm"


def timed(work: Callable[[], Any]) -> tuple[Any, float, float]:
    """``work()``, its wall-clock seconds and the CPU seconds this process spent."""
    cpu, start = time.process_time(), time.perf_counter()
    found = work()
    return found, time.perf_counter() - start, time.process_time() - cpu


def median(work: Callable[[], Any], repeat: int, warm: bool = False) -> float:
    """The median seconds of ``repeat`` runs of ``work``, after one warm-up run (none when
    ``warm``: it has run already)."""
    if not warm:
        work()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    """Load both years, then time the diff, the impact and validate_column."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    wb = Workbench()
    for year in ("2025", "2026"):
        wb.load_release(wheel(year), progress=False)
    diff, first, cpu = timed(lambda: wb.diff(ICD, "2025", "2026"))
    print(repr(diff))
    warm = median(lambda: wb.diff(ICD, "2025", "2026"), args.repeat, warm=True)
    print(
        f"wb.diff 2025 -> 2026: first {first:.3f} s ({cpu:.3f} s CPU), warm median "
        f"{warm:.3f} s (goal <= 1 s)"
    )
    codes = wb.concepts(ICD, "2025")["code"].to_numpy(dtype=object)
    rng = np.random.default_rng(37)
    column = pd.Series(rng.choice(codes, args.rows), name="dx")
    valueset = f"{ICD}?fhir_vs"

    def validating() -> Any:
        return wb.validate_column(column, valueset, system=ICD)

    def impacting() -> Any:
        return wb.impact(column, system=ICD, from_version="2025", to_version="2026")

    _, validate_first, _ = timed(validating)
    _, impact_first, _ = timed(impacting)
    validate = median(validating, args.repeat, warm=True)
    impact = median(impacting, args.repeat, warm=True)
    distinct = column.nunique()
    print(
        f"{args.rows:,} rows ({distinct:,} distinct codes): first calls validate_column "
        f"{validate_first:.3f} s, wb.impact {impact_first:.3f} s; medians validate_column "
        f"{validate:.3f} s, wb.impact {impact:.3f} s, ratio {impact / validate:.2f}x "
        "(goal <= 2x)"
    )


if __name__ == "__main__":
    main()
