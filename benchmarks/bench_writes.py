"""Writes with ``--data``: PUT throughput and the time until another worker serves a write,
for this tree's storage (the SQLite database) against the storage engine of an earlier
revision (the version files, lock and journal), measured in the same run.

Run from the repository root::

    .venv/bin/python benchmarks/bench_writes.py                      # 5 s per run, 2 rounds
    .venv/bin/python benchmarks/bench_writes.py --duration 10 --rounds 3 --baseline-rev 62050dd

The baseline is ``git archive --baseline-rev`` unpacked into a temporary folder (default: the
last revision with the journal engine), served by its own ``server.py`` with this Python.
Each server is started as ``server.py --workers 2 --data (a fresh temporary folder)`` on a
free port of 127.0.0.1, with only administrative-gender loaded. Measured, in rounds that
alternate baseline and current (drift on this shared machine hits both alike):

* ``PUT/s``: ``--clients`` threads (default 4), each with its own keep-alive connection
  (so both workers write), PUT their own ValueSet over and over for ``--duration`` seconds;
  every answer must be 200 or 201. p50 and p99 latency of one PUT.
* ``visible``: ``--probes`` times (default 200), one PUT on one connection, then GETs of the
  resource on fresh connections (either worker) until one serves the new version: the time
  from sending the PUT to that answer (the PUT's own latency included), and how many GETs
  it took (1 means the first read, on whichever worker, already had it).

Printed: per round and storage the figures, then the medians and the ratio of PUT/s
(current over baseline) against the target 1.0 (PASS/MISS; exit status 1 on a MISS).

``--postgresql`` measures a fleet instead: a PostgreSQL server started for the run
(``tests/postgres_support.py``: initdb in a temporary folder, as ``make postgresql``
installs it) and two ``server.py --database`` instances on two ports; the PUT load goes to
both (the clients alternate), and ``visible`` is the time from the answer of a PUT to
instance A until instance B serves that version (polled every millisecond on one keep-alive
connection): the LISTEN/NOTIFY lag, against the target of 100 ms (p99).
"""

from __future__ import annotations

import argparse
import http.client
import json
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
R4 = ROOT / "valuesets" / "r4-core"
HOST = "127.0.0.1"
BASELINE_REV = "62050dd"  # the last revision whose --data is version files and a journal
TARGET = 1.0


