"""What the release providers whose stores keep concepts as rows share: a mapping of concepts
by code made on demand, row look-ups of many codes, bulk descriptions, and filters compiled
to boolean masks over the rows and expanded column-wise."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from workbench.releases.masks import MaskFilter
from workbench.terminology.codesystem import Concept
from workbench.terminology.compose import Entry
from workbench.terminology.filters import CodeFilter
from workbench.terminology.provider import CodeSystemProvider


class ConceptsByCode(Mapping[str, Concept]):
    """A read-only mapping code -> concept over a provider's store (made on demand)."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider

    def get(self, code: str, default: Any = None) -> Concept | Any:
        """The concept of a code, or ``default``."""
        found = self.provider.get(code)
        return default if found is None else found

    def __getitem__(self, code: str) -> Concept:
        found = self.provider.get(code)
        if found is None:
            raise KeyError(code)
        return found

    def __contains__(self, code: object) -> bool:
        return code in self.provider

    def __len__(self) -> int:
        return int(self.provider.store.n)

    def __iter__(self) -> Iterator[str]:
        return iter(self.provider.store.codes.to_pylist())


class MaskProvider(CodeSystemProvider):
    """Shared methods of a provider over a store with ``row(code)``, ``codes``, ``n`` and
    ``column(name, rows)``; the provider gives ``filter(prop, op, value)`` (a row mask),
    ``inactive_rows()`` and its concept class."""

    store: Any
    url: str
    version: str | None
    concept_class: type[Concept] = Concept
    plain_entries = True

    def inactive_rows(self) -> npt.NDArray[np.bool_]:
        """The inactive flag of every row."""
        raise NotImplementedError

    def filter(self, prop: str, op: str, value: str) -> npt.NDArray[np.bool_]:
        """The rows a compose filter selects."""
        raise NotImplementedError

    def __contains__(self, code: object) -> bool:
        return isinstance(code, str) and self.store.row(code) >= 0

    def __len__(self) -> int:
        return int(self.store.n)

    def rows_of(self, codes: Sequence[Any]) -> npt.NDArray[np.int64]:
        """The rows of many codes (-1 for anything that is not a code of the release)."""
        row = self.store.row
        return np.fromiter(
            (row(c) if isinstance(c, str) else -1 for c in codes), dtype=np.int64, count=len(codes)
        )

    def describe(
        self, codes: Sequence[str]
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_], list[str | None]]:
        """For many codes at once: known, inactive and display (bulk validation)."""
        rows = self.rows_of(codes)
        known = rows >= 0
        safe = np.where(known, rows, 0)
        inactive = known & self.inactive_rows()[safe]
        shown = self.store.column("display", safe)
        return known, inactive, [s if k else None for s, k in zip(shown, known, strict=True)]

    def compile_filter(self, raw: Mapping[str, Any]) -> CodeFilter:
        """A compose filter as a boolean mask over concept rows."""
        prop, op, value = (str(raw.get(k, "")) for k in ("property", "op", "value"))
        mask = self.filter(prop, op, value)
        members = frozenset(self.store.codes.filter(pa.array(mask)).to_pylist())
        own = self.concept_class

        def matches(concept: Concept) -> bool:
            row = concept.order if isinstance(concept, own) else self.store.row(concept.code)
            return row >= 0 and bool(mask[row])

        return MaskFilter(f"{prop} {op} {value}", matches, members, mask)

    def ordered(self, filters: Sequence[MaskFilter], rows: npt.NDArray[np.int64]) -> Any:
        """The rows of a filtered expansion in the order to show them (code order here)."""
        return rows

    def filter_entries(self, filters: Sequence[CodeFilter]) -> list[Entry] | None:
        """The expansion of an include's filters, column-wise from the store."""
        if not filters or not all(isinstance(f, MaskFilter) for f in filters):
            return None
        masks = [f for f in filters if isinstance(f, MaskFilter)]
        both = np.logical_and.reduce([f.mask for f in masks]) if len(masks) > 1 else masks[0].mask
        rows = self.ordered(masks, np.flatnonzero(both))
        codes = self.store.codes.take(pa.array(rows, pa.int64())).to_pylist()
        displays = self.store.column("display", rows)
        inactive = self.inactive_rows()[rows].tolist()
        return [
            Entry(self.url, self.version, code, display, False, stale)
            for code, display, stale in zip(codes, displays, inactive, strict=True)
        ]
