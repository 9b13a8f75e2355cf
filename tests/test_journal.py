"""The data folder's lock and journal (``server/journal.py``) with two stores over one folder
in one process, as two workers see it: a write of one reaches the other before its next
request, a conditional write re-reads under the lock (no lost update), and a bad journal line
is skipped rather than stopping the process."""

from __future__ import annotations

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
