"""A data folder of the storage engine before the database, imported on the first start.

That engine kept one file per version, ``{type}-{id}/{versionId}.json`` (``.deleted`` for a
deletion), before it a flat ``{type}-{id}.json`` (the current version) and
``{type}-{id}.deleted``, with ``.journal`` and ``.lock`` beside them and ``.tmp-*`` files of
interrupted writes. ``import_folder`` saves every version into the database in one
transaction and then moves those files aside, into ``{folder}/before-database/`` (renamed,
never deleted), so that the next start finds nothing to import. A version already in the
database (a start that died between the commit and the move) is not saved twice.

The client caches that engine kept in ``{folder}/tx-caches/`` (a folder per cache, a file
per resource) are deleted, not imported nor moved aside: a cache is ephemeral (its client,
answered 404 "not known" for its cache id, starts a new one and sends its resources again),
and the caches now live in the database.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

from workbench import jsonio
from workbench.registry import TERMINOLOGY_TYPES
from workbench.server.database.base import Version, VersionStore, now_instant, tombstone

log = logging.getLogger("workbench.server")

ASIDE = "before-database"
OLD_CACHES = "tx-caches"  # the client caches' folder before the database
_KEPT = (".journal", ".lock")
_TEMP = ".tmp-"


def _kind(name: str) -> tuple[str, str] | None:
    rtype, _, rid = name.partition("-")
    return (rtype, rid) if rtype in TERMINOLOGY_TYPES and rid else None


def _version_files(where: Path) -> Iterator[tuple[int, Path]]:
    for path in where.iterdir():
        if path.suffix in (".json", ".deleted") and path.stem.isdigit():
            yield int(path.stem), path


def old_entries(folder: Path) -> list[Path]:
    """The files and folders of the old layout in ``folder``."""
    found = []
    for path in sorted(folder.iterdir()):
        old_file = path.suffix in (".json", ".deleted") and _kind(path.stem) is not None
        old_dir = path.is_dir() and _kind(path.name) is not None
        kept = path.name in _KEPT or path.name.startswith(_TEMP)
        if old_dir or (path.is_file() and old_file) or kept:
            found.append(path)
    return found


def _versions(folder: Path) -> Iterator[tuple[str, str, Version]]:
    """Every version in the old layout: the version folders, then the flat files."""
    flat: dict[tuple[str, str], list[int]] = {}
    for where in sorted(p for p in folder.iterdir() if p.is_dir() and _kind(p.name)):
        kind = _kind(where.name)
        assert kind is not None
        for number, path in sorted(_version_files(where)):
            resource = jsonio.loads(path.read_bytes(), exact_decimals=True)
            flat.setdefault(kind, []).append(number)
            yield (*kind, Version(number, resource, path.suffix == ".deleted"))
    for path in sorted(folder.glob("*.json")):
        kind = _kind(path.stem)
        if kind is None:
            continue
        resource = jsonio.loads(path.read_bytes(), exact_decimals=True)
        number = int(str((resource.get("meta") or {}).get("versionId") or "1"))
        if number not in flat.get(kind, []):
            flat.setdefault(kind, []).append(number)
            yield (*kind, Version(number, resource))
    for path in sorted(folder.glob("*.deleted")):
        kind = _kind(path.stem)
        if kind is not None:
            number = max(flat.get(kind, []), default=1) + 1
            yield (*kind, tombstone(*kind, number, now_instant()))


def import_folder(folder: Path, db: VersionStore) -> int:
    """Import the old layout of ``folder`` into ``db`` and move it aside; return how many
    versions were saved (0 when there was nothing to import); delete the old client
    caches' folder."""
    caches = folder / OLD_CACHES
    if caches.is_dir() and not caches.is_symlink():
        shutil.rmtree(caches, ignore_errors=True)
        log.info("Deleted the client caches of %s (they are in the database now)", caches)
    entries = old_entries(folder)
    if not entries:
        return 0
    saved = 0
    with db.transaction():
        for rtype, rid, version in _versions(folder):
            if db.load(rtype, rid, version.number) is None:
                db.save(rtype, rid, version)
                saved += 1
    aside = folder / ASIDE
    aside.mkdir(exist_ok=True)
    for path in entries:
        target = aside / path.name
        while target.exists():
            target = target.with_name(target.name + "~")
        path.rename(target)
    log.info("Imported %d versions from %s; the old files are in %s", saved, folder, aside)
    return saved
