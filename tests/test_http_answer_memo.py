"""The answer memo over HTTP (uvicorn on 127.0.0.1; ``workbench.server.answer_memo``): the
same GET of a read-only operation is answered again, byte for byte, without the engine; any
change of the content it was drawn from (a PUT, a DELETE, a load in Python, a release
loaded, another process's write through a shared data folder) is seen by the next request;
what must never be replayed (a client cache's answer, diagnostics, POSTs, another
``Accept-Language``) is made each time; and the memo is bounded and can be turned off."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_support import GENDER_CS, GENDER_VS, TOKEN, client, serve_app, values

from workbench import Workbench
from workbench.server import create_app
from workbench.server.answer_memo import ENTRY_OVERHEAD, MAX_BODY, AnswerMemo
from workbench.server.offload import Limits
from workbench.terminology.service import EngineService

ICD = "http://hl7.org/fhir/sid/icd-10-cm"
MEMO_VS = "http://example.org/fhir/ValueSet/memo-test"
GENDER = {"url": GENDER_VS, "system": GENDER_CS, "code": "female"}
LANGUAGES = {
    "resourceType": "CodeSystem",
    "url": "http://example.org/fhir/CodeSystem/memo-languages",
    "status": "active",
    "content": "complete",
    "language": "en",
    "concept": [{"code": "one", "display": "One",
                 "designation": [{"language": "de", "value": "Eins"}]}],
}  # fmt: skip


class Counted:
    """Counts the engine's answers (the calls that reach ``EngineService``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        for name in ("validate", "validate_in_codesystem", "lookup", "subsumes", "translate"):
            monkeypatch.setattr(EngineService, name, self._counting(getattr(EngineService, name)))

    def _counting(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def counted(service: EngineService, *args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return method(service, *args, **kwargs)

        return counted


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counted:
    return Counted(monkeypatch)


@pytest.fixture
def http(wb: Workbench) -> Iterator[httpx.Client]:
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as c:
        yield c


def _memo_vs(codes: list[str]) -> dict[str, Any]:
    return {
        "resourceType": "ValueSet",
        "id": "memo-test",
        "url": MEMO_VS,
        "status": "active",
        "compose": {"include": [{"system": GENDER_CS, "concept": [{"code": c} for c in codes]}]},
    }


REPLAYED = [
    ("ValueSet $validate-code", "/ValueSet/$validate-code", GENDER),
    ("CodeSystem $validate-code", "/CodeSystem/$validate-code",
     {"url": GENDER_CS, "code": "male"}),
    ("$lookup", "/CodeSystem/$lookup", {"system": GENDER_CS, "code": "other"}),
    ("$subsumes", "/CodeSystem/$subsumes", {"system": GENDER_CS, "codeA": "male", "codeB": "male"}),
    ("a code not in the value set", "/ValueSet/$validate-code", {**GENDER, "code": "nope"}),
    ("_pretty", "/ValueSet/$validate-code", {**GENDER, "_pretty": "true"}),
]  # fmt: skip


@pytest.mark.parametrize(("path", "query"), [r[1:] for r in REPLAYED], ids=[r[0] for r in REPLAYED])
def test_the_same_get_is_answered_again_without_the_engine(
    http: httpx.Client, counted: Counted, path: str, query: dict[str, str]
) -> None:
    first = http.get(path, params=query)
    assert first.status_code == 200, first.text
    assert counted.calls == 1
    again = [http.get(path, params=query) for _ in range(3)]
    head = http.head(path, params=query)
    assert [r.content for r in again] == [first.content] * 3
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == str(len(first.content))
    assert counted.calls == 1


def _started(http: httpx.Client) -> str:
    found = http.post("/$cache-control?mode=start", json={"resourceType": "Parameters"})
    assert found.status_code == 200, found.text
    return str(values(found.json(), "cache-id")[0])


MADE_EACH_TIME: list[tuple[str, Callable[[httpx.Client], dict[str, Any]]]] = [
    ("diagnostics", lambda http: {"params": {**GENDER, "diagnostics": "true"}}),
    ("a client cache (X-Cache-Id)",
     lambda http: {"params": GENDER, "headers": {"X-Cache-Id": _started(http)}}),
    ("a client cache (cache-id)", lambda http: {"params": {**GENDER, "cache-id": _started(http)}}),
    ("POST", lambda http: {"method": "POST", "params": GENDER}),
]  # fmt: skip


@pytest.mark.parametrize("made", [r[1] for r in MADE_EACH_TIME], ids=[r[0] for r in MADE_EACH_TIME])
def test_what_must_not_be_replayed_is_made_each_time(
    http: httpx.Client, counted: Counted, made: Callable[[httpx.Client], dict[str, Any]]
) -> None:
    extra = made(http)
    method = extra.pop("method", "GET")
    for _ in range(3):
        found = http.request(method, "/ValueSet/$validate-code", **extra)
        assert found.status_code == 200, found.text
    assert counted.calls == 3


def test_each_language_has_its_own_answer(
    wb: Workbench, http: httpx.Client, counted: Counted
) -> None:
    wb.load(LANGUAGES)
    asked = {"system": LANGUAGES["url"], "code": "one"}
    english = http.get("/CodeSystem/$lookup", params=asked, headers={"Accept-Language": "en"})
    german = http.get("/CodeSystem/$lookup", params=asked, headers={"Accept-Language": "de"})
    assert english.status_code == german.status_code == 200, (english.text, german.text)
    assert values(english.json(), "display") == ["One"]
    assert values(german.json(), "display") == ["Eins"]
    again = http.get("/CodeSystem/$lookup", params=asked, headers={"Accept-Language": "de"})
    assert again.content == german.content and counted.calls == 2


def _validated(http: httpx.Client, code: str = "male") -> bool | int:
    """The result of validating ``code`` in the test value set, or the status of an error."""
    found = http.get("/ValueSet/$validate-code", params={"url": MEMO_VS, "system": GENDER_CS,
                                                          "code": code})  # fmt: skip
    if found.status_code != 200:
        return found.status_code
    return bool(values(found.json(), "result")[0])


def _put(http: httpx.Client, wb: Workbench) -> None:
    assert http.put("/ValueSet/memo-test", json=_memo_vs(["female"])).status_code == 200


def _delete(http: httpx.Client, wb: Workbench) -> None:
    assert http.delete("/ValueSet/memo-test").status_code in (200, 204)


def _load(http: httpx.Client, wb: Workbench) -> None:
    wb.load(_memo_vs(["female"]))  # a new version under the same url and id


CHANGES = [("PUT", _put, False), ("DELETE", _delete, 400), ("wb.load in Python", _load, False)]


@pytest.mark.parametrize(("change", "then"), [c[1:] for c in CHANGES], ids=[c[0] for c in CHANGES])
def test_a_change_of_content_is_seen_by_the_next_request(
    wb: Workbench,
    http: httpx.Client,
    change: Callable[[httpx.Client, Workbench], None],
    then: bool | int,
) -> None:
    assert http.put("/ValueSet/memo-test", json=_memo_vs(["male"])).status_code in (200, 201)
    assert _validated(http) is True
    assert _validated(http) is True  # now from the memo
    change(http, wb)
    assert _validated(http) == then


def test_a_release_loaded_is_seen_by_the_next_request(
    wb: Workbench, icd_years_wb: Workbench
) -> None:
    wb.load({**_memo_vs([]), "compose": {"include": [{"system": ICD}]}})
    query = {"url": MEMO_VS, "system": ICD, "code": "A00.0"}
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as http:
        before = [http.get("/ValueSet/$validate-code", params=query).json() for _ in range(2)]
        assert [values(b, "result") for b in before] == [[False], [False]]
        assert before[0] == before[1]
        wb.terminology.add_provider(icd_years_wb.terminology.require_codesystem(ICD, "2026"))
        after = http.get("/ValueSet/$validate-code", params=query).json()
    assert values(after, "result") == [True], after


def test_another_processs_write_is_seen_by_the_next_request(tmp_path: Path) -> None:
    """Two servers over one data folder (as ``server.py --workers`` runs them): a write
    through one changes what the other answers, although it had the answer memoised."""
    first, second = Workbench(), Workbench()
    for bench in (first, second):
        bench.load(_memo_vs(["male"]))
    apps = [create_app(b, token=TOKEN, data_dir=tmp_path) for b in (first, second)]
    with (
        serve_app(apps[0]) as one,
        serve_app(apps[1]) as two,
        client(one.url) as reader,
        client(two.url) as writer,
    ):
        assert _validated(reader) is True and _validated(reader) is True
        put = writer.put("/ValueSet/memo-test", json=_memo_vs(["female"]))
        assert put.status_code == 200, put.text
        assert _validated(reader) is False


def test_memo_bytes_0_turns_it_off(wb: Workbench, counted: Counted) -> None:
    app = create_app(wb, token=TOKEN, limits=Limits.from_options(["memo_bytes=0"]))
    with serve_app(app) as served, client(served.url) as http:
        for _ in range(3):
            assert http.get("/ValueSet/$validate-code", params=GENDER).status_code == 200
    assert counted.calls == 3


@pytest.mark.parametrize(
    ("option", "error"),
    [("memo_bytes=-1", "0 or more"), ("seconds=0", "positive"), ("memo_bytes=x", "not a number")],
)
def test_memo_bytes_is_a_limit_like_the_others(option: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        Limits.from_options([option])


def test_the_memo_holds_no_more_than_its_capacity() -> None:
    body = b"x" * 1000
    cost = len(body) + len("op") + len(b"q-000") + ENTRY_OVERHEAD
    memo = AnswerMemo(10 * cost)
    assert memo.get(("op", b"q-000"), 1) is None  # (takes the revision)
    for i in range(25):
        memo.put(("op", b"q-%03d" % i), body, 1, {})
        assert memo.held <= memo.capacity
    assert len(memo) == 10
    assert memo.get(("op", b"q-014"), 1) is None  # the oldest went first
    assert memo.get(("op", b"q-024"), 1) == body
    memo.put(("op", b"big"), b"x" * (MAX_BODY + 1), 1, {})
    memo.put(("op", b"late"), body, 0, {})  # made from content changed since
    assert memo.get(("op", b"big"), 1) is None and memo.get(("op", b"late"), 1) is None
    assert memo.get(("op", b"q-024"), 2) is None and len(memo) == 0  # a new revision
