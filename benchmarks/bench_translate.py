"""Benchmark of column translation: ``Workbench.translate_column`` over a million rows
against a plain ``Series.map(dict)`` baseline (the target code of each source code).

Run from the repository root::

    .venv/bin/python benchmarks/bench_translate.py                 # 1,000,000 rows, 3 runs
    .venv/bin/python benchmarks/bench_translate.py --rows 100000 --repeat 5

The case: a generated ConceptMap of ``--codes`` source codes (one target each, a tenth of
them ``wider`` with a second ``narrower`` target), ``--rows`` rows drawn from those codes
plus 5% unknown codes and 1% missing values (fixed seed). Medians of ``--repeat`` runs after
one warm-up; the goal is translate_column <= 1.5x the baseline.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pandas as pd

from workbench import Workbench

SRC, TGT = "http://example.org/local", "http://example.org/standard"


def build(codes: int) -> tuple[dict, dict[str, str]]:
    """The generated ConceptMap and the code -> target dict of the baseline."""
    elements = []
    plain: dict[str, str] = {}
    for i in range(codes):
        targets = [{"code": f"T{i}", "equivalence": "equivalent"}]
        if i % 10 == 0:
            targets = [
                {"code": f"T{i}", "equivalence": "wider"},
                {"code": f"N{i}", "equivalence": "narrower", "comment": "part"},
            ]
        elements.append({"code": f"L{i}", "target": targets})
        plain[f"L{i}"] = f"T{i}"
    cm = {
        "resourceType": "ConceptMap",
        "id": "bench",
        "url": "http://example.org/cm/bench",
        "status": "active",
        "group": [{"source": SRC, "target": TGT, "element": elements}],
    }
    return cm, plain


def main() -> None:
    """Run the benchmark and print figures and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--codes", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cm, plain = build(args.codes)
    wb = Workbench()
    wb.registry.add_many([cm])
    rng = np.random.default_rng(42)
    pool = np.array([f"L{i}" for i in range(args.codes)] + ["UNKNOWN1", "UNKNOWN2"], dtype=object)
    picks = pool[rng.integers(0, args.codes, args.rows)]
    unknown = rng.random(args.rows)
    picks[unknown < 0.05] = "UNKNOWN1"
    picks[unknown < 0.01] = None
    series = pd.Series(picks, dtype=object)
    frame = pd.DataFrame({"code": series})

    t0 = time.perf_counter()
    wb.translate_column(frame, cm["url"], code="code", system=SRC)
    print(f"warm-up (first call): {time.perf_counter() - t0:.3f}s")
    base, target = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        series.map(plain)
        base.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        wb.translate_column(frame, cm["url"], code="code", system=SRC)
        target.append(time.perf_counter() - t0)
    b, t = statistics.median(base), statistics.median(target)
    ratio = t / b
    print(f"rows: {args.rows:,}  distinct codes: {args.codes:,}")
    print(f"baseline Series.map(dict): {b:.3f}s  translate_column: {t:.3f}s")
    print(f"ratio: {ratio:.2f}x  goal <= 1.5x: {'PASS' if ratio <= 1.5 else 'MISS'}")


if __name__ == "__main__":
    main()
