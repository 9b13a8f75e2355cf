"""The SNOMED CT release kind: an RF2 Snapshot (a folder or zip), imported once into the
cache, opened as a ``SnomedProvider``.

The store's folder name is a hash of the content of the release's Snapshot files, taken as
the import reads them (``release_cache``), so the same release is imported once and then
reopened; a release whose content changes, by a single byte, gets a new store.
"""

from __future__ import annotations

from pathlib import Path

from workbench.releases import archive
from workbench.releases.kinds import Progress, ReleaseKind
from workbench.releases.snomed import rf2
from workbench.releases.snomed.store import SCT, Store
from workbench.terminology.provider import CodeSystemProvider


class SnomedKind(ReleaseKind[list[archive.ReleaseFile]]):
    """SNOMED CT from its RF2 Snapshot files."""

    name = "snomed"
    title = "SNOMED CT RF2 Snapshot"
    system = SCT
    store_class = Store

    def locate(self, path: Path) -> list[archive.ReleaseFile]:
        """The RF2 Snapshot files (ReleaseFormatError when there is no concept file)."""
        return rf2.find_files(path)

    def detect(self, path: Path) -> bool:
        """True when ``path`` (a folder or zip) names an RF2 Snapshot concept file."""
        return any(rf2.kind_of(name) == "concept" for name in archive.names(path))

    def files(self, source: list[archive.ReleaseFile]) -> list[archive.ReleaseFile]:
        """The Snapshot files (their content names the store)."""
        return source

    def build(self, source: list[archive.ReleaseFile], folder: Path, progress: Progress) -> None:
        """Import the Snapshot files (``importer.build``)."""
        from workbench.releases.snomed import importer

        importer.build(source, folder, progress=progress)

    def open(self, folder: Path, version: str | None) -> CodeSystemProvider:
        """A ``SnomedProvider`` over the store."""
        from workbench.releases.snomed.codesystem import SnomedCT
        from workbench.releases.snomed.provider import SnomedProvider

        return SnomedProvider(SnomedCT(Store(folder), version=version))

    def check_version(self, version: str) -> str:
        """An edition/version URI (``…/sct/{module}/version/{yyyymmdd}``, or ``xsct``)."""
        from workbench.releases.snomed.codesystem import check_version

        return check_version(version)


KIND = SnomedKind()
