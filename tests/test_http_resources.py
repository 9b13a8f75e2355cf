"""Resources over real HTTP (127.0.0.1 only): read, create, update, delete, search; If-Match,
conflicts and invalid bodies that change nothing; lossless round trips; persistence in a data
folder; data shared with the Python Workbench; two servers; port release; authentication.
"""

from __future__ import annotations

import decimal
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest
from http_support import (
    DEMO_ALL,
    DEMO_CS,
    FHIR_JSON,
    GENDER_CS,
    GENDER_VS,
    HOST,
    TOKEN,
    assert_outcome,
    client,
    exactly,
    serve_app,
    stored_versions,
)

from workbench import Workbench
from workbench.errors import ResourceNotFoundError, ValueSetNotFoundError
from workbench.server import create_app
from workbench.server.embedded import ServerHandle

ROOT = Path(__file__).resolve().parent.parent
VALUESETS = ROOT / "valuesets"
NEW_URL = "http://example.org/fhir/ValueSet/http-test"


def shipped(rtype: str) -> list[dict[str, Any]]:
    """The shipped resources of one type, read straight from the files."""
    found = []
    for path in sorted(VALUESETS.rglob("*.json")):
        data = json.loads(path.read_text())
        if data.get("resourceType") == rtype:
            found.append(data)
    return found


def new_valueset(**changes: Any) -> dict[str, Any]:
    """A small valid ValueSet (over the demo code system) with unknown content kept."""
    vs: dict[str, Any] = {
        "resourceType": "ValueSet",
        "url": NEW_URL,
        "version": "1",
        "name": "HttpTest",
        "title": "HTTP test value set",
        "status": "draft",
        "compose": {"include": [{"system": DEMO_CS, "concept": [{"code": "video"}]}]},
    }
    vs.update(changes)
    return vs


def send_json(http: httpx.Client, method: str, path: str, body: Any, **headers: str) -> Any:
    return http.request(
        method,
        path,
        content=json.dumps(body).encode(),
        headers={"Content-Type": FHIR_JSON, **headers},
    )


