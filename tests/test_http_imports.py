"""Imports (large writes) and long scans stay off the server's event loop and interpreter
lock: a write body from ``routes.LARGE_BODY`` on is parsed and checked in a forked child, with
the same answers as in a thread (a table of writes, run both ways, over real HTTP on
127.0.0.1); the forked children form a bounded pool."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from http_support import DEMO_CS, FHIR_JSON, TOKEN, assert_outcome, client

from workbench import Workbench
from workbench.server import forked, routes

pytestmark = pytest.mark.skipif(not forked.available(), reason="forked children need Linux")

BIG = 3000  # concepts: a body of about 150 KB


def big_cs(rid: str, concepts: int = BIG, **changes: Any) -> dict[str, Any]:
    body = {
        "resourceType": "CodeSystem",
        "id": rid,
        "url": f"http://example.org/fhir/CodeSystem/{rid}",
        "status": "draft",
        "content": "complete",
        "concept": [{"code": f"C{i}", "display": f"Concept {i}"} for i in range(concepts)],
    }
    return {**body, **changes}


def cyclic() -> dict[str, Any]:
    cs = big_cs("imp-cycle", 10)
    cs["concept"][0]["property"] = [{"code": "parent", "valueCode": "C1"}]
    cs["concept"][1]["property"] = [{"code": "parent", "valueCode": "C0"}]
    return cs


WRITES = [
    pytest.param("PUT", "/CodeSystem/imp-a", big_cs("imp-a"), 201, None, None, id="put-create"),
    pytest.param("POST", "/CodeSystem", big_cs("imp-b"), 201, None, None, id="post-create"),
    pytest.param(
        "PUT",
        "/CodeSystem/imp-c",
        big_cs("imp-c", concept=[{"code": "x", "display": 7}]),
        400,
        "structure",
        r"CodeSystem\.concept\[0\]\.display",
        id="structure",
    ),
    pytest.param(
        "PUT", "/CodeSystem/imp-d", big_cs("other"), 400, "required", "does not match", id="id"
    ),
    pytest.param(
        "PUT", "/CodeSystem/imp-cycle", cyclic(), 422, "invariant", "has a cycle", id="cycle"
    ),
    pytest.param(
        "PUT", "/ValueSet/imp-e", big_cs("imp-e"), 400, "invalid", "takes a ValueSet", id="type"
    ),
    pytest.param("PUT", "/CodeSystem/imp-f", b"{not json", 400, "structure", "not valid JSON"),
]


@pytest.fixture(params=["child", "thread"])
def served(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[httpx.Client, list[int]]]:
    """A server whose writes are all checked in a child (or all in a thread); the list
    counts the children forked for writes."""
    monkeypatch.setattr(routes, "LARGE_BODY", 1 if request.param == "child" else 10**9)
    children: list[int] = []
    real = forked.run_forked

    def counted(call: Callable[[], Any], *args: Any, **kwargs: Any) -> Any:
        children.append(1)
        return real(call, *args, **kwargs)

    monkeypatch.setattr(forked, "run_forked", counted)
    wb = Workbench()
    wb.load(
        {"resourceType": "CodeSystem", "url": DEMO_CS, "status": "active", "content": "complete"}
    )
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as http:
        yield http, children


@pytest.mark.parametrize(("method", "path", "body", "status", "code", "text"), WRITES)
def test_a_write_gets_the_same_answer_in_a_child_as_in_a_thread(
    served: tuple[httpx.Client, list[int]],
    method: str,
    path: str,
    body: Any,
    status: int,
    code: str | None,
    text: str | None,
) -> None:
    http, children = served
    content = body if isinstance(body, bytes) else httpx.Request("POST", "/", json=body).content
    before = http.get(path.rsplit("/", 1)[0] if method == "POST" else path).status_code
    response = http.request(method, path, content=content, headers={"Content-Type": FHIR_JSON})
    if code is None:
        assert response.status_code == status, response.text
        stored = response.json()
        assert http.get(f"/CodeSystem/{stored['id']}").json() == stored
        assert len(stored["concept"]) == BIG
    else:
        assert_outcome(response, status, code, text or "")
        after = http.get(path.rsplit("/", 1)[0] if method == "POST" else path).status_code
        assert after == before  # a refused write stores nothing
    assert len(children) == (1 if routes.LARGE_BODY == 1 else 0)


def test_the_children_form_a_bounded_pool() -> None:
    """With one slot, two calls run one after the other; with two, side by side."""
    original = forked.max_children()

    def starts(slots: int) -> list[float]:
        forked.set_max_children(slots)
        began: list[float] = []

        def call() -> None:
            began.append(forked.run_forked(lambda: (time.time(), time.sleep(0.4))[0]))

        threads = [threading.Thread(target=call) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        return sorted(began)

    try:
        one = starts(1)
        assert one[1] - one[0] >= 0.35, one
        two = starts(2)
        assert two[1] - two[0] < 0.35, two
    finally:
        forked.set_max_children(original)
    assert forked.max_children() == original
