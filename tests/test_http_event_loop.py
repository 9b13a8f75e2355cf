"""Nothing stalls the event loop (issue 49, point 7), over HTTP (uvicorn on 127.0.0.1) with a
real PostgreSQL (``postgres_support.py``): while another connection holds an ``ACCESS
EXCLUSIVE`` lock on the versions' table, ``/metadata`` and ``$validate-code`` of loaded
content answer at once, and the requests that need the database (a history, a read of a
resource not held, a write) wait for the lock and then answer correctly; and an app closes
its connections and its listening thread when it stops (100 start/stop cycles leave no
``workbench-listen`` thread and no connection behind)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from http_support import GENDER_CS, GENDER_VS, TOKEN, client, serve_app
from postgres_support import Postgres, running

from workbench import Workbench
from workbench.server import create_app
from workbench.server.database.postgresql import CHANNEL

R4 = Path(__file__).resolve().parent.parent / "valuesets" / "r4-core"
LOCK_SECONDS = 1.5
QUICK_SECONDS = 0.5  # far above what a request that needs no database takes
CYCLES = 100
VALIDATE = f"/ValueSet/$validate-code?url={GENDER_VS}&system={GENDER_CS}&code=female"


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with running() as server:
        yield server


@pytest.fixture(scope="module")
def wb() -> Workbench:
    bench = Workbench()
    for name in ("ValueSet-administrative-gender.json", "CodeSystem-administrative-gender.json"):
        bench.load(R4 / name, progress=False)
    return bench


def vs(rid: str, title: str) -> dict[str, Any]:
    return {"resourceType": "ValueSet", "id": rid, "status": "draft", "title": title}


def listeners() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "workbench-listen" and t.is_alive()}


def connections(url: str) -> int:
    """The connections to the database of ``url`` other than the one asking."""
    with psycopg.connect(url, autocommit=True) as db:
        row = db.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert row is not None
    return int(row[0])


def settled(read: Callable[[], int], want: int, seconds: float = 3.0) -> int:
    """``read()`` once it equals ``want`` (a closed connection leaves pg_stat_activity a
    moment later), else its last value."""
    deadline = time.monotonic() + seconds
    found = read()
    while found != want and time.monotonic() < deadline:
        time.sleep(0.02)
        found = read()
    return found


def timed(
    http: httpx.Client, method: str, path: str, **kwargs: Any
) -> tuple[float, httpx.Response]:
    began = time.perf_counter()
    response = http.request(method, path, **kwargs)
    return time.perf_counter() - began, response


def timed_alone(url: str, method: str, path: str, **kwargs: Any) -> tuple[float, httpx.Response]:
    """``timed`` on a connection of its own."""
    with client(url) as http:
        return timed(http, method, path, **kwargs)


def test_a_locked_table_holds_only_the_requests_that_need_it(
    wb: Workbench, postgres: Postgres
) -> None:
    url = postgres.create("locked")
    app = create_app(wb, token=TOKEN, database=url)
    with serve_app(app, lifespan="on") as running, client(running.url) as http:
        assert http.put("/ValueSet/locked", json=vs("locked", "first")).status_code == 201
        time.sleep(0.2)  # (its own notification comes back: caught up before the lock)
        assert http.get("/metadata").status_code == 200
        assert http.get(VALIDATE).status_code == 200
        holding = threading.Event()

        def hold() -> None:
            with psycopg.connect(url) as db, db.transaction():
                db.execute(f"LOCK TABLE {CHANNEL} IN ACCESS EXCLUSIVE MODE")
                holding.set()
                time.sleep(LOCK_SECONDS)

        with ThreadPoolExecutor(4) as pool:
            locker = pool.submit(hold)
            assert holding.wait(10)
            locked_at = time.perf_counter()
            base, written = running.url, vs("locked", "2")
            waiting: dict[str, Future[tuple[float, httpx.Response]]] = {
                "history": pool.submit(timed_alone, base, "GET", "/ValueSet/locked/_history"),
                "absent": pool.submit(timed_alone, base, "GET", "/ValueSet/absent"),
                "write": pool.submit(timed_alone, base, "PUT", "/ValueSet/locked", json=written),
            }
            quick = []
            while time.perf_counter() - locked_at < LOCK_SECONDS * 0.8:
                for path in ("/metadata", VALIDATE):
                    took, response = timed(http, "GET", path)
                    assert response.status_code == 200, response.text
                    quick.append(took)
            assert max(quick) < QUICK_SECONDS, max(quick)
            assert len(quick) > 10
            assert not any(f.done() for f in waiting.values()), "the lock held nothing"
            locker.result()
            answers = {name: f.result(30) for name, f in waiting.items()}
        for name, (took, response) in answers.items():
            assert response.status_code < 500, (name, response.text)
            assert took > LOCK_SECONDS * 0.5, (name, took)
        assert answers["absent"][1].status_code == 404
        assert answers["write"][1].status_code == 200
        history = answers["history"][1].json()
        assert history["entry"][0]["response"]["etag"] in ('W/"1"', 'W/"2"')
        assert http.get("/ValueSet/locked").json()["title"] == "2"
        found = http.get("/ValueSet/locked/_history").json()
        assert [e["response"]["etag"] for e in found["entry"]] == ['W/"2"', 'W/"1"']


@contextlib.asynccontextmanager
async def lifespan(app: Any) -> AsyncIterator[None]:
    """The app started and stopped as a server does: the ASGI lifespan protocol."""
    inbox: asyncio.Queue[dict[str, str]] = asyncio.Queue()
    outbox: asyncio.Queue[dict[str, str]] = asyncio.Queue()
    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    task = asyncio.create_task(app(scope, inbox.get, outbox.put))
    await inbox.put({"type": "lifespan.startup"})
    assert (await outbox.get())["type"] == "lifespan.startup.complete"
    try:
        yield
    finally:
        await inbox.put({"type": "lifespan.shutdown"})
        assert (await outbox.get())["type"] == "lifespan.shutdown.complete"
        await task


async def cycles(app: Any, count: int) -> None:
    """Start and stop ``app`` ``count`` times, each time a request that reads the database
    (a history), or writes it (every tenth)."""
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(
        transport=transport, base_url="http://127.0.0.1/fhir/R4", headers=headers
    ) as http:
        for n in range(1, count + 1):
            async with lifespan(app):
                if n % 10 == 0:
                    written = await http.put("/ValueSet/cycled", json=vs("cycled", str(n)))
                    assert written.status_code == 200, written.text
                else:
                    assert (await http.get("/ValueSet/cycled/_history")).status_code == 200


def test_an_app_closes_its_connections_and_its_listener_when_it_stops(
    wb: Workbench, postgres: Postgres
) -> None:
    """Served by uvicorn, then 100 start/stop cycles (the ASGI lifespan, a request that
    reaches the database in each: a few seconds), then served again: after each stop no
    listening thread and no connection is left."""
    url = postgres.create("cycles")
    before = listeners()
    app = create_app(wb, token=TOKEN, database=url)
    with serve_app(app, lifespan="on") as running, client(running.url) as http:
        assert http.put("/ValueSet/cycled", json=vs("cycled", "0")).status_code == 201
        assert connections(url) >= 2  # the work connection, the listener's
    assert listeners() == before
    assert settled(lambda: connections(url), 0) == 0
    asyncio.run(cycles(app, CYCLES))
    assert listeners() == before
    assert settled(lambda: connections(url), 0) == 0
    with serve_app(app, lifespan="on") as running, client(running.url) as http:
        assert http.get("/ValueSet/cycled").json()["title"] == str(CYCLES)
    assert listeners() == before
    assert settled(lambda: connections(url), 0) == 0


def open_files(folder: Path) -> list[str]:
    """The files of ``folder`` this process holds open (descriptors and memory maps)."""
    found = []
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            found.append(os.readlink(fd))
    maps = Path("/proc/self/maps").read_text().splitlines()
    found += [line.split()[-1] for line in maps if len(line.split()) >= 6]
    return sorted({f for f in found if f.startswith(str(folder))})


def test_an_app_over_sqlite_closes_its_files_when_it_stops(wb: Workbench, tmp_path: Path) -> None:
    """The versions' connections and WAL index map, the client caches' and the closure
    tables' connections: none is left open once the app stopped, and it starts again."""
    app = create_app(wb, token=TOKEN, data_dir=tmp_path)
    for n in (1, 2):
        with serve_app(app, lifespan="on") as running, client(running.url) as http:
            assert http.put("/ValueSet/kept", json=vs("kept", str(n))).status_code in (200, 201)
            started = http.post("/$cache-control", params={"mode": "start"})
            assert started.status_code == 200, started.text
            assert open_files(tmp_path)
        assert open_files(tmp_path) == []


def test_a_served_workbench_closes_its_files_when_stopped(tmp_path: Path) -> None:
    """``Workbench.serve`` (a ServerHandle): ``stop`` closes the data folder's database."""
    bench = Workbench()
    bench.load(R4 / "ValueSet-administrative-gender.json", progress=False)
    with bench.serve(port=0, token=TOKEN, data_dir=tmp_path) as handle, client(handle.url) as http:
        assert http.put("/ValueSet/kept", json=vs("kept", "1")).status_code == 201
        assert open_files(tmp_path)
    assert not handle.running
    assert open_files(tmp_path) == []