def resource_ok(response: httpx.Response, status: int, version: str) -> dict[str, Any]:
    """A resource response: status, FHIR JSON, meta.versionId and the matching weak ETag."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(FHIR_JSON)
    body: dict[str, Any] = response.json()
    assert body["meta"]["versionId"] == version
    assert response.headers["etag"] == f'W/"{version}"'
    return body


def without_meta(resource: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in resource.items() if k != "meta"}


@pytest.fixture(scope="module")
def read_wb() -> Workbench:
    """A module-private Workbench for the read-only server (so a bug cannot touch others)."""
    fresh = Workbench()
    fresh.load(VALUESETS, progress=False)
    return fresh


@pytest.fixture(scope="module")
def read_server(read_wb: Workbench) -> Iterator[ServerHandle]:
    with read_wb.serve(port=0, token=TOKEN) as handle:
        yield handle


@pytest.fixture(scope="module")
def reader(read_server: ServerHandle) -> Iterator[httpx.Client]:
    with client(read_server.url) as c:
        yield c


@pytest.fixture
def served(wb: Workbench) -> Iterator[tuple[Workbench, ServerHandle, httpx.Client]]:
    """A fresh Workbench (default content) with its own server and client, free to change."""
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as http:
        yield wb, handle, http


# --- read -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rtype", "rid", "file"),
    [
        pytest.param("ValueSet", "workbench-demo-all", "demo/ValueSet-workbench-demo-all.json"),
        pytest.param("CodeSystem", "workbench-demo", "demo/CodeSystem-workbench-demo.json"),
        pytest.param(
            "ValueSet", "administrative-gender", "r4-core/ValueSet-administrative-gender.json"
        ),
    ],
)
def test_read(reader: httpx.Client, rtype: str, rid: str, file: str) -> None:
    """A shipped resource reads back as loaded, with meta.versionId 1 and its ETag."""
    body = resource_ok(reader.get(f"/{rtype}/{rid}"), 200, "1")
    on_disk = json.loads((VALUESETS / file).read_text())
    assert without_meta(body) == without_meta(on_disk)
    assert {k: v for k, v in body["meta"].items() if k != "versionId"} == on_disk.get("meta", {})


@pytest.mark.parametrize(
    ("path", "status", "code", "text"),
    [
        pytest.param(
            "/ValueSet/missing", 404, "not-found", exactly("ValueSet/missing not found"), id="id"
        ),
        pytest.param(
            "/CodeSystem/missing",
            404,
            "not-found",
            exactly("CodeSystem/missing not found"),
            id="cs-id",
        ),
        pytest.param(
            "/Patient/1", 404, "not-found", r"Resource type Patient is not served", id="type"
        ),
        pytest.param(
            "/Patient", 404, "not-found", r"Resource type Patient is not served", id="search"
        ),
        pytest.param(
            "/ValueSet?_count=x", 400, "invalid", r"_count must be a whole number", id="bad-count"
        ),
    ],
)
def test_read_errors(reader: httpx.Client, path: str, status: int, code: str, text: str) -> None:
    assert_outcome(reader.get(path), status, code, text)


# --- create, update, If-Match, conflicts ----------------------------------------------


def test_create(served: tuple[Workbench, ServerHandle, httpx.Client]) -> None:
    wb, handle, http = served
    response = send_json(http, "POST", "/ValueSet", new_valueset(id="client-chosen"))
    created = resource_ok(response, 201, "1")
    rid = created["id"]
    assert rid and rid != "client-chosen"  # the server assigns the id
    location = urljoin(str(response.url), response.headers["location"])
    assert location == f"{handle.url}/ValueSet/{rid}/_history/1"
    assert created["meta"]["lastUpdated"]
    assert without_meta(created) == {**new_valueset(), "id": rid}
    read = resource_ok(http.get(f"/ValueSet/{rid}"), 200, "1")
    assert read == created
    assert wb.registry.read("ValueSet", rid)["url"] == NEW_URL


def test_update_increments_version(served: tuple[Workbench, ServerHandle, httpx.Client]) -> None:
    _, _, http = served
    path = "/ValueSet/workbench-demo-all"
    current = http.get(path).json()
    for version in ("2", "3"):
        current = {**current, "title": f"Title {version}"}
        updated = resource_ok(send_json(http, "PUT", path, current), 200, version)
        assert updated["title"] == f"Title {version}"
        assert "location" not in updated
    assert resource_ok(http.get(path), 200, "3")["title"] == "Title 3"


def test_put_new_id_creates(served: tuple[Workbench, ServerHandle, httpx.Client]) -> None:
    wb, handle, http = served
    response = send_json(http, "PUT", "/ValueSet/http-test", new_valueset(id="http-test"))
    created = resource_ok(response, 201, "1")
    location = urljoin(str(response.url), response.headers["location"])
    assert location == f"{handle.url}/ValueSet/http-test/_history/1"
    assert created["id"] == "http-test"
    assert NEW_URL in {r.get("url") for r in wb.registry.all("ValueSet")}


def test_if_match(served: tuple[Workbench, ServerHandle, httpx.Client]) -> None:
    _, _, http = served
    path = "/ValueSet/workbench-demo-all"
    before = http.get(path).json()
    changed = {**before, "title": "Changed"}
    stale = send_json(http, "PUT", path, changed, **{"If-Match": 'W/"7"'})
    assert_outcome(stale, 412, "conflict", r'If-Match W/"7" does not match .*W/"1"')
    assert http.get(path).json() == before  # nothing changed
    fresh = send_json(http, "PUT", path, changed, **{"If-Match": 'W/"1"'})
    assert resource_ok(fresh, 200, "2")["title"] == "Changed"
    again = send_json(http, "PUT", path, {**changed, "title": "Again"}, **{"If-Match": 'W/"1"'})
    assert_outcome(again, 412, "conflict", r'does not match the current version \(W/"2"\)')
    assert http.get(path).json()["title"] == "Changed"
    absent = send_json(
        http, "PUT", "/ValueSet/http-test", new_valueset(id="http-test"), **{"If-Match": 'W/"1"'}
    )
    assert_outcome(absent, 412, "conflict", r"no resource")
    assert http.get("/ValueSet/http-test").status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code", "text"),
    [
        pytest.param(
            "PUT",
            "/ValueSet/workbench-demo-all",
            {**new_valueset(), "id": "other"},
            400,
            "required",
            exactly("The body's id ('other') does not match the URL's id ('workbench-demo-all')"),
            id="id-mismatch",
        ),
        pytest.param(
            "PUT",
            "/ValueSet/workbench-demo-all",
            new_valueset(),
            400,
            "required",
            r"The body's id \(None\) does not match",
            id="id-missing",
        ),
        pytest.param(
            "PUT",
            "/ValueSet/workbench-demo-all",
            {**new_valueset(id="workbench-demo-all"), "compose": {"include": [{}]}},
            422,
            "invariant",
            r"compose.include\[0\] breaks vsd-1",
            id="vsd-1-update",
        ),
        pytest.param(
            "POST",
            "/ValueSet",
            {**new_valueset(), "compose": {"include": [{"concept": [{"code": "x"}]}]}},
            422,
            "invariant",
            r"breaks vsd-1",
            id="vsd-1-create",
        ),
        pytest.param(
            "POST",
            "/ValueSet",
            {**new_valueset(), "url": DEMO_ALL, "version": "1.0.0"},
            409,
            "duplicate",
            exactly(f"ValueSet {DEMO_ALL}|1.0.0 already exists as ValueSet/workbench-demo-all"),
            id="duplicate-create",
        ),
        pytest.param(
            "PUT",
            "/ValueSet/http-test",
            {**new_valueset(id="http-test"), "url": DEMO_ALL, "version": "1.0.0"},
            409,
            "duplicate",
            r"already exists as ValueSet/workbench-demo-all",
            id="duplicate-put",
        ),
        pytest.param(
            "POST",
            "/ValueSet",
            {"resourceType": "CodeSystem", "url": "http://x", "content": "complete"},
            400,
            "invalid",
            r"The body is a 'CodeSystem', but this endpoint takes a ValueSet",
            id="wrong-type",
        ),
        pytest.param(
            "POST",
            "/ValueSet",
            [new_valueset()],
            400,
            "invalid",
            r"must be a ValueSet resource \(a JSON object\)",
            id="not-object",
        ),
        pytest.param(
            "PUT",
            "/ValueSet/bad$id",
            new_valueset(id="bad$id"),
            400,
            "invalid",
            r"'bad\$id' is not a valid FHIR id",
            id="bad-id",
        ),
    ],
)
def test_rejected_write_changes_nothing(
    served: tuple[Workbench, ServerHandle, httpx.Client],
    method: str,
    path: str,
    body: Any,
    status: int,
    code: str,
    text: str,
) -> None:
    wb, _, http = served
    before = http.get("/ValueSet", params={"_count": "1000"}).json()
    assert_outcome(send_json(http, method, path, body), status, code, text)
    assert http.get("/ValueSet", params={"_count": "1000"}).json() == before
    assert wb.registry.read("ValueSet", "workbench-demo-all")["title"] == (
        "Workbench demo: all visit types"
    )
    assert NEW_URL not in {r.get("url") for r in wb.registry.all("ValueSet")}


def test_delete(served: tuple[Workbench, ServerHandle, httpx.Client]) -> None:
    wb, _, http = served
    deleted = http.delete("/ValueSet/workbench-demo-all")
    assert deleted.status_code == 204
    assert deleted.content == b""
    # a read of a deleted resource is 410 Gone (FHIR RESTful API, read); before: 404
    assert_outcome(
        http.get("/ValueSet/workbench-demo-all"),
        410,
        "deleted",
        exactly("ValueSet/workbench-demo-all was deleted (version 2)"),
    )
    # already deleted: no effect, 204 (R4); a resource never there is a 404
    assert http.delete("/ValueSet/workbench-demo-all").status_code == 204
    assert_outcome(http.delete("/ValueSet/never-there"), 404, "not-found", "not found")
    with pytest.raises(ResourceNotFoundError):
        wb.registry.read("ValueSet", "workbench-demo-all")
    answer = http.get("/ValueSet/$expand", params={"url": DEMO_ALL})
    text = f"A definition for the value Set '{DEMO_ALL}' could not be found"
    assert_outcome(answer, 404, "not-found", exactly(text))  # issue 22, e1
    assert http.get("/ValueSet", params={"url": DEMO_ALL}).json()["total"] == 0


@pytest.mark.parametrize(
    ("method", "path", "text"),
    [
        pytest.param("PATCH", "/ValueSet/workbench-demo-all", "PATCH", id="PATCH-resource"),
        pytest.param("POST", "/ValueSet/workbench-demo-all", "POST", id="POST-resource"),
        pytest.param("DELETE", "/ValueSet", "DELETE", id="DELETE-type"),
        pytest.param("PUT", "/ValueSet", "PUT", id="PUT-type"),
        pytest.param("PATCH", "/CodeSystem/workbench-demo", "PATCH", id="PATCH-codesystem"),
    ],
)
def test_wrong_method_on_resources(
    served: tuple[Workbench, ServerHandle, httpx.Client], method: str, path: str, text: str
) -> None:
    _, _, http = served
    before = http.get("/ValueSet/workbench-demo-all").json()
    response = send_json(http, method, path, {**before, "title": "Patched"})
    assert_outcome(response, 405, "not-supported", rf"Method {text} is not allowed")
    assert http.get("/ValueSet/workbench-demo-all").json() == before


# --- search ---------------------------------------------------------------------------


def _ids(rtype: str, **match: str) -> set[str]:
    return {r["id"] for r in shipped(rtype) if all(r.get(k) == v for k, v in match.items())}


DEMO_VS_IDS = {
    "workbench-demo-all",
    "workbench-demo-bookable",
    "workbench-demo-in-person",
    "workbench-demo-remote-live",
}


@pytest.mark.parametrize(
    ("rtype", "query", "expected"),
    [
        pytest.param("ValueSet", {"url": DEMO_ALL}, {"workbench-demo-all"}, id="url"),
        pytest.param(
            "ValueSet",
            {"url": f"{DEMO_ALL},{GENDER_VS}"},
            {"workbench-demo-all", "administrative-gender"},
            id="url-or",
        ),
        pytest.param("ValueSet", {"url": "http://nope"}, set(), id="url-none"),
        pytest.param("ValueSet", {"version": "1.0.0"}, DEMO_VS_IDS, id="version"),
        pytest.param(
            "ValueSet", {"url": DEMO_ALL, "version": "1.0.0"}, {"workbench-demo-all"}, id="url+ver"
        ),
        pytest.param("ValueSet", {"url": DEMO_ALL, "version": "9"}, set(), id="url+wrong-ver"),
        pytest.param("ValueSet", {"name": "WorkbenchDemo"}, DEMO_VS_IDS, id="name-prefix"),
        pytest.param(
            "ValueSet", {"name": "workbenchdemoall"}, {"workbench-demo-all"}, id="name-nocase"
        ),
        pytest.param(
            "ValueSet",
            {"title": "Workbench demo: live"},
            {"workbench-demo-remote-live"},
            id="title",
        ),
        pytest.param(
            "ValueSet", {"status": "active"}, _ids("ValueSet", status="active"), id="status"
        ),
        pytest.param("ValueSet", {"status": "draft"}, _ids("ValueSet", status="draft"), id="draft"),
        pytest.param(
            "ValueSet", {"_id": "administrative-gender"}, {"administrative-gender"}, id="_id"
        ),
        pytest.param("ValueSet", {}, _ids("ValueSet"), id="all-valuesets"),
        pytest.param("CodeSystem", {"url": DEMO_CS}, {"workbench-demo"}, id="cs-url"),
        pytest.param("CodeSystem", {"name": "WorkbenchDemo"}, {"workbench-demo"}, id="cs-name"),
        pytest.param(
            "CodeSystem", {"url": GENDER_CS, "status": "active"}, {"administrative-gender"}, id="cs"
        ),
        pytest.param("CodeSystem", {}, _ids("CodeSystem"), id="all-codesystems"),
    ],
)
def test_search(
    reader: httpx.Client, rtype: str, query: dict[str, str], expected: set[str]
) -> None:
    response = reader.get(f"/{rtype}", params=query)
    assert response.status_code == 200, response.text
    bundle = response.json()
    assert bundle["resourceType"] == "Bundle"
    assert bundle["type"] == "searchset"
    assert bundle["total"] == len(expected)
    entries = bundle.get("entry", [])
    assert ("entry" in bundle) == bool(expected)  # no empty entry list (bdl-… / search.html)
    assert {e["resource"]["id"] for e in entries} == expected
    for entry in entries:
        resource = entry["resource"]
        assert resource["resourceType"] == rtype
        root = str(reader.base_url).rstrip("/")
        assert entry["fullUrl"] == f"{root}/{rtype}/{resource['id']}"
        assert entry["search"]["mode"] == "match"
        assert resource["meta"]["versionId"] == "1"


@pytest.mark.parametrize(
    ("prefer", "status"),
    [
        pytest.param(None, 200, id="lenient-by-default"),
        pytest.param("handling=lenient", 200, id="lenient"),
        pytest.param("handling=strict", 400, id="strict"),
    ],
)
def test_unknown_search_parameters(reader: httpx.Client, prefer: str | None, status: int) -> None:
    headers = {"Prefer": prefer} if prefer else {}
    response = reader.get("/ValueSet?foo=1&_totalMethod=accurate", headers=headers)
    if status == 400:
        assert_outcome(response, 400, "invalid", r"Unknown search parameter 'foo'")
    else:
        assert response.status_code == 200
        assert response.json()["total"] == len(reader.get("/ValueSet").json()["entry"])


def test_search_count_pages_but_total_counts_all(reader: httpx.Client) -> None:
    bundle = reader.get("/ValueSet", params={"status": "active", "_count": "2"}).json()
    assert bundle["total"] == len(_ids("ValueSet", status="active")) > 2
    assert len(bundle["entry"]) == 2


# --- lossless round trip --------------------------------------------------------------

RICH = new_valueset(
    id="http-test",
    extension=[
        {"url": "http://example.org/ext/simple", "valueBoolean": True},
        {
            "url": "http://example.org/ext/complex",
            "extension": [
                {"url": "part", "valueString": "Präsenz 🩺"},
                {"url": "number", "valueInteger": 2147483647},
                {"url": "big", "valueDecimal": 12345678901234567890},
                {"url": "ratio", "valueDecimal": 0.25},
            ],
        },
    ],
    modifierExtension=[{"url": "http://example.org/ext/mod", "valueCode": "x"}],
    _status={"extension": [{"url": "http://example.org/ext/why", "valueString": "because"}]},
    futureElement={"nested": [{"deep": ["a", "b"]}, {"flag": False}], "empty": {}},
    contained=[{"resourceType": "Basic", "id": "b1", "code": {"text": "kept"}}],
    compose={
        "lockedDate": "2024-02-29",
        "include": [
            {
                "system": DEMO_CS,
                "concept": [{"code": "video", "_display": {"extension": []}}],
                "unknownInInclude": 1,
            }
        ],
    },
)


def test_lossless_round_trip(served: tuple[Workbench, ServerHandle, httpx.Client]) -> None:
    wb, _, http = served
    put = resource_ok(send_json(http, "PUT", "/ValueSet/http-test", RICH), 201, "1")
    assert without_meta(put) == RICH
    got = resource_ok(http.get("/ValueSet/http-test"), 200, "1")
    assert without_meta(got) == RICH
    assert without_meta(wb.registry.read("ValueSet", "http-test")) == RICH
    # A ValueSet loaded in Python with unknown content is served unchanged as well.
    loaded = {**RICH, "id": "loaded-rich", "url": NEW_URL + "-loaded"}
    wb.load(loaded)
    assert without_meta(http.get("/ValueSet/loaded-rich").json()) == loaded


def test_lossless_decimal_precision(served: tuple[Workbench, ServerHandle, httpx.Client]) -> None:
    _, _, http = served
    raw = json.dumps(new_valueset(id="http-test")).rstrip("}")
    raw += ', "extension": [{"url": "http://example.org/ext/price", "valueDecimal": 1.50}]}'
    put = http.put("/ValueSet/http-test", content=raw.encode(), headers={"Content-Type": FHIR_JSON})
    assert put.status_code == 201, put.text
    got = json.loads(http.get("/ValueSet/http-test").text, parse_float=decimal.Decimal)
    assert str(got["extension"][0]["valueDecimal"]) == "1.50"


# --- data shared with Python ----------------------------------------------------------


def test_python_load_is_visible_over_http(
    served: tuple[Workbench, ServerHandle, httpx.Client],
) -> None:
    wb, _, http = served
    assert http.get("/ValueSet/loaded-later").status_code == 404
    wb.load({**new_valueset(), "id": "loaded-later"})
    assert http.get("/ValueSet/loaded-later").json()["url"] == NEW_URL
    assert http.get("/ValueSet", params={"url": NEW_URL}).json()["total"] == 1
    query = {"url": NEW_URL, "system": DEMO_CS, "code": "video"}
    answer = http.get("/ValueSet/$validate-code", params=query).json()
    assert answer["parameter"][0] == {"name": "result", "valueBoolean": True}


def test_http_writes_are_visible_in_python(
    served: tuple[Workbench, ServerHandle, httpx.Client],
) -> None:
    wb, _, http = served
    with pytest.raises(ValueSetNotFoundError):
        wb.expand(NEW_URL)
    created = send_json(http, "PUT", "/ValueSet/http-test", new_valueset(id="http-test"))
    assert created.status_code == 201
    assert [e.code for e in wb.expand(NEW_URL).entries] == ["video"]
    more = new_valueset(
        id="http-test",
        compose={
            "include": [{"system": DEMO_CS, "concept": [{"code": "video"}, {"code": "phone"}]}]
        },
    )
    assert send_json(http, "PUT", "/ValueSet/http-test", more).status_code == 200
    assert [e.code for e in wb.expand(NEW_URL).entries] == ["video", "phone"]
    assert wb.registry.read("ValueSet", "http-test")["meta"]["versionId"] == "2"
    assert http.delete("/ValueSet/http-test").status_code == 204
    with pytest.raises(ValueSetNotFoundError):
        wb.expand(NEW_URL)


# --- two servers, stopping ------------------------------------------------------------


def test_two_servers_in_one_process(wb: Workbench) -> None:
    other = Workbench()
    other.load(VALUESETS, progress=False)
    with (
        wb.serve(port=0, token="token-one") as one,
        other.serve(port=0, token="token-two") as two,
        wb.serve(port=0, token="token-three") as three,
        client(one.url, "token-one") as http_one,
        client(two.url, "token-two") as http_two,
        client(three.url, "token-three") as http_three,
    ):
        assert len({one.url, two.url, three.url}) == 3
        created = send_json(http_one, "PUT", "/ValueSet/http-test", new_valueset(id="http-test"))
        assert created.status_code == 201
        # Another Workbench does not see it; the same Workbench served twice does.
        assert http_two.get("/ValueSet/http-test").status_code == 404
        assert http_three.get("/ValueSet/http-test").json()["meta"]["versionId"] == "1"
        # Each server has its own token.
        with client(two.url, "token-one") as wrong:
            assert_outcome(wrong.get("/ValueSet"), 401, "login", "not valid")
        both = [http_one.get("/metadata"), http_two.get("/metadata")]
        assert all(r.status_code == 200 for r in both)


def test_stop_releases_port(wb: Workbench) -> None:
    handle = wb.serve(port=0, token=TOKEN)
    port = int(handle.url.split(":")[2].split("/")[0])
    with client(handle.url) as http:
        assert http.get("/ValueSet/workbench-demo-all").status_code == 200
    assert handle.running
    handle.stop()
    assert not handle.running
    with pytest.raises(httpx.ConnectError), client(handle.url) as http:
        http.get("/metadata")
    # Nobody listens on the port any more: it can be bound and listened on again ...
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen()
    # ... and a new server can take it.
    with wb.serve(port=port, token=TOKEN) as again, client(again.url) as http:
        assert again.url == handle.url
        assert http.get("/ValueSet/workbench-demo-all").status_code == 200


# --- persistence ----------------------------------------------------------------------


def test_persistence_across_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = Workbench()
    first.load(VALUESETS, progress=False)
    with first.serve(port=0, token=TOKEN, data_dir=data) as handle, client(handle.url) as http:
        created = send_json(http, "POST", "/ValueSet", RICH)
        kept_id = created.json()["id"]
        gone = send_json(http, "POST", "/ValueSet", new_valueset(url=NEW_URL + "-gone"))
        gone_id = gone.json()["id"]
        updated = send_json(
            http, "PUT", f"/ValueSet/{kept_id}", {**RICH, "id": kept_id, "title": "v2"}
        )
        assert updated.status_code == 200
        put_new = send_json(
            http, "PUT", "/ValueSet/put-new", new_valueset(id="put-new", url=NEW_URL + "-put")
        )
        assert put_new.status_code == 201
        gender = http.get("/ValueSet/administrative-gender").json()
        changed = send_json(
            http, "PUT", "/ValueSet/administrative-gender", {**gender, "title": "Changed"}
        )
        assert changed.status_code == 200
        assert http.delete(f"/ValueSet/{gone_id}").status_code == 204
        assert http.delete("/ValueSet/yesnodontknow").status_code == 204
        assert http.delete("/CodeSystem/v2-0136").status_code == 204
        expected = {
            kept_id: updated.json(),
            "put-new": put_new.json(),
            "administrative-gender": changed.json(),
        }
    assert not handle.running

    second = Workbench()
    second.load(VALUESETS, progress=False)
    with second.serve(port=0, token=TOKEN, data_dir=data) as handle, client(handle.url) as http:
        for rid, body in expected.items():
            assert http.get(f"/ValueSet/{rid}").json() == body
        assert http.get(f"/ValueSet/{kept_id}").json()["futureElement"] == RICH["futureElement"]
        for path in (f"/ValueSet/{gone_id}", "/ValueSet/yesnodontknow", "/CodeSystem/v2-0136"):
            assert_outcome(http.get(path), 410, "deleted", "was deleted")
        assert http.get("/ValueSet", params={"url": NEW_URL + "-gone"}).json()["total"] == 0
        # Python sees the restored state too, and writing goes on from the stored version.
        assert second.registry.read("ValueSet", kept_id)["title"] == "v2"
        assert [e.code for e in second.expand(NEW_URL).entries] == ["video"]
        again = send_json(http, "PUT", f"/ValueSet/{kept_id}", {**expected[kept_id], "title": "v3"})
        assert resource_ok(again, 200, "3")["title"] == "v3"


@pytest.fixture(scope="module")
def persisted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workbench, str, Path]]:
    """A hand-built app with a data folder (already holding one write) and a 4000-byte limit."""
    data = tmp_path_factory.mktemp("persisted") / "data"
    wb = Workbench()
    wb.load(VALUESETS, progress=False)
    app = create_app(wb, token=TOKEN, data_dir=data, max_body=4000)
    with serve_app(app) as running:
        with client(running.url) as http:
            first = send_json(http, "PUT", "/ValueSet/http-test", new_valueset(id="http-test"))
            assert first.status_code == 201
        yield wb, running.url, data


REJECTED_WRITES = [
    pytest.param(
        "PUT",
        "/ValueSet/http-test",
        {**new_valueset(id="http-test"), "compose": {"include": [{}]}},
        None,
        422,
        "invariant",
        id="vsd-1-update",
    ),
    pytest.param(
        "POST",
        "/ValueSet",
        {**new_valueset(url=NEW_URL + "-x"), "compose": {"include": [{}]}},
        None,
        422,
        "invariant",
        id="vsd-1-create",
    ),
    pytest.param("POST", "/ValueSet", new_valueset(), None, 409, "duplicate", id="dup-create"),
    pytest.param(
        "PUT",
        "/ValueSet/workbench-demo-all",
        new_valueset(id="workbench-demo-all"),
        None,
        409,
        "duplicate",
        id="dup-update",
    ),
    pytest.param(
        "PUT",
        "/ValueSet/http-test",
        {**new_valueset(id="http-test"), "title": "Stale"},
        {"If-Match": 'W/"9"'},
        412,
        "conflict",
        id="if-match",
    ),
    pytest.param(
        "PUT", "/ValueSet/http-test", new_valueset(id="other"), None, 400, "required", id="id"
    ),
    pytest.param("PUT", "/ValueSet/http-test", b"{not json", None, 400, "structure", id="json"),
    pytest.param(
        "POST",
        "/ValueSet",
        new_valueset(url=NEW_URL + "-x"),
        {"Content-Type": "text/plain"},
        415,
        "not-supported",
        id="415",
    ),
    pytest.param(
        "PUT",
        "/ValueSet/http-test",
        {**new_valueset(id="http-test"), "description": "x" * 5000},
        None,
        413,
        "too-long",
        id="413",
    ),
    pytest.param("DELETE", "/ValueSet/missing", None, None, 404, "not-found", id="delete-missing"),
    pytest.param(
        "PUT",
        "/Patient/p1",
        {"resourceType": "Patient", "id": "p1"},
        None,
        404,
        "not-found",
        id="other-type",
    ),
    pytest.param(
        "PATCH", "/ValueSet/http-test", {"title": "x"}, None, 405, "not-supported", id="patch"
    ),
]


@pytest.mark.parametrize(("method", "path", "body", "headers", "status", "code"), REJECTED_WRITES)
def test_rejected_write_leaves_data_folder_unchanged(
    persisted: tuple[Workbench, str, Path],
    method: str,
    path: str,
    body: Any,
    headers: dict[str, str] | None,
    status: int,
    code: str,
) -> None:
    wb, url, data = persisted
    files = stored_versions(data)
    assert "ValueSet-http-test/1.json" in files
    with client(url) as http:
        before = http.get("/ValueSet/http-test").json()
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        sent_headers = {"Content-Type": FHIR_JSON, **(headers or {})}
        if body is None:
            response = http.request(method, path)
        else:
            response = http.request(method, path, content=content, headers=sent_headers)
        assert_outcome(response, status, code, ".")
    with client(url) as http:
        assert http.get("/ValueSet/http-test").json() == before
    assert stored_versions(data) == files
    assert wb.registry.read("ValueSet", "http-test") == before
    assert wb.registry.read("ValueSet", "workbench-demo-all")["version"] == "1.0.0"


# --- authentication -------------------------------------------------------------------

GATED = [
    pytest.param("GET", "/ValueSet", None, id="search"),
    pytest.param("GET", "/ValueSet/workbench-demo-all", None, id="read"),
    pytest.param("POST", "/ValueSet", new_valueset(), id="create"),
    pytest.param("PUT", "/ValueSet/http-test", new_valueset(id="http-test"), id="update"),
    pytest.param("DELETE", "/ValueSet/workbench-demo-all", None, id="delete"),
    pytest.param("GET", "/CodeSystem/workbench-demo", None, id="read-cs"),
    pytest.param(
        "GET",
        f"/ValueSet/$validate-code?url={GENDER_VS}&system={GENDER_CS}&code=female",
        None,
        id="validate-code",
    ),
    pytest.param("POST", "/ValueSet/$expand", {"resourceType": "Parameters"}, id="expand"),
    pytest.param("GET", f"/CodeSystem/$lookup?system={DEMO_CS}&code=office", None, id="lookup"),
    pytest.param("GET", "/OperationDefinition/ValueSet-validate-code", None, id="definition"),
    pytest.param("POST", "/metadata", {"resourceType": "Parameters"}, id="POST-metadata"),
    pytest.param("GET", "/no/such/path", None, id="unknown-path"),
]
CREDENTIALS = [
    pytest.param(None, "A bearer token is required", id="none"),
    pytest.param(f"Bearer {TOKEN}x", "The bearer token is not valid", id="wrong-token"),
    pytest.param("Bearer", "The bearer token is not valid", id="scheme-only"),
    pytest.param(f"Basic {TOKEN}", "The bearer token is not valid", id="basic"),
    pytest.param(TOKEN, "The bearer token is not valid", id="no-scheme"),
]


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_auth_scheme_is_case_insensitive(read_server: ServerHandle, scheme: str) -> None:
    with client(read_server.url, token=None) as anonymous:
        response = anonymous.get("/ValueSet", headers={"Authorization": f"{scheme} {TOKEN}"})
    assert response.status_code == 200
    assert response.json()["resourceType"] == "Bundle"


@pytest.mark.parametrize(("authorization", "text"), CREDENTIALS)
@pytest.mark.parametrize(("method", "path", "body"), GATED)
def test_auth_required(
    read_server: ServerHandle,
    read_wb: Workbench,
    method: str,
    path: str,
    body: Any,
    authorization: str | None,
    text: str,
) -> None:
    headers = {"Content-Type": FHIR_JSON}
    if authorization is not None:
        headers["Authorization"] = authorization
    with client(read_server.url, token=None) as anonymous:
        content = None if body is None else json.dumps(body).encode()
        response = anonymous.request(method, path, content=content, headers=headers)
    assert_outcome(response, 401, "login", exactly(text))
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert read_wb.registry.read("ValueSet", "workbench-demo-all")  # nothing was deleted


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_metadata_is_open(read_server: ServerHandle, method: str) -> None:
    with client(read_server.url, token=None) as anonymous:
        response = anonymous.request(method, "/metadata")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(FHIR_JSON)
    if method == "GET":
        assert response.json()["resourceType"] == "CapabilityStatement"


def test_token_is_accepted(reader: httpx.Client) -> None:
    assert reader.get("/ValueSet/workbench-demo-all").status_code == 200
