"""Bounded work and a server that never blocks (issue 13, point 2), over real HTTP on
127.0.0.1: value sets importing each other along many paths are compiled once; a request over
its step or time budget is a 422 ``too-costly``; expensive calls run off the event loop, so a
cheap request is answered while one runs; the text filter costs what it matches.
"""

from __future__ import annotations

import threading
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from http_support import (
    GENDER_CS,
    GENDER_VS,
    TOKEN,
    assert_outcome,
    client,
    serve_app,
    values,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import Workbench
from workbench.server import create_app
from workbench.server.embedded import ServerHandle
from workbench.server.offload import Limits
from workbench.terminology import budget
from workbench.terminology.compose import Entry
from workbench.terminology.textindex import TextIndex

CS = "http://example.org/fhir/CodeSystem/limits"


def chain(levels: int, paths: int) -> list[dict[str, Any]]:
    """A code system of 20 codes and value sets vs0..vsN, each importing the one below along
    ``paths`` includes (2**levels paths from the top to the bottom when ``paths`` is 2)."""
    out: list[dict[str, Any]] = [
        {
            "resourceType": "CodeSystem",
            "url": CS,
            "status": "draft",
            "content": "complete",
            "concept": [{"code": f"c{i}", "display": f"Code {i}"} for i in range(20)],
        },
        {
            "resourceType": "ValueSet",
            "url": f"{CS}/vs0",
            "status": "draft",
            "compose": {"include": [{"system": CS}]},
        },
    ]
    for level in range(1, levels + 1):
        below = f"{CS}/vs{level - 1}"
        out.append(
            {
                "resourceType": "ValueSet",
                "url": f"{CS}/vs{level}",
                "status": "draft",
                "compose": {"include": [{"valueSet": [below]} for _ in range(paths)]},
            }
        )
    return out


@pytest.fixture
def chained() -> Iterator[httpx.Client]:
    wb = Workbench()
    wb.load(chain(20, 2))
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as http:
        yield http


@pytest.mark.parametrize(("code", "result"), [("c3", True), ("nope", False)])
def test_imports_along_many_paths_are_compiled_once(
    chained: httpx.Client, code: str, result: bool
) -> None:
    """Twenty value sets each importing the one below twice: 2**20 import paths. Before,
    twelve such levels took seconds and hundreds of MB and blocked the server."""
    query = {"url": f"{CS}/vs20", "system": CS, "code": code}
    tracemalloc.start()
    try:
        start = time.perf_counter()
        response = chained.get("/ValueSet/$validate-code", params=query)
        took = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert response.status_code == 200, response.text
    assert response.json()["parameter"][0] == {"name": "result", "valueBoolean": result}
    assert took < 10.0
    assert peak < 50_000_000
    expanded = chained.get("/ValueSet/$expand", params={"url": f"{CS}/vs20"}).json()
    assert expanded["expansion"]["total"] == 20
    used = [p for p in expanded["expansion"]["parameter"] if p["name"] == "used-valueset"]
    assert len(used) == 20  # each imported value set listed once


def big_codesystem(size: int, words: int = 1) -> dict[str, Any]:
    return {
        "resourceType": "CodeSystem",
        "url": CS + "/big",
        "status": "draft",
        "content": "complete",
        "concept": [
            {"code": f"b{i}", "display": " ".join(f"word{(i * 7 + k) % 997}" for k in range(words))}
            for i in range(size)
        ],
    }


ALL_BIG = {
    "resourceType": "ValueSet",
    "url": CS + "/big-vs",
    "status": "draft",
    "compose": {"include": [{"system": CS + "/big"}]},
}


def test_over_the_step_budget_is_too_costly() -> None:
    wb = Workbench()
    wb.load([big_codesystem(5_000), ALL_BIG])
    app = create_app(wb, token=TOKEN, limits=Limits(steps=2_000, inline_steps=100))
    with serve_app(app) as running, client(running.url) as http:
        response = http.get("/ValueSet/$expand", params={"url": CS + "/big-vs", "count": "5"})
        assert_outcome(response, 422, "too-costly", "more than 2,000 steps")
        lookup = http.get("/CodeSystem/$lookup", params={"system": CS + "/big", "code": "b1"})
        assert_outcome(lookup, 422, "too-costly", "steps")


def test_over_the_time_budget_is_too_costly() -> None:
    wb = Workbench()
    wb.load([big_codesystem(60_000, words=4), ALL_BIG])
    app = create_app(wb, token=TOKEN, limits=Limits(seconds=0.05))
    with serve_app(app) as running, client(running.url) as http:
        query = {"url": CS + "/big-vs", "filter": "word1 word2", "count": "5"}
        response = http.get("/ValueSet/$expand", params=query)
        assert_outcome(response, 422, "too-costly", "more than 0.05 seconds")


def test_python_calls_are_not_limited() -> None:
    wb = Workbench()
    wb.load([big_codesystem(5_000), ALL_BIG])
    assert budget.current() is None
    assert wb.expand(CS + "/big-vs").total == 5_000


@pytest.fixture(scope="module")
def two_big() -> Iterator[tuple[Workbench, ServerHandle]]:
    """Two 100k-code systems never used yet (one per test below) and a small value set."""
    wb = Workbench()
    first = big_codesystem(100_000, words=3)
    second = {**big_codesystem(100_000, words=3), "url": CS + "/big2"}
    small = {
        "resourceType": "ValueSet",
        "url": GENDER_VS,
        "status": "active",
        "compose": {"include": [{"system": GENDER_CS, "concept": [{"code": "male"}]}]},
    }
    wb.load([first, second, ALL_BIG, small])
    with wb.serve(port=0, token=TOKEN) as handle:
        yield wb, handle


@pytest.mark.parametrize(
    ("path", "query"),
    [
        pytest.param(
            "/ValueSet/$expand",
            {"url": CS + "/big-vs", "filter": "word5", "count": "3"},
            id="first-expand",
        ),
        pytest.param(
            "/CodeSystem/$lookup", {"system": CS + "/big2", "code": "b7"}, id="first-lookup"
        ),
    ],
)
def test_cheap_requests_are_answered_while_an_expensive_one_runs(
    two_big: tuple[Workbench, ServerHandle], path: str, query: dict[str, str]
) -> None:
    """The first call on a 100k-code system (its index, the compile, the expansion) takes
    seconds; it runs in a worker thread while the event loop answers cheap requests at once.
    Before, the first $lookup blocked every request until the index was built."""
    _, handle = two_big
    cheap = {"url": GENDER_VS, "system": GENDER_CS, "code": "male"}
    with client(handle.url) as http:
        assert http.get("/ValueSet/$validate-code", params=cheap).status_code == 200  # warm
        slow: dict[str, Any] = {}

        def expensive() -> None:
            with client(handle.url) as other:
                start = time.perf_counter()
                slow["response"] = other.get(path, params=query, timeout=120)
                slow["took"] = time.perf_counter() - start

        worker = threading.Thread(target=expensive)
        worker.start()
        time.sleep(0.1)  # the expensive request is in the server now
        latencies = []
        for _ in range(5):
            start = time.perf_counter()
            answer = http.get("/ValueSet/$validate-code", params=cheap)
            latencies.append(time.perf_counter() - start)
            assert answer.status_code == 200
        still_running = worker.is_alive()
        worker.join(120)
    assert slow["response"].status_code == 200, slow["response"].text
    assert still_running, f"the expensive call took only {slow['took']:.2f} s"
    typical = sorted(latencies)[len(latencies) // 2]
    assert typical < 0.5 and max(latencies) < 2.0, latencies
    assert typical * 5 < slow["took"], (latencies, slow["took"])


def test_text_filter_costs_what_it_matches() -> None:
    """20k codes with long displays and a filter of hundreds of (repeated) words took 27 s
    (words x codes); the index answers in well under a second."""
    wb = Workbench()
    wb.load([big_codesystem(20_000, words=60), ALL_BIG])
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as http:
        warm = {"url": CS + "/big-vs", "filter": "word1", "count": "1"}
        assert http.get("/ValueSet/$expand", params=warm, timeout=60).status_code == 200
        text = " ".join(["word9"] * 400 + ["ord"] * 100 + ["word99"])
        start = time.perf_counter()
        response = http.get(
            "/ValueSet/$expand",
            params={"url": CS + "/big-vs", "filter": text, "count": "2"},
            timeout=10,
        )
        took = time.perf_counter() - start
    assert response.status_code == 200, response.text
    expected = sum(
        1
        for i in range(20_000)
        if any((i * 7 + k) % 997 in (99, 990, 991, 992, 993, 994, 995, 996) for k in range(60))
    )
    assert response.json()["expansion"]["total"] == expected
    assert took < 3.0


def _entry(code: str, display: str | None) -> Entry:
    return Entry("http://x", None, code, display, False, False)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text("ab-1 ", min_size=1, max_size=6), st.none() | st.text("abcA-é ", max_size=12)
        ),
        max_size=30,
    ),
    st.text("abAé- ", max_size=10),
)
def test_text_index_matches_the_plain_definition(
    entries: list[tuple[str, str | None]], text: str
) -> None:
    made = [_entry(c, d) for c, d in entries]
    words = text.casefold().split()
    expected = [
        i
        for i, e in enumerate(made)
        if all(w in f"{e.code} {e.display or ''}".casefold() for w in words)
    ]
    assert TextIndex(made).search(text) == expected


