"""What the release cache's checks cost: import, reopen, reopen with ``verify=True`` (each in
a fresh process, ``import workbench`` excluded), and the cheap and full store checks.

    .venv/bin/python benchmarks/snomed_synthetic.py /tmp/sct --scale 0.25
    .venv/bin/python benchmarks/bench_release_cache.py /tmp/sct [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import json, resource, sys, time
from workbench import Workbench
started = time.perf_counter()
summary = Workbench().load_release(sys.argv[1], cache_dir=sys.argv[2], progress=False,
                                   verify=sys.argv[3] == "verify")
print(json.dumps({"seconds": time.perf_counter() - started, "imported": summary.imported,
                  "cache": summary.cache,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _load(release: Path, cache: Path, how: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(release), str(cache), how],
        check=True,
        capture_output=True,
        text=True,
    )
    found: dict[str, object] = json.loads(done.stdout)
    return found


def _checks(store: Path) -> tuple[float, float]:
    from workbench.releases import integrity

    meta = json.loads((store / "meta.json").read_text())
    times = []
    for full in (False, True):
        started = time.perf_counter()
        assert integrity.problem(store, meta["format"], full=full) is None
        times.append(time.perf_counter() - started)
    return times[0], times[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("release", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for round_ in range(1, args.rounds + 1):
        cache = Path(tempfile.mkdtemp(prefix="bench-release-cache-"))
        try:
            first = _load(args.release, cache, "import")
            assert first["imported"]
            rows = [("import", first)]
            rows += [("reopen", _load(args.release, cache, "reopen")) for _ in range(2)]
            rows.append(("reopen, verify=True", _load(args.release, cache, "verify")))
            for name, row in rows:
                print(
                    f"round {round_}: {name}: {row['seconds']:.2f} s, peak {row['peak_mb']:.0f} MB"
                )
            cheap, full = _checks(Path(str(first["cache"])))
            print(f"round {round_}: store check {cheap * 1000:.1f} ms, full {full * 1000:.1f} ms")
        finally:
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
