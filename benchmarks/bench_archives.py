"""Benchmark of archive bombs at full size (issue 25): peak memory and time of loading each.

Builds, in a temporary folder, the inputs of ``tests/test_archive_limits.py`` at the sizes of
the issue (``tests/archive_bombs.py``, which writes them in chunks):

- a LOINC release zip whose ``Loinc.csv`` is padded to 1.5 GiB (blank lines);
- a SNOMED CT RF2 zip whose English description file is padded with 1 GiB (blank lines);
- a FHIR package ``.tgz`` whose one CodeSystem holds 1 GiB of spaces (``wb.load``).

Each is loaded in a fresh child process, twice: with the default unpack limits (refused: the
figure is how fast, and how little memory that takes), then with ``--raised`` limits (the
ratio limit and, for the package, the resource limit out of the way: the member is read, so
the figure is what streaming costs). Each line gives the outcome, the wall time of the load
and the child's peak RSS over its own baseline (measured after importing the workbench).
``--checkout DIR`` runs the children on another checkout of the project (main before this
change, say: ``git worktree add /tmp/before main``), whose code has no unpack limits.

Run from the repository root::

    .venv/bin/python benchmarks/bench_archives.py                  # the issue's sizes
    .venv/bin/python benchmarks/bench_archives.py --size-mib 256   # every member 256 MiB
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import archive_bombs as bombs  # noqa: E402

MIB = 1 << 20
# name, builder, padding at the size, loaded as a release (else wb.load)
INPUTS: list[tuple[str, Callable[[Path, int], Path], int, bool]] = [
    ("LOINC zip, Loinc.csv padded", bombs.loinc_zip, 1536 * MIB, True),
    ("SNOMED CT zip, description file padded", bombs.snomed_zip, 1024 * MIB, True),
    ("package .tgz, one big CodeSystem", bombs.package_tgz, 1024 * MIB, False),
]
RAISED = ["ratio=1000000", "resource_bytes=4G"]

CHILD = """
import json, resource, sys, time
from pathlib import Path
from workbench import Workbench
try:
    from workbench import unpacking
    unpacking.configure(unpacking.UnpackLimits.from_options(json.loads(sys.argv[3])))
except ImportError:  # a checkout from before the unpack limits
    pass
wb = Workbench()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
path = Path(sys.argv[1])
started = time.perf_counter()
try:
    if sys.argv[2] == "release":
        cache = path.parent / f"cache-{len(json.loads(sys.argv[3]))}"  # one for each run
        outcome = repr(wb.load_release(path, cache_dir=cache, progress=False))
    else:
        outcome = repr(wb.load(path))
except Exception as exc:
    outcome = f"{type(exc).__name__}: {exc}"
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"outcome": outcome, "seconds": seconds, "over_baseline": (peak - base) * 1024}))
"""


def child(checkout: Path, path: Path, release: bool, options: list[str]) -> dict[str, Any]:
    """Load ``path`` in a fresh process on ``checkout``; its outcome, seconds and peak RSS."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), "release" if release else "package",
         json.dumps(options)],
        cwd=checkout,
        env={**os.environ, "PYTHONPATH": str(checkout)},
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )  # fmt: skip
    figures: dict[str, Any] = json.loads(done.stdout)
    return figures


def main() -> None:
    """Build each bomb, load it with the default and the raised limits, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, help="pad every member to this size instead")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the project to measure")
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    print(f"checkout {checkout}")
    with tempfile.TemporaryDirectory(prefix="bench-archives-") as folder:
        for name, build, padding, release in INPUTS:
            size = args.size_mib * MIB if args.size_mib else padding
            target = Path(folder) / name.split()[0].lower()
            target.mkdir()
            started = time.perf_counter()
            path = build(target / ("release.zip" if release else "package.tgz"), size)
            built = time.perf_counter() - started
            print(
                f"\n{name}: {path.stat().st_size / MIB:.1f} MiB, the member {size / MIB:,.0f} "
                f"MiB unpacked (built in {built:.1f} s)"
            )
            for label, options in (("default limits", []), ("raised limits", RAISED)):
                figures = child(checkout, path, release, options)
                outcome = str(figures["outcome"])
                print(
                    f"  {label:15} {figures['seconds']:7.2f} s  "
                    f"peak +{figures['over_baseline'] / 1e6:7.0f} MB  "
                    f"{outcome[:240]}{'…' if len(outcome) > 240 else ''}"
                )


if __name__ == "__main__":
    main()