def test_a_long_scan_is_answered_from_a_child_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A regex over 30,000 codes of an inline value set runs in a forked child (its own
    interpreter lock); the answer equals the Python expansion. A cheap call stays inline."""
    from workbench.server import forked

    if not forked.available():
        pytest.fail("this test runs on Linux, where long scans go to a child process")
    calls: list[str] = []
    real = forked.run_forked

    def counted(call: Any, running: Any = None, **options: Any) -> Any:
        calls.append("child")
        return real(call, running, **options)

    monkeypatch.setattr(forked, "run_forked", counted)
    system = "http://example.org/fhir/CodeSystem/many"
    wb = Workbench()
    wb.load(
        {
            "resourceType": "CodeSystem",
            "url": system,
            "status": "active",
            "content": "complete",
            "concept": [{"code": f"C{i:05d}", "display": f"Concept {i}"} for i in range(30_000)],
        },
        progress=False,
    )
    valueset = {
        "resourceType": "ValueSet",
        "status": "active",
        "compose": {
            "include": [
                {"system": system, "filter": [{"property": "code", "op": "regex", "value": "C.*7"}]}
            ]
        },
    }
    expected = wb.expand(valueset)
    body = {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "valueSet", "resource": valueset},
            {"name": "count", "valueInteger": 5},
        ],
    }
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as http:
        answer = http.post(
            "/ValueSet/$expand", json=body, headers={"Content-Type": "application/fhir+json"}
        )
        assert answer.status_code == 200, answer.text
        assert calls == ["child"]
        expansion = answer.json()["expansion"]
        assert expansion["total"] == expected.total
        assert [c["code"] for c in expansion["contains"]] == [e.code for e in expected.entries[:5]]
        cheap = http.get("/CodeSystem/$lookup", params={"system": system, "code": "C00007"})
        assert values(cheap.json(), "display") == ["Concept 7"]
        assert calls == ["child"]