@dataclass
class Figures:
    """One run's figures for one storage."""

    puts_per_s: float
    p50_ms: float
    p99_ms: float
    visible_ms: float
    visible_p99_ms: float
    reads: float


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def start(
    tree: Path, data: Path, port: int, token: str, database: str | None = None
) -> subprocess.Popen[bytes]:
    """``server.py`` of ``tree`` with two workers over ``data`` (or one over ``database``);
    returns once it answers."""
    command = [sys.executable, str(tree / "server.py"), "--port", str(port), "--token", token]
    command += ["--no-default-content"]
    if database is None:
        command += ["--workers", "2", "--data", str(data)]
    else:
        command += ["--database", database]
    for name in ("ValueSet-administrative-gender.json", "CodeSystem-administrative-gender.json"):
        command += ["--load", str(R4 / name)]
    proc = subprocess.Popen(command, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            said = proc.stderr.read().decode() if proc.stderr is not None else ""
            raise SystemExit(f"the server in {tree} ended: {said[-2000:]}")
        try:
            if httpx.get(f"http://{HOST}:{port}/fhir/R4/metadata", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start")


def body(rid: str, title: str) -> bytes:
    resource = {"resourceType": "ValueSet", "id": rid, "status": "draft", "title": title}
    return json.dumps(resource).encode()


def put_load(
    urls: list[str], token: str, clients: int, seconds: float
) -> tuple[float, list[float]]:
    """PUT/s and the latencies (s) of ``clients`` threads writing for ``seconds`` (thread
    ``i`` to ``urls[i % len(urls)]``)."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/fhir+json"}
    end = time.monotonic() + seconds

    def work(i: int) -> None:
        url = urls[i % len(urls)]
        with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
            n = 0
            while time.monotonic() < end:
                n += 1
                began = time.perf_counter()
                answer = http.put(f"/ValueSet/load-{i}", content=body(f"load-{i}", str(n)))
                latencies[i].append(time.perf_counter() - began)
                if answer.status_code not in (200, 201):
                    errors.append(answer.text[:200])
                    return

    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise SystemExit(f"a PUT failed: {errors[0]}")
    every = [x for one in latencies for x in one]
    return len(every) / (time.monotonic() - began), every


def visibility(url: str, token: str, probes: int) -> tuple[list[float], list[int]]:
    """For each probe: seconds from sending a PUT to a fresh connection serving it, and
    the GETs it took."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/fhir+json"}
    parsed = httpx.URL(url)
    port, path = int(parsed.port or 80), parsed.path
    times, reads = [], []
    with httpx.Client(base_url=url, headers=headers, timeout=30) as writer:
        for n in range(1, probes + 1):
            began = time.perf_counter()
            written = writer.put("/ValueSet/seen", content=body("seen", f"v{n}"))
            version = written.json()["meta"]["versionId"]
            for attempt in range(1, 1001):
                reader = http.client.HTTPConnection(HOST, port, timeout=30)
                try:  # a fresh connection: either worker
                    reader.request("GET", f"{path}/ValueSet/seen", headers=headers)
                    got = json.loads(reader.getresponse().read())
                finally:
                    reader.close()
                if got.get("meta", {}).get("versionId") == version:
                    times.append(time.perf_counter() - began)
                    reads.append(attempt)
                    break
            else:
                raise SystemExit(f"version {version} was never served by another connection")
    return times, reads


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(tree: Path, args: argparse.Namespace) -> Figures:
    """Start a server of ``tree`` on a fresh data folder and measure it."""
    token, port = secrets.token_hex(8), free_port()
    with tempfile.TemporaryDirectory() as data:
        proc = start(tree, Path(data) / "data", port, token)
        try:
            url = f"http://{HOST}:{port}/fhir/R4"
            put_load([url], token, args.clients, 1.0)  # warm-up
            rate, latencies = put_load([url], token, args.clients, args.duration)
            times, reads = visibility(url, token, args.probes)
        finally:
            proc.terminate()
            proc.wait(30)
    return Figures(
        rate,
        quantile(latencies, 0.5) * 1000,
        quantile(latencies, 0.99) * 1000,
        statistics.median(times) * 1000,
        quantile(times, 0.99) * 1000,
        statistics.mean(reads),
    )


def fleet_lag(a: str, b: str, token: str, probes: int) -> list[float]:
    """Seconds from the answer of a PUT to ``a`` until ``b`` serves that version."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/fhir+json"}
    lags = []
    with (
        httpx.Client(base_url=a, headers=headers, timeout=30) as writer,
        httpx.Client(base_url=b, headers=headers, timeout=30) as reader,
    ):
        for n in range(1, probes + 1):
            version = writer.put("/ValueSet/seen", content=body("seen", f"v{n}")).json()
            answered = time.perf_counter()
            while time.perf_counter() - answered < 5:
                got = reader.get("/ValueSet/seen")
                if got.status_code == 200 and got.json()["meta"] == version["meta"]:
                    lags.append(time.perf_counter() - answered)
                    break
                time.sleep(0.001)
            else:
                raise SystemExit(f"instance B never served version {n}")
    return lags


def measure_fleet(args: argparse.Namespace) -> int:
    """Two instances over one PostgreSQL database: PUT/s over both, and B's lag."""
    sys.path.insert(0, str(ROOT / "tests"))
    from postgres_support import cleanup, started

    server = started()
    token, procs = secrets.token_hex(8), []
    try:
        database = server.create("bench")
        with tempfile.TemporaryDirectory() as data:
            ports = [free_port(), free_port()]
            procs = [start(ROOT, Path(data), port, token, database) for port in ports]
            urls = [f"http://{HOST}:{port}/fhir/R4" for port in ports]
            put_load(urls, token, args.clients, 1.0)  # warm-up
            rate, latencies = put_load(urls, token, args.clients, args.duration)
            lags = fleet_lag(urls[0], urls[1], token, args.probes)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)
        cleanup(server)
    p99 = quantile(lags, 0.99) * 1000
    print(
        f"PostgreSQL, 2 instances: {rate:.0f} PUT/s  p50 {quantile(latencies, 0.5) * 1000:.2f} ms"
        f"  p99 {quantile(latencies, 0.99) * 1000:.2f} ms"
    )
    print(
        f"B serves A's write after: median {statistics.median(lags) * 1000:.2f} ms, "
        f"p99 {p99:.2f} ms, max {max(lags) * 1000:.2f} ms (target p99 < 100 ms) "
        + ("PASS" if p99 < 100 else "MISS")
    )
    return 0 if p99 < 100 else 1


def baseline_tree(rev: str, into: Path) -> Path:
    """The tree of ``rev`` (``git archive``) unpacked under ``into``."""
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def show(name: str, f: Figures) -> None:
    print(
        f"  {name:9} {f.puts_per_s:8.0f} PUT/s  p50 {f.p50_ms:6.2f} ms  p99 {f.p99_ms:6.2f} ms"
        f"  visible {f.visible_ms:6.2f} ms (p99 {f.visible_p99_ms:6.2f})  reads {f.reads:.2f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds of PUT load")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--baseline-rev", default=BASELINE_REV)
    parser.add_argument("--postgresql", action="store_true", help="measure a fleet instead")
    args = parser.parse_args()
    if args.postgresql:
        return measure_fleet(args)
    runs: dict[str, list[Figures]] = {"baseline": [], "current": []}
    with tempfile.TemporaryDirectory() as scratch:
        trees = {"baseline": baseline_tree(args.baseline_rev, Path(scratch)), "current": ROOT}
        for round_ in range(args.rounds):
            order = ["baseline", "current"] if round_ % 2 == 0 else ["current", "baseline"]
            print(f"round {round_ + 1}")
            for name in order:
                runs[name].append(measure(trees[name], args))
                show(name, runs[name][-1])
    medians = {
        name: statistics.median(f.puts_per_s for f in figures) for name, figures in runs.items()
    }
    ratio = medians["current"] / medians["baseline"]
    old = f"{medians['baseline']:.0f}"
    print(f"baseline {args.baseline_rev} (version files + journal): {old} PUT/s")
    print(f"current (SQLite): {medians['current']:.0f} PUT/s")
    verdict = "PASS" if ratio >= TARGET else "MISS"
    print(f"ratio current/baseline {ratio:.2f} (target >= {TARGET}) {verdict}")
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
