"""The fast lane answers an operation call exactly as the stack of the app's own layers does
(Guard, token, format, other processes' writes, the operation dispatch): the same messages,
status, headers and body, for good requests and for every way a request is refused."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import orjson
import pytest
from starlette.types import ASGIApp, Receive, Scope

from workbench import Workbench
from workbench.server import create_app
from workbench.server.auth import BearerAuth
from workbench.server.dispatch import FastLane, OperationDispatch
from workbench.server.negotiation import FormatNegotiation
from workbench.server.protocol import Guard

TOKEN = "fast-lane-token"
BASE = "/fhir/R4"
GENDER_VS = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
ENCOUNTER_VS = "http://terminology.hl7.org/ValueSet/v3-ActEncounterCode"
ACT_CODE = "http://terminology.hl7.org/CodeSystem/v3-ActCode"
AUTH = (b"authorization", f"Bearer {TOKEN}".encode())
POSTED = orjson.dumps(
    {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "url", "valueUri": GENDER_VS},
            {"name": "coding", "valueCoding": {"system": GENDER_CS, "code": "male"}},
        ],
    }
)


def http_scope(
    method: str,
    path: str,
    query: dict[str, str] | None = None,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> dict[str, Any]:
    """An HTTP scope as uvicorn gives it."""
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
        "headers": [(b"host", b"127.0.0.1:8080"), *(headers or [])],
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


@pytest.fixture(scope="module", params=["memory", "data-folder"])
def app(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The app, without and with a data folder (whose journal the lane reads too)."""
    wb = Workbench()
    wb.load(Path(__file__).resolve().parent.parent / "valuesets", progress=False)
    folder = tmp_path_factory.mktemp("lane") if request.param == "data-folder" else None
    return create_app(wb, token=TOKEN, base=BASE, data_dir=folder)


VALIDATE = f"{BASE}/ValueSet/$validate-code"
GENDER_Q = {"url": GENDER_VS, "system": GENDER_CS, "code": "female"}
JSON_BODY = [AUTH, (b"content-type", b"application/fhir+json")]


def without_request_id(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with the response start's ``x-request-id`` header left out."""
    start = dict(messages[0])
    start["headers"] = [h for h in start["headers"] if h[0] != b"x-request-id"]
    return [start, *messages[1:]]


@pytest.mark.parametrize(
    ("scope", "body", "status"),
    [
        pytest.param(http_scope("GET", VALIDATE, GENDER_Q, [AUTH]), b"", 200, id="get"),
        pytest.param(
            http_scope(
                "GET", VALIDATE, {"url": ENCOUNTER_VS, "system": ACT_CODE, "code": "AMB"}, [AUTH]
            ),
            b"",
            200,
            id="get-with-status-notes",
        ),
        pytest.param(
            http_scope("GET", f"{BASE}/CodeSystem/$lookup", {"system": GENDER_CS, "code": "male"}),
            b"",
            401,
            id="no-token",
        ),
        pytest.param(
            http_scope("POST", VALIDATE, headers=[(b"authorization", b"Bearer nope")]),
            POSTED,
            401,
            id="wrong-token",
        ),
        pytest.param(
            http_scope("GET", VALIDATE, {**GENDER_Q, "_format": "xml"}, [AUTH]),
            b"",
            406,
            id="format-xml",
        ),
        pytest.param(
            http_scope("GET", VALIDATE, GENDER_Q, [AUTH, (b"accept", b"text/turtle")]),
            b"",
            406,
            id="accept-turtle",
        ),
        pytest.param(
            http_scope("GET", VALIDATE, {**GENDER_Q, "nope": "1"}, [AUTH]),
            b"",
            200,
            id="unknown-parameter-ignored",
        ),
        pytest.param(
            http_scope(
                "GET", VALIDATE, {**GENDER_Q, "nope": "1"}, [AUTH, (b"prefer", b"handling=strict")]
            ),
            b"",
            400,
            id="unknown-parameter-strict",
        ),
        pytest.param(
            http_scope("POST", VALIDATE, headers=[AUTH, (b"content-type", b"text/plain")]),
            POSTED,
            415,
            id="wrong-content-type",
        ),
        pytest.param(http_scope("POST", VALIDATE, headers=JSON_BODY), POSTED, 200, id="post"),
        pytest.param(http_scope("POST", VALIDATE, headers=JSON_BODY), b"{", 400, id="bad-json"),
    ],
)
def test_the_lane_answers_as_the_stack(
    app: Any, scope: dict[str, Any], body: bytes, status: int
) -> None:
    lane = app.fast_lane
    assert isinstance(lane, FastLane)
    through_lane = run(lane, scope, body)
    assert through_lane == run(lane.stack, scope, body)
    from_app = run(app, scope, body)
    stamped = [v for n, v in from_app[0]["headers"] if n == b"x-request-id"]
    assert len(stamped) == 1  # the app, outermost, gives every response its X-Request-Id
    assert without_request_id(from_app) == through_lane  # and takes the lane
    assert through_lane[0]["status"] == status
    assert len(through_lane) == 2 and through_lane[1]["body"]


def test_a_bug_is_a_500_outcome_both_ways(app: Any, caplog: pytest.LogCaptureFixture) -> None:
    lane = app.fast_lane
    path = f"{BASE}/CodeSystem/$subsumes"
    kept = lane.dispatch.answers[path]

    async def broken(scope: Scope, receive: Receive) -> bytes:
        raise RuntimeError("a bug")

    lane.dispatch.answers[path] = broken
    try:
        scope = http_scope("GET", path, {"system": GENDER_CS}, [AUTH])
        with caplog.at_level(logging.ERROR, logger="workbench.server"):
            through_lane = run(lane, scope)
            assert through_lane == run(lane.stack, scope)
    finally:
        lane.dispatch.answers[path] = kept
    assert through_lane[0]["status"] == 500
    assert orjson.loads(through_lane[1]["body"])["issue"][0]["code"] == "exception"
    logged = [r.getMessage() for r in caplog.records]
    assert logged == [f"Unexpected error on GET {path}"] * 2


def test_a_client_gone_gets_nothing_both_ways(app: Any) -> None:
    scope = http_scope("POST", VALIDATE, headers=JSON_BODY)
    assert run(app.fast_lane, scope, None) == run(app.fast_lane.stack, scope, None) == []


def test_other_stacks_get_no_lane() -> None:
    async def inner(scope: Scope, receive: Receive, send: Any) -> None:
        return None

    dispatch = OperationDispatch(inner, answers={})
    usual = Guard(BearerAuth(FormatNegotiation(dispatch), **_OPEN))
    assert isinstance(FastLane.over(usual), FastLane)
    for other in (
        BearerAuth(FormatNegotiation(dispatch), **_OPEN),  # no Guard
        Guard(FormatNegotiation(BearerAuth(dispatch, **_OPEN))),  # another order
        Guard(BearerAuth(FormatNegotiation(inner), **_OPEN)),  # no dispatch
    ):
        assert FastLane.over(other) is other


_OPEN: dict[str, Any] = {"token": TOKEN, "open_paths": frozenset(), "open_prefix": "/docs"}
