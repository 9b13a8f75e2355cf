"""HTTP throughput of the workbench FHIR server against a raw Starlette app, and the latency of
cheap requests while an expensive expansion runs.

Run from the repository root::

    .venv/bin/python benchmarks/bench_server.py                 # 10 s per measured run
    .venv/bin/python benchmarks/bench_server.py --duration 30 --rounds 16
    .venv/bin/python benchmarks/bench_server.py --data          # the read path with --data

It needs ``wrk`` on PATH (``make wrk`` installs it; Debian/Ubuntu: ``apt-get install wrk``).

What it measures: uvicorn processes on 127.0.0.1 (free ports), with one worker each (but
``GET gender x2``), ``access_log`` off, ``log_level`` warning and uvicorn's default
loop/http implementations (``auto``: uvloop and httptools when installed, else asyncio and
h11; the script prints which). One serves ``create_app(Workbench loaded with valuesets/ and
a synthetic code system of --big-concepts concepts)`` (with ``--data``, over a temporary data
folder: every request first asks its SQLite database whether another process wrote); the
other a raw Starlette app with a
GET and a POST endpoint returning a small JSON body (the POST one parses its JSON body
first): the baseline, under the same uvicorn settings. Each scenario gets a warm-up ``wrk``
run, then a measured run of ``--duration`` seconds at 16 connections (``wrk -t2 -c16
--latency``) over loopback; the baseline is measured right before the scenarios it is the
baseline of. Scenarios:

* ``GET raw`` / ``POST raw``: the Starlette endpoints;
* ``GET gender``: ``ValueSet/$validate-code`` of ``female`` in administrative-gender: the
  same request again and again, which the server answers from its answer memo
  (``workbench.server.answer_memo``) after the first time: the figure of issue 49 (paired
  ratio >= 0.75);
* ``GET encounter``: ``ValueSet/$validate-code`` of ``AMB`` in v3-ActEncounterCode (an
  ``is-a`` filter over v3 ActCode);
* ``GET gender made`` / ``GET encounter made``: the same requests to a fourth server, one
  worker without the memo (``--limit memo_bytes=0``): every answer is made by the engine,
  what a request the memo does not hold costs;
* ``GET gender x2``: ``GET gender`` from a third server with two workers (``server.py
  --workers 2``), against ``GET gender`` from the one-worker server (a figure, no target);
* ``POST gender``: the same as ``GET gender`` as a Parameters body;
* ``GET lookup``: ``CodeSystem/$lookup`` of ``female``;
* ``mixed``: ``GET gender`` while one ``POST ValueSet/$expand`` of an inline value set (two
  regex filters, on the display and on the code, over the synthetic code system: two regex
  matches per code; a new regex each run so nothing is cached,
  ``count`` 10) runs; the load lasts three quarters of the time the same expansion takes
  alone (so every timed request falls inside the expansion, which must take at least 5 s;
  the run fails if the expansion ends before the load).

Then each scenario with a ratio target is measured again against its baseline in
alternating slices (``paired.py``): ``--rounds`` rounds (default 10) of one ``--slice``-second
run (default 2) of each, the order reversed every other round. On this shared machine the
raw endpoint's rate drifts by a fifth or more within a minute, so a ratio of two runs half a
minute apart (the ``ratio`` column) swings with the drift; the paired ratio compares slices
seconds apart, and its median is the figure checked against the target.

Before the load each workbench request is sent once with httpx and must answer 200 (and
``result`` true for $validate-code); after each run ``wrk`` must report no non-2xx responses
and no socket errors. Printed: req/s, the server's processor time per request over the
measured run (``CPU µs/req``: user and system time of the one-worker server's process from
``/proc``, divided by the requests; less sensitive than a rate to other load on a shared
machine, and blank for the two-worker server), p50 and p99 latency per scenario, the ratio
of the continuous runs, the paired ratio (median, range, rounds) against its target (0.75 for
``GET gender``, else 0.5) and p99
against 5 ms (PASS/MISS), and for the mixed case the expansion's time and p99 against
20 ms. The exit status is 0 if every target is met, 1 on a MISS, 2 on a setup or validity
failure.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from urllib.parse import urlencode

import httpx
import orjson
from paired import PairedRatio, paired_ratio
from wrk_runs import CONNECTIONS, THREADS, WrkResult, post_script, process_cpu, run_wrk

ROOT = Path(__file__).resolve().parent.parent
VALUESETS = ROOT / "valuesets"
BASE = "/fhir/R4"
HOST = "127.0.0.1"
WARMUP_S = 3
RATIO_TARGET = 0.5
#: GET $validate-code against the raw app (issue 49): the answer the memo gives again
MEMO_RATIO_TARGET = 0.75
P99_TARGET_MS = 5.0
MIXED_P99_TARGET_MS = 20.0
MIXED_EXPANSION_S = 5.0
LOAD_SHARE = 0.75  # of the expansion's time alone: how long the mixed case loads the server
BIG_SYSTEM = "http://example.org/fhir/CodeSystem/bench-big"
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
WRK_INSTALL = "install it with: apt-get update && apt-get install -y wrk"


@dataclass(frozen=True)
class Scenario:
    """One request to load: a name, the path with its query, a JSON body for POST, which
    app serves it, and the raw baseline it is compared with."""

    name: str
    path: str
    workbench: bool
    body: bytes | None = None
    baseline: str | None = None
    kind: str = "validate"  # validate (result must be true) | lookup
    workers: int = 1  # server processes (``server.py --workers``); >1: no target, a figure
    memo: bool = True  # False: served by a server without the answer memo (every answer made)
    target: float = RATIO_TARGET  # of the paired ratio to the baseline


def _validate_path(url: str, system: str, code: str) -> str:
    query = urlencode({"url": url, "system": system, "code": code})
    return f"{BASE}/ValueSet/$validate-code?{query}"


GENDER_VS = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
GENDER_BODY = orjson.dumps(
    {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "url", "valueUri": GENDER_VS},
            {"name": "system", "valueUri": GENDER_CS},
            {"name": "code", "valueCode": "female"},
        ],
    }
)
GENDER_PATH = _validate_path(GENDER_VS, GENDER_CS, "female")
ENCOUNTER_PATH = _validate_path(
    "http://terminology.hl7.org/ValueSet/v3-ActEncounterCode",
    "http://terminology.hl7.org/CodeSystem/v3-ActCode",
    "AMB",
)
SCENARIOS = (
    Scenario("GET raw", "/ping", workbench=False),
    Scenario(
        "GET gender",
        GENDER_PATH,
        workbench=True,
        baseline="GET raw",
        target=MEMO_RATIO_TARGET,
    ),
    Scenario(
        "GET gender made",
        GENDER_PATH,
        workbench=True,
        baseline="GET raw",
        memo=False,
    ),
    Scenario(
        "GET encounter made",
        ENCOUNTER_PATH,
        workbench=True,
        baseline="GET raw",
        memo=False,
    ),
    Scenario(
        "GET encounter",
        ENCOUNTER_PATH,
        workbench=True,
        baseline="GET raw",
    ),
    Scenario(
        "GET lookup",
        f"{BASE}/CodeSystem/$lookup?" + urlencode({"system": GENDER_CS, "code": "female"}),
        workbench=True,
        baseline="GET raw",
        kind="lookup",
    ),
    Scenario(
        "GET gender x2",
        GENDER_PATH,
        workbench=True,
        baseline="GET gender",
        workers=2,
    ),
    Scenario("POST raw", "/ping", workbench=False, body=GENDER_BODY),
    Scenario(
        "POST gender",
        f"{BASE}/ValueSet/$validate-code",
        workbench=True,
        body=GENDER_BODY,
        baseline="POST raw",
    ),
)
#: the scenarios with a ratio target (one worker, against a raw baseline)
TARGETED = tuple(sc for sc in SCENARIOS if sc.baseline is not None and sc.workers == 1)
#: the workbench servers: (workers, memo) of each
SERVERS = ((1, True), (2, True), (1, False))


def expansion_body(run: int) -> bytes:
    """A POST $expand of an inline value set over the big code system; the regex differs
    per run, so no cache answers it."""
    return orjson.dumps(
        {
            "resourceType": "Parameters",
            "parameter": [
                {
                    "name": "valueSet",
                    "resource": {
                        "resourceType": "ValueSet",
                        "status": "active",
                        "compose": {
                            "include": [
                                {
                                    "system": BIG_SYSTEM,
                                    "filter": [
                                        {
                                            "property": "display",
                                            "op": "regex",
                                            "value": "Concept [0-9]+",
                                        },
                                        {
                                            "property": "code",
                                            "op": "regex",
                                            "value": f"C.*[13579]|X{run}",
                                        },
                                    ],
                                }
                            ]
                        },
                    },
                },
                {"name": "count", "valueInteger": 10},
            ],
        }
    )


# --- the served apps (run in the child processes) ------------------------------------------


def _uvicorn_run(app: object, port: int) -> None:
    import uvicorn

    uvicorn.run(
        app,  # type: ignore[arg-type]
        host=HOST,
        port=port,
        workers=1,
        access_log=False,
        log_level="warning",
        lifespan="off",
    )


def big_codesystem(concepts: int) -> dict[str, object]:
    """A flat synthetic code system (what the mixed case expands)."""
    return {
        "resourceType": "CodeSystem",
        "url": BIG_SYSTEM,
        "version": "1",
        "status": "active",
        "content": "complete",
        "concept": [{"code": f"C{i:07d}", "display": f"Concept {i}"} for i in range(concepts)],
    }


def serve_workbench(
    port: int, token: str, concepts: int, workers: int = 1, data: bool = False, memo: bool = True
) -> None:
    """Child process: serve the workbench loaded with ``valuesets/`` and the big system;
    with several workers as ``server.py --workers`` does (forked after loading, writes
    shared through a temporary data folder); ``memo`` False: without the answer memo
    (``--limit memo_bytes=0``), so that every answer is made."""
    sys.path.insert(0, str(ROOT))
    import uvicorn

    from workbench import Workbench
    from workbench.server import create_app
    from workbench.server.offload import Limits
    from workbench.server.workers import serve_workers

    wb = Workbench()
    wb.load(VALUESETS, progress=False)
    wb.load(big_codesystem(concepts), progress=False)
    limits = None if memo else Limits(memo_bytes=0)
    if workers == 1 and not data:
        gc.freeze()  # as server.py does once the content is loaded
        _uvicorn_run(create_app(wb, token=token, base=BASE, limits=limits), port)
        return
    if workers == 1:  # --data: the read path asks the database whether another wrote
        with tempfile.TemporaryDirectory() as folder:
            app = create_app(wb, token=token, base=BASE, data_dir=folder)
            gc.freeze()
            _uvicorn_run(app, port)
        return
    with tempfile.TemporaryDirectory() as shared:
        app = create_app(wb, token=token, base=BASE, data_dir=shared)
        gc.freeze()
        config = uvicorn.Config(
            app, host=HOST, port=port, access_log=False, log_level="warning", lifespan="off"
        )
        serve_workers(config, workers)


def serve_trivial(port: int) -> None:
    """Child process: serve a Starlette app with one async JSON endpoint."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def ping(request: Request) -> JSONResponse:
        if request.method == "POST":
            orjson.loads(await request.body())
        return JSONResponse({"status": "ok", "result": True})

    _uvicorn_run(Starlette(routes=[Route("/ping", ping, methods=["GET", "POST"])]), port)


