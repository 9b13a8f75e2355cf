"""Helpers shared by the HTTP tests: clients, a server for a hand-built app, assertions.

Every server these tests talk to listens on 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

TOKEN = "test-token-7f3a"
HOST = "127.0.0.1"
FHIR_JSON = "application/fhir+json"
TX_ISSUE = "http://hl7.org/fhir/tools/CodeSystem/tx-issue-type"
MESSAGE_ID = "http://hl7.org/fhir/StructureDefinition/operationoutcome-message-id"

GENDER_VS = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
DEMO_CS = "http://example.org/fhir/CodeSystem/workbench-demo"
DEMO_VS = "http://example.org/fhir/ValueSet/"
DEMO_ALL = DEMO_VS + "workbench-demo-all"
DEMO_BOOKABLE = DEMO_VS + "workbench-demo-bookable"
DEMO_REMOTE_LIVE = DEMO_VS + "workbench-demo-remote-live"
ORDERABLE_CS = "http://terminology.hl7.org/CodeSystem/v3-orderableDrugForm"

# Parts of an expansion that differ from call to call.
VOLATILE_EXPANSION_KEYS = ("identifier", "timestamp")


def client(url: str, token: str | None = TOKEN, **headers: str) -> httpx.Client:
    """An httpx client for ``url`` (never a proxy), with the bearer token when given."""
    all_headers = {"Accept": FHIR_JSON, **headers}
    if token is not None:
        all_headers["Authorization"] = f"Bearer {token}"
    return httpx.Client(base_url=url, headers=all_headers, trust_env=False, timeout=20.0)


def params(*entries: tuple[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A Parameters resource: ``params(("url", {"valueUri": u}), ...)``."""
    return {
        "resourceType": "Parameters",
        "parameter": [{"name": name, **dict(value)} for name, value in entries],
    }


def values(body: Mapping[str, Any], name: str) -> list[Any]:
    """The values of the output parameters called ``name`` (``value[x]``, whatever its type)."""
    return [
        next(v for k, v in p.items() if k.startswith("value"))
        for p in body["parameter"]
        if p["name"] == name
    ]


def exactly(text: str) -> str:
    """A pattern that matches ``text`` and nothing else (for ``assert_outcome``)."""
    return "^" + re.escape(text) + "$"


def assert_outcome(response: httpx.Response, status: int, code: str, text: str) -> dict[str, Any]:
    """Check an error response: status, FHIR JSON OperationOutcome, issue code, text.

    ``text`` is a regular expression searched in ``issue[0].details.text``.
    """
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith(FHIR_JSON), response.headers
    body = response.json()
    assert body["resourceType"] == "OperationOutcome", body
    assert body["issue"], body
    issue = body["issue"][0]
    assert issue["severity"] == "error", issue
    assert issue["code"] == code, issue
    assert re.search(text, issue["details"]["text"]), (text, issue["details"]["text"])
    # the message id where tx.fhir.org puts its own; details.coding: the tx-issue-type only
    ids = [e["valueString"] for e in issue.get("extension", ()) if e["url"] == MESSAGE_ID]
    assert len(ids) == 1 and ids[0], issue
    assert all(c["system"] == TX_ISSUE for c in issue["details"].get("coding", ())), issue
    return body


def without_volatile(valueset: Mapping[str, Any]) -> dict[str, Any]:
    """An expanded ValueSet without the expansion's identifier and timestamp."""
    out = dict(valueset)
    if "expansion" in out:
        out["expansion"] = {
            k: v for k, v in out["expansion"].items() if k not in VOLATILE_EXPANSION_KEYS
        }
    return out


def stored_versions(folder: Path) -> dict[str, bytes]:
    """Every version in the data folder's database (``server/database/sqlite.py``), read
    with a connection of the test's own: ``{type}-{id}/{number}.json`` (``.deleted`` for a
    deletion) -> the stored body. Empty when there is no database yet."""
    path = folder / "workbench.sqlite3"
    if not path.is_file():
        return {}
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT type, id, number, deleted, body FROM versions").fetchall()
    return {
        f"{rtype}-{rid}/{number}.{'deleted' if deleted else 'json'}": bytes(body)
        for rtype, rid, number, deleted, body in sorted(rows)
    }


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@dataclass
class RunningApp:
    """An app served by uvicorn in a thread: ``url`` is the base URL with ``base``."""

    url: str
    port: int
    server: uvicorn.Server
    thread: threading.Thread


@contextmanager
def serve_app(
    app: Any,
    base: str = "/fhir/R4",
    timeout: float = 15.0,
    root_path: str = "",
    lifespan: str = "off",
) -> Iterator[RunningApp]:
    """Serve a hand-built ASGI app on 127.0.0.1 (a free port) until the block ends;
    ``root_path`` is uvicorn's ``--root-path`` (a prefix a proxy strips); ``lifespan``
    ``"on"`` runs the app's startup and shutdown (which closes its connections)."""
    config = uvicorn.Config(
        app,
        host=HOST,
        port=0,
        log_level="warning",
        lifespan=lifespan,
        access_log=False,
        root_path=root_path,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="test-app-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(timeout)
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    port = int(server.servers[0].sockets[0].getsockname()[1])
    try:
        yield RunningApp(f"http://{HOST}:{port}{base}", port, server, thread)
    finally:
        server.should_exit = True
        thread.join(timeout)
        assert not thread.is_alive(), "the test server did not stop"


def served_fixtures() -> tuple[Any, Any]:
    """Module-scoped ``server`` and ``http`` fixtures over the module's own ``wb`` fixture:
    ``server, http = served_fixtures()`` at module level."""
    import pytest

    @pytest.fixture(scope="module")
    def server(wb: Any) -> Iterator[Any]:
        with wb.serve(port=0, token=TOKEN) as handle:
            yield handle

    @pytest.fixture(scope="module")
    def http(server: Any) -> Iterator[httpx.Client]:
        with client(server.url) as c:
            yield c

    return server, http
