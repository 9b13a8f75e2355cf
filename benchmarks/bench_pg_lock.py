"""A PostgreSQL lock does not stall the server (issue 49, point 7): with another connection
holding an ``ACCESS EXCLUSIVE`` lock on the versions' table for 3 s, ``/metadata`` and
``$validate-code`` of loaded content keep answering at once on the same process, while the
requests that need the database (a history, a read of a resource not held, a write) wait.

Run from the repository root (PostgreSQL installed: ``make postgresql``)::

    .venv/bin/python benchmarks/bench_pg_lock.py                        # this checkout
    .venv/bin/python benchmarks/bench_pg_lock.py --checkout /tmp/before  # another one

A PostgreSQL server is started in a temporary folder (``tests/postgres_support.py``), and one
server process (this script with ``--serve``, one uvicorn worker on 127.0.0.1, the
administrative-gender ValueSet and CodeSystem loaded, ``--database`` that PostgreSQL) from
``--checkout``. Each round has two phases of ``--seconds`` (3 s): ``free``, no lock held (the
baseline, same run), then ``locked``, a lock held from another connection the whole phase.
In each, one client sends ``/metadata`` and GET ``$validate-code`` alternately over one
keep-alive connection (at most ``MAX_REQUESTS``), while three threads send a history, a read
of a resource never written and a PUT once each (the requests that need the database).

Printed per phase (all rounds): how many quick requests were answered, their p50, p99 and
max, and how long the database requests took; then the ratio of the locked p99 to the free
p99. Target: locked p99 <= 50 ms, the database requests all answered (none 5xx) after the
lock. Exit status 0 when met, 1 otherwise, 2 on a setup failure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from postgres_support import Postgres, cleanup, started  # noqa: E402

HOST = "127.0.0.1"
TOKEN = "bench-token"
TABLE = "workbench_versions"
TARGET_P99 = 0.050
MAX_REQUESTS = 50_000
GENDER_VS = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
VALIDATE = f"/ValueSet/$validate-code?url={GENDER_VS}&system={GENDER_CS}&code=female"
SERVER = """
import sys
from pathlib import Path
checkout, port, url = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
sys.path.insert(0, str(checkout))
import uvicorn
from workbench import Workbench
from workbench.server import create_app
wb = Workbench()
for name in ("ValueSet-administrative-gender.json", "CodeSystem-administrative-gender.json"):
    wb.load(checkout / "valuesets" / "r4-core" / name, progress=False)
app = create_app(wb, token=sys.argv[4], database=url)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
"""


def serve(checkout: Path, url: str) -> tuple[subprocess.Popen[bytes], str]:
    """The server process of ``checkout`` over ``url``, once it answers; its base URL."""
    from http_support import free_port

    port = free_port()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(checkout)}
    command = [sys.executable, "-c", SERVER, str(checkout), str(port), url, TOKEN]
    process = subprocess.Popen(command, env=env, cwd=tempfile.gettempdir())
    base = f"http://{HOST}:{port}/fhir/R4"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited ({process.returncode})")
        try:
            if httpx.get(f"{base}/metadata", headers=_auth(), timeout=1).status_code == 200:
                return process, base
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("the server did not start")


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def _vs(title: str) -> dict[str, Any]:
    return {"resourceType": "ValueSet", "id": "bench", "status": "draft", "title": title}


def _timed(base: str, method: str, path: str, **kwargs: Any) -> tuple[float, int]:
    """One request on a connection of its own: seconds, status."""
    with httpx.Client(base_url=base, headers=_auth(), timeout=60) as http:
        began = time.perf_counter()
        status = http.request(method, path, **kwargs).status_code
        return time.perf_counter() - began, status


def hold(url: str, seconds: float, holding: threading.Event) -> None:
    """Hold an ACCESS EXCLUSIVE lock on the versions' table for ``seconds``."""
    import psycopg

    with psycopg.connect(url) as db, db.transaction():
        db.execute(f"LOCK TABLE {TABLE} IN ACCESS EXCLUSIVE MODE")
        holding.set()
        time.sleep(seconds)


