"""Full-size bounded inputs (issue 25): how long each takes, how long it holds the server's
event loop, how cheap requests fare meanwhile, and the server's peak memory.

Run from the repository root::

    .venv/bin/python benchmarks/bench_bounds.py            # full size
    .venv/bin/python benchmarks/bench_bounds.py --quick    # a quarter of the sizes

Three server processes on 127.0.0.1 (this script with ``--serve``, one uvicorn worker each)
load ``valuesets/`` and a code system of ``--codes`` codes whose displays are 200 words long:

* ``default``: the default ``Limits``;
* ``raised``: ``tx_resources`` and ``tx_resource_bytes`` raised, so that every inline
  resource is read and compiled;
* ``deadline``: as ``raised``, with ``seconds`` = ``--deadline``.

Each server measures its own event loop: a task sleeps 5 ms again and again and records by
how much it woke late (the longest such stall per case is printed). Cases, each sent while a
thread of this script GETs ``/metadata`` every 20 ms (p50 and max of those latencies):

* ``baseline``: a POST ``ValueSet/$validate-code`` without inline resources (same run);
* ``tx-N``: the same with N small CodeSystems as ``tx-resource`` (N = 5,000 and 20,000,
  834 KB and 3.3 MB of JSON);
* ``filter-30``: ``$expand`` of the big code system with a 30-word text filter (every word
  common: the worst case of the text index);
* ``deadline``: ``tx-20000`` against the ``deadline`` server: the answer must come within
  110% of the deadline (plus 0.1 s to send the body and read the answer).

Printed per case: status, seconds, the longest loop stall, ``/metadata`` p50/max, and the
server's peak RSS (its own and that of its children, the forked workers). Exit status 0 when
every loop stall is under 50 ms, every ``/metadata`` max under 100 ms and the deadline held,
1 otherwise, 2 on a setup failure. ``--checkout PATH`` serves another checkout (an older one
whose ``Limits`` lacks some fields: those are left out), which gives "before" figures.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import json
import random
import resource
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
BASE = "/fhir/R4"
BIG = "http://example.org/fhir/CodeSystem/bench-bounds"
BIG_VS = "http://example.org/fhir/ValueSet/bench-bounds"
GENDER_VS = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
VOCAB = [f"term{k}x" for k in range(40)]
STALL_PATH = "/_bench/stall"
READY_TIMEOUT_S = 120.0
UPLOAD_S = 0.1  # sending the deadline case's body and reading its answer (loopback)


# --- the server (in a child process) --------------------------------------------------------


def big_codesystem(codes: int) -> dict[str, Any]:
    """``codes`` codes, each display 200 words drawn from 40 (seeded)."""
    rng = random.Random(25)
    concept = [
        {"code": f"C{i:06d}", "display": " ".join(rng.choice(VOCAB) for _ in range(200))}
        for i in range(codes)
    ]
    return {
        "resourceType": "CodeSystem",
        "url": BIG,
        "status": "active",
        "content": "complete",
        "concept": concept,
    }


class StallMonitor:
    """Wraps the app: measures how late a 5 ms sleep wakes on the loop, and answers
    ``GET /_bench/stall`` with the longest stall since the last ask and the peak RSS."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.worst = 0.0
        self.task: asyncio.Task[None] | None = None

    async def watch(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(0.005)
            self.worst = max(self.worst, time.perf_counter() - start - 0.005)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self.watch())
        if scope["type"] != "http" or scope["path"] != STALL_PATH:
            await self.app(scope, receive, send)
            return
        body = orjson.dumps(
            {
                "stall": self.worst,
                "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                "children": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
            }
        )
        self.worst = 0.0
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})