# --- the driver ----------------------------------------------------------------------------


def free_port() -> int:
    """A port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def start(args: list[str]) -> subprocess.Popen[bytes]:
    """Start this script in a child process with the given ``--serve-*`` arguments."""
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), *args],
        cwd=ROOT,
        start_new_session=True,
    )


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT the child (uvicorn's clean shutdown), then SIGKILL it if it lingers."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(STOP_TIMEOUT_S)


def wait_ready(proc: subprocess.Popen[bytes], url: str, headers: dict[str, str]) -> None:
    """Poll ``url`` until it answers (any status) or the deadline passes."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    with httpx.Client(timeout=2.0, headers=headers) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited early with status {proc.returncode}")
            try:
                client.get(url)
                return
            except httpx.TransportError:
                time.sleep(0.1)
    raise RuntimeError(f"{url} was not ready within {READY_TIMEOUT_S:.0f} s")


def check_valid(sc: Scenario, url: str, headers: dict[str, str]) -> None:
    """The workbench must answer 200 (with ``result`` true), so we time the real path."""
    if sc.body is None:
        response = httpx.get(url, headers=headers, timeout=10.0)
    else:
        posted = {**headers, "Content-Type": "application/fhir+json"}
        response = httpx.post(url, content=sc.body, headers=posted, timeout=10.0)
    if response.status_code != 200:
        raise RuntimeError(f"{url} answered {response.status_code}: {response.text[:300]}")
    body = response.json()
    params = {p.get("name"): p for p in body.get("parameter", [])}
    if sc.kind == "validate" and params.get("result", {}).get("valueBoolean") is not True:
        raise RuntimeError(f"{url} did not answer result=true: {response.text[:300]}")


