"""The app under a prefix, over real HTTP on 127.0.0.1: mounted in a user's own FastAPI app
(``outer.mount("/tx", create_app(...))``, next to the user's routes) and behind a proxy that
strips a prefix (uvicorn's ``--root-path``). The token exemptions, the operation fast path,
the links (``self``/``next``/``previous``, ``Location``) and the docs honour the prefix; bad
input gets the same OperationOutcomes under a prefix as at the root."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from http_support import (
    FHIR_JSON,
    GENDER_CS,
    GENDER_VS,
    HOST,
    TOKEN,
    client,
    params,
    serve_app,
    values,
)
from starlette.types import ASGIApp, Receive, Scope, Send

from workbench import Workbench
from workbench.server import create_app

VALUESETS = Path(__file__).resolve().parent.parent / "valuesets"
BASE = "/fhir/R4"
VALIDATE = "/ValueSet/$validate-code"
GENDER_Q = {"url": GENDER_VS, "system": GENDER_CS, "code": "female"}


@dataclass
class Deployment:
    """Where requests go (``direct``) and the FHIR base the links must name (``public``)."""

    name: str
    direct: str
    public: str
    router_hits: list[str]

    def fetchable(self, link: str) -> str:
        """A link as the client would follow it (through the proxy, which strips its
        prefix)."""
        assert link.startswith(self.public), (link, self.public)
        return self.direct + link[len(self.public) :]


def spy_on_router(app: FastAPI, path: str) -> list[str]:
    """Record every request for ``path`` the router gets (the request chain answers an
    operation's exact path itself, so it should get none)."""
    hits: list[str] = []
    inner: ASGIApp = app.chain.router

    async def recorded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].endswith(path):
            hits.append(scope["path"])
        await inner(scope, receive, send)

    app.chain.router = recorded
    return hits


def user_app(inner: FastAPI) -> FastAPI:
    """A user's FastAPI app with routes of its own and the terminology server at /tx."""
    outer = FastAPI()

    @outer.get("/hello")
    def hello() -> dict[str, str]:
        return {"hello": "world"}

    outer.mount("/tx", inner)
    return outer


@pytest.fixture(scope="module")
def shared_wb() -> Workbench:
    wb = Workbench()
    wb.load(VALUESETS, progress=False)
    return wb


@pytest.fixture(scope="module", params=["root", "mounted", "proxied"])
def deployment(request: pytest.FixtureRequest, shared_wb: Workbench) -> Iterator[Deployment]:
    app = create_app(shared_wb, token=TOKEN)
    hits = spy_on_router(app, f"{BASE}{VALIDATE}")
    kind = request.param
    served = user_app(app) if kind == "mounted" else app
    root_path = "/proxy" if kind == "proxied" else ""
    prefix = {"root": "", "mounted": "/tx", "proxied": "/proxy"}[kind]
    direct_prefix = "/tx" if kind == "mounted" else ""
    with serve_app(served, base=direct_prefix + BASE, root_path=root_path) as running:
        origin = f"http://{HOST}:{running.port}"
        yield Deployment(kind, running.url, f"{origin}{prefix}{BASE}", hits)


@pytest.fixture(scope="module")
def http(deployment: Deployment) -> Iterator[httpx.Client]:
    with client(deployment.direct) as c:
        yield c


def test_metadata_needs_no_token_and_names_the_public_base(deployment: Deployment) -> None:
    with client(deployment.direct, token=None) as anonymous:
        caps = anonymous.get("/metadata")
        assert caps.status_code == 200, caps.text
        body = caps.json()
        assert body["implementation"]["url"] == deployment.public
        assert f"{deployment.public}/docs" in body["rest"][0]["documentation"]
        refused = anonymous.get("/ValueSet")
    assert refused.status_code == 401
    assert refused.json()["issue"][0]["code"] == "login"
    if deployment.name == "mounted":  # the user's own route, next to the mounted app
        origin = deployment.direct[: -len("/tx" + BASE)]
        with httpx.Client(trust_env=False, timeout=10.0) as plain:
            assert plain.get(f"{origin}/hello").json() == {"hello": "world"}


def test_validate_code_get_and_post_take_the_fast_path(
    deployment: Deployment, http: httpx.Client
) -> None:
    before = len(deployment.router_hits)
    got = http.get(VALIDATE, params=GENDER_Q)
    assert got.status_code == 200, got.text
    assert values(got.json(), "result") == [True]
    posted = http.post(
        VALIDATE,
        json=params(
            ("url", {"valueUri": GENDER_VS}),
            ("coding", {"valueCoding": {"system": GENDER_CS, "code": "male"}}),
        ),
        headers={"Content-Type": FHIR_JSON},
    )
    assert posted.status_code == 200, posted.text
    assert values(posted.json(), "result") == [True]
    assert deployment.router_hits[before:] == []  # answered by the chain, not the router


