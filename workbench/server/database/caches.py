"""The ``$cache-control`` client caches in the server's database (``SharedCaches``).

Three tables beside the versions: ``workbench_caches`` (one row a cache: whether it is
sealed, a ``token`` drawn at its start and a ``counter`` bumped at every put, which make its
stamp, and ``used``, wall-clock seconds), ``workbench_cache_resources`` (one row a
resource: the cache, the resource's ``url|version``, its JSON) and ``workbench_cache_ends``
(one row a cache that is gone: how it ended, when, when it was last used, the limit it
ended by; the last ``ENDS_KEPT``). Every method is one short
transaction; the SQL is written once here, with ``?`` for a parameter, and run by a
subclass on its own connection (``SQLiteCaches`` in ``cache_sqlite.py``,
``PostgresCaches`` in ``cache_postgresql.py``). The caches are ephemeral: a lost one only
makes its client send its resources again (a request naming it is answered 404, with how
it ended).
"""

from __future__ import annotations

import abc
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from workbench.terminology.cache_backing import ENDS_KEPT, Ended, Mark, SharedCaches, Stored

T = TypeVar("T")
#: Runs one statement in the current transaction: its rows (none for a write).
Execute = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]

_MARK = "SELECT token, counter, used FROM workbench_caches WHERE id = ?"
_GONE = "DELETE FROM workbench_cache_resources WHERE cache = ?"
_ENDS = "workbench_cache_ends (id, reason, at, used, limit_name, limit_value)"
_ENDED = (
    " ON CONFLICT (id) DO UPDATE SET reason = excluded.reason, at = excluded.at, "
    "used = excluded.used, limit_name = excluded.limit_name, limit_value = excluded.limit_value"
)


def _mark(rows: list[tuple[Any, ...]]) -> Mark | None:
    if not rows:
        return None
    token, counter, used = rows[0]
    return Mark(f"{token}.{int(counter)}", float(used))


class SQLCaches(SharedCaches):
    """The client caches in two tables of a SQL database (see the module docstring)."""

    @abc.abstractmethod
    def _run(self, work: Callable[[Execute], T], *, write: bool) -> T:
        """``work`` in one transaction (a writing one when ``write``), committed when it
        returns; StorageError when the database refuses."""

    def start(self, cache_id: str, sealed: bool, now: float) -> str:
        """Start ``cache_id`` empty, with a fresh token."""
        token = uuid.uuid4().hex

        def work(execute: Execute) -> str:
            execute(_GONE, (cache_id,))
            execute("DELETE FROM workbench_caches WHERE id = ?", (cache_id,))
            execute("DELETE FROM workbench_cache_ends WHERE id = ?", (cache_id,))
            execute(
                "INSERT INTO workbench_caches (id, sealed, token, counter, used) "
                "VALUES (?, ?, ?, 0, ?)",
                (cache_id, 1 if sealed else 0, token, now),
            )
            return f"{token}.0"

        return self._run(work, write=True)

    def put(self, cache_id: str, key: str, raw: bytes, now: float) -> tuple[str, str]:
        """Add or replace one resource; bump the counter (start the cache when gone)."""

        def work(execute: Execute) -> tuple[str, str]:
            before = _mark(execute(_MARK, (cache_id,)))
            execute(
                "INSERT INTO workbench_caches (id, sealed, token, counter, used) "
                "VALUES (?, 0, ?, 0, ?) ON CONFLICT (id) DO UPDATE "
                "SET counter = workbench_caches.counter + 1",
                (cache_id, uuid.uuid4().hex, now),
            )
            execute(
                "INSERT INTO workbench_cache_resources (cache, name, body) VALUES (?, ?, ?) "
                "ON CONFLICT (cache, name) DO UPDATE SET body = excluded.body",
                (cache_id, key, raw),
            )
            found = _mark(execute(_MARK, (cache_id,)))
            assert found is not None
            return ("" if before is None else before.stamp), found.stamp

        return self._run(work, write=True)

    def read(self, cache_id: str) -> Stored | None:
        """The cache's mark, then its resources."""

        def work(execute: Execute) -> Stored | None:
            found = _mark(execute(_MARK, (cache_id,)))
            if found is None:
                return None
            sealed = execute("SELECT sealed FROM workbench_caches WHERE id = ?", (cache_id,))
            rows = execute(
                "SELECT body FROM workbench_cache_resources WHERE cache = ? ORDER BY name",
                (cache_id,),
            )
            return Stored(bool(sealed and sealed[0][0]), found, [bytes(r[0]) for r in rows])

        return self._run(work, write=False)

    def mark(self, cache_id: str) -> Mark | None:
        """The cache's stamp and when it was used."""
        return self._run(lambda execute: _mark(execute(_MARK, (cache_id,))), write=False)

    def touch(self, cache_id: str, now: float) -> None:
        """Set ``used``."""
        sql = "UPDATE workbench_caches SET used = ? WHERE id = ?"
        self._run(lambda execute: execute(sql, (now, cache_id)), write=True)

    def drop(self, cache_id: str, ended: Ended) -> None:
        """Delete the cache's rows; record how it ended."""

        def work(execute: Execute) -> None:
            execute(_GONE, (cache_id,))
            execute("DELETE FROM workbench_caches WHERE id = ?", (cache_id,))
            execute(
                f"INSERT INTO {_ENDS} VALUES (?, ?, ?, ?, ?, ?)" + _ENDED,
                (cache_id, ended.reason, ended.at, ended.used, ended.limit_name, ended.limit),
            )

        self._run(work, write=True)

    def ended(self, cache_id: str) -> Ended | None:
        """The cache's end, from ``workbench_cache_ends``."""
        sql = (
            "SELECT reason, at, used, limit_name, limit_value FROM workbench_cache_ends "
            "WHERE id = ?"
        )
        rows = self._run(lambda execute: execute(sql, (cache_id,)), write=False)
        if not rows:
            return None
        reason, at, used, name, limit = rows[0]
        return Ended(str(reason), float(at), float(used), str(name), float(limit))

    def sweep(self, idle_seconds: float, caches: int, now: float) -> None:
        """Delete the idle caches and those past the most recently used ``caches``,
        recording their ends; keep the last ``ENDS_KEPT`` ends."""
        recent = "(SELECT id FROM workbench_caches ORDER BY used DESC LIMIT ?)"
        idle = now - idle_seconds

        def work(execute: Execute) -> None:
            execute(
                f"INSERT INTO {_ENDS} SELECT id, 'expired', ?, used, 'cache_idle_seconds', ? "
                "FROM workbench_caches WHERE used < ?" + _ENDED,
                (now, idle_seconds, idle),
            )
            execute(
                f"INSERT INTO {_ENDS} SELECT id, 'cleared', ?, used, 'caches', ? "
                f"FROM workbench_caches WHERE used >= ? AND id NOT IN {recent}" + _ENDED,
                (now, caches, idle, caches),
            )
            execute(
                f"DELETE FROM workbench_caches WHERE used < ? OR id NOT IN {recent}", (idle, caches)
            )
            execute(
                "DELETE FROM workbench_cache_resources WHERE cache NOT IN "
                "(SELECT id FROM workbench_caches)",
                (),
            )
            execute(
                "DELETE FROM workbench_cache_ends WHERE id NOT IN "
                "(SELECT id FROM workbench_cache_ends ORDER BY at DESC LIMIT ?)",
                (ENDS_KEPT,),
            )

        self._run(work, write=True)