def implementations() -> str:
    """Which loop and HTTP parser uvicorn's ``auto`` settings pick here."""
    import uvicorn

    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    return f"uvicorn {uvicorn.__version__}, loop={loop}, http={http}"


class Expansion(threading.Thread):
    """One expensive POST $expand in the background; records its time and status."""

    def __init__(self, url: str, headers: dict[str, str], body: bytes) -> None:
        super().__init__(daemon=True)
        self.url, self.headers, self.body = url, headers, body
        self.seconds = 0.0
        self.status = 0

    def run(self) -> None:
        posted = {**self.headers, "Content-Type": "application/fhir+json"}
        start = time.perf_counter()
        response = httpx.post(self.url, content=self.body, headers=posted, timeout=600.0)
        self.seconds = time.perf_counter() - start
        self.status = response.status_code


def mixed(
    wrk: str, root: str, headers: dict[str, str], run: int
) -> tuple[WrkResult, Expansion, int]:
    """``GET gender`` under wrk while one expensive expansion runs."""
    for attempt in (1, 2):  # the first builds the code system's index; the second is timed
        probe = Expansion(f"{root}{BASE}/ValueSet/$expand", headers, expansion_body(-attempt))
        probe.run()  # how long one takes when alone
        if probe.status != 200:
            raise RuntimeError(f"the expansion answered {probe.status}")
    # the load lasts three quarters of the time the expansion took alone, so that it falls
    # inside the expansion (which varies by a tenth from run to run on a shared machine):
    # no request is timed without it, which the check below makes sure of
    seconds = max(1, int(probe.seconds * LOAD_SHARE))
    expansion = Expansion(f"{root}{BASE}/ValueSet/$expand", headers, expansion_body(run))
    expansion.start()
    result = run_wrk(wrk, root + SCENARIOS[1].path, headers, seconds)
    expansion.join(600)
    if expansion.status != 200:
        raise RuntimeError(f"the expansion answered {expansion.status}")
    if expansion.seconds < seconds:
        raise RuntimeError(
            f"the expansion took {expansion.seconds:.1f} s, less than the {seconds} s of load: "
            "raise --big-concepts"
        )
    return result, expansion, seconds


