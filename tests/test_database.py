"""The data folder's SQLite database (``server/database/sqlite.py``) with two stores over one
folder in one process, as two workers see it: a write of one reaches the other once it asks
``behind`` (``PRAGMA data_version``) and catches up, a conditional write re-reads inside its
``BEGIN IMMEDIATE`` transaction (no lost update), a transaction the database refuses leaves
nothing, and two processes racing one ``If-Match`` get one winner and one 412."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from workbench import Workbench
from workbench.errors import GoneError, StorageError, VersionConflictError
from workbench.server.database.sqlite import FILE, SQLiteVersions
from workbench.server.store import ResourceStore


def vs(rid: str, title: str) -> dict[str, Any]:
    return {"resourceType": "ValueSet", "id": rid, "status": "draft", "title": title}


@pytest.fixture
def pair(tmp_path: Path) -> tuple[ResourceStore, ResourceStore]:
    return ResourceStore(Workbench(), tmp_path), ResourceStore(Workbench(), tmp_path)


def test_the_database_is_wal_and_synchronous_full(tmp_path: Path) -> None:
    ResourceStore(Workbench(), tmp_path).update("ValueSet", "w", vs("w", "one"))
    with sqlite3.connect(tmp_path / FILE) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("SELECT type, id, number, deleted FROM versions").fetchall() == [
            ("ValueSet", "w", 1, 0)
        ]
    assert SQLiteVersions(tmp_path)._connection().execute("PRAGMA synchronous").fetchone()[0] == 2


def test_a_write_reaches_the_other_store_when_it_catches_up(
    pair: tuple[ResourceStore, ResourceStore],
) -> None:
    a, b = pair
    b.behind()  # (the first question of a connection is always yes)
    b.catch_up()
    assert not b.behind()
    a.update("ValueSet", "j", vs("j", "one"))
    assert b.behind()
    assert b.behind()  # owed until a catch-up, however often asked
    b.catch_up()
    assert not b.behind()
    assert b.read("ValueSet", "j")["title"] == "one"
    b.update("ValueSet", "j", vs("j", "two"))
    a.catch_up()
    assert a.read("ValueSet", "j")["meta"]["versionId"] == "2"
    assert a.delete("ValueSet", "j")
    b.catch_up()
    with pytest.raises(GoneError):
        b.read("ValueSet", "j")
    assert not b.delete("ValueSet", "j")  # already deleted, as b now knows
    assert [v.number for v in b.versions("ValueSet", "j")] == [3, 2, 1]


def test_if_match_is_checked_against_the_other_stores_writes(
    pair: tuple[ResourceStore, ResourceStore],
) -> None:
    a, b = pair
    a.update("ValueSet", "k", vs("k", "one"))
    b.catch_up()
    a.update("ValueSet", "k", vs("k", "two"), 'W/"1"')
    # b has not seen version 2 yet, but its write catches up inside the transaction first
    with pytest.raises(VersionConflictError, match=r'current version \(W/"2"\)'):
        b.update("ValueSet", "k", vs("k", "lost"), 'W/"1"')
    assert b.read("ValueSet", "k")["title"] == "two"
    stored, _ = b.update("ValueSet", "k", vs("k", "three"), 'W/"2"')
    assert stored["meta"]["versionId"] == "3"


def test_a_refused_commit_changes_neither_database_nor_memory(tmp_path: Path) -> None:
    """Another connection holds the write lock past the busy timeout: the write is a 503
    StorageError, nothing is stored, the registry is unchanged; then it works."""
    store = ResourceStore(Workbench(), tmp_path)
    store.update("ValueSet", "r", vs("r", "one"))
    assert isinstance(store.db, SQLiteVersions)
    blocker = sqlite3.connect(tmp_path / FILE, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    store.db._connection().execute("PRAGMA busy_timeout = 50")
    try:
        with pytest.raises(StorageError, match="not stored: the database is busy") as refused:
            store.update("ValueSet", "r", vs("r", "two"))
        assert refused.value.status == 503
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert store.read("ValueSet", "r")["title"] == "one"
    assert store.db.numbers("ValueSet", "r") == [1]
    assert store.update("ValueSet", "r", vs("r", "two"))[0]["meta"]["versionId"] == "2"


def _racer(folder: str, title: str, start: Any, results: Any) -> None:
    store = ResourceStore(Workbench(), folder)
    start.wait(10)
    try:
        store.update("ValueSet", "race", vs("race", title), 'W/"1"')
        results.put((title, "won"))
    except VersionConflictError:
        results.put((title, "412"))


def test_two_processes_racing_one_if_match_one_wins(tmp_path: Path) -> None:
    ResourceStore(Workbench(), tmp_path).update("ValueSet", "race", vs("race", "one"))
    context = multiprocessing.get_context("fork")
    start, results = context.Barrier(2), context.Queue()
    racers = [
        context.Process(target=_racer, args=(str(tmp_path), t, start, results))
        for t in ("left", "right")
    ]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(30)
    outcome = dict(results.get(timeout=5) for _ in racers)
    assert sorted(outcome.values()) == ["412", "won"]
    winner = next(t for t, o in outcome.items() if o == "won")
    fresh = ResourceStore(Workbench(), tmp_path)
    assert fresh.read("ValueSet", "race")["title"] == winner
    assert fresh.db.numbers("ValueSet", "race") == [1, 2]


def _die_in_a_transaction(folder: str, ready: Any) -> None:
    db = SQLiteVersions(Path(folder))
    with db.transaction():
        store = ResourceStore(Workbench())
        store.update("ValueSet", "half", vs("half", "half"))
        db.save("ValueSet", "half", store.versions("ValueSet", "half")[0])
        ready.set()
        multiprocessing.Event().wait(60)  # killed here, before the commit


def test_a_writer_killed_in_its_transaction_leaves_nothing(tmp_path: Path) -> None:
    store = ResourceStore(Workbench(), tmp_path)
    store.update("ValueSet", "before", vs("before", "kept"))
    context = multiprocessing.get_context("fork")
    ready = context.Event()
    writer = context.Process(target=_die_in_a_transaction, args=(str(tmp_path), ready))
    writer.start()
    assert ready.wait(20)
    writer.kill()  # SIGKILL
    writer.join(20)
    fresh = ResourceStore(Workbench(), tmp_path)
    assert fresh.db.numbers("ValueSet", "half") == []
    assert fresh.read("ValueSet", "before")["title"] == "kept"
    assert fresh.update("ValueSet", "after", vs("after", "works"))[1]  # the lock is free


def test_a_database_made_anew_goes_on_numbering_its_commits(tmp_path: Path) -> None:
    """The data folder was removed and made again while two stores ran: the new database
    numbers its commits after those the stores saw, so the other store still catches up."""
    data = tmp_path / "data"
    a, b = ResourceStore(Workbench(), data), ResourceStore(Workbench(), data)
    for n in range(3):
        a.update("ValueSet", "n", vs("n", f"old {n}"))
    b.catch_up()
    for name in list(data.iterdir()):
        name.unlink()
    data.rmdir()
    data.mkdir()
    a.update("ValueSet", "n", vs("n", "new"))
    b.catch_up()
    assert b.read("ValueSet", "n")["title"] == "new"
