"""The ICD-10-CM release kind: the CMS tabular XML (the file, or a folder or zip holding
it), imported once into the cache, opened as an ``Icd10cmProvider``.

The store's folder name is a hash of the tabular XML's bytes (``release_cache``).
"""

from __future__ import annotations

from pathlib import Path

from workbench.releases.archive import ReleaseFile
from workbench.releases.icd10cm import store, tabular
from workbench.releases.kinds import Progress, ReleaseKind
from workbench.terminology.provider import CodeSystemProvider


class Icd10cmKind(ReleaseKind[Path]):
    """ICD-10-CM from the CMS tabular XML (``icd10cm_tabular_*.xml``)."""

    name = "icd10cm"
    title = "ICD-10-CM tabular XML"
    system = tabular.SYSTEM
    store_class = store.Store

    def locate(self, path: Path) -> Path:
        """The path, once a tabular XML is found there (ReleaseFormatError else)."""
        tabular.find_xml(path)
        return path

    def detect(self, path: Path) -> bool:
        """True when ``path`` holds a tabular XML (root ``ICD10CM.tabular``)."""
        return tabular.detect(path)

    def files(self, source: Path) -> list[ReleaseFile]:
        """The tabular XML (its content names the store)."""
        return [tabular.release_file(source)]

    def build(self, source: Path, folder: Path, progress: Progress) -> None:
        """Parse the tabular XML into the store (``store.build``)."""
        progress(f"reading {source.name}")
        store.build(source, folder)

    def open(self, folder: Path, version: str | None) -> CodeSystemProvider:
        """An ``Icd10cmProvider`` over the store."""
        from workbench.releases.icd10cm.provider import Icd10cmProvider

        return Icd10cmProvider(store.Store(folder), version=version)

    def version_before_import(self, source: Path, version: str | None) -> str | None:
        """The given version, else the tabular's ``<version>`` (or the year in its name)."""
        return version or tabular.peek_version(source)


KIND = Icd10cmKind()