def serve(checkout: Path, port: int, token: str, codes: int, limits: dict[str, Any]) -> None:
    """Child process: the workbench app of ``checkout`` under ``limits`` (fields that
    checkout lacks are left out), wrapped in the stall monitor."""
    sys.path.insert(0, str(checkout))
    import uvicorn

    from workbench import Workbench
    from workbench.server import create_app
    from workbench.server.offload import Limits

    known = {f.name for f in dataclasses.fields(Limits)}
    wb = Workbench()
    wb.load(checkout / "valuesets", progress=False)
    everything = {
        "resourceType": "ValueSet",
        "url": BIG_VS,
        "status": "active",
        "compose": {"include": [{"system": BIG}]},
    }
    wb.load([big_codesystem(codes), everything], progress=False)
    wb.expand(BIG_VS, filter=VOCAB[0], count=1)  # the text index, built once
    gc.freeze()
    kept = Limits(**{k: v for k, v in limits.items() if k in known})
    app = StallMonitor(create_app(wb, token=token, base=BASE, limits=kept))
    uvicorn.run(app, host=HOST, port=port, access_log=False, log_level="warning", lifespan="off")


# --- the driver ------------------------------------------------------------------------------


def free_port() -> int:
    """A port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


class Server:
    """One server process (this script with ``--serve``)."""

    def __init__(self, name: str, checkout: Path, codes: int, limits: dict[str, Any]) -> None:
        self.name = name
        self.token = secrets.token_urlsafe(16)
        self.port = free_port()
        self.root = f"http://{HOST}:{self.port}"
        self.url = self.root + BASE
        args = [str(checkout), str(self.port), self.token, str(codes), json.dumps(limits)]
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve", *args],
            cwd=ROOT,
            start_new_session=True,
        )

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", "Content-Type": "application/fhir+json"}

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server {self.name} exited ({self.proc.returncode})")
                try:
                    client.get(self.url + "/metadata")
                    return
                except httpx.TransportError:
                    time.sleep(0.2)
        raise RuntimeError(f"server {self.name} was not ready in {READY_TIMEOUT_S:.0f} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def validate_body(inline: int) -> bytes:
    """POST $validate-code of male in administrative-gender with ``inline`` small
    CodeSystems as tx-resource."""
    parameter: list[dict[str, Any]] = [
        {"name": "url", "valueUri": GENDER_VS},
        {"name": "system", "valueUri": GENDER_CS},
        {"name": "code", "valueCode": "male"},
    ]
    parameter += [
        {
            "name": "tx-resource",
            "resource": {
                "resourceType": "CodeSystem",
                "url": f"http://example.org/fhir/CodeSystem/inline-{i}",
                "status": "active",
                "content": "complete",
                "concept": [{"code": "a", "display": "Alpha"}, {"code": "b", "display": "Beta"}],
            },
        }
        for i in range(inline)
    ]
    return orjson.dumps({"resourceType": "Parameters", "parameter": parameter})


def filter_body() -> bytes:
    """$expand of the big code system with a 30-word filter (all common words)."""
    parameter = [
        {"name": "url", "valueUri": BIG_VS},
        {"name": "filter", "valueString": " ".join(VOCAB[:30])},
        {"name": "count", "valueInteger": 5},
    ]
    return orjson.dumps({"resourceType": "Parameters", "parameter": parameter})


def probe(server: Server, stop: threading.Event, latencies: list[float]) -> None:
    """GET /metadata every 20 ms until ``stop``."""
    with httpx.Client(timeout=60.0, trust_env=False) as client:
        while not stop.is_set():
            start = time.perf_counter()
            client.get(server.url + "/metadata")
            latencies.append(time.perf_counter() - start)
            stop.wait(0.02)


def run_case(server: Server, path: str, body: bytes) -> dict[str, Any]:
    """One POST while /metadata is probed; the figures of the case."""
    with httpx.Client(timeout=120.0, trust_env=False) as client:
        client.get(server.root + STALL_PATH)  # reset the stall
        latencies: list[float] = []
        stop = threading.Event()
        prober = threading.Thread(target=probe, args=(server, stop, latencies))
        prober.start()
        time.sleep(0.1)
        start = time.perf_counter()
        answer = client.post(server.url + path, content=body, headers=server.headers())
        took = time.perf_counter() - start
        time.sleep(0.05)
        stop.set()
        prober.join()
        stats = client.get(server.root + STALL_PATH).json()
    latencies.sort()
    return {
        "status": answer.status_code,
        "seconds": took,
        "stall": stats["stall"],
        "p50": latencies[len(latencies) // 2] if latencies else 0.0,
        "max": latencies[-1] if latencies else 0.0,
        "rss": stats["rss"],
        "children": stats["children"],
        "text": answer.text[:160] if answer.status_code != 200 else "",
    }


def report(name: str, kb: int, found: dict[str, Any]) -> None:
    print(
        f"{name:<22} {kb:>7,} KB  {found['status']:>3}  {found['seconds']:7.2f} s  "
        f"stall {found['stall'] * 1000:7.1f} ms  /metadata p50 {found['p50'] * 1000:6.1f} "
        f"max {found['max'] * 1000:7.1f} ms  rss {found['rss'] / 2**20:6.0f} MB "
        f"(children {found['children'] / 2**20:4.0f} MB)",
        flush=True,
    )
    if found["text"]:
        print(f"{'':<24}{found['text']}", flush=True)


def bench(checkout: Path, codes: int, sizes: list[int], deadline: float, only: list[str]) -> int:
    """Start the servers, run the cases, print them; the exit status."""
    raised = {"tx_resources": 100_000, "tx_resource_bytes": 50_000_000}
    servers = {
        "default": Server("default", checkout, codes, {}),
        "raised": Server("raised", checkout, codes, raised),
        "deadline": Server("deadline", checkout, codes, {**raised, "seconds": deadline}),
    }
    ok = True
    try:
        for server in servers.values():
            server.wait_ready()
        validate = "/ValueSet/$validate-code"
        cases: list[tuple[str, Server, str, bytes]] = [
            ("baseline", servers["raised"], validate, validate_body(0)),
        ]
        for n in sizes:
            cases.append((f"tx-{n} (default)", servers["default"], validate, validate_body(n)))
            cases.append((f"tx-{n} (raised)", servers["raised"], validate, validate_body(n)))
        cases.append(("filter-30", servers["raised"], "/ValueSet/$expand", filter_body()))
        cases.append(("deadline", servers["deadline"], validate, validate_body(sizes[-1])))
        for name, server, path, body in cases:
            if only and name != "baseline" and not name.startswith(tuple(only)):
                continue
            found = run_case(server, path, body)
            report(name, len(body) // 1024, found)
            ok &= found["stall"] < 0.05 and found["max"] < 0.1
            if name == "deadline":
                ok &= found["seconds"] <= deadline * 1.1 + UPLOAD_S
    except (RuntimeError, httpx.HTTPError) as exc:
        print(f"setup failed: {exc}", file=sys.stderr)
        return 2
    finally:
        for server in servers.values():
            server.stop()
    print("PASS" if ok else "MISS: a stall over 50 ms, /metadata over 100 ms or a late answer")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the sizes")
    parser.add_argument("--codes", type=int, default=20_000, help="codes of the big system")
    parser.add_argument("--deadline", type=float, default=0.5, help="seconds, deadline case")
    parser.add_argument(
        "--checkout", type=Path, default=ROOT, help="the checkout served (default this one)"
    )
    parser.add_argument(
        "--only", default="", help="comma-separated case-name prefixes (default: all cases)"
    )
    parser.add_argument("--serve", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        checkout, port, token, codes, limits = args.serve
        serve(Path(checkout), int(port), token, int(codes), json.loads(limits))
        return 0
    scale = 4 if args.quick else 1
    sizes = [5_000 // scale, 20_000 // scale]
    only = [name for name in args.only.split(",") if name]
    return bench(args.checkout.resolve(), args.codes // scale, sizes, args.deadline, only)


if __name__ == "__main__":
    sys.exit(main())
