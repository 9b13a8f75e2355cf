"""Durability and consistency of REST writes over real HTTP (127.0.0.1 only): writes to any id
survive a restart (and a SIGKILL) exactly as acknowledged, an older data folder's files are
imported and moved aside, the version history (vread, _history, Location) is kept, hierarchy
cycles are rejected, and no stale compiled value set outlives a write. (Storage failures:
``test_http_storage.py``; the old engine's folders with history: ``test_migration.py``.)"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_support import (
    DEMO_CS,
    FHIR_JSON,
    GENDER_VS,
    HOST,
    TOKEN,
    assert_outcome,
    client,
    free_port,
    stored_versions,
)

from workbench import Workbench
from workbench.server.embedded import ServerHandle
from workbench.terminology.engine import Terminology

ROOT = Path(__file__).resolve().parent.parent
VALUESETS = ROOT / "valuesets"
RACE_URL = "http://example.org/fhir/ValueSet/race"


def fresh() -> Workbench:
    wb = Workbench()
    wb.load(VALUESETS, progress=False)
    return wb


def send(http: httpx.Client, method: str, path: str, body: Any, **headers: str) -> httpx.Response:
    content = json.dumps(body).encode()
    return http.request(
        method, path, content=content, headers={"Content-Type": FHIR_JSON, **headers}
    )


def without_meta(resource: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in resource.items() if k != "meta"}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def running(data: Path) -> Iterator[tuple[Workbench, ServerHandle, httpx.Client]]:
    wb = fresh()
    with wb.serve(port=0, token=TOKEN, data_dir=data) as handle, client(handle.url) as http:
        yield wb, handle, http


def restart(data: Path) -> tuple[Workbench, ServerHandle]:
    wb = fresh()
    return wb, wb.serve(port=0, token=TOKEN, data_dir=data)


# --- writes to shipped ids survive a restart exactly ----------------------------------


def test_writes_to_shipped_ids_survive_restart_exactly(
    running: tuple[Workbench, ServerHandle, httpx.Client], data: Path
) -> None:
    """Before: the restore renamed a written resource whose id a shipped one held (with
    another canonical) to ``administrative-gender-2``, and the shipped one came back."""
    _, handle, http = running
    gender = http.get("/ValueSet/administrative-gender").json()
    moved = {**gender, "url": "http://example.org/fhir/ValueSet/moved", "title": "Moved"}
    answer = {
        "ValueSet/administrative-gender": send(
            http, "PUT", "/ValueSet/administrative-gender", moved
        )
    }
    demo_cs = http.get("/CodeSystem/workbench-demo").json()
    answer["CodeSystem/workbench-demo"] = send(
        http,
        "PUT",
        "/CodeSystem/workbench-demo",
        {**demo_cs, "version": "9.9.9", "title": "Demo, version 9.9.9"},
    )
    # The shipped resource whose canonical the written one takes over after a deletion.
    assert http.delete("/ValueSet/workbench-demo-all").status_code == 204
    all_vs = fresh().registry.read("ValueSet", "workbench-demo-all")
    taken = {**all_vs, "id": "takes-over", "title": "Takes over"}
    answer["ValueSet/takes-over"] = send(http, "PUT", "/ValueSet/takes-over", taken)
    assert [r.status_code for r in answer.values()] == [200, 200, 201]
    acknowledged = {path: r.json() for path, r in answer.items()}
    handle.stop()

    wb, again = restart(data)
    with again, client(again.url) as http2:
        for path, body in acknowledged.items():
            assert http2.get(f"/{path}").json() == body
        assert http2.get("/ValueSet/administrative-gender-2").status_code == 404
        assert http2.get("/ValueSet/workbench-demo-all").status_code == 410
        assert http2.get("/ValueSet", params={"url": GENDER_VS}).json()["total"] == 0
        found = http2.get("/ValueSet", params={"url": all_vs["url"]}).json()
        assert [e["resource"]["id"] for e in found["entry"]] == ["takes-over"]
        assert wb.registry.read("CodeSystem", "workbench-demo")["version"] == "9.9.9"
        # Writing goes on from the acknowledged version.
        next_put = send(http2, "PUT", "/ValueSet/administrative-gender", {**moved, "title": "v3"})
        assert next_put.json()["meta"]["versionId"] == "3"


def test_temporary_files_of_the_old_engine_are_moved_aside(data: Path) -> None:
    """A crash of the engine before the database (between writing a temporary file and
    renaming it) left ``.tmp-*`` files: they are moved aside with the rest, not imported."""
    (data / "ValueSet-x").mkdir(parents=True)
    (data / ".tmp-abc123.json").write_bytes(b'{"resourceType": "ValueSet", "id": "half')
    (data / "ValueSet-x" / ".tmp-def456.json").write_bytes(b"{")
    (data / ".tmp-ghi789.deleted").write_bytes(b"")
    _wb, handle = restart(data)
    with handle, client(handle.url) as http:
        assert not list(data.glob(".tmp-*")) and not (data / "ValueSet-x").exists()
        assert (data / "before-database" / "ValueSet-x" / ".tmp-def456.json").read_bytes() == b"{"
        assert http.get("/ValueSet/x").status_code == 404
        created = send(http, "PUT", "/ValueSet/x", {**new_vs("x"), "title": "Complete"})
        assert created.status_code == 201
        assert http.delete("/ValueSet/x").status_code == 204
    assert sorted(stored_versions(data)) == ["ValueSet-x/1.json", "ValueSet-x/2.deleted"]


def test_flat_files_of_the_earlier_layout_are_restored(data: Path) -> None:
    data.mkdir(parents=True)
    written = {**new_vs("flat"), "meta": {"versionId": "4", "lastUpdated": "2024-01-02T03:04:05Z"}}
    (data / "ValueSet-flat.json").write_bytes(json.dumps(written).encode())
    (data / "ValueSet-yesnodontknow.deleted").write_bytes(b"")
    _, handle = restart(data)
    with handle, client(handle.url) as http:
        assert http.get("/ValueSet/flat").json() == written
        assert http.get("/ValueSet/yesnodontknow").status_code == 410
        assert http.get("/ValueSet/flat/_history/4").json() == written
    assert sorted(stored_versions(data)) == [
        "ValueSet-flat/4.json",
        "ValueSet-yesnodontknow/2.deleted",
    ]
    assert sorted(p.name for p in (data / "before-database").iterdir()) == [
        "ValueSet-flat.json",
        "ValueSet-yesnodontknow.deleted",
    ]


def new_vs(rid: str, url: str = "http://example.org/fhir/ValueSet/durable") -> dict[str, Any]:
    return {
        "resourceType": "ValueSet",
        "id": rid,
        "url": url,
        "name": "Durable",
        "status": "draft",
        "compose": {"include": [{"system": DEMO_CS, "concept": [{"code": "video"}]}]},
    }


# --- version history: vread, _history, Location ---------------------------------------


def test_history_vread_and_location(
    running: tuple[Workbench, ServerHandle, httpx.Client], data: Path
) -> None:
    """Before: Location was relative and pointed to a _history/{vid} that did not exist."""
    _, handle, http = running
    created = send(http, "POST", "/ValueSet", new_vs("ignored"))
    assert created.status_code == 201
    location = created.headers["location"]
    rid = created.json()["id"]
    assert location == f"{handle.url}/ValueSet/{rid}/_history/1"
    assert httpx.URL(location).is_absolute_url
    assert http.get(location).json() == created.json()
    v1 = created.json()
    v2 = send(http, "PUT", f"/ValueSet/{rid}", {**v1, "title": "Second"}).json()
    assert http.delete(f"/ValueSet/{rid}").status_code == 204
    assert_outcome(http.get(f"/ValueSet/{rid}"), 410, "deleted", "was deleted")
    assert_outcome(http.get(f"/ValueSet/{rid}/_history/3"), 410, "deleted", "deleted in version 3")
    v4 = send(http, "PUT", f"/ValueSet/{rid}", {**v1, "title": "Back"})
    assert v4.status_code == 201
    assert v4.json()["meta"]["versionId"] == "4"
    assert v4.headers["location"] == f"{handle.url}/ValueSet/{rid}/_history/4"
    history = http.get(f"/ValueSet/{rid}/_history").json()
    assert history["resourceType"] == "Bundle"
    assert history["type"] == "history"
    assert history["total"] == 4
    assert [e["response"]["etag"] for e in history["entry"]] == ['W/"4"', 'W/"3"', 'W/"2"', 'W/"1"']
    assert [e["request"]["method"] for e in history["entry"]] == ["PUT", "DELETE", "PUT", "PUT"]
    assert "resource" not in history["entry"][1]
    assert history["entry"][2]["resource"] == v2
    assert history["entry"][3]["resource"] == v1
    assert http.get(f"/ValueSet/{rid}/_history/1").json() == v1
    assert http.get(f"/ValueSet/{rid}/_history/2").json()["title"] == "Second"
    assert_outcome(http.get(f"/ValueSet/{rid}/_history/9"), 404, "not-found", "_history/9")
    assert_outcome(http.get("/ValueSet/none/_history"), 404, "not-found", "ValueSet/none")
    # A shipped resource's loaded version stays readable after it is changed, across a restart.
    shipped = http.get("/ValueSet/workbench-demo-all").json()
    send(http, "PUT", "/ValueSet/workbench-demo-all", {**shipped, "title": "Changed"})
    handle.stop()
    _, again = restart(data)
    with again, client(again.url) as http2:
        assert http2.get("/ValueSet/workbench-demo-all/_history/1").json() == shipped
        assert http2.get("/ValueSet/workbench-demo-all/_history/2").json()["title"] == "Changed"
        assert http2.get(f"/ValueSet/{rid}/_history").json()["total"] == 4
        assert http2.get(f"/ValueSet/{rid}/_history/2").json() == v2


def test_history_without_data_folder(wb: Workbench) -> None:
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as http:
        first = http.get("/CodeSystem/workbench-demo").json()
        assert http.get("/CodeSystem/workbench-demo/_history").json()["total"] == 1
        send(http, "PUT", "/CodeSystem/workbench-demo", {**first, "title": "Two"})
        history = http.get("/CodeSystem/workbench-demo/_history").json()
        assert [e["resource"]["meta"]["versionId"] for e in history["entry"]] == ["2", "1"]
        assert http.get("/CodeSystem/workbench-demo/_history/1").json() == first


@pytest.mark.parametrize("folder", [True, False], ids=["data folder", "in memory"])
def test_type_and_system_history(folder: bool, tmp_path: Path) -> None:
    """Type- and system-level _history: every version of every resource, newest first, with
    _count/_offset paging, _since, and deletions kept."""
    wb = fresh()
    shipped_vs = len(wb.registry.all("ValueSet"))
    shipped_all = sum(len(wb.registry.all(t)) for t in ("CodeSystem", "ValueSet", "ConceptMap"))
    served = wb.serve(port=0, token=TOKEN, data_dir=tmp_path / "data" if folder else None)
    with served as handle, client(handle.url) as http:
        before = http.get("/ValueSet/_history?_count=1").json()
        assert before["type"] == "history" and before["total"] == shipped_vs
        one = send(http, "POST", "/ValueSet", new_vs("ignored")).json()
        rid = one["id"]
        since = one["meta"]["lastUpdated"]
        two = send(http, "PUT", f"/ValueSet/{rid}", {**one, "title": "Second"}).json()
        assert http.delete(f"/ValueSet/{rid}").status_code == 204
        demo = http.get("/CodeSystem/workbench-demo").json()
        send(http, "PUT", "/CodeSystem/workbench-demo", {**demo, "title": "Two"})

        page = http.get("/ValueSet/_history", params={"_count": "2"}).json()
        assert page["total"] == shipped_vs + 3
        assert [e["response"]["etag"] for e in page["entry"]] == ['W/"3"', 'W/"2"']
        assert [e["request"] for e in page["entry"]] == [
            {"method": "DELETE", "url": f"ValueSet/{rid}"},
            {"method": "PUT", "url": f"ValueSet/{rid}"},
        ]
        assert "resource" not in page["entry"][0]
        assert page["entry"][1]["resource"] == two
        links = {link["relation"]: link["url"] for link in page["link"]}
        assert links["self"] == f"{handle.url}/ValueSet/_history?_count=2"
        assert links["next"] == f"{handle.url}/ValueSet/_history?_count=2&_offset=2"
        third = http.get(links["next"]).json()["entry"][0]
        assert third["resource"] == one and third["response"]["status"] == "201 Created"

        recent = http.get("/_history", params={"_since": since}).json()
        assert [(e["request"]["method"], e["request"]["url"]) for e in recent["entry"]] == [
            ("PUT", "CodeSystem/workbench-demo"),
            ("DELETE", f"ValueSet/{rid}"),
            ("PUT", f"ValueSet/{rid}"),
            ("PUT", f"ValueSet/{rid}"),
        ]
        assert {link["relation"] for link in recent["link"]} == {"self"}
        everything = http.get("/_history", params={"_count": "1000"}).json()
        assert everything["total"] == shipped_all + 4  # the demo system: loaded and written
        caps = http.get("/metadata").json()["rest"][0]
        assert {"code": "history-system"} in caps["interaction"]
        assert {"code": "history-type"} in caps["resource"][0]["interaction"]


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ({"_since": "yesterday"}, "_since must be an instant"),
        ({"_since": "2024-01-01"}, "_since must be an instant"),
        ({"_since": "2024-01-01T00:00:00"}, "_since must be an instant"),
        ({"_count": "-1"}, "_count must be a whole number"),
        ({"_offset": "x"}, "_offset must be a whole number"),
    ],
)
def test_bad_history_parameters(wb: Workbench, query: dict[str, str], text: str) -> None:
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as http:
        for path in ("/_history", "/ValueSet/_history"):
            assert_outcome(http.get(path, params=query), 400, "invalid", text)
        assert_outcome(http.get("/Patient/_history"), 404, "not-found", "Patient")
        strict = http.get("/_history?_at=2024", headers={"Prefer": "handling=strict"})
        assert_outcome(strict, 400, "invalid", "Unknown parameter '_at'")
        assert http.get("/_history?_at=2024").status_code == 200


# --- cycles in the concept hierarchy ---------------------------------------------------

PARENT = [
    {"code": "parent", "uri": "http://hl7.org/fhir/concept-properties#parent", "type": "code"}
]


def _cs(concepts: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {
        "resourceType": "CodeSystem",
        "id": "cyclic",
        "url": "http://example.org/fhir/CodeSystem/cyclic",
        "status": "draft",
        "content": "complete",
        "concept": concepts,
        **more,
    }


def _parent(code: str, parent: str) -> dict[str, Any]:
    return {"code": code, "property": [{"code": "parent", "valueCode": parent}]}


@pytest.mark.parametrize(
    ("body", "cycle"),
    [
        pytest.param(
            _cs([_parent("a", "b"), _parent("b", "a")], property=PARENT), "a -> b -> a", id="two"
        ),
        pytest.param(
            _cs([_parent("a", "c"), _parent("b", "a"), _parent("c", "b")], property=PARENT),
            "a -> b -> c -> a",
            id="three",
        ),
        pytest.param(
            _cs([{"code": "a", "concept": [{"code": "b", "concept": [{"code": "a"}]}]}]),
            "a -> b -> a",
            id="nesting",
        ),
        pytest.param(
            _cs(
                [{**_parent("a", "b"), "concept": [{"code": "b"}]}],
                property=PARENT,
            ),
            "a -> b -> a",
            id="nesting-and-parent",
        ),
    ],
)
def test_hierarchy_cycle_is_rejected(
    running: tuple[Workbench, ServerHandle, httpx.Client], data: Path, body: Any, cycle: str
) -> None:
    """Before: a parent cycle was stored, and $subsumes then said 'subsumes' both ways."""
    wb, _, http = running
    files = stored_versions(data)
    for method, path in (("PUT", "/CodeSystem/cyclic"), ("POST", "/CodeSystem")):
        response = send(http, method, path, body)
        assert_outcome(response, 422, "invariant", rf"hierarchy has a cycle: {cycle}$")
    assert http.get("/CodeSystem/cyclic").status_code == 404
    assert wb.registry.get("CodeSystem", body["url"]) is None
    assert stored_versions(data) == files


def test_hierarchy_without_cycle_is_accepted(
    running: tuple[Workbench, ServerHandle, httpx.Client],
) -> None:
    _, _, http = running
    body = _cs(
        [_parent("b", "a"), _parent("c", "a"), {"code": "a"}, _parent("d", "b"), _parent("d", "c")],
        property=PARENT,
    )
    assert send(http, "PUT", "/CodeSystem/cyclic", body).status_code == 201
    answer = http.get(
        "/CodeSystem/$subsumes", params={"system": body["url"], "codeA": "a", "codeB": "d"}
    ).json()
    assert answer["parameter"][0] == {"name": "outcome", "valueCode": "subsumes"}


# --- no stale compiled value set after a write ----------------------------------------


def _race_vs(codes: list[str]) -> dict[str, Any]:
    return {
        **new_vs("race", url=RACE_URL),
        "compose": {"include": [{"system": DEMO_CS, "concept": [{"code": c} for c in codes]}]},
    }


def _valid(http: httpx.Client, code: str) -> bool:
    answer = http.get(
        "/ValueSet/$validate-code", params={"url": RACE_URL, "system": DEMO_CS, "code": code}
    )
    assert answer.status_code == 200, answer.text
    return bool(answer.json()["parameter"][0]["valueBoolean"])


def test_write_during_compilation_leaves_no_stale_cache(
    running: tuple[Workbench, ServerHandle, httpx.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a value set compiled from the content a concurrent write replaced was cached
    after the write's invalidation, so the old answer outlived the write."""
    wb, _, http = running
    assert send(http, "PUT", "/ValueSet/race", _race_vs(["video"])).status_code == 201
    compiling = threading.Event()
    written = threading.Event()
    real_compile = Terminology._compile

    def slow_compile(self: Terminology, resource: Any, *args: Any, **kwargs: Any) -> Any:
        found = real_compile(self, resource, *args, **kwargs)
        if resource.get("url") == RACE_URL and not compiling.is_set():
            compiling.set()
            assert written.wait(20)
        return found

    monkeypatch.setattr(Terminology, "_compile", slow_compile)
    results: list[bool] = []
    reader = threading.Thread(
        target=lambda: results.append(
            wb.validate_code(RACE_URL, code="video", system=DEMO_CS).result
        )
    )
    reader.start()
    assert compiling.wait(20)
    assert send(http, "PUT", "/ValueSet/race", _race_vs(["phone"])).status_code == 200
    written.set()
    reader.join(20)
    assert len(results) == 1  # (either answer is right for a read concurrent with a write)
    assert _valid(http, "phone") is True
    assert _valid(http, "video") is False


