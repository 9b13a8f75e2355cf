"""Search and REST as FHIR clients expect (R4 http.html, search.html), over real HTTP on
127.0.0.1: paging with absolute links, _summary, _elements, _sort, modifiers, a self link with
only what was applied, conditional create, If-Match forms, Prefer: return, content
negotiation, Last-Modified, OperationDefinition search, operations POSTed without a body and
a CapabilityStatement that lists exactly the search parameters that work."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
from http_support import (
    DEMO_ALL,
    DEMO_CS,
    FHIR_JSON,
    GENDER_CS,
    TOKEN,
    assert_outcome,
    client,
)

from workbench import Workbench
from workbench.operations import OPERATIONS
from workbench.server.embedded import ServerHandle
from workbench.server.search import SEARCH_PARAMETERS

ROOT = Path(__file__).resolve().parent.parent
VALUESETS = ROOT / "valuesets"
SUBSETTED = {
    "system": "http://terminology.hl7.org/CodeSystem/v3-ObservationValue",
    "code": "SUBSETTED",
}
NEW_URL = "http://example.org/fhir/ValueSet/rest-test"


def shipped(rtype: str) -> list[dict[str, Any]]:
    found = []
    for path in sorted(VALUESETS.rglob("*.json")):
        data = json.loads(path.read_text())
        if data.get("resourceType") == rtype:
            found.append(data)
    return found


ALL_VS = {r["id"] for r in shipped("ValueSet")}


@pytest.fixture(scope="module")
def read_server() -> Iterator[ServerHandle]:
    wb = Workbench()
    wb.load(VALUESETS, progress=False)
    with wb.serve(port=0, token=TOKEN) as handle:
        yield handle


@pytest.fixture(scope="module")
def reader(read_server: ServerHandle) -> Iterator[httpx.Client]:
    with client(read_server.url) as http:
        yield http


@pytest.fixture
def writer(wb: Workbench) -> Iterator[tuple[ServerHandle, httpx.Client]]:
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as http:
        yield handle, http


def new_vs(**changes: Any) -> dict[str, Any]:
    vs: dict[str, Any] = {
        "resourceType": "ValueSet",
        "url": NEW_URL,
        "version": "1",
        "name": "RestTest",
        "status": "draft",
        "compose": {"include": [{"system": DEMO_CS, "concept": [{"code": "video"}]}]},
    }
    vs.update(changes)
    return vs


def send(http: httpx.Client, method: str, path: str, body: Any, **headers: str) -> httpx.Response:
    return http.request(
        method,
        path,
        content=json.dumps(body).encode(),
        headers={"Content-Type": FHIR_JSON, **headers},
    )


def links(bundle: dict[str, Any]) -> dict[str, str]:
    return {link["relation"]: link["url"] for link in bundle["link"]}


def query_of(url: str) -> list[tuple[str, str]]:
    return parse_qsl(urlsplit(url).query, keep_blank_values=True)


def ids(bundle: dict[str, Any]) -> list[str]:
    return [e["resource"]["id"] for e in bundle.get("entry", [])]


# --- paging ---------------------------------------------------------------------------


def test_paging_follows_absolute_next_links_to_every_match(
    reader: httpx.Client, read_server: ServerHandle
) -> None:
    """Before: no next link and _offset ignored, so clients stopped after the first page."""
    first = reader.get("/ValueSet", params={"_count": "7"}).json()
    assert first["total"] == len(ALL_VS) > 14
    seen: list[str] = []
    url: str | None = links(first)["self"]
    pages = 0
    while url is not None and pages < 50:
        assert url.startswith(f"{read_server.url}/ValueSet")  # absolute
        page = reader.get(url).json()
        assert page["total"] == len(ALL_VS)
        assert len(page["entry"]) <= 7
        seen += ids(page)
        url = links(page).get("next")
        pages += 1
    assert pages == -(-len(ALL_VS) // 7)
    assert sorted(seen) == sorted(ALL_VS)  # every match once


def test_paging_links(reader: httpx.Client, read_server: ServerHandle) -> None:
    total = len(ALL_VS)
    page = reader.get("/ValueSet", params={"_count": "5", "_offset": "5", "status": "active"})
    bundle = page.json()
    active = sorted(r["id"] for r in shipped("ValueSet") if r.get("status") == "active")
    assert bundle["total"] == len(active)
    found = links(bundle)
    base = f"{read_server.url}/ValueSet"
    assert found["self"] == f"{base}?status=active&_count=5&_offset=5"
    assert found["previous"] == f"{base}?status=active&_count=5"
    assert found["first"] == f"{base}?status=active&_count=5"
    assert found["next"] == f"{base}?status=active&_count=5&_offset=10"
    last = ((len(active) - 1) // 5) * 5
    assert found["last"] == f"{base}?status=active&_count=5&_offset={last}"
    everything = reader.get("/ValueSet", params={"status": "active", "_count": "1000"}).json()
    assert ids(bundle) == ids(everything)[5:10]
    tail = reader.get("/ValueSet", params={"_offset": str(total - 2), "_count": "5"}).json()
    assert len(tail["entry"]) == 2
    assert "next" not in links(tail)
    beyond = reader.get("/ValueSet", params={"_offset": str(total + 10)}).json()
    assert beyond["total"] == total
    assert "entry" not in beyond


@pytest.mark.parametrize(
    ("query", "text"),
    [
        pytest.param("_count=x", r"_count must be a whole number", id="count-text"),
        pytest.param("_count=%C2%B2", r"_count must be a whole number", id="count-superscript"),
        pytest.param("_count=-1", r"_count must be a whole number", id="count-negative"),
        pytest.param("_count=100000000000000000000", "at most 9", id="count-huge"),
        pytest.param("_offset=abc", r"_offset must be a whole number", id="offset"),
        pytest.param("_summary=maybe", r"_summary must be one of", id="summary"),
        pytest.param("name:sounds=x", r"modifier ':sounds' is not supported", id="modifier"),
        pytest.param("status:exact=active", r"':exact' is not supported on the token", id="tok"),
        pytest.param("url:missing=perhaps", r"must be true or false", id="missing-value"),
    ],
)
def test_bad_search_requests(reader: httpx.Client, query: str, text: str) -> None:
    assert_outcome(reader.get(f"/ValueSet?{query}"), 400, "invalid", text)


# --- the self link, empty results -----------------------------------------------------


def test_self_link_holds_only_what_was_applied(
    reader: httpx.Client, read_server: ServerHandle
) -> None:
    """Before: the self link repeated every parameter, the ignored ones too."""
    response = reader.get("/ValueSet?name=WorkbenchDemo&foo=1&_include=x&_total=accurate&bar=")
    bundle = response.json()
    assert links(bundle)["self"] == f"{read_server.url}/ValueSet?name=WorkbenchDemo"
    assert bundle["total"] == 4


def test_empty_result_has_no_entry(reader: httpx.Client) -> None:
    """Before: an empty result carried ``entry: []``."""
    bundle = reader.get("/ValueSet", params={"url": "http://nope"}).json()
    assert bundle["total"] == 0
    assert "entry" not in bundle


# --- _summary, _elements, _sort -------------------------------------------------------


def test_summary_count(reader: httpx.Client) -> None:
    """Before: _summary=count was ignored."""
    bundle = reader.get("/ValueSet", params={"_summary": "count", "status": "active"}).json()
    assert bundle["total"] == sum(1 for r in shipped("ValueSet") if r.get("status") == "active")
    assert "entry" not in bundle
    assert [link["relation"] for link in bundle["link"]] == ["self"]


@pytest.mark.parametrize(
    ("mode", "kept"),
    [
        pytest.param("true", None, id="true"),
        pytest.param("text", {"resourceType", "id", "meta", "text", "status"}, id="text"),
    ],
)
def test_summary_true_and_text(reader: httpx.Client, mode: str, kept: set[str] | None) -> None:
    bundle = reader.get("/ValueSet", params={"_summary": mode, "_id": "workbench-demo-all"}).json()
    [entry] = bundle["entry"]
    resource = entry["resource"]
    full = reader.get("/ValueSet/workbench-demo-all").json()
    assert SUBSETTED in resource["meta"]["tag"]
    if kept is None:
        assert "compose" not in resource
        assert "description" not in resource
        assert {k: resource[k] for k in ("url", "version", "name", "status")} == {
            k: full[k] for k in ("url", "version", "name", "status")
        }
    else:
        assert set(resource) == kept & set(full) | {"meta"}
    read = reader.get("/ValueSet/workbench-demo-all", params={"_summary": mode}).json()
    assert read == resource


def test_summary_data_drops_text(reader: httpx.Client) -> None:
    full = reader.get("/ValueSet/administrative-gender").json()
    assert "text" in full
    bundle = reader.get("/ValueSet", params={"_summary": "data", "_id": "administrative-gender"})
    assert bundle.json()["entry"][0]["resource"] == {k: v for k, v in full.items() if k != "text"}


def test_elements(reader: httpx.Client) -> None:
    """Before: _elements was ignored."""
    bundle = reader.get("/CodeSystem", params={"_elements": "url,title", "url": DEMO_CS}).json()
    resource = bundle["entry"][0]["resource"]
    assert set(resource) == {"resourceType", "id", "meta", "url", "title", "status", "content"}
    assert SUBSETTED in resource["meta"]["tag"]
    assert "_elements=url,title" in links(bundle)["self"]


@pytest.mark.parametrize(
    ("sort", "key", "reverse"),
    [
        pytest.param("name", "name", False, id="name"),
        pytest.param("-name", "name", True, id="-name"),
        pytest.param("_id", "id", False, id="_id"),
        pytest.param("-url", "url", True, id="-url"),
    ],
)
def test_sort(reader: httpx.Client, sort: str, key: str, reverse: bool) -> None:
    bundle = reader.get("/ValueSet", params={"_sort": sort, "_count": "1000"}).json()
    values = [e["resource"].get(key) for e in bundle["entry"]]
    present = [v for v in values if v is not None]
    expected = sorted(present, key=lambda v: v.casefold() if key == "name" else v, reverse=reverse)
    assert present == expected
    assert values[: len(present)] == present  # the ones without a value come last
    assert f"_sort={sort}" in links(bundle)["self"]


def test_sort_by_two_keys(reader: httpx.Client) -> None:
    bundle = reader.get("/CodeSystem", params={"_sort": "status,-_id", "_count": "1000"}).json()
    pairs = [(e["resource"]["status"], e["resource"]["id"]) for e in bundle["entry"]]
    statuses = [s for s, _ in pairs]
    assert statuses == sorted(statuses)
    for status in set(statuses):
        within = [i for s, i in pairs if s == status]
        assert within == sorted(within, reverse=True)


# --- modifiers, tokens ----------------------------------------------------------------

DEMO_VS_IDS = {
    "workbench-demo-all",
    "workbench-demo-bookable",
    "workbench-demo-in-person",
    "workbench-demo-remote-live",
}


def _with(rtype: str, test: Any) -> set[str]:
    return {r["id"] for r in shipped(rtype) if test(r)}


@pytest.mark.parametrize(
    ("rtype", "query", "expected"),
    [
        pytest.param(
            "ValueSet",
            "status=http://hl7.org/fhir/publication-status|active",
            _with("ValueSet", lambda r: r.get("status") == "active"),
            id="system|code",
        ),
        pytest.param("ValueSet", "status=http://other|active", set(), id="wrong-system"),
        pytest.param("ValueSet", "version=|1.0.0", DEMO_VS_IDS, id="|code"),
        pytest.param(
            "ValueSet",
            "status:not=active",
            _with("ValueSet", lambda r: r.get("status") != "active"),
            id="not",
        ),
        pytest.param("ValueSet", "name:exact=WorkbenchDemoAll", {"workbench-demo-all"}, id="exact"),
        pytest.param("ValueSet", "name:exact=workbenchdemoall", set(), id="exact-case"),
        pytest.param(
            "ValueSet", "title:contains=REMOTE", {"workbench-demo-remote-live"}, id="contains"
        ),
        pytest.param(
            "ValueSet",
            "title:missing=true",
            _with("ValueSet", lambda r: not r.get("title")),
            id="missing-true",
        ),
        pytest.param(
            "ValueSet",
            "title:missing=false",
            _with("ValueSet", lambda r: bool(r.get("title"))),
            id="missing-false",
        ),
        pytest.param(
            "ValueSet", "url:below=http://example.org/fhir/ValueSet", DEMO_VS_IDS, id="below"
        ),
        pytest.param(
            "ValueSet", f"url:above={DEMO_ALL}/sub/part", {"workbench-demo-all"}, id="above"
        ),
        pytest.param(
            "ValueSet",
            f"reference={DEMO_CS}",
            _with("ValueSet", lambda r: DEMO_CS in json.dumps(r.get("compose", {}))),
            id="reference",
        ),
        pytest.param("CodeSystem", f"code={DEMO_CS}|video", {"workbench-demo"}, id="cs-code"),
        pytest.param("CodeSystem", "code=video", {"workbench-demo"}, id="cs-code-only"),
        pytest.param("CodeSystem", f"code={GENDER_CS}|video", set(), id="cs-code-other"),
        pytest.param(
            "CodeSystem", f"system={GENDER_CS}", {"administrative-gender"}, id="cs-system"
        ),
        pytest.param(
            "CodeSystem",
            "content-mode=complete",
            _with("CodeSystem", lambda r: r.get("content") == "complete"),
            id="content-mode",
        ),
        pytest.param(
            "ValueSet",
            "name=workbenchdemo&name=WorkbenchDemoR",
            {"workbench-demo-remote-live"},
            id="and",
        ),
    ],
)
def test_search_modifiers_and_tokens(
    reader: httpx.Client, rtype: str, query: str, expected: set[str]
) -> None:
    """Before: token search ``system|code`` and the modifiers found nothing or were ignored."""
    bundle = reader.get(f"/{rtype}?{query}&_count=1000").json()
    assert set(ids(bundle)) == expected
    assert bundle["total"] == len(expected)


def test_string_search_ignores_accents(writer: tuple[ServerHandle, httpx.Client]) -> None:
    _, http = writer
    assert send(http, "POST", "/ValueSet", new_vs(title="Überweisung Ärztin")).status_code == 201
    found = http.get("/ValueSet", params={"title": "uberweisung"}).json()
    assert found["total"] == 1
    assert http.get("/ValueSet", params={"title:contains": "ARZT"}).json()["total"] == 1


def test_identifier_token(writer: tuple[ServerHandle, httpx.Client]) -> None:
    _, http = writer
    body = new_vs(identifier=[{"system": "urn:example:ids", "value": "urn:oid:1.2.3"}])
    assert send(http, "POST", "/ValueSet", body).status_code == 201
    for value, total in [
        ("urn:example:ids|urn:oid:1.2.3", 1),
        ("urn:oid:1.2.3", 1),
        ("urn:example:ids|", 1),
        ("|urn:oid:1.2.3", 0),
        ("urn:other|urn:oid:1.2.3", 0),
    ]:
        assert http.get("/ValueSet", params={"identifier": value}).json()["total"] == total, value


# --- conditional create, If-Match, Prefer ---------------------------------------------


def test_if_none_exist(writer: tuple[ServerHandle, httpx.Client]) -> None:
    """Before: If-None-Exist was ignored and every POST made a duplicate."""
    _, http = writer
    condition = f"url={NEW_URL}"
    first = send(http, "POST", "/ValueSet", new_vs(), **{"If-None-Exist": condition})
    assert first.status_code == 201
    again = send(http, "POST", "/ValueSet", new_vs(title="Ignored"), **{"If-None-Exist": condition})
    assert again.status_code == 200
    assert again.json() == first.json()
    assert http.get("/ValueSet", params={"url": NEW_URL}).json()["total"] == 1
    several = send(
        http,
        "POST",
        "/ValueSet",
        new_vs(url=NEW_URL + "-2"),
        **{"If-None-Exist": "url:below=http://example.org/fhir/ValueSet"},
    )
    assert_outcome(several, 412, "multiple-matches", r"matches \d+ resources, not one")
    empty = send(http, "POST", "/ValueSet", new_vs(url=NEW_URL + "-2"), **{"If-None-Exist": ""})
    assert_outcome(empty, 400, "invalid", "no search criteria")
    unknown = send(
        http, "POST", "/ValueSet", new_vs(url=NEW_URL + "-2"), **{"If-None-Exist": "x=1"}
    )
    assert_outcome(unknown, 400, "invalid", "Unknown search parameter 'x'")
    assert http.get("/ValueSet", params={"url": NEW_URL + "-2"}).json()["total"] == 0


@pytest.mark.parametrize("form", ['W/"1"', '"1"', "1"])
def test_if_match_weak_and_strong(writer: tuple[ServerHandle, httpx.Client], form: str) -> None:
    """Before: only the weak form was accepted."""
    _, http = writer
    current = http.get("/ValueSet/workbench-demo-all").json()
    updated = send(
        http, "PUT", "/ValueSet/workbench-demo-all", {**current, "title": "x"}, **{"If-Match": form}
    )
    assert updated.status_code == 200, updated.text
    assert updated.json()["meta"]["versionId"] == "2"
    stale = send(
        http, "PUT", "/ValueSet/workbench-demo-all", {**current, "title": "y"}, **{"If-Match": form}
    )
    assert_outcome(stale, 412, "conflict", "does not match the current version")


DEMO_PATH = "/ValueSet/workbench-demo-all"


@pytest.mark.parametrize(
    ("method", "path", "deleted_first", "if_match", "status", "versions"),
    [
        # DELETE: before, If-Match was ignored (junk deleted), re-deleting was a 404
        pytest.param("DELETE", DEMO_PATH, False, None, 204, ["2", "1"], id="delete"),
        pytest.param("DELETE", DEMO_PATH, False, 'W/"1"', 204, ["2", "1"], id="delete-weak"),
        pytest.param("DELETE", DEMO_PATH, False, '"1"', 204, ["2", "1"], id="delete-strong"),
        pytest.param("DELETE", DEMO_PATH, False, "*", 204, ["2", "1"], id="delete-star"),
        pytest.param("DELETE", DEMO_PATH, False, 'W/"7", W/"1"', 204, ["2", "1"], id="delete-list"),
        pytest.param("DELETE", DEMO_PATH, False, "junk", 412, ["1"], id="delete-junk"),
        pytest.param("DELETE", DEMO_PATH, False, 'W/"2"', 412, ["1"], id="delete-stale"),
        pytest.param("DELETE", DEMO_PATH, True, None, 204, ["2", "1"], id="delete-deleted"),
        pytest.param("DELETE", DEMO_PATH, True, "*", 412, ["2", "1"], id="delete-deleted-star"),
        pytest.param("DELETE", "/ValueSet/never-there", False, None, 404, None, id="never-there"),
        # PUT: before, If-Match: * was a 412
        pytest.param("PUT", DEMO_PATH, False, "*", 200, ["2", "1"], id="put-star"),
        pytest.param("PUT", DEMO_PATH, False, 'W/"7", W/"1"', 200, ["2", "1"], id="put-list"),
        pytest.param("PUT", DEMO_PATH, False, "junk", 412, ["1"], id="put-junk"),
        pytest.param("PUT", DEMO_PATH, True, "*", 412, ["2", "1"], id="put-deleted-star"),
        pytest.param("PUT", "/ValueSet/never-there", False, "*", 412, None, id="put-new-star"),
    ],
)
def test_if_match_and_delete(
    writer: tuple[ServerHandle, httpx.Client],
    method: str,
    path: str,
    deleted_first: bool,
    if_match: str | None,
    status: int,
    versions: list[str] | None,
) -> None:
    """If-Match on PUT and DELETE (``*`` = any current version, a list of ETags), and a
    DELETE of a deleted resource (200/204 and no new version, R4 http.html#delete). A
    refused write (412, 404) changes nothing."""
    _, http = writer
    if deleted_first:
        assert http.delete(path).status_code == 204
    before = http.get(path)
    headers = {} if if_match is None else {"If-Match": if_match}
    if method == "PUT":
        body = {**http.get(DEMO_PATH).json(), "id": path.rsplit("/", 1)[1], "title": "changed"}
        if deleted_first:
            body = {"resourceType": "ValueSet", "id": "workbench-demo-all", "status": "draft"}
        response = send(http, "PUT", path, body, **headers)
    else:
        response = http.request("DELETE", path, headers=headers)
    assert response.status_code == status, response.text
    if status == 412:
        assert_outcome(response, 412, "conflict", "does not match the current version")
    if status == 404:
        assert_outcome(response, 404, "not-found", "not found")
    if status >= 400:  # refused: the resource and its history as they were
        after = http.get(path)
        assert (after.status_code, after.content) == (before.status_code, before.content)
    history = http.get(f"{path}/_history")
    if versions is None:
        assert history.status_code == 404
    else:
        found = [e["response"]["etag"] for e in history.json()["entry"]]
        assert found == [f'W/"{v}"' for v in versions]


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"If-None-Match": 'W/"1"'}, 304),
        ({"If-None-Match": '"1"'}, 304),
        ({"If-None-Match": "*"}, 304),
        ({"If-None-Match": 'W/"7", W/"1"'}, 304),
        ({"If-None-Match": 'W/"2"'}, 200),
        ({"If-Modified-Since": "Sun, 06 Nov 2044 08:49:37 GMT"}, 304),
        ({"If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"}, 200),
        ({"If-Modified-Since": "not a date"}, 200),
        # If-None-Match decides when both are given (RFC 9110 13.1.3)
        ({"If-None-Match": 'W/"2"', "If-Modified-Since": "Sun, 06 Nov 2044 08:49:37 GMT"}, 200),
    ],
)
def test_conditional_read(
    writer: tuple[ServerHandle, httpx.Client], headers: dict[str, str], status: int
) -> None:
    """Before: If-None-Match and If-Modified-Since were ignored (always 200 with a body)."""
    _, http = writer
    created = send(http, "POST", "/ValueSet", new_vs()).json()
    answer = http.get(f"/ValueSet/{created['id']}", headers=headers)
    assert answer.status_code == status
    assert answer.headers["etag"] == 'W/"1"'
    if status == 304:
        assert answer.content == b""
    else:
        assert answer.json() == created


@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_prefer_return(writer: tuple[ServerHandle, httpx.Client], method: str) -> None:
    """Before: Prefer: return= was ignored."""
    handle, http = writer
    path = "/ValueSet" if method == "POST" else "/ValueSet/prefer-test"
    body = new_vs(id="prefer-test") if method == "PUT" else new_vs()
    minimal = send(http, method, path, body, Prefer="return=minimal")
    assert minimal.status_code == 201
    assert minimal.content == b""
    location = minimal.headers["location"]
    assert location.startswith(f"{handle.url}/ValueSet/")
    assert minimal.headers["etag"] == 'W/"1"'
    stored = http.get(location).json()
    rid = stored["id"]
    outcome = send(
        http, "PUT", f"/ValueSet/{rid}", {**stored, "title": "2"}, Prefer="return=OperationOutcome"
    )
    assert outcome.status_code == 200
    issue = outcome.json()["issue"][0]
    assert outcome.json()["resourceType"] == "OperationOutcome"
    assert (issue["severity"], issue["code"]) == ("information", "informational")
    assert issue["details"]["text"] == f"ValueSet/{rid} updated (version 2)"
    assert outcome.headers["etag"] == 'W/"2"'
    full = send(
        http, "PUT", f"/ValueSet/{rid}", {**stored, "title": "3"}, Prefer="return=representation"
    )
    assert full.json()["title"] == "3"


# --- content negotiation, Last-Modified -----------------------------------------------


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        pytest.param("/ValueSet/workbench-demo-all?_format=xml", {}, 406, id="format-xml"),
        pytest.param("/ValueSet?_format=application/fhir+xml", {}, 406, id="format-fhir-xml"),
        pytest.param("/metadata?_format=xml", {}, 406, id="metadata-xml"),
        pytest.param("/ValueSet/workbench-demo-all?_format=ttl", {}, 406, id="format-ttl"),
        pytest.param(
            "/ValueSet/workbench-demo-all", {"Accept": "application/fhir+xml"}, 406, id="accept-xml"
        ),
        pytest.param("/ValueSet/workbench-demo-all", {"Accept": "text/html"}, 406, id="html"),
        pytest.param(
            "/ValueSet/workbench-demo-all?_format=json",
            {"Accept": "application/fhir+xml"},
            200,
            id="format-wins",
        ),
        pytest.param("/ValueSet/workbench-demo-all?_format=json", {}, 200, id="format-json"),
        pytest.param(
            "/ValueSet/workbench-demo-all?_format=application/fhir%2Bjson", {}, 200, id="fhir-json"
        ),
        pytest.param(
            "/ValueSet/workbench-demo-all",
            {"Accept": "application/fhir+xml, application/fhir+json;q=0.5"},
            200,
            id="accept-list",
        ),
        pytest.param("/ValueSet/workbench-demo-all", {"Accept": "*/*"}, 200, id="any"),
        pytest.param(
            "/ValueSet/workbench-demo-all", {"Accept": "application/json"}, 200, id="json"
        ),
        pytest.param(
            "/ValueSet/$expand?url=" + DEMO_ALL + "&_format=xml", {}, 406, id="operation-xml"
        ),
    ],
)
def test_format_negotiation(
    reader: httpx.Client, path: str, headers: dict[str, str], status: int
) -> None:
    """Before: _format=xml returned 200 with JSON."""
    response = reader.get(path, headers=headers)
    if status == 406:
        assert_outcome(response, 406, "not-supported", "JSON only|application/fhir\\+json only")
    else:
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith(FHIR_JSON)


def test_last_modified_is_an_http_date(writer: tuple[ServerHandle, httpx.Client]) -> None:
    """Before: Last-Modified was the FHIR instant itself."""
    _, http = writer
    created = send(http, "POST", "/ValueSet", new_vs())
    for response in (created, http.get(created.headers["location"])):
        header = response.headers["last-modified"]
        assert header.endswith(" GMT")
        when = parsedate_to_datetime(header)
        instant = datetime.fromisoformat(
            response.json()["meta"]["lastUpdated"].replace("Z", "+00:00")
        )
        assert when == instant.replace(microsecond=0)
    shipped_gender = http.get("/ValueSet/administrative-gender")
    assert shipped_gender.headers["last-modified"] == "Thu, 31 Oct 2019 22:29:23 GMT"


# --- OperationDefinition search, operations without a body ----------------------------


def test_operation_definition_search(reader: httpx.Client, read_server: ServerHandle) -> None:
    """Before: GET /OperationDefinition was a 404."""
    everything = reader.get("/OperationDefinition").json()
    assert everything["type"] == "searchset"
    assert {e["resource"]["id"] for e in everything["entry"]} == {
        op.definition.id for op in OPERATIONS
    }
    for entry in everything["entry"]:
        rid = entry["resource"]["id"]
        assert entry["fullUrl"] == f"{read_server.url}/OperationDefinition/{rid}"
        assert reader.get(entry["fullUrl"]).json() == entry["resource"]
    by_code = reader.get("/OperationDefinition", params={"code": "expand"}).json()
    assert [e["resource"]["id"] for e in by_code["entry"]] == ["ValueSet-expand"]
    assert links(by_code)["self"] == f"{read_server.url}/OperationDefinition?code=expand"
    ignored = reader.get("/OperationDefinition", params={"foo": "1", "name": "ValueSet"}).json()
    assert links(ignored)["self"] == f"{read_server.url}/OperationDefinition?name=ValueSet"
    none = reader.get("/OperationDefinition", params={"code": "nothing"}).json()
    assert none["total"] == 0
    assert "entry" not in none


@pytest.mark.parametrize(
    ("path", "query"),
    [
        pytest.param("/CodeSystem/$lookup", {"system": GENDER_CS, "code": "male"}, id="lookup"),
        pytest.param("/ValueSet/workbench-demo-all/$expand", {}, id="instance-expand"),
        pytest.param("/ValueSet/$expand", {"url": DEMO_ALL, "count": "2"}, id="expand"),
        pytest.param(
            "/CodeSystem/$subsumes",
            {"system": DEMO_CS, "codeA": "in-person", "codeB": "office-new"},
            id="subsumes",
        ),
    ],
)
def test_post_without_body_is_like_get(
    reader: httpx.Client, path: str, query: dict[str, str]
) -> None:
    """Before: a POST without a body (what clients send for a call without inputs) was a
    415 or 400."""
    got = reader.get(path, params=query)
    assert got.status_code == 200, got.text
    for headers in ({}, {"Content-Type": FHIR_JSON}, {"Content-Type": "application/json"}):
        posted = reader.post(path, params=query, headers=headers)
        assert posted.status_code == 200, posted.text
        expected, answer = got.json(), posted.json()
        if expected.get("resourceType") == "ValueSet":
            for key in ("identifier", "timestamp"):
                expected["expansion"].pop(key), answer["expansion"].pop(key)
        assert answer == expected


# --- the CapabilityStatement ----------------------------------------------------------


def test_capability_lists_exactly_the_working_search_parameters(reader: httpx.Client) -> None:
    statement = reader.get("/metadata").json()
    rest = statement["rest"][0]
    assert rest["security"]["service"] == [{"text": "Bearer token (RFC 6750)"}]
    strict = {"Prefer": "handling=strict"}
    for resource in rest["resource"]:
        rtype = resource["type"]
        listed = {p["name"]: p["type"] for p in resource.get("searchParam", [])}
        if rtype == "OperationDefinition":
            assert {"code", "url", "name", "_id"} == set(listed)
            continue
        assert listed == {n: p.type for n, p in SEARCH_PARAMETERS[rtype].items()}
        assert {i["code"] for i in resource["interaction"]} >= {"vread", "history-instance"}
        assert resource["conditionalCreate"] is True
        total = reader.get(f"/{rtype}", params={"_summary": "count"}).json()["total"]
        for name in listed:
            # Every listed parameter works (strict handling would refuse an unknown one) ...
            have = reader.get(f"/{rtype}", params={f"{name}:missing": "false"}, headers=strict)
            lack = reader.get(f"/{rtype}", params={f"{name}:missing": "true"}, headers=strict)
            assert have.status_code == lack.status_code == 200, (rtype, name, have.text)
            assert have.json()["total"] + lack.json()["total"] == total, (rtype, name)
        # ... and one that is not listed does not.
        for name in ("date", "jurisdiction", "context"):
            refused = reader.get(f"/{rtype}", params={name: "x"}, headers=strict)
            assert_outcome(refused, 400, "invalid", f"Unknown search parameter '{name}'")
