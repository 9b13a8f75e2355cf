"""Benchmark of ``$closure`` (issue 49): 10,000 SNOMED CT concepts of the synthetic release
(``benchmarks/snomed_synthetic.py``, the shape and size of the International Edition)
added to one closure table in 100 calls of 100, over HTTP, to a server on 127.0.0.1 whose
closure tables are in its data folder's SQLite database. Target: <= 2 s in all (the 100
calls; the initialisation and the release's loading are outside it, and printed).

Run from the repository root::

    .venv/bin/python benchmarks/bench_closure.py                  # generates into /tmp once
    .venv/bin/python benchmarks/bench_closure.py --release DIR --concepts 10000 --calls 100

The concepts are drawn at random (seeded) from the release's active concepts; the answer of
each call is checked to be a ConceptMap, and a replay from version 0 at the end to hold
every relationship the calls answered.
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import snomed_synthetic  # noqa: E402

SCT = "http://snomed.info/sct"
TOKEN = "bench-token"
TARGET_SECONDS = 2.0


def free_port() -> int:
    """A port of 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def active_concepts(release: Path) -> np.ndarray:
    """The ids of the release's active concepts."""
    (path,) = (release / "Snapshot" / "Terminology").glob("sct2_Concept_Snapshot_*.txt")
    frame = pd.read_csv(path, sep="\t", dtype=str, usecols=["id", "active"])
    return frame.loc[frame["active"] == "1", "id"].to_numpy()


def serve(release: Path, cache: Path, data: Path) -> tuple[str, float]:
    """Load the release and serve it (uvicorn in a thread); the base URL and load seconds."""
    import uvicorn

    from workbench import Workbench
    from workbench.server import create_app

    started = time.perf_counter()
    wb = Workbench()
    wb.load_release(release, cache_dir=cache, progress=False)
    loaded = time.perf_counter() - started
    port = free_port()
    config = uvicorn.Config(
        create_app(wb, token=TOKEN, data_dir=data),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return f"http://127.0.0.1:{port}/fhir/R4", loaded


def call(http: httpx.Client, name: str, codes: Sequence[str] = (), **more: str) -> dict:
    """One ``$closure`` call; its ConceptMap."""
    entries: list[dict[str, Any]] = [{"name": "name", "valueString": name}]
    entries += [{"name": "concept", "valueCoding": {"system": SCT, "code": c}} for c in codes]
    entries += [{"name": k, "valueString": v} for k, v in more.items()]
    found = http.post("/$closure", json={"resourceType": "Parameters", "parameter": entries})
    assert found.status_code == 200, found.text
    body: dict = found.json()
    assert body["resourceType"] == "ConceptMap", body
    return body


def relationships(conceptmap: dict) -> int:
    """How many relationships a ConceptMap holds."""
    return sum(len(e["target"]) for g in conceptmap.get("group", []) for e in g["element"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", type=Path, default=Path(tempfile.gettempdir()) / "sct-rf2")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "sct-cache")
    parser.add_argument("--concepts", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--scale", type=float, default=1.0, help="of a release generated now")
    parser.add_argument("--seed", type=int, default=49)
    args = parser.parse_args()
    if not (args.release / "Snapshot").exists():
        print(f"generating the synthetic release into {args.release} …", flush=True)
        print(snomed_synthetic.generate(args.release, args.scale))
    codes = np.random.default_rng(args.seed).choice(
        active_concepts(args.release), args.concepts, replace=False
    )
    batches = [list(b) for b in np.array_split(codes, args.calls)]
    with tempfile.TemporaryDirectory() as data:
        base, loaded = serve(args.release, args.cache, Path(data))
        print(f"release loaded in {loaded:.1f} s; server at {base}")
        headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/fhir+json"}
        with httpx.Client(base_url=base, headers=headers, trust_env=False, timeout=60) as http:
            call(http, "warm-up")
            call(http, "warm-up", batches[0][:5])  # (the first call builds the engine's index)
            call(http, "bench")
            started = time.perf_counter()
            answered = sum(relationships(call(http, "bench", batch)) for batch in batches)
            seconds = time.perf_counter() - started
            replay = call(http, "bench", version="0")
    assert replay["version"] == str(args.calls), replay["version"]
    assert relationships(replay) == answered, (relationships(replay), answered)
    verdict = "met" if seconds <= TARGET_SECONDS else "MISSED"
    print(
        f"$closure: {args.concepts:,} SNOMED CT concepts in {args.calls} calls: {seconds:.2f} s "
        f"in all ({seconds / args.calls * 1000:.1f} ms a call; {answered:,} relationships); "
        f"target <= {TARGET_SECONDS:g} s: {verdict}"
    )


if __name__ == "__main__":
    main()
