"""``$versions``, ``$cache-control`` and ``X-Cache-Id`` over HTTP (uvicorn on 127.0.0.1):
caches started, used by url alone, checked and ended; isolated from each other and from
calls without an id; the older ``cache-id`` parameter; bad ids; the bounds (a flood of
``mode=start``, the idle timeout, the bytes held), each telling a later request why the
cache is gone (``test_http_cache_check.py``: what ``mode=check`` answers)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from http_support import TOKEN, assert_outcome, client, params, serve_app, values

from workbench import Workbench
from workbench.errors import TX_ISSUE_TYPE
from workbench.server import create_app
from workbench.server.offload import Limits

CS_URL = "http://example.org/fhir/CodeSystem/cached"
VS_URL = "http://example.org/fhir/ValueSet/cached"


def codesystem(version: str = "1", codes: tuple[str, ...] = ("a", "b")) -> dict[str, Any]:
    return {
        "resourceType": "CodeSystem",
        "url": CS_URL,
        "version": version,
        "status": "active",
        "content": "complete",
        "concept": [{"code": c, "display": c.upper()} for c in codes],
    }


def valueset() -> dict[str, Any]:
    return {
        "resourceType": "ValueSet",
        "url": VS_URL,
        "status": "active",
        "compose": {"include": [{"system": CS_URL}]},
    }


@pytest.fixture(scope="module")
def http(default_wb: Workbench) -> Iterator[httpx.Client]:
    limits = Limits(caches=5, cache_idle_seconds=1.5, cache_bytes=2_000_000)
    app = create_app(default_wb, token=TOKEN, limits=limits)
    with serve_app(app) as running, client(running.url) as c:
        yield c


def start(http: httpx.Client, *resources: dict[str, Any], sealed: bool = False) -> str:
    body = params(*(("tx-resource", {"resource": r}) for r in resources))
    if sealed:
        body["parameter"].append({"name": "sealed", "valueBoolean": True})
    found = http.post("/$cache-control?mode=start", json=body)
    assert found.status_code == 200, found.text
    (cache_id,) = values(found.json(), "cache-id")
    return str(cache_id)


def validate(http: httpx.Client, code: str, *extra: tuple[str, Any], **headers: str) -> Any:
    body = params(
        ("url", {"valueUri": VS_URL}),
        ("coding", {"valueCoding": {"system": CS_URL, "code": code}}),
        *extra,
    )
    return http.post("/ValueSet/$validate-code", json=body, headers=headers)


def result(response: httpx.Response) -> bool:
    assert response.status_code == 200, response.text
    return bool(values(response.json(), "result")[0])


def tx_codes(response: httpx.Response) -> list[str]:
    issue = response.json()["issue"][0]
    return [c["code"] for c in issue["details"]["coding"] if c["system"] == TX_ISSUE_TYPE]


def message_id(outcome: dict[str, Any]) -> str:
    """The message id (the ``operationoutcome-message-id`` extension, where tx.fhir.org
    puts its own) of an OperationOutcome's first issue."""
    (found,) = [
        e["valueString"]
        for e in outcome["issue"][0].get("extension", [])
        if e["url"] == "http://hl7.org/fhir/StructureDefinition/operationoutcome-message-id"
    ]
    return str(found)


def gone_reason(http: httpx.Client, cache_id: str) -> tuple[int, str]:
    """A ``$validate-code`` in the cache: its status and message id (the reason it is gone)."""
    found = validate(http, "a", **{"X-Cache-Id": cache_id})
    return found.status_code, message_id(found.json()) if found.status_code == 404 else ""


def test_versions(http: httpx.Client) -> None:
    found = http.get("/$versions")
    assert found.status_code == 200, found.text
    assert found.json() == {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "version", "valueCode": "4.0"},
            {"name": "default", "valueCode": "4.0"},
        ],
    }


def test_capability_lists_system_operations(http: httpx.Client) -> None:
    rest = http.get("/metadata").json()["rest"][0]
    assert {op["name"] for op in rest["operation"]} == {"versions", "cache-control", "closure"}
    valueset_ops = next(r for r in rest["resource"] if r["type"] == "ValueSet")["operation"]
    assert "batch-validate-code" in {op["name"] for op in valueset_ops}
    terminology = http.get("/metadata", params={"mode": "terminology"}).json()
    assert "cache-id" in {p["name"] for p in terminology["expansion"]["parameter"]}


