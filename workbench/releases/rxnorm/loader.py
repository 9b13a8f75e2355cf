"""Load an RxNorm release: find its RRF files, import it once into the cache, open it.

The store's folder name is a fingerprint of the release's files (names and sizes, and the
first bytes of RXNCONSO.RRF), so the same release is imported once and then reopened.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from workbench.errors import ReleaseFormatError
from workbench.releases import archive
from workbench.releases.rxnorm import rrf
from workbench.releases.rxnorm.store import FORMAT, Store, build, is_store


def detect(path: str | Path) -> bool:
    """True when ``path`` (a folder or zip) holds RXNCONSO.RRF."""
    try:
        listed = archive.list_files(path, "an RxNorm release")
    except (ReleaseFormatError, OSError):
        return False
    return any(name.replace("\\", "/").upper().endswith("RXNCONSO.RRF") for name, _ in listed)


def load(
    path: str | Path,
    cache_dir: str | Path,
    *,
    progress: Callable[[str], None] | None = None,
) -> tuple[Store, str | None, bool]:
    """Import (unless cached) and open a release; returns the store, the release's version
    and whether it was imported now (False: reopened from the cache).

    Raises ReleaseFormatError for anything that is not a complete, well-formed RxNorm
    release (naming the file and line); the cache is left as it was.
    """
    release = rrf.find(path)
    main = release.files["RXNCONSO"]
    folder = Path(cache_dir) / f"rxnorm-{archive.fingerprint(release.all(), main, f'rx{FORMAT}')}"
    if is_store(folder):
        try:
            return Store(folder), release.version, False
        except (OSError, ValueError, pa.ArrowException):
            shutil.rmtree(folder, ignore_errors=True)  # damaged by hand: import again
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    build(release, folder, progress=progress)
    return Store(folder), release.version, True