def phase(base: str, url: str, seconds: float, locked: bool, n: int) -> dict[str, Any]:
    """One phase: the quick requests' latencies and the database requests' (seconds, status)."""
    quick: list[float] = []
    with ThreadPoolExecutor(4) as pool, httpx.Client(base_url=base, headers=_auth()) as http:
        holding = threading.Event()
        locker = pool.submit(hold, url, seconds, holding) if locked else None
        if locker is not None and not holding.wait(30):
            raise RuntimeError("the lock was not taken")
        began = time.perf_counter()
        slow: dict[str, Future[tuple[float, int]]] = {
            "history": pool.submit(_timed, base, "GET", "/ValueSet/bench/_history"),
            "read (not held)": pool.submit(_timed, base, "GET", "/ValueSet/never-written"),
            "write": pool.submit(_timed, base, "PUT", "/ValueSet/bench", json=_vs(str(n))),
        }
        while time.perf_counter() - began < seconds and len(quick) < MAX_REQUESTS:
            path = "/metadata" if len(quick) % 2 else VALIDATE
            sent = time.perf_counter()
            response = http.get(path)
            quick.append(time.perf_counter() - sent)
            if response.status_code != 200:
                raise RuntimeError(f"{path} answered {response.status_code}")
        if locker is not None:
            locker.result()
        return {"quick": quick, "slow": {name: f.result() for name, f in slow.items()}}


def p(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(name: str, runs: list[dict[str, Any]]) -> float:
    """Print a phase's figures over every round; return its p99."""
    quick = [t for run in runs for t in run["quick"]]
    slow = [(k, t, s) for run in runs for k, (t, s) in run["slow"].items()]
    p99 = p(quick, 0.99)
    print(
        f"{name:<7} quick requests {len(quick):>6}  p50 {statistics.median(quick) * 1000:7.2f} ms"
        f"  p99 {p99 * 1000:8.2f} ms  max {max(quick) * 1000:8.2f} ms"
    )
    for kind in dict.fromkeys(k for k, _, _ in slow):
        took = [t for k, t, _ in slow if k == kind]
        statuses = sorted({s for k, _, s in slow if k == kind})
        print(f"{'':<8}{kind:<16} {min(took):6.3f}-{max(took):6.3f} s  status {statuses}")
    return p99


def run(checkout: Path, rounds: int, seconds: float) -> int:
    try:
        server = started()
    except (RuntimeError, subprocess.SubprocessError) as exc:
        print(f"setup failed: {exc}", file=sys.stderr)
        return 2
    process: subprocess.Popen[bytes] | None = None
    try:
        url = server.create("bench")
        process, base = serve(checkout, url)
        with httpx.Client(base_url=base, headers=_auth()) as http:
            http.put("/ValueSet/bench", json=_vs("0")).raise_for_status()
        free, locked = [], []
        for n in range(rounds):
            free.append(phase(base, url, seconds, False, 2 * n + 1))
            locked.append(phase(base, url, seconds, True, 2 * n + 2))
        return summary(checkout, server, rounds, seconds, free, locked)
    except (RuntimeError, httpx.HTTPError) as exc:
        print(f"setup failed: {exc}", file=sys.stderr)
        return 2
    finally:
        if process is not None:
            process.terminate()
            process.wait(10)
        cleanup(server)


def summary(
    checkout: Path,
    server: Postgres,
    rounds: int,
    seconds: float,
    free: list[dict[str, Any]],
    locked: list[dict[str, Any]],
) -> int:
    """Print the figures; 0 when the target is met."""
    print(f"checkout {checkout}, {rounds} rounds of {seconds:g} s, load {os.getloadavg()[0]:.2f}")
    base_p99 = report("free", free)
    lock_p99 = report("locked", locked)
    waited = all(t >= seconds * 0.5 for run in locked for t, _ in run["slow"].values())
    answered = all(s < 500 for run in [*free, *locked] for _, s in run["slow"].values())
    print(f"locked p99 / free p99: {lock_p99 / base_p99:.2f}x")
    ok = lock_p99 <= TARGET_P99 and answered
    print(
        f"target: locked p99 <= {TARGET_P99 * 1000:.0f} ms, database requests answered: "
        + ("met" if ok else "MISSED")
        + ("" if waited else " (the database requests did not all wait for the lock)")
    )
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the checkout served")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0, help="each phase (the lock)")
    args = parser.parse_args(argv)
    return run(args.checkout.resolve(), args.rounds, args.seconds)


if __name__ == "__main__":
    sys.exit(main())
