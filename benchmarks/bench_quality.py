"""Benchmark of the pandera check: ``workbench.pandera.in_value_set`` in a pandera schema over a
column of ICD-10-CM codes, against ``Workbench.validate_column`` on the same column, in the
same run.

Run from the repository root::

    .venv/bin/python benchmarks/bench_quality.py                 # 1,000,000 rows, 15 runs
    .venv/bin/python benchmarks/bench_quality.py --rows 200000 --repeat 7

The case: the ICD-10-CM release ``simple-icd-10-cm`` ships (imported into a temporary release
cache), a ValueSet of the whole code system, and ``--rows`` rows (fixed seed, pandas' default
string dtype) built as in ``bench_cli.py``: 90% valid codes, 8% made up, 1% padded with a
space, 1% missing. Two columns: that mix (about 9% of the rows fail: pandera gets their
failure cases and raises a SchemaError, caught) and one of valid codes only (the schema
passes).

Baseline: ``wb.validate_column(series, valueset)``. Target: ``schema.validate(frame)`` of a
``DataFrameSchema`` with one ``Column(str, in_value_set(valueset, workbench=wb),
nullable=True)``, the best of ``--repeat`` warm runs <= 1.2x the baseline's best (the runs
alternate; the medians are printed beside: on this shared machine other jobs only ever add
time, and a median of a 0.1 s call moves by up to 2x between runs, its best much less).
Sanity (asserted): the failure cases are the failing rows of the baseline.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cli import ICD10CM, icd10cm_xml

from workbench import Workbench
from workbench.pandera import in_value_set

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    import pandera.pandas as pa

MAX_RATIO = 1.2
VALUESET: dict[str, Any] = {
    "resourceType": "ValueSet",
    "url": "http://example.org/vs/icd",
    "status": "active",
}
VALUESET["compose"] = {"include": [{"system": ICD10CM}]}


def columns(wb: Workbench, rows: int) -> dict[str, pd.Series]:
    """The mixed column and the all-valid column."""
    concepts = wb.concepts(ICD10CM)
    if "abstract" in concepts:
        concepts = concepts[~concepts["abstract"].fillna(False).astype(bool)]
    valid = concepts["code"].astype(str).to_numpy(dtype=object)
    rng = np.random.default_rng(40)
    kind = rng.random(rows)
    codes = valid[rng.integers(0, len(valid), rows)].copy()
    clean = pd.Series(codes.copy(), name="code", dtype="str")
    codes[kind >= 0.90] = "Z99.9X9"
    padded = (kind >= 0.98) & (kind < 0.99)
    codes[padded] = [c + " " for c in codes[padded]]
    codes[kind >= 0.99] = None
    return {"mixed (9% failing)": pd.Series(codes, name="code", dtype="str"), "valid": clean}


def timed(call: Any) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main() -> None:
    """Run baseline and target alternately per column; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=15)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-quality-") as tmp:
        run(options, Path(tmp))


def run(options: argparse.Namespace, cache: Path) -> None:
    """The figures, with the release imported into ``cache`` (it stays open, mapped)."""
    wb = Workbench()
    wb.load_release(icd10cm_xml(), cache_dir=cache, progress=False)
    wb.load(VALUESET)
    check = in_value_set(VALUESET["url"], workbench=wb)
    schema = pa.DataFrameSchema({"code": pa.Column(str, check, nullable=True)})

    def checked(frame: pd.DataFrame) -> Any:
        try:
            return schema.validate(frame)
        except pa.errors.SchemaError as error:
            return error

    for name, series in columns(wb, options.rows).items():
        frame = series.to_frame()
        report = wb.validate_column(series, VALUESET["url"])  # warm: compiles and indexes
        outcome = checked(frame)
        failing = ~report["result"].fillna(True).astype(bool)
        if isinstance(outcome, pa.errors.SchemaError):
            assert outcome.failure_cases["index"].tolist() == list(series.index[failing])
        else:
            assert not failing.any()
        base, target = [], []
        for _ in range(options.repeat):
            base.append(timed(lambda s=series: wb.validate_column(s, VALUESET["url"])))
            target.append(timed(lambda f=frame: checked(f)))
        b, t = min(base), min(target)
        median_ratio = statistics.median(target) / statistics.median(base)
        verdict = "PASS" if t / b <= MAX_RATIO else "MISS"
        print(f"{name}: {options.rows:,} rows")
        print(f"  best: validate_column {b:.3f} s, pandera check {t:.3f} s")
        print(f"  medians: {statistics.median(base):.3f} s, {statistics.median(target):.3f} s")
        print(f"  ratio of the best {t / b:.2f}x (target <= {MAX_RATIO}x): {verdict}")
        print(f"  ratio of the medians {median_ratio:.2f}x")


if __name__ == "__main__":
    main()
