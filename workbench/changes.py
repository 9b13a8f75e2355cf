"""Two versions side by side: ``Workbench.diff`` of a code system's or a value set's
versions (``terminology/diff.py``), and the versions it checks first.

A code system's versions are those loaded from release files and as CodeSystem resources;
a value set's those of its ValueSet resources. Each side is read whole: a code system as
its concepts frame (a release straight from its store's columns), a value set as its
expansion (each version by its own definition).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench import frames
from workbench.errors import (
    CodeSystemNotFoundError,
    InvalidRequestError,
    ResourceNotFoundError,
    ValueSetVersionNotFoundError,
)
from workbench.terminology import diff as diffing
from workbench.terminology.provider import CodeSystemProvider

if TYPE_CHECKING:
    import pyarrow as pa

    from workbench.calls import TerminologyCalls as Workbench


def check_pair(from_version: str, to_version: str) -> None:
    """Refuse a version compared with itself (InvalidRequestError)."""
    for name, value in (("from_version", from_version), ("to_version", to_version)):
        if not isinstance(value, str) or not value:
            raise InvalidRequestError(f"diff() needs {name}: a version, as a string")
    if from_version == to_version:
        raise InvalidRequestError(
            f"from_version and to_version are both {from_version!r}: a version compared "
            "with itself has no changes; name two different versions"
        )


def codesystem_version(wb: Workbench, url: str, version: str) -> CodeSystemProvider:
    """The loaded version of a code system, else CodeSystemNotFoundError naming the loaded
    versions."""
    found = wb.terminology.codesystem(url, version)
    if found is None:
        loaded = wb.terminology.codesystem_versions(url)
        raise CodeSystemNotFoundError(
            url, version, context="the loaded versions are " + ", ".join(map(repr, loaded))
        )
    return found


def concept_rows(provider: CodeSystemProvider) -> pa.Table:
    """One version's rows: straight from a store's columns when it has them
    (``diff.column_rows``), else from its concepts frame (``diff.concept_rows``)."""
    columns, parents = provider.concept_columns(), provider.parents_column()
    if columns is not None and parents is not None:
        return diffing.column_rows(provider.url, columns, parents)
    own = provider.concepts_frame()
    concepts = own if own is not None else frames.concepts_frame(provider)
    return diffing.concept_rows(provider.url, concepts)


def diff(wb: Workbench, url: str, from_version: str, to_version: str) -> diffing.Diff:
    """``Workbench.diff``: see there."""
    check_pair(from_version, to_version)
    if wb.terminology.codesystem_versions(url):
        a = codesystem_version(wb, url, from_version)
        b = codesystem_version(wb, url, to_version)
        return diffing.between(
            url, "CodeSystem", from_version, to_version, concept_rows(a), concept_rows(b)
        )
    loaded = [v for v in wb.registry.versions("ValueSet", url) if v]
    if not loaded and wb.registry.get("ValueSet", url) is None:
        raise ResourceNotFoundError(
            f"{url} is neither a loaded CodeSystem nor a loaded ValueSet: load both versions first"
        )
    for version in (from_version, to_version):
        if version not in loaded:
            raise ValueSetVersionNotFoundError(url, version, loaded)
    old = wb.expand(url, version=from_version).entries
    new = wb.expand(url, version=to_version).entries
    return diffing.between(
        url, "ValueSet", from_version, to_version, diffing.entry_rows(old), diffing.entry_rows(new)
    )
