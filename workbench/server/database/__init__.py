"""Where authored resources are kept: one ``VersionStore`` (``base.py``), in memory
(``memory.py``) or in a SQLite database in the data folder (``sqlite.py``, with the import
of an older data folder, ``migration.py``)."""

from __future__ import annotations

from pathlib import Path

from workbench.errors import StorageError
from workbench.server.database.base import Change, Version, VersionStore, now_instant, tombstone
from workbench.server.database.memory import MemoryVersions

__all__ = [
    "Change",
    "MemoryVersions",
    "Version",
    "VersionStore",
    "now_instant",
    "open_database",
    "tombstone",
]


def open_database(data_dir: Path | None) -> VersionStore:
    """The store of a server: in memory without a data folder, else the folder's SQLite
    database, with what an older server left in the folder imported first."""
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