def test_resources_sent_once_are_named_by_url(http: httpx.Client) -> None:
    cache_id = start(http)
    sent = [("tx-resource", {"resource": codesystem()}), ("tx-resource", {"resource": valueset()})]
    assert result(validate(http, "a", *sent, **{"X-Cache-Id": cache_id}))
    later = validate(http, "b", **{"X-Cache-Id": cache_id})
    assert result(later)
    assert not result(validate(http, "zz", **{"X-Cache-Id": cache_id}))
    # isolated: another cache and a call without an id do not see them
    other = start(http)
    for headers in ({"X-Cache-Id": other}, {}):
        assert validate(http, "a", **headers).status_code == 400
    # check lists what the cache holds; end drops it
    checked = http.post("/$cache-control?mode=check", headers={"X-Cache-Id": cache_id})
    assert values(checked.json(), "resource") == [f"{CS_URL}|1", VS_URL]
    ended = http.post("/$cache-control?mode=end", headers={"X-Cache-Id": cache_id})
    assert ended.status_code == 200, ended.text
    gone = validate(http, "a", **{"X-Cache-Id": cache_id})
    assert_outcome(gone, 404, "not-found", "was closed by its client")
    assert tx_codes(gone) == ["cache-id-unknown"]
    assert message_id(gone.json()) == "WB-CACHE-404-CLOSED"


def test_start_front_loads_and_versions_are_kept_apart(http: httpx.Client) -> None:
    cache_id = start(http, codesystem("1", ("a",)), codesystem("2", ("b",)), valueset())
    header = {"X-Cache-Id": cache_id}
    assert result(validate(http, "b", **header))  # no version named: the latest, 2
    body = params(
        ("url", {"valueUri": VS_URL}),
        ("coding", {"valueCoding": {"system": CS_URL, "code": "a", "version": "1"}}),
    )
    assert result(http.post("/ValueSet/$validate-code", json=body, headers=header))
    body["parameter"][1]["valueCoding"]["version"] = "2"
    assert not result(http.post("/ValueSet/$validate-code", json=body, headers=header))


def test_sealed_cache_takes_no_more(http: httpx.Client) -> None:
    cache_id = start(http, valueset(), sealed=True)
    header = {"X-Cache-Id": cache_id}
    sent = ("tx-resource", {"resource": codesystem()})
    assert result(validate(http, "a", sent, **header))  # this call's own resource
    assert not result(validate(http, "a", **header))  # not kept: the code system is unknown


def test_older_cache_id_parameter(http: httpx.Client) -> None:
    own = ("cache-id", {"valueString": "client-chosen-1"})
    sent = [("tx-resource", {"resource": codesystem()}), ("tx-resource", {"resource": valueset()})]
    assert result(validate(http, "a", own, *sent))
    assert result(validate(http, "b", own))
    assert validate(http, "b").status_code == 400
    expanded = http.post("/ValueSet/$expand", json=params(("url", {"valueUri": VS_URL}), own))
    assert expanded.status_code == 200, expanded.text
    assert [c["code"] for c in expanded.json()["expansion"]["contains"]] == ["a", "b"]


@pytest.mark.parametrize(
    ("headers", "status", "code", "text"),
    [
        ({"X-Cache-Id": "never-started"}, 404, "not-found", "is not known to this server"),
        ({"X-Cache-Id": "a b/../c"}, 400, "invalid", "is not a cache id"),
        ({"X-Cache-Id": "x" * 65}, 400, "invalid", "is not a cache id"),
        ({"X-Cache-Id": ""}, 400, "invalid", "is not a cache id"),
        ({"X-Cache-Id": "caf\u00e9"}, 400, "invalid", "is not a cache id"),
        ({"X-Cache-Id": "one, two"}, 400, "invalid", "names 2 caches"),
    ],
)
def test_bad_cache_ids(
    http: httpx.Client, headers: dict[str, str], status: int, code: str, text: str
) -> None:
    """Unknown, malformed, several at once: a clear OperationOutcome on every operation
    that names a cache (the server holds none of them), and on ``$cache-control``'s end;
    ``mode=check`` answers an unknown id ``valid`` false (``test_http_cache_check.py``)."""
    sent = {k: v.encode("latin-1") for k, v in headers.items()}
    assert_outcome(validate(http, "a", **sent), status, code, text)  # type: ignore[arg-type]
    for mode in ("end", "check") if status == 400 else ("end",):
        control = http.post(f"/$cache-control?mode={mode}", headers=sent)
        assert_outcome(control, status, code, text)


def test_two_headers_are_refused(http: httpx.Client) -> None:
    first, second = start(http), start(http)
    found = http.post(
        "/ValueSet/$validate-code",
        json=params(("url", {"valueUri": VS_URL}), ("code", {"valueCode": "a"})),
        headers=[("X-Cache-Id", first), ("X-Cache-Id", second)],
    )
    assert_outcome(found, 400, "invalid", "names 2 caches")


