"""The ``$closure`` tables in the server's database (``ClosureTables``).

Three tables beside the versions: ``workbench_closures`` (one row a closure: its name, a
``token`` drawn at its initialisation, its ``version``, when it was last ``used``),
``workbench_closure_concepts`` (its members: system, code, the version that added them) and
``workbench_closure_entries`` (its relationships: system, the narrower ``source``, the
broader ``target``, the version that added them). Every method is one transaction; an
addition locks the closure's row first (``_LOCK``: ``FOR UPDATE`` on PostgreSQL, where
SQLite's ``BEGIN IMMEDIATE`` already holds the database), so that the members it plans on
are those it writes beside, whichever process of a fleet adds at the same time.

Each process keeps the members of the closures it added to, by token and version: a call
that finds the closure at the version it left it reads no member again (the figure: 10,000
concepts added in 100 calls), and one that finds another (another process added, or the
closure was initialised again) reads them all. The SQL is written once here, with ``?``
for a parameter, and run by a subclass on its own connection (``closure_sqlite.py``,
``closure_postgresql.py``).
"""

from __future__ import annotations

import abc
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from workbench import forksafe
from workbench.terminology.closure import ClosureTables, Entry, Members, Planner

T = TypeVar("T")
#: Runs one statement in the current transaction: its rows (none for a write).
Execute = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]
#: Runs one statement once for each row of arguments.
Many = Callable[[str, list[tuple[Any, ...]]], None]

_ROW = "SELECT token, version FROM workbench_closures WHERE name = ?"
_TABLES = ("workbench_closure_entries", "workbench_closure_concepts", "workbench_closures")


class SQLClosures(ClosureTables):
    """The closure tables in three tables of a SQL database (see the module docstring)."""

    in_database = True
    #: What locks a closure's row for the rest of the transaction (after ``_ROW``).
    _LOCK = ""

    def __init__(self) -> None:
        self._held: dict[str, tuple[str, int, Members]] = {}
        self._held_lock = forksafe.lock()

    @abc.abstractmethod
    def _run(self, work: Callable[[Execute, Many], T], *, write: bool) -> T:
        """``work`` in one transaction (a writing one when ``write``), committed when it
        returns; StorageError when the database refuses."""

    def initialise(self, name: str, now: float) -> int:
        """Drop the closure's rows; start it again, empty, with a new token."""

        def work(execute: Execute, many: Many) -> int:
            for table in _TABLES:
                execute(f"DELETE FROM {table} WHERE name = ?", (name,))
            execute(
                "INSERT INTO workbench_closures (name, token, version, used) VALUES (?, ?, 0, ?)",
                (name, uuid.uuid4().hex, now),
            )
            return 0

        return self._run(work, write=True)

    def add(self, name: str, planner: Planner, now: float) -> tuple[int, list[Entry]] | None:
        """Lock the closure, plan on its members, write what the plan adds."""

        def work(execute: Execute, many: Many) -> tuple[int, list[Entry]] | None:
            rows = execute(_ROW + self._LOCK, (name,))
            if not rows:
                return None
            token, version = str(rows[0][0]), int(rows[0][1])
            members = self._members(execute, name, token, version)
            added = planner(members)
            if not added.concepts:
                execute("UPDATE workbench_closures SET used = ? WHERE name = ?", (now, name))
                with self._held_lock:
                    self._held[name] = (token, version, members)
                return version, []
            version += 1
            many(
                "INSERT INTO workbench_closure_concepts (name, system, code, version) "
                "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [(name, system, code, version) for system, code in added.concepts],
            )
            many(
                "INSERT INTO workbench_closure_entries (name, system, source, target, version) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [(name, *entry, version) for entry in added.entries],
            )
            execute(
                "UPDATE workbench_closures SET version = ?, used = ? WHERE name = ?",
                (version, now, name),
            )
            with self._held_lock:
                self._held[name] = (token, version, members)
            return version, list(added.entries)

        try:
            return self._run(work, write=True)
        except BaseException:
            with self._held_lock:
                self._held.pop(name, None)  # (it may hold what was not committed)
            raise

    def _members(self, execute: Execute, name: str, token: str, version: int) -> Members:
        """The closure's members: this process's copy when it is current, else read."""
        with self._held_lock:
            held = self._held.pop(name, None)
        if held is not None and held[:2] == (token, version):
            return held[2]
        sql = "SELECT system, code FROM workbench_closure_concepts WHERE name = ?"
        return Members((str(system), str(code)) for system, code in execute(sql, (name,)))

    def since(self, name: str, version: int, now: float) -> tuple[int, list[Entry]] | None:
        """The closure's version and the entries added after ``version``."""

        def work(execute: Execute, many: Many) -> tuple[int, list[Entry]] | None:
            rows = execute(_ROW, (name,))
            if not rows:
                return None
            execute("UPDATE workbench_closures SET used = ? WHERE name = ?", (now, name))
            found = execute(
                "SELECT system, source, target FROM workbench_closure_entries "
                "WHERE name = ? AND version > ? ORDER BY version, system, source, target",
                (name, version),
            )
            return int(rows[0][1]), [Entry(str(s), str(a), str(b)) for s, a, b in found]

        return self._run(work, write=True)
