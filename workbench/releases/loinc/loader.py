"""The LOINC release kind: the release's files (a folder or zip), imported once into the
cache, opened as a ``LoincProvider``.

The store's folder name is a hash of the content of the release's files, taken as the import
reads them (``release_cache``), so the same release is imported once and then reopened.
"""

from __future__ import annotations

from pathlib import Path

from workbench.releases import archive
from workbench.releases.kinds import Progress, ReleaseKind
from workbench.releases.loinc import files
from workbench.releases.loinc.store import LOINC, Store
from workbench.terminology.provider import CodeSystemProvider


class LoincKind(ReleaseKind[list[archive.ReleaseFile]]):
    """LOINC from ``LoincTable/Loinc.csv`` and its accessory files."""

    name = "loinc"
    title = "LOINC"
    system = LOINC
    store_class = Store

    def locate(self, path: Path) -> list[archive.ReleaseFile]:
        """The LOINC files (ReleaseFormatError without exactly one ``Loinc.csv``)."""
        return files.find_files(path)

    def detect(self, path: Path) -> bool:
        """True when ``path`` (a folder or zip) names a ``LoincTable/Loinc.csv``."""
        return any(files.kind_of(name) == "loinc" for name in archive.names(path))

    def files(self, source: list[archive.ReleaseFile]) -> list[archive.ReleaseFile]:
        """The files read (their content names the store)."""
        return source

    def build(self, source: list[archive.ReleaseFile], folder: Path, progress: Progress) -> None:
        """Import the files (``importer.build``)."""
        from workbench.releases.loinc import importer

        importer.build(source, folder, progress=progress)

    def open(self, folder: Path, version: str | None) -> CodeSystemProvider:
        """A ``LoincProvider`` over the store."""
        from workbench.releases.loinc.provider import LoincProvider

        return LoincProvider(Store(folder), version=version)


KIND = LoincKind()
