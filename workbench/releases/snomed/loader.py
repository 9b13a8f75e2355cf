"""Load a SNOMED CT RF2 release: find its files, import it once into the cache, open it.

The store's folder name is a fingerprint of the release's Snapshot files (names and sizes,
and the first bytes of the concept file), so the same release is imported once and then
reopened; a release whose files change gets a new store.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from workbench.errors import ReleaseFormatError
from workbench.releases import archive
from workbench.releases.snomed import importer, rf2
from workbench.releases.snomed.codesystem import SnomedCT, check_version
from workbench.releases.snomed.store import FORMAT, Store, is_store


def detect(path: str | Path) -> bool:
    """True when ``path`` (a folder or zip) holds an RF2 Snapshot concept file."""
    try:
        return any(f.kind == "concept" for f in rf2.find_files(path))
    except (ReleaseFormatError, OSError):  # not a release, or not one we can read
        return False


def fingerprint(files: list[rf2.ReleaseFile]) -> str:
    """A short hash naming a release's store: file names, sizes, the concept file's head."""
    concept = next(f for f in files if f.kind == "concept")
    return archive.fingerprint(files, concept, f"format{FORMAT}")


def load(
    path: str | Path,
    cache_dir: str | Path,
    *,
    version: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[SnomedCT, bool]:
    """Import (unless cached) and open a release; returns the code system and whether it
    was imported now (False: reopened from the cache).

    Raises ReleaseFormatError for anything that is not a complete, well-formed RF2 Snapshot;
    the cache is left as it was.
    """
    if version is not None:
        check_version(version)
    files = rf2.find_files(path)
    folder = Path(cache_dir) / f"snomed-{fingerprint(files)}"
    if is_store(folder):
        try:
            return SnomedCT(Store(folder), version=version), False
        except (OSError, ValueError, pa.ArrowException):
            # a damaged store (a file deleted or truncated by hand): import it again
            shutil.rmtree(folder, ignore_errors=True)
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    importer.build(files, folder, progress=progress)
    return SnomedCT(Store(folder), version=version), True
