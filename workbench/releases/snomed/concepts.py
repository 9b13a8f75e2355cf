"""SNOMED CT concepts as the engine's Concept objects, made on demand from the store.

Only the concepts a call touches become Python objects; their designations are read from the
store the first time something asks for them (a display check, an expansion with
designations), not when the concept is made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from workbench.releases.snomed.codesystem import SnomedCT
from workbench.terminology.codesystem import Concept


@dataclass(slots=True, eq=False)
class SnomedConcept(Concept):
    """A Concept whose designations come from the store when first needed."""

    source: SnomedCT | None = None
    loaded: bool = False

    def load(self) -> None:
        """Read the designations (active descriptions) from the store, once."""
        if not self.loaded and self.source is not None:
            self.designations = self.source.designations(self.order)
            self.loaded = True

    def retired_displays(self) -> list[str]:
        """The terms of the concept's inactive descriptions (valid, with a warning)."""
        if self.source is None:
            return []
        table = self.source.store.descriptions(self.order)
        return [
            str(t)
            for t, a in zip(
                table.column("term").to_pylist(), table.column("active").to_pylist(), strict=True
            )
            if not a
        ]

    def displays(self) -> list[str]:
        """The display and every active description: all texts valid as a display."""
        self.load()
        return list(dict.fromkeys(Concept.displays(self)))


def make_concept(sct: SnomedCT, row: int, *, designations: bool = False) -> SnomedConcept:
    """The concept at a store row (``order`` is the row)."""
    concept = SnomedConcept(
        code=str(int(sct.store.ids[row])),
        display=sct.display(row),
        definition=None,
        order=row,
        inactive=not sct.is_active(row),
        source=sct,
    )
    closure = sct.store.closure
    concept.parents = [str(int(sct.store.ids[r])) for r in closure.parents[row]]
    concept.children = [str(int(sct.store.ids[r])) for r in closure.children[row]]
    if concept.inactive:
        concept.note = sct.replacements(row)
    if designations:
        concept.load()
    return concept


def make_concepts(sct: SnomedCT, rows: npt.NDArray[np.integer]) -> list[SnomedConcept]:
    """Many concepts at once, columns read in bulk (for iteration; without their parents and
    children, which ``make_concept`` fills in)."""
    rows = np.asarray(rows, dtype=np.int64)
    codes = sct.store.codes.take(rows).to_pylist()
    displays = sct.store.column("display", rows)
    active = np.asarray(sct.store.active)[rows].tolist()
    return [
        SnomedConcept(
            code=code,
            display=display,
            definition=None,
            order=int(row),
            inactive=not is_active,
            source=sct,
        )
        for code, display, row, is_active in zip(
            codes, displays, rows.tolist(), active, strict=True
        )
    ]


class ConceptTable(Mapping[str, Concept]):
    """A read-only mapping code -> SnomedConcept over the whole store (made on demand)."""

    def __init__(
        self, sct: SnomedCT, make: Callable[[str], SnomedConcept | None] | None = None
    ) -> None:
        self.sct = sct
        self.make = make

    def get(self, code: str, default: Any = None) -> SnomedConcept | Any:
        """The concept of a code, or ``default``."""
        if self.make is not None:
            found = self.make(code)
            return default if found is None else found
        row = self.sct.row(code) if isinstance(code, str) else -1
        return make_concept(self.sct, row) if row >= 0 else default

    def __getitem__(self, code: str) -> SnomedConcept:
        found = self.get(code)
        if found is None:
            raise KeyError(code)
        return found

    def __contains__(self, code: object) -> bool:
        return isinstance(code, str) and self.sct.row(code) >= 0

    def __len__(self) -> int:
        return len(self.sct)

    def __iter__(self) -> Iterator[str]:
        return iter(self.sct.store.codes.to_pylist())