def test_expand_and_read(http: httpx.Client) -> None:
    expanded = http.get("/ValueSet/$expand", params={"url": GENDER_VS})
    assert expanded.status_code == 200, expanded.text
    codes = {c["code"] for c in expanded.json()["expansion"]["contains"]}
    assert codes == {"male", "female", "other", "unknown"}
    read = http.get("/ValueSet/administrative-gender")
    assert read.status_code == 200
    assert read.json()["url"] == GENDER_VS
    assert read.headers["etag"].startswith('W/"')


def test_create_and_update_give_locations_with_the_prefix(
    deployment: Deployment, http: httpx.Client
) -> None:
    url = f"http://example.org/fhir/ValueSet/mounted-{deployment.name}"
    vs = {"resourceType": "ValueSet", "url": url, "status": "draft"}
    created = http.post("/ValueSet", json=vs, headers={"Content-Type": FHIR_JSON})
    assert created.status_code == 201, created.text
    rid = created.json()["id"]
    location = created.headers["location"]
    assert location == f"{deployment.public}/ValueSet/{rid}/_history/1"
    assert created.headers["content-location"] == location
    again = http.get(deployment.fetchable(location))
    assert again.status_code == 200
    assert again.json()["url"] == url
    updated = http.put(
        f"/ValueSet/{rid}",
        json={**vs, "id": rid, "status": "active"},
        headers={"Content-Type": FHIR_JSON},
    )
    assert updated.status_code == 200, updated.text
    assert "location" not in updated.headers
    assert updated.headers["content-location"] == f"{deployment.public}/ValueSet/{rid}/_history/2"


def test_search_paging_links_carry_the_prefix(deployment: Deployment, http: httpx.Client) -> None:
    first = http.get("/ValueSet", params={"_count": "3", "status": "active"}).json()
    links = {link["relation"]: link["url"] for link in first["link"]}
    type_url = f"{deployment.public}/ValueSet"
    assert links["self"] == f"{type_url}?status=active&_count=3"
    assert links["next"] == f"{type_url}?status=active&_count=3&_offset=3"
    assert all(e["fullUrl"].startswith(type_url + "/") for e in first["entry"])
    second = http.get(deployment.fetchable(links["next"])).json()
    back = {link["relation"]: link["url"] for link in second["link"]}
    assert back["previous"] == links["self"]
    seen = [e["resource"]["id"] for e in first["entry"] + second["entry"]]
    assert len(set(seen)) == 6
    history = http.get("/ValueSet/_history", params={"_count": "2"}).json()
    assert all(link["url"].startswith(type_url) for link in history["link"])


def test_docs_and_openapi_under_the_prefix(deployment: Deployment) -> None:
    public_path = re.sub(r"^http://[^/]+", "", deployment.public)
    with client(deployment.direct, token=None) as anonymous:
        document = anonymous.get("/openapi.json")
        assert document.status_code == 200, document.text
        assert document.json()["servers"] == [{"url": public_path, "description": "FHIR base"}]
        page = anonymous.get("/docs")
        assert page.status_code == 200
        assert f"url: '{public_path}/openapi.json'" in page.text
        assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert len(assets) == 3, assets
        for asset in assets:
            assert asset.startswith(f"{public_path}/docs/assets/"), asset
            public_url = deployment.public + asset[len(public_path) :]
            fetched = anonymous.get(deployment.fetchable(public_url))
            assert fetched.status_code == 200, asset


