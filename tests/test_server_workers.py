"""``server.py --workers 2`` as real processes on 127.0.0.1: a write acknowledged by one worker
is seen by the next request to the other (read your writes from any worker), and ``If-Match``
holds across workers (no lost update). Connections are pinned to a known worker: the test
finds which worker process holds the server end of each connection (psutil), so every check
below goes through both workers on purpose rather than by chance."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from http_support import DEMO_CS, GENDER_CS, HOST, TOKEN, free_port
from test_server_process import CONTENT, ROOT, STOP_SECONDS, environment, wait_ready

from workbench.server.workers import worker_count

BASE = "/fhir/R4"
WORKERS = 2
RACERS = 6
INCREMENTS = 5


class Pinned:
    """One keep-alive HTTP connection, and the pid of the worker that serves it."""

    def __init__(self, port: int, workers: list[psutil.Process]) -> None:
        self.conn = http.client.HTTPConnection(HOST, port, timeout=STOP_SECONDS)
        self.request("GET", "/metadata")  # connects (and is answered, so it was accepted)
        local = self.conn.sock.getsockname()[1]
        self.worker = next(
            (
                w.pid
                for w in workers
                for c in w.net_connections(kind="tcp")
                if c.raddr and c.raddr.port == local
            ),
            0,
        )

    def request(
        self, method: str, path: str, body: Any = None, **headers: str
    ) -> tuple[int, dict[str, str], Any]:
        """Send one request on this connection; return status, headers and JSON body."""
        sent = {"Authorization": f"Bearer {TOKEN}", **headers}
        data = None if body is None else json.dumps(body).encode()
        if data is not None:
            sent["Content-Type"] = "application/fhir+json"
        self.conn.request(method, BASE + path, body=data, headers=sent)
        response = self.conn.getresponse()
        raw = response.read()
        return response.status, dict(response.getheaders()), json.loads(raw) if raw else None

    def close(self) -> None:
        self.conn.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, list[psutil.Process]]]:
    port = free_port()
    folder = tmp_path_factory.mktemp("workers")
    command = [sys.executable, str(ROOT / "server.py"), "--port", str(port), "--token", TOKEN]
    command += [*CONTENT, "--data", str(folder / "data"), "--workers", str(WORKERS)]
    log = (folder / "server.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment())
    try:
        wait_ready(process, f"http://{HOST}:{port}{BASE}")
        supervisor = psutil.Process(process.pid)
        deadline = time.monotonic() + STOP_SECONDS
        while len(supervisor.children()) < WORKERS and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = supervisor.children()
        assert len(workers) == WORKERS
        yield port, workers
        process.send_signal(signal.SIGTERM)
        assert process.wait(STOP_SECONDS) == 0
        for worker in workers:  # the supervisor waits for its workers
            assert not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(STOP_SECONDS)
        log.close()


@pytest.fixture
def opened() -> Iterator[list[Pinned]]:
    """The connections a test opened, closed when it ends (passed or not)."""
    made: list[Pinned] = []
    yield made
    for pinned in made:
        pinned.close()


def one_per_worker(
    port: int, workers: list[psutil.Process], opened: list[Pinned]
) -> dict[int, Pinned]:
    """A connection to each worker (new connections until every worker holds one)."""
    found: dict[int, Pinned] = {}
    for _ in range(200):
        pinned = Pinned(port, workers)
        if pinned.worker and pinned.worker not in found:
            found[pinned.worker] = pinned
            opened.append(pinned)
        else:
            pinned.close()
        if len(found) == len(workers):
            return found
    raise AssertionError(f"200 connections reached only the workers {sorted(found)}")


def demo_vs(rid: str, **changes: Any) -> dict[str, Any]:
    body = {
        "resourceType": "ValueSet",
        "id": rid,
        "url": f"http://example.org/fhir/ValueSet/{rid}",
        "status": "draft",
        "compose": {"include": [{"system": GENDER_CS}]},
    }
    return {**body, **changes}


def test_read_your_writes_from_any_worker(
    server: tuple[int, list[psutil.Process]], opened: list[Pinned]
) -> None:
    port, workers = server
    a, b = one_per_worker(port, workers, opened).values()
    for n in range(1, 11):
        writer, reader = (a, b) if n % 2 else (b, a)
        status, _, written = writer.request("PUT", "/ValueSet/ryw", demo_vs("ryw", title=f"t{n}"))
        assert status == (201 if n == 1 else 200), written
        status, headers, read = reader.request("GET", "/ValueSet/ryw")
        assert (status, read["title"], headers["etag"]) == (200, f"t{n}", f'W/"{n}"')
    # a value set created on one worker is what the other's operations use
    only_male = {"include": [{"system": GENDER_CS, "concept": [{"code": "male"}]}]}
    assert a.request("PUT", "/ValueSet/ryw", demo_vs("ryw", compose=only_male))[0] == 200
    check = f"/ValueSet/$validate-code?url=http://example.org/fhir/ValueSet/ryw&system={GENDER_CS}"
    assert b.request("GET", check + "&code=female")[2]["parameter"][0]["valueBoolean"] is False
    assert a.request("PUT", "/ValueSet/ryw", demo_vs("ryw"))[0] == 200
    assert b.request("GET", check + "&code=female")[2]["parameter"][0]["valueBoolean"] is True
    # search, delete, history: the same on both
    assert b.request("GET", "/ValueSet?url=http://example.org/fhir/ValueSet/ryw")[2]["total"] == 1
    assert b.request("DELETE", "/ValueSet/ryw")[0] == 204
    assert a.request("GET", "/ValueSet/ryw")[0] == 410
    assert a.request("DELETE", "/ValueSet/ryw")[0] == 204  # already deleted: no effect
    assert a.request("GET", "/ValueSet?url=http://example.org/fhir/ValueSet/ryw")[2]["total"] == 0
    status, _, created = b.request("POST", "/ValueSet", demo_vs("any", url=DEMO_CS + "/vs"))
    assert status == 201
    assert a.request("GET", f"/ValueSet/{created['id']}")[2] == created
    history = a.request("GET", "/ValueSet/ryw/_history")[2]
    assert [e["response"]["etag"] for e in history["entry"][:2]] == ['W/"13"', 'W/"12"']


def test_if_match_across_workers_loses_no_update(
    server: tuple[int, list[psutil.Process]], opened: list[Pinned]
) -> None:
    """Racers on both workers increment a counter (read, then PUT with If-Match, again on a
    412): every increment counts once. Then all PUT the same version at once: one wins."""
    port, workers = server
    pinned = list(one_per_worker(port, workers, opened).values())
    pinned += [Pinned(port, workers) for _ in range(RACERS - len(pinned))]
    opened[:] = pinned
    assert pinned[0].request("PUT", "/ValueSet/race", demo_vs("race", title="0"))[0] in (200, 201)
    conflicts: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(pinned))

    def increment(conn: Pinned) -> None:
        try:
            start.wait(STOP_SECONDS)
            done = 0
            while done < INCREMENTS:
                _, headers, current = conn.request("GET", "/ValueSet/race")
                changed = {**current, "title": str(int(current["title"]) + 1)}
                status, _, body = conn.request(
                    "PUT", "/ValueSet/race", changed, **{"If-Match": headers["etag"]}
                )
                if status == 412:
                    conflicts.append(1)
                    continue
                assert status == 200, body
                done += 1
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=increment, args=(conn,)) for conn in pinned]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(STOP_SECONDS * 2)
    assert not errors, errors
    _, headers, final = pinned[1].request("GET", "/ValueSet/race")
    total = len(pinned) * INCREMENTS
    assert final["title"] == str(total)
    assert headers["etag"] == f'W/"{total + 1}"'

    # every racer sends If-Match of the same version at the same moment: exactly one wins
    version = headers["etag"]
    statuses: list[int] = []
    at_once = threading.Barrier(len(pinned))

    def put_once(conn: Pinned, n: int) -> None:
        at_once.wait(STOP_SECONDS)
        body = demo_vs("race", title=f"winner {n}")
        statuses.append(conn.request("PUT", "/ValueSet/race", body, **{"If-Match": version})[0])

    threads = [threading.Thread(target=put_once, args=(c, n)) for n, c in enumerate(pinned)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(STOP_SECONDS)
    assert sorted(statuses) == [200] + [412] * (len(pinned) - 1)
    for conn in pinned:
        assert conn.request("GET", "/ValueSet/race")[1]["etag"] == f'W/"{total + 2}"'


@pytest.mark.parametrize(
    ("text", "expected"), [("1", 1), ("3", 3), (" 2 ", 2), ("auto", None), ("AUTO", None)]
)
def test_worker_count(text: str, expected: int | None) -> None:
    found = worker_count(text)
    assert found == expected if expected is not None else found >= 1


@pytest.mark.parametrize("text", ["0", "-1", "two", "", "1.5"])
def test_worker_count_refused(text: str) -> None:
    with pytest.raises(ValueError, match="whole number from 1, or auto"):
        worker_count(text)


def test_bad_workers_option_exits_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "server.py"), "--workers", "none"],
        capture_output=True,
        env=environment(),
        timeout=STOP_SECONDS,
    )
    assert done.returncode == 2
    assert b"--workers" in done.stderr


def test_a_client_cache_works_through_every_worker(
    server: tuple[int, list[psutil.Process]], opened: list[Pinned]
) -> None:
    """A cache started through one worker, filled through the other, is used, checked and
    ended through either (its content lives in the shared data folder); once ended, both
    workers say it was closed (the end is recorded there too)."""
    port, workers = server
    a, b = one_per_worker(port, workers, opened).values()
    status, _, started = a.request("POST", "/$cache-control?mode=start")
    assert status == 200, started
    cache_id = started["parameter"][0]["valueId"]
    header = {"X-Cache-Id": cache_id}
    cs = {
        "resourceType": "CodeSystem",
        "url": "http://example.org/fhir/CodeSystem/shared-cache",
        "status": "active",
        "content": "complete",
        "concept": [{"code": "k", "display": "K"}],
    }
    ask: dict[str, Any] = {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "url", "valueUri": cs["url"]},
            {"name": "code", "valueCode": "k"},
            {"name": "tx-resource", "resource": cs},
        ],
    }
    status, _, body = b.request("POST", "/CodeSystem/$validate-code", ask, **header)
    assert status == 200 and body["parameter"][0] == {"name": "result", "valueBoolean": True}
    del ask["parameter"][2]  # named by url alone, through the other worker
    status, _, body = a.request("POST", "/CodeSystem/$validate-code", ask, **header)
    assert status == 200 and body["parameter"][0] == {"name": "result", "valueBoolean": True}
    status, _, body = b.request("POST", "/$cache-control?mode=end", **header)
    assert status == 200, body
    for conn in (a, b):
        status, _, body = conn.request("POST", "/CodeSystem/$validate-code", ask, **header)
        assert status == 404, body
        issue = body["issue"][0]
        assert [c["code"] for c in issue["details"]["coding"]] == ["cache-id-unknown"]
        assert [e["valueString"] for e in issue["extension"]] == ["WB-CACHE-404-CLOSED"]
        status, _, body = conn.request("POST", "/$cache-control?mode=check", **header)
        assert status == 200 and body["parameter"][1] == {"name": "valid", "valueBoolean": False}
