"""Several servers over one PostgreSQL database (issue 39, points 2, 4 and 5): two
``server.py --database postgresql://...`` processes on different ports of 127.0.0.1 share
their writes (each sees the other's within 100 ms, through LISTEN/NOTIFY), race on one
``If-Match`` with one winner and one 412, refuse to start without the database (one line,
exit code 2), and with the database lost during a run answer writes 503 "nothing was
stored" while still serving what they hold, writing again once it is back; and share
their ``$cache-control`` client caches (a cache started on one is used on the other, and
how it ended is told by both). Against a real PostgreSQL (``postgres_support.py``): one per
test session."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_support import GENDER_VS, HOST, TOKEN, assert_outcome, client, free_port
from postgres_support import Postgres, running
from test_server_process import CONTENT, ROOT, STOP_SECONDS, environment, wait_ready

from workbench.terminology.cache_backing import Ended

VISIBLE_SECONDS = 0.1  # the bound on how long another instance may lag
GENDER = "/ValueSet/administrative-gender"


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    with running() as server:
        yield server


def serve(url: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [sys.executable, str(ROOT / "server.py"), "--port", str(port), "--token", TOKEN]
    command += [*CONTENT, "--database", url]
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=environment())
    base = f"http://{HOST}:{port}/fhir/R4"
    wait_ready(process, base)
    return process, base


@pytest.fixture(scope="module")
def fleet(
    postgres: Postgres, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    url = postgres.create("fleet")
    log = tmp_path_factory.mktemp("fleet") / "servers.log"
    processes, bases = [], []
    try:
        for _ in range(2):
            process, base = serve(url, log)
            processes.append(process)
            bases.append(base)
        yield bases[0], bases[1]
    finally:
        for process in processes:
            process.terminate()
            try:
                process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_SECONDS)


def vs(rid: str, title: str) -> dict[str, Any]:
    return {"resourceType": "ValueSet", "id": rid, "status": "draft", "title": title}


def seen_within(http: httpx.Client, path: str, check: Any, seconds: float) -> float:
    """Poll ``path`` until ``check(response)``; return how long it took (fail past ``seconds``,
    polling a little longer to tell a slow answer from none)."""
    began = time.perf_counter()
    while time.perf_counter() - began < seconds * 20:
        if check(http.get(path)):
            return time.perf_counter() - began
        time.sleep(0.002)
    raise AssertionError(f"{path} never showed the write")


def test_a_write_on_one_instance_is_served_by_the_other_within_100_ms(
    fleet: tuple[str, str],
) -> None:
    a_url, b_url = fleet
    lags = []
    with client(a_url) as a, client(b_url) as b:
        for n in range(1, 6):
            written = a.put("/ValueSet/shared", json=vs("shared", f"t{n}"))
            assert written.status_code == (201 if n == 1 else 200), written.text
            lags.append(
                seen_within(
                    b,
                    "/ValueSet/shared",
                    lambda r, n=n: r.status_code == 200 and r.json()["title"] == f"t{n}",
                    0.1,
                )
            )
        assert b.delete("/ValueSet/shared").status_code == 204
        lags.append(seen_within(a, "/ValueSet/shared", lambda r: r.status_code == 410, 0.1))
        history = a.get("/ValueSet/shared/_history").json()
        assert [e["response"]["etag"] for e in history["entry"]][:2] == ['W/"6"', 'W/"5"']
        found = b.get("/ValueSet", params={"url": "http://x"}).json()  # search runs on b
        assert found["resourceType"] == "Bundle"
    assert max(lags) < VISIBLE_SECONDS, lags


def test_two_instances_racing_one_if_match_one_wins(fleet: tuple[str, str]) -> None:
    a_url, b_url = fleet
    with client(a_url) as a:
        version = a.put("/ValueSet/race", json=vs("race", "start")).json()["meta"]["versionId"]
    for round_ in range(4):
        start = threading.Barrier(2)
        statuses: dict[str, int] = {}

        def put(
            name: str,
            base: str,
            start: threading.Barrier = start,
            statuses: dict[str, int] = statuses,
            round_: int = round_,
            version: str = version,
        ) -> None:
            with client(base) as http:
                start.wait(10)
                answer = http.put(
                    "/ValueSet/race",
                    json=vs("race", f"{name} {round_}"),
                    headers={"If-Match": f'W/"{version}"'},
                )
                statuses[name] = answer.status_code

        racers = [
            threading.Thread(target=put, args=(n, u)) for n, u in (("a", a_url), ("b", b_url))
        ]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join(30)
        assert sorted(statuses.values()) == [200, 412], statuses
        winner = next(name for name, status in statuses.items() if status == 200)
        with client(b_url) as b:
            current = b.put("/ValueSet/race", json=vs("race", "next"), headers={"If-Match": "*"})
            version = current.json()["meta"]["versionId"]
            assert b.get(f"/ValueSet/race/_history/{int(version) - 1}").json()["title"] == (
                f"{winner} {round_}"
            )


CACHED_CS = {
    "resourceType": "CodeSystem",
    "url": "http://example.org/fhir/CodeSystem/fleet-cache",
    "status": "active",
    "content": "complete",
    "concept": [{"code": "k", "display": "K"}],
}


def cached_check(with_resource: bool) -> dict[str, Any]:
    parameter: list[dict[str, Any]] = [
        {"name": "url", "valueUri": CACHED_CS["url"]},
        {"name": "code", "valueCode": "k"},
    ]
    if with_resource:
        parameter.append({"name": "tx-resource", "resource": CACHED_CS})
    return {"resourceType": "Parameters", "parameter": parameter}


def test_a_client_cache_started_on_one_instance_works_on_the_other(
    fleet: tuple[str, str],
) -> None:
    a_url, b_url = fleet
    with client(a_url) as a, client(b_url) as b:
        started = a.post("/$cache-control", params={"mode": "start"})
        assert started.status_code == 200, started.text
        header = {"X-Cache-Id": started.json()["parameter"][0]["valueId"]}
        filled = b.post("/CodeSystem/$validate-code", json=cached_check(True), headers=header)
        assert filled.json()["parameter"][0] == {"name": "result", "valueBoolean": True}
        for http in (a, b):  # named by url alone, on either instance
            used = http.post("/CodeSystem/$validate-code", json=cached_check(False), headers=header)
            assert used.json()["parameter"][0] == {"name": "result", "valueBoolean": True}, (
                used.text
            )
        without = a.post("/CodeSystem/$validate-code", json=cached_check(False))
        assert without.json()["parameter"][0] == {"name": "result", "valueBoolean": False}
        assert b.post("/$cache-control", params={"mode": "end"}, headers=header).status_code == 200
        for http in (a, b):  # both tell why it is gone: the end is in the database too
            gone = http.post("/CodeSystem/$validate-code", json=cached_check(False), headers=header)
            assert_outcome(gone, 404, "not-found", "was closed by its client")
            checked = http.post("/$cache-control", params={"mode": "check"}, headers=header)
            assert checked.json()["parameter"][1] == {"name": "valid", "valueBoolean": False}
        unknown = {"X-Cache-Id": "never-started-in-the-fleet"}
        gone = b.post("/CodeSystem/$validate-code", json=cached_check(False), headers=unknown)
        assert_outcome(gone, 404, "not-found", "is not known to this server")


def test_the_database_records_how_each_cache_ended(postgres: Postgres) -> None:
    from workbench.server.database.cache_postgresql import PostgresCaches

    backing = PostgresCaches(postgres.create("cache_ends"))
    try:
        for cache_id, used in {"a": 100.0, "b": 200.0, "c": 300.0}.items():
            backing.start(cache_id, False, used)
        backing.sweep(150.0, 1, 310.0)  # a idle, b past the limit of one cache
        assert backing.ended("a") == Ended("expired", 310.0, 100.0, "cache_idle_seconds", 150.0)
        assert backing.ended("b") == Ended("cleared", 310.0, 200.0, "caches", 1.0)
        assert backing.mark("c") is not None and backing.ended("c") is None
        backing.drop("c", Ended("closed", 320.0, 310.0))
        assert backing.ended("c") == Ended("closed", 320.0, 310.0)
        backing.start("c", False, 330.0)  # the id lives again: its end is forgotten
        assert backing.ended("c") is None
    finally:
        backing.close()


def test_no_database_at_start_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    gone = f"postgresql://postgres:secret@127.0.0.1:{free_port()}/nowhere"
    command = [sys.executable, str(ROOT / "server.py"), "--port", str(free_port())]
    done = subprocess.run(
        [*command, *CONTENT, "--database", gone],
        capture_output=True,
        env=environment(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    errors = [line for line in done.stderr.decode().splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "cannot be reached" in errors[0], done.stderr.decode()
    assert "secret" not in done.stderr.decode() + done.stdout.decode()


def test_a_database_lost_during_a_run(fleet: tuple[str, str], postgres: Postgres) -> None:
    a_url, _ = fleet
    with client(a_url) as a:
        assert a.put("/ValueSet/lost", json=vs("lost", "before")).status_code == 201
        postgres.stop()
        try:
            refused = a.put("/ValueSet/lost", json=vs("lost", "during"))
            body = assert_outcome(
                refused,
                503,
                "exception",
                r"^The write was not stored: the database cannot be reached; nothing was changed$",
            )
            (message_id,) = body["issue"][0]["extension"]  # operationoutcome-message-id
            assert message_id["valueString"] == "WB-STORE-001"
            # what the instance holds is still served
            assert a.get("/ValueSet/lost").json()["title"] == "before"
            assert a.get(GENDER).status_code == 200
            check = a.get(
                "/ValueSet/$validate-code",
                params={
                    "url": GENDER_VS,
                    "code": "female",
                    "system": GENDER_VS.replace("ValueSet/", ""),
                },
            )
            assert check.status_code == 200, check.text
        finally:
            postgres.start()
        again = a.put("/ValueSet/lost", json=vs("lost", "after"))
        assert again.status_code == 200, again.text
        assert again.json()["meta"]["versionId"] == "2"
