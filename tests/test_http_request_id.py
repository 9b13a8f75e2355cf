"""``X-Request-Id`` over HTTP (uvicorn on 127.0.0.1): a client's id is echoed on every kind
of response (an operation on an exact path, REST, /metadata, the OpenAPI page, errors of
each layer: token, format, method, size, not found, the HTTP parser's own 400); one is made
when none is sent or the one sent is too long or holds spaces or control characters; and
the server's log lines name the request they were written for."""

from __future__ import annotations

import logging
import os
import re
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.http_support import GENDER_CS, GENDER_VS, HOST, TOKEN, client, served_fixtures
from workbench import Workbench
from workbench.server import request_ids
from workbench.server.request_ids import RequestIdFilter

MADE = re.compile(r"[0-9a-f]{32}")


@pytest.fixture(scope="module")
def wb(default_wb: Workbench) -> Workbench:
    return default_wb


server, http = served_fixtures()

REQUESTS: list[tuple[str, str, str, dict[str, Any], int]] = [
    ("operation (exact path)", "GET", "/ValueSet/$validate-code",
     {"params": {"url": GENDER_VS, "system": GENDER_CS, "code": "male"}}, 200),
    ("read", "GET", "/ValueSet?url=" + GENDER_VS, {}, 200),
    ("metadata", "GET", "/metadata", {}, 200),
    ("not found", "GET", "/ValueSet/no-such-id", {}, 404),
    ("method", "DELETE", "/ValueSet/$validate-code", {}, 405),
    ("format", "GET", "/metadata", {"headers": {"Accept": "application/x-unknown"}}, 406),
    ("bad body", "POST", "/ValueSet/$validate-code",
     {"content": b"{not json", "headers": {"Content-Type": "application/fhir+json"}}, 400),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "extra", "status"), [r[1:] for r in REQUESTS],
                         ids=[r[0] for r in REQUESTS])  # fmt: skip
def test_a_clients_id_is_echoed_on_every_response(
    http: httpx.Client, method: str, path: str, extra: dict[str, Any], status: int
) -> None:
    headers = {**extra.pop("headers", {}), "X-Request-Id": "trace-42.a"}
    found = http.request(method, path, headers=headers, **extra)
    assert found.status_code == status, found.text
    assert found.headers.get_list("x-request-id") == ["trace-42.a"]


def test_without_a_token_the_refusal_carries_it_too(server: Any) -> None:
    with client(server.url, token=None) as anonymous:
        found = anonymous.get("/ValueSet", headers={"X-Request-Id": "no-token-1"})
    assert found.status_code == 401
    assert found.headers["x-request-id"] == "no-token-1"


@pytest.mark.parametrize(
    ("sent", "echoed"),
    [(None, False), ("ok-id", True), ("x" * 200, True), ("x" * 10_000, False),
     ("has space", False)],
    ids=["none", "plain", "200 characters", "10 KB", "a space"],
)  # fmt: skip
def test_an_id_is_made_when_none_fit_to_echo_is_sent(
    http: httpx.Client, sent: str | None, echoed: bool
) -> None:
    headers = {} if sent is None else {"X-Request-Id": sent}
    found = http.get("/metadata", headers=headers)
    rid = found.headers["x-request-id"]
    assert (rid == sent) if echoed else bool(MADE.fullmatch(rid))


def _raw(server: Any, request: bytes) -> bytes:
    port = httpx.URL(server.url).port
    with socket.create_connection((HOST, port), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


def test_control_characters_are_not_echoed(server: Any) -> None:
    path = httpx.URL(server.url).path + "/metadata"
    request = (f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
               "X-Request-Id: bad\x01id\r\nConnection: close\r\n\r\n")  # fmt: skip
    answer = _raw(server, request.encode())
    head = answer.split(b"\r\n\r\n", 1)[0].lower()
    found = re.search(rb"\r\nx-request-id: ([^\r]*)", head)
    assert found is not None and b"\x01" not in found[1]
    assert MADE.fullmatch(found[1].decode()) or head.startswith(b"http/1.1 400")


def test_the_http_parsers_own_400_carries_one(server: Any) -> None:
    answer = _raw(server, b"NOT A REQUEST\r\n\r\n")
    head = answer.split(b"\r\n\r\n", 1)[0].lower()
    assert head.startswith(b"http/1.1 400")
    found = re.search(rb"\r\nx-request-id: ([0-9a-f]{32})", head)
    assert found is not None


def test_log_lines_name_their_request(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("workbench.server.test")
    caplog.handler.addFilter(RequestIdFilter())
    token = request_ids.CURRENT.set("req-7")
    try:
        logger.warning("inside")
    finally:
        request_ids.CURRENT.reset(token)
    logger.warning("outside")
    assert [(r.getMessage(), r.request_id) for r in caplog.records] == [  # type: ignore[attr-defined]
        ("inside", "req-7"), ("outside", "-")]  # fmt: skip


@pytest.fixture
def served_log(wb: Workbench, caplog: pytest.LogCaptureFixture) -> Iterator[Any]:
    caplog.set_level(logging.INFO)
    caplog.handler.addFilter(RequestIdFilter())
    with wb.serve(port=0, token=TOKEN) as handle:
        yield handle


def test_a_500_is_logged_with_its_requests_id(
    served_log: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.terminology.service import EngineService

    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(EngineService, "expand", broken)
    with client(served_log.url) as c:
        found = c.get("/ValueSet/$expand", params={"url": GENDER_VS},
                      headers={"X-Request-Id": "crash-1"})  # fmt: skip
    assert (found.status_code, found.headers["x-request-id"]) == (500, "crash-1")
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert logged and all(r.request_id == "crash-1" for r in logged)  # type: ignore[attr-defined]


def test_a_forked_worker_makes_ids_of_its_own() -> None:
    """``server.py --workers`` forks its workers after loading: each makes its own random
    part, so two workers never hand out the same id."""
    mine = request_ids.new_id()[:16]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first id, then out without running anything else
        os.write(write, request_ids.new_id()[:16])
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    theirs = os.read(read, 16)
    os.close(read)
    assert len(theirs) == 16 and theirs != mine
    assert request_ids.new_id()[:16] == mine  # the parent's stays its own
