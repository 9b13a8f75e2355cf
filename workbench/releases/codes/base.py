"""What the built-in code systems of this folder share: a provider whose concepts are made
on demand (``Made``), for grammars (BCP-47, BCP-13: not enumerable, ``listing_error``)
and for tables read from a library (ISO: enumerable, finite)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pandas as pd

from workbench.errors import TooCostlyError, UnknownCodeError
from workbench.terminology.concepts import Concept
from workbench.terminology.lookup import LookupResult
from workbench.terminology.provider import CodeSystemProvider

#: How many concepts a grammar provider keeps once made (then it starts again).
_KEPT = 50_000


class MadeConcepts(Mapping[str, Concept]):
    """Concepts by code, asked of the provider (``get``), for a provider that makes its
    concepts on demand (the built-in systems here, UCUM)."""

    def __init__(self, provider: CodeSystemProvider) -> None:
        self._provider = provider

    def __getitem__(self, code: str) -> Concept:
        found = self._provider.get(code) if isinstance(code, str) else None
        if found is None:
            raise KeyError(code)
        return found

    def get(self, code: str, default: Any = None) -> Any:
        found = self._provider.get(code) if isinstance(code, str) else None
        return default if found is None else found

    def __contains__(self, code: object) -> bool:
        return isinstance(code, str) and self._provider.get(code) is not None

    def __iter__(self) -> Iterator[str]:
        return (c.code for c in self._provider)

    def __len__(self) -> int:
        return len(self._provider)


def resource(url: str, name: str, title: str, version: str | None, **more: Any) -> dict[str, Any]:
    """The CodeSystem resource that describes a built-in system (without concepts)."""
    return {
        "resourceType": "CodeSystem",
        "url": url,
        **({"version": version} if version else {}),
        "name": name,
        "title": title,
        "status": "active",
        "content": "not-present",
        **more,
    }


class GrammarProvider(CodeSystemProvider):
    """A code system whose codes are decided by a grammar (``check``) and named by
    ``concept_of``; it cannot be listed (``listing_error``)."""

    content = "complete"
    case_sensitive = False
    is_complete = False  # not listable
    enumerable = False
    hierarchical = False
    plain_entries = True
    #: Why it cannot be listed (``listing_error``).
    not_listable: str = ""

    def __init__(self) -> None:
        self.property_types: dict[str, str] = {}
        self.concepts = MadeConcepts(self)
        self._made: dict[str, Concept | None] = {}
        self._why: dict[str, str | None] = {}

    def check(self, code: str) -> str | None:
        """Why ``code`` is none of the system's codes (None: it is one)."""
        raise NotImplementedError

    def concept_of(self, code: str) -> Concept:
        """The concept of a valid code (its ``code`` in the canonical case)."""
        raise NotImplementedError

    def why_unknown(self, code: str) -> str | None:
        """Where the code breaks the grammar (None when it is valid)."""
        if not isinstance(code, str):
            return "not a string"
        try:
            return self._why[code]
        except KeyError:
            pass
        if len(self._why) > _KEPT:
            self._why.clear()
        found = self._why[code] = self.check(code)
        return found

    def get(self, code: str) -> Concept | None:
        """The concept of a valid code, in its canonical case (None for anything else)."""
        if not isinstance(code, str):
            return None
        try:
            return self._made[code]
        except KeyError:
            pass
        found = None if self.why_unknown(code) is not None else self.concept_of(code)
        if len(self._made) > _KEPT:
            self._made.clear()
        self._made[code] = found
        return found

    def __iter__(self) -> Iterator[Concept]:
        raise self.listing_error()

    def __len__(self) -> int:
        return 0

    def ancestors(self, code: str) -> frozenset[str]:
        """No hierarchy."""
        return frozenset()

    def descendants(self, code: str) -> frozenset[str]:
        """No hierarchy."""
        return frozenset()

    def subsumes(self, code_a: str, code_b: str) -> str:
        """``equivalent`` for one code in either case, else ``not-subsumed``."""
        a, b = self.get(code_a), self.get(code_b)
        same = code_a == code_b or (a is not None and b is not None and a.code == b.code)
        return "equivalent" if same else "not-subsumed"

    def in_order(self, codes: set[str] | frozenset[str]) -> list[Concept]:
        """The concepts of the valid codes among ``codes``, sorted by code."""
        return [c for c in (self.get(code) for code in sorted(codes)) if c is not None]

    def filter_entries(self, filters: Sequence[Any]) -> Any:
        """A filter over a grammar cannot be listed."""
        raise self.listing_error()

    def listing_error(self) -> TooCostlyError:
        """Why the whole grammar cannot be expanded."""
        return TooCostlyError(self.not_listable)

    def designations_frame(self) -> pd.DataFrame:
        """No designations (a grammar's codes have their display only)."""
        return pd.DataFrame(columns=["code", "language", "use_system", "use_code", "value"])

    def lookup(
        self,
        code: str,
        *,
        properties: Sequence[str] | None = None,
        display_language: str | None = None,
    ) -> LookupResult:
        """$lookup (UnknownCodeError saying where an invalid code breaks the grammar)."""
        why = self.why_unknown(code)
        if why is not None:
            raise UnknownCodeError(f"Unknown code '{code}' in the CodeSystem '{self.url}': {why}")
        return super().lookup(code, properties=properties, display_language=display_language)