def start_servers(
    procs: list[subprocess.Popen[bytes]],
    token: str,
    concepts: int,
    wb_port: int,
    raw_port: int,
    data: bool = False,
) -> tuple[dict[tuple[int, bool], str], str]:
    """Start the workbench (one worker), the same from two workers and from one without the
    answer memo (those two without the big system: they serve GET requests only) and the
    raw app; wait until they answer; return the workbench roots by (workers, memo) and the
    raw app's root."""
    taken = {wb_port, raw_port}
    ports = [wb_port]
    while len(ports) < len(SERVERS):
        port = free_port()
        if port not in taken:
            taken.add(port)
            ports.append(port)
    started = []
    for (workers, memo), port in zip(SERVERS, ports, strict=True):
        size, folder = (concepts, data) if port == wb_port else (1000, workers > 1)
        args = [str(port), token, str(size), str(workers), str(int(folder)), str(int(memo))]
        started.append((start(["--serve-workbench", *args]), port))
    started.append((start(["--serve-trivial", str(raw_port)]), raw_port))
    procs.extend(proc for proc, _ in started)
    sizes = [w for w, _ in SERVERS] + [1]  # workers of each
    roots = [f"http://{HOST}:{port}" for _, port in started]
    paths = [f"{BASE}/metadata"] * len(SERVERS) + ["/ping"]
    for (proc, _), root, path in zip(started, roots, paths, strict=True):
        wait_ready(proc, root + path, {})
    for (proc, _), root, count in zip(started, roots, sizes, strict=True):
        if count == 1:  # (a server of several workers: its CPU is its children's)
            SERVED[root] = proc.pid
    return dict(zip(SERVERS, roots, strict=False)), roots[-1]


