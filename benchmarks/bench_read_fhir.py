"""Benchmark of reading FHIR data: ``read_fhir`` over an NDJSON file of synthetic
Observations plus iterating ``ndjson_batches('Observation')``, against
``pyarrow.json.read_json`` of the same file, in the same run.

Run from the repository root::

    .venv/bin/python benchmarks/bench_read_fhir.py                  # 200,000 resources, 5 runs
    .venv/bin/python benchmarks/bench_read_fhir.py --resources 1000000 --repeat 3

The case: ``--resources`` Observations (fixed seed, about 1.2 KB each on one line: vital
signs with a category, a LOINC code, subject, encounter, performer, a quantity, an
interpretation, a note and a reference range) written with orjson to
``Observation.ndjson`` in a temporary folder.

Baseline: ``pyarrow.json.read_json(path)`` (every column, inferred, multi-threaded). Target:
``read_fhir(path)`` (each chunk's types read in C, its bytes checked, kept as read) and
every chunk of ``ndjson_batches("Observation")`` touched. The runs alternate; the best of
each is the figure (on a shared machine other jobs only ever add time), the medians are
printed beside. Issue 47 asks a view over the data to stay within 2x the baseline, so
reading alone should stay well under it: the target is <= 1.0x. Sanity (asserted): the
counts, no records, and the batches' bytes equal the file's.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import pyarrow.json as pajson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from workbench import read_fhir

MAX_RATIO = 1.0
CODES = (("8867-4", "Heart rate"), ("8310-5", "Body temperature"), ("29463-7", "Body weight"))
CATEGORY = "http://terminology.hl7.org/CodeSystem/observation-category"
INTERPRETATION = "http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation"
UCUM = "http://unitsofmeasure.org"


def observation(number: int, rng: random.Random) -> dict[str, Any]:
    """One synthetic vital-signs Observation (about 1.2 KB as compact JSON)."""
    code, display = rng.choice(CODES)
    quantity = {"unit": "beats/minute", "system": UCUM, "code": "/min"}
    return {
        "resourceType": "Observation",
        "id": f"obs-{number}",
        "meta": {"lastUpdated": "2024-01-02T03:04:05.678Z", "profile": [f"{UCUM}/vitals"]},
        "status": "final",
        "category": [{"coding": [{"system": CATEGORY, "code": "vital-signs"}]}],
        "code": {"coding": [{"system": "http://loinc.org", "code": code, "display": display}]},
        "subject": {"reference": f"Patient/pat-{number % 5000}"},
        "encounter": {"reference": f"Encounter/enc-{number % 20000}"},
        "effectiveDateTime": f"2023-05-{1 + number % 28:02d}T10:{number % 60:02d}:00+02:00",
        "issued": "2023-05-01T10:30:00.000+02:00",
        "performer": [{"reference": f"Practitioner/pr-{number % 300}"}],
        "valueQuantity": {"value": round(rng.uniform(40, 180), 1), **quantity},
        "interpretation": [{"coding": [{"system": INTERPRETATION, "code": "N"}]}],
        "note": [{"text": "Measured at rest after five minutes seated."}],
        "referenceRange": [{"low": {"value": 60, **quantity}, "high": {"value": 100, **quantity}}],
    }


def write(path: Path, count: int) -> None:
    rng = random.Random(47)
    with path.open("wb") as out:
        for number in range(count):
            out.write(orjson.dumps(observation(number, rng)) + b"\n")


def target(path: Path) -> int:
    """read_fhir and every batch touched; the bytes seen."""
    with read_fhir(path) as data:
        return sum(len(chunk) for chunk in data.ndjson_batches("Observation"))


def timed(call: Any) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main() -> None:
    """Write the file, check the target once, run both alternately, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resources", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-read-fhir-") as tmp:
        path = Path(tmp) / "Observation.ndjson"
        write(path, options.resources)
        with read_fhir(path) as data:
            assert data.counts == {"Observation": options.resources} and not data.errors
            assert b"".join(data.ndjson_batches("Observation")) == path.read_bytes()
        base, ours = [], []
        for _ in range(options.repeat):
            base.append(timed(lambda: pajson.read_json(path)))
            ours.append(timed(lambda: target(path)))
        b, t = min(base), min(ours)
        size = path.stat().st_size
        verdict = "PASS" if t / b <= MAX_RATIO else "MISS"
        print(f"{options.resources:,} Observations, {size / 1e6:,.0f} MB of NDJSON")
        print(f"  best: pyarrow.json.read_json {b:.3f} s, read_fhir + batches {t:.3f} s")
        print(f"  medians: {statistics.median(base):.3f} s, {statistics.median(ours):.3f} s")
        print(f"  ratio of the best {t / b:.2f}x (target <= {MAX_RATIO}x): {verdict}")
        print(f"  ratio of the medians {statistics.median(ours) / statistics.median(base):.2f}x")
        print(f"  read_fhir: {size / t / 1e6:,.0f} MB/s")


if __name__ == "__main__":
    main()
