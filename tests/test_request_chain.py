"""One way through the app (issue 49, point 8): every request passes one chain of rules
(token, format, other processes' writes) once, then one handler (the operation of an exact
path, or the router, never both); anything a handler raises becomes its OperationOutcome by
one rule. Over HTTP (uvicorn on 127.0.0.1): a table of requests answered alike with and
without a middleware a user adds, which sees every one of them; in process: what each rule
and each handler saw."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlencode

import httpx
import orjson
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.http_support import client, serve_app
from workbench import Workbench
from workbench.server import create_app
from workbench.server.auth import TokenRule
from workbench.server.negotiation import FormatRule
from workbench.server.sync import WriteSync

TOKEN = "chain-token"
BASE = "/fhir/R4"
GENDER_VS = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
GENDER_Q = {"url": GENDER_VS, "system": GENDER_CS, "code": "female"}
POSTED = orjson.dumps(
    {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "url", "valueUri": GENDER_VS},
            {"name": "coding", "valueCoding": {"system": GENDER_CS, "code": "male"}},
        ],
    }
)
JSON = {"Content-Type": "application/fhir+json"}
VALIDATE = "/ValueSet/$validate-code"

# (id, method, path, headers, body, token, status): operations on exact paths, the router's
# paths, and each rule's refusals on both
REQUESTS: list[tuple[str, str, str, dict[str, str], bytes | None, bool, int]] = [
    ("operation GET", "GET", f"{VALIDATE}?{urlencode(GENDER_Q)}", {}, None, True, 200),
    ("operation POST", "POST", VALIDATE, JSON, POSTED, True, 200),
    ("operation HEAD", "HEAD", f"{VALIDATE}?{urlencode(GENDER_Q)}", {}, None, True, 200),
    ("operation PUT", "PUT", VALIDATE, JSON, POSTED, True, 405),
    ("operation OPTIONS", "OPTIONS", "/$versions", {}, None, True, 405),
    ("operation error", "GET", VALIDATE, {}, None, True, 400),
    ("operation bad JSON", "POST", VALIDATE, JSON, b"{", True, 400),
    ("operation too large", "POST", VALIDATE, JSON, b" " * (11 << 20), True, 413),
    ("operation no token", "GET", f"{VALIDATE}?{urlencode(GENDER_Q)}", {}, None, False, 401),
    ("operation XML", "GET", f"{VALIDATE}?_format=xml", {}, None, True, 406),
    ("instance operation", "GET", "/ValueSet/administrative-gender/$validate-code"
     f"?system={GENDER_CS}&code=male", {}, None, True, 200),
    ("unknown operation", "GET", "/ValueSet/$nosuch", {}, None, True, 404),
    ("operation at another level", "GET", "/$validate-code", {}, None, True, 405),
    ("read", "GET", "/ValueSet/administrative-gender", {}, None, True, 200),
    ("search", "GET", f"/ValueSet?url={GENDER_VS}", {}, None, True, 200),
    ("metadata", "GET", "/metadata", {}, None, False, 200),
    ("metadata POST", "POST", "/metadata", JSON, b"{}", True, 405),
    ("no such endpoint", "GET", "/nothing/here", {}, None, True, 404),
    ("read no token", "GET", "/ValueSet/administrative-gender", {}, None, False, 401),
    ("read turtle", "GET", "/ValueSet", {"Accept": "text/turtle"}, None, True, 406),
    ("create wrong type", "POST", "/ValueSet", {"Content-Type": "text/plain"}, b"x", True, 415),
]  # fmt: skip


class Counting:
    """A middleware a user adds: counts the requests it sees and stamps their responses."""

    seen: ClassVar[Counter[str]] = Counter()

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        Counting.seen[scope["path"]] += 1

        async def stamped(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message["headers"], (b"x-user-layer", b"1")]
            await send(message)

        await self.app(scope, receive, stamped)


@pytest.fixture(scope="module")
def wb() -> Workbench:
    loaded = Workbench()
    loaded.load(Path(__file__).resolve().parent.parent / "valuesets", progress=False)
    return loaded


@pytest.fixture(scope="module")
def servers(wb: Workbench) -> Iterator[dict[str, str]]:
    plain = create_app(wb, token=TOKEN)
    wrapped = create_app(wb, token=TOKEN)
    wrapped.add_middleware(Counting)
    with serve_app(plain) as one, serve_app(wrapped) as other:
        yield {"plain": one.url, "wrapped": other.url}


def _ask(url: str, row: tuple[Any, ...]) -> httpx.Response:
    _, method, path, headers, body, token, _ = row
    with client(url, token=TOKEN if token else None) as http:
        return http.request(method, path, headers=headers, content=body)


def _shown(response: httpx.Response) -> tuple[Any, ...]:
    kept = ("content-type", "allow", "www-authenticate")
    headers = {k: v for k, v in response.headers.items() if k in kept}
    body = response.content.split(b'"meta"')[0]  # (the port in links, lastUpdated below)
    port = str(response.url.port).encode()
    return response.status_code, headers, body.replace(port, b"PORT")


@pytest.mark.parametrize("row", REQUESTS, ids=[r[0] for r in REQUESTS])
def test_a_user_middleware_sees_every_request_answered_alike(
    servers: dict[str, str], row: tuple[Any, ...]
) -> None:
    before = Counting.seen[BASE + row[2].split("?")[0]]
    plain, wrapped = _ask(servers["plain"], row), _ask(servers["wrapped"], row)
    assert plain.status_code == row[-1], plain.text
    assert _shown(plain) == _shown(wrapped)
    assert wrapped.headers["x-user-layer"] == "1" and "x-user-layer" not in plain.headers
    assert Counting.seen[BASE + row[2].split("?")[0]] == before + 1
    assert plain.headers["content-type"].startswith("application/fhir+json")
    if row[1] == "HEAD":
        assert plain.content == b"" and int(plain.headers["content-length"]) > 0


def http_scope(method: str, path: str, query: dict[str, str] | None = None) -> dict[str, Any]:
    """An HTTP scope as uvicorn gives it, with the token."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "scheme": "http",
        "server": ("127.0.0.1", 8080),
        "client": ("127.0.0.1", 50000),
        "method": method,
        "root_path": "",
        "path": path,
        "raw_path": path.encode(),
        "query_string": urlencode(query or {}).encode(),
        "headers": [(b"host", b"127.0.0.1:8080"), (b"authorization", f"Bearer {TOKEN}".encode())],
        "state": {},
    }


