"""``$cache-control?mode=check`` over HTTP (uvicorn on 127.0.0.1), as FHIRsmith (tx.fhir.org)
answers it: a cache held is ``valid`` with ``sealed``, ``resource-count``, ``idle`` (seconds
unused before the check, which uses it) and ``timeout``; a cache that is gone is ``valid``
false, status 200, with an ``outcome`` saying why (closed, expired, cleared, never known:
one message id each), which any other request naming it gets as a 404. Bad ids are 400.
The idle timeout is an option (``Workbench.serve(cache_idle=...)``, ``server.py
--cache-idle``), 4 hours by default, and ``/metadata`` documents it."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_support import HOST, TOKEN, assert_outcome, client, free_port, params, serve_app, values
from test_http_cache_control import codesystem, message_id, start, valueset
from test_server_process import CONTENT, ROOT, STOP_SECONDS, environment, wait_ready

from workbench import Workbench
from workbench.cli.serve import parse_args
from workbench.errors import TX_ISSUE_TYPE
from workbench.server import create_app
from workbench.server.offload import Limits

IDLE = 3.0  # seconds: the idle timeout of this module's server


@pytest.fixture(scope="module")
def http(default_wb: Workbench) -> Iterator[httpx.Client]:
    limits = Limits(caches=3, cache_idle_seconds=IDLE)
    app = create_app(default_wb, token=TOKEN, limits=limits)
    with serve_app(app) as running, client(running.url) as c:
        yield c


def check(http: httpx.Client, cache_id: str, method: str = "POST") -> dict[str, Any]:
    """``mode=check`` of ``cache_id`` (always 200): its output values by name (``resource``
    a list)."""
    found = http.request(method, "/$cache-control?mode=check", headers={"X-Cache-Id": cache_id})
    assert found.status_code == 200, found.text
    answer: dict[str, Any] = {}
    for p in found.json()["parameter"]:
        value = p["resource"] if "resource" in p else values({"parameter": [p]}, p["name"])[0]
        if p["name"] == "resource":
            answer.setdefault("resource", []).append(value)
        else:
            answer[p["name"]] = value
    return answer


def assert_gone(answer: dict[str, Any], cache_id: str, msg_id: str, text: str) -> None:
    """A check's answer for a cache that is gone: the reason's outcome and message id."""
    assert answer["cache-id"] == cache_id and answer["valid"] is False
    assert answer["timeout"] == IDLE
    assert "sealed" not in answer and "idle" not in answer
    (issue,) = answer["outcome"]["issue"]
    assert (issue["severity"], issue["code"]) == ("error", "not-found")
    codings = {(c["system"], c["code"]) for c in issue["details"]["coding"]}
    assert (TX_ISSUE_TYPE, "cache-id-unknown") in codings
    assert message_id(answer["outcome"]) == msg_id
    assert text in issue["details"]["text"], issue["details"]["text"]


def test_a_cache_held_is_valid_with_its_state(http: httpx.Client) -> None:
    cache_id = start(http, codesystem(), valueset(), sealed=True)
    assert check(http, cache_id) == {
        "cache-id": cache_id,
        "valid": True,
        "sealed": True,
        "resource-count": 2,
        "idle": 0,
        "timeout": IDLE,
        "resource": [f"{codesystem()['url']}|1", valueset()["url"]],
    }
    time.sleep(1.1)  # past 1 s unused (whole seconds, rounded down), within the timeout
    assert check(http, cache_id, "GET")["idle"] == 1  # GET is taken too
    assert check(http, cache_id)["idle"] == 0  # the check was a use
    unsealed = check(http, start(http))
    assert (unsealed["valid"], unsealed["sealed"], unsealed["resource-count"]) == (True, False, 0)


def test_checks_alone_keep_a_cache_alive(http: httpx.Client) -> None:
    cache_id = start(http)
    for _ in range(4):  # 6 s in all, twice the timeout
        time.sleep(1.5)
        assert check(http, cache_id)["valid"] is True


@pytest.mark.parametrize("how", ["closed", "expired", "cleared", "never known"])
def test_a_cache_that_is_gone_says_why(http: httpx.Client, how: str) -> None:
    cache_id = "never-started-here" if how == "never known" else start(http)
    if how == "closed":
        ended = http.post("/$cache-control?mode=end", headers={"X-Cache-Id": cache_id})
        assert ended.status_code == 200, ended.text
    elif how == "expired":
        time.sleep(IDLE + 0.4)
    elif how == "cleared":
        for _ in range(3):  # the server holds 3 caches: this one is the least recently used
            start(http)
    msg_id, text = {
        "closed": ("WB-CACHE-404-CLOSED", "was closed by its client ($cache-control?mode=end)"),
        "expired": ("WB-CACHE-404-EXPIRED", "drops a cache unused for 3 seconds"),
        "cleared": ("WB-CACHE-404-CLEARED", "at most 3 caches are held at once, limit caches"),
        "never known": ("WB-CACHE-404", "is not known to this server"),
    }[how]
    for _ in range(2):  # a check of a cache that is gone starts nothing: the same again
        assert_gone(check(http, cache_id), cache_id, msg_id, text)
    # any other request naming it: 404 with the same outcome (end, and a call in the cache)
    ended = http.post("/$cache-control?mode=end", headers={"X-Cache-Id": cache_id})
    assert_outcome(ended, 404, "not-found", "")
    assert message_id(ended.json()) == msg_id
    body = params(("url", {"valueUri": "http://example.org/x"}), ("code", {"valueCode": "a"}))
    used = http.post("/CodeSystem/$validate-code", json=body, headers={"X-Cache-Id": cache_id})
    assert_outcome(used, 404, "not-found", "")
    assert message_id(used.json()) == msg_id and text in used.text


@pytest.mark.parametrize(
    ("query", "headers", "status", "code", "text"),
    [
        ("", {"X-Cache-Id": "a b"}, 400, "invalid", "is not a cache id"),
        ("&cache-id=" + "x" * 65, {}, 400, "invalid", "is not a cache id"),
        ("", {"X-Cache-Id": "a, b"}, 400, "invalid", "names 2 caches"),
        ("&cache-id=other", {"X-Cache-Id": "one"}, 400, "required", "name two caches"),
        ("&cache-id=a&cache-id=b", {}, 400, "invalid", "cache-id"),
        ("", {}, 400, "required", "needs the cache"),
    ],
)
def test_bad_ids_of_a_check(
    http: httpx.Client, query: str, headers: dict[str, str], status: int, code: str, text: str
) -> None:
    found = http.post(f"/$cache-control?mode=check{query}", headers=headers)
    assert_outcome(found, status, code, text)


def test_two_caches_named_at_once_by_a_call_are_refused(http: httpx.Client) -> None:
    first = start(http)
    body = params(
        ("url", {"valueUri": "http://example.org/x"}),
        ("code", {"valueCode": "a"}),
        ("cache-id", {"valueString": "another"}),
    )
    found = http.post("/CodeSystem/$validate-code", json=body, headers={"X-Cache-Id": first})
    assert_outcome(found, 400, "required", "name two caches")


def test_a_cache_ended_through_the_data_folder_says_so(
    default_wb: Workbench, tmp_path: Path
) -> None:
    """With a data folder (the caches in its SQLite database, shared by every worker) the
    end is recorded there, and told after a restart of the server."""
    cache_id = ""
    for restarted in (False, True):
        app = create_app(default_wb, token=TOKEN, data_dir=tmp_path)
        with serve_app(app) as running, client(running.url) as http:
            if not restarted:
                cache_id = start(http)
                assert check(http, cache_id)["valid"] is True
                ended = http.post("/$cache-control?mode=end", headers={"X-Cache-Id": cache_id})
                assert ended.status_code == 200, ended.text
            answer = check(http, cache_id)
            assert answer["valid"] is False
            assert message_id(answer["outcome"]) == "WB-CACHE-404-CLOSED"


def test_the_timeout_is_an_option_in_metadata(default_wb: Workbench) -> None:
    """``Workbench.serve(cache_idle=...)``; the CapabilityStatement and the
    TerminologyCapabilities document it, and check reports it."""
    cases = ((None, 14_400, "4 hours"), ("90m", 5_400, "1 hour 30 minutes"))
    for given, seconds, said in cases:
        server = default_wb.serve(port=0, token=TOKEN, cache_idle=given)
        with server, client(server.url) as http:
            rest = http.get("/metadata").json()["rest"][0]
            (control,) = [op for op in rest["operation"] if op["name"] == "cache-control"]
            assert f"unused for {said} ({seconds} seconds" in control["documentation"]
            assert "--cache-idle" in control["documentation"]
            terminology = http.get("/metadata", params={"mode": "terminology"}).json()
            (param,) = [p for p in terminology["expansion"]["parameter"] if p["name"] == "cache-id"]
            assert param["documentation"] == control["documentation"]
            assert check(http, start(http))["timeout"] == seconds
    with pytest.raises(ValueError, match="not a duration"):
        default_wb.serve(port=0, cache_idle="soon")


def test_the_server_script_takes_the_timeout(tmp_path: Path) -> None:
    assert parse_args(["--cache-idle", "8h"]).cache_idle == 28_800
    assert parse_args(["--cache-idle", "600"]).cache_idle == 600
    assert parse_args([]).cache_idle is None
    port = free_port()
    command = [sys.executable, str(ROOT / "server.py"), "--port", str(port), "--token", TOKEN]
    command += [*CONTENT, "--cache-idle", "2h"]
    with (tmp_path / "server.log").open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment())
        try:
            url = f"http://{HOST}:{port}/fhir/R4"
            wait_ready(process, url)
            with client(url) as http:
                rest = http.get("/metadata").json()["rest"][0]
                assert "unused for 2 hours (7200 seconds" in str(rest["operation"])
                assert check(http, start(http))["timeout"] == 7_200
        finally:
            process.terminate()
            process.wait(STOP_SECONDS)
    bad = [sys.executable, str(ROOT / "server.py"), "--cache-idle", "-5"]
    done = subprocess.run(bad, capture_output=True, env=environment(), timeout=STOP_SECONDS)
    assert done.returncode == 2 and b"not a duration" in done.stderr