#: The process of each one-worker server, by its root (for the CPU a request costs it).
SERVED: dict[str, int] = {}


def cpu_per_request(root: str, load: Callable[[], WrkResult]) -> tuple[WrkResult, float | None]:
    """``load()``, and the server's processor time per request over it (µs; None for a
    server of several workers or without /proc)."""
    pid = SERVED.get(root)
    before = None if pid is None else process_cpu(pid)
    result = load()
    after = None if pid is None else process_cpu(pid)
    if before is None or after is None or not result.requests:
        return result, None
    return result, (after - before) / result.requests * 1e6


def _rps(load: Callable[[int], WrkResult], seconds: int) -> float:
    return load(seconds).rps


def bench(
    duration: int, concepts: int, rounds: int = 10, slice_s: int = 2, data: bool = False
) -> int:
    """Start both servers, load every scenario, print the table; return the exit status
    (``data``: the one-worker workbench has a data folder)."""
    wrk = shutil.which("wrk")
    if wrk is None:
        print(f"error: wrk is not on PATH; {WRK_INSTALL}", file=sys.stderr)
        return 2
    token = "wb" + secrets.token_urlsafe(24)  # never starting with "-" (an option to argparse)
    auth = {"Authorization": f"Bearer {token}"}
    wb_port = free_port()
    trivial_port = next((p for p in (free_port() for _ in range(10)) if p != wb_port), 0)
    if not trivial_port:
        print("error: no second free port on 127.0.0.1", file=sys.stderr)
        return 2
    print(implementations())
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, wrk -t{THREADS} "
        f"-c{CONNECTIONS} -d{duration}s (warm-up {WARMUP_S}s)"
        + (", the workbench with a data folder (--data)" if data else "")
        + "\n"
    )
    procs: list[subprocess.Popen[bytes]] = []
    results: dict[str, WrkResult] = {}
    cpu: dict[str, float | None] = {}
    paired: dict[str, PairedRatio] = {}
    try:
        with tempfile.TemporaryDirectory() as folder:
            roots, trivial_root = start_servers(procs, token, concepts, wb_port, trivial_port, data)
            wb_root = roots[(1, True)]
            loads: dict[str, Callable[[int], WrkResult]] = {}
            for sc in SCENARIOS:
                root = roots[(sc.workers, sc.memo)] if sc.workbench else trivial_root
                url = root + sc.path
                headers = auth if sc.workbench else {}
                if sc.workbench:
                    check_valid(sc, url, headers)
                script = None if sc.body is None else post_script(sc.body, Path(folder))
                loads[sc.name] = partial(run_wrk, wrk, url, headers, script=script)
                loads[sc.name](WARMUP_S)
                res, cpu[sc.name] = cpu_per_request(root, partial(loads[sc.name], duration))
                results[sc.name] = res
                print(f"  {sc.name:<14} done: {res.requests} requests", flush=True)
            for sc in TARGETED:
                base, subject = loads[sc.baseline or ""], loads[sc.name]
                paired[sc.name] = paired_ratio(
                    partial(_rps, base, slice_s), partial(_rps, subject, slice_s), rounds
                )
                print(f"  {sc.name:<14} paired: {paired[sc.name].shown()}", flush=True)
            busy, expansion, busy_seconds = mixed(wrk, wb_root, auth, 1)
            print(f"  {'mixed':<14} done: {busy.requests} requests", flush=True)
    except (RuntimeError, ValueError, subprocess.SubprocessError, httpx.HTTPError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        for proc in procs:
            stop(proc)

    print(
        f"\n{'scenario':<14} {'req/s':>10} {'CPU µs/req':>11} {'p50 ms':>9} {'p99 ms':>9} "
        f"{'ratio':>7}  paired"
    )
    status = 0
    for sc in SCENARIOS:
        res = results[sc.name]
        used = cpu[sc.name]
        shown = "" if used is None else f"{used:.1f}"
        line = f"{sc.name:<14} {res.rps:>10.1f} {shown:>11} {res.p50_ms:>9.2f} {res.p99_ms:>9.2f}"
        if sc.workers > 1:
            ratio = res.rps / results[sc.baseline or ""].rps
            line += f" {ratio:>7.2f}  ({sc.workers} workers against 1 on {os.cpu_count()} CPUs)"
        elif sc.baseline is not None:
            ratio = res.rps / results[sc.baseline].rps
            pair = paired[sc.name]
            ok = pair.median >= sc.target and res.p99_ms <= P99_TARGET_MS
            status = status or (0 if ok else 1)
            line += (
                f" {ratio:>7.2f}  {pair.shown()}  {'PASS' if ok else 'MISS'} (targets: paired "
                f"ratio to {sc.baseline} >= {sc.target}, p99 <= {P99_TARGET_MS:g} ms)"
            )
        print(line)
    ok = busy.p99_ms <= MIXED_P99_TARGET_MS and expansion.seconds >= MIXED_EXPANSION_S
    status = status or (0 if ok else 1)
    print(
        f"{'mixed':<14} {busy.rps:>10.1f} {'':>11} {busy.p50_ms:>9.2f} {busy.p99_ms:>9.2f}"
        f"          {'PASS' if ok else 'MISS'} (GET gender for {busy_seconds} s inside a "
        f"{expansion.seconds:.1f} s expansion; targets: p99 <= {MIXED_P99_TARGET_MS:g} ms, "
        f"expansion >= {MIXED_EXPANSION_S:g} s)"
    )
    return status


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Read the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--duration", type=int, default=10, help="seconds of each measured wrk run (default 10)"
    )
    parser.add_argument(
        "--big-concepts",
        type=int,
        default=400_000,
        help="concepts of the code system the mixed case expands (default 400000, over 5 s)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=10,
        help="rounds of the paired ratio: one slice of the baseline and one of the scenario, "
        "the order reversed every other round (default 10)",
    )
    parser.add_argument(
        "--slice", type=int, default=2, help="seconds of one paired slice (default 2)"
    )
    parser.add_argument(
        "--serve-workbench",
        nargs=6,
        metavar=("PORT", "TOKEN", "CONCEPTS", "WORKERS", "DATA", "MEMO"),
        help=argparse.SUPPRESS,
    )
    parser.add_argument(
        "--data",
        action="store_true",
        help="serve the one-worker workbench with a (temporary) data folder, as --data does: "
        "every request first asks its database whether another process wrote",
    )
    parser.add_argument("--serve-trivial", metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.duration < 1 or args.slice < 1:
        parser.error("--duration and --slice must be at least 1 second")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Dispatch to a child server role, or run the benchmark."""
    args = parse_args(argv)
    if args.serve_workbench:
        port, token, concepts, workers, data, memo = args.serve_workbench
        serve_workbench(int(port), token, int(concepts), int(workers), data == "1", memo == "1")
        return 0
    if args.serve_trivial:
        serve_trivial(int(args.serve_trivial))
        return 0
    return bench(args.duration, args.big_concepts, args.rounds, args.slice, args.data)


if __name__ == "__main__":
    sys.exit(main())
