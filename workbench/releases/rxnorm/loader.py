"""The RxNorm release kind: its RRF files (a folder or zip), imported once into the cache,
opened as an ``RxNormProvider``.

The store's folder name is a hash of the content of the RRF files, taken as the import reads
them (``release_cache``), so the same release is imported once and then reopened.
"""

from __future__ import annotations

from pathlib import Path

from workbench.releases import archive
from workbench.releases.kinds import Progress, ReleaseKind
from workbench.releases.rxnorm import rrf
from workbench.releases.rxnorm.store import RXNORM, Store, build
from workbench.terminology.provider import CodeSystemProvider


class RxNormKind(ReleaseKind[rrf.Release]):
    """RxNorm from RXNCONSO, RXNREL, RXNSAT and RXNCUI (its RXNORM rows)."""

    name = "rxnorm"
    title = "RxNorm RRF"
    system = RXNORM
    store_class = Store

    def locate(self, path: Path) -> rrf.Release:
        """The four RRF files and the release date (ReleaseFormatError when one lacks)."""
        return rrf.find(path)

    def detect(self, path: Path) -> bool:
        """True when ``path`` (a folder or zip) names an RXNCONSO.RRF."""
        return any(
            name.replace("\\", "/").upper().endswith("RXNCONSO.RRF") for name in archive.names(path)
        )

    def files(self, source: rrf.Release) -> list[archive.ReleaseFile]:
        """The four RRF files (their content names the store)."""
        return source.all()

    def build(self, source: rrf.Release, folder: Path, progress: Progress) -> None:
        """Import the RXNORM rows (``store.build``)."""
        build(source, folder, progress=progress)

    def open(self, folder: Path, version: str | None) -> CodeSystemProvider:
        """An ``RxNormProvider`` over the store."""
        from workbench.releases.rxnorm.provider import RxNormProvider

        return RxNormProvider(Store(folder), version=version)


KIND = RxNormKind()
