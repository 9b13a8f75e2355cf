"""FhirData: the resources :func:`~workbench.fhirdata.read_fhir` read, per type, as NDJSON.

What the view compiler reads is :meth:`FhirData.ndjson_batches`: newline-terminated chunks of
one type, about ``batch_bytes`` each, ready for ``pyarrow.json.read_json``. Resources come
back as dicts equal to the JSON that was read (:meth:`FhirData.resources`).
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import pandas as pd

from workbench import jsonio
from workbench.errors import InvalidRequestError
from workbench.fhirdata.records import ReadError, errors_frame
from workbench.fhirdata.resource_types import is_resource_type
from workbench.fhirdata.store import ChunkStore
from workbench.loading import counted

_SHOWN_TYPES = 8


class FhirData:
    """FHIR resources read from NDJSON, JSON files, Bundles or dicts, kept per type as
    NDJSON (in memory up to a bound, in a temporary folder beyond it), with the problems
    met while reading (:attr:`errors`). Close it (or use it in a ``with`` block) to free
    the temporary folder at once; it goes with the object otherwise.

    >>> from workbench.fhirdata import read_fhir
    >>> data = read_fhir([{"resourceType": "Patient", "id": "a"}, {"resourceType": "Flag"}])
    >>> data.types, data.counts, len(data)
    (['Flag', 'Patient'], {'Flag': 1, 'Patient': 1}, 2)
    >>> list(data.resources("Patient"))
    [{'resourceType': 'Patient', 'id': 'a'}]
    >>> list(data.ndjson_batches("Patient"))
    [b'{"resourceType":"Patient","id":"a"}\\n']
    """

    def __init__(self, store: ChunkStore, errors: list[ReadError], sources: int) -> None:
        self._store = store
        #: Every problem met while reading, errors and warnings (see ``ReadError``).
        self.errors: list[ReadError] = errors
        #: How many files (or iterables of resources) were read.
        self.sources = sources

    # --- what was read ------------------------------------------------------------------

    @property
    def counts(self) -> dict[str, int]:
        """Resources per type, by type name."""
        return self._store.counts()

    @property
    def types(self) -> list[str]:
        """The resource types read, sorted."""
        return list(self.counts)

    def __len__(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> pd.DataFrame:
        """One row per type: ``resource_type``, ``count``, ``bytes`` (of its NDJSON)."""
        sizes = self._store.sizes()
        rows = [(name, n, sizes[name]) for name, n in self.counts.items()]
        return pd.DataFrame(rows, columns=["resource_type", "count", "bytes"])

    def errors_frame(self) -> pd.DataFrame:
        """:attr:`errors` as a frame: ``source``, ``line``, ``severity``, ``reason``."""
        return errors_frame(self.errors)

    # --- reading it back ----------------------------------------------------------------

    def _checked(self, resource_type: str) -> str:
        if not is_resource_type(resource_type):
            raise InvalidRequestError(f"{resource_type!r} is not a FHIR R4 resource type")
        return resource_type

    def ndjson_batches(self, resource_type: str) -> Iterator[bytes]:
        """The resources of ``resource_type`` as chunks of newline-terminated NDJSON lines,
        about ``batch_bytes`` each (a longer single line makes a longer chunk), in the
        order read: for ``pyarrow.json.read_json``. A line read from NDJSON is the very
        bytes read; a resource from a JSON file, Bundle or dict is its compact JSON. No
        chunks for a type with no resources; InvalidRequestError for a name that is not
        an R4 resource type."""
        return self._store.chunks(self._checked(resource_type))

    def resources(
        self, resource_type: str | None = None, *, exact_decimals: bool = False
    ) -> Iterator[dict[str, Any]]:
        """The resources (of ``resource_type``, else of every type by type name) as dicts,
        every element kept; ``exact_decimals`` reads decimals as ``Decimal``, digit for
        digit (``1.50`` stays ``1.50``)."""
        names = self.types if resource_type is None else [self._checked(resource_type)]
        for name in names:
            for chunk in self._store.chunks(name):
                for line in chunk.split(b"\n"):
                    if line.strip():
                        yield jsonio.loads(line, exact_decimals=exact_decimals)

    # --- lifetime -----------------------------------------------------------------------

    def close(self) -> None:
        """Drop the resources and remove the temporary folder (if one was needed)."""
        self._store.close()

    def __enter__(self) -> FhirData:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    # --- display ------------------------------------------------------------------------

    def _problems(self) -> str:
        errors = sum(1 for record in self.errors if record.severity == "error")
        warnings = len(self.errors) - errors
        return counted(errors, "error") + (f", {counted(warnings, 'warning')}" if warnings else "")

    def __repr__(self) -> str:
        counts = self.counts
        shown = ", ".join(f"{name} {n:,}" for name, n in list(counts.items())[:_SHOWN_TYPES])
        more = f" and {len(counts) - _SHOWN_TYPES} more" if len(counts) > _SHOWN_TYPES else ""
        return (
            f"<FhirData {counted(len(self), 'resource')} of {counted(len(counts), 'type')}"
            f"{' (' + shown + more + ')' if counts else ''}; {self._problems()}>"
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td style='text-align:right'>{n:,}</td></tr>"
            for name, n in self.counts.items()
        )
        shown = "".join(f"<li>{html.escape(str(r))}</li>" for r in self.errors[:10])
        more = f"<li>… {len(self.errors) - 10:,} more</li>" if len(self.errors) > 10 else ""
        return (
            f"<p><b>FhirData</b>: {counted(len(self), 'resource')} from "
            f"{counted(self.sources, 'source')}; {self._problems()}</p>"
            f"<table><tr><th>type</th><th>resources</th></tr>{rows}</table>"
            + (f"<ul>{shown}{more}</ul>" if self.errors else "")
        )
