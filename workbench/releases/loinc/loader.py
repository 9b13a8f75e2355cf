"""Load a LOINC release: find its files, import it once into the cache, open it.

The store's folder name is a fingerprint of the release's files (names and sizes, and the
first bytes of ``Loinc.csv``), so the same release is imported once and then reopened.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from workbench.errors import ReleaseFormatError
from workbench.releases import archive
from workbench.releases.loinc import files, importer
from workbench.releases.loinc.store import FORMAT, Store, is_store


def detect(path: str | Path) -> bool:
    """True when ``path`` (a folder or zip) holds ``LoincTable/Loinc.csv``."""
    try:
        return bool(files.find_files(path))
    except (ReleaseFormatError, OSError):  # not a release, or not one we can read
        return False


def load(
    path: str | Path,
    cache_dir: str | Path,
    *,
    progress: Callable[[str], None] | None = None,
) -> tuple[Store, bool]:
    """Import (unless cached) and open a release; returns the store and whether it was
    imported now (False: reopened from the cache).

    Raises ReleaseFormatError for anything that is not a well-formed LOINC release; the cache
    is left as it was.
    """
    found = files.find_files(path)
    main = next(f for f in found if f.kind == "loinc")
    folder = Path(cache_dir) / f"loinc-{archive.fingerprint(found, main, f'loinc{FORMAT}')}"
    if is_store(folder):
        try:
            return Store(folder), False
        except (OSError, ValueError, pa.ArrowException):
            # a damaged store (a file deleted or truncated by hand): import it again
            shutil.rmtree(folder, ignore_errors=True)
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    importer.build(found, folder, progress=progress)
    return Store(folder), True