@pytest.mark.parametrize(
    ("query", "headers", "text"),
    [
        ("mode=restart", {}, "must be start, check or end"),
        ("mode=check", {}, "needs the cache"),
        ("mode=start", {"X-Cache-Id": "abc"}, "send no cache id"),
        ("", {}, "mode"),
    ],
)
def test_bad_cache_control(
    http: httpx.Client, query: str, headers: dict[str, str], text: str
) -> None:
    found = http.post(f"/$cache-control?{query}", headers=headers)
    assert found.status_code == 400, found.text
    assert text in found.json()["issue"][0]["details"]["text"]


@pytest.mark.parametrize("method", ["GET", "POST", "POST with a body"])
def test_unknown_parameters_are_ignored_and_named(http: httpx.Client, method: str) -> None:
    """As the other operations: an unknown parameter of $cache-control (in the query or
    the body) is named in an information issue of the answer, and refused only under
    ``Prefer: handling=strict``."""
    url = "/$cache-control?mode=start&x-unheard=1"
    body = params(("x-other", {"valueString": "y"}), ("sealed", {"valueBoolean": True}))
    send = {"json": body} if method == "POST with a body" else {}
    found = http.request(method.split()[0], url, **send)
    assert found.status_code == 200, found.text
    assert values(found.json(), "cache-id")
    (outcome,) = [p["resource"] for p in found.json()["parameter"] if p["name"] == "issues"]
    (issue,) = outcome["issue"]
    assert issue["severity"] == "information" and "'x-unheard'" in issue["details"]["text"]
    assert ("'x-other'" in issue["details"]["text"]) is bool(send)
    strict = http.request(method.split()[0], url, headers={"Prefer": "handling=strict"}, **send)
    assert_outcome(strict, 400, "invalid", "Unknown parameter")


def test_start_with_a_large_body_keeps_its_query(http: httpx.Client) -> None:
    # a body over 64 KB is decoded where the call runs: the query's mode still counts
    big = codesystem(codes=tuple(f"code-{i:05d}" for i in range(2_000)))
    body = params(("tx-resource", {"resource": big}))
    assert len(httpx.Request("POST", "/", json=body).content) > 65_536
    found = http.post("/$cache-control?mode=start&x-unheard=1", json=body)
    assert found.status_code == 200, found.text
    header = {"X-Cache-Id": str(values(found.json(), "cache-id")[0])}
    assert "'x-unheard'" in str(found.json())
    checked = http.post("/$cache-control?mode=check", headers=header)
    assert values(checked.json(), "resource") == [f"{CS_URL}|1"]


def test_a_flood_of_starts_keeps_the_newest(http: httpx.Client) -> None:
    ids = [start(http) for _ in range(40)]
    for old in ids[:-5]:
        assert gone_reason(http, old) == (404, "WB-CACHE-404-CLEARED")
    for kept in ids[-5:]:
        found = http.post("/$cache-control?mode=check", headers={"X-Cache-Id": kept})
        assert values(found.json(), "valid") == [True], found.text
    found = validate(http, "a", **{"X-Cache-Id": ids[0]})
    assert_outcome(found, 404, "not-found", r"cleared .* \(at most 5 caches .*limit caches")


def test_an_idle_cache_expires(http: httpx.Client) -> None:
    cache_id, other = start(http), start(http)
    header = {"X-Cache-Id": cache_id}
    time.sleep(1.0)
    assert values(http.post("/$cache-control?mode=check", headers=header).json(), "valid")[0]
    time.sleep(1.0)  # kept alive by the check
    assert validate(http, "a", **header).status_code == 400  # a use too (the url is unknown)
    time.sleep(1.0)  # kept alive by the use
    assert values(http.post("/$cache-control?mode=check", headers=header).json(), "valid")[0]
    time.sleep(1.7)
    assert gone_reason(http, cache_id) == (404, "WB-CACHE-404-EXPIRED")
    assert gone_reason(http, other) == (404, "WB-CACHE-404-EXPIRED")
    found = validate(http, "a", **header)
    assert_outcome(found, 404, "not-found", r"expired .* unused for 2 seconds .*--cache-idle")


def test_content_past_the_bytes_limit_is_refused(http: httpx.Client) -> None:
    cache_id = start(http)
    big = codesystem("big", tuple(f"code-{i}" for i in range(8000)))
    found = validate(http, "a", ("tx-resource", {"resource": big}), **{"X-Cache-Id": cache_id})
    assert_outcome(found, 400, "too-costly", "limit cache_bytes")
    assert gone_reason(http, cache_id) == (404, "WB-CACHE-404-CLEARED")
    found = validate(http, "a", **{"X-Cache-Id": cache_id})
    assert_outcome(found, 404, "not-found", r"cleared .*2,000,000 bytes, limit cache_bytes")
