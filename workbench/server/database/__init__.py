"""Where authored resources are kept: one ``VersionStore`` (``base.py``), in memory
(``memory.py``), in a SQLite database in the data folder (``sqlite.py``, with the import
of an older data folder, ``migration.py``), or in a PostgreSQL database that several
servers share (``postgresql.py``); and beside them the ``$cache-control`` client caches
(``caches.py``: ``open_caches``) and the ``$closure`` tables (``closures.py``:
``open_closures``)."""

from __future__ import annotations

from pathlib import Path

from workbench.errors import StorageError
from workbench.extras import require
from workbench.server.database.base import Change, Version, VersionStore, now_instant, tombstone
from workbench.server.database.memory import MemoryVersions
from workbench.terminology.cache_backing import SharedCaches
from workbench.terminology.closure import ClosureTables, MemoryClosures

__all__ = [
    "Change",
    "MemoryVersions",
    "Version",
    "VersionStore",
    "now_instant",
    "open_caches",
    "open_closures",
    "open_database",
    "tombstone",
]


def open_database(data_dir: Path | None, database: str | None = None) -> VersionStore:
    """The store of a server: the PostgreSQL database at ``database`` (a
    ``postgresql://`` URL) when given, else in memory without a data folder, else the
    folder's SQLite database, with what an older server left in the folder imported first."""
    if database is not None:
        if not database.startswith(("postgresql://", "postgres://")):
            raise StorageError(f"--database takes a postgresql:// URL, not {database!r}")
        require("psycopg", "fleet", "a PostgreSQL --database")
        from workbench.server.database.postgresql import PostgresVersions

        return PostgresVersions(database)
    if data_dir is None:
        return MemoryVersions()
    from workbench.server.database.migration import import_folder
    from workbench.server.database.sqlite import SQLiteVersions

    db = SQLiteVersions(data_dir)
    try:
        import_folder(data_dir, db)
    except OSError as exc:
        raise StorageError(f"The data folder {data_dir} could not be imported: {exc}") from exc
    return db


def open_caches(data_dir: Path | None, database: str | None = None) -> SharedCaches | None:
    """Where the client caches of a server are shared: the PostgreSQL database at
    ``database`` (every instance of a fleet), else the data folder's SQLite database (every
    worker), else nowhere (each process holds its own, in memory). Call it after
    ``open_database``, which checks the URL and makes the folder."""
    if database is not None:
        require("psycopg", "fleet", "a PostgreSQL --database")
        from workbench.server.database.cache_postgresql import PostgresCaches

        return PostgresCaches(database)
    if data_dir is None:
        return None
    from workbench.server.database.cache_sqlite import SQLiteCaches

    return SQLiteCaches(data_dir)


def open_closures(data_dir: Path | None, database: str | None = None) -> ClosureTables:
    """Where the ``$closure`` tables of a server are kept: the PostgreSQL database at
    ``database`` (every instance of a fleet), else the data folder's SQLite database (every
    worker), else this process's memory. Call it after ``open_database``."""
    if database is not None:
        require("psycopg", "fleet", "a PostgreSQL --database")
        from workbench.server.database.closure_postgresql import PostgresClosures

        return PostgresClosures(database)
    if data_dir is None:
        return MemoryClosures()
    from workbench.server.database.closure_sqlite import SQLiteClosures

    return SQLiteClosures(data_dir)