def test_interleaved_writes_and_validations_end_consistent(
    running: tuple[Workbench, ServerHandle, httpx.Client],
) -> None:
    _, handle, http = running
    codes = ["video", "phone", "office-new", "phone-triage"]
    assert send(http, "PUT", "/ValueSet/race", _race_vs(codes[:1])).status_code == 201
    rng = random.Random(13)
    plan = [rng.choice(codes) for _ in range(30)]
    errors: list[str] = []
    stop = threading.Event()

    def validate() -> None:
        with client(handle.url) as own:
            for _ in range(200):
                if stop.is_set():
                    return
                try:
                    _valid(own, rng.choice(codes))
                except AssertionError as exc:  # pragma: no cover - reported below
                    errors.append(str(exc))

    readers = [threading.Thread(target=validate) for _ in range(3)]
    for thread in readers:
        thread.start()
    try:
        for code in plan:
            assert send(http, "PUT", "/ValueSet/race", _race_vs([code])).status_code == 200
            # Right after each acknowledged write, the answer is the written one.
            assert _valid(http, code) is True
            assert all(not _valid(http, c) for c in codes if c != code)
    finally:
        stop.set()
        for thread in readers:
            thread.join(30)
    assert not errors


def test_history_in_memory_keeps_the_latest_versions(wb: Workbench) -> None:
    from workbench.server.database.memory import MEMORY_VERSIONS

    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as http:
        body = new_vs("many")
        for _ in range(MEMORY_VERSIONS + 5):
            assert send(http, "PUT", "/ValueSet/many", body).status_code in (200, 201)
        history = http.get("/ValueSet/many/_history").json()
        assert history["total"] == MEMORY_VERSIONS
        assert history["entry"][0]["response"]["etag"] == f'W/"{MEMORY_VERSIONS + 5}"'
        assert http.get("/ValueSet/many/_history/1").status_code == 404
        assert http.get("/ValueSet/many/_history/6").status_code == 200