def run(app: ASGIApp, scope: dict[str, Any], body: bytes | None = b"") -> list[dict[str, Any]]:
    """The messages ``app`` sends for one request (``body`` None: the client is gone)."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if body is None:
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(dict(scope), receive, send))
    return sent


@pytest.fixture(scope="module")
def shared_app(wb: Workbench, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """An app over a data folder: the chain has all three rules."""
    return create_app(wb, token=TOKEN, data_dir=tmp_path_factory.mktemp("chain"))


# (id, method, path, the handler that answers: the operation, the router, or neither when
# the chain refuses the method of an operation's path)
ROUTED = [("operation", "GET", f"{BASE}{VALIDATE}", "operation"),
          ("operation PUT", "PUT", f"{BASE}{VALIDATE}", None),
          ("read", "GET", f"{BASE}/ValueSet/administrative-gender", "router"),
          ("metadata", "GET", f"{BASE}/metadata", "router")]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "handler"), [r[1:] for r in ROUTED],
                         ids=[r[0] for r in ROUTED])  # fmt: skip
def test_each_rule_runs_once_then_one_handler(
    shared_app: Any, monkeypatch: pytest.MonkeyPatch, method: str, path: str, handler: str | None
) -> None:
    calls: Counter[str] = Counter()

    def counted(name: str, function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(TokenRule, "refused", counted("token", TokenRule.refused))
    monkeypatch.setattr(FormatRule, "refused", counted("format", FormatRule.refused))
    monkeypatch.setattr(WriteSync, "sync", counted("sync", WriteSync.sync))
    chain = shared_app.chain
    monkeypatch.setattr(chain, "router", counted("router", chain.router))
    path_answer = chain.answers.get(path)
    if path_answer is not None:
        monkeypatch.setitem(chain.answers, path, counted("operation", path_answer))
    sent = run(shared_app, http_scope(method, path, GENDER_Q if handler != "router" else None))
    assert sent[0]["status"] == (200 if handler else 405)
    expected = {"token": 1, "format": 1, "sync": 1, **({handler: 1} if handler else {})}
    assert calls == expected


def test_no_exact_path_reaches_the_router(shared_app: Any) -> None:
    """The router holds no route of the paths the chain answers."""
    templates = {getattr(route, "path", None) for route in shared_app.router.routes}
    assert not templates & set(shared_app.chain.answers)
    assert f"{BASE}/ValueSet/$validate-code" in shared_app.chain.answers


def test_a_bug_in_either_handler_is_a_500_outcome(
    shared_app: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(*args: Any) -> bytes:
        raise RuntimeError("a bug")

    path = f"{BASE}/CodeSystem/$subsumes"
    monkeypatch.setitem(shared_app.chain.answers, path, broken)
    monkeypatch.setattr(shared_app.chain, "router", broken)
    with caplog.at_level(logging.ERROR, logger="workbench.server"):
        answers = [run(shared_app, http_scope("GET", p)) for p in (path, f"{BASE}/metadata")]
    for sent in answers:
        assert sent[0]["status"] == 500
        assert orjson.loads(sent[1]["body"])["issue"][0]["code"] == "exception"
    logged = [r.getMessage() for r in caplog.records]
    assert logged == [f"Unexpected error on GET {path}", f"Unexpected error on GET {BASE}/metadata"]


def test_a_client_gone_gets_nothing(shared_app: Any) -> None:
    scope = http_scope("POST", f"{BASE}{VALIDATE}")
    scope["headers"].append((b"content-type", b"application/fhir+json"))
    assert run(shared_app, scope, None) == []
