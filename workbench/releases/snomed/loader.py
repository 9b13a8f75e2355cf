"""Load a SNOMED CT RF2 release: find its files, import it once into the cache, open it.

The store's folder name is a fingerprint of the release's Snapshot files (names and sizes,
and the first bytes of the concept file), so the same release is imported once and then
reopened; a release whose files change gets a new store.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from workbench.errors import ReleaseFormatError
from workbench.releases import archive
from workbench.releases.snomed import importer, rf2
from workbench.releases.snomed.codesystem import SnomedCT, check_version
from workbench.releases.snomed.store import FORMAT, SCT, Store, is_store


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
    claim: Callable[[str, str | None], None] | None = None,
) -> tuple[SnomedCT, bool]:
    """Import (unless cached) and open a release; returns the code system and whether it
    was imported now (False: reopened from the cache). ``claim(system, version)`` is called
    before anything is imported when the version is known then (given, or from a cached
    store) and may raise to refuse it; else after the import, and a refused import's store
    is removed again.

    Raises ReleaseFormatError for anything that is not a complete, well-formed RF2 Snapshot;
    the cache is left as it was.
    """
    if version is not None:
        check_version(version)
    files = rf2.find_files(path)
    folder = Path(cache_dir) / f"snomed-{fingerprint(files)}"
    if claim is not None and version is not None:
        claim(SCT, version)
    if is_store(folder):
        try:
            sct = SnomedCT(Store(folder), version=version)
            if claim is not None:
                claim(SCT, sct.version)
            return sct, False
        except (OSError, ValueError, pa.ArrowException):
            # a damaged store (a file deleted or truncated by hand): import it again
            shutil.rmtree(folder, ignore_errors=True)
    created = not Path(cache_dir).exists()
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    importer.build(files, folder, progress=progress)
    sct = SnomedCT(Store(folder), version=version)
    if claim is not None:
        try:
            claim(SCT, sct.version)
        except BaseException:
            # refused once its version is known: the store made just now goes too
            del sct
            shutil.rmtree(folder, ignore_errors=True)
            if created:
                with contextlib.suppress(OSError):
                    Path(cache_dir).rmdir()  # only when empty
            raise
    return sct, True
