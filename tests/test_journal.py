"""The data folder's lock and journal (``server/journal.py``) with two stores over one folder
in one process, as two workers see it: a write of one reaches the other before its next
request, a conditional write re-reads under the lock (no lost update), and a bad journal line
is skipped rather than stopping the process."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from workbench import Workbench
from workbench.errors import ResourceNotFoundError, VersionConflictError
from workbench.server.journal import JOURNAL
from workbench.server.store import ResourceStore


def vs(rid: str, title: str) -> dict[str, Any]:
    return {"resourceType": "ValueSet", "id": rid, "status": "draft", "title": title}


@pytest.fixture
def pair(tmp_path: Path) -> tuple[ResourceStore, ResourceStore]:
    return ResourceStore(Workbench(), tmp_path), ResourceStore(Workbench(), tmp_path)


def test_a_write_reaches_the_other_store_when_it_catches_up(
    pair: tuple[ResourceStore, ResourceStore],
) -> None:
    a, b = pair
    assert b.journal is not None and not b.journal.behind()
    a.update("ValueSet", "j", vs("j", "one"))
    assert b.journal.behind()
    b.journal.catch_up()
    assert not b.journal.behind()
    assert b.read("ValueSet", "j")["title"] == "one"
    b.update("ValueSet", "j", vs("j", "two"))
    assert a.journal is not None
    a.journal.catch_up()
    assert a.read("ValueSet", "j")["meta"]["versionId"] == "2"
    assert a.delete("ValueSet", "j")
    b.journal.catch_up()
    with pytest.raises(ResourceNotFoundError):
        b.read("ValueSet", "j")
    assert not b.delete("ValueSet", "j")  # already deleted, as b now knows


def test_if_match_is_checked_against_the_other_stores_writes(
    pair: tuple[ResourceStore, ResourceStore],
) -> None:
    a, b = pair
    a.update("ValueSet", "k", vs("k", "one"))
    assert b.journal is not None
    b.journal.catch_up()
    a.update("ValueSet", "k", vs("k", "two"), 'W/"1"')
    # b has not seen version 2 yet, but its write catches up under the lock first
    with pytest.raises(VersionConflictError, match=r'current version \(W/"2"\)'):
        b.update("ValueSet", "k", vs("k", "lost"), 'W/"1"')
    assert b.read("ValueSet", "k")["title"] == "two"
    stored, _ = b.update("ValueSet", "k", vs("k", "three"), 'W/"2"')
    assert stored["meta"]["versionId"] == "3"


def test_a_bad_or_unfinished_line_does_not_stop_the_process(
    pair: tuple[ResourceStore, ResourceStore], tmp_path: Path
) -> None:
    a, b = pair
    with (tmp_path / JOURNAL).open("ab") as journal:
        journal.write(b"ValueSet/missing/7\nnot a line\n")
    a.update("ValueSet", "m", vs("m", "after"))
    with (tmp_path / JOURNAL).open("ab") as journal:
        journal.write(b"ValueSet/m/")  # still being written: waits for its newline
    assert b.journal is not None
    b.journal.catch_up()
    assert b.read("ValueSet", "m")["title"] == "after"
    assert b.journal.behind()  # the unfinished line
    assert (tmp_path / JOURNAL).stat().st_size - b.journal.offset == len(b"ValueSet/m/")


# --- compaction ----------------------------------------------------------------------------

COMPACT_AT = 100  # bytes: a compaction every seven writes or so ("ValueSet/c0/1\n" is 14)


def compacting(*stores: ResourceStore) -> None:
    for store in stores:
        assert store.journal is not None
        store.journal.compact_at = COMPACT_AT


def titles(store: ResourceStore, ids: list[str]) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for rid in ids:
        try:
            found[rid] = store.read("ValueSet", rid)["title"]
        except ResourceNotFoundError:
            found[rid] = None
    return found


def test_the_journal_is_compacted_and_a_store_that_keeps_up_follows(
    pair: tuple[ResourceStore, ResourceStore], tmp_path: Path
) -> None:
    a, b = pair
    compacting(a, b)
    assert a.journal is not None and b.journal is not None
    ids = [f"c{i}" for i in range(6)]
    for round_ in range(5):
        for rid in ids:
            a.update("ValueSet", rid, vs(rid, f"{rid} {round_}"))
            b.journal.catch_up()  # applies every line, then follows each move
            assert b.read("ValueSet", rid)["title"] == f"{rid} {round_}"
            assert (tmp_path / JOURNAL).stat().st_size < COMPACT_AT + 20
    assert a.journal.generation >= 3 and b.journal.generation == a.journal.generation
    assert (tmp_path / JOURNAL).read_bytes().startswith(b"~journal ")
    # b writes next, on the journal it followed to; a sees it
    b.update("ValueSet", "c0", vs("c0", "from b"))
    a.journal.catch_up()
    assert a.read("ValueSet", "c0")["meta"]["versionId"] == "6"
    assert titles(a, ids) == titles(b, ids)


def test_a_writer_behind_a_compaction_catches_up_before_it_appends(
    pair: tuple[ResourceStore, ResourceStore], tmp_path: Path
) -> None:
    a, b = pair
    compacting(a, b)
    assert a.journal is not None and b.journal is not None
    for i in range(8):  # 8 lines of 13 bytes: one compaction, on the last write
        a.update("ValueSet", "w", vs("w", f"a {i}"))
    assert a.journal.generation == 1 and b.journal.generation == 0
    # b never caught up; its conditional write follows the journal under the lock first
    with pytest.raises(VersionConflictError, match=r'current version \(W/"8"\)'):
        b.update("ValueSet", "w", vs("w", "lost"), 'W/"7"')
    stored, _ = b.update("ValueSet", "w", vs("w", "b"), 'W/"8"')
    assert stored["meta"]["versionId"] == "9" and b.journal.generation == 1
    assert (tmp_path / JOURNAL).read_bytes() == b"~journal 1\nValueSet/w/9\n"
    a.journal.catch_up()
    assert a.read("ValueSet", "w")["title"] == "b"


def test_a_store_that_slept_through_compactions_reloads_from_the_folder(
    pair: tuple[ResourceStore, ResourceStore], caplog: pytest.LogCaptureFixture
) -> None:
    a, b = pair
    compacting(a, b)
    assert a.journal is not None and b.journal is not None
    ids = [f"s{i}" for i in range(4)]
    for rid in ids:
        a.update("ValueSet", rid, vs(rid, "first"))
    b.journal.catch_up()
    for i in range(30):  # several generations while b handles no request
        a.update("ValueSet", ids[i % 3], vs(ids[i % 3], f"later {i}"))
    a.delete("ValueSet", "s3")
    assert a.journal.generation >= 3 and b.journal.behind()
    with caplog.at_level(logging.INFO, logger="workbench.server"):
        b.journal.catch_up()
    assert "Journal generations were skipped" in caplog.text
    assert b.journal.generation == a.journal.generation and not b.journal.behind()
    assert (
        titles(b, ids)
        == titles(a, ids)
        == {
            "s0": "later 27",
            "s1": "later 28",
            "s2": "later 29",
            "s3": None,
        }
    )
    a.update("ValueSet", "s3", vs("s3", "again"))  # and it goes on from the journal
    b.journal.catch_up()
    assert b.read("ValueSet", "s3")["title"] == "again"


def test_an_unfinished_line_does_not_hide_the_move(
    pair: tuple[ResourceStore, ResourceStore], tmp_path: Path
) -> None:
    a, b = pair
    compacting(a)
    assert a.journal is not None and b.journal is not None
    a.update("ValueSet", "u", vs("u", "one"))
    with (tmp_path / JOURNAL).open("ab") as journal:
        journal.write(b"ValueSet/u/")  # a writer died mid-line
    for i in range(8):
        a.update("ValueSet", "u", vs("u", f"next {i}"))
    assert a.journal.generation == 1
    b.journal.catch_up()
    assert b.journal.generation == 1 and b.read("ValueSet", "u")["title"] == "next 7"


def test_a_store_opened_after_a_compaction_starts_from_the_folder(
    pair: tuple[ResourceStore, ResourceStore], tmp_path: Path
) -> None:
    a, _ = pair
    compacting(a)
    for i in range(10):
        a.update("ValueSet", f"n{i}", vs(f"n{i}", "kept"))
    assert a.journal is not None and a.journal.generation == 1
    late = ResourceStore(Workbench(), tmp_path)
    assert late.journal is not None and late.journal.generation == 1
    assert not late.journal.behind() and late.read("ValueSet", "n0")["title"] == "kept"
    a.update("ValueSet", "n0", vs("n0", "changed"))
    late.journal.catch_up()
    assert late.read("ValueSet", "n0")["title"] == "changed"


def test_a_compaction_that_died_before_its_mark_is_finished_by_the_next_writer(
    tmp_path: Path,
) -> None:
    """The compacting process died between renaming the fresh journal into place and
    marking the old one: the next writer (reading the old one) marks it, and a process
    still reading the old one follows."""
    a, b, c = (ResourceStore(Workbench(), tmp_path) for _ in range(3))
    a.update("ValueSet", "d", vs("d", "before"))
    fresh = tmp_path / "fresh"
    fresh.write_bytes(b"~journal 1\n")
    fresh.replace(tmp_path / JOURNAL)  # ... and no "~moved 1" in the old journal
    b.update("ValueSet", "d", vs("d", "after"))
    assert b.journal is not None and b.journal.generation == 1
    assert (tmp_path / JOURNAL).read_bytes() == b"~journal 1\nValueSet/d/2\n"
    assert c.journal is not None
    c.journal.catch_up()
    assert c.journal.generation == 1 and c.read("ValueSet", "d")["title"] == "after"
    assert a.journal is not None
    a.journal.catch_up()
    assert a.read("ValueSet", "d")["meta"]["versionId"] == "2"