def test_the_user_app_keeps_its_own_openapi_and_docs(shared_wb: Workbench) -> None:
    """Mounted in a user's FastAPI app, ours leaves the user's OpenAPI document and docs
    page to the user's routes (a mount is not described there), while our own document is
    under the mount point and our operations answer through it."""
    outer = user_app(create_app(shared_wb, token=TOKEN))
    assert sorted(outer.openapi()["paths"]) == ["/hello"]
    with serve_app(outer, base="") as running, client(running.url, token=None) as http:
        theirs = http.get("/openapi.json")
        assert theirs.status_code == 200
        assert sorted(theirs.json()["paths"]) == ["/hello"]
        assert http.get("/docs").status_code == 200
        assert http.get("/hello").json() == {"hello": "world"}
        ours = http.get(f"/tx{BASE}/openapi.json")
        assert ours.status_code == 200
        assert f"{BASE}{VALIDATE}" not in theirs.json()["paths"]
        assert VALIDATE in ours.json()["paths"]
        refused = http.get(f"/tx{BASE}{VALIDATE}", params=GENDER_Q)
        assert refused.status_code == 401  # the token rule holds through the mount
        answered = http.get(
            f"/tx{BASE}{VALIDATE}", params=GENDER_Q, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert answered.status_code == 200, answered.text
        assert values(answered.json(), "result") == [True]


# --- bad input: the same OperationOutcome under a prefix as at the root ------------------

Call = Callable[[httpx.Client], httpx.Response]
XML = {"Content-Type": "application/fhir+xml"}
BAD_INPUT: list[Any] = [
    pytest.param(lambda h: h.get("/Nope/x/y/z"), 404, "not-found", id="unknown-route"),
    pytest.param(lambda h: h.get("/$nope"), 404, "not-found", id="unknown-operation"),
    pytest.param(lambda h: h.get("/ValueSet/$nope"), 404, "not-found", id="unknown-type-op"),
    pytest.param(lambda h: h.get("/$lookup"), 405, "not-supported", id="operation-level"),
    pytest.param(
        lambda h: h.patch("/ValueSet/administrative-gender", json={}),
        405,
        "not-supported",
        id="PATCH-resource",
    ),
    pytest.param(lambda h: h.post("/metadata", json={}), 405, "not-supported", id="POST-metadata"),
    pytest.param(lambda h: h.delete(VALIDATE), 405, "not-supported", id="DELETE-operation"),
    pytest.param(lambda h: h.put(VALIDATE, json={}), 405, "not-supported", id="PUT-operation"),
    pytest.param(
        lambda h: h.post(VALIDATE, content=b"<Parameters/>", headers=XML),
        415,
        "not-supported",
        id="XML-to-operation",
    ),
    pytest.param(
        lambda h: h.post("/ValueSet", content=b"<ValueSet/>", headers=XML),
        415,
        "not-supported",
        id="XML-to-create",
    ),
    pytest.param(
        lambda h: h.get(VALIDATE, params=GENDER_Q, headers={"Accept": "application/fhir+xml"}),
        406,
        "not-supported",
        id="Accept-XML",
    ),
    pytest.param(
        lambda h: h.get("/ValueSet", params={"_format": "xml"}), 406, "not-supported", id="_format"
    ),
    pytest.param(
        lambda h: h.get("/ValueSet", headers={"Authorization": "Bearer wrong"}),
        401,
        "login",
        id="wrong-token",
    ),
    pytest.param(
        lambda h: h.post(VALIDATE, content=b"{x", headers={"Content-Type": FHIR_JSON}),
        400,
        "structure",
        id="malformed-json",
    ),
    pytest.param(lambda h: h.get("/docs/assets/nope.js"), 404, "not-found", id="missing-asset"),
    pytest.param(
        lambda h: h.post("/docs/assets/x", json={}), 405, "not-supported", id="POST-asset"
    ),
]


@pytest.mark.parametrize(("send", "status", "code"), BAD_INPUT)
def test_bad_input_gives_the_same_outcome_under_a_prefix(
    http: httpx.Client, send: Call, status: int, code: str
) -> None:
    response = send(http)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(FHIR_JSON)
    body = response.json()
    assert body["resourceType"] == "OperationOutcome"
    assert body["issue"][0]["code"] == code
    assert "detail" not in body


def test_outside_the_fhir_base_is_an_outcome_too(deployment: Deployment) -> None:
    """A path of the app outside the FHIR base (under the mount point) is the app's 404
    OperationOutcome."""
    app_root = deployment.direct[: -len(BASE)]
    with client(app_root) as http:
        response = http.get("/nothing/here")
    assert response.status_code == 404
    assert response.json()["issue"][0]["code"] == "not-found"


def test_middleware_added_later_sees_the_operation_calls(shared_wb: Workbench) -> None:
    """Middleware a user adds wraps the request chain: it sees the operation calls too."""
    app = create_app(shared_wb, token=TOKEN)

    class Stamp:
        def __init__(self, inner: ASGIApp) -> None:
            self.inner = inner

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            async def stamped(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    message["headers"] = [*message["headers"], (b"x-stamp", b"1")]
                await send(message)

            await self.inner(scope, receive, stamped)

    app.add_middleware(Stamp)
    with serve_app(app) as running, client(running.url) as http:
        got = http.get("/ValueSet/$validate-code", params=GENDER_Q)
    assert got.status_code == 200, got.text
    assert got.headers["x-stamp"] == "1"
