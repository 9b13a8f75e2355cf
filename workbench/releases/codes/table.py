"""A built-in code system that is a finite table read from a library (the ISO ones):
enumerable, looked up case-insensitively, answered column-wise for bulk validation."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator, Sequence
from functools import cached_property

import numpy as np
import pandas as pd

from workbench.releases.codes.base import MadeConcepts, resource
from workbench.terminology.concepts import Concept
from workbench.terminology.provider import CodeSystemProvider, Described


def library_version(name: str) -> str | None:
    """The installed version of the library a table is read from (its data's version)."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


class TableProvider(CodeSystemProvider):
    """Concepts made once, on first use, by ``rows`` (code, display, parent or None)."""

    content = "complete"
    case_sensitive = False
    hierarchical = False
    plain_entries = True
    #: name and title of the CodeSystem resource.
    name: str = ""
    title: str = ""

    def __init__(self) -> None:
        self.version: str | None = library_version("pycountry")
        self.property_types: dict[str, str] = {}
        self.concepts = MadeConcepts(self)
        self.resource = resource(
            self.url, self.name, self.title, self.version, publisher="ISO", caseSensitive=False
        )

    def __reduce__(self) -> tuple[type[TableProvider], tuple[()]]:
        """Pickled as a fresh provider."""
        return (type(self), ())

    def rows(self) -> list[tuple[str, str, str | None]]:
        """``(code, display, parent code or None)`` of every concept, in order."""
        raise NotImplementedError

    @cached_property
    def _table(self) -> dict[str, Concept]:
        rows = self.rows()
        table = {
            code: Concept(code=code, display=display, definition=None, order=i)
            for i, (code, display, _) in enumerate(rows)
        }
        for code, _, parent in rows:
            if parent is not None and parent in table:
                table[code].parents.append(parent)
                table[parent].children.append(code)
        return table

    @cached_property
    def _folded(self) -> dict[str, Concept]:
        return {code.casefold(): c for code, c in self._table.items()}

    def get(self, code: str) -> Concept | None:
        """The concept of a code, in any case (None when the table has none)."""
        if not isinstance(code, str):
            return None
        return self._table.get(code) or self._folded.get(code.casefold())

    def __iter__(self) -> Iterator[Concept]:
        return iter(self._table.values())

    def __len__(self) -> int:
        return len(self._table)

    def ancestors(self, code: str) -> frozenset[str]:
        """The parents of a code, and theirs."""
        found: set[str] = set()
        todo = list(c.parents) if (c := self.get(code)) is not None else []
        while todo:
            parent = todo.pop()
            if parent not in found:
                found.add(parent)
                todo += self._table[parent].parents
        return frozenset(found)

    def descendants(self, code: str) -> frozenset[str]:
        """The children of a code, and theirs."""
        found: set[str] = set()
        todo = list(c.children) if (c := self.get(code)) is not None else []
        while todo:
            child = todo.pop()
            if child not in found:
                found.add(child)
                todo += self._table[child].children
        return frozenset(found)

    def subsumes(self, code_a: str, code_b: str) -> str:
        """$subsumes on the canonical codes (any case)."""
        a, b = self.get(code_a), self.get(code_b)
        return super().subsumes(a.code if a else code_a, b.code if b else code_b)

    def describe(self, codes: Sequence[str]) -> Described:
        """Known, inactive (never) and display of many codes at once."""
        found = [self.get(code) for code in codes]
        known = np.fromiter((c is not None for c in found), dtype=bool, count=len(found))
        shown = [c.display if c is not None else None for c in found]
        return known, np.zeros(len(found), dtype=bool), shown

    def concepts_frame(self) -> pd.DataFrame:
        """Every concept: code, display, parent, abstract and inactive (never)."""
        rows = self.rows()
        return pd.DataFrame(
            {
                "code": [r[0] for r in rows],
                "display": [r[1] for r in rows],
                "parent": [r[2] for r in rows],
                "abstract": np.zeros(len(rows), dtype=bool),
                "inactive": np.zeros(len(rows), dtype=bool),
            }
        )
