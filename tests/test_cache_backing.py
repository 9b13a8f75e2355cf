"""The client caches kept in the data folder's SQLite database (``SharedCaches``,
``server/database/cache_sqlite.py``), with two ``ClientCaches`` over one folder in one
process, as two workers see them: a cache started by one is filled, read, sealed and ended
through the other, a put of each worker in turn loses neither, a cache started again under
an ended id is a new one, and ``sweep`` drops the idle caches and those past the limit,
least recently used first. How a cache ended (closed, expired, cleared) is recorded there,
so that every worker tells a request naming it why it is gone; a check through one worker
keeps alive a cache used through the other."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from workbench.errors import CacheIdUnknownError, InvalidRequestError
from workbench.server.database import open_caches, open_database
from workbench.server.database.cache_sqlite import SQLiteCaches
from workbench.server.database.sqlite import FILE
from workbench.terminology import client_caches
from workbench.terminology.cache_backing import ENDS_KEPT, Ended
from workbench.terminology.client_caches import CacheLimits, ClientCaches


def cs(code: str) -> dict[str, Any]:
    return {
        "resourceType": "CodeSystem",
        "url": "http://example.org/cs",
        "version": "1",
        "status": "active",
        "content": "complete",
        "concept": [{"code": code}],
    }


def workers(folder: Path, limits: CacheLimits | None = None) -> tuple[ClientCaches, ClientCaches]:
    open_database(folder)  # the folder and the versions' database, as the server makes them
    return tuple(ClientCaches(limits, open_caches(folder)) for _ in range(2))  # type: ignore[return-value]


def test_a_cache_started_by_one_worker_is_filled_read_and_ended_through_the_other(
    tmp_path: Path,
) -> None:
    one, other = workers(tmp_path)
    one.start("c-1")
    other.keep(other.get("c-1"), [cs("a")])
    assert one.get("c-1").resources[("http://example.org/cs", "1")]["concept"] == [{"code": "a"}]
    one.keep(one.get("c-1"), [cs("b")])  # replaced: the other worker's copy is older
    assert other.get("c-1").resources[("http://example.org/cs", "1")]["concept"] == [{"code": "b"}]
    assert one.get("c-1").names() == ["http://example.org/cs|1"]
    with sqlite3.connect(tmp_path / FILE) as db:  # beside the versions, in the one database
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {
            "versions",
            "workbench_caches",
            "workbench_cache_resources",
            "workbench_cache_ends",
        } <= tables
        assert db.execute("SELECT cache, name FROM workbench_cache_resources").fetchall() == [
            ("c-1", "http://example.org/cs|1")
        ]
    other.end("c-1")
    with pytest.raises(CacheIdUnknownError, match="'c-1' was closed by its client") as gone:
        one.get("c-1")  # the other worker ended it: this one knows how
    assert gone.value.msg_id == "WB-CACHE-404-CLOSED"
    with sqlite3.connect(tmp_path / FILE) as db:
        assert db.execute("SELECT COUNT(*) FROM workbench_cache_resources").fetchone() == (0,)


def test_a_put_by_another_worker_in_between_is_not_lost(tmp_path: Path) -> None:
    one, other = workers(tmp_path)
    one.start("race")
    mine, theirs = one.get("race"), other.get("race")
    other.keep(theirs, [{**cs("a"), "url": "http://example.org/theirs"}])
    one.keep(mine, [cs("b")])  # this copy lacks theirs: it is read again on next use
    expected = ["http://example.org/cs|1", "http://example.org/theirs|1"]
    assert one.get("race").names() == expected
    assert other.get("race").names() == expected


def test_a_sealed_cache_is_sealed_through_every_worker(tmp_path: Path) -> None:
    one, other = workers(tmp_path)
    one.start("s-1", resources=[cs("a")], sealed=True)
    seen = other.get("s-1")
    assert seen.sealed and seen.names() == ["http://example.org/cs|1"]


def test_a_cache_started_again_under_an_ended_id_is_a_new_one(tmp_path: Path) -> None:
    one, other = workers(tmp_path)
    one.start("again", resources=[cs("a")])
    assert other.get("again").names() == ["http://example.org/cs|1"]
    one.end("again")
    one.start("again")
    assert other.get("again").names() == []


def test_a_cache_past_the_bytes_limit_is_refused_and_gone_from_the_database(
    tmp_path: Path,
) -> None:
    one, other = workers(tmp_path, CacheLimits(bytes=10_000))
    one.start("big")
    with pytest.raises(InvalidRequestError, match="cache_bytes"):
        one.keep(one.get("big"), [{**cs("a"), "description": "x" * 1000}])
    with pytest.raises(CacheIdUnknownError, match="10,000 bytes, limit cache_bytes") as gone:
        other.get("big")
    assert gone.value.msg_id == "WB-CACHE-404-CLEARED"


@pytest.mark.parametrize(
    ("used", "idle", "caches", "kept"),
    [
        ({"a": 100.0, "b": 200.0, "c": 300.0}, 1000.0, 10, {"a", "b", "c"}),
        ({"a": 100.0, "b": 200.0, "c": 300.0}, 150.0, 10, {"b", "c"}),  # a idle
        ({"a": 100.0, "b": 200.0, "c": 300.0}, 1000.0, 2, {"b", "c"}),  # a least recent
        ({"a": 300.0, "b": 200.0, "c": 100.0}, 1000.0, 1, {"a"}),
        ({"a": 100.0, "b": 200.0}, 10.0, 10, set()),
    ],
)
def test_sweep_drops_the_idle_caches_and_the_least_recently_used_past_the_limit(
    tmp_path: Path, used: dict[str, float], idle: float, caches: int, kept: set[str]
) -> None:
    backing = SQLiteCaches(tmp_path)
    for cache_id, when in used.items():
        backing.start(cache_id, False, 0.0)
        backing.put(cache_id, "http://example.org/cs|1", b'{"resourceType": "CodeSystem"}', 0.0)
        backing.touch(cache_id, when)
    backing.sweep(idle, caches, 310.0)
    assert {c for c in used if backing.mark(c) is not None} == kept
    for cache_id in used:
        found = backing.read(cache_id)
        assert (found is not None) == (cache_id in kept)
        assert found is None or len(found.resources) == 1
        # how each dropped one ended: idle (expired) before past the limit (cleared)
        ended = backing.ended(cache_id)
        if cache_id in kept:
            assert ended is None
        elif 310.0 - used[cache_id] > idle:
            assert ended == Ended("expired", 310.0, used[cache_id], "cache_idle_seconds", idle)
        else:
            assert ended == Ended("cleared", 310.0, used[cache_id], "caches", caches)


def test_the_ends_are_kept_for_the_last_caches_only(tmp_path: Path) -> None:
    backing = SQLiteCaches(tmp_path)
    for n in range(ENDS_KEPT + 5):
        backing.drop(f"c{n}", Ended("closed", float(n), float(n)))
    backing.sweep(1000.0, 10, 0.0)
    assert backing.ended("c0") is None and backing.ended("c4") is None
    assert backing.ended("c5") == Ended("closed", 5.0, 5.0)
    backing.start("c5", False, 1.0)  # the id lives again: its end is forgotten
    assert backing.ended("c5") is None


def test_a_cache_idle_through_every_worker_expires_and_each_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_caches, "TOUCH_EVERY", 0.0)  # every use marks the backing
    one, other = workers(tmp_path, CacheLimits(idle_seconds=0.6))
    one.start("busy")
    one.start("quiet")
    for _ in range(4):  # used through the other worker only, checked through it
        time.sleep(0.25)
        state = other.check("busy")
        assert state.valid and state.idle < 0.6
    # one worker's copy has been idle for 1 s, but the cache was used: it lives on
    state = one.check("busy")
    assert state.valid and state.idle < 0.6 and state.timeout == 0.6
    for worker in (one, other):
        state = worker.check("quiet")
        assert not state.valid and state.gone is not None
        assert state.gone.msg_id == "WB-CACHE-404-EXPIRED"
        assert "a cache unused for 1 second" in state.gone.text


def test_ends_are_told_without_a_backing_too() -> None:
    caches = ClientCaches(CacheLimits(caches=2, bytes=10_000))
    caches.start("a")
    caches.start("b")
    caches.start("c")  # a is cleared to make room
    caches.end("b")
    expected = {
        "a": "WB-CACHE-404-CLEARED",
        "b": "WB-CACHE-404-CLOSED",
        "never": "WB-CACHE-404",
    }
    for cache_id, msg_id in expected.items():
        with pytest.raises(CacheIdUnknownError) as gone:
            caches.get(cache_id)
        assert gone.value.msg_id == msg_id and gone.value.status == 404
    caches.start("b")  # started again under that id: a new cache
    assert caches.check("b").valid
