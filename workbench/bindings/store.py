"""The StructureDefinitions a Workbench holds for binding checks, by canonical URL, with
the problems found in them (no snapshot, a ``baseDefinition`` cycle).

>>> from workbench.bindings.structures import structure_of
>>> kept = Structures()
>>> kept.add([structure_of({"url": "http://hl7.org/fhir/StructureDefinition/Basic",
...     "type": "Basic", "kind": "resource", "snapshot": {"element": [{"path": "Basic"}]}})])
>>> kept.base("Basic").url
'http://hl7.org/fhir/StructureDefinition/Basic'
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from workbench.bindings.structures import BASE, StructureDef


class Structures:
    """Reduced StructureDefinitions by URL (the last loaded wins) and ``problems`` (text
    per URL). ``generation`` grows with every change, so what is compiled from them can
    tell it is out of date."""

    def __init__(self) -> None:
        self._by_url: dict[str, StructureDef] = {}
        self.problems: dict[str, str] = {}
        self.generation = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._by_url)

    def __getstate__(self) -> dict[str, object]:
        """What travels to a worker: the definitions and problems (not the lock)."""
        return {"by_url": dict(self._by_url), "problems": dict(self.problems),
                "generation": self.generation}  # fmt: skip

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__()  # type: ignore[misc]
        self._by_url.update(state["by_url"])  # type: ignore[call-overload]
        self.problems.update(state["problems"])  # type: ignore[call-overload]
        self.generation = int(state["generation"])  # type: ignore[call-overload]

    def add(self, structures: Iterable[StructureDef], problems: Iterable[str] = ()) -> None:
        """Keep ``structures``, and ``problems`` (``"<url>: <text>"``) of others."""
        with self._lock:
            added = list(structures)
            for sd in added:
                self._by_url[sd.url] = sd
                self.problems.pop(sd.url, None)
            for text in problems:
                url, _, why = text.partition(": ")
                self.problems[url] = why
            for sd in added:
                _, problem = self.chain(sd.url)
                if problem is not None and problem.startswith("baseDefinition cycle"):
                    self.problems[sd.url] = problem
            self.generation += 1

    def get(self, url: str) -> StructureDef | None:
        """The StructureDefinition at ``url`` (a ``|version`` is ignored), or None."""
        return self._by_url.get(url.split("|", 1)[0])

    def usable(self, url: str) -> StructureDef | None:
        """As ``get``, but None for a definition with a problem (in a baseDefinition
        cycle)."""
        key = url.split("|", 1)[0]
        return None if key in self.problems else self._by_url.get(key)

    def base(self, type_name: str) -> StructureDef | None:
        """The base definition of a resource or data type (``Observation``), or None."""
        return self._by_url.get(BASE + type_name)

    def all(self) -> list[StructureDef]:
        """Every StructureDefinition kept, in load order."""
        with self._lock:
            return list(self._by_url.values())

    def chain(self, url: str) -> tuple[list[StructureDef], str | None]:
        """``url``'s definition and its ancestors along ``baseDefinition`` (nearest first),
        and the text of a problem: an ancestor not loaded, or a cycle."""
        found: list[StructureDef] = []
        seen: set[str] = set()
        current: str | None = url
        while current is not None:
            key = current.split("|", 1)[0]
            if key in seen:
                names = " -> ".join([sd.url for sd in found] + [key])
                return found, f"baseDefinition cycle: {names}"
            seen.add(key)
            sd = self._by_url.get(key)
            if sd is None:
                return found, (None if not found else f"its base {key} is not loaded")
            found.append(sd)
            current = sd.base
        return found, None