# --- a killed server process keeps every acknowledged write ---------------------------


def _start_cli(data: Path, port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "server.py", "--host", HOST, "--port", str(port)]
    command += ["--token", TOKEN, "--data", str(data)]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    with client(f"http://{HOST}:{port}/fhir/R4", token=None) as anonymous:
        while True:
            assert proc.poll() is None, "server.py exited early"
            assert time.monotonic() < deadline, "server.py did not start"
            try:
                if anonymous.get("/metadata").status_code == 200:
                    return proc
            except httpx.TransportError:
                pass
            time.sleep(0.1)


def test_sigkill_after_the_answer_loses_nothing(data: Path) -> None:
    """The server process is killed (SIGKILL, no shutdown) right after acknowledging writes to
    shipped and new ids; a new process serves exactly what was acknowledged."""
    port = free_port()
    proc = _start_cli(data, port)
    try:
        with client(f"http://{HOST}:{port}/fhir/R4") as http:
            gender = http.get("/ValueSet/administrative-gender").json()
            acknowledged = {
                "ValueSet/administrative-gender": send(
                    http,
                    "PUT",
                    "/ValueSet/administrative-gender",
                    {**gender, "url": "http://example.org/fhir/ValueSet/killed", "title": "K"},
                ).json(),
                "ValueSet/killed-new": send(
                    http, "PUT", "/ValueSet/killed-new", new_vs("killed-new")
                ).json(),
            }
            assert http.delete("/CodeSystem/workbench-demo").status_code == 204
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=20)
    again = _start_cli(data, port)
    try:
        with client(f"http://{HOST}:{port}/fhir/R4") as http:
            for path, body in acknowledged.items():
                assert http.get(f"/{path}").json() == body
            assert http.get("/CodeSystem/workbench-demo").status_code == 410
    finally:
        again.terminate()
        again.wait(timeout=20)
